package catalog

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/hosting/hostingtest"
	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/sites/bundled"
	"github.com/webserv-rl/webserv/tasks"
)

func TestMain(m *testing.M) { os.Exit(hostingtest.Main(m)) }

// openTracker opens the catalogue of examples/sites (the tracker and its
// tasks) on the local backend, without Incus or the bundled shop.
func openTracker(t *testing.T) *Catalog {
	t.Helper()
	c, err := Open(context.Background(), nil, Options{SitesDir: "../../examples/sites", InstancesDir: t.TempDir(), NoIncus: true, NoBundled: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// Open serves the definitions of a directory with their tasks: files, the
// open site, and lists GitLab as unavailable (no image, no bundled forge)
// with what to do.
func TestOpenServesDefinitionsWithTheirTasks(t *testing.T) {
	c := openTracker(t)
	got := map[string]server.SiteInfo{}
	for _, s := range c.Sites() {
		got[s.Name] = s
	}
	if tr := got["tracker"]; tr.Backend != "local" || tr.Tasks != 6 {
		t.Errorf("tracker = %+v, want the local backend and 6 tasks", tr)
	}
	if _, ok := got["open"]; !ok {
		t.Errorf("sites %v lack the open site", got)
	}
	if g := got["gitlab"]; !strings.Contains(g.Description, "unavailable") || !strings.Contains(g.Description, "webserv image import") {
		t.Errorf("gitlab = %+v, want unavailable with how to import its image", g)
	}
	if _, ok := got["shopping"]; ok {
		t.Error("NoBundled still serves the bundled shop")
	}
	listed, err := c.Tasks("tracker")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ti := range listed {
		ids = append(ids, ti.ID)
	}
	if strings.Join(ids, " ") != "tracker.1 tracker.2 tracker.3 tracker.4 tracker.5 tracker.6" {
		t.Errorf("task ids = %v", ids)
	}
	if got := c.SitesWithTasks(); fmt.Sprint(got) != "[tracker]" {
		t.Errorf("sites with tasks = %v", got)
	}
}

// make's mistakes are refused before any instance starts, each saying
// what there is instead; a site this server cannot run says why.
func TestMakeRefusesWhatTheCatalogueLacks(t *testing.T) {
	c := openTracker(t)
	ctx := context.Background()
	for _, tc := range []struct {
		spec server.MakeSpec
		want string
	}{
		{server.MakeSpec{Site: "nope"}, "this server has: open, tracker"},
		{server.MakeSpec{Site: "tracker", Task: "tracker.9"}, "site tracker has no task 9 (its tracker tasks are 1..6"},
		{server.MakeSpec{Site: "tracker", Task: "nine"}, `task id "nine": want a number like 17 or tracker.17`},
		{server.MakeSpec{Site: "tracker", TaskSet: "webarena"}, `site tracker has no task set "webarena" (it has: tracker)`},
		{server.MakeSpec{Site: "gitlab"}, "no GitLab image has been imported"},
		{server.MakeSpec{Site: "tracker+nope"}, `unknown site "nope" in "tracker+nope"`},
	} {
		in, err := c.Make(ctx, tc.spec)
		if err == nil {
			_ = in.Close(ctx)
			t.Errorf("%+v: made an instance", tc.spec)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v; want it to say %q", tc.spec, err, tc.want)
		}
	}
}

// The check loop's sequences have the task's placeholders filled at the
// site's canonical origin, as its episode has them.
func TestTaskScriptsFillTheSitesOrigin(t *testing.T) {
	dir := t.TempDir()
	def := "name: notes\norigin: http://notes.example.test\nlocal:\n  command: [./notes, --port, \"{port}\"]\nready:\n  path: /\ntasks: [tasks.yaml]\n"
	tasksFile := `- task_id: 3
  intent: Open the second note.
  eval:
    eval_types: [url_match]
    reference_url: __SITE__/notes/2
  oracle: ['goto("__SITE__/notes/2")', 'stop("")']
  wrong: ['goto("__SITE__/notes/1")', 'stop("")']
`
	for name, text := range map[string]string{"notes.yaml": def, "tasks.yaml": tasksFile} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	site, err := hosting.LoadSite(filepath.Join(dir, "notes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := SiteTaskSet(site, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := New([]*hosting.Site{site}, nil, nil)
	c.SetTasks(site.Name, st)
	scripts, err := c.TaskScripts([]string{"notes"})
	if err != nil {
		t.Fatal(err)
	}
	want := []server.TaskScripts{{
		Site: "notes", Task: "notes.3",
		Oracle:    []string{`goto("http://notes.example.test/notes/2")`, `stop("")`},
		Wrong:     []string{`goto("http://notes.example.test/notes/1")`, `stop("")`},
		Solutions: nil, // none
		Intent:    "Open the second note.", Evals: []string{"url_match"},
	}}
	if !reflect.DeepEqual(scripts, want) {
		t.Errorf("scripts = %#v, want %#v", scripts, want)
	}
	if _, err := c.TaskScripts([]string{"open"}); err == nil || !strings.Contains(err.Error(), "site open has no tasks") {
		t.Errorf("a site without tasks: %v", err)
	}
}

// The bundled shop's task sets: both roles at one origin, graded with the
// token its instances start with, signed in by the shop's login; its
// Verified-style sets start each task signed in as the native task of its
// id, and take its side-effect scope: a navigation task's too (nothing
// but bookkeeping), though a program of its own grades it, so harm done
// on the way is looked for there as on the twin.
func TestBundledTaskSets(t *testing.T) {
	sites, sets, err := Bundled(context.Background(), bundled.Options{IncusImage: "webserv-shop"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(sites) != 2 || len(sets) != 2 {
		t.Fatalf("%d sites, %d sets", len(sites), len(sets))
	}
	for _, s := range sites {
		st := sets[s.Name]
		if st == nil || st.Variant != "bundled" || st.Name != "bundled-"+s.Name || st.Login == nil || st.Grader == nil {
			t.Fatalf("%s: task set %+v", s.Name, st)
		}
		if st.EvalToken == "" || s.Secrets["EVAL_TOKEN"] != st.EvalToken {
			t.Errorf("%s: the set grades with token %q, the site starts with %q", s.Name, st.EvalToken, s.Secrets["EVAL_TOKEN"])
		}
		if fmt.Sprint(st.Roles) != "[shopping shopping_admin]" {
			t.Errorf("%s: roles %v", s.Name, st.Roles)
		}
	}
	vs, err := BundledVerified(sets, nil)
	if err != nil {
		t.Fatal(err)
	}
	signedIn := 0
	for name, v := range vs {
		if v.Name != "webarena-verified" || v.IDPrefix != "verified." || v.VerifiedByID || len(v.Set.Tasks) == 0 {
			t.Errorf("%s: Verified set %+v", name, v)
		}
		for _, tk := range v.Set.Tasks {
			native := sets[name].Set.ByID[tk.ID]
			inst, err := tasks.Instantiate(&tk, map[string]string{"shopping": "http://127.0.0.1:1"})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := tasks.ScopeOf(inst, v.Roles, "", nil); !ok && native != nil {
				t.Errorf("verified.%s.%d (%s): its side effects are not looked for; want %s.%d's scope", name, tk.ID, tk.Category, name, tk.ID)
			}
			if native != nil && native.Login != nil {
				if tk.Login != native.Login {
					t.Errorf("verified.%s.%d is not signed in as %s.%d", name, tk.ID, name, tk.ID)
				}
				signedIn++
			}
		}
	}
	if signedIn == 0 {
		t.Error("no Verified-style task starts signed in")
	}
	if got := vs["shopping"].infos("shopping")[0].ID; !strings.HasPrefix(got, "verified.shopping.") {
		t.Errorf("first Verified task id %q", got)
	}
}

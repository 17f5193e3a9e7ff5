package server_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/hosting/hostingtest"
	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/sites/catalog"
	"github.com/webserv-rl/webserv/tasks"
	"github.com/webserv-rl/webserv/tasks/taskstest"
)

// trackerDir is the example site's directory (examples/sites).
func trackerDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../examples/sites")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// trackerServer serves the site defined at def (with its tasks: files) on
// the local backend.
// checkTracker runs the check loop over the tracker's tasks on srv: each
// task's check by its id, and the table `webserv tasks check` prints.
func checkTracker(t *testing.T, srv *server.Server, f *catalog.Catalog) (map[string]server.TaskCheck, string) {
	t.Helper()
	// The loop's own bounds are the verifiers' and steps'; this one only
	// ends a hung test (a loaded CI host took over 5 minutes).
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	checks, err := srv.CheckTasks(ctx, taskScripts(t, f, []string{"tracker"}), 3)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]server.TaskCheck{}
	for _, c := range checks {
		byID[c.Task] = c
	}
	return byID, server.FormatTaskChecks(checks)
}

func trackerServer(t *testing.T, def string) (*server.Server, *catalog.Catalog, *client) {
	t.Helper()
	return trackerServerWith(t, def, nil)
}

// trackerServerWith is trackerServer with a WebArena-Verified grader for
// task files in its schema.
func trackerServerWith(t *testing.T, def string, g *tasks.VerifiedGrader) (*server.Server, *catalog.Catalog, *client) {
	t.Helper()
	site, err := hosting.LoadSite(def)
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := catalog.SiteTaskSet(site, nil, g)
	if err != nil {
		t.Fatal(err)
	}
	f := catalog.New([]*hosting.Site{site}, []hosting.Backend{localBackend(t)}, nil)
	f.SetTasks(site.Name, st)
	srv := server.New(zap.NewNop(), browser, f, server.Config{Env: envConfig(), MaxCreating: 8, MaxEnvs: 32})
	return srv, f, dial(t, serve(t, srv))
}

// taskScripts are the check loop's sequences of the tasks of sites in f.
func taskScripts(t *testing.T, f *catalog.Catalog, sites []string) []server.TaskScripts {
	t.Helper()
	scripts, err := f.TaskScripts(sites)
	if err != nil {
		t.Fatal(err)
	}
	return scripts
}

// The example site's tasks through the protocol: listed by the sites and
// tasks ops with ids <site>.<task_id>; a task's setup command has run in
// the episode's own instance before the first observation, and its login
// cookies are set; a reset to another task starts from the site's base.
func TestSiteTasksThroughTheProtocol(t *testing.T) {
	t.Parallel()
	_, _, cl := trackerServer(t, filepath.Join(trackerDir(t), "tracker.yaml"))
	sites := fmt.Sprint(cl.call("sites", "", nil)["sites"])
	if !strings.Contains(sites, "name:tracker") || !strings.Contains(sites, "tasks:6") {
		t.Errorf("sites = %s, want tracker with 6 tasks", sites)
	}
	listed := cl.call("tasks", "", map[string]any{"site": "tracker"})["tasks"].([]any)
	var ids []string
	for _, x := range listed {
		ids = append(ids, x.(map[string]any)["id"].(string))
	}
	if strings.Join(ids, " ") != "tracker.1 tracker.2 tracker.3 tracker.4 tracker.5 tracker.6" {
		t.Errorf("task ids = %v", ids)
	}
	first := listed[0].(map[string]any)
	if first["start_url"] != "__SITE__/" || first["goal"] != "Open the issue about slow search." {
		t.Errorf("task 1 = %v", first)
	}

	made := cl.call("make", "", map[string]any{"site": "tracker", "task": "tracker.6"})
	env := made["env"].(string)
	obs := obsOf(made)
	if obs["url"] != "http://tracker.webserv.test/issues/7" || !strings.Contains(obs["html"].(string), "Flaky upload test") {
		t.Fatalf("task 6 starts at %v with %.300q; want the issue its setup created", obs["url"], obs["html"])
	}
	info := made["info"].(map[string]any)
	if info["task_id"] != "tracker.6" || info["task_set"] != "tracker" || info["variant"] != "site" {
		t.Errorf("info = %v", info)
	}
	reset := cl.call("reset", env, map[string]any{"options": map[string]any{"task": "tracker.5"}})
	html := obsOf(reset)["html"].(string)
	if !strings.Contains(html, "Signed in as maria") || !strings.Contains(html, "new-issue.title") {
		t.Errorf("task 5 (login cookies) starts at %.400q; want the new-issue form, signed in", html)
	}
	back := cl.call("step", env, map[string]any{"action": `goto("http://tracker.webserv.test/")`})
	if strings.Contains(obsOf(back)["html"].(string), "Flaky upload test") {
		t.Errorf("task 6's setup outlived its episode: the reset did not start from the base state")
	}
	cl.fail("make", "", map[string]any{"site": "tracker", "task": "tracker.9"}, server.CodeBadArgs)
}

// webserv tasks check's loop on the example site: each evaluator kind
// (url_match, string answer, program_html, check, state with setup and
// login) gives its oracle reward 1 and its wrong sequence reward 0.
func TestSiteTasksCheckLoop(t *testing.T) {
	t.Parallel()
	srv, f, _ := trackerServer(t, filepath.Join(trackerDir(t), "tracker.yaml"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	checks, err := srv.CheckTasks(ctx, taskScripts(t, f, f.SitesWithTasks()), 3)
	if err != nil {
		t.Fatal(err)
	}
	table := server.FormatTaskChecks(checks)
	if len(checks) != 6 {
		t.Fatalf("%d tasks checked, want 6:\n%s", len(checks), table)
	}
	for _, c := range checks {
		if !c.OK() || c.Oracle != 1 || c.Wrong != 0 || c.Start != 0 {
			t.Errorf("%s: oracle %v, wrong %v, problems %v", c.Task, c.Oracle, c.Wrong, c.Problems)
		}
	}
	if !strings.Contains(table, "6 task(s), 6 passed, 0 failed") {
		t.Errorf("table:\n%s", table)
	}
}

// trackerCopy writes a definition of the example tracker in a temp dir
// whose tasks are the example's, edited by edit, and returns its path;
// files are written beside it.
func trackerCopy(t *testing.T, edit func(string) string, files map[string]string, defExtra string) string {
	t.Helper()
	src := trackerDir(t)
	dir := t.TempDir()
	def, err := os.ReadFile(filepath.Join(src, "tracker.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tasksFile, err := os.ReadFile(filepath.Join(src, "tracker", "tasks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	d := strings.ReplaceAll(string(def), "./tracker/", src+"/tracker/")
	d = strings.Replace(d, "data_dir: tracker/data", "data_dir: "+src+"/tracker/data", 1)
	d = strings.Replace(d, "tasks: [tracker/tasks.yaml]", "tasks: [tasks-*.yaml]", 1)
	all := map[string]string{"tracker.yaml": d + defExtra, "tasks-1.yaml": edit(strings.ReplaceAll(string(tasksFile), "./tracker/", src+"/tracker/"))}
	for k, v := range files {
		all[k] = v
	}
	for name, text := range all {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "tracker.yaml")
}

// A task may start signed in from a Playwright storage state file
// (relative to its task file): its cookies are set on the site's origin,
// wherever they were recorded.
func TestSiteTaskStorageStateLogin(t *testing.T) {
	t.Parallel()
	def := trackerCopy(t, func(s string) string { return s }, map[string]string{
		"tasks-2.yaml": "- task_id: 7\n  intent: Create an issue.\n  start_url: /new\n  login: {storage_state: li.json}\n" +
			"  eval: {eval_types: [url_match], reference_url: __SITE__/issues/7}\n",
		"li.json": `{"cookies": [{"name": "session", "value": "li", "domain": "127.0.0.1", "path": "/", "httpOnly": true}], "origins": []}`,
	}, "")
	_, _, cl := trackerServer(t, def)
	made := cl.call("make", "", map[string]any{"site": "tracker", "task": "tracker.7"})
	if html := obsOf(made)["html"].(string); !strings.Contains(html, "Signed in as li") || !strings.Contains(html, "new-issue.title") {
		t.Errorf("task 7 starts at %v with %.400q; want the new-issue form, signed in as li", obsOf(made)["url"], html)
	}
}

// The definition's login.cookies sign in its plain episodes and every task
// of its own that gives no login of its own.
func TestSiteLoginCookies(t *testing.T) {
	t.Parallel()
	_, _, cl := trackerServer(t, trackerCopy(t, func(s string) string { return s }, nil, "login: {cookies: [{name: session, value: sam}]}\n"))
	for _, c := range []struct {
		args map[string]any
		who  string
	}{
		{map[string]any{"site": "tracker", "task": "tracker.1"}, "sam"},
		{map[string]any{"site": "tracker", "task": "tracker.5"}, "maria"}, // its own login
		{map[string]any{"site": "tracker", "start_url": "/"}, "sam"},
	} {
		html := obsOf(cl.call("make", "", c.args))["html"].(string)
		if !strings.Contains(html, "Signed in as "+c.who) {
			t.Errorf("%v: %.300q; want signed in as %s", c.args, html, c.who)
		}
	}
}

// A site's task file in WebArena-Verified's schema, beside one in the
// project's: its placeholders and sites stand for the site, and the
// package's evaluators grade it from the episode's own network trace.
// Without a Verified grader the file is refused, saying what to start.
func TestSiteVerifiedSchemaTasks(t *testing.T) {
	t.Parallel()
	verified := `[{"sites": ["shopping"], "task_id": 8, "start_urls": ["__SHOPPING__/"], "intent": "Show the issues labelled bug.",
  "intent_template": "Show the issues labelled {{label}}.", "intent_template_id": 1, "instantiation_dict": {"label": "bug"},
  "eval": [{"evaluator": "AgentResponseEvaluator", "results_schema": {"type": "null"},
            "expected": {"task_type": "navigate", "status": "SUCCESS", "retrieved_data": null}},
           {"evaluator": "NetworkEventEvaluator", "expected": {"url": "__SHOPPING__/?label=bug"}}],
  "revision": 1}]`
	def := trackerCopy(t, func(s string) string { return s }, map[string]string{"tasks-2.yaml": verified}, "")
	site, err := hosting.LoadSite(def)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := catalog.SiteTaskSet(site, nil, nil); err == nil || !strings.Contains(err.Error(), "tasks-2.yaml is in WebArena-Verified's schema") || !strings.Contains(err.Error(), "--verified-python") {
		t.Errorf("a Verified file without a grader: %v", err)
	}
	_, _, cl := trackerServerWith(t, def, taskstest.VerifiedGrader(t))
	for _, c := range []struct {
		label string
		want  float64
	}{{"bug", 1}, {"performance", 0}} {
		env := cl.call("make", "", map[string]any{"site": "tracker", "task": "tracker.8"})["env"].(string)
		last, err := play(cl, env, []string{`click("` + c.label + `")`, verifiedAnswer("NAVIGATE")})
		if err != nil {
			t.Fatal(err)
		}
		if last["reward"] != c.want {
			t.Errorf("showing the %s label: reward %v, info %v; want %v", c.label, last["reward"], last["info"], c.want)
		}
	}
}

// The same tasks with a deliberately broken verifier (a title the site
// does not have: check.py exits 2) and a state check expecting what the
// oracle does not do: the loop fails both, saying why; the broken
// verifier is an evaluation error (no reward), never a 0.
func TestSiteTasksCheckLoopFailures(t *testing.T) {
	t.Parallel()
	def := trackerCopy(t, func(text string) string {
		text = strings.Replace(text, "closed-with-comment, Crash when title is empty,", "closed-with-comment, Crash when the title is blank,", 1)
		return strings.Replace(text, "args: [Dark mode, feature]", "args: [Dark mode, bug]", 1)
	}, nil, "")
	srv, f, cl := trackerServer(t, def)
	byID, table := checkTracker(t, srv, f)
	broken := byID["tracker.4"]
	if broken.OK() || !math.IsNaN(broken.Oracle) || !strings.Contains(strings.Join(broken.Problems, "\n"), "verifier: the grading failed on the oracle's final state") ||
		!strings.Contains(strings.Join(broken.Problems, "\n"), "exit status 2") ||
		!strings.Contains(strings.Join(broken.Problems, "\n"), "no issue titled") {
		t.Errorf("the broken verifier: %+v\n%s", broken, table)
	}
	state := byID["tracker.5"]
	if state.OK() || state.Oracle != 0 || !strings.Contains(strings.Join(state.Problems, "\n"), "oracle: reward 0, want 1") {
		t.Errorf("the wrong state check: %+v\n%s", state, table)
	}
	if !byID["tracker.1"].OK() || !strings.Contains(table, "6 task(s), 4 passed, 2 failed") {
		t.Errorf("table:\n%s", table)
	}
	// Through the protocol: the verifier's failure is reward nil with
	// info.eval_error, an infrastructure fault of the grading.
	env := cl.call("make", "", map[string]any{"site": "tracker", "task": "tracker.4"})["env"].(string)
	r := cl.call("step", env, map[string]any{"action": `stop("")`})
	info := r["info"].(map[string]any)
	if r["reward"] != nil || !strings.Contains(fmt.Sprint(info["eval_error"]), "exit status 2") {
		t.Errorf("broken verifier step: reward %v, info %v", r["reward"], info)
	}
}

// A verifier that crashes (an uncaught exception: Python exits 1) is an
// evaluation error with its traceback, never a 0, and the check loop
// blames the verifier; a crash only on the failure path that the wrong
// sequence does not reach is caught on the start state. A verifier that
// prints no verdict is an error too.
func TestSiteTasksCrashingVerifier(t *testing.T) {
	t.Parallel()
	task := `- task_id: 1
  intent: How many open issues are labelled bug?
  eval:
    eval_types: [check]
    check: {command: [./count.py]}
  oracle: ['stop("3")']
  wrong: ['stop("4")']
- task_id: 2
  intent: Say nothing.
  eval:
    eval_types: [check]
    check: {command: [./silent.py]}
  oracle: ['stop("")']
  wrong: ['stop("x")']
`
	def := trackerCopy(t, func(string) string { return task }, nil, "")
	dir := filepath.Dir(def)
	for name, text := range map[string]string{
		// int("") raises on an empty answer: the failure path the wrong
		// sequence (a wrong number) never takes.
		"count.py":  "#!/usr/bin/env python3\nimport os\nprint('checking', flush=True)\nprint('pass' if int(os.environ['WEBSERV_ANSWER']) == 3 else 'fail')\n",
		"silent.py": "#!/usr/bin/env python3\nimport sys\nprint('about to decide', file=sys.stderr)\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	srv, f, cl := trackerServer(t, def)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	checks, err := srv.CheckTasks(ctx, taskScripts(t, f, []string{"tracker"}), 2)
	if err != nil {
		t.Fatal(err)
	}
	table := server.FormatTaskChecks(checks)
	count, silent := checks[0], checks[1]
	problems := strings.Join(count.Problems, "\n")
	if count.OK() || count.Oracle != 1 || count.Wrong != 0 || !math.IsNaN(count.Start) ||
		!strings.Contains(problems, "verifier: the grading failed on the start state") || !strings.Contains(problems, "ValueError") ||
		!strings.Contains(problems, "exit status 1") {
		t.Errorf("a verifier crashing on the start state: %+v\n%s", count, table)
	}
	// The null agents' answers (none, the start page's title) crash it too:
	// every problem blames the verifier, none the sequences.
	for _, p := range count.Problems {
		if !strings.Contains(p, "the grading failed on") || !strings.Contains(p, "fix the verifier") {
			t.Errorf("a problem that does not blame the crashing verifier: %s", p)
		}
	}
	if silent.OK() || !math.IsNaN(silent.Oracle) || !strings.Contains(strings.Join(silent.Problems, "\n"), "printed no verdict") ||
		!strings.Contains(strings.Join(silent.Problems, "\n"), "about to decide") {
		t.Errorf("a verifier printing no verdict: %+v\n%s", silent, table)
	}
	// Through the protocol: reward nil, the traceback in info.eval_error.
	env := cl.call("make", "", map[string]any{"site": "tracker", "task": "tracker.1"})["env"].(string)
	r := cl.call("step", env, map[string]any{"action": `stop("")`})
	info := r["info"].(map[string]any)
	if r["reward"] != nil || r["terminated"] != true || info["end_reason"] != "agent" ||
		!strings.Contains(fmt.Sprint(info["eval_error"]), "Traceback") || !strings.Contains(fmt.Sprint(info["eval_error"]), "ValueError") {
		t.Errorf("a crashed verifier's step: reward %v, info %v", r["reward"], info)
	}
}

// A site's own tasks on the Incus backend: the setup command and the
// check verifier run inside the environment's container, and the check
// loop passes (the first page shows the state setup wrote, which grades 0;
// the oracle sets the state the task asks for; the wrong sequence, with
// __SITE__ in its goto, sets another).
func TestSiteTasksOnIncus(t *testing.T) {
	t.Parallel()
	img, err := hostingtest.SiteImage(hostingtest.BuildTestSite(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	const alias = "webserv-test-sitetasks"
	m := incusWith(t, img, alias)
	dir := t.TempDir()
	def := "name: boxed\nincus: {image: " + alias + "}\nport: 8080\nready: {path: /ready}\ntasks: [tasks.yaml]\n"
	tasksYAML := `
- task_id: 1
  intent: Set the state to done.
  setup: [[/app/testsite, exec-write, /data/state, prepared]]
  eval:
    eval_types: [program_html, check]
    program_html: [{url: last, locator: "", required_contents: {must_include: [state=done]}}]
    check: {command: [/app/testsite, exec-say, "1"]}
  oracle: ['goto("__SITE__/set?v=done")', 'goto("__SITE__/")', 'stop("")']
  wrong: ['goto("__SITE__/set?v=changed")', 'goto("__SITE__/")', 'stop("")']
`
	for name, text := range map[string]string{"boxed.yaml": def, "tasks.yaml": tasksYAML} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	site, err := hosting.LoadSite(filepath.Join(dir, "boxed.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := catalog.SiteTaskSet(site, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := catalog.New([]*hosting.Site{site}, []hosting.Backend{m}, nil)
	f.SetTasks(site.Name, st)
	srv := server.New(zap.NewNop(), browser, f, server.Config{Env: envConfig(), MaxCreating: 4})
	cl := dial(t, serve(t, srv))
	made := cl.call("make", "", map[string]any{"site": "boxed", "task": "boxed.1"})
	if html := obsOf(made)["html"].(string); !strings.Contains(html, "state=prepared") {
		t.Errorf("first page %q: the setup did not run in the container before it", html)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	checks, err := srv.CheckTasks(ctx, taskScripts(t, f, []string{"boxed"}), 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(checks) != 1 || !checks[0].OK() || checks[0].Oracle != 1 || checks[0].Wrong != 0 {
		t.Errorf("check loop on Incus:\n%s", server.FormatTaskChecks(checks))
	}
}

// The example site on Incus, from the same task file as on the local
// backend: an image of the tracker and this host's Python (nothing can be
// pulled here); setup and check run in the container, in the image's
// working directory, state reads $DATA_DIR/tracker.db out of it; every
// task's oracle earns 1 and its wrong sequence 0.
func TestExampleSiteOnIncus(t *testing.T) {
	t.Parallel()
	src := trackerDir(t)
	python, err := filepath.EvalSymlinks("/usr/bin/python3") // Debian's, like /usr/bin/python3.11
	if err != nil {
		t.Fatalf("the example's image is made of this host's Python: %v (apt-get install python3)", err)
	}
	version := filepath.Base(python)
	img, err := hostingtest.HostImage(hostingtest.ImageSpec{
		Files: map[string]string{
			"/usr/bin/python3": python, "/usr/bin/env": "/usr/bin/env",
			"/usr/lib/" + version: "/usr/lib/" + version,
			"/site/tracker":       filepath.Join(src, "tracker"),
			"/data/seed.sql":      filepath.Join(src, "tracker", "data", "seed.sql"),
		},
		Skip:       []string{"test", "tests", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "pydoc_data", "config-" + strings.TrimPrefix(version, "python") + "-x86_64-linux-gnu"},
		Entrypoint: []string{"/usr/bin/python3", "/site/tracker/app.py", "serve", "--port", "8080"},
		Env:        []string{"PATH=/usr/bin:/bin", "DATA_DIR=/data"},
		WorkingDir: "/site",
		Port:       8080,
	})
	if err != nil {
		t.Fatal(err)
	}
	const alias = "webserv-test-tracker"
	m := incusWith(t, img, alias)
	dir := t.TempDir()
	def := "name: tracker\nincus: {image: " + alias + "}\nport: 8080\nready: {path: /healthz, timeout_ms: 60000}\ntasks: [" + filepath.Join(src, "tracker", "tasks.yaml") + "]\n"
	if err := os.WriteFile(filepath.Join(dir, "tracker.yaml"), []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
	site, err := hosting.LoadSite(filepath.Join(dir, "tracker.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := catalog.SiteTaskSet(site, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := catalog.New([]*hosting.Site{site}, []hosting.Backend{m}, nil)
	f.SetTasks(site.Name, st)
	srv := server.New(zap.NewNop(), browser, f, server.Config{Env: envConfig(), MaxCreating: 4, MaxEnvs: 16})
	t.Cleanup(func() { _ = srv.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	checks, err := srv.CheckTasks(ctx, taskScripts(t, f, []string{"tracker"}), 3)
	if err != nil {
		t.Fatal(err)
	}
	table := server.FormatTaskChecks(checks)
	t.Logf("the example on Incus:\n%s", table)
	if !strings.Contains(table, "6 task(s), 6 passed, 0 failed") {
		t.Errorf("the example on Incus:\n%s", table)
	}
}

// A group's members share the leader's episode (its task, start state and
// grading) but each is graded on its own instance: a check verifier runs
// in the member's instance, not in the leader's.
func TestSiteTaskCheckOnEachGroupMember(t *testing.T) {
	t.Parallel()
	_, _, cl := trackerServer(t, filepath.Join(trackerDir(t), "tracker.yaml"))
	group := map[string]any{"options": map[string]any{"group_key": "g-1", "task": "tracker.4"}}
	leader := cl.call("make", "", map[string]any{"site": "tracker"})["env"].(string)
	member := cl.call("make", "", map[string]any{"site": "tracker"})["env"].(string)
	if role := cl.call("reset", leader, group)["info"].(map[string]any)["group_role"]; role != "leader" {
		t.Fatalf("leader's role %v", role)
	}
	if role := cl.call("reset", member, group)["info"].(map[string]any)["group_role"]; role != "member" {
		t.Fatalf("member's role %v", role)
	}
	for _, a := range []string{`click("crash-when-title-is-empty")`, `click("close-issue")`} {
		cl.call("step", member, map[string]any{"action": a})
	}
	got := cl.call("step", member, map[string]any{"action": `stop("")`})
	if r, _ := got["reward"].(float64); math.Abs(r-2.0/3) > 1e-9 {
		t.Errorf("member closed the issue: reward %v, info %v; want 2/3 (closed, no comment)", got["reward"], got["info"])
	}
	if r := cl.call("step", leader, map[string]any{"action": `stop("")`})["reward"]; r != 0.0 {
		t.Errorf("leader did nothing: reward %v, want 0", r)
	}
}

// With evaluate_every_step, each step's reward is the change in the
// task's grade since the last step (info.grade is the grade), so an
// episode's rewards add up to its final grade however long it stays in
// the goal state; max_steps and episode_timeout_ms truncate, saying why.
func TestDenseRewardsAddUpToTheGrade(t *testing.T) {
	t.Parallel()
	_, _, cl := trackerServer(t, filepath.Join(trackerDir(t), "tracker.yaml"))
	made := cl.call("make", "", map[string]any{"site": "tracker", "task": "tracker.6", "evaluate_every_step": true, "max_steps": 4})
	env := made["env"].(string)
	var rewards, grades []any
	var last map[string]any
	for _, a := range []string{`scroll(0, 100)`, `click("close-issue")`, `scroll(0, 100)`, `scroll(0, 100)`} {
		last = cl.call("step", env, map[string]any{"action": a})
		info := last["info"].(map[string]any)
		rewards, grades = append(rewards, last["reward"]), append(grades, info["grade"])
	}
	if fmt.Sprint(rewards) != "[0 1 0 0]" || fmt.Sprint(grades) != "[0 1 1 1]" {
		t.Errorf("rewards %v, grades %v; want [0 1 0 0] and [0 1 1 1]", rewards, grades)
	}
	info := last["info"].(map[string]any)
	if last["terminated"] != false || last["truncated"] != true || info["end_reason"] != "max_steps" {
		t.Errorf("the 4th step of max_steps 4: terminated %v, truncated %v, info %v", last["terminated"], last["truncated"], info)
	}
	// An episode past its time limit is truncated, saying so (1 ms: the first step is past it).
	made = cl.call("make", "", map[string]any{"site": "tracker", "task": "tracker.6", "episode_timeout_ms": 1})
	late := cl.call("step", made["env"].(string), map[string]any{"action": `scroll(0, 100)`})
	if late["terminated"] != false || late["truncated"] != true || late["info"].(map[string]any)["end_reason"] != "episode_timeout" {
		t.Errorf("a step past episode_timeout_ms: %v", late)
	}
	// Graded only where the agent stops: the reward is the grade itself.
	made = cl.call("make", "", map[string]any{"site": "tracker", "task": "tracker.6"})
	env = made["env"].(string)
	first := cl.call("step", env, map[string]any{"action": `click("close-issue")`})
	stop := cl.call("step", env, map[string]any{"action": `stop("")`})
	if first["reward"] != 0.0 || first["info"].(map[string]any)["grade"] != nil || stop["reward"] != 1.0 ||
		stop["info"].(map[string]any)["grade"] != 1.0 || stop["info"].(map[string]any)["end_reason"] != "agent" {
		t.Errorf("graded at the end: %v then %v", first, stop)
	}
}

package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/hosting/hostingtest"
	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/sites/catalog"
	"github.com/webserv-rl/webserv/tasks"
)

// twoSiteTask needs both sites: it starts on the first, ends on the
// second, and is graded on both.
const twoSiteTask = `[{"task_id": 7, "sites": ["gitlab", "reddit"], "require_login": false, "storage_state": null,
  "start_url": "__GITLAB__/set?v=from-gitlab", "intent": "Open the forum's front page.",
  "eval": {"eval_types": ["url_match", "program_html"], "reference_answers": null,
    "reference_url": "__REDDIT__/", "url_note": "EXACT",
    "program_html": [{"url": "__GITLAB__/", "locator": "", "required_contents": {"must_include": ["state=from-gitlab"]}}]}}]`

// A task that needs two sites runs in one environment: both sites at their
// own origins in one browser context, each on its own instance, graded
// across both; snapshots and forks carry both.
func TestTwoSiteTask(t *testing.T) {
	t.Parallel()
	var sites []*hosting.Site
	for _, name := range []string{"gitlab", "reddit"} {
		s := hostingtest.LocalSite(t)
		s.Name, s.Origin = name, ""
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		sites = append(sites, s)
	}
	set, err := tasks.ParseTasks([]byte(twoSiteTask), "two-site")
	if err != nil {
		t.Fatal(err)
	}
	factory := catalog.New(sites, []hosting.Backend{localBackend(t)}, nil)
	factory.SetTasks("gitlab+reddit", &catalog.TaskSet{Set: set, Name: "test", Variant: "test", Roles: []string{"gitlab", "reddit"}, Grader: &tasks.Grader{}})
	cl := dial(t, serve(t, server.New(nil, browser, factory, server.Config{Env: envConfig()})))

	if listed := cl.call("sites", "", nil); !strings.Contains(strings.Join(names(listed), ","), "gitlab+reddit") {
		t.Errorf("sites does not list the pair: %v", listed)
	}
	for _, c := range []struct {
		name    string
		actions []string
		reward  float64
	}{
		{"oracle", []string{`goto("http://reddit.webserv.test/")`, "stop [done]"}, 1},
		{"wrong", []string{`goto("http://gitlab.webserv.test/")`, "stop [done]"}, 0},
	} {
		made := cl.call("make", "", map[string]any{"sites": []any{"gitlab", "reddit"}, "task": "7"})
		env := made["env"].(string)
		if u := obsOf(made)["url"]; u != "http://gitlab.webserv.test/set?v=from-gitlab" {
			t.Fatalf("%s: starts at %v", c.name, u)
		}
		var last map[string]any
		for _, a := range c.actions {
			last = cl.call("step", env, map[string]any{"action": a})
			if e := obsOf(last)["last_action_error"]; e != "" && e != nil {
				t.Errorf("%s: %s: %v", c.name, a, e)
			}
		}
		if last["reward"] != c.reward {
			t.Errorf("%s: reward %v (info %v), want %v", c.name, last["reward"], last["info"], c.reward)
		}
		cl.call("close", env, nil)
	}

	// Both instances are the environment's own, and a fork copies both
	// (the episode is the pair's one task: it set gitlab's state).
	env := cl.call("make", "", map[string]any{"site": "gitlab+reddit"})["env"].(string)
	cl.call("step", env, map[string]any{"action": `goto("http://reddit.webserv.test/set?v=r1")`})
	cl.call("snapshot", env, map[string]any{"name": "s"})
	child := cl.call("fork", env, map[string]any{"name": "s", "n": 1})["envs"].([]any)[0].(map[string]any)["env"].(string)
	cl.call("step", env, map[string]any{"action": `goto("http://reddit.webserv.test/set?v=parent-moved")`})
	for _, u := range []string{"http://reddit.webserv.test/", "http://gitlab.webserv.test/"} {
		html := obsOf(cl.call("step", child, map[string]any{"action": `goto("` + u + `")`}))["html"].(string)
		want := map[bool]string{true: "state=r1", false: "state=from-gitlab"}[strings.Contains(u, "reddit")]
		if !strings.Contains(html, want) {
			t.Errorf("fork at %s: %s, want %s", u, html, want)
		}
	}
}

// A two-site task that starts signed in from a WebArena storage state: each
// cookie is set on the site whose host it was recorded for.
func TestTwoSiteStorageState(t *testing.T) {
	t.Parallel()
	var sites []*hosting.Site
	for _, name := range []string{"gitlab", "reddit"} {
		s := hostingtest.LocalSite(t)
		s.Name, s.Origin = name, "http://metis.lti.cs.cmu.edu:"+map[string]string{"gitlab": "8023", "reddit": "9999"}[name]
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		sites = append(sites, s)
	}
	auth := t.TempDir()
	state := `{"cookies": [{"name": "_gitlab_session", "value": "g1", "domain": "metis.lti.cs.cmu.edu", "path": "/"},
	  {"name": "PHPSESSID", "value": "r1", "domain": "metis.lti.cs.cmu.edu", "path": "/"},
	  {"name": "elsewhere", "value": "e1", "domain": "recording-host.example", "path": "/"}], "origins": []}`
	if err := os.WriteFile(filepath.Join(auth, "gitlab.reddit_state.json"), []byte(state), 0o644); err != nil {
		t.Fatal(err)
	}
	task := strings.Replace(twoSiteTask, `"require_login": false, "storage_state": null`, `"require_login": true, "storage_state": "./.auth/gitlab.reddit_state.json"`, 1)
	set, err := tasks.ParseTasks([]byte(task), "two-site")
	if err != nil {
		t.Fatal(err)
	}
	factory := catalog.New(sites, []hosting.Backend{localBackend(t)}, nil)
	factory.SetTasks("gitlab+reddit", &catalog.TaskSet{Set: set, Name: "test", Variant: "test", Roles: []string{"gitlab", "reddit"}, AuthDir: auth, Grader: &tasks.Grader{}})
	cl := dial(t, serve(t, server.New(nil, browser, factory, server.Config{Env: envConfig()})))
	env := cl.call("make", "", map[string]any{"site": "gitlab+reddit", "task": "7"})["env"].(string)
	for _, origin := range []string{"http://metis.lti.cs.cmu.edu:8023", "http://metis.lti.cs.cmu.edu:9999"} {
		html := obsOf(cl.call("step", env, map[string]any{"action": `goto("` + origin + `/cookies")`}))["html"].(string)
		if !strings.Contains(html, "_gitlab_session=g1") || !strings.Contains(html, "PHPSESSID=r1") {
			t.Errorf("%s sees %s", origin, html)
		}
	}
}

func names(sites map[string]any) []string {
	var out []string
	for _, s := range sites["sites"].([]any) {
		out = append(out, s.(map[string]any)["name"].(string))
	}
	return out
}

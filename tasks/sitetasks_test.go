package tasks_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/tasks"
)

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A site's task files: YAML or JSON, the project's schema or
// WebArena-Verified's (detected per file); a task without sites or
// start_url is the site's, at its origin; __SITE__ becomes the origin.
func TestLoadSiteTasks(t *testing.T) {
	dir := t.TempDir()
	own := writeFile(t, dir, "own.yaml", `
- task_id: 1
  intent: Open issue 3.
  eval: {eval_types: [url_match], reference_url: __SITE__/issues/3}
  setup: [[./seed.py, "{url}"]]
- task_id: 2
  intent: Sign in works.
  start_url: /me
  login: {storage_state: state.json}
  eval: {eval_types: [check], check: {command: [./check.py]}}
`)
	writeFile(t, dir, "state.json", `{"cookies": [{"name": "sid", "value": "abc", "domain": "example.com", "path": "/"}], "origins": []}`)
	raw, err := os.ReadFile("../sites/shop/tasks/verified/shopping.json")
	if err != nil {
		t.Fatal(err)
	}
	verified := writeFile(t, dir, "verified.json", string(raw))
	set, files, err := tasks.LoadSiteTasks("wiki", []string{own, verified})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0].Schema != tasks.SchemaWebServ || files[0].Count != 2 || files[1].Schema != tasks.SchemaVerified {
		t.Errorf("files = %+v", files)
	}
	one := set.ByID[1]
	if one == nil || one.StartURL != "__SITE__/" || strings.Join(one.Sites, ",") != tasks.SiteRole {
		t.Fatalf("task 1 = %+v", one)
	}
	inst, err := tasks.Instantiate(one, map[string]string{tasks.SiteRole: "http://wiki.webserv.test"})
	if err != nil {
		t.Fatal(err)
	}
	if inst.StartURL != "http://wiki.webserv.test/" || inst.Eval.ReferenceURL != "http://wiki.webserv.test/issues/3" {
		t.Errorf("instantiated = %q, %q", inst.StartURL, inst.Eval.ReferenceURL)
	}
	if two := set.ByID[2]; two.StartURL != "__SITE__/me" {
		t.Errorf("start_url /me became %q; want a path on the site", two.StartURL)
	}
	if two := set.ByID[2]; two.Login.StorageState != filepath.Join(dir, "state.json") {
		t.Errorf("storage_state = %q, want it relative to the task file", two.Login.StorageState)
	}
	if len(set.Tasks) <= 2 || set.Tasks[2].Eval.Verified == nil {
		t.Errorf("the Verified file's tasks: %d", len(set.Tasks))
	}

	// An explored task (webserv.explore) keeps its provenance in explored;
	// a misspelling of it is still refused.
	explored := writeFile(t, dir, "explored.json", `[{"task_id": 7, "intent": "Go to the Boots page.", "eval": {"eval_types": ["url_match"], "reference_url": "/category/boots"}, "explored": {"episode": 1, "persona": "a hiker", "steps": 4}}]`)
	if set, _, err := tasks.LoadSiteTasks("wiki", []string{explored}); err != nil || string(set.ByID[7].Explored) != `{"episode": 1, "persona": "a hiker", "steps": 4}` {
		t.Errorf("explored task: %v", err)
	}
	typo := writeFile(t, dir, "typo.json", `[{"task_id": 7, "intent": "x", "eval": {"eval_types": ["url_match"], "reference_url": "/a"}, "explore": {}}]`)
	if _, _, err := tasks.LoadSiteTasks("wiki", []string{typo}); err == nil || !strings.Contains(err.Error(), `unknown field "explore"`) {
		t.Errorf("misspelt explored: %v", err)
	}

	// The same id in two files names both.
	dup := writeFile(t, dir, "dup.json", `[{"task_id": 2, "intent": "again", "eval": {"eval_types": ["url_match"], "reference_url": "/x"}}]`)
	if _, _, err := tasks.LoadSiteTasks("wiki", []string{own, dup}); err == nil || !strings.Contains(err.Error(), "dup.json: task 2: id already used in "+own) {
		t.Errorf("duplicate id: %v", err)
	}
	for _, c := range []struct{ text, want string }{
		{`- {task_id: 3, intent: x, eval: {eval_types: [check]}}`, "bad.yaml: task 3: eval.check: the check evaluator needs eval.check"},
		{`- {task_id: 3, intent: x, eval: {eval_types: [check], check: {command: [a], timeout_ms: 900000}}}`, "task 3: eval.check.timeout_ms: 900000"},
		{`- {task_id: 3, intent: x, eval: {eval_types: [url_match], reference_url: /a, check: {command: [a]}}}`, "eval.check: given, but eval.eval_types does not list check"},
		{`- {task_id: 3, intent: x, setup: [[]], eval: {eval_types: [url_match], reference_url: /a}}`, "task 3: setup[0]: empty command"},
		{`- {task_id: 3, intent: x, login: {cookies: [{value: v}]}, eval: {eval_types: [url_match], reference_url: /a}}`, "task 3: login.cookies[0].name: empty"},
		{`- {task_id: 3, intent: x, login: {storage_state: nope.json}, eval: {eval_types: [url_match], reference_url: /a}}`, "task 3: login.storage_state: storage state"},
		{`- {intent: x, eval: {eval_types: [url_match], reference_url: /a}}`, "task at index 0: task_id: missing"},
		{`- {task_id: 3, intent: x, evals: {}}`, `task 3: json: unknown field "evals"`},
		{`[]`, "bad.yaml: no tasks"},
	} {
		bad := writeFile(t, dir, "bad.yaml", c.text)
		if _, _, err := tasks.LoadSiteTasks("wiki", []string{bad}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.text, err, c.want)
		}
	}
}

// A verifier's verdict, the last line of its stdout: pass or fail, a
// score, named sub-scores (weighted), or an error that says what was
// wrong; never a silent 0. Nothing printed is an error, not a 0.
func TestParseCheckOutput(t *testing.T) {
	for _, c := range []struct {
		out   string
		score float64
		subs  int
	}{
		{"1", 1, 0},
		{"0.25\n", 0.25, 0},
		{"pass", 1, 0},
		{"fail\n", 0, 0},
		{"checking issue 3\nrows: 2\n\nfail\n", 0, 0},
		{"debug {\"a\": 0}\n0.5", 0.5, 0},
		{`{"a": 1, "b": 0}`, 0.5, 2},
		{`{"a": {"score": 1, "weight": 3}, "b": 0}`, 0.75, 2},
	} {
		score, subs, err := tasks.ParseCheckOutput([]byte(c.out))
		if err != nil || score != c.score || len(subs) != c.subs {
			t.Errorf("%s: %v %v %v", c.out, score, subs, err)
		}
	}
	for _, c := range []struct{ out, want string }{
		{"1.5", "want a number in [0, 1]"},
		{"passed", "as its verdict"},
		{"1 2", "as its verdict"},
		{"", "printed no verdict"},
		{"\n \n", "printed no verdict"},
		{"pass\ntraceback", `"traceback" as its verdict`},
		{`{"a": "yes"}`, "score a is yes, not a number"},
		{`{"a": {"score": 1, "weight": -1}}`, "weight of a"},
		{`{"a": {"score": 1, "wieght": 2}}`, `sub-score a has field "wieght"`},
		{`{"a": {"score": 1, "weight": 0}}`, "every weight is 0"},
		{`{}`, "non-empty object"},
		{`[1]`, "non-empty object"},
	} {
		if _, _, err := tasks.ParseCheckOutput([]byte(c.out)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.out, err, c.want)
		}
	}
}

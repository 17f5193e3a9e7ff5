package server_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/sites/bundled"
	"github.com/webserv-rl/webserv/tasks"
)

// verifiedGrader starts the grader process with the repository's venv
// (make venv installs webarena-verified there), closed when the test ends.
func verifiedGrader(t *testing.T) *server.VerifiedGrader {
	t.Helper()
	py, err := filepath.Abs("../.venv/bin/python")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(py); err != nil {
		t.Fatalf("%s: %v; run make venv (it installs webarena-verified)", py, err)
	}
	g, err := server.NewVerifiedGrader(context.Background(), nil, server.VerifiedCommand(py))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g
}

// Every task of WebArena-Verified and of its Hard subset, read from the
// installed package, loads and validates, with the site roles and
// placeholders the WebArena layer uses.
func TestVerifiedDatasetsLoadAndValidate(t *testing.T) {
	t.Parallel()
	h := verifiedGrader(t).Hello()
	if h.Version != "1.2.3" || !strings.Contains(h.Full, "site-packages") {
		t.Fatalf("grader hello %+v: want webarena-verified 1.2.3's datasets where pip installed them", h)
	}
	full, err := tasks.LoadVerified(h.Full)
	if err != nil {
		t.Fatal(err)
	}
	hard, err := tasks.LoadVerified(h.Hard)
	if err != nil {
		t.Fatal(err)
	}
	if len(full.Tasks) != 812 || len(hard.Tasks) != 258 {
		t.Fatalf("%d tasks and %d Hard ones; WebArena-Verified has 812 and 258", len(full.Tasks), len(hard.Tasks))
	}
	for _, tk := range hard.Tasks {
		if full.ByID[tk.ID] == nil {
			t.Errorf("Hard task %d is not in the full set", tk.ID)
		}
	}
	bySites := map[string]int{}
	for _, tk := range full.Tasks {
		bySites[strings.Join(tk.Sites, "+")]++
		inst, err := tasks.Instantiate(&tk, map[string]string{"shopping": "http://shop", "shopping_admin": "http://admin", "gitlab": "http://gitlab", "reddit": "http://reddit", "map": "http://map", "wikipedia": "http://wiki"})
		if err != nil || strings.Contains(inst.StartURL, "__") {
			t.Errorf("task %d: start URL %q does not instantiate: %v", tk.ID, inst.StartURL, err)
		}
	}
	if bySites["shopping"] != 187 || bySites["shopping_admin"] != 182 || bySites["gitlab"] != 180 || bySites["reddit"] != 106 || bySites["map"] != 109 {
		t.Errorf("tasks by sites: %v", bySites)
	}
	t.Logf("tasks by sites: %v", bySites)
}

// verifiedAnswer is a stop with Verified's structured answer.
func verifiedAnswer(taskType string) string {
	return fmt.Sprintf(`stop("{\"task_type\": \"%s\", \"status\": \"SUCCESS\", \"retrieved_data\": null}")`, taskType)
}

// withAnswer replaces a sequence's final stop by answer.
func withAnswer(seq []string, answer string) []string {
	out := append([]string{}, seq...)
	if n := len(out); n > 0 && strings.HasPrefix(out[n-1], "stop") {
		out[n-1] = answer
	} else {
		out = append(out, answer)
	}
	return out
}

// withVerified adds the bundled shop's Verified-style sets graded by g.
func withVerified(t *testing.T, g *server.VerifiedGrader) func(f *server.HostedFactory, sets map[string]*server.SiteTasks) {
	return func(f *server.HostedFactory, sets map[string]*server.SiteTasks) {
		vs, err := bundled.VerifiedSets(sets, g)
		if err != nil {
			t.Fatal(err)
		}
		for name, st := range vs {
			f.AddTaskSet(name, st)
		}
	}
}

func verifiedSet(t *testing.T, site string) *tasks.Set {
	t.Helper()
	sets, err := bundled.VerifiedSets(map[string]*server.SiteTasks{site: {Set: &tasks.Set{}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sets[site].Set
}

// Recorded Verified episodes export as HAR traces in WebArena-Verified's
// layout, and re-grading them offline (the trace read back from the file)
// gives the rewards given online.
func TestVerifiedEpisodesRegradeOfflineToTheSameRewards(t *testing.T) {
	t.Parallel()
	g := verifiedGrader(t)
	dir := t.TempDir()
	cl := shopServer(t, server.Config{TrajectoryDir: dir}, withVerified(t, g))
	native := map[string]tasks.Task{}
	for _, bt := range bundledTasks(t) {
		native[fmt.Sprintf("%s.%d", bt.site, bt.task.ID)] = bt.task
	}
	online := 0
	for _, c := range []struct{ site, id, typ string }{{"shopping", "shopping.20", "NAVIGATE"}, {"shopping", "shopping.35", "MUTATE"}, {"cms", "cms.15", "MUTATE"}} {
		env := cl.call("make", "", map[string]any{"site": c.site, "task": "verified." + c.id, "record": map[string]any{}})["env"].(string)
		for i, seq := range [][]string{native[c.id].Oracle, native[c.id].Wrong} {
			if i > 0 {
				cl.call("reset", env, nil)
			}
			last, err := play(cl, env, withAnswer(seq, verifiedAnswer(c.typ)))
			if last == nil {
				t.Fatalf("%s: %v", c.id, err)
			}
			if last["reward"] != []float64{1, 0}[i] {
				t.Errorf("%s sequence %d: online reward %v", c.id, i, last["reward"])
			}
			online++
		}
		cl.call("close", env, nil)
	}
	out := t.TempDir()
	n, err := server.ExportHAR(out, []string{dir})
	if err != nil || n != online {
		t.Fatalf("exported %d traces (%v); %d episodes were recorded", n, err, online)
	}
	res, err := server.Regrade(context.Background(), g, []string{out})
	if err != nil || len(res) != online {
		t.Fatalf("regraded %d episodes (%v), want %d", len(res), err, online)
	}
	ones := 0
	for _, r := range res {
		if r.Recorded == nil || *r.Recorded != r.Regraded {
			t.Errorf("%s (%s): online reward %v, offline %v", r.Dir, r.TaskID, r.Recorded, r.Regraded)
		}
		if r.Regraded == 1 {
			ones++
		}
	}
	if ones != 3 {
		t.Errorf("%d episodes regraded 1; the three oracles should", ones)
	}
	if _, err := os.Stat(filepath.Join(res[0].Dir, "agent_response.json")); err != nil {
		t.Errorf("the export lacks WebArena-Verified's agent_response.json: %v", err)
	}
}

// A Verified task's kind comes from its answer type, and a task the
// package could not grade is refused on load, naming the task and field.
func TestParseVerifiedChecksEachTask(t *testing.T) {
	set, err := tasks.ParseVerified([]byte(`[{"sites": ["shopping_admin"], "task_id": 7, "start_urls": ["__SHOPPING_ADMIN__/sales/order/"], "intent": "Open the orders",
	  "intent_template": "Open the orders", "intent_template_id": 7, "instantiation_dict": {}, "revision": 1, "eval": [{"evaluator": "AgentResponseEvaluator", "expected": {"task_type": "navigate", "status": "SUCCESS", "retrieved_data": null}},
	  {"evaluator": "NetworkEventEvaluator", "expected": {"url": "__SHOPPING_ADMIN__/sales/order/"}}]}]`), "one.json")
	if err != nil {
		t.Fatal(err)
	}
	if set.Tasks[0].Category != "navigation" {
		t.Errorf("category %q", set.Tasks[0].Category)
	}
	if _, err := tasks.ParseVerified([]byte(`[{"sites": ["shopping"], "task_id": 1, "start_urls": ["__SHOPPING__"], "intent": "x", "revision": 1,
	  "intent_template": "x", "intent_template_id": 1, "instantiation_dict": {},
	  "eval": [{"evaluator": "AgentResponseEvaluator", "expected": {"task_type": "browse", "status": "SUCCESS"}}]}]`), "bad.json"); err == nil || !strings.Contains(err.Error(), "task 1: eval[0].expected.task_type") {
		t.Errorf("an unknown task type: %v", err)
	}
}

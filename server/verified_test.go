package server_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/sites/catalog"
	"github.com/webserv-rl/webserv/tasks"
	"github.com/webserv-rl/webserv/tasks/taskstest"
)

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
func withVerified(t *testing.T, g *tasks.VerifiedGrader) func(f *catalog.Catalog, sets map[string]*catalog.TaskSet) {
	return func(f *catalog.Catalog, sets map[string]*catalog.TaskSet) {
		vs, err := catalog.BundledVerified(sets, g)
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
	sets, err := catalog.BundledVerified(map[string]*catalog.TaskSet{site: {Set: &tasks.Set{}}}, nil)
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
	g := taskstest.VerifiedGrader(t)
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
	n, err := tasks.ExportHAR(out, []string{dir})
	if err != nil || n != online {
		t.Fatalf("exported %d traces (%v); %d episodes were recorded", n, err, online)
	}
	res, err := tasks.Regrade(context.Background(), g, []string{out})
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

package tasks_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/webserv-rl/webserv/netroute"
	"github.com/webserv-rl/webserv/sites/shop"
	"github.com/webserv-rl/webserv/tasks"
	"github.com/webserv-rl/webserv/tasks/taskstest"
	"github.com/webserv-rl/webserv/trajectory"
)

// recordVerified writes a recorded episode of the bundled shop's
// Verified-style task 20 (show the T-shirts sorted by price) under dir as
// the server does: its trajectory, whose last step carries the reward,
// answer and grading, and its trace, one document load of page.
func recordVerified(t *testing.T, dir, env string, reward float64, page string) {
	t.Helper()
	raw, err := shop.VerifiedTaskFile("shopping")
	if err != nil {
		t.Fatal(err)
	}
	var defs []json.RawMessage
	if err := json.Unmarshal(raw, &defs); err != nil {
		t.Fatal(err)
	}
	var task json.RawMessage
	for _, d := range defs {
		var head struct {
			ID int `json:"task_id"`
		}
		if json.Unmarshal(d, &head) == nil && head.ID == 20 {
			task = d
		}
	}
	if task == nil {
		t.Fatal("the shop's Verified-style set has no task 20")
	}
	const origin = "http://shop.webserv.test"
	path := filepath.Join(dir, env, "0001"+trajectory.Ext)
	w, err := trajectory.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	grading := tasks.VerifiedGrading{Evaluator: "webarena-verified 1.2.3", TaskID: 20, Task: task, Environments: map[string][]string{"shopping": {origin}}}
	answer := `{"task_type": "NAVIGATE", "status": "SUCCESS", "retrieved_data": null}`
	for _, l := range []trajectory.Line{
		{Kind: trajectory.KindEpisode, Env: env, Episode: 1, Site: "shopping", TaskID: "verified.shopping.20"},
		{Kind: trajectory.KindStep, Step: 1, Action: "stop(...)", Reward: &reward, Terminated: true,
			Info: map[string]any{"answer": answer, "task_set": "webarena-verified", "grading": grading}},
	} {
		if err := w.Write(l); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	har := &netroute.HAR{Log: netroute.HARLog{Version: "1.2", Creator: netroute.HARCreator{Name: "webserv", Version: "test"}, Entries: []netroute.HAREntry{{
		StartedDateTime: "2026-01-01T00:00:00Z",
		Request: netroute.HARRequest{Method: "GET", URL: origin + page, HTTPVersion: "HTTP/1.1",
			Headers: []netroute.HARNameValue{{Name: "Accept", Value: "text/html,application/xhtml+xml"}}},
		Response: netroute.HARResponse{Status: 200, StatusText: "OK", HTTPVersion: "HTTP/1.1", Content: netroute.HARContent{MimeType: "text/html"}},
	}}}}
	if err := trajectory.WriteTrace(trajectory.TracePath(path), har); err != nil {
		t.Fatal(err)
	}
}

// Recorded Verified episodes export in WebArena-Verified's layout, and
// grading the exported directories again (the package reading the trace
// from network.har) gives each its recorded reward: 1 for the episode that
// loaded the sorted listing, 0 for the one that did not.
func TestExportedEpisodesRegradeToTheirRecordedRewards(t *testing.T) {
	rec, out := t.TempDir(), t.TempDir()
	recordVerified(t, rec, "e1", 1, "/category/t-shirts?sort=price_asc")
	recordVerified(t, rec, "e2", 0, "/category/t-shirts")
	n, err := tasks.ExportHAR(out, []string{rec})
	if err != nil || n != 2 {
		t.Fatalf("exported %d episodes: %v", n, err)
	}
	for _, f := range []string{"network.har", "agent_response.json", "episode.json"} {
		if _, err := os.Stat(filepath.Join(out, "e1-0001", f)); err != nil {
			t.Errorf("the export lacks %s: %v", f, err)
		}
	}
	res, err := tasks.Regrade(context.Background(), taskstest.VerifiedGrader(t), []string{out})
	if err != nil || len(res) != 2 {
		t.Fatalf("regraded %d episodes: %v", len(res), err)
	}
	for _, r := range res {
		if r.Recorded == nil {
			t.Fatalf("%s: no recorded reward", r.Dir)
		}
		if r.TaskID != "verified.shopping.20" || *r.Recorded != r.Regraded {
			t.Errorf("%s (%s): recorded %v, regraded %v", r.Dir, r.TaskID, *r.Recorded, r.Regraded)
		}
	}
}

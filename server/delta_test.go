package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/sites/bundled"
	"github.com/webserv-rl/webserv/trajectory"
)

// Every transition of recorded oracle episodes of the bundled shop (the
// first two tasks of each kind, storefront and admin) is labelled with a delta
// that gives the next observation exactly: Diff and Apply on the recorded
// observations whole, and the delta `export --format transitions` writes,
// read back from its JSON, in both views (HTML and accessibility tree).
// A typical step's delta is a small part of the observation.
func TestOracleTransitionDeltas(t *testing.T) {
	t.Parallel()
	trajDir, runs, files := recordedShopOracles(t)
	t.Logf("%d oracle episodes recorded", len(runs))
	type key struct {
		id   string
		step int
	}
	pairs := map[key][2]*trajectory.Observation{}
	for _, f := range files {
		ep, err := trajectory.Read(f)
		if err != nil {
			t.Fatal(err)
		}
		prev := ep.Reset.Obs
		for i, l := range ep.Steps {
			if prev == nil || l.Obs == nil {
				t.Fatalf("%s step %d: no observation recorded", f, i+1)
			}
			pairs[key{fmt.Sprintf("%s/%d", ep.Head.Env, ep.Head.Episode), i + 1}] = [2]*trajectory.Observation{prev, l.Obs}
			d := trajectory.Diff(*prev, *l.Obs)
			if got, err := trajectory.Apply(*prev, d); err != nil || !reflect.DeepEqual(got, *l.Obs) {
				t.Errorf("%s step %d (%s): Apply(o_t, Diff(o_t, o_t+1)) is not o_t+1 (%v)", f, i+1, l.Action, err)
			}
			prev = l.Obs
		}
	}
	if len(pairs) < 2*len(runs) {
		t.Fatalf("%d transitions in %d episodes", len(pairs), len(runs))
	}

	for _, axtree := range []bool{false, true} {
		var out bytes.Buffer
		n, err := trajectory.Export(&out, []string{trajDir}, trajectory.ExportOptions{Format: "transitions", AXTree: axtree})
		if err != nil || n != len(pairs) {
			t.Fatalf("axtree %v: export wrote %d rows for %d transitions: %v", axtree, n, len(pairs), err)
		}
		var ratios []float64
		keyed, urls := 0, 0
		for line := range strings.SplitSeq(strings.TrimSpace(out.String()), "\n") {
			var row trajectory.TransitionRow
			if err := json.Unmarshal([]byte(line), &row); err != nil {
				t.Fatal(err)
			}
			p, ok := pairs[key{row.EpisodeID, row.Step}]
			if !ok {
				t.Fatalf("row %s step %d is no recorded transition", row.EpisodeID, row.Step)
			}
			a, b := trajectory.ExportView(*p[0], axtree), trajectory.ExportView(*p[1], axtree)
			got, err := trajectory.Apply(a, row.Delta)
			gj, _ := json.Marshal(got)
			bj, _ := json.Marshal(b)
			if err != nil || string(gj) != string(bj) {
				t.Errorf("axtree %v, %s step %d (%s): applying the exported delta does not give the next observation (%v)", axtree, row.EpisodeID, row.Step, row.Action, err)
			}
			dj, _ := json.Marshal(row.Delta)
			ratios = append(ratios, float64(len(dj))/float64(len(bj)))
			view := row.Delta.HTML
			if axtree {
				view = row.Delta.AXTree
			}
			if view != nil && slices.ContainsFunc(view.Edits, func(e trajectory.TextEdit) bool { return e.ID != "" }) {
				keyed++
			}
			if row.Delta.Set["url"] != nil {
				urls++
			}
		}
		slices.Sort(ratios)
		median := ratios[len(ratios)/2]
		t.Logf("axtree %v: %d transitions; delta/observation size: median %.3f, quartiles %.3f %.3f, max %.3f",
			axtree, len(ratios), median, ratios[len(ratios)/4], ratios[3*len(ratios)/4], ratios[len(ratios)-1])
		if median > 0.5 {
			t.Errorf("axtree %v: the median delta is %.2f of its observation; a step changes a small part of a page", axtree, median)
		}
		if keyed == 0 || urls == 0 {
			t.Errorf("axtree %v: %d deltas with an edit keyed by semantic id, %d with a new url", axtree, keyed, urls)
		}
	}
}

// shopRecording is the recording recordedShopOracles makes once per test
// binary: TestOracleTransitionDeltas and TestDreams read the same
// episodes, and recording them is the larger part of either test. Its
// directory outlives the test that made it; TestMain removes it.
var shopRecording struct {
	once         sync.Once
	dir, trajDir string
	runs         []oracleRun
	files        []string
	err          error // why there is no recording
}

// recordedShopOracles gives the trajectory directory, runs and episode
// files of the bundled shop's oracle episodes of its first two tasks of
// each kind (storefront and admin; Verified's left out), recorded once on
// a server of their own the first time a test asks. A test that dreams
// serves them on its own server (TrajectoryDir: the directory given).
func recordedShopOracles(t *testing.T) (string, []oracleRun, []string) {
	t.Helper()
	shopRecording.once.Do(func() {
		shopRecording.err = fmt.Errorf("the test that recorded them (%s) failed first", t.Name())
		dir, err := os.MkdirTemp("", "webserv-shop-recording-")
		if err != nil {
			t.Fatal(err)
		}
		shopRecording.dir = dir
		trajDir := filepath.Join(dir, "trajectories")
		cl := shopServerOn(t, localBackend(t), bundled.Options{DataDir: filepath.Join(dir, "shop-data"), Command: []string{buildShop(t, dir)}},
			server.Config{TrajectoryDir: trajDir, MaxCreating: 4, MaxEnvs: 16}, nil)
		var runs []oracleRun
		for _, r := range oracleRuns(t, firstOfEachKind(2), func(int, bundledTask) bool { return false }) {
			if !strings.HasPrefix(r.task, "verified.") {
				runs = append(runs, r)
			}
		}
		failed := t.Failed()
		recordOracles(t, cl, runs, 4)
		files, err := trajectory.Find(trajDir)
		if err != nil || len(files) != len(runs) {
			t.Fatalf("%d episodes recorded for %d runs: %v", len(files), len(runs), err)
		}
		if !failed && t.Failed() {
			return // recordOracles said why
		}
		shopRecording.trajDir, shopRecording.runs, shopRecording.files, shopRecording.err = trajDir, runs, files, nil
	})
	if shopRecording.err != nil {
		t.Fatalf("no recording of the shop's oracles: %v", shopRecording.err)
	}
	return shopRecording.trajDir, shopRecording.runs, shopRecording.files
}

// recordOracles plays runs in recording environments, one worker each, a
// new environment per run.
func recordOracles(t *testing.T, cl *client, runs []oracleRun, workers int) {
	jobs := make(chan oracleRun)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for run := range jobs {
				r := wait(t, cl.send("make", "", map[string]any{"site": run.site, "task": run.task, "record": map[string]any{}}))
				if r["ok"] != true {
					t.Errorf("%s: make: %v", run.task, r["error"])
					continue
				}
				env := r["result"].(map[string]any)["env"].(string)
				if _, err := play(cl, env, run.seq); err != nil {
					t.Errorf("%s: %v", run.task, err)
				}
				wait(t, cl.send("close", env, nil))
			}
		})
	}
	for _, run := range runs {
		jobs <- run
	}
	close(jobs)
	wg.Wait()
}

package dream_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/dream"
	"github.com/webserv-rl/webserv/trajectory"
)

// page is an observation of a small page in the HTML view.
func page(url string, items ...string) trajectory.Observation {
	var o trajectory.Observation
	o.URL, o.Title, o.Goal = url, "Shop", "buy a lamp"
	var b strings.Builder
	b.WriteString(`<body data-semantic-id="1">`)
	for i, it := range items {
		b.WriteString(`<p data-semantic-id="p` + string(rune('a'+i)) + `">` + it + `</p>`)
	}
	b.WriteString(`</body>`)
	o.HTML = b.String()
	return o
}

// rows are the transitions rows of an episode through states with actions.
func rows(id string, states []trajectory.Observation, actions []string) []trajectory.TransitionRow {
	var out []trajectory.TransitionRow
	for i, a := range actions {
		prev, next := states[i], states[i+1]
		out = append(out, trajectory.TransitionRow{EpisodeID: id, Step: i + 1, Goal: prev.Goal, URL: prev.URL, Observation: prev.HTML,
			Action: a, NextURL: next.URL, NextObservation: next.HTML, Delta: trajectory.Diff(trajectory.ExportView(prev, false), trajectory.ExportView(next, false))})
	}
	return out
}

func writeRows(t *testing.T, path string, rs []trajectory.TransitionRow) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	for _, r := range rs {
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
	}
}

// The memory model built from transitions scores exactly on them at every
// dream length; on an episode it never saw it predicts nothing (unseen),
// and its scores say so: exact only where the real page did not change,
// and the change F1 of a wrong prediction is 0.
func TestEvaluateMemory(t *testing.T) {
	dir := t.TempDir()
	a := []trajectory.Observation{page("http://shop/", "lamp"), page("http://shop/", "lamp", "added"), page("http://shop/cart", "lamp x1"), page("http://shop/cart", "lamp x1")}
	train := rows("ep/1", a, []string{`click("pa")`, `click [pb]`, `noop()`})
	b := []trajectory.Observation{page("http://shop/", "lamp"), page("http://shop/", "chair"), page("http://shop/", "chair")}
	held := rows("ep/2", b, []string{`fill("pa", "chair")`, `noop()`})
	trainFile := filepath.Join(dir, "train.jsonl")
	writeRows(t, trainFile, train)
	m, err := dream.LoadMemory([]string{trainFile}, dream.MemoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m.View() != dream.ViewHTML || m.Len() != 3 {
		t.Fatalf("memory: view %q, %d pairs", m.View(), m.Len())
	}

	rep, err := dream.Evaluate(context.Background(), m, train, dream.EvalOptions{MaxDepth: 3})
	if err != nil {
		t.Fatal(err)
	}
	if s := rep.OneStep; s.N != 3 || s.Exact != 1 || s.ChangeF1 != 1 || s.URL != 1 || s.Unseen != 0 {
		t.Errorf("on its own transitions: %+v", s)
	}
	for k, s := range rep.Depth {
		if s.N != 1 || s.Exact != 1 || s.ChangeF1 != 1 {
			t.Errorf("depth %d on its own transitions: %+v", k+1, s)
		}
	}

	rep, err = dream.Evaluate(context.Background(), m, held, dream.EvalOptions{MaxDepth: 3})
	if err != nil {
		t.Fatal(err)
	}
	// The fill was never seen: unseen, the state taken as unchanged, which
	// is wrong (F1 0); the noop on the changed page was never seen either,
	// and there nothing changed, so "unchanged" is exact.
	if s := rep.OneStep; s.N != 2 || s.Unseen != 1 || s.Exact != 0.5 || s.ChangeF1 != 0.5 || s.URL != 1 {
		t.Errorf("on held-out transitions: %+v", s)
	}
	// Dreamed from the real start, the first step is wrong and the second
	// inherits the error.
	if d := rep.Depth; d[0].Exact != 0 || d[1].N != 1 || d[1].Exact != 0 || d[2].N != 0 {
		t.Errorf("held-out decay: %+v", d)
	}
	var out strings.Builder
	if err := rep.WriteTable(&out); err != nil || !strings.Contains(out.String(), "dream k=2") {
		t.Errorf("table: %v\n%s", err, out.String())
	}

	// A model in another view than the rows is refused.
	if _, err := dream.Evaluate(context.Background(), m, held, dream.EvalOptions{AXTree: true}); err == nil {
		t.Error("an html model scored on accessibility-tree rows")
	}
}

// wm-eval scores only what a dream asks its model for: a stop (which
// ends a dream without asking) or an action a dream refuses is left out,
// counted, and never scored as an exact prediction (12 stop rows scored
// "exact" before, as the memory model's "unchanged" matched them).
func TestEvaluateLeavesOutRowsNoModelIsAskedFor(t *testing.T) {
	dir := t.TempDir()
	a := []trajectory.Observation{page("http://shop/", "lamp"), page("http://shop/", "lamp", "added"), page("http://shop/", "lamp", "added"), page("http://shop/", "lamp", "added")}
	eps := rows("ep/1", a, []string{`click("pa")`, `click(`, `stop("done")`})
	file := filepath.Join(dir, "t.jsonl")
	writeRows(t, file, eps[:1])
	m, err := dream.LoadMemory([]string{file}, dream.MemoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := dream.Evaluate(context.Background(), m, eps, dream.EvalOptions{MaxDepth: 3})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Transitions != 1 || rep.Skipped != 2 || rep.OneStep.N != 1 || rep.OneStep.Exact != 1 || rep.Depth[1].N != 0 {
		t.Errorf("report: %+v", rep)
	}
	var out strings.Builder
	if err := rep.WriteTable(&out); err != nil || !strings.Contains(out.String(), "2 rows left out: a dream does not ask its model for them") {
		t.Errorf("table: %v\n%s", err, out.String())
	}
	for action, asks := range map[string]bool{`click("a")`: true, `stop("x")`: false, `report_infeasible("no")`: false, `click(`: false, `scroll(0, 200)`: true, "click(\"a\")\nclick(\"b\")": false} {
		if dream.AsksModel(action) != asks {
			t.Errorf("AsksModel(%s) = %v", action, !asks)
		}
	}
}

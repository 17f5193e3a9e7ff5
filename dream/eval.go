package dream

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/trajectory"
)

// ReadTransitions reads a transitions file (`webserv export --format
// transitions`).
func ReadTransitions(path string) ([]trajectory.TransitionRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rows []trajectory.TransitionRow
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 256<<20)
	n := 0
	for sc.Scan() {
		n++
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var row trajectory.TransitionRow
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			return nil, fmt.Errorf("%s line %d: not a transitions row: %w", path, n, err)
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s holds no transitions", path)
	}
	return rows, nil
}

// Scores are a world model's scores on held-out real transitions, over
// N predictions.
type Scores struct {
	N int `json:"n"`
	// Exact is the share of predictions whose next state (URL and the
	// view's text) is the real one exactly.
	Exact float64 `json:"exact"`
	// ChangeF1 is the mean element-level F1 of the predicted change
	// against the real one: the changes are the edits of the view's
	// pieces (by id or position, with their text) and the new URL; two
	// empty changes score 1.
	ChangeF1 float64 `json:"change_f1"`
	// URL is the share of predictions with the real next URL.
	URL float64 `json:"url"`
	// Unseen is the share the model could not predict (the memory
	// model's unseen pairs, the model's terminal signal): the state is
	// then taken as unchanged.
	Unseen float64 `json:"unseen"`
	// Failed counts model errors (unreachable, malformed after retries);
	// those predictions are scored as unchanged too.
	Failed int `json:"failed"`
}

// Report is wm-eval's result: one-step scores on every transition and
// their decay over dream length (Depth[k-1]: k steps dreamed from a real
// start, the model fed its own predictions).
type Report struct {
	Model string `json:"model"`
	View  string `json:"view"`
	// Transitions are the rows scored: those a dream asks its model for.
	// Skipped are the others (a stop or report_infeasible, which ends a
	// dream without asking; an action that does not parse or is invalid,
	// which a dream refuses): no model predicts them, so none is scored.
	Transitions int      `json:"transitions"`
	Skipped     int      `json:"skipped"`
	Episodes    int      `json:"episodes"`
	OneStep     Scores   `json:"one_step"`
	Depth       []Scores `json:"depth"`
}

// EvalOptions are wm-eval's settings.
type EvalOptions struct {
	// AXTree: the rows are in the accessibility-tree view (exported with
	// --axtree).
	AXTree bool
	// MaxDepth bounds the multi-step dreams (0: DefaultMaxSteps).
	MaxDepth int
}

// Evaluate scores model on held-out transitions rows: each row's
// prediction from the real observation (one step), and, per episode, a
// dream of its recorded actions from its first real observation, scored
// at each depth against the real states.
func Evaluate(ctx context.Context, model Model, rows []trajectory.TransitionRow, opts EvalOptions) (Report, error) {
	view := ViewHTML
	if opts.AXTree {
		view = ViewAXTree
	}
	if v := model.View(); v != ViewWhole && v != view {
		return Report{}, fmt.Errorf("the model reads the %s view and the transitions are in the %s view: export them with%s --axtree, or give the model that view", v, view, map[bool]string{true: "out", false: ""}[opts.AXTree])
	}
	depth := opts.MaxDepth
	if depth <= 0 {
		depth = DefaultMaxSteps
	}
	rep := Report{Model: model.Name(), View: view, Depth: make([]Scores, depth)}
	asked := rows[:0:0]
	for _, r := range rows {
		if AsksModel(r.Action) {
			asked = append(asked, r)
		}
	}
	rep.Transitions, rep.Skipped = len(asked), len(rows)-len(asked)
	var one acc
	for _, r := range asked {
		prev, next := rowState(r, view, false), rowState(r, view, true)
		got, status, err := predictState(ctx, model, r.Goal, prev, r.Action, 1, view)
		if err != nil && ctx.Err() != nil {
			return rep, ctx.Err()
		}
		one.add(prev, got, next, status, view)
	}
	rep.OneStep = one.scores()

	byEp := map[string][]trajectory.TransitionRow{}
	var order []string
	for _, r := range asked {
		if _, ok := byEp[r.EpisodeID]; !ok {
			order = append(order, r.EpisodeID)
		}
		byEp[r.EpisodeID] = append(byEp[r.EpisodeID], r)
	}
	rep.Episodes = len(order)
	accs := make([]acc, depth)
	for _, id := range order {
		ep := byEp[id]
		sort.SliceStable(ep, func(i, j int) bool { return ep[i].Step < ep[j].Step })
		start := rowState(ep[0], view, false)
		cur, ended := start, false
		for k := 0; k < depth && k < len(ep); k++ {
			if k > 0 && ep[k].Step != ep[k-1].Step+1 {
				break // a gap: the held-out rows do not hold the whole episode
			}
			status := statusOK
			if ended {
				status = statusUnseen
			} else {
				var next trajectory.Observation
				var err error
				next, status, err = predictState(ctx, model, ep[k].Goal, cur, ep[k].Action, k+1, view)
				if err != nil && ctx.Err() != nil {
					return rep, ctx.Err()
				}
				cur = next
				ended = status != statusOK
			}
			accs[k].add(start, cur, rowState(ep[k], view, true), status, view)
		}
	}
	for k := range accs {
		rep.Depth[k] = accs[k].scores()
	}
	return rep, nil
}

// AsksModel reports whether a dream asks its world model for the state
// after action: not for a stop or report_infeasible (the dream ends
// without asking) nor for an action that does not parse or is invalid
// (the dream refuses it as a real environment does), nor for several
// actions in one step (refused: SeveralActions).
func AsksModel(action string) bool {
	acts, err := envcore.ParseActions(action)
	if err != nil || len(acts) != 1 || acts[0].Validate() != nil {
		return false
	}
	return acts[0].Type != envcore.Terminate
}

const (
	statusOK     = "ok"
	statusUnseen = "unseen"
	statusFailed = "failed"
)

// rowState is a row's observation (or its next, with next) as the view
// has it: the URL and the view's text.
func rowState(r trajectory.TransitionRow, view string, next bool) trajectory.Observation {
	o := trajectory.Observation{Goal: r.Goal}
	o.URL, o.HTML = r.URL, r.Observation
	if next {
		o.URL, o.HTML = r.NextURL, r.NextObservation
	}
	if view == ViewAXTree {
		o.AXTree, o.HTML = o.HTML, ""
	}
	return o
}

// predictState asks the model for the next state of prev and keeps what
// the view has of it. A prediction the model cannot make leaves the state
// as it was.
func predictState(ctx context.Context, m Model, goal string, prev trajectory.Observation, action string, step int, view string) (trajectory.Observation, string, error) {
	p, err := m.Predict(ctx, Query{Goal: goal, Obs: prev, Action: CanonicalAction(action), Step: step})
	if err != nil {
		return prev, statusFailed, err
	}
	if p.Unseen {
		return prev, statusUnseen, nil
	}
	var next trajectory.Observation
	if p.Next != nil {
		next = *p.Next
	} else if next, err = trajectory.Apply(prev, textual(p.Delta, view)); err != nil {
		return prev, statusFailed, err
	}
	out := trajectory.Observation{Goal: prev.Goal}
	out.URL = next.URL
	if view == ViewAXTree {
		out.AXTree = next.AXTree
	} else {
		out.HTML = next.HTML
	}
	status := statusOK
	if p.Terminal {
		status = statusUnseen
	}
	return out, status, nil
}

// textual is the part of delta d a transitions row's state has: the URL
// and the view's text.
func textual(d trajectory.Delta, view string) trajectory.Delta {
	out := trajectory.Delta{}
	keep := func(name string) {
		if v, ok := d.Set[name]; ok {
			if out.Set == nil {
				out.Set = map[string]any{}
			}
			out.Set[name] = v
		}
		for _, u := range d.Unset {
			if u == name {
				out.Unset = append(out.Unset, u)
			}
		}
	}
	keep("url")
	keep(view)
	if view == ViewAXTree {
		out.AXTree = d.AXTree
	} else {
		out.HTML = d.HTML
	}
	return out
}

// acc accumulates scores.
type acc struct {
	n, exact, url, unseen, failed int
	f1                            float64
}

func (a *acc) add(from, got, want trajectory.Observation, status, view string) {
	a.n++
	if got.URL == want.URL {
		a.url++
	}
	if got.URL == want.URL && got.HTML == want.HTML && got.AXTree == want.AXTree {
		a.exact++
	}
	a.f1 += f1(changeSet(from, got, view), changeSet(from, want, view))
	switch status {
	case statusUnseen:
		a.unseen++
	case statusFailed:
		a.failed++
	}
}

func (a *acc) scores() Scores {
	if a.n == 0 {
		return Scores{}
	}
	n := float64(a.n)
	return Scores{N: a.n, Exact: float64(a.exact) / n, ChangeF1: a.f1 / n, URL: float64(a.url) / n, Unseen: float64(a.unseen) / n, Failed: a.failed}
}

// changeSet is the change from a to b as a set of elements: each edit of
// the view's pieces (its operation, the piece's id or position, its new
// text) and the new URL.
func changeSet(a, b trajectory.Observation, view string) map[string]bool {
	d := trajectory.Diff(a, b)
	set := map[string]bool{}
	if u, ok := d.Set["url"]; ok {
		set[fmt.Sprint("url\x00", u)] = true
	}
	td := d.HTML
	if view == ViewAXTree {
		td = d.AXTree
	}
	if whole, ok := d.Set[view]; ok {
		// A new page: its pieces, each an insertion.
		s, _ := whole.(string)
		for i, l := range strings.Split(s, "\n") {
			set[fmt.Sprintf("insert\x00%d\x00%s", i, l)] = true
		}
	}
	if td != nil {
		for _, e := range td.Edits {
			at := e.ID
			if at == "" && e.At != nil {
				at = fmt.Sprint("@", *e.At)
			}
			set[e.Op+"\x00"+at+"\x00"+e.Text] = true
		}
	}
	return set
}

// f1 is the F1 of a predicted set against the real one; 1 when both are
// empty.
func f1(pred, real map[string]bool) float64 {
	if len(pred) == 0 && len(real) == 0 {
		return 1
	}
	tp := 0
	for k := range pred {
		if real[k] {
			tp++
		}
	}
	if tp == 0 {
		return 0
	}
	p, r := float64(tp)/float64(len(pred)), float64(tp)/float64(len(real))
	return 2 * p * r / (p + r)
}

// WriteTable writes a report as a table.
func (rep Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "world model %s on %d transitions (%d episodes, %s view)", rep.Model, rep.Transitions, rep.Episodes, rep.View)
	if rep.Skipped > 0 {
		fmt.Fprintf(&b, "; %d rows left out: a dream does not ask its model for them (stop, report_infeasible, invalid actions)", rep.Skipped)
	}
	b.WriteString("\n\n")
	fmt.Fprintf(&b, "%-12s %6s %8s %10s %8s %8s %7s\n", "", "n", "exact", "change F1", "url", "unseen", "failed")
	row := func(name string, s Scores) {
		fmt.Fprintf(&b, "%-12s %6d %8.3f %10.3f %8.3f %8.3f %7d\n", name, s.N, s.Exact, s.ChangeF1, s.URL, s.Unseen, s.Failed)
	}
	row("one step", rep.OneStep)
	for k, s := range rep.Depth {
		if s.N > 0 {
			row(fmt.Sprintf("dream k=%d", k+1), s)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

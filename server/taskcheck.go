package server

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/webserv-rl/webserv/tasks"
	"github.com/webserv-rl/webserv/trajectory"
)

// A task author's check loop (webserv tasks check): every task's oracle
// must earn reward 1, its wrong sequence reward 0, and an episode that
// stops at once (stop("") on the start state) reward 0, each replayed on a
// fresh environment of this server. A grading that fails on any of them is
// the verifier's (or evaluator's) problem, reported as such: a verifier
// that crashes on the failure path is caught by the start state even when
// the wrong sequence happens to pass it.
//
// It proves more than a replay: null agents (stop with the start page's
// title as the answer; a few seeded random actions, then stop) must earn
// 0 too, so a task is not done by doing next to nothing; and each of the
// task's independent solutions (its solutions: another route to the
// outcome than the oracle's) must earn 1. A task without one is
// unverified: its verifier is shown to accept one route only.

// TaskCheck is one task's outcome.
type TaskCheck struct {
	Task string // like tracker.4
	// Oracle, Wrong and Start are the rewards (NaN: not graded or not
	// run); Start is that of stop("") on the task's start state.
	Oracle, Wrong, Start float64
	// Null is the highest reward of the null agents (want 0), Solution
	// the lowest of the independent solutions (want 1); NaN: none graded.
	Null, Solution float64
	// Solutions counts the task's independent solutions; with none the
	// task is unverified.
	Solutions int
	// Steps is the number of oracle actions; Seconds the time of the runs.
	Steps   int
	Seconds float64
	// Problems say what failed and what to do; none means the task passed.
	Problems []string
}

// OK reports whether the task passed (an unverified task passes unless
// the check is strict).
func (c TaskCheck) OK() bool { return len(c.Problems) == 0 }

// Unverified reports whether the task has no independent solution.
func (c TaskCheck) Unverified() bool { return c.Solutions == 0 }

// TaskScripts are a task's sequences as the check loop replays them: the
// oracle (which must earn 1), the wrong one (which must earn 0) and the
// independent solutions (each must earn 1), their placeholders filled as
// the task's episode has them. A Factory that serves task sets lists them
// (catalog.Catalog.TaskScripts).
type TaskScripts struct {
	Site, Task    string // like tracker and tracker.4
	Oracle, Wrong []string
	Solutions     [][]string
	// What the audit (AuditTasks) reads of the task: its intent, category,
	// eval types, answer type ("" when untyped or not an answer task) and
	// who it starts signed in as (tasks of one sign-in share an episode's
	// start, so one's oracle plays in the other's).
	Intent, Category string
	Evals            []string
	AnswerType       string
	Login            string
}

// checkAgent is one run of the loop: its kind (oracle, wrong, start,
// null, solution), its name in problems, and a fixed script (whose
// failing actions are problems) or a null agent choosing from the
// observation (whose failing actions are its own).
type checkAgent struct {
	kind, name string
	script     []string
	// next is a null agent's k-th action at o ("" when it is done); took
	// are the actions it took (its problems list them).
	next func(k int, o *Observation) string
	took []string
	// sideEffects is make's side_effects for the episode ("": the task's).
	sideEffects string
	// startURL and endURL are where the episode began and where the page
	// was when it ended (before its last action): set by playTask.
	startURL, endURL string
	// effects are the side effects its ending step listed (set by
	// playTask).
	effects []tasks.RowChange
}

// ownChangesProblem is a problem of a run that solves its task (an
// oracle, a solution) whose ending step listed side effects: the task's
// own changes count as harm, and side_effects "fail" pays the solution 0
// ("" when it listed none).
func ownChangesProblem(a *checkAgent) string {
	if len(a.effects) == 0 {
		return ""
	}
	c := a.effects[0]
	return fmt.Sprintf("its episode lists %d side effect(s), first %s %s %v: name what the task changes in may_change (docs/tasks.md, \"Side effects\"), or drop the extra change from the sequence; as it is, side_effects \"fail\" pays a solution 0", len(a.effects), c.Op, c.Table, c.Row)
}

// CheckTasks replays the oracle, wrong sequence, start state, null agents
// and independent solutions of scripts on this server, workers episodes at
// a time, each on a fresh environment, and returns one check per task, in
// the order given.
func (s *Server) CheckTasks(ctx context.Context, scripts []TaskScripts, workers int) ([]TaskCheck, error) {
	type run struct {
		i     int // index into out
		id    string
		site  string
		agent checkAgent
	}
	var out []TaskCheck
	var runs []run
	var startIsWrong []int
	for _, t := range scripts {
		c := TaskCheck{Task: t.Task, Oracle: math.NaN(), Wrong: math.NaN(), Start: math.NaN(), Null: math.NaN(), Solution: math.NaN(),
			Steps: len(t.Oracle), Solutions: len(t.Solutions)}
		add := func(a checkAgent) { runs = append(runs, run{len(out), t.Task, t.Site, a}) }
		if len(t.Oracle) == 0 {
			c.Problems = append(c.Problems, "no oracle: give the actions that solve the task (ending in stop(...))")
		} else {
			add(checkAgent{kind: "oracle", name: "oracle", script: t.Oracle})
		}
		if len(t.Wrong) == 0 {
			c.Problems = append(c.Problems, "no wrong sequence: give a plausible mistake, which must earn 0, so the grading is shown to tell them apart")
		} else {
			add(checkAgent{kind: "wrong", name: "wrong", script: t.Wrong})
		}
		if slices.Equal(t.Wrong, []string{startScript}) {
			startIsWrong = append(startIsWrong, len(out)) // the wrong run is the start run
		} else {
			add(checkAgent{kind: "start", name: "start", script: []string{startScript}})
		}
		for _, a := range nullAgents(t) {
			add(a)
		}
		for k, sol := range t.Solutions {
			add(checkAgent{kind: "solution", name: fmt.Sprintf("solution %d", k+1), script: sol})
		}
		out = append(out, c)
	}
	workers = max(1, workers)
	jobs := make(chan run)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range min(workers, max(1, len(runs))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range jobs {
				start := time.Now()
				a := &r.agent
				reward, problem := s.playTask(ctx, r.site, r.id, a)
				name := a.name
				if a.next != nil {
					name += " [" + strings.Join(a.took, ", ") + "]"
				}
				if problem.graded != "" {
					problem.text = fmt.Sprintf("the grading failed on %s (the verifier's or evaluator's fault, not the sequence's: fix the verifier): %s", checkStates[a.kind], problem.graded)
					if a.kind != "null" && a.kind != "solution" {
						name = "verifier"
					}
				}
				if want := checkWants[a.kind]; problem.text == "" && reward != want {
					problem.text = fmt.Sprintf("reward %g, want %g: %s", reward, want, checkHints[a.kind])
				}
				if problem.text == "" && (a.kind == "oracle" || a.kind == "solution") {
					problem.text = ownChangesProblem(a)
				}
				mu.Lock()
				c := &out[r.i]
				switch a.kind {
				case "oracle":
					c.Oracle = reward
				case "wrong":
					c.Wrong = reward
				case "start":
					c.Start = reward
				case "solution":
					if math.IsNaN(c.Solution) || reward < c.Solution || math.IsNaN(reward) {
						c.Solution = reward
					}
				default:
					if !math.IsNaN(reward) && (math.IsNaN(c.Null) || reward > c.Null) {
						c.Null = reward
					}
				}
				c.Seconds += time.Since(start).Seconds()
				if problem.text != "" {
					c.Problems = append(c.Problems, name+": "+problem.text)
				}
				mu.Unlock()
			}
		}()
	}
	for _, r := range runs {
		select {
		case jobs <- r:
		case <-ctx.Done():
		}
	}
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return out, err
	}
	for _, i := range startIsWrong {
		out[i].Start = out[i].Wrong
	}
	for i := range out {
		slices.Sort(out[i].Problems)
	}
	return out, nil
}

// startScript is the start-state run of the check loop: the agent stops
// at once, so the grading sees the task's start state and an empty answer.
const startScript = `stop("")`

// The check loop's runs: the reward each must earn, the state its grading
// sees, and what to do when it earns another.
var (
	checkWants  = map[string]float64{"oracle": 1, "wrong": 0, "start": 0, "null": 0, "solution": 1}
	checkStates = map[string]string{"oracle": "the oracle's final state", "wrong": "the wrong sequence's final state", "start": `the start state (stop("") at once), where it must say 0`,
		"null": "a null agent's final state, where it must say 0", "solution": "an independent solution's final state"}
	checkHints = map[string]string{
		"oracle":   "the oracle does not solve the task as graded (check the evaluator's references, or the oracle's actions)",
		"wrong":    "the grading does not tell this mistake from a solution (tighten the evaluator)",
		"start":    "the grading passes an episode that did nothing (tighten the evaluator, or the task's setup)",
		"null":     "doing next to nothing passes (the start state already meets the evaluator, or it checks too little)",
		"solution": "the verifier does not accept this other route to the outcome (it checks more than the intent says, or the solution is wrong)",
	}
)

// nullAgents are the agents that must earn 0 on t besides the start run:
// one that stops with the start page's title as its answer, and one that
// takes randomActions seeded random actions then stops, none of them an
// action of the oracle or a solution (a random click on the very link a
// one-click task asks for does the task; the agent is to show that doing
// other things does not).
func nullAgents(t TaskScripts) []checkAgent {
	solving := map[string]bool{}
	for _, seq := range append([][]string{t.Oracle}, t.Solutions...) {
		for _, a := range seq {
			solving[strings.ReplaceAll(a, " ", "")] = true
		}
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(t.Task))
	seed := h.Sum64()
	rng := rand.New(rand.NewPCG(seed, 0))
	return []checkAgent{
		{kind: "null", name: "null agent (stop with the start page's title)", next: func(k int, o *Observation) string {
			if k > 0 {
				return ""
			}
			return "stop(" + quoteArg(o.Title) + ")"
		}},
		{kind: "null", name: fmt.Sprintf("null agent (%d random actions, seed %d)", randomActions, seed), next: func(k int, o *Observation) string {
			switch {
			case k < randomActions:
				return randomAction(rng, o, solving)
			case k == randomActions:
				return startScript
			}
			return ""
		}},
	}
}

// randomActions is how many random actions the random null agent takes.
const randomActions = 3

// randomAction is a valid action on o drawn from rng: a scroll either way,
// a hover or a click on one of the page's elements, other than those in
// solving (the oracle's and the solutions' actions, spaces removed).
func randomAction(rng *rand.Rand, o *Observation, solving map[string]bool) string {
	var clicks, hovers []string
	for _, id := range append(slices.Clone(o.Clickable), o.Hoverable...) {
		if c := "click(" + quoteArg(id) + ")"; slices.Contains(o.Clickable, id) && !solving[c] && !slices.Contains(clicks, c) {
			clicks = append(clicks, c)
		}
		if h := "hover(" + quoteArg(id) + ")"; !solving[h] && !slices.Contains(hovers, h) {
			hovers = append(hovers, h)
		}
	}
	switch n := rng.IntN(4); {
	case n == 2 && len(hovers) > 0:
		return hovers[rng.IntN(len(hovers))]
	case n == 3 && len(clicks) > 0:
		return clicks[rng.IntN(len(clicks))]
	case n == 1:
		return "scroll(0, -400)"
	}
	return "scroll(0, 400)"
}

// quoteArg is s as an action's string argument.
func quoteArg(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// playProblem is why a run has no reward: text for a failed run, graded
// for a grading that failed (the evaluator's problem, not the script's).
type playProblem struct{ text, graded string }

// playTask plays an agent on a new environment of the task and returns
// the reward of its last step, or why there is none.
func (s *Server) playTask(ctx context.Context, site, id string, a *checkAgent) (float64, playProblem) {
	p := &player{s: s, sideEffects: a.sideEffects}
	defer p.Close()
	fail := func(format string, args ...any) (float64, playProblem) {
		return math.NaN(), playProblem{text: fmt.Sprintf(format, args...)}
	}
	o, err := p.Start(ctx, trajectory.Line{Site: site, TaskID: id})
	if err != nil {
		return fail("the episode did not start: %v", err)
	}
	a.startURL = o.URL
	var last *StepReply
	for k := 0; ; k++ {
		var act string
		switch {
		case a.next != nil:
			act = a.next(k, o)
		case k < len(a.script):
			act = a.script[k]
		}
		if act == "" {
			break
		}
		if a.next != nil {
			a.took = append(a.took, act)
		}
		a.endURL = o.URL
		r, err := p.stepReply(ctx, act)
		if err != nil {
			return fail("step %d %s: %v", k+1, act, err)
		}
		if e := r.Info.ActionError; e != "" && a.next == nil {
			return fail("step %d %s failed: %v", k+1, act, e)
		}
		last, o = r, &r.Obs
		if r.Terminated {
			if a.next == nil && k < len(a.script)-1 {
				return fail("step %d %s ended the episode before the last action", k+1, act)
			}
			break
		}
	}
	if last == nil || !last.Terminated {
		return fail("the last action must end the episode (stop(\"answer\"))")
	}
	a.effects = last.Info.SideEffects
	if e := last.Info.EvalError; e != "" {
		return math.NaN(), playProblem{graded: e}
	}
	if g, ok := last.Info.GradeOf(); ok {
		return g, playProblem{}
	}
	if last.Reward == nil {
		return fail("no reward")
	}
	return *last.Reward, playProblem{}
}

// FormatTaskChecks writes the check loop's table and, under it, each
// failing task's problems. null is the null agents' highest reward,
// solution the independent solutions' lowest ("-": none); a task that
// passed without an independent solution is unverified.
func FormatTaskChecks(checks []TaskCheck) string {
	var b strings.Builder
	num := func(v float64) string {
		if math.IsNaN(v) {
			return "-"
		}
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	w := len("task")
	for _, c := range checks {
		w = max(w, len(c.Task))
	}
	fmt.Fprintf(&b, "%-*s  %-6s  %-6s  %-6s  %-6s  %-8s  %5s  %7s  %s\n", w, "task", "oracle", "wrong", "start", "null", "solution", "steps", "seconds", "result")
	failed, unverified := 0, 0
	for _, c := range checks {
		res := "ok"
		switch {
		case !c.OK():
			res = "FAIL"
			failed++
		case c.Unverified():
			res = "unverified"
			unverified++
		}
		fmt.Fprintf(&b, "%-*s  %-6s  %-6s  %-6s  %-6s  %-8s  %5d  %7.1f  %s\n", w, c.Task, num(c.Oracle), num(c.Wrong), num(c.Start), num(c.Null), num(c.Solution), c.Steps, c.Seconds, res)
	}
	for _, c := range checks {
		for _, p := range c.Problems {
			fmt.Fprintf(&b, "%s: %s\n", c.Task, p)
		}
	}
	fmt.Fprintf(&b, "%d task(s), %d passed, %d failed", len(checks), len(checks)-failed, failed)
	if unverified > 0 {
		fmt.Fprintf(&b, "; %d unverified (no independent solution: give the task solutions:, docs/tasks.md)", unverified)
	}
	b.WriteString("\n")
	return b.String()
}

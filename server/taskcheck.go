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

	"github.com/webserv-rl/webserv/trajectory"
)

// A task author's check loop (webserv tasks check): every task's oracle
// must earn reward 1 and its wrong sequence reward 0, each replayed on a
// fresh environment of this server; null agents (stop at once, stop with
// the start page's title as the answer, a few seeded random actions then
// stop) must earn 0, so a task is not done by doing nothing; and each of
// its independent solutions (tasks' solutions: another route to the
// outcome than the oracle's) must earn 1. A task without one is
// unverified: its verifier is shown to accept one route only.

// TaskCheck is one task's outcome.
type TaskCheck struct {
	Task string // like tracker.4
	// Oracle and Wrong are the rewards (NaN: not graded or not run).
	Oracle, Wrong float64
	// Null is the highest reward of the null agents (want 0), Solution
	// the lowest of the independent solutions (want 1); NaN: none graded.
	Null, Solution float64
	// Solutions counts the task's independent solutions; with none the
	// task is unverified.
	Solutions int
	// Steps is the number of oracle actions; Seconds the time of every run.
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
}

// checkAgent is one run of the loop: a fixed script (whose failing
// actions are problems) or a null agent choosing from the observation
// (whose failing actions are its own), and the reward it must earn.
type checkAgent struct {
	name   string
	want   float64
	script []string
	// next is a null agent's k-th action at o ("" when it is done); took
	// are the actions it took (its problems list them).
	next func(k int, o *Observation) string
	took []string
}

// nullAgents are the agents that must earn 0 on t: stop at once (left
// out when the wrong sequence is just that), stop with the start page's
// title as the answer, and randomActions seeded random actions then stop,
// none of them an action of the oracle or a solution (a random click on
// the very link a one-click task asks for does the task; the agent is to
// show that doing other things does not).
func nullAgents(t TaskScripts) []checkAgent {
	task, wrong := t.Task, t.Wrong
	solving := map[string]bool{}
	for _, seq := range append([][]string{t.Oracle}, t.Solutions...) {
		for _, a := range seq {
			solving[strings.ReplaceAll(a, " ", "")] = true
		}
	}
	out := []checkAgent{
		{name: "null agent (stop with the start page's title)", next: func(k int, o *Observation) string {
			if k > 0 {
				return ""
			}
			return "stop(" + quoteArg(o.Title) + ")"
		}},
	}
	if !(len(wrong) == 1 && strings.ReplaceAll(wrong[0], " ", "") == `stop("")`) {
		out = append(out, checkAgent{name: "null agent (stop at once)", script: []string{`stop("")`}})
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(task))
	seed := h.Sum64()
	rng := rand.New(rand.NewPCG(seed, 0))
	return append(out, checkAgent{name: fmt.Sprintf("null agent (%d random actions, seed %d)", randomActions, seed), next: func(k int, o *Observation) string {
		switch {
		case k < randomActions:
			return randomAction(rng, o, solving)
		case k == randomActions:
			return `stop("")`
		}
		return ""
	}})
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

// CheckTasks replays the oracle, wrong sequence, null agents and
// independent solutions of scripts on this server, workers episodes at a
// time, each on a fresh environment, and returns one check per task, in
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
	for _, t := range scripts {
		c := TaskCheck{Task: t.Task, Oracle: math.NaN(), Wrong: math.NaN(), Null: math.NaN(), Solution: math.NaN(), Steps: len(t.Oracle), Solutions: len(t.Solutions)}
		add := func(a checkAgent) { runs = append(runs, run{len(out), t.Task, t.Site, a}) }
		if len(t.Oracle) == 0 {
			c.Problems = append(c.Problems, "no oracle: give the actions that solve the task (ending in stop(...))")
		} else {
			add(checkAgent{name: "oracle", want: 1, script: t.Oracle})
		}
		if len(t.Wrong) == 0 {
			c.Problems = append(c.Problems, "no wrong sequence: give a plausible mistake, which must earn 0, so the grading is shown to tell them apart")
		} else {
			add(checkAgent{name: "wrong", want: 0, script: t.Wrong})
		}
		for _, a := range nullAgents(t) {
			add(a)
		}
		for k, sol := range t.Solutions {
			add(checkAgent{name: fmt.Sprintf("solution %d", k+1), want: 1, script: sol})
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
				reward, problem := s.playTask(ctx, r.site, r.id, &r.agent)
				if problem == "" && reward != r.agent.want {
					problem = fmt.Sprintf("reward %g, want %g", reward, r.agent.want)
					switch {
					case r.agent.name == "oracle":
						problem += ": the oracle does not solve the task as graded (check the evaluator's references, or the oracle's actions)"
					case r.agent.want == 1:
						problem += ": the verifier does not accept this other route to the outcome (it checks more than the intent says, or the solution is wrong)"
					case r.agent.name == "wrong":
						problem += ": the grading does not tell this mistake from a solution (tighten the evaluator)"
					default:
						problem += ": doing next to nothing passes (the start state already meets the evaluator, or it checks too little)"
					}
				}
				mu.Lock()
				c := &out[r.i]
				switch {
				case r.agent.name == "oracle":
					c.Oracle = reward
				case r.agent.name == "wrong":
					c.Wrong = reward
				case r.agent.want == 1:
					if math.IsNaN(c.Solution) || reward < c.Solution || math.IsNaN(reward) {
						c.Solution = reward
					}
				default:
					if !math.IsNaN(reward) && (math.IsNaN(c.Null) || reward > c.Null) {
						c.Null = reward
					}
				}
				c.Seconds += time.Since(start).Seconds()
				if problem != "" {
					name := r.agent.name
					if r.agent.next != nil {
						name += " [" + strings.Join(r.agent.took, ", ") + "]"
					}
					c.Problems = append(c.Problems, name+": "+problem)
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
	for i := range out {
		slices.Sort(out[i].Problems)
	}
	return out, nil
}

// playTask plays an agent on a new environment of the task and returns
// the reward of its last step, or why there is none.
func (s *Server) playTask(ctx context.Context, site, id string, a *checkAgent) (float64, string) {
	p := &player{s: s}
	defer p.Close()
	o, err := p.Start(ctx, trajectory.Line{Site: site, TaskID: id})
	if err != nil {
		return math.NaN(), "the episode did not start: " + err.Error()
	}
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
		r, err := p.stepReply(ctx, act)
		if err != nil {
			return math.NaN(), fmt.Sprintf("step %d %s: %v", k+1, act, err)
		}
		if e, ok := r.Info["action_error"]; ok && e != "" && a.next == nil {
			return math.NaN(), fmt.Sprintf("step %d %s failed: %v", k+1, act, e)
		}
		last, o = r, &r.Obs
		if r.Terminated {
			if a.next == nil && k < len(a.script)-1 {
				return math.NaN(), fmt.Sprintf("step %d %s ended the episode before the last action", k+1, act)
			}
			break
		}
	}
	if last == nil || !last.Terminated {
		return math.NaN(), "the last action must end the episode (stop(\"answer\"))"
	}
	if e, ok := last.Info["eval_error"]; ok {
		return math.NaN(), fmt.Sprintf("could not be graded: %v", e)
	}
	reward, ok := last.Reward.(float64)
	if !ok {
		return math.NaN(), fmt.Sprintf("no reward (%v)", last.Reward)
	}
	return reward, ""
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
	fmt.Fprintf(&b, "%-*s  %-6s  %-6s  %-6s  %-8s  %5s  %7s  %s\n", w, "task", "oracle", "wrong", "null", "solution", "steps", "seconds", "result")
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
		fmt.Fprintf(&b, "%-*s  %-6s  %-6s  %-6s  %-8s  %5d  %7.1f  %s\n", w, c.Task, num(c.Oracle), num(c.Wrong), num(c.Null), num(c.Solution), c.Steps, c.Seconds, res)
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

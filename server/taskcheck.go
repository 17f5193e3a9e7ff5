package server

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/webserv-rl/webserv/trajectory"
)

// A task author's check loop (webserv tasks check): every task's oracle
// must earn reward 1, its wrong sequence reward 0, and an episode that
// stops at once (stop("") on the start state) reward 0, each replayed on a
// fresh environment of this server. A grading that fails on any of them is
// the verifier's (or evaluator's) problem, reported as such: a verifier
// that crashes on the failure path is caught by the start state even when
// the wrong sequence happens to pass it.

// TaskCheck is one task's outcome.
type TaskCheck struct {
	Task string // like tracker.4
	// Oracle, Wrong and Start are the rewards (NaN: not graded or not
	// run); Start is that of stop("") on the task's start state.
	Oracle, Wrong, Start float64
	// Steps is the number of oracle actions; Seconds the time of the runs.
	Steps   int
	Seconds float64
	// Problems say what failed and what to do; none means the task passed.
	Problems []string
}

// OK reports whether the task passed.
func (c TaskCheck) OK() bool { return len(c.Problems) == 0 }

// TaskScripts are a task's sequences as the check loop replays them: the
// oracle (which must earn 1) and the wrong one (which must earn 0), their
// placeholders filled as the task's episode has them. A Factory that
// serves task sets lists them (catalog.Catalog.TaskScripts).
type TaskScripts struct {
	Site, Task    string // like tracker and tracker.4
	Oracle, Wrong []string
}

// CheckTasks replays the oracle and wrong sequences of scripts on this
// server, workers episodes at a time, each on a fresh environment, and
// returns one check per task, in the order given.
func (s *Server) CheckTasks(ctx context.Context, scripts []TaskScripts, workers int) ([]TaskCheck, error) {
	type run struct {
		i      int // index into out
		id     string
		site   string
		kind   string // oracle, wrong, start
		script []string
	}
	var out []TaskCheck
	var runs []run
	var startIsWrong []int
	for _, t := range scripts {
		c := TaskCheck{Task: t.Task, Oracle: math.NaN(), Wrong: math.NaN(), Start: math.NaN(), Steps: len(t.Oracle)}
		if len(t.Oracle) == 0 {
			c.Problems = append(c.Problems, "no oracle: give the actions that solve the task (ending in stop(...))")
		} else {
			runs = append(runs, run{len(out), t.Task, t.Site, "oracle", t.Oracle})
		}
		if len(t.Wrong) == 0 {
			c.Problems = append(c.Problems, "no wrong sequence: give a plausible mistake, which must earn 0, so the grading is shown to tell them apart")
		} else {
			runs = append(runs, run{len(out), t.Task, t.Site, "wrong", t.Wrong})
		}
		if slices.Equal(t.Wrong, []string{startScript}) {
			startIsWrong = append(startIsWrong, len(out)) // the wrong run is the start run
		} else {
			runs = append(runs, run{len(out), t.Task, t.Site, "start", []string{startScript}})
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
				reward, problem := s.playTask(ctx, r.site, r.id, r.script)
				name := r.kind
				if problem.graded != "" {
					name, problem.text = "verifier", fmt.Sprintf("the grading failed on %s (the verifier's or evaluator's fault, not the sequence's: fix the verifier): %s", checkStates[r.kind], problem.graded)
				}
				if want := checkWants[r.kind]; problem.text == "" && reward != want {
					problem.text = fmt.Sprintf("reward %g, want %g: %s", reward, want, checkHints[r.kind])
				}
				mu.Lock()
				c := &out[r.i]
				switch r.kind {
				case "oracle":
					c.Oracle = reward
				case "wrong":
					c.Wrong = reward
				default:
					c.Start = reward
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
	checkWants  = map[string]float64{"oracle": 1, "wrong": 0, "start": 0}
	checkStates = map[string]string{"oracle": "the oracle's final state", "wrong": "the wrong sequence's final state", "start": `the start state (stop("") at once), where it must say 0`}
	checkHints  = map[string]string{
		"oracle": "the oracle does not solve the task as graded (check the evaluator's references, or the oracle's actions)",
		"wrong":  "the grading does not tell this mistake from a solution (tighten the evaluator)",
		"start":  "the grading passes an episode that did nothing (tighten the evaluator, or the task's setup)",
	}
)

// playProblem is why a run has no reward: text for a failed run, graded
// for a grading that failed (the evaluator's problem, not the script's).
type playProblem struct{ text, graded string }

// playTask plays a script on a new environment of the task and returns the
// reward of its last step, or why there is none.
func (s *Server) playTask(ctx context.Context, site, id string, script []string) (float64, playProblem) {
	p := &player{s: s}
	defer p.Close()
	fail := func(format string, a ...any) (float64, playProblem) {
		return math.NaN(), playProblem{text: fmt.Sprintf(format, a...)}
	}
	if _, err := p.Start(ctx, trajectory.Line{Site: site, TaskID: id}); err != nil {
		return fail("the episode did not start: %v", err)
	}
	var last *StepReply
	for k, a := range script {
		r, err := p.stepReply(ctx, a)
		if err != nil {
			return fail("step %d %s: %v", k+1, a, err)
		}
		if e, ok := r.Info["action_error"]; ok && e != "" {
			return fail("step %d %s failed: %v", k+1, a, e)
		}
		last = r
		if r.Terminated && k < len(script)-1 {
			return fail("step %d %s ended the episode before the last action", k+1, a)
		}
	}
	if last == nil || !last.Terminated {
		return fail("the last action must end the episode (stop(\"answer\"))")
	}
	if e, ok := last.Info["eval_error"]; ok {
		return math.NaN(), playProblem{graded: fmt.Sprint(e)}
	}
	if g, ok := last.Info["grade"].(float64); ok {
		return g, playProblem{}
	}
	reward, ok := last.Reward.(float64)
	if !ok {
		return fail("no reward (%v)", last.Reward)
	}
	return reward, playProblem{}
}

// FormatTaskChecks writes the check loop's table and, under it, each
// failing task's problems.
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
	fmt.Fprintf(&b, "%-*s  %-6s  %-6s  %-6s  %5s  %7s  %s\n", w, "task", "oracle", "wrong", "start", "steps", "seconds", "result")
	failed := 0
	for _, c := range checks {
		res := "ok"
		if !c.OK() {
			res = "FAIL"
			failed++
		}
		fmt.Fprintf(&b, "%-*s  %-6s  %-6s  %-6s  %5d  %7.1f  %s\n", w, c.Task, num(c.Oracle), num(c.Wrong), num(c.Start), c.Steps, c.Seconds, res)
	}
	for _, c := range checks {
		for _, p := range c.Problems {
			fmt.Fprintf(&b, "%s: %s\n", c.Task, p)
		}
	}
	fmt.Fprintf(&b, "%d task(s), %d passed, %d failed\n", len(checks), len(checks)-failed, failed)
	return b.String()
}

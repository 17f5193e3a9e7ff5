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
// must earn reward 1 and its wrong sequence reward 0, each replayed on a
// fresh environment of this server.

// TaskCheck is one task's outcome.
type TaskCheck struct {
	Task string // like tracker.4
	// Oracle and Wrong are the rewards (NaN: not graded or not run).
	Oracle, Wrong float64
	// Steps is the number of oracle actions; Seconds the time of both runs.
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
		wrong  bool
		script []string
	}
	var out []TaskCheck
	var runs []run
	for _, t := range scripts {
		c := TaskCheck{Task: t.Task, Oracle: math.NaN(), Wrong: math.NaN(), Steps: len(t.Oracle)}
		if len(t.Oracle) == 0 {
			c.Problems = append(c.Problems, "no oracle: give the actions that solve the task (ending in stop(...))")
		} else {
			runs = append(runs, run{len(out), t.Task, t.Site, false, t.Oracle})
		}
		if len(t.Wrong) == 0 {
			c.Problems = append(c.Problems, "no wrong sequence: give a plausible mistake, which must earn 0, so the grading is shown to tell them apart")
		} else {
			runs = append(runs, run{len(out), t.Task, t.Site, true, t.Wrong})
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
				name, want := "oracle", 1.0
				if r.wrong {
					name, want = "wrong", 0
				}
				if problem == "" && reward != want {
					problem = fmt.Sprintf("reward %g, want %g", reward, want)
					if !r.wrong {
						problem += ": the oracle does not solve the task as graded (check the evaluator's references, or the oracle's actions)"
					} else {
						problem += ": the grading does not tell this mistake from a solution (tighten the evaluator)"
					}
				}
				mu.Lock()
				c := &out[r.i]
				if r.wrong {
					c.Wrong = reward
				} else {
					c.Oracle = reward
				}
				c.Seconds += time.Since(start).Seconds()
				if problem != "" {
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

// playTask plays a script on a new environment of the task and returns the
// reward of its last step, or why there is none.
func (s *Server) playTask(ctx context.Context, site, id string, script []string) (float64, string) {
	p := &player{s: s}
	defer p.Close()
	if _, err := p.Start(ctx, trajectory.Line{Site: site, TaskID: id}); err != nil {
		return math.NaN(), "the episode did not start: " + err.Error()
	}
	var last *StepReply
	for k, a := range script {
		r, err := p.stepReply(ctx, a)
		if err != nil {
			return math.NaN(), fmt.Sprintf("step %d %s: %v", k+1, a, err)
		}
		if e, ok := r.Info["action_error"]; ok && e != "" {
			return math.NaN(), fmt.Sprintf("step %d %s failed: %v", k+1, a, e)
		}
		last = r
		if r.Terminated && k < len(script)-1 {
			return math.NaN(), fmt.Sprintf("step %d %s ended the episode before the last action", k+1, a)
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
	fmt.Fprintf(&b, "%-*s  %-6s  %-6s  %5s  %7s  %s\n", w, "task", "oracle", "wrong", "steps", "seconds", "result")
	failed := 0
	for _, c := range checks {
		res := "ok"
		if !c.OK() {
			res = "FAIL"
			failed++
		}
		fmt.Fprintf(&b, "%-*s  %-6s  %-6s  %5d  %7.1f  %s\n", w, c.Task, num(c.Oracle), num(c.Wrong), c.Steps, c.Seconds, res)
	}
	for _, c := range checks {
		for _, p := range c.Problems {
			fmt.Fprintf(&b, "%s: %s\n", c.Task, p)
		}
	}
	fmt.Fprintf(&b, "%d task(s), %d passed, %d failed\n", len(checks), len(checks)-failed, failed)
	return b.String()
}

package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/tasks"
)

// keepBudget gives observe options without a token budget the
// environment's (make's observe.max_tokens, and its view unless they name
// one): a step or observe that asks for other parts does not lift it.
func keepBudget(opts envcore.ObserveOptions, env *envcore.Env) envcore.ObserveOptions {
	if opts.MaxTokens == 0 {
		if c := env.Config().Observe; c.MaxTokens > 0 {
			opts.MaxTokens, opts.Tokenizer, opts.Counter = c.MaxTokens, c.Tokenizer, c.Counter
			if opts.View == "" {
				opts.View = c.View
			}
		}
	}
	return opts
}

// step runs one action.
func (s *Server) step(ctx context.Context, x *session, a *stepArgs) (*StepReply, error) {
	if x.over != "" {
		return nil, errorf(CodeEpisodeOver, false, "the episode is over (%s): call reset to start a new one", x.over)
	}
	opts, e := a.Observe.options(s.tokens)
	if e != nil {
		return nil, e
	}
	if a.Observe == nil {
		opts = x.env.Config().Observe
	}
	opts = keepBudget(opts, x.env)
	if r := x.limits.record; r != nil {
		opts.AXTree = true
		opts.Screenshot = opts.Screenshot || r.screenshots
	}
	// A site instance found dead answers every step but the one that ends
	// the episode (which is not graded) until a reset; one that died
	// since the last step is looked for before anything runs on it.
	if x.down == nil {
		x.down = s.siteHealth(ctx, x, false)
	}
	if x.down != nil && !a.Action.terminates() {
		return nil, x.down
	}
	if e := a.Action.check(); e != nil {
		return nil, e
	}
	review, target, e := s.vet(ctx, x, &a.Action) // preview_ms, approve (live.go)
	if e != nil {
		return nil, e
	}
	began := time.Now()
	action := a.Action.p
	if rejected(review) {
		action = noAction
	}
	if x.arun != nil {
		x.arun.SetStep(x.steps + 1)
		if acts, ok := a.Action.actions(); ok && !rejected(review) {
			for _, act := range acts {
				if act.URL != "" {
					x.arun.Navigated(act.URL) // a goto the policy refuses before the browser sends it
				}
			}
		}
	}
	obs, info, err := x.env.StepParsed(ctx, action, opts)
	if err != nil {
		return nil, err
	}
	x.played = append(x.played, action)
	// Before the observation is handed out and the episode graded: an
	// instance that died during the action, or one the route failed to
	// reach, or any instance at the end of the episode, is looked at
	// (deeply at the end: no grade of a dead world).
	if x.down == nil {
		x.down = s.siteHealth(ctx, x, info.Terminated)
		if x.down != nil && !info.Terminated {
			return nil, x.down
		}
	}
	if rejected(review) {
		refuse(&obs, &info, a.Action.echo, review)
	}
	x.steps++
	s.stepsTotal.Add(1)
	s.metrics.steps.Inc()
	s.metrics.stepTime.Observe((info.Action + info.Settle + info.Extract).Seconds())
	if !info.Settled {
		s.metrics.notSettled.Inc()
	}
	reward := rewardOf(0)
	var evalErr string
	var graded *Graded
	var taskEnd *tasks.Result // the task's own word on the episode's end, and its report
	if ev := x.episode.Evaluate; ev != nil && x.down != nil {
		// The site instance died: the browser shows an error page, and a
		// grade of it would score the infrastructure's failure.
		reward, evalErr = nil, "not graded: "+x.down.Message
	} else if ev != nil {
		res, err := ev(ctx, x.env, x.net.Client(), execerOf(x.inst), info, x.limits.everyStep, x.trace)
		switch {
		case err != nil:
			// Not a silent 0: the reward is missing and the reply says why.
			reward, evalErr = nil, err.Error()
			s.log.Warn("grading failed", zap.String("env", x.id), zap.String("task", x.episode.TaskID), zap.Int("step", x.steps), zap.Error(err))
		case res != nil:
			// The reward is the change in the grade since the last one, so
			// that an episode's rewards add up to its final grade.
			reward, taskEnd = rewardOf(res.Reward-x.grade), res
			graded = &Graded{Grade: res.Reward, Scores: res.Scores, Grading: res.Grading}
			x.grade = res.Reward
		}
	}
	end := endOf(x, info, taskEnd)
	terminated, truncated := endFlags(end)
	switch {
	case terminated:
		x.over = "terminated"
	case truncated:
		x.over = "truncated"
	}
	wi := wireInfo(info, x)
	wi.ObsStats = &obs.Stats
	reportRefusals(x, &obs, &wi)
	wi.EvalError, wi.Graded, wi.EndReason = evalErr, graded, string(end)
	if end == EndAgent || end == EndTask {
		reward = s.judgeSideEffects(ctx, x, &wi, reward)
	}
	if terminated || truncated {
		reward = s.judgeAttack(ctx, x, &wi, reward)
	}
	if taskEnd != nil {
		wi.MiniWoB = taskEnd.MiniWoB
		wi.Grader = graderInfo(taskEnd.Answer)
	}
	wi.Review, wi.TargetBox = review, target
	if x.down != nil {
		wi.SiteDown = x.down.Message
	}
	res := &StepReply{Obs: wireObs(obs, x), Reward: reward, Terminated: terminated, Truncated: truncated, Info: wi}
	s.notify(func(o Observer) {
		o.Stepped(StepEvent{Env: x.id, Step: x.steps, Action: a.Action.echo, Reply: res, Time: time.Now(), Began: began, Review: review, Failure: x.down})
	})
	return res, nil
}

// endOf is why this step ended the episode ("" if it did not): the
// agent's ending of the task, else the task's own (res: a page that runs
// its own episodes, like MiniWoB's), else the first limit it reached.
func endOf(x *session, info envcore.StepInfo, res *tasks.Result) EndReason {
	l := x.limits
	switch {
	case info.Terminated:
		return EndAgent
	case res != nil && res.TimeLimit:
		return EndTaskTimeLimit
	case res != nil && res.Done:
		return EndTask
	case l.maxSteps > 0 && x.steps >= l.maxSteps:
		return EndMaxSteps
	case l.timeLimit > 0 && time.Since(x.started) >= l.timeLimit:
		return EndEpisodeTimeout
	case l.stepLimit > 0 && info.Action+info.Settle+info.Extract > l.stepLimit:
		return EndStepTimeout // a step past its deadline ends the episode
	}
	return ""
}

func wireObs(obs envcore.Observation, x *session) Observation {
	return Observation{Observation: obs, Goal: x.episode.Goal}
}

// wireInfo is what a real environment's step or first observation
// reports of itself.
func wireInfo(info envcore.StepInfo, x *session) StepInfo {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	wi := StepInfo{Step: x.steps, ElapsedS: time.Since(x.started).Seconds(), Site: x.site,
		Settling: &Settling{ActionMs: ms(info.Action), SettleMs: ms(info.Settle), ExtractMs: ms(info.Extract),
			Settled: info.Settled, Attempts: info.Attempts, SettleReason: info.SettleReason, SettleError: info.SettleError, Pending: info.Pending},
		ActionError: info.ActionError, ActionErrorCode: info.ActionErrorCode}
	if info.Terminated {
		wi.Stopped = &Stopped{Answer: info.Answer, Infeasible: info.Infeasible}
	}
	if x.episode.TaskID != "" {
		wi.TaskID, wi.TaskOf = x.episode.TaskID, &TaskOf{TaskSet: x.episode.TaskSet, Variant: x.episode.Variant}
	}
	return wi
}

// actionOf reads a structured action strictly: a key envcore.Action does
// not have is refused with the nearest one.
func actionOf(m map[string]any) (envcore.Action, error) {
	var act envcore.Action
	names := wireNames(reflect.TypeFor[envcore.Action]())
	for k := range m {
		found := false
		for _, n := range names {
			found = found || n == k
		}
		if !found {
			return act, unknownKey("step.action", k, names)
		}
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return act, badArgs(fmt.Sprintf("step.action: %v", err))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&act); err != nil {
		return act, badArgs(fmt.Sprintf("step.action does not match the action schema (%s): %v", strings.Join(names, ", "), err))
	}
	return act, nil
}

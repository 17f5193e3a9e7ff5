package dream

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/trajectory"
)

// DefaultMaxSteps is max_dream_steps' default: DynaWeb dreams about five
// steps, as longer dreams compound the model's errors.
const DefaultMaxSteps = 5

// How a dream ended: info.dream_end.
const (
	EndAgent    = "agent"           // the agent stopped (stop, report_infeasible)
	EndModel    = "model"           // the world model said the episode is over
	EndUnseen   = "unseen"          // the memory model never saw the pair (truncated)
	EndMaxSteps = "max_dream_steps" // the dream reached its length
)

// Where a dream step's reward came from: info.reward_source.
const (
	RewardTask  = "task"  // the task's own grader, run on the dreamed observation
	RewardJudge = "judge" // the judge endpoint's self-assessment
	RewardNone  = "none"  // nothing to grade (no task, or the agent did not stop): 0, info.reward_note says why
	// RewardNotGraded: the task's grader cannot run on a dreamed
	// observation (a check verifier, state, program_html) and no judge
	// assessed it: the reward is unknown (NaN; the protocol's null, with
	// info.eval_error), never a 0 the policy did not earn.
	RewardNotGraded = "not_graded"
	// RewardRecorded: the dream followed a recorded real episode step for
	// step (the memory model's Recall), and carries its real reward.
	RewardRecorded = "recorded"
)

// Recaller is a world model that knows the real rewards of the episodes
// it was built from (the memory model): a dream that follows one of them
// step for step, from the same start with the same goal, ends as it did.
type Recaller interface {
	Recall(goal string, start trajectory.Observation, actions []string) (float64, bool)
}

// Grader scores a finished dream with the task's own grader on the last
// observation and the agent's answer. It fails when the task's
// evaluators need more than an observation (a page to run a locator in,
// the site's database).
type Grader func(ctx context.Context, obs trajectory.Observation, answer string) (float64, error)

// Config is a dream environment's settings.
type Config struct {
	Model Model
	// MaxSteps is max_dream_steps (0: DefaultMaxSteps).
	MaxSteps int
	// Grade is the task's grader, nil when there is no task.
	Grade Grader
	// Judge assesses dreams the task's grader cannot grade; nil: none.
	Judge *Judge
}

// Env is one dream environment: an episode whose dynamics come from a
// world model. Like an envcore.Env it takes actions in the action grammar
// and returns observations, but it has no browser: each step asks the
// model for the next state and applies its delta. It is not safe for
// concurrent use (a server session drives it from its worker).
type Env struct {
	cfg Config
	// noGrade says why Grade is nil, when there is a task (SetGrader).
	noGrade string
	obs     trajectory.Observation
	steps   int
	over    string
	// start and actions are the episode's first observation and its
	// actions so far, canonical (Recaller).
	start   trajectory.Observation
	actions []string
}

// New checks cfg and makes a dream environment; Reset starts its episodes.
func New(cfg Config) (*Env, error) {
	if cfg.Model == nil {
		return nil, errors.New("a dream needs a world model")
	}
	if cfg.MaxSteps < 0 {
		return nil, fmt.Errorf("max_dream_steps must be 1 or more (0: the default, %d), got %d", DefaultMaxSteps, cfg.MaxSteps)
	}
	if cfg.MaxSteps == 0 {
		cfg.MaxSteps = DefaultMaxSteps
	}
	return &Env{cfg: cfg}, nil
}

// SetGrader sets the task's grader for the next episodes; with g nil,
// why says why the task has none.
func (e *Env) SetGrader(g Grader, why string) {
	e.cfg.Grade, e.noGrade = g, why
}

// MaxSteps is the dream's length.
func (e *Env) MaxSteps() int { return e.cfg.MaxSteps }

// Model is the dream's world model.
func (e *Env) Model() Model { return e.cfg.Model }

// Obs is the current observation.
func (e *Env) Obs() trajectory.Observation { return e.obs }

// Over says why the episode is over ("" while it runs): terminated or
// truncated.
func (e *Env) Over() string { return e.over }

// Reset starts an episode from a real observation (in the model's view)
// and returns it.
func (e *Env) Reset(start trajectory.Observation) trajectory.Observation {
	e.obs = inView(start, e.cfg.Model.View())
	e.obs.Stats = envcore.ObservationStats{}
	e.steps, e.over = 0, ""
	e.start, e.actions = e.obs, e.actions[:0]
	return e.obs
}

// Step is a dream step's result, as a real step's.
type Step struct {
	Obs trajectory.Observation
	// Reward is NaN when the dream is not graded (RewardNotGraded).
	Reward     float64
	Terminated bool
	Truncated  bool
	// Count is the dream's steps so far, this one included.
	Count int
	// ActionError is why the action failed (a refused action, or the
	// error the model predicted); ActionErrorCode is bad_action for a
	// refused one, "" for a predicted one.
	ActionError, ActionErrorCode string
	// Stop is the agent's answer when it ended the dream (stop or
	// report_infeasible).
	Stop *Stop
	// Info is what the dream reports of itself.
	Info Info
}

// Stop is how the agent ended a dream.
type Stop struct {
	Answer     string
	Infeasible bool
}

// Info is a dream's own part of a step's info, with its wire names: the
// server puts it beside what every step reports (server.StepInfo).
type Info struct {
	// Dreamed is always true: the observation is a world model's.
	Dreamed bool `json:"dreamed"`
	// Model is the world model's name.
	Model string `json:"model"`
	// MaxDreamSteps is the dream's length.
	MaxDreamSteps int `json:"max_dream_steps"`
	// DreamEnd is why the dream ended (EndAgent, EndModel, EndMaxSteps,
	// EndUnseen), on the step that ended it.
	DreamEnd string `json:"dream_end,omitempty"`
	// RewardSource is where the last step's reward came from (RewardTask,
	// RewardRecorded, RewardJudge, RewardNone, RewardNotGraded), and
	// RewardNote why, when that is not the task's grader.
	RewardSource string `json:"reward_source,omitempty"`
	RewardNote   string `json:"reward_note,omitempty"`
	// JudgeReasoning is the judge's reasoning for its reward.
	JudgeReasoning string `json:"judge_reasoning,omitempty"`
	// ModelReasoning is the world model's reasoning for its prediction.
	ModelReasoning string `json:"model_reasoning,omitempty"`
	// ModelNote says why the model could not go on.
	ModelNote string `json:"model_note,omitempty"`
}

// NotGraded is why the step has no reward ("" when it has one): the
// task's grade exists but the dream cannot compute it.
func (i Info) NotGraded() string {
	if i.RewardSource == RewardNotGraded {
		return i.RewardNote
	}
	return ""
}

// Action is an action as an agent sent it: a string, parsed here, or an
// action already decoded (a structured action). Text is the string, or
// "" for a decoded one.
type Action struct {
	Text    string
	Decoded *envcore.Action
	// Refused is why Text does not parse, when the caller parsed it
	// already (the server reads a step's action once): it is not parsed
	// again.
	Refused error
}

// SeveralActions is the refusal of a step of n actions (BrowserGym's
// multi-action mode): a world model predicts one action's effect, so a
// dream takes one action a step.
func SeveralActions(n int) error {
	return fmt.Errorf("a dream takes one action a step (its world model predicts one action's effect); this step has %d: send them one a step", n)
}

// Step takes one action. A multi-action string is refused (SeveralActions).
// An action that does not parse or is invalid is
// refused as a real environment refuses it, with the same
// last_action_error and action_error_code bad_action, and the model is
// not asked. A stop or report_infeasible ends the episode without asking
// the model, graded by the task's grader (else the judge). Any other
// action asks the model for the next state. An error is the model's
// (*ModelError: the step is not counted, the episode goes on) or a step
// after the episode ended.
func (e *Env) Step(ctx context.Context, act Action) (Step, error) {
	if e.over != "" {
		return Step{}, fmt.Errorf("the dream is over (%s): reset to start a new one", e.over)
	}
	a, last, refused := e.parse(act)
	e.actions = append(e.actions, CanonicalAction(last))
	if refused != nil {
		e.steps++
		obs := e.obs
		obs.LastAction, obs.LastActionError = envcore.ClipEcho(last), envcore.ClipEcho(refused.Error())
		obs.Dialogs, obs.BlockedTabs = nil, 0
		e.obs = obs
		st := e.result(0, false, "")
		st.ActionError, st.ActionErrorCode = obs.LastActionError, "bad_action"
		return e.truncate(ctx, st), nil
	}
	if a.Type == envcore.Terminate {
		e.steps++
		obs := e.obs
		obs.LastAction, obs.LastActionError = envcore.ClipEcho(last), ""
		obs.Dialogs, obs.BlockedTabs = nil, 0
		e.obs = obs
		st := e.result(0, true, EndAgent)
		st.Stop = &Stop{Answer: a.Answer, Infeasible: a.Infeasible}
		e.grade(ctx, &st, a.Answer, true)
		return st, nil
	}
	p, err := e.cfg.Model.Predict(ctx, Query{Goal: e.obs.Goal, Obs: e.obs, Action: last, Step: e.steps + 1})
	if err != nil {
		if !IsModelError(err) {
			err = &ModelError{Model: e.cfg.Model.Name(), Err: err}
		}
		return Step{}, err
	}
	if p.Unseen {
		// The model ran out, not the task: a truncation, so a trainer
		// that bootstraps values does not read it as the task's end.
		e.steps++
		st := e.result(0, false, "")
		e.over, st.Truncated, st.Info.DreamEnd = "truncated", true, EndUnseen
		st.Info.ModelNote = "the memory model never saw this action in this state: the dream ends here, truncated (Dyna-Q's table has no entry)"
		e.grade(ctx, &st, "", false)
		return st, nil
	}
	next, err := e.next(p)
	if err != nil {
		return Step{}, &ModelError{Model: e.cfg.Model.Name(), Err: fmt.Errorf("its delta does not apply to the observation: %w", err)}
	}
	e.steps++
	next.Goal, next.LastAction = e.obs.Goal, envcore.ClipEcho(last)
	next.Stats = envcore.ObservationStats{}
	e.obs = next
	end := ""
	if p.Terminal {
		end = EndModel
	}
	st := e.result(0, p.Terminal, end)
	if p.Reasoning != "" {
		st.Info.ModelReasoning = p.Reasoning
	}
	if next.LastActionError != "" {
		st.ActionError = next.LastActionError
	}
	if p.Terminal {
		e.grade(ctx, &st, "", false)
		return st, nil
	}
	return e.truncate(ctx, st), nil
}

// parse reads the action: the action, its echo (last_action) and the
// error that refuses it, if any.
func (e *Env) parse(act Action) (envcore.Action, string, error) {
	if act.Refused != nil {
		return envcore.Action{}, act.Text, act.Refused
	}
	if act.Decoded == nil {
		acts, err := envcore.ParseActions(act.Text)
		if err != nil {
			return envcore.Action{}, act.Text, err
		}
		if len(acts) > 1 {
			return envcore.Action{}, act.Text, SeveralActions(len(acts))
		}
		act.Decoded = &acts[0]
	}
	a := *act.Decoded
	if err := a.Validate(); err != nil {
		return a, envcore.EchoOf(a), err
	}
	return a, a.String(), nil
}

// next applies a prediction to the current observation.
func (e *Env) next(p Prediction) (trajectory.Observation, error) {
	if p.Next != nil {
		return inView(*p.Next, e.cfg.Model.View()), nil
	}
	// The previous action's error is not part of the page: the delta says
	// whether this action failed (as a real step's observation does).
	base := e.obs
	base.LastActionError = ""
	return trajectory.Apply(base, p.Delta)
}

// result is a step's reply with the dream's info.
func (e *Env) result(reward float64, terminated bool, end string) Step {
	st := Step{Obs: e.obs, Reward: reward, Terminated: terminated, Count: e.steps,
		Info: Info{Dreamed: true, MaxDreamSteps: e.cfg.MaxSteps, Model: e.cfg.Model.Name()}}
	if terminated {
		e.over = "terminated"
		st.Info.DreamEnd = end
	}
	return st
}

// truncate ends the dream at its length, assessed by the judge.
func (e *Env) truncate(ctx context.Context, st Step) Step {
	if e.steps < e.cfg.MaxSteps {
		return st
	}
	e.over = "truncated"
	st.Truncated = true
	st.Info.DreamEnd = EndMaxSteps
	e.grade(ctx, &st, "", false)
	return st
}

// grade gives the last step of a dream its reward: the task's grader
// when the agent stopped and it can run on the observation, else the real
// reward of the recorded episode the dream followed step for step (a
// Recaller model's), else the judge's self-assessment, else 0 or not
// graded, with info saying which and why.
func (e *Env) grade(ctx context.Context, st *Step, answer string, stopped bool) {
	var why error
	hint := "give the dream a task whose grader runs on an observation (url_match, string_match), or a judge endpoint"
	// unknown: the task has a grade the dream cannot compute (its grader
	// needs the real site, or failed), not a 0.
	unknown := false
	switch {
	case !stopped:
		why = errors.New("the agent did not stop, and the task's grader grades where it stops")
		hint = "give the dream a judge endpoint to assess dreams the agent does not end"
	case e.cfg.Grade == nil && e.noGrade != "":
		why, unknown = errors.New(e.noGrade), true
	case e.cfg.Grade == nil:
		why = errors.New("the dream has no task")
	default:
		r, err := e.cfg.Grade(ctx, e.obs, answer)
		if err == nil {
			st.Reward, st.Info.RewardSource = r, RewardTask
			return
		}
		why, unknown = err, true
	}
	if rc, ok := e.cfg.Model.(Recaller); ok && stopped {
		if r, ok := rc.Recall(e.start.Goal, e.start, e.actions); ok {
			st.Reward, st.Info.RewardSource = r, RewardRecorded
			st.Info.RewardNote = "the dream followed a recorded real episode step for step: its real reward"
			return
		}
	}
	if e.cfg.Judge != nil {
		r, reason, err := e.cfg.Judge.Assess(ctx, e.obs, answer)
		if err == nil {
			st.Reward, st.Info.RewardSource, st.Info.JudgeReasoning = r, RewardJudge, reason
			return
		}
		why = fmt.Errorf("%v; the judge failed too: %w", why, err)
	}
	if unknown {
		st.Reward, st.Info.RewardSource = math.NaN(), RewardNotGraded
		st.Info.RewardNote = fmt.Sprintf("not graded: %v (%s)", why, hint)
		return
	}
	st.Reward, st.Info.RewardSource = 0, RewardNone
	st.Info.RewardNote = fmt.Sprintf("reward 0: %v (%s)", why, hint)
}

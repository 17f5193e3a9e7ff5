package server

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/tasks"
)

// Side effects: on the step that ends a task's episode (the agent's stop,
// the task's own end), the changes the episode made to its site's state
// that the task did not ask for are listed in info.side_effects
// (tasks.FindSideEffects compares the state with the copy kept at the
// episode's start). Under side_effects: fail (make's, else the task's)
// any of them scores the episode 0; under report, the default, the reward
// stands; off looks for none.

// sideEffectMode is the side-effect mode of episode ep: off without a
// scope (no task, or one on a site that names nothing), else make's,
// else the task's, else report.
func (x *session) sideEffectMode(ep *Episode) string {
	switch {
	case ep.Scope == nil:
		return tasks.SideEffectsOff
	case x.limits.sideEffects != "":
		return x.limits.sideEffects
	case ep.SideEffects != "":
		return ep.SideEffects
	}
	return tasks.SideEffectsReport
}

// judgeSideEffects looks for the side effects of x's episode, which this
// step ends, reports them in wi and returns the step's reward: under
// fail, the episode's grade becomes 0 (score side_effects 0) when it has
// any, and the step is not graded (reward nil, eval_error) when they
// could not be looked for.
func (s *Server) judgeSideEffects(ctx context.Context, x *session, wi *StepInfo, reward *float64) *float64 {
	if x.down != nil {
		return reward // the episode is not graded: its site died
	}
	// notLooked says on a task's ending step that its side effects are
	// unknown, so that a reader never takes the absence of side_effects
	// for a clean episode.
	notLooked := func(why string) {
		if x.episode.TaskID != "" {
			wi.SideEffectsNote = "side effects not looked for: " + why
		}
	}
	mode := x.sideEffectMode(&x.episode)
	switch {
	case x.episode.Scope == nil:
		notLooked("the task's site declares no state, or the task names nothing of it the server can read (no state check, no may_change)")
		return reward
	case mode == tasks.SideEffectsOff:
		notLooked("side_effects is off")
		return reward
	}
	dir := x.stateDir.Load()
	file, in, err := stateDB(x)
	if err != nil || dir == nil {
		// A site without state, under report (fail is refused at the start).
		notLooked("the site's state was not kept at the episode's start")
		return reward
	}
	se, err := tasks.FindSideEffects(ctx, in.Execer(), file, filepath.Join(*dir, "start.db"), *x.episode.Scope)
	if err != nil {
		s.log.Warn("side effects not looked for", zap.String("env", x.id), zap.String("task", x.episode.TaskID), zap.Error(err))
		if mode == tasks.SideEffectsFail {
			wi.Graded = nil
			wi.EvalError = fmt.Sprintf("not graded: side_effects is fail and the episode's side effects could not be looked for: %v", err)
			return nil
		}
		notLooked(err.Error())
		return reward
	}
	if se.Total == 0 && !se.Unread {
		return reward
	}
	wi.SideEffects = se.Changes
	note := fmt.Sprintf("%d change(s) to the site's state that the task did not ask for", se.Total)
	if len(se.Changes) < se.Total {
		note += fmt.Sprintf(" (the first %d listed)", len(se.Changes))
	}
	if se.Unread {
		note += "; the state changed in more rows than were read, and there may be more"
	}
	if mode != tasks.SideEffectsFail {
		wi.SideEffectsNote = note + "; side_effects is report: the reward stands"
		return reward
	}
	wi.SideEffectsNote = note + "; side_effects is fail: the episode scores 0"
	if wi.Graded == nil || reward == nil {
		return reward
	}
	return zeroGrade(x, wi, *reward, "side_effects")
}

// zeroGrade takes the episode's grade to 0 for why (a score of 0 under
// that name in info.scores) and returns the step's reward that does it:
// the change from the last grade, so the episode's rewards add up to 0.
func zeroGrade(x *session, wi *StepInfo, reward float64, why string) *float64 {
	g := *wi.Graded
	g.Scores = maps.Clone(g.Scores)
	if g.Scores == nil {
		g.Scores = map[string]float64{}
	}
	g.Scores[why] = 0
	r := reward - g.Grade // the change from the last grade to 0
	g.Grade, x.grade = 0, 0
	wi.Graded = &g
	return rewardOf(r)
}

package server

import "context"

// engine is what an environment does on the ops that act on it: a real
// browser on a site instance (liveEngine), or a world model's dream
// (dreamEngine, dream.go). It is chosen once, when the environment is
// made; the ops call it through submit, so admission and metrics apply to
// both alike.
type engine interface {
	// reset starts a new episode.
	reset(ctx context.Context, s *Server, x *session, a *resetArgs, cause string) (*EpisodeReply, error)
	// step runs one action.
	step(ctx context.Context, s *Server, x *session, a *stepArgs) (*StepReply, error)
	// observe is the current observation, without acting.
	observe(ctx context.Context, s *Server, x *session, a *observeArgs) (*ObserveReply, error)
	// site is the environment's site instance for op, or why it has
	// none (hint: what to do instead).
	site(x *session, op, hint string) (Instance, error)
}

// liveEngine is a real environment: a browser (x.env) on a site
// instance (x.inst).
type liveEngine struct{}

func (liveEngine) reset(ctx context.Context, s *Server, x *session, a *resetArgs, cause string) (*EpisodeReply, error) {
	return s.startEpisode(ctx, x, a, cause)
}

func (liveEngine) step(ctx context.Context, s *Server, x *session, a *stepArgs) (*StepReply, error) {
	res, err := s.step(ctx, x, a)
	if err != nil {
		s.stepFailed(x, a, err)
	}
	return res, err
}

func (liveEngine) observe(ctx context.Context, s *Server, x *session, a *observeArgs) (*ObserveReply, error) {
	opts, err := a.Observe.options(s.tokens)
	if err != nil {
		return nil, err
	}
	if x.down == nil {
		x.down = s.siteHealth(ctx, x, false)
	}
	if x.down != nil {
		return nil, x.down // no observation of a dead site to act on
	}
	obs, err := x.env.Observe(ctx, keepBudget(opts, x.env))
	if err != nil {
		return nil, err
	}
	return &ObserveReply{Obs: wireObs(obs, x)}, nil
}

func (liveEngine) site(x *session, _, _ string) (Instance, error) { return x.inst, nil }

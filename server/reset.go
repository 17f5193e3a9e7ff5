package server

import "context"

// startEpisode starts a reset's episode, alone or as a member of a group
// (options.group_key).
func (s *Server) startEpisode(ctx context.Context, x *session, a *resetArgs, cause string) (*EpisodeReply, error) {
	if err := s.previewOption(a.PreviewMs, &x.limits); err != nil {
		return nil, err
	}
	// options.attack is this episode's attack, in place of make's.
	spec, err := a.Options.Attack.spec("reset.options.attack")
	if err != nil {
		return nil, err
	}
	x.episodeAttack = spec
	x.seed = 0
	if a.Seed != nil {
		x.seed = *a.Seed
	}
	opts := a.Options.episode(a.Seed)
	if a.Options.GroupKey != "" {
		return s.groupEpisode(ctx, x, a.Options.GroupKey, opts, cause)
	}
	return s.episode(ctx, x, opts, cause)
}

// episode asks the site for a new episode and resets the browser to its
// start.
func (s *Server) episode(ctx context.Context, x *session, opts EpisodeOptions, cause string) (*EpisodeReply, error) {
	if g := x.lending.Swap(nil); g != nil {
		g.lent() // the group's members may still fork this instance's snapshot
	}
	if x.inst == nil {
		// A group member made without an instance of its own, whose
		// group had none to share or whose fork failed.
		inst, err := s.factory.Make(ctx, x.spec)
		if err != nil {
			return nil, err
		}
		x.inst = inst
	}
	ep, err := x.inst.Episode(ctx, opts)
	if err != nil {
		return nil, err
	}
	ep.Seed = opts.Seed
	return s.start(ctx, x, cause, x.inst, ep, x.restartIn(s.log, x.episode.StartURL))
}

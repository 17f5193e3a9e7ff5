package server

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/netroute"
	"github.com/webserv-rl/webserv/tasks"
)

// makeEnv creates an environment and starts its first episode, so the
// reply carries the first observation.
func (s *Server) makeEnv(ctx context.Context, c call, a *makeArgs) (*EpisodeReply, error) {
	if a.Site == DreamSite {
		return s.makeDream(ctx, c, a)
	}
	if err := checkDreamKeys(a); err != nil {
		return nil, err
	}
	spec := MakeSpec{Site: "open", TaskSet: a.TaskSet, Task: a.Task, StartURL: a.StartURL, Goal: a.Goal, Allow: a.Allow, StrictAnswers: a.StrictAnswers}
	if a.Site != "" {
		spec.Site = a.Site
	}
	if len(a.Sites) > 0 {
		spec.Site = strings.Join(a.Sites, SiteSep)
	}
	var err error
	if spec.Politeness, err = politeness(a.Politeness); err != nil {
		return nil, err
	}
	cfg, err := s.envConfig(a)
	if err != nil {
		return nil, err
	}
	if err := tasks.CheckSideEffectMode(a.SideEffects); err != nil {
		return nil, badArgs("make.side_effects: " + err.Error())
	}
	atk, err := a.Attack.spec("make.attack")
	if err != nil {
		return nil, err
	}
	if a.MaxSteps < 0 {
		return nil, badArgs("make.max_steps must be 0 (no limit) or more")
	}
	if e := s.noBrowser(); e != nil && !e.Retryable {
		return nil, e // a pool restarting its browsers: the reset waits for one
	}

	release, err := s.awaitCreating(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	x, err := s.reserve(c.conn)
	if err != nil {
		return nil, err
	}
	l := limits{maxSteps: a.MaxSteps, timeLimit: a.EpisodeTimeoutMs.D(), stepLimit: a.StepTimeoutMs.D(), everyStep: a.EvaluateEveryStep, stateDiff: a.StateDiff, sideEffects: a.SideEffects, attack: atk}
	if err := s.liveOptions(a, &l); err != nil {
		s.drop(x)
		return nil, err
	}
	if a.Record.on {
		if l.record, err = s.recordSpec(&a.Record); err != nil {
			s.drop(x)
			return nil, err
		}
	}
	if err := s.open(x, spec.Site, spec, cfg, l); err != nil {
		s.closeSession(x, "make failed: "+err.Error())
		return nil, err
	}
	// A member of a group that already has its start state gets a fork of
	// it in place of a site instance of its own: no instance is started.
	if key := a.Options.GroupKey; key != "" {
		x.joined, x.leads = s.joinGroup(groupKey(x, key, a.Options.episode(nil)))
	}
	if x.joined == nil || x.leads || !x.joined.forkable() {
		inst, err := s.factory.Make(ctx, spec)
		if err != nil {
			s.closeSession(x, "make failed: "+err.Error())
			return nil, err
		}
		x.inst = inst
	}
	res, err := s.startEpisode(ctx, x, &a.resetArgs, CauseMake)
	if err != nil {
		s.closeSession(x, "make failed: "+err.Error())
		return nil, err
	}
	go x.work()
	s.log.Info("environment made", zap.String("env", x.id), zap.String("site", spec.Site))
	return res, nil
}

// envConfig is make's per-environment settings over the server defaults.
func (s *Server) envConfig(a *makeArgs) (envcore.Config, error) {
	cfg := s.cfg.Env
	for _, o := range []struct {
		v   Millis
		dst *time.Duration
	}{
		{a.IdleMs, &cfg.IdleWindow}, {a.SettleTimeoutMs, &cfg.SettleTimeout},
		{a.LongRequestMs, &cfg.LongRequest}, {a.ActionTimeoutMs, &cfg.ActionTimeout},
	} {
		if o.v > 0 {
			*o.dst = o.v.D()
		}
	}
	if vp := a.Viewport; vp != nil {
		if vp.Width <= 0 || vp.Height <= 0 {
			return cfg, badArgs(fmt.Sprintf("make.viewport needs a positive width and height, got %dx%d", vp.Width, vp.Height))
		}
		cfg.Viewport = envcore.Viewport{Width: vp.Width, Height: vp.Height}
	}
	var err error
	if cfg.Observe, err = a.Observe.options(s.tokens); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// politeness is make's politeness option.
func politeness(p *politenessArgs) (netroute.Policy, error) {
	if p == nil {
		return netroute.Policy{}, nil
	}
	if p.RatePerHost < 0 || p.ConcurrencyPerHost < 0 || p.MaxRequests < 0 {
		return netroute.Policy{}, badArgs("make.politeness: rate_per_host, concurrency_per_host and max_requests must be 0 (no limit) or more")
	}
	if len(p.SubmitAllow) > 0 && !p.DenySubmit {
		return netroute.Policy{}, badArgs("make.politeness: submit_allow names the hosts deny_submit lets submissions through to; set deny_submit: true")
	}
	return netroute.Policy{RatePerHost: p.RatePerHost, ConcurrencyPerHost: p.ConcurrencyPerHost, MaxRequests: p.MaxRequests,
		UserAgent: p.UserAgent, Robots: p.Robots, DenySubmit: p.DenySubmit, SubmitAllow: p.SubmitAllow}, nil
}

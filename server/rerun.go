package server

import (
	"context"
	"fmt"
	"strings"

	"github.com/webserv-rl/webserv/trajectory"
)

// Rerun runs a recorded episode's actions again on a fresh environment of
// its site and task (or its start page, on the open site) and reports the
// first step whose observation differs from the recording
// (trajectory.Rerun). The environment is closed afterwards.
func (s *Server) Rerun(ctx context.Context, ep *trajectory.Episode) (trajectory.RerunReport, error) {
	return trajectory.Rerun(ctx, ep, &player{s: s})
}

// player is a trajectory.Player on this server's own environments.
type player struct {
	s *Server
	x *session
}

func (p *player) Start(ctx context.Context, head trajectory.Line) (*trajectory.Observation, error) {
	a := &makeArgs{Goal: head.Goal}
	switch {
	case head.Site == "" || head.Site == "open":
		a.StartURL = head.StartURL
	case strings.Contains(head.Site, SiteSep):
		a.Sites = strings.Split(head.Site, SiteSep)
	default:
		a.Site = head.Site
	}
	if head.TaskID != "" {
		a.Task, a.Goal = head.TaskID, ""
	}
	res, e := p.s.makeEnv(ctx, call{}, a)
	if e != nil {
		return nil, e
	}
	r := res.(*EpisodeReply)
	x, e := p.s.session(r.Env)
	if e != nil {
		return nil, e
	}
	p.x = x
	o := r.Obs
	return &o, nil
}

func (p *player) Step(ctx context.Context, action string) (*trajectory.Observation, error) {
	r, err := p.stepReply(ctx, action)
	if err != nil {
		return nil, err
	}
	o := trajectory.Observation(r.Obs)
	return &o, nil
}

// stepReply runs one step on the player's environment.
func (p *player) stepReply(ctx context.Context, action string) (*StepReply, error) {
	type result struct {
		v any
		e error
	}
	done := make(chan result, 1)
	if !p.x.enqueue(func() {
		v, e := p.s.step(ctx, p.x, &stepArgs{Action: textAction(action)})
		done <- result{v, e}
	}) {
		return nil, fmt.Errorf("the re-run's environment %s was closed", p.x.id)
	}
	select {
	case r := <-done:
		if r.e != nil {
			return nil, r.e
		}
		return r.v.(*StepReply), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *player) Close() error {
	if p.x != nil {
		p.s.closeSession(p.x, "re-run done")
	}
	return nil
}

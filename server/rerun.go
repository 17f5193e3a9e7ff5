package server

import (
	"context"
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
	// sideEffects is make's side_effects ("": the task's mode).
	sideEffects string
}

func (p *player) Start(ctx context.Context, head trajectory.Line) (*trajectory.Observation, error) {
	a := &makeArgs{Goal: head.Goal, SideEffects: p.sideEffects}
	a.Seed = head.Seed
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
	r, e := runOp[*EpisodeReply](ctx, p.s, "make", call{}, a)
	if e != nil {
		return nil, e
	}
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

// stepReply runs one step on the player's environment, as every step
// runs (exec.go).
func (p *player) stepReply(ctx context.Context, action string) (*StepReply, error) {
	return runOp[*StepReply](ctx, p.s, "step", call{x: p.x}, &stepArgs{Action: textAction(action)})
}

func (p *player) Close() error {
	if p.x != nil {
		p.s.closeSession(p.x, "re-run done")
	}
	return nil
}

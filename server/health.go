package server

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// A site instance can die under its environment (its process killed, its
// container stopped) and the route that carries the browser's requests to
// it can fail. Neither may turn into an observation the agent acts on or
// an episode that is graded: the browser would show an error page, and a
// grader that reads only the browser (url_match, string_match,
// program_html) would score it. So every step looks, before its
// observation is handed out: cheaply (the instance's watcher's verdict,
// the route's state) after every action, and deeply (the backend's own
// state and one readiness probe) when the route failed to reach the
// instance during the step or before the episode is graded at its end.
// A dead instance makes that step, and every later one until a reset,
// answer site_down; a terminating action on it gets reward None with
// info.eval_error, never a grade.

// Watched is an Instance that can say whether its site instances still
// live (catalog's hosted instances). Health is nil while they do; deep
// asks their backends and probes their readiness paths, shallow only
// reads what their watchers saw.
type Watched interface {
	Health(ctx context.Context, deep bool) error
}

// siteHealth looks at x's site instance and route: nil while both live,
// else the site_down error its steps answer. deep asks for the backend's
// state and a readiness probe; a failure of the route to reach the
// instance since the last look asks for them too.
func (s *Server) siteHealth(ctx context.Context, x *session, deep bool) *Error {
	if x.net == nil {
		return nil
	}
	if err := x.net.RouteErr(); err != nil {
		return s.siteDown(x, fmt.Sprintf("the route that carries its browser's requests failed: %v", err))
	}
	seen := x.net.TakeUnreachable()
	w, ok := x.inst.(Watched)
	if !ok {
		return nil
	}
	if err := w.Health(ctx, deep || seen != ""); err != nil {
		why := err.Error()
		if seen != "" {
			why += fmt.Sprintf(" (the browser's last request to it failed: %s)", seen)
		}
		return s.siteDown(x, why)
	}
	return nil
}

// siteDown is the error of an environment whose site instance or route
// died: infrastructure, retryable after a reset.
func (s *Server) siteDown(x *session, why string) *Error {
	s.log.Warn("site instance down", zap.String("env", x.id), zap.String("site", x.site), zap.Int("step", x.steps), zap.String("why", why))
	return errorf(CodeSiteDown, true, "environment %s: %s. The episode is over and is not graded; reset the environment for a fresh instance", x.id, why)
}

// stepFailed records a step that answered an infrastructure fault in the
// episode's trajectory: the recording says the infrastructure ended it.
func (s *Server) stepFailed(x *session, a *stepArgs, err error) {
	we := wireError(err)
	if we == nil || we.Fault != FaultInfrastructure {
		return
	}
	s.notify(func(o Observer) {
		o.Stepped(StepEvent{Env: x.id, Step: x.steps + 1, Action: a.Action.echo, Failure: we, Time: time.Now()})
	})
}

package server

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/trajectory"
	"github.com/webserv-rl/webserv/ui"
)

// The web UI (/ui, package ui): the live view of open environments fed by
// the observer hook, live pictures of their pages, people's verdicts on
// actions (make's approve), the action preview (preview_ms), and the
// replayer of the --trajectories directory with re-runs.

// DefaultApproveTimeout is how long an action waits for a person's verdict
// when make's approve_timeout_ms is not given (at most 3/4 of the server's
// request timeout); then it is rejected.
const DefaultApproveTimeout = 2 * time.Minute

// liveView is the Observer that keeps the UI's board.
type liveView struct{ board *ui.Board }

func (v liveView) Began(ev EpisodeEvent) {
	v.board.Began(ev.Env, ev.live, headLine(ev, 0), resetLine(ev))
}

func (v liveView) Stepped(ev StepEvent) { v.board.Stepped(ev.Env, stepLine(ev)) }

func (v liveView) Closed(ev ClosedEvent) { v.board.Closed(ev.Env) }

// uiHandler is the UI under /ui, behind the same token check as the
// WebSocket: a page's URL carries ?token= and the pages pass it on.
func (s *Server) uiHandler() http.Handler {
	cfg := ui.Config{Log: s.log.Named("ui"), Board: s.board, Screens: screens{s}}
	if s.cfg.TrajectoryDir != "" {
		cfg.Replay = ui.NewReplay(s.cfg.TrajectoryDir)
		cfg.Rerunner = s
	}
	return MountUI(s.cfg.Token, ui.Handler(cfg))
}

// MountUI serves the UI handler h under /ui (a request for /ui itself is
// sent to /ui/), letting through only requests whose ?token= is token, the
// check of the WebSocket's hello; an empty token lets every request
// through. `webserv replay` mounts its replayer with it too.
func MountUI(token string, h http.Handler) http.Handler {
	h = http.StripPrefix("/ui", h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !tokenOK(token, r.URL.Query().Get("token")) {
			http.Error(w, "this server needs a token: add ?token=... to the URL", http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/ui" || r.URL.Path == "/" {
			u := *r.URL
			u.Path = "/ui/"
			http.Redirect(w, r, u.String(), http.StatusFound)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// screens gives the UI live pictures of environments' pages.
type screens struct{ s *Server }

func (sc screens) Screencast(ctx context.Context, env string, frame func([]byte) error) error {
	x, e := sc.s.session(env)
	if e != nil {
		return e
	}
	if x.env == nil {
		return fmt.Errorf("environment %s has no page yet", env)
	}
	return x.env.Screencast(ctx, envcore.ScreencastOptions{}, frame)
}

// liveOptions reads make's approve and approve_timeout_ms.
func (s *Server) liveOptions(a *makeArgs, l *limits) error {
	if a.Approve && s.board == nil {
		return errorf(CodeNotSupported, false, "approve needs the server's web UI, where a person decides; this server runs with --no-ui")
	}
	timeout := a.ApproveTimeoutMs.D()
	if timeout <= 0 {
		// The default leaves the request a quarter of its time to act.
		timeout = min(DefaultApproveTimeout, s.cfg.StepTimeout*3/4)
	}
	if a.Approve && timeout >= s.cfg.StepTimeout {
		return errorf(CodeBadArgs, false, "approve_timeout_ms (%s) must be shorter than the server's request timeout (%s)", timeout, s.cfg.StepTimeout)
	}
	l.approve, l.approveTimeout = a.Approve, timeout
	return nil
}

// previewOption applies preview_ms (make and reset) when it was given.
func (s *Server) previewOption(ms *Millis, l *limits) error {
	if ms == nil {
		return nil
	}
	if d := ms.D(); d > 10*time.Second {
		return errorf(CodeBadArgs, false, "preview_ms must be between 0 (off) and 10000")
	}
	l.preview = ms.D()
	return nil
}

// vet runs before an action. For a recording with screenshots it measures
// the action's target where the last screenshot shows it (the replayer
// outlines it there). With a preview or approval it outlines the target on
// the page, then waits preview_ms, or for a person's verdict in the live
// view (the outline stays meanwhile); the outline is removed before it
// returns. A nil review means the action runs unasked.
func (s *Server) vet(ctx context.Context, x *session, a *stepAction) (*trajectory.Review, *envcore.Box, error) {
	l := x.limits
	measure := l.record != nil && l.record.screenshots
	if l.preview <= 0 && !l.approve && !measure {
		return nil, nil, nil
	}
	acts, parsed := a.actions()
	var target *envcore.Box
	if parsed && measure && len(acts) == 1 {
		// A multi-action step has no one target: the replayer's outline
		// would show its first action's as the whole step's.
		var err error
		if target, err = x.env.TargetBox(ctx, acts[0]); err != nil {
			s.log.Debug("measuring the action's target", zap.String("env", x.id), zap.Error(err))
		}
	}
	if l.preview <= 0 && !l.approve {
		return nil, target, nil
	}
	if parsed {
		// Every action's target is outlined (those on the page now); the
		// person approving reads every line in the echo.
		boxes, err := x.env.PreviewStep(ctx, acts)
		if err != nil {
			s.log.Debug("action preview", zap.String("env", x.id), zap.Error(err))
		}
		if slices.ContainsFunc(boxes, func(b *envcore.Box) bool { return b != nil }) {
			defer func() {
				if err := x.env.Unpreview(context.WithoutCancel(ctx)); err != nil {
					s.log.Debug("removing the action preview", zap.String("env", x.id), zap.Error(err))
				}
			}()
		}
	}
	if !l.approve {
		select {
		case <-time.After(l.preview):
		case <-ctx.Done():
			return nil, target, ctx.Err()
		}
		return nil, target, nil
	}
	r, err := s.board.Ask(ctx, x.id, x.steps+1, a.echo, l.approveTimeout)
	if err != nil {
		return nil, target, err
	}
	return &r, target, nil
}

// rejected is whether r rejects the action.
func rejected(r *trajectory.Review) bool {
	return r != nil && r.Verdict == trajectory.VerdictRejected
}

// noAction stands in for an action a person rejected: the page is observed
// as it is.
var noAction = envcore.Structured(envcore.Action{Type: envcore.Noop})

// refuse makes the observation of a rejected action say so.
func refuse(obs *envcore.Observation, info *envcore.StepInfo, action string, r *trajectory.Review) {
	msg := "a person rejected this action; it was not run"
	if r.By == "timeout" {
		msg = "nobody approved this action in time; it was not run"
	}
	if r.Comment != "" {
		msg += ". Their comment: " + r.Comment
	}
	msg = envcore.ClipEcho(msg)
	obs.LastAction, obs.LastActionError = envcore.ClipEcho(action), msg
	info.ActionError, info.ActionErrorCode = msg, "rejected"
}

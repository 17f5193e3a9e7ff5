package server

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/netroute"
	"github.com/webserv-rl/webserv/trajectory"
	"github.com/webserv-rl/webserv/ui"
)

// How an episode began: the cause in EpisodeEvent and in the reply's
// info.cause.
const (
	CauseMake    = "make"
	CauseReset   = "reset"
	CauseGroup   = "group"   // a group member started from the group's state
	CauseRestore = "restore" // restore of a named snapshot
	CauseFork    = "fork"    // a new environment forked from a snapshot
)

// Observation is an observation as it goes on the wire: envcore's fields
// plus the episode's goal. It is the trajectory format's type, so what is
// sent, recorded and replayed is one type.
type Observation = trajectory.Observation

// EpisodeReply is the reply of every op that begins an episode: make,
// reset, restore, and each environment of a fork.
type EpisodeReply struct {
	Env  string      `json:"env,omitempty"`
	Obs  Observation `json:"obs"`
	Info StepInfo    `json:"info"`
}

// ObserveReply is the reply of observe.
type ObserveReply struct {
	Obs Observation `json:"obs"`
}

// SnapshotReply is the reply of snapshot.
type SnapshotReply struct {
	Name string `json:"name"`
	URL  string `json:"url"`
	Tabs int    `json:"tabs"`
}

// ForkReply is the reply of fork: the new environments' first episodes.
type ForkReply struct {
	Snapshot string          `json:"snapshot"`
	Envs     []*EpisodeReply `json:"envs"`
}

// StepReply is the reply of step.
type StepReply struct {
	Obs        Observation `json:"obs"`
	Reward     *float64    `json:"reward"` // nil (null) when the step was not graded (info.eval_error says why)
	Terminated bool        `json:"terminated"`
	Truncated  bool        `json:"truncated"`
	Info       StepInfo    `json:"info"`
}

// Observer is told of every episode, step and close of every environment:
// the trajectory recorder is one, a live view can be another. Calls run on
// the environment's worker, after the reply is built and before it is
// sent, so an observer must not block.
type Observer interface {
	Began(EpisodeEvent)
	Stepped(StepEvent)
	Closed(ClosedEvent)
}

// EpisodeEvent is an episode that has begun.
type EpisodeEvent struct {
	Env, Site string
	Cause     string // CauseMake, CauseReset, ...
	Episode   Episode
	Reply     *EpisodeReply
	Time      time.Time

	record *recordSpec        // the environment's recording settings
	trace  *netroute.Recorder // the episode's network trace, or nil
	live   ui.Options         // the environment's live-view settings
}

// StepEvent is one step.
type StepEvent struct {
	Env    string
	Step   int
	Action string // the action's string form
	Reply  *StepReply
	Time   time.Time // when the reply was ready
	Began  time.Time // when the action began to run (after preview and review)
	// Review is a person's verdict when the environment asks for approval
	// (make's approve option); nil otherwise.
	Review *trajectory.Review
	// Failure is the infrastructure's fault that ended the episode at
	// this step (site_down, ...): with a nil Reply when the step answered
	// it, with the reply of a terminating step that was not graded.
	Failure *Error
}

// ClosedEvent is an environment that was closed.
type ClosedEvent struct {
	Env, Why string
	Time     time.Time
}

func (s *Server) notify(f func(Observer)) {
	for _, o := range s.observers {
		f(o)
	}
}

// start is the one path by which an episode begins: it prepares the
// environment (prepare) and begins the episode (begin). A group member
// whose start page is known beforehand begins first and is prepared on its
// worker right after (group.go).
func (s *Server) start(ctx context.Context, x *session, cause string, inst Instance, ep Episode,
	load loader) (*EpisodeReply, error) {
	obs, info, e := s.prepare(ctx, x, inst, &ep, load)
	if e != nil {
		return nil, e
	}
	return s.begin(x, cause, ep, x.reply(ep, obs, info)), nil
}

// reply is begin's reply for an episode's first observation.
func (x *session) reply(ep Episode, obs envcore.Observation, info envcore.StepInfo) func() *EpisodeReply {
	return func() *EpisodeReply {
		r := &EpisodeReply{Env: x.id, Info: wireInfo(info, x)}
		r.Info.ObsStats = &obs.Stats
		r.Info.Restart = ep.restart
		reportRefusals(x, &obs, &r.Info)
		r.Obs = Observation{Observation: obs, Goal: ep.Goal}
		return r
	}
}

// loader loads an episode's browser side: a reset to the start page
// (which may set the episode's goal from its page) or a rebuild of
// captured browser state.
type loader func(ctx context.Context, ep *Episode) (envcore.Observation, envcore.StepInfo, error)

// prepare binds inst to the environment and loads the browser side.
func (s *Server) prepare(ctx context.Context, x *session, inst Instance, ep *Episode, load loader) (envcore.Observation, envcore.StepInfo, error) {
	s.bind(x, inst)
	x.net.NewEpisode()
	if err := x.startAttack(ctx, ep); err != nil {
		return envcore.Observation{}, envcore.StepInfo{}, err
	}
	s.traceEpisode(x, *ep)
	obs, info, err := load(ctx, ep)
	if err != nil {
		return obs, info, err
	}
	if err := x.keepStartState(ctx, ep); err != nil {
		return obs, info, err
	}
	return obs, info, nil
}

// resetTo is start's load for a fresh start: the episode's start page, with
// its cookies, and its start script, whose string value (when not empty)
// is the episode's goal.
func (x *session) resetTo() loader {
	return func(ctx context.Context, ep *Episode) (envcore.Observation, envcore.StepInfo, error) {
		var goal any
		obs, info, err := x.env.ResetWith(ctx, ep.StartURL, envcore.ResetOptions{Cookies: ep.Cookies, Start: ep.Start, StartResult: &goal, Clock: ep.Clock})
		if g, ok := goal.(string); ok && g != "" && err == nil {
			ep.Goal = g
		}
		if ep.Start != "" {
			ep.restart = RestartReload
		}
		return obs, info, err
	}
}

// restartIn is a reset's load for an episode whose page runs its own
// episodes and can start the next one in place (Episode.Restart): in the
// page the environment has, when the last episode started at the same start
// page and the page agrees (envcore.Env.RestartInPlace), else as resetTo.
func (x *session) restartIn(log *zap.Logger, last string) loader {
	return func(ctx context.Context, ep *Episode) (envcore.Observation, envcore.StepInfo, error) {
		if ep.Restart == "" || ep.Start == "" || last != ep.StartURL || len(ep.Cookies) > 0 {
			return x.resetTo()(ctx, ep)
		}
		var goal any
		obs, info, ok, err := x.env.RestartInPlace(ctx, ep.Restart, &goal)
		if err != nil || !ok {
			if err != nil {
				log.Info("an in-place restart failed: loading the page afresh", zap.String("env", x.id), zap.Error(err))
			}
			return x.resetTo()(ctx, ep)
		}
		if g, ok := goal.(string); ok && g != "" {
			ep.Goal = g
		}
		ep.restart = RestartInPlace
		return obs, info, nil
	}
}

// rebuild is start's load for a captured state.
//
// An episode whose page runs its own episode (Episode.Start: MiniWoB)
// keeps its instance in the page's JavaScript, which no captured state
// carries: it starts again from its start page and start script, the same
// seed giving the same instance.
func (x *session) rebuild(st envcore.BrowserState) loader {
	return func(ctx context.Context, ep *Episode) (envcore.Observation, envcore.StepInfo, error) {
		if ep.Start != "" {
			return x.resetTo()(ctx, ep)
		}
		return x.env.RestoreState(ctx, st)
	}
}

// begin resets the episode's bookkeeping (clock, steps, over, a failed
// start), builds the reply and tells the observers.
func (s *Server) begin(x *session, cause string, ep Episode, reply func() *EpisodeReply) *EpisodeReply {
	x.episode, x.started, x.steps, x.over, x.failed, x.grade, x.down, x.played = ep, time.Now(), 0, "", nil, 0, nil, nil
	if x.net != nil {
		x.net.TakeUnreachable() // the last episode's
	}
	r := reply()
	r.Info.Cause = cause
	s.notify(func(o Observer) {
		o.Began(EpisodeEvent{Env: x.id, Site: x.site, Cause: cause, Episode: ep, Reply: r, Time: time.Now(), record: x.limits.record, trace: x.trace,
			live: ui.Options{Approve: x.limits.approve, PreviewMS: int(x.limits.preview.Milliseconds())}})
	})
	return r
}

package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/attack"
	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/netroute"
)

// session is one environment: a browser side (env), the site instance it
// holds (inst) and its own view of the network (net), which routes the
// canonical origins of inst's sites to inst and applies its policy to
// everything else. Its requests run one at a time, in arrival order, on its
// own worker goroutine.
//
// Every way an environment gets an instance goes through bind, and every
// way an episode begins (make, reset, a group member's start, restore,
// fork) goes through start (episode.go).
type session struct {
	id       string
	site     string
	env      *envcore.Env
	inst     Instance
	net      *netroute.Table
	trace    *netroute.Recorder // the episode's network trace, or nil (trace.go)
	jobs     chan func()
	done     chan struct{}
	lastUsed atomic.Int64 // unix nanoseconds
	closed   atomic.Bool
	owner    atomic.Pointer[conn] // the connection that made or last used it

	// Touched only by the worker.
	episode Episode
	started time.Time
	steps   int
	over    string // why the episode is over: terminated, truncated
	// grade is the episode's last grade (0 before its first), the base of
	// the next step's reward: each reward is the change in the grade.
	grade  float64
	limits limits
	// played are the actions the episode ran, in order, since its start
	// (a fork's include its parent's): what a replay plays again
	// (forkexact.go).
	played []envcore.Parsed
	snaps  map[string]snapshotInfo
	spec   MakeSpec
	joined *group // the group make joined (consumed by the first episode)
	leads  bool
	// prepared is a group member's preparation, which its worker runs
	// before any further request (group.go); failed is its error, the
	// answer to every request but reset and close until a reset.
	prepared func()
	failed   error
	// down is the site_down error of an episode whose site instance or
	// route died (health.go): its steps answer it until a reset.
	down *Error
	// arun is the episode's attack, nil for none (attack.go); seed is
	// the seed of the reset that began the episode (0 when none), which
	// draws its attack's words and places.
	arun *attack.Run
	seed int64
	// episodeAttack is the last reset's options.attack, which replaces
	// make's for its episode (nil: make's).
	episodeAttack *attack.Spec
	// engine is what the environment does on its ops: a real browser
	// (liveEngine), or a dream (dreamEngine) with no env or inst.
	engine engine
	// The group whose members may still fork this (leader's) instance's
	// snapshot: its next reset or close waits for them (group.lent).
	lending atomic.Pointer[group]
	// The directory of the state database's copy at the episode's start
	// (make's state_diff, statediff.go).
	stateDir atomic.Pointer[string]
}

// limits are an environment's per-episode settings from make; forks
// inherit them.
type limits struct {
	maxSteps  int
	timeLimit time.Duration
	stepLimit time.Duration
	everyStep bool        // grade after every step (make's evaluate_every_step)
	record    *recordSpec // nil: not recorded
	stateDiff bool        // keep the state database at each start (make's state_diff)
	// sideEffects is make's side_effects: "" (the task's), report, fail
	// or off (sideeffects.go).
	sideEffects string
	// The live view's (live.go): wait for a person's verdict on each
	// action, or for preview with the target outlined.
	approve        bool
	approveTimeout time.Duration
	preview        time.Duration
	// attack is make's attack, nil for none (attack.go).
	attack *attack.Spec
}

// startFailed is the answer to op when the environment's preparation
// failed: every op but reset and close is refused with why.
func (x *session) startFailed(op string) error {
	if x == nil || x.failed == nil || op == "reset" || op == "close" {
		return nil
	}
	return x.failed
}

func (x *session) touch() { x.lastUsed.Store(time.Now().UnixNano()) }

func (x *session) work() {
	for {
		if f := x.prepared; f != nil {
			x.prepared = nil
			f()
		}
		select {
		case job := <-x.jobs:
			x.touch()
			job()
			x.touch()
		case <-x.done:
			return
		}
	}
}

// enqueue runs job on the session's worker. It fails only when the session
// is closed.
func (x *session) enqueue(job func()) bool {
	if x.closed.Load() {
		return false
	}
	select {
	case x.jobs <- job:
		return true
	case <-x.done:
		return false
	}
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "env-" + hex.EncodeToString(b[:])
}

func (s *Server) session(id string) (*session, error) {
	if id == "" {
		return nil, errorf(CodeBadArgs, false, "this op needs env, the id make returned")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	x, ok := s.sessions[id]
	if !ok {
		return nil, errorf(CodeUnknownEnv, false, "no environment %q: it was closed, reclaimed after %s idle, or never made; make a new one", id, s.cfg.TTL)
	}
	return x, nil
}

// awaitCreating takes one of the MaxCreating places for a make. When all
// are taken it waits, in arrival order (a channel serves blocked senders
// first come, first served), for up to CreateWait, and only then answers
// capacity: a burst of makes from a rollout batch is paced by the server
// instead of turning into a storm of client retries. Call release when
// the make is done.
func (s *Server) awaitCreating(ctx context.Context) (release func(), e error) {
	release = func() { <-s.creating }
	select {
	case s.creating <- struct{}{}:
		return release, nil
	default:
	}
	s.queued.Add(1)
	defer s.queued.Add(-1)
	wait := time.NewTimer(s.cfg.CreateWait)
	defer wait.Stop()
	select {
	case s.creating <- struct{}{}:
		return release, nil
	case <-wait.C:
		e := errorf(CodeCapacity, true, "%d environments are being created and %d more were waiting for %s; retry shortly, or let fewer start at once", s.cfg.MaxCreating, s.queued.Load()-1, s.cfg.CreateWait)
		e.RetryAfter = 1
		return nil, e
	case <-s.stop:
		return nil, wireError(errShuttingDown)
	case <-ctx.Done():
		return nil, errorf(CodeTimeout, true, "no place to create the environment before the request's deadline: %v", ctx.Err())
	}
}

// reserve takes a slot for a new environment, or answers capacity. The
// environment belongs to owner (nil: to no connection).
func (s *Server) reserve(owner *conn) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return nil, wireError(errShuttingDown)
	}
	if len(s.sessions) >= s.cfg.MaxEnvs {
		e := errorf(CodeCapacity, true, "%d environments are open, the most this server allows; close one or retry later", len(s.sessions))
		e.RetryAfter = 5
		return nil, e
	}
	x := &session{id: newID(), jobs: make(chan func(), 64), done: make(chan struct{}), engine: liveEngine{}}
	x.owner.Store(owner)
	x.touch()
	s.sessions[x.id] = x
	s.metrics.envsLive.Set(float64(len(s.sessions)))
	return x, nil
}

// open gives a reserved session its browser side and its network, with the
// settings of make (or of the parent, for a fork).
func (s *Server) open(x *session, site string, spec MakeSpec, cfg envcore.Config, l limits) error {
	x.site, x.spec, x.limits = site, spec, l
	if l.record != nil {
		// Recordings always carry the accessibility tree (both export
		// recipes use it), and screenshots when asked.
		cfg.Observe.AXTree = true
		cfg.Observe.Screenshot = cfg.Observe.Screenshot || l.record.screenshots
	}
	x.net = netroute.NewTable(netroute.Policy{})
	x.env = s.browser.NewEnv(cfg)
	if err := x.env.SetNetwork(tableNetwork{x.net}); err != nil {
		return errorf(CodeInternal, false, "%v", err)
	}
	return nil
}

// bind makes inst the environment's instance: from now on its canonical
// origins lead to inst and its policy applies. The browser never learns an
// instance's own address, so rebinding (a reset onto a new container, a
// group member's or a fork's copy) changes nothing the agent sees.
func (s *Server) bind(x *session, inst Instance) {
	x.inst = inst
	n := inst.Network()
	for _, o := range x.net.Origins() {
		if _, keep := n.Origins[o]; !keep {
			x.net.Remove(o)
		}
	}
	for o, d := range n.Origins {
		if err := x.net.Set(o, d); err != nil {
			// Origins are checked when sites load; this is a bug.
			s.log.Error("routing an origin", zap.String("env", x.id), zap.String("origin", o), zap.Error(err))
		}
	}
	x.net.SetPolicy(n.Policy)
}

func (s *Server) drop(x *session) {
	s.mu.Lock()
	delete(s.sessions, x.id)
	s.metrics.envsLive.Set(float64(len(s.sessions)))
	s.mu.Unlock()
}

// closeSession closes an environment once, whatever its worker is doing.
func (s *Server) closeSession(x *session, why string) {
	if !x.closed.CompareAndSwap(false, true) {
		return
	}
	s.drop(x)
	close(x.done)
	s.notify(func(o Observer) { o.Closed(ClosedEvent{Env: x.id, Why: why, Time: time.Now()}) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if x.env != nil {
		if err := x.env.Close(); err != nil {
			s.log.Warn("closing environment", zap.String("env", x.id), zap.Error(err))
		}
	}
	if g := x.lending.Swap(nil); g != nil {
		g.lent()
	}
	if x.inst != nil {
		if err := x.inst.Close(ctx); err != nil {
			s.log.Warn("closing site instance", zap.String("env", x.id), zap.Error(err))
		}
	}
	if x.net != nil {
		x.net.Close()
	}
	x.dropStartState()
	s.log.Info("environment closed", zap.String("env", x.id), zap.String("why", why))
}

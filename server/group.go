package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
)

// Group reset: every member of a GRPO group must start from the same state.
// N environments that reset with the same options.group_key (and site and
// task) converge on one start state: the first to arrive (the leader)
// starts its episode as usual, captures its browser state and snapshots its
// site instance; each later member gets a fork of that snapshot and
// rebuilds the browser state on it. All start from identical pages, each on
// its own copy of the site.
//
// A member whose environment is configured as the leader's (viewport,
// observation parts, settle settings) would see the leader's first page, so
// its reset is answered with that page at once, and the fork and rebuild
// run on the member's worker right after, before any further request of
// it: the fork overlaps the trainer's generation instead of adding to the
// group's reset. A member's step waits for them; if they fail, every
// request but reset and close answers why.
//
// So that members keep coming after the leader has moved on, the group also
// builds a base of its own in the background: one fork of the leader's
// snapshot, snapshotted in turn. Members fork the leader's snapshot until
// the base exists and the base after; the leader's next reset or close
// waits until the base is built and no member is still forking from it, so
// its snapshot cannot vanish under them. A group lives for the server's
// TTL. A site without snapshots (open) gives every member an ordinary reset
// at the same start URL.

type group struct {
	key     string
	created time.Time
	ready   chan struct{} // closed once the leader's start state exists
	failed  atomic.Bool   // no shared start state: members reset on their own

	// Set by the leader before ready is closed, then read-only.
	snap    string               // the snapshot name, on the leader and on the base
	state   envcore.BrowserState // the leader's browser state
	episode Episode
	cfg     envcore.Config // the leader's environment settings
	reply   *EpisodeReply  // the leader's first observation

	// Members waiting for the start state: the base is built once no
	// member waits and none forks the leader's snapshot.
	waiting atomic.Int32

	mu        sync.Mutex
	src       Snapshotter   // what members fork: the leader's instance, then the base
	base      Instance      // the group's own copy, once built
	forking   int           // member forks of the leader's snapshot in flight
	forked    *sync.Cond    // on mu: broadcast when forking drops to 0
	baseReady chan struct{} // closed once the base is built (or failed)
}

func groupKey(x *session, key string, opts EpisodeOptions) string {
	h := sha256.Sum256([]byte(key + "\x00" + x.site + "\x00" + opts.Task + "\x00" + opts.StartURL))
	return hex.EncodeToString(h[:8])
}

// joinGroup returns the group for key, and whether the caller leads it.
func (s *Server) joinGroup(key string) (*group, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.groups[key]
	if ok && !g.failed.Load() && time.Since(g.created) < s.cfg.TTL {
		return g, false
	}
	g = &group{key: key, ready: make(chan struct{}), created: time.Now()}
	g.forked = sync.NewCond(&g.mu)
	s.groups[key] = g
	return g, true
}

// forkable reports whether members can fork the group's start state. A
// group whose leader is still preparing counts as forkable when its site
// has snapshots, which a member learns only once the leader is done; a
// member made meanwhile without an instance gets one if it turns out not.
func (g *group) forkable() bool {
	select {
	case <-g.ready:
		g.mu.Lock()
		defer g.mu.Unlock()
		return !g.failed.Load() && g.src != nil
	default:
		return true
	}
}

// source returns what a member forks now; done must be called when the
// fork is over.
func (g *group) source() (sn Snapshotter, done func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.src == nil {
		return nil, func() {}
	}
	if g.base == nil {
		g.forking++
		return g.src, func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			if g.forking--; g.forking == 0 {
				g.forked.Broadcast()
			}
		}
	}
	return g.src, func() {}
}

// forksOfLeader is how many member forks of the leader's snapshot are in
// flight.
func (g *group) forksOfLeader() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.forking
}

// lent waits until the leader's instance is no longer needed by the
// group: the base is built and no member forks from the leader's snapshot.
func (g *group) lent() {
	if g.baseReady == nil {
		return
	}
	<-g.baseReady
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.forking > 0 {
		g.forked.Wait()
	}
}

// groupEpisode starts x's episode as a member of the group key.
func (s *Server) groupEpisode(ctx context.Context, x *session, key string, opts EpisodeOptions, cause string) (*EpisodeReply, error) {
	g, leader := x.joined, x.leads
	x.joined = nil
	if g == nil {
		g, leader = s.joinGroup(groupKey(x, key, opts))
	}
	if leader {
		// Timed for the debug log, as are a member's wait, fork and start.
		t0 := time.Now()
		r, e := s.episode(ctx, x, opts, cause)
		t1 := time.Now()
		r, e = s.leadGroup(ctx, x, g)(r, e)
		s.log.Debug("group start state prepared", zap.String("group", g.key), zap.Duration("episode", t1.Sub(t0)), zap.Duration("share", time.Since(t1)))
		return r, e
	}
	tw := time.Now()
	g.waiting.Add(1)
	select {
	case <-g.ready:
	case <-ctx.Done():
		g.waiting.Add(-1)
		return nil, errorf(CodeTimeout, true, "waited too long for the group's first member to prepare the start state")
	}
	src, done := g.source()
	g.waiting.Add(-1)
	if g.failed.Load() || src == nil {
		done()
		// No snapshot to share (or the leader failed): an ordinary reset,
		// on an instance of its own.
		res, e := s.episode(ctx, x, opts, cause)
		if res != nil {
			res.Info.GroupRole = "member"
		}
		return res, e
	}
	s.log.Debug("group member waited", zap.String("group", g.key), zap.Duration("wait", time.Since(tw)))
	if x.env.Config() != g.cfg {
		// Set up unlike the leader: its first page is its own.
		obs, info, e := s.forkMember(ctx, x, g, src, done)
		if e != nil {
			return nil, e
		}
		res := s.begin(x, CauseGroup, g.episode, x.reply(g.episode, obs, info))
		res.Info.GroupRole = "member"
		return res, nil
	}
	x.prepared = func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.StepTimeout)
		defer cancel()
		go func() { // a close or the server's stop ends the preparation
			select {
			case <-x.done:
			case <-s.stop:
			case <-ctx.Done():
			}
			cancel()
		}()
		obs, _, e := s.forkMember(ctx, x, g, src, done)
		switch {
		case e != nil:
			we := wireError(e)
			x.failed = errorf(we.Code, we.Retryable, "this group member's start failed: %s; reset it to start again", we.Message)
		case obs.HTML != g.reply.Obs.HTML:
			s.log.Warn("a group member's first page differs from the leader's", zap.String("env", x.id), zap.String("group", g.key))
		}
	}
	return s.begin(x, CauseGroup, g.episode, func() *EpisodeReply {
		r := &EpisodeReply{Env: x.id, Obs: g.reply.Obs, Info: g.reply.Info}
		r.Info.GroupRole, r.Info.Preparing = "member", true
		return r
	}), nil
}

// forkMember gives member x a fork of the group's start state, from src
// (done is called once the fork is made), and rebuilds the leader's browser
// state on it.
func (s *Server) forkMember(ctx context.Context, x *session, g *group, src Snapshotter, done func()) (envcore.Observation, envcore.StepInfo, error) {
	tf := time.Now()
	forks, err := src.Fork(ctx, g.snap, 1)
	done()
	tr := time.Now()
	defer func() {
		s.log.Debug("group member forked", zap.String("group", g.key), zap.Duration("fork", tr.Sub(tf)), zap.Duration("start", time.Since(tr)))
	}()
	if err != nil {
		return envcore.Observation{}, envcore.StepInfo{}, snapshotError(g.snap, err)
	}
	if x.closed.Load() {
		s.closeInstance(forks[0], "a fork for a group member closed meanwhile")
		return envcore.Observation{}, envcore.StepInfo{}, errorf(CodeUnknownEnv, false, "environment %s was closed", x.id)
	}
	if old := x.inst; old != nil {
		go s.closeInstance(old, "a group member's own instance")
	}
	return s.prepare(ctx, x, forks[0], &g.episode, x.rebuild(g.state))
}

// closeInstance closes an instance the server no longer needs.
func (s *Server) closeInstance(inst Instance, what string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := inst.Close(ctx); err != nil {
		s.log.Warn("closing "+what, zap.Error(err))
	}
}

// leadGroup returns what finishes the leader's episode: on success its
// browser state is captured and its instance snapshotted for the members
// (and the group's base started in the background); either way the members
// waiting are let go.
func (s *Server) leadGroup(ctx context.Context, x *session, g *group) func(*EpisodeReply, error) (*EpisodeReply, error) {
	return func(res *EpisodeReply, e error) (*EpisodeReply, error) {
		defer close(g.ready)
		if e != nil {
			g.failed.Store(true)
			return res, e
		}
		res.Info.GroupRole = "leader"
		g.episode = x.episode
		g.episode.carried = true // members fork the leader's site, data and all
		sn, ok := x.inst.(Snapshotter)
		if !ok {
			return res, nil
		}
		st, err := x.env.CaptureState(ctx)
		if err == nil {
			g.snap = "group-" + g.key
			err = sn.Snapshot(ctx, g.snap)
		}
		if err != nil {
			s.log.Warn("group start state not shared; members get ordinary resets", zap.Error(err))
			return res, nil
		}
		g.state, g.cfg, g.reply = st, x.env.Config(), res
		g.baseReady = make(chan struct{})
		g.mu.Lock()
		g.src = sn
		g.mu.Unlock()
		x.lending.Store(g)
		go s.buildGroupBase(g, sn)
		return res, nil
	}
}

// baseDefer bounds how long a group's base waits for its first members'
// forks.
const baseDefer = 10 * time.Second

// buildGroupBase forks the leader's snapshot into the group's own base and
// snapshots it, then points the members there.
func (s *Server) buildGroupBase(g *group, leader Snapshotter) {
	defer close(g.baseReady)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	// The members that were waiting for the start state fork first: the
	// base is for later members, and building it alongside would slow
	// the group's reset by one more container start.
	if s.baseGate != nil {
		select {
		case <-s.baseGate:
		case <-ctx.Done():
		}
	}
	for wait := time.Now().Add(baseDefer); (g.waiting.Load() > 0 || g.forksOfLeader() > 0) && time.Now().Before(wait) && ctx.Err() == nil; {
		time.Sleep(20 * time.Millisecond)
	}
	base, err := func() (Instance, error) {
		forks, err := leader.Fork(ctx, g.snap, 1)
		if err != nil {
			return nil, err
		}
		sn, ok := forks[0].(Snapshotter)
		if !ok {
			_ = forks[0].Close(ctx)
			return nil, errors.New("the site's fork has no snapshots")
		}
		if err := sn.Snapshot(ctx, g.snap); err != nil {
			_ = forks[0].Close(ctx)
			return nil, err
		}
		return forks[0], nil
	}()
	if err != nil {
		// Later members start a new group; those forking now finish first.
		s.log.Warn("group base not built; later members start a new group", zap.Error(err))
		g.failed.Store(true)
		g.mu.Lock()
		g.src = nil
		g.mu.Unlock()
		return
	}
	// Under both locks, so that closeGroups either finds the base or the
	// group already gone.
	s.mu.Lock()
	kept := !s.closing && s.groups[g.key] == g
	if kept {
		g.mu.Lock()
		g.base, g.src = base, base.(Snapshotter)
		g.mu.Unlock()
	}
	s.mu.Unlock()
	if !kept { // expired or shut down meanwhile
		_ = base.Close(ctx)
	}
}

// closeGroups closes the group bases of expired groups (all with force).
func (s *Server) closeGroups(force bool) {
	s.mu.Lock()
	var gone []*group
	for k, g := range s.groups {
		if force || time.Since(g.created) > s.cfg.TTL {
			delete(s.groups, k)
			gone = append(gone, g)
		}
	}
	s.mu.Unlock()
	for _, g := range gone {
		g.mu.Lock()
		b := g.base
		g.base, g.src = nil, nil
		g.mu.Unlock()
		if b == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := b.Close(ctx); err != nil {
			s.log.Warn("closing a group base", zap.Error(err))
		}
		cancel()
	}
}

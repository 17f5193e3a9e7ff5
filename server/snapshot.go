package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/hosting"
)

// What a snapshot captures: the site instance's state (its container or
// data directory, through the hosting backend) and the browser's state
// (envcore.BrowserState: cookies; each tab's history, storage, form fields
// and scroll), and the episode's place: its actions since its start and
// its grade. Restore and fork rebuild the browser state in a fresh browser
// context, or replay the episode where its page keeps its state in
// JavaScript (forkexact.go).
type snapshotInfo struct {
	url   string
	state envcore.BrowserState
	taken time.Time
	// obs is the parent's observation at the snapshot, hash its page hash:
	// what a fork's first observation is verified against.
	obs  envcore.Observation
	hash string
	// The episode, its actions since its start and its grade then.
	episode Episode
	played  []envcore.Parsed
	grade   float64
}

// checkSnapshotName refuses an empty snapshot name.
func checkSnapshotName(name string) error {
	if name == "" {
		return errorf(CodeBadArgs, false, "this op needs name, the snapshot's name (letters, digits, - and _)")
	}
	return nil
}

func (s *Server) snapshot(ctx context.Context, x *session, sn Snapshotter, name string) (*SnapshotReply, error) {
	if err := checkSnapshotName(name); err != nil {
		return nil, err
	}
	// Observed as a fork's first observation will be (the environment's
	// observe settings), to verify the fork against.
	obs, err := x.env.Observe(ctx, x.env.Config().Observe)
	if err != nil {
		return nil, err
	}
	st, err := x.env.CaptureState(ctx)
	if err != nil {
		return nil, err
	}
	if err := sn.Snapshot(ctx, name); err != nil {
		return nil, snapshotError(name, err)
	}
	if x.snaps == nil {
		x.snaps = map[string]snapshotInfo{}
	}
	x.snaps[name] = snapshotInfo{url: obs.URL, state: st, taken: time.Now(), obs: obs, hash: obs.PageHash(),
		episode: x.episode, played: slices.Clone(x.played), grade: x.grade}
	return &SnapshotReply{Name: name, URL: obs.URL, Tabs: len(st.Tabs)}, nil
}

func (s *Server) restore(ctx context.Context, x *session, sn Snapshotter, name string) (*EpisodeReply, error) {
	if err := checkSnapshotName(name); err != nil {
		return nil, err
	}
	snap, ok := x.snaps[name]
	if !ok {
		return nil, errorf(CodeBadArgs, false, "environment %s has no snapshot %q; take one with snapshot first", x.id, name)
	}
	if err := sn.Restore(ctx, name); err != nil {
		return nil, snapshotError(name, err)
	}
	ep := x.episode
	if snap.episode.Start != "" {
		ep = snap.episode // the replay starts the snapshot's episode again
	}
	return s.startFrom(ctx, x, CauseRestore, x.inst, ep, name, snap)
}

// fork makes n new environments from a snapshot (taking one named
// "fork-<time>" when no name is given), each at the snapshot's page on its
// own copy of the site.
func (s *Server) fork(ctx context.Context, owner *conn, x *session, sn Snapshotter, a *forkArgs) (*ForkReply, error) {
	n := a.N
	if n < 1 || n > s.cfg.MaxEnvs {
		return nil, errorf(CodeBadArgs, false, "fork needs n, the number of new environments (1 to %d)", s.cfg.MaxEnvs)
	}
	name := a.Name
	if name == "" {
		name = fmt.Sprintf("fork-%d", time.Now().UnixNano())
		if _, e := s.snapshot(ctx, x, sn, name); e != nil {
			return nil, e
		}
	}
	snap, ok := x.snaps[name]
	if !ok {
		return nil, errorf(CodeBadArgs, false, "environment %s has no snapshot %q; take one with snapshot first", x.id, name)
	}
	sessions := make([]*session, 0, n)
	release := func() {
		for _, y := range sessions {
			s.drop(y)
		}
	}
	for i := 0; i < n; i++ {
		y, e := s.reserve(owner)
		if e != nil {
			release()
			return nil, e
		}
		sessions = append(sessions, y)
	}
	insts, err := sn.Fork(ctx, name, n)
	if err != nil {
		release()
		return nil, snapshotError(name, err)
	}
	// Each fork rebuilds the browser state in its own context; they are
	// independent, so they run in parallel.
	out := make([]*EpisodeReply, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, y := range sessions {
		if e := s.open(y, x.site, x.spec, x.env.Config(), x.limits); e != nil {
			errs[i] = e
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ep := x.episode
			ep.StartURL = snap.url
			if snap.episode.Start != "" {
				ep = snap.episode // the replay starts the snapshot's episode again
			}
			res, e := s.startFrom(ctx, y, CauseFork, insts[i], ep, name, snap)
			if e != nil {
				errs[i] = e
				return
			}
			go y.work()
			out[i] = res
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for i, y := range sessions {
			if y.inst == nil {
				_ = insts[i].Close(ctx)
			}
			s.closeSession(y, "fork failed")
		}
		return nil, errorf(CodeBackend, true, "fork: %v", err)
	}
	s.log.Info("environment forked", zap.String("env", x.id), zap.String("snapshot", name), zap.Int("n", n))
	return &ForkReply{Snapshot: name, Envs: out}, nil
}

func snapshotError(name string, err error) error {
	if errors.Is(err, hosting.ErrNoSnapshot) {
		return errorf(CodeBadArgs, false, "no snapshot %q: %v", name, err)
	}
	if errors.Is(err, hosting.ErrBadSnapshotName) {
		return errorf(CodeBadArgs, false, "%v", err)
	}
	return errorf(CodeBackend, true, "snapshot %q: %v", name, err)
}

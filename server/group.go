package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
)

// Group reset: every member of a GRPO group must start from the same state.
// N environments that reset with the same options.group_key (and site and
// task) converge on one base: the first to arrive (the leader) starts its
// episode as usual and captures its browser state; its site instance is
// snapshotted and forked once into a base instance that the group owns
// (so the leader may reset or close), and each later member replaces its
// own instance with a fork of that base and rebuilds the browser state on
// it. All start from identical pages, each on its own copy of the site. A
// group lives for the server's TTL. A site without snapshots (open) gives
// every member an ordinary reset at the same start URL.

type group struct {
	ready   chan struct{} // closed once the leader's start state exists
	base    Instance      // the group's own copy of the start state
	sn      Snapshotter   // base, when the site has snapshots
	snap    string
	state   envcore.BrowserState
	episode Episode
	failed  bool
	created time.Time
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
	if ok && !g.failed && time.Since(g.created) < s.cfg.TTL {
		return g, false
	}
	g = &group{ready: make(chan struct{}), created: time.Now()}
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
		return !g.failed && g.sn != nil
	default:
		return true
	}
}

// episodeOptions reads the options that identify a group's start state.
func episodeOptions(o args) EpisodeOptions {
	var opts EpisodeOptions
	opts.Task, _ = o.str("task")
	opts.StartURL, _ = o.str("start_url")
	return opts
}

// groupEpisode starts x's episode as a member of the group key.
func (s *Server) groupEpisode(ctx context.Context, x *session, key string, opts EpisodeOptions) (map[string]any, *Error) {
	g, leader := x.joined, x.leads
	x.joined = nil
	if g == nil {
		g, leader = s.joinGroup(groupKey(x, key, opts))
	}
	if leader {
		res, e := s.episode(ctx, x, opts)
		if e == nil {
			g.episode = x.episode
			if sn, ok := x.inst.(Snapshotter); ok {
				g.snap = "group-" + groupKey(x, key, opts)
				if err := s.groupBase(ctx, x, sn, g); err != nil {
					s.log.Warn("group base not made; members get ordinary resets", zap.Error(err))
				}
			}
		} else {
			g.failed = true
		}
		close(g.ready)
		if res != nil {
			res["info"].(map[string]any)["group_role"] = "leader"
		}
		return res, e
	}
	select {
	case <-g.ready:
	case <-ctx.Done():
		return nil, errorf(CodeTimeout, true, "waited too long for the group's first member to prepare the start state")
	}
	if g.failed || g.sn == nil {
		// No snapshot to share (or the leader failed): an ordinary reset,
		// on an instance of its own.
		if x.inst == nil {
			inst, err := s.factory.Make(ctx, x.spec)
			if err != nil {
				return nil, errorf(CodeBadArgs, false, "%v", err)
			}
			x.inst = inst
		}
		res, e := s.episode(ctx, x, opts)
		if res != nil {
			res["info"].(map[string]any)["group_role"] = "member"
		}
		return res, e
	}
	forks, err := g.sn.Fork(ctx, g.snap, 1)
	if err != nil {
		return nil, snapshotError(g.snap, err)
	}
	old := x.inst
	x.inst = forks[0]
	if old != nil {
		_ = old.Close(ctx)
	}
	rebase := rebaser(g.sn.BaseURL(), forks[0])
	x.episode = g.episode
	x.episode.StartURL = rebase(g.episode.StartURL)
	obs, info, err := x.env.RestoreState(ctx, g.state, rebase)
	if err != nil {
		return nil, envError(err)
	}
	x.started, x.steps, x.over = time.Now(), 0, ""
	wi := wireInfo(info, x)
	wi["group_role"] = "member"
	return map[string]any{"obs": wireObs(obs, x), "info": wi}, nil
}

// groupBase captures the leader's browser state and forks its site into an
// instance the group owns, snapshotted for the members to fork.
func (s *Server) groupBase(ctx context.Context, x *session, sn Snapshotter, g *group) error {
	st, err := x.env.CaptureState(ctx)
	if err != nil {
		return err
	}
	if err := sn.Snapshot(ctx, g.snap); err != nil {
		return err
	}
	forks, err := sn.Fork(ctx, g.snap, 1)
	if err != nil {
		return err
	}
	base, ok := forks[0].(Snapshotter)
	if !ok {
		_ = forks[0].Close(ctx)
		return errors.New("the site's fork has no snapshots")
	}
	if err := base.Snapshot(ctx, g.snap); err != nil {
		_ = forks[0].Close(ctx)
		return err
	}
	// The browser state's URLs point at the leader's instance; the members
	// rebase them from the base's address.
	rebase := rebaser(sn.BaseURL(), forks[0])
	for i := range st.Tabs {
		for j, u := range st.Tabs[i].History {
			st.Tabs[i].History[j] = rebase(u)
		}
	}
	g.episode.StartURL = rebase(g.episode.StartURL)
	g.base, g.sn, g.state = forks[0], base, st
	return nil
}

// closeGroups closes the group bases of expired groups (all with force).
func (s *Server) closeGroups(force bool) {
	s.mu.Lock()
	var bases []Instance
	for k, g := range s.groups {
		if force || time.Since(g.created) > s.cfg.TTL {
			delete(s.groups, k)
			if g.base != nil {
				bases = append(bases, g.base)
			}
		}
	}
	s.mu.Unlock()
	for _, b := range bases {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := b.Close(ctx); err != nil {
			s.log.Warn("closing a group base", zap.Error(err))
		}
		cancel()
	}
}

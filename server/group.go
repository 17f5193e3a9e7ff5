package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/webserv-rl/webserv/envcore"
)

// Group reset: every member of a GRPO group must start from the same state.
// N environments that reset with the same options.group_key (and site and
// task) converge on one base: the first to arrive (the leader) starts its
// episode as usual, then snapshots its site instance and its browser state;
// each later member replaces its own instance with a fork of that snapshot
// and rebuilds the browser state on it. All start from identical pages,
// each on its own copy of the site. A site without snapshots (open) gives
// every member an ordinary reset at the same start URL.

type group struct {
	ready   chan struct{} // closed once the leader's start state exists
	leader  *session
	sn      Snapshotter // the leader's instance, when it has snapshots
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
	if ok && !g.failed && (g.leader == nil || !g.leader.closed.Load()) && time.Since(g.created) < s.cfg.TTL {
		return g, false
	}
	g = &group{ready: make(chan struct{}), created: time.Now()}
	s.groups[key] = g
	return g, true
}

// groupEpisode starts x's episode as a member of the group key.
func (s *Server) groupEpisode(ctx context.Context, x *session, key string, opts EpisodeOptions) (map[string]any, *Error) {
	g, leader := s.joinGroup(groupKey(x, key, opts))
	if leader {
		res, e := s.episode(ctx, x, opts)
		if e == nil {
			g.leader, g.episode = x, x.episode
			if sn, ok := x.inst.(Snapshotter); ok {
				g.snap = "group-" + groupKey(x, key, opts)
				st, err := x.env.CaptureState(ctx)
				if err == nil {
					err = sn.Snapshot(ctx, g.snap)
				}
				if err == nil {
					g.sn, g.state = sn, st
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
		// No snapshot to share (or the leader failed): an ordinary reset.
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

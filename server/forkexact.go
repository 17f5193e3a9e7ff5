package server

import (
	"context"
	"fmt"
	"slices"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
)

// How a restore or a fork made its environment from a snapshot (info.fork.how).
const (
	// HowRebuild rebuilt the captured browser state (cookies; each tab's
	// history, storage, fields and scroll) on the snapshot's copy of the
	// site: the state a page keeps only in JavaScript memory is lost.
	HowRebuild = "rebuild"
	// HowReplay started the episode again from its start page and start
	// script (the same seed) and played its actions since then again, each
	// settling as it did: the page's JavaScript memory is rebuilt as the
	// parent's was built.
	HowReplay = "replay"
)

// startFrom is start (episode.go) for restore and fork: x continues the
// episode of snapshot snap (named name), and the reply's info.fork, as
// the observers see it too (a recording's first line), says how and
// whether exactly. A fork that is not exact is logged as well.
func (s *Server) startFrom(ctx context.Context, x *session, cause string, inst Instance, ep Episode, name string, snap snapshotInfo) (*EpisodeReply, error) {
	var how ForkInfo
	ep.carried = true
	obs, info, e := s.prepare(ctx, x, inst, &ep, x.continueFrom(snap, &how))
	if e != nil {
		return nil, e
	}
	reply := x.reply(ep, obs, info)
	r := s.begin(x, cause, ep, func() *EpisodeReply {
		r := reply()
		r.Info.Fork = &how
		return r
	})
	x.carry(snap)
	if !how.Exact {
		s.log.Warn("fork not exact", zap.String("env", x.id), zap.String("snapshot", name), zap.String("how", how.How), zap.String("note", how.Note))
	}
	return r, nil
}

// continueFrom is restore's and fork's load of snapshot snap: it makes the
// environment continue the parent's episode and says in *how how it did
// and whether the first observation is the parent's at the snapshot.
//
// A page that runs its own episode (Episode.Start: MiniWoB) keeps its
// state in JavaScript, which no captured state carries, and its site has
// no state of its own: its episode is replayed. Any other page's captured
// state is rebuilt; its site's state is the snapshot's, so replaying the
// actions would do their server-side effects twice. Either way the page
// hash (envcore.Observation.PageHash) of the first observation is
// compared with the parent's at the snapshot: a difference leaves the
// environment as it is, flagged exact=false, never silently different.
func (x *session) continueFrom(snap snapshotInfo, how *ForkInfo) loader {
	return func(ctx context.Context, ep *Episode) (envcore.Observation, envcore.StepInfo, error) {
		var (
			obs  envcore.Observation
			info envcore.StepInfo
			err  error
		)
		if ep.Start != "" {
			*how = ForkInfo{How: HowReplay, Replayed: len(snap.played)}
			obs, info, err = x.replay(ctx, ep, snap.played)
		} else {
			*how = ForkInfo{How: HowRebuild}
			obs, info, err = x.env.RestoreState(ctx, snap.state)
		}
		if err != nil {
			return obs, info, err
		}
		if got := obs.PageHash(); got == snap.hash {
			how.Exact = true
		} else {
			how.Note = differs(how.How, snap, obs)
		}
		return obs, info, nil
	}
}

// replay starts episode ep again and runs played, the parent's actions
// since its start, each as a step runs it (settling included). The last
// step's observation is the first one, without its action's echo.
func (x *session) replay(ctx context.Context, ep *Episode, played []envcore.Parsed) (envcore.Observation, envcore.StepInfo, error) {
	obs, info, err := x.resetTo()(ctx, ep)
	for i, p := range played {
		if err != nil {
			break
		}
		obs, info, err = x.env.StepParsed(ctx, p, x.env.Config().Observe)
		if err != nil {
			err = fmt.Errorf("replay of action %d of %d (%s): %w", i+1, len(played), p.Echo(), err)
		}
	}
	obs.LastAction, obs.LastActionError = "", ""
	info.ActionError, info.ActionErrorCode = "", ""
	return obs, info, err
}

// differs says how a fork's first observation differs from its parent's
// at the snapshot.
func differs(how string, snap snapshotInfo, obs envcore.Observation) string {
	what := "the page"
	switch {
	case obs.URL != snap.obs.URL:
		what = fmt.Sprintf("the URL (%s, the parent's %s)", obs.URL, snap.obs.URL)
	case obs.HTML != snap.obs.HTML:
		what = "the page's HTML"
	case !slices.EqualFunc(obs.Inputs, snap.obs.Inputs, sameInput):
		what = "the inputs' values or state"
	case obs.Focused != snap.obs.Focused:
		what = fmt.Sprintf("the focus (%q, the parent's %q)", obs.Focused, snap.obs.Focused)
	case obs.Viewport != snap.obs.Viewport:
		what = "the viewport or its scroll"
	}
	why := "a rebuild carries no JavaScript memory, and the episode is not replayed on a site with state of its own (its actions would act on it twice)"
	if how == HowReplay {
		why = "the replayed actions did not make the page the parent's (it depends on the wall clock or on something outside the episode)"
	}
	return fmt.Sprintf("not exact: %s differs from the parent's at the snapshot after the %s: %s", what, how, why)
}

func sameInput(a, b envcore.InputField) bool {
	return a.ID == b.ID && a.Value == b.Value && a.Focused == b.Focused && (a.Checked == nil) == (b.Checked == nil) &&
		(a.Checked == nil || *a.Checked == *b.Checked)
}

// carry gives x, just begun from snap, its parent's place in the episode:
// the actions played since its start (so that a fork of a fork replays
// them all) and the grade its next reward is counted from.
func (x *session) carry(snap snapshotInfo) {
	x.played, x.grade = slices.Clone(snap.played), snap.grade
}

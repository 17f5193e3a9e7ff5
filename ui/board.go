package ui

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/webserv-rl/webserv/trajectory"
)

// historyLimit is how many steps of an environment's history the board
// keeps (the newest).
const historyLimit = 500

// Board is the live state of a server's open environments: what the live
// view shows. The server tells it of every episode, step and close (its
// observer hook) and asks it for people's verdicts on actions (Ask). Its
// updates are a map write under a lock, so it costs next to nothing when
// nobody watches; viewers poll Version to learn of changes.
type Board struct {
	version atomic.Uint64

	mu   sync.Mutex
	envs map[string]*liveEnv
}

type liveEnv struct {
	EnvState
	history []StepSummary
	obs     *trajectory.Observation
	ask     chan trajectory.Review // the pending question's answer; nil when none
}

// EnvState is one environment as the list shows it.
type EnvState struct {
	ID         string    `json:"id"`
	Site       string    `json:"site"`
	TaskID     string    `json:"task_id,omitempty"`
	Goal       string    `json:"goal,omitempty"`
	Episode    int       `json:"episode"`
	Cause      string    `json:"cause"`
	Step       int       `json:"step"`
	LastAction string    `json:"last_action,omitempty"`
	LastError  string    `json:"last_error,omitempty"`
	Reward     float64   `json:"reward"` // so far in the episode
	Settled    bool      `json:"settled"`
	SettleMS   float64   `json:"settle_ms"`
	Done       bool      `json:"done"`
	URL        string    `json:"url"`
	Created    time.Time `json:"created"`
	Updated    time.Time `json:"updated"`
	Approve    bool      `json:"approve,omitempty"`    // actions wait for a person
	Pending    *Pending  `json:"pending,omitempty"`    // the action waiting now
	PreviewMS  int       `json:"preview_ms,omitempty"` // make's preview_ms
}

// Pending is an action waiting for a person's verdict.
type Pending struct {
	Step     int       `json:"step"`
	Action   string    `json:"action"`
	Since    time.Time `json:"since"`
	Deadline time.Time `json:"deadline"`
}

// StepSummary is one step of an environment's history.
type StepSummary struct {
	Step     int                `json:"step"`
	Action   string             `json:"action"`
	Error    string             `json:"error,omitempty"`
	Reward   *float64           `json:"reward"`
	ActionMS float64            `json:"action_ms"`
	SettleMS float64            `json:"settle_ms"`
	Settled  bool               `json:"settled"`
	URL      string             `json:"url"`
	Review   *trajectory.Review `json:"review,omitempty"`
	Time     time.Time          `json:"time"`
}

// EnvDetail is one environment as its own page shows it.
type EnvDetail struct {
	EnvState
	History []StepSummary           `json:"history"`
	Obs     *trajectory.Observation `json:"obs,omitempty"`
}

// NewBoard returns an empty board.
func NewBoard() *Board {
	return &Board{envs: map[string]*liveEnv{}}
}

// Version changes whenever the board does.
func (b *Board) Version() uint64 { return b.version.Load() }

// Options are an environment's live-view settings from make.
type Options struct {
	Approve   bool
	PreviewMS int
}

// Began records that env began an episode: head is its episode line,
// reset its first observation.
func (b *Board) Began(env string, opts Options, head, reset trajectory.Line) {
	now := time.Now()
	b.mu.Lock()
	e := b.envs[env]
	if e == nil {
		e = &liveEnv{EnvState: EnvState{ID: env, Created: now}}
		b.envs[env] = e
	}
	e.Site, e.TaskID, e.Goal, e.Cause = head.Site, head.TaskID, head.Goal, head.Cause
	e.Episode++
	e.Step, e.LastAction, e.LastError, e.Reward, e.Done = 0, "", "", 0, false
	e.Approve, e.PreviewMS = opts.Approve, opts.PreviewMS
	e.Settled, e.SettleMS = reset.Info["settled"] == true, reset.InfoFloat("settle_ms")
	e.obs = reset.Obs
	if reset.Obs != nil {
		e.URL = reset.Obs.URL
	}
	e.history = e.history[:0]
	e.Updated = now
	b.mu.Unlock()
	b.version.Add(1)
}

// Stepped records one step of env.
func (b *Board) Stepped(env string, l trajectory.Line) {
	b.mu.Lock()
	e := b.envs[env]
	if e == nil {
		b.mu.Unlock()
		return
	}
	s := StepSummary{Step: l.Step, Action: l.Action, Reward: l.Reward, ActionMS: l.InfoFloat("action_ms"),
		SettleMS: l.InfoFloat("settle_ms"), Settled: l.Info["settled"] == true, Review: l.Review, Time: l.Time}
	if l.Obs != nil {
		s.Error, s.URL = l.Obs.LastActionError, l.Obs.URL
	}
	if len(e.history) == historyLimit {
		e.history = append(e.history[:0], e.history[1:]...)
	}
	e.history = append(e.history, s)
	e.Step, e.LastAction, e.LastError, e.URL = l.Step, l.Action, s.Error, s.URL
	if l.Reward != nil {
		e.Reward += *l.Reward
	}
	e.Settled, e.SettleMS = s.Settled, s.SettleMS
	e.Done = l.Terminated || l.Truncated
	e.obs = l.Obs
	e.Updated = time.Now()
	b.mu.Unlock()
	b.version.Add(1)
}

// Closed forgets env; a question it was waiting on is rejected.
func (b *Board) Closed(env string) {
	b.mu.Lock()
	e := b.envs[env]
	delete(b.envs, env)
	if e != nil && e.ask != nil {
		e.ask <- trajectory.Review{Verdict: trajectory.VerdictRejected, By: "closed", Comment: "the environment was closed"}
		e.Pending, e.ask = nil, nil
	}
	b.mu.Unlock()
	if e != nil {
		b.version.Add(1)
	}
}

// List is the open environments, oldest first.
func (b *Board) List() []EnvState {
	b.mu.Lock()
	out := make([]EnvState, 0, len(b.envs))
	for _, e := range b.envs {
		out = append(out, e.EnvState)
	}
	b.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// Detail is env's state, history and last observation.
func (b *Board) Detail(env string) (EnvDetail, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.envs[env]
	if e == nil {
		return EnvDetail{}, false
	}
	d := EnvDetail{EnvState: e.EnvState, History: append([]StepSummary(nil), e.history...)}
	if e.obs != nil {
		// The live picture shows the page; a recorded screenshot would
		// only make every event of a recording environment larger.
		o := *e.obs
		o.Screenshot = nil
		d.Obs = &o
	}
	return d, true
}

// ErrNoEnv is the error for an environment the board does not have.
var ErrNoEnv = errors.New("no such environment open: it was closed or never made")

// Ask shows env's next action (step, action) in the live view and waits
// until a person approves or rejects it, timeout passes (a rejection by
// "timeout") or ctx ends. It runs on the environment's own worker.
func (b *Board) Ask(ctx context.Context, env string, step int, action string, timeout time.Duration) (trajectory.Review, error) {
	start := time.Now()
	ch := make(chan trajectory.Review, 1)
	b.mu.Lock()
	e := b.envs[env]
	if e == nil {
		b.mu.Unlock()
		return trajectory.Review{}, ErrNoEnv
	}
	e.Pending = &Pending{Step: step, Action: action, Since: start, Deadline: start.Add(timeout)}
	e.ask = ch
	b.mu.Unlock()
	b.version.Add(1)
	defer func() {
		b.mu.Lock()
		if e.ask == ch {
			e.Pending, e.ask = nil, nil
		}
		b.mu.Unlock()
		b.version.Add(1)
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	var r trajectory.Review
	select {
	case r = <-ch:
	case <-t.C:
		r = trajectory.Review{Verdict: trajectory.VerdictRejected, By: "timeout",
			Comment: fmt.Sprintf("nobody approved it within %s", timeout)}
	case <-ctx.Done():
		return trajectory.Review{}, ctx.Err()
	}
	r.WaitMS = float64(time.Since(start).Microseconds()) / 1000
	return r, nil
}

// Decide answers env's pending question: approve or reject, with a comment.
func (b *Board) Decide(env string, approve bool, comment string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.envs[env]
	if e == nil {
		return ErrNoEnv
	}
	if e.ask == nil {
		return errors.New("this environment has no action waiting for a verdict (it was decided already, or timed out)")
	}
	v := trajectory.VerdictRejected
	if approve {
		v = trajectory.VerdictApproved
	}
	e.ask <- trajectory.Review{Verdict: v, Comment: comment, By: "person"}
	e.Pending, e.ask = nil, nil
	b.version.Add(1)
	return nil
}

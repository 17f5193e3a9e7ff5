package server

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/netroute"
	"github.com/webserv-rl/webserv/trajectory"
)

// Network traces. An episode is traced when it is recorded (make's record
// option) or when its grader reads the trace (Episode.Trace: WebArena-
// Verified tasks): start attaches a new netroute.Recorder to the
// environment's table, so every plain-http request of the episode, the
// start page's included, is kept in HAR 1.2 with its canonical URL and the
// browser's own headers. Other episodes attach none, and routing pays one
// atomic load per request.
//
// A recorded episode's trace is written beside its trajectory, as
// DIR/<env>/<episode>.har.gz (the same number as <episode>.jsonl.gz), when
// the episode ends (terminated, truncated, reset, closed).

// traceEpisode gives the episode beginning on x its recorder, or none.
func (s *Server) traceEpisode(x *session, ep Episode) {
	x.trace = nil
	if ep.Trace || x.limits.record != nil {
		x.trace = netroute.NewRecorder(s.cfg.Trace)
	}
	x.net.Record(x.trace)
}

// harWriter writes the traces of recorded episodes: an Observer.
type harWriter struct {
	log *zap.Logger

	mu   sync.Mutex
	envs map[string]*harEnv // by environment id
}

type harEnv struct {
	dir     string
	episode int
	rec     *netroute.Recorder // the current episode's, until written
}

func newHARWriter(log *zap.Logger) *harWriter {
	return &harWriter{log: log, envs: map[string]*harEnv{}}
}

// Began writes the previous episode's trace, if it was not yet, and holds
// the new one's.
func (w *harWriter) Began(ev EpisodeEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	he := w.envs[ev.Env]
	if ev.record == nil {
		if he != nil {
			w.flush(ev.Env, he)
		}
		return
	}
	if he == nil {
		he = &harEnv{dir: filepath.Join(ev.record.dir, ev.Env)}
		w.envs[ev.Env] = he
	}
	w.flush(ev.Env, he)
	if err := os.MkdirAll(he.dir, 0o755); err != nil {
		return // the trajectory recorder logs it
	}
	he.episode++
	he.rec = ev.trace
}

// Stepped writes the trace when the episode ends.
func (w *harWriter) Stepped(ev StepEvent) {
	if ev.Failure == nil && !ev.Reply.Terminated && !ev.Reply.Truncated {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if he := w.envs[ev.Env]; he != nil {
		w.flush(ev.Env, he)
	}
}

// Closed writes the trace of an episode cut short by close.
func (w *harWriter) Closed(ev ClosedEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if he := w.envs[ev.Env]; he != nil {
		w.flush(ev.Env, he)
		delete(w.envs, ev.Env)
	}
}

// flush writes he's held trace. w.mu is held.
func (w *harWriter) flush(env string, he *harEnv) {
	rec := he.rec
	if rec == nil {
		return
	}
	he.rec = nil
	path := filepath.Join(he.dir, fmt.Sprintf("%04d%s", he.episode, trajectory.TraceExt))
	if err := trajectory.WriteTrace(path, rec.HAR()); err != nil {
		w.log.Warn("network trace not written", zap.String("env", env), zap.Error(err))
	}
}

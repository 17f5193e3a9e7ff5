package server

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Trajectory recording. make's `record: {}` writes every episode of the
// environment to DIR/<env>/<episode>.jsonl.gz under the server's
// --trajectories directory (or record.dir below it): one JSON object per
// line, in the schema of docs/trajectories.md:
//
//	{"kind": "episode", "env", "episode", "site", "goal", "task_id", "start_url", "cause", "time"}
//	{"kind": "reset", "obs": {...}, "info": {...}, "time"}
//	{"kind": "step", "step": n, "action": "click(\"buy\")", "obs": {...}, "reward", "terminated", "truncated", "info": {...}, "time"}
//
// Observations are the protocol's; a recording environment always observes
// the accessibility-tree view too (record.screenshots adds PNGs).
// `webserv export` turns recordings into training datasets.

// TrajectoryVersion is the schema version written in each episode line.
const TrajectoryVersion = 1

// recordSpec is make's record option: where and what to record.
type recordSpec struct {
	dir         string // DIR/<sub>; each environment writes under DIR/<sub>/<env>
	screenshots bool
}

// recordSpec reads make's record option.
func (s *Server) recordSpec(a args) (*recordSpec, *Error) {
	if s.cfg.TrajectoryDir == "" {
		return nil, errorf(CodeNotSupported, false, "this server records no trajectories: start it with --trajectories DIR")
	}
	sub, e := a.str("dir")
	if e != nil {
		return nil, e
	}
	if filepath.IsAbs(sub) || filepath.Clean(sub) != sub && sub != "" || len(sub) > 0 && sub[0] == '.' {
		return nil, errorf(CodeBadArgs, false, "record.dir %q must be a plain relative name under the server's trajectory directory", sub)
	}
	shots, e := a.boolean("screenshots")
	if e != nil {
		return nil, e
	}
	return &recordSpec{dir: filepath.Join(s.cfg.TrajectoryDir, sub), screenshots: shots}, nil
}

// recorder writes the episodes of recording environments: an Observer of
// every environment that keeps a file open per recording one. Every
// episode, however it began (make, reset, group member, restore, fork), is
// a file of its own.
type recorder struct {
	log *zap.Logger

	mu    sync.Mutex
	files map[string]*trajectoryFile // by environment id
}

type trajectoryFile struct {
	dir     string
	episode int
	f       *os.File
	gz      *gzip.Writer
	enc     *json.Encoder
}

func newRecorder(log *zap.Logger) *recorder {
	return &recorder{log: log, files: map[string]*trajectoryFile{}}
}

// Began starts a new episode file.
func (r *recorder) Began(ev EpisodeEvent) {
	spec := ev.record
	if spec == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	tf := r.files[ev.Env]
	if tf == nil {
		tf = &trajectoryFile{dir: filepath.Join(spec.dir, ev.Env)}
		r.files[ev.Env] = tf
	}
	tf.close()
	if err := os.MkdirAll(tf.dir, 0o755); err != nil {
		r.log.Warn("trajectory directory", zap.String("dir", tf.dir), zap.Error(err))
		return
	}
	tf.episode++
	path := filepath.Join(tf.dir, fmt.Sprintf("%04d.jsonl.gz", tf.episode))
	f, err := os.Create(path)
	if err != nil {
		r.log.Warn("trajectory file", zap.String("path", path), zap.Error(err))
		return
	}
	tf.f, tf.gz = f, gzip.NewWriter(f)
	tf.enc = json.NewEncoder(tf.gz)
	ep := ev.Episode
	r.write(tf, ev.Env, map[string]any{"kind": "episode", "version": TrajectoryVersion, "env": ev.Env, "episode": tf.episode,
		"site": ev.Site, "goal": ep.Goal, "task_id": ep.TaskID, "start_url": ep.StartURL, "cause": ev.Cause})
	r.write(tf, ev.Env, map[string]any{"kind": "reset", "obs": ev.Reply.Obs, "info": ev.Reply.Info})
}

// Stepped writes a step line.
func (r *recorder) Stepped(ev StepEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	tf := r.files[ev.Env]
	if tf == nil {
		return
	}
	res := ev.Reply
	r.write(tf, ev.Env, map[string]any{"kind": "step", "step": ev.Step, "action": ev.Action, "obs": res.Obs, "reward": res.Reward,
		"terminated": res.Terminated, "truncated": res.Truncated, "info": res.Info})
}

// Closed closes the environment's file.
func (r *recorder) Closed(ev ClosedEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if tf := r.files[ev.Env]; tf != nil {
		tf.close()
		delete(r.files, ev.Env)
	}
}

func (r *recorder) write(tf *trajectoryFile, env string, v map[string]any) {
	if tf.enc == nil {
		return
	}
	v["time"] = time.Now().UTC().Format(time.RFC3339Nano)
	if err := tf.enc.Encode(v); err != nil {
		r.log.Warn("trajectory write failed", zap.String("env", env), zap.Error(err))
	}
	// Flush the gzip stream per line, so a crash loses at most a line.
	_ = tf.gz.Flush()
}

func (tf *trajectoryFile) close() {
	if tf.gz != nil {
		_ = tf.gz.Close()
		_ = tf.f.Close()
		tf.f, tf.gz, tf.enc = nil, nil, nil
	}
}

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
//	{"kind": "episode", "env", "episode", "site", "goal", "task_id", "start_url", "time"}
//	{"kind": "reset", "obs": {...}, "info": {...}, "time"}
//	{"kind": "step", "step": n, "action": "click(\"buy\")", "obs": {...}, "reward", "terminated", "truncated", "info": {...}, "time"}
//
// Observations are the protocol's; a recording environment always observes
// the accessibility-tree view too (record.screenshots adds PNGs).
// `webserv export` turns recordings into training datasets.

// TrajectoryVersion is the schema version written in each episode line.
const TrajectoryVersion = 1

type recorder struct {
	log     *zap.Logger
	dir     string
	mu      sync.Mutex
	f       *os.File
	gz      *gzip.Writer
	enc     *json.Encoder
	episode int
	env     string
	x       *session
}

func (s *Server) newRecorder(x *session, a args) (*recorder, *Error) {
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
	dir := filepath.Join(s.cfg.TrajectoryDir, sub, x.id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, errorf(CodeBackend, false, "trajectory directory: %v", err)
	}
	x.recordObserve = true
	x.recordShots = shots
	return &recorder{log: s.log, dir: dir, env: x.id, x: x}, nil
}

func (r *recorder) write(v map[string]any) {
	if r.enc == nil {
		return
	}
	v["time"] = time.Now().UTC().Format(time.RFC3339Nano)
	if err := r.enc.Encode(v); err != nil {
		r.log.Warn("trajectory write failed", zap.String("env", r.env), zap.Error(err))
	}
	// Flush the gzip stream per line, so a crash loses at most a line.
	_ = r.gz.Flush()
}

// reset starts a new episode file.
func (r *recorder) reset(res map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closeFile()
	r.episode++
	path := filepath.Join(r.dir, fmt.Sprintf("%04d.jsonl.gz", r.episode))
	f, err := os.Create(path)
	if err != nil {
		r.log.Warn("trajectory file", zap.String("path", path), zap.Error(err))
		return
	}
	r.f, r.gz = f, gzip.NewWriter(f)
	r.enc = json.NewEncoder(r.gz)
	ep := r.x.episode
	r.write(map[string]any{"kind": "episode", "version": TrajectoryVersion, "env": r.env, "episode": r.episode,
		"site": r.x.site, "goal": ep.Goal, "task_id": ep.TaskID, "start_url": ep.StartURL})
	r.write(map[string]any{"kind": "reset", "obs": res["obs"], "info": res["info"]})
}

func (r *recorder) step(action string, res map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.write(map[string]any{"kind": "step", "step": r.x.steps, "action": action, "obs": res["obs"], "reward": res["reward"],
		"terminated": res["terminated"], "truncated": res["truncated"], "info": res["info"]})
}

func (r *recorder) closeFile() {
	if r.gz != nil {
		_ = r.gz.Close()
		_ = r.f.Close()
		r.f, r.gz, r.enc = nil, nil, nil
	}
}

func (r *recorder) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closeFile()
}

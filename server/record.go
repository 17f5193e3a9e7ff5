package server

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/trajectory"
)

// Trajectory recording. make's `record: {}` writes every episode of the
// environment to DIR/<env>/<episode>.jsonl.gz under the server's
// --trajectories directory (or record.dir below it): one JSON object per
// line, in the format of package trajectory (docs/trajectories.md).
//
// Observations are the protocol's; a recording environment always observes
// the accessibility-tree view too (record.screenshots adds PNGs).
// `webserv export` turns recordings into training datasets.

// TrajectoryVersion is the schema version written in each episode line.
const TrajectoryVersion = trajectory.Version

// recordSpec is make's record option: where and what to record.
type recordSpec struct {
	dir         string // DIR/<sub>; each environment writes under DIR/<sub>/<env>
	screenshots bool
}

// recordSpec checks make's record option: where and what to record.
func (s *Server) recordSpec(a *recordArg) (*recordSpec, error) {
	if s.cfg.TrajectoryDir == "" {
		return nil, errorf(CodeNotSupported, false, "this server records no trajectories: start it with --trajectories DIR")
	}
	sub := a.Dir
	if filepath.IsAbs(sub) || filepath.Clean(sub) != sub && sub != "" || len(sub) > 0 && sub[0] == '.' {
		return nil, errorf(CodeBadArgs, false, "record.dir %q must be a plain relative name under the server's trajectory directory", sub)
	}
	return &recordSpec{dir: filepath.Join(s.cfg.TrajectoryDir, sub), screenshots: a.Screenshots}, nil
}

// recorder writes the episodes of recording environments: an Observer of
// every environment that keeps a file open per recording one. Every
// episode, however it began (make, reset, group member, restore, fork), is
// a file of its own, written by package trajectory.
type recorder struct {
	log *zap.Logger

	mu    sync.Mutex
	files map[string]*trajectoryFile // by environment id
}

type trajectoryFile struct {
	dir     string
	episode int
	w       *trajectory.Writer // nil between episodes or after a failure
	failed  string             // why this episode's recording stopped
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
	tf.failed = ""
	tf.episode++
	w, err := trajectory.Create(filepath.Join(tf.dir, fmt.Sprintf("%04d%s", tf.episode, trajectory.Ext)))
	if err != nil {
		r.log.Warn("trajectory file", zap.String("env", ev.Env), zap.Error(err))
		tf.failed = fmt.Sprintf("the episode is not recorded: %v", err)
		ev.Reply.Info.RecordError = tf.failed
		return
	}
	tf.w = w
	if !r.write(tf, ev.Env, headLine(ev, tf.episode), &ev.Reply.Info) {
		// Not even the head is on disk: no file that says nothing.
		_ = os.Remove(w.Path())
		return
	}
	r.write(tf, ev.Env, resetLine(ev), &ev.Reply.Info)
}

// Stepped writes a step line.
func (r *recorder) Stepped(ev StepEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	tf := r.files[ev.Env]
	if tf == nil {
		return
	}
	var info *StepInfo
	if ev.Reply != nil {
		info = &ev.Reply.Info
	}
	r.write(tf, ev.Env, stepLine(ev), info)
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

// write appends l to the episode's file. A line that cannot be written (a
// full disk) ends the episode's recording: the lines before it stay
// readable, later ones are not attempted, and the reply's info (when the
// reply is still being built) says so in record_error, so the client
// knows this episode is not on disk.
func (r *recorder) write(tf *trajectoryFile, env string, l trajectory.Line, info *StepInfo) bool {
	if tf.w == nil {
		if tf.failed != "" && info != nil {
			info.RecordError = tf.failed
		}
		return false
	}
	if err := tf.w.Write(l); err != nil {
		r.log.Warn("trajectory write failed; the episode's recording stops here", zap.String("env", env), zap.Error(err))
		tf.failed = fmt.Sprintf("the episode's recording stopped: %v", err)
		if info != nil {
			info.RecordError = tf.failed
		}
		tf.close()
		return false
	}
	return true
}

func (tf *trajectoryFile) close() {
	if tf.w != nil {
		_ = tf.w.Close()
		tf.w = nil
	}
}

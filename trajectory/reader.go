package trajectory

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Ext is the file name ending of an episode file.
const Ext = ".jsonl.gz"

// Episode is one recorded episode.
type Episode struct {
	Path  string
	Head  Line  // the episode line
	Reset *Line // the first observation; nil when none was recorded
	Steps []Line
	// Partial is set when the file was cut short (the server stopped
	// while writing it); the lines before the cut are all there.
	Partial bool
}

// InfraFailure is the infrastructure's fault that ended the episode (a
// site instance that died, a browser that crashed), nil when none did:
// such an episode says nothing about the policy, and exports leave it out
// unless asked (ExportOptions.IncludeFailed).
func (e *Episode) InfraFailure() *Failure {
	for _, s := range e.Steps {
		if s.Error != nil && s.Error.Fault == FaultInfrastructure {
			return s.Error
		}
	}
	return nil
}

// Reward is the sum of the steps' rewards.
func (e *Episode) Reward() float64 {
	total := 0.0
	for _, s := range e.Steps {
		if s.Reward != nil {
			total += *s.Reward
		}
	}
	return total
}

// Duration is the time from the episode line to the last line.
func (e *Episode) Duration() time.Duration {
	last := e.Head.Time
	if e.Reset != nil {
		last = e.Reset.Time
	}
	if n := len(e.Steps); n > 0 {
		last = e.Steps[n-1].Time
	}
	return last.Sub(e.Head.Time)
}

// Obs is the observation before step i (1-based): the reset's for step 1,
// else the previous step's. Nil when it was not recorded.
func (e *Episode) Obs(i int) *Observation {
	if i <= 1 {
		if e.Reset == nil {
			return nil
		}
		return e.Reset.Obs
	}
	if i-2 < len(e.Steps) {
		return e.Steps[i-2].Obs
	}
	return nil
}

// Read reads the episode file at path.
func Read(path string) (*Episode, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read episode: %w", err)
	}
	defer f.Close()
	ep, err := Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	ep.Path = path
	return ep, nil
}

// Decode reads an episode from a gzipped JSON Lines stream.
func Decode(r io.Reader) (*Episode, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("not a gzipped episode file: %w", err)
	}
	sc := bufio.NewScanner(gz)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	ep := &Episode{}
	n := 0
	for sc.Scan() {
		n++
		var l Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			// A file cut short mid-line (a full disk, a crash) ends in a
			// fragment of its last line: the lines before it count.
			if n > 1 && !sc.Scan() && errors.Is(sc.Err(), io.ErrUnexpectedEOF) {
				ep.Partial = true
				return ep, nil
			}
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		switch {
		case n == 1 && l.Kind != KindEpisode:
			return nil, fmt.Errorf("line 1 is %q, not an episode line: not a WebServ trajectory", l.Kind)
		case n == 1:
			ep.Head = l
		case l.Kind == KindReset:
			ep.Reset = &l
		case l.Kind == KindStep:
			ep.Steps = append(ep.Steps, l)
		}
	}
	if err := sc.Err(); err != nil {
		// A recording cut short (a crash) ends with a partial gzip
		// stream; the complete lines before it still count.
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, err
		}
		ep.Partial = true
	}
	if n == 0 {
		return nil, errors.New("empty episode file")
	}
	return ep, nil
}

// Find lists the episode files under dirs (a file names itself), sorted.
func Find(dirs ...string) ([]string, error) {
	var files []string
	for _, d := range dirs {
		err := filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err == nil && !e.IsDir() && strings.HasSuffix(p, Ext) {
				files = append(files, p)
			}
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("find recorded episodes: %w", err)
		}
	}
	sort.Strings(files)
	return files, nil
}

// Summary is what a list of episodes shows of one.
type Summary struct {
	Path     string  `json:"path"` // relative to the directory listed
	Env      string  `json:"env"`
	Episode  int     `json:"episode"`
	Site     string  `json:"site"`
	TaskID   string  `json:"task_id"`
	Goal     string  `json:"goal"`
	Cause    string  `json:"cause"`
	Reward   float64 `json:"reward"`
	Steps    int     `json:"steps"`
	Seconds  float64 `json:"seconds"`
	Errors   int     `json:"errors"`   // steps whose action failed
	Rejected int     `json:"rejected"` // actions a person rejected
	Done     bool    `json:"done"`     // terminated or truncated
	Partial  bool    `json:"partial"`
	// Failed is the infrastructure's fault that ended the episode ("" when
	// none did), as "code: message".
	Failed string    `json:"failed,omitempty"`
	Time   time.Time `json:"time"`
}

// Summarize is ep's Summary.
func (e *Episode) Summarize() Summary {
	s := Summary{Path: e.Path, Env: e.Head.Env, Episode: e.Head.Episode, Site: e.Head.Site, TaskID: e.Head.TaskID,
		Goal: e.Head.Goal, Cause: e.Head.Cause, Reward: e.Reward(), Steps: len(e.Steps), Seconds: e.Duration().Seconds(),
		Partial: e.Partial, Time: e.Head.Time}
	for _, l := range e.Steps {
		if l.Obs != nil && l.Obs.LastActionError != "" {
			s.Errors++
		}
		if l.Review != nil && l.Review.Verdict == VerdictRejected {
			s.Rejected++
		}
		s.Done = s.Done || l.Terminated || l.Truncated
	}
	if f := e.InfraFailure(); f != nil {
		s.Failed = f.Code + ": " + f.Message
	}
	return s
}

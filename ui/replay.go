package ui

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/webserv-rl/webserv/trajectory"
)

// Replay serves the episodes recorded under a directory to the replayer.
// Summaries are cached per file (by size and modification time), so a
// list of thousands of episodes is read once.
type Replay struct {
	dir string

	mu      sync.Mutex
	summary map[string]cachedSummary
	last    map[string]cachedEpisode // the few episodes read last
}

type cachedSummary struct {
	size int64
	mod  time.Time
	s    trajectory.Summary
}

type cachedEpisode struct {
	size     int64
	mod      time.Time
	traceMod time.Time // the network trace's; zero when there is none
	ep       *trajectory.Episode
	net      [][]trajectory.Request // nil without a trace
	used     time.Time
}

// NewReplay serves the episodes under dir.
func NewReplay(dir string) *Replay {
	return &Replay{dir: dir, summary: map[string]cachedSummary{}, last: map[string]cachedEpisode{}}
}

// Dir is the directory served.
func (r *Replay) Dir() string { return r.dir }

// Episodes lists the recorded episodes, newest first. Paths are relative
// to the directory. A file that does not read is listed with its error in
// Goal, so it is seen rather than lost.
func (r *Replay) Episodes() ([]trajectory.Summary, error) {
	files, err := trajectory.Find(r.dir)
	if err != nil {
		return nil, err
	}
	out := make([]trajectory.Summary, 0, len(files))
	for _, f := range files {
		rel, _ := filepath.Rel(r.dir, f)
		st, err := os.Stat(f)
		if err != nil {
			continue
		}
		r.mu.Lock()
		c, ok := r.summary[rel]
		r.mu.Unlock()
		if !ok || c.size != st.Size() || !c.mod.Equal(st.ModTime()) {
			ep, err := trajectory.Read(f)
			var s trajectory.Summary
			if err != nil {
				s = trajectory.Summary{Goal: "unreadable: " + err.Error(), Partial: true, Time: st.ModTime()}
			} else {
				s = ep.Summarize()
			}
			s.Path = rel
			c = cachedSummary{size: st.Size(), mod: st.ModTime(), s: s}
			r.mu.Lock()
			r.summary[rel] = c
			r.mu.Unlock()
		}
		out = append(out, c.s)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.After(out[j].Time) })
	return out, nil
}

// Episode reads the episode at rel (a path Episodes gave).
func (r *Replay) Episode(rel string) (*trajectory.Episode, error) {
	c, err := r.load(rel)
	return c.ep, err
}

// Network is the episode at rel's network trace on its timeline
// (trajectory.Episode.Network): index 0 the requests before the first
// step, i those of step i. Nil when the episode has no trace: it was not
// recorded, or the episode has not ended yet (a trace is written when its
// episode ends).
func (r *Replay) Network(rel string) ([][]trajectory.Request, error) {
	c, err := r.load(rel)
	return c.net, err
}

// load reads the episode at rel and its trace, or takes them from the
// cache while neither file has changed.
func (r *Replay) load(rel string) (cachedEpisode, error) {
	if !filepath.IsLocal(rel) {
		return cachedEpisode{}, fmt.Errorf("episode path %q: give a path the episode list gave, relative to the trajectory directory", rel)
	}
	path := filepath.Join(r.dir, rel)
	st, err := os.Stat(path)
	if err != nil {
		return cachedEpisode{}, fmt.Errorf("episode %s: %w", rel, err)
	}
	var traceMod time.Time
	if ts, err := os.Stat(trajectory.TracePath(path)); err == nil {
		traceMod = ts.ModTime()
	}
	r.mu.Lock()
	c, ok := r.last[rel]
	r.mu.Unlock()
	if ok && c.size == st.Size() && c.mod.Equal(st.ModTime()) && c.traceMod.Equal(traceMod) {
		return c, nil
	}
	ep, err := trajectory.Read(path)
	if err != nil {
		return cachedEpisode{}, err
	}
	ep.Path = rel
	c = cachedEpisode{size: st.Size(), mod: st.ModTime(), traceMod: traceMod, ep: ep, used: time.Now()}
	if !traceMod.IsZero() {
		h, err := trajectory.ReadTrace(trajectory.TracePath(path))
		if err != nil {
			return cachedEpisode{}, err
		}
		c.net = ep.Network(h)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.last) >= 4 {
		var oldest string
		for k, v := range r.last {
			if oldest == "" || v.used.Before(r.last[oldest].used) {
				oldest = k
			}
		}
		delete(r.last, oldest)
	}
	r.last[rel] = c
	return c, nil
}

// Screenshot is the PNG recorded with step i of the episode at rel (0: the
// reset's).
func (r *Replay) Screenshot(rel string, i int) ([]byte, error) {
	ep, err := r.Episode(rel)
	if err != nil {
		return nil, err
	}
	o := ep.Obs(i + 1)
	if o == nil || len(o.Screenshot) == 0 {
		return nil, errNoScreenshot
	}
	return o.Screenshot, nil
}

var errNoScreenshot = errors.New("no screenshot recorded for this step: record with record: {screenshots: true}")

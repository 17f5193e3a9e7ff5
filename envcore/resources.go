package envcore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/go-rod/rod/lib/proto"
)

// Per-environment resource limits. A page an agent reaches may allocate
// without bound or grow its DOM every frame; while an environment steps, a
// watch samples what its pages hold and, over a limit, stops the step. The
// environment is then given up (its browser context closed, which frees
// its renderers' memory) until Reset; no other environment is touched.
// Tabs are bounded by Config.MaxTabs (admitTab), a spinning page by the
// timeouts (unresponsive.go).

// ErrResourceLimit is the error (wrapped, by a *ResourceLimitError) of a
// step whose environment went over one of its limits: Config.MaxMemoryMB,
// MaxDOMNodes, MaxObservationBytes or MaxBusy. The environment is closed until
// Reset, which starts a new episode in a fresh context.
var ErrResourceLimit = errors.New("resource limit")

// ResourceLimitError says which limit an environment went over and by how
// much. It wraps ErrResourceLimit.
type ResourceLimitError struct {
	// What is "memory" (bytes of the JavaScript heaps and array buffers of
	// its pages), "dom_nodes" (nodes of a page's renderer), "observation"
	// (bytes of one observation) or "cpu" (milliseconds of CPU time a
	// page's main thread used without a break between steps).
	What  string
	Used  int64
	Limit int64
}

func (e *ResourceLimitError) Error() string {
	unit := ""
	used, limit := e.Used, e.Limit
	switch e.What {
	case "memory":
		unit, used, limit = " MB", used>>20, limit>>20
	case "observation":
		unit = " bytes"
	case "cpu":
		unit = " ms"
	}
	return fmt.Sprintf("the environment went over its %s limit: %d%s used, the limit is %d%s; "+
		"its browser context was closed: call Reset to start a new episode", limitNames[e.What], used, unit, limit, unit)
}

func (e *ResourceLimitError) Unwrap() error { return ErrResourceLimit }

var limitNames = map[string]string{
	"memory":      "memory (JavaScript heap and array buffers of its pages)",
	"dom_nodes":   "DOM size (nodes)",
	"observation": "observation size",
	"cpu":         "CPU (a page busy without a break between steps)",
}

// watchEvery is how often a stepping environment's pages are sampled;
// idleWatchEvery how often between steps (while the agent thinks, a page
// goes on allocating).
const (
	watchEvery     = 200 * time.Millisecond
	idleWatchEvery = time.Second
)

// usage is what an environment's pages hold, as sampled.
type usage struct {
	memory int64 // bytes: the largest page's JS heap plus array buffers
	nodes  int64 // DOM nodes of the largest page's renderer
}

// spinWatch follows a page's main thread between samples.
type spinWatch struct {
	at     time.Time     // the last sample
	task   time.Duration // the page's task time then (Performance.getMetrics' TaskDuration: wall time in tasks)
	thread time.Duration // the main thread's CPU time then (ThreadTime)
	run    time.Duration // main-thread CPU time spent since the page last took a break
}

// busySample records a sample of the page's task and thread times and
// returns the main-thread CPU time the page has spent without a break: a
// sample counts as busy when the page ran tasks for 90% of the wall time
// since the last, and the run it continues grows by the CPU time the thread
// used, not by the wall time. On a loaded host a spinning page gets a share
// of a core, and the limit charges it for what it ran, never for the host's
// load (a page doing a bounded piece of work is not over MaxBusy because
// other processes slowed it down).
func (t *tab) busySample(task, thread time.Duration, now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := &t.spin
	if !w.at.IsZero() {
		if wall := now.Sub(w.at); wall > 0 && task-w.task >= wall*9/10 {
			w.run += max(thread-w.thread, 0)
		} else {
			w.run = 0
		}
	}
	w.at, w.task, w.thread = now, task, thread
	return w.run
}

// busyFor is the main-thread CPU time t's page has spent without a break, as sampled.
func (t *tab) busyFor() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.spin.run
}

// heapUsage is CDP's Runtime.getHeapUsage answer, with the fields rod's
// protocol package predates.
type heapUsage struct {
	UsedSize             float64 `json:"usedSize"`
	EmbedderHeapUsedSize float64 `json:"embedderHeapUsedSize"`
	BackingStorageSize   float64 `json:"backingStorageSize"`
}

// sample reads what t's page holds. Performance.getMetrics is answered even
// while the page's script runs (it interrupts it); Runtime.getHeapUsage,
// which also counts array buffers, only between scripts, so it is asked
// with a short bound and skipped when late.
func (t *tab) sample(ctx context.Context) (usage, error) {
	var u usage
	mctx, cancel := context.WithTimeout(ctx, time.Second)
	m, err := proto.PerformanceGetMetrics{}.Call(t.client(mctx))
	cancel()
	if err != nil {
		return u, fmt.Errorf("read the page's metrics: %w", err)
	}
	var task, thread time.Duration
	for _, x := range m.Metrics {
		switch x.Name {
		case "TaskDuration": // seconds of wall time in tasks
			task = time.Duration(x.Value * float64(time.Second))
		case "ThreadTime": // seconds of the main thread's CPU time
			thread = time.Duration(x.Value * float64(time.Second))
		case "Nodes":
			u.nodes = int64(x.Value)
		case "JSHeapUsedSize":
			u.memory = int64(x.Value)
		}
	}
	t.busySample(task, thread, time.Now())
	hctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	raw, err := t.b.rod.Call(hctx, string(t.session), "Runtime.getHeapUsage", nil)
	cancel()
	var h heapUsage
	if err == nil && json.Unmarshal(raw, &h) == nil {
		u.memory = max(u.memory, int64(h.UsedSize+h.EmbedderHeapUsedSize+h.BackingStorageSize))
	}
	return u, nil
}

// overLimit samples every tab of the environment and returns the limit it
// is over, or nil. Tabs of one site share a renderer and its counts, so the
// largest tab's figures are compared, not their sum.
func (e *Env) overLimit(ctx context.Context) *ResourceLimitError {
	now := time.Now()
	_, tabs, _ := e.snapshotTabs()
	var most usage
	for _, t := range tabs {
		if t.b.unsampled {
			continue
		}
		u, err := t.sample(ctx)
		if err != nil {
			continue // a tab closing or crashing: the step reports it
		}
		most.memory, most.nodes = max(most.memory, u.memory), max(most.nodes, u.nodes)
	}
	switch {
	case most.memory > int64(e.cfg.MaxMemoryMB)<<20:
		return &ResourceLimitError{What: "memory", Used: most.memory, Limit: int64(e.cfg.MaxMemoryMB) << 20}
	case most.nodes > int64(e.cfg.MaxDOMNodes):
		return &ResourceLimitError{What: "dom_nodes", Used: most.nodes, Limit: int64(e.cfg.MaxDOMNodes)}
	}
	e.sampled.Store(now.UnixNano())
	return nil
}

// dueSample is how long after now a stepping environment's pages are due
// to be sampled: watchEvery after the last sample that found them within
// their limits (zero or less: now). Each sample is two round trips to
// every tab's renderer (Performance.getMetrics, Runtime.getHeapUsage),
// about half the DevTools messages of a step on the shop; a loop that
// steps without pause would otherwise sample once more per step than the
// cadence asks (issue 44).
func (e *Env) dueSample(now time.Time) time.Duration {
	last := e.sampled.Load()
	if last == 0 {
		return 0
	}
	return watchEvery - now.Sub(time.Unix(0, last))
}

// watch samples the environment's pages every watchEvery, counted from the
// last sample (the one before the step, or the previous step's), until
// the returned stop is called, and cancels the step (cancel, with the
// *ResourceLimitError as the cause) when one is over a limit.
func (e *Env) watch(ctx context.Context, cancel context.CancelCauseFunc) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		timer := time.NewTimer(max(e.dueSample(time.Now()), 0))
		defer timer.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-timer.C:
			}
			if over := e.overLimit(ctx); over != nil {
				cancel(over)
				return
			}
			timer.Reset(max(e.dueSample(time.Now()), 0))
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// overLimitErr is the *ResourceLimitError a step's context was cancelled
// with, if it was.
func overLimitErr(ctx context.Context) *ResourceLimitError {
	var rl *ResourceLimitError
	if errors.As(context.Cause(ctx), &rl) {
		return rl
	}
	return nil
}

// giveUpOver stops the environment's scripts and closes its context for
// going over a limit; the error is what Step and Observe answer until Reset.
func (e *Env) giveUpOver(rl *ResourceLimitError) error {
	_, tabs, _ := e.snapshotTabs()
	for _, t := range tabs {
		_ = t.client(e.br().ctx).send(proto.RuntimeTerminateExecution{})
	}
	e.log.Warn("environment over a resource limit: closing its context")
	dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = e.dispose(dctx)
	e.lost = rl
	return rl
}

// watchIdle samples the environment's pages between steps, every
// idleWatchEvery until Close, and gives the environment up when one is over
// a limit; the next call answers the *ResourceLimitError. A page that has
// kept its main thread busy without a break for Config.MaxBusy (a script
// in an endless loop started after a step, one core of the host until the
// next) is over the CPU limit. While a step,
// Reset or Observe runs (e.mu held) it leaves the watch to them.
func (e *Env) watchIdle() {
	tick := time.NewTicker(idleWatchEvery)
	defer tick.Stop()
	for {
		select {
		case <-e.quit:
			return
		case <-tick.C:
		}
		if !e.mu.TryLock() {
			continue
		}
		if !e.closed && e.lost == nil && e.ctxID != "" {
			ctx, cancel := context.WithTimeout(e.br().ctx, time.Second) // a step waits for it at most this long
			if rl := e.overLimit(ctx); rl != nil {
				_ = e.giveUpOver(rl)
			}
			cancel()
			_, tabs, _ := e.snapshotTabs()
			for _, t := range tabs {
				if busy := t.busyFor(); e.lost == nil && busy >= e.cfg.MaxBusy {
					_ = e.giveUpOver(&ResourceLimitError{What: "cpu", Used: busy.Milliseconds(), Limit: e.cfg.MaxBusy.Milliseconds()})
				}
			}
		}
		e.mu.Unlock()
	}
}

package envcore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// A supervised pool of browser processes. Environments are spread over N
// Chromium processes started with the same settings (binary, user,
// sandbox, switches, per-context proxies, warm contexts), each new one on
// the process with the fewest, so a browser that dies (the OOM killer's
// pick, a crash of Chromium itself, a kill -9) takes at most its share of
// the environments with it. Each process has a supervisor: when it dies,
// every environment on it answers its next operation with a
// *BrowserCrashedError, and a replacement starts at once; a process that
// keeps dying is restarted after a delay that doubles up to
// maxRestartDelay. An environment's next Reset or RestoreState after the
// crash starts it on a live process (the replacement, having none, is
// usually the one with the fewest), and new environments work as soon as
// one process lives.

// DefaultBrowsers is how many browser processes a server runs when not
// told. Two halve what one crash takes, for the cost of one more browser
// process with its helpers (its GPU, network and storage services and
// zygotes): some tens of MiB (about 60 MiB of proportional set size in a
// small run of the recovery suite) and a little idle CPU, while the
// renderers, which hold the pages, are one per environment however many
// browsers there are. More than two shrink the loss further but add that
// fixed cost each, which a 2-core host feels; bench/README.md
// ("recovery") measures both sides.
const DefaultBrowsers = 2

// Restart back-off: the first restart of a process is immediate; each
// further one in a row waits firstRestartDelay, doubling up to
// maxRestartDelay. A process that ran stableAfter before dying starts the
// count again.
const (
	firstRestartDelay = time.Second
	maxRestartDelay   = 30 * time.Second
	stableAfter       = time.Minute
)

// restartDelay is the wait before the n-th restart in a row (n ≥ 1).
func restartDelay(n int) time.Duration {
	if n <= 1 {
		return 0
	}
	d := firstRestartDelay
	for i := 2; i < n && d < maxRestartDelay; i++ {
		d *= 2
	}
	return min(d, maxRestartDelay)
}

// placer gives an environment the browser its next context goes in.
type placer interface {
	place(ctx context.Context, e *Env) (*Browser, error)
}

// place keeps every environment on b: a lone browser that died has no
// other to offer.
func (b *Browser) place(_ context.Context, _ *Env) (*Browser, error) {
	if ce := b.crashErr(); ce != nil {
		return nil, ce
	}
	return b, nil
}

// BrowserHealth is the state of a server's browser processes.
type BrowserHealth struct {
	// Browsers is how many processes are kept running; Alive how many
	// run now.
	Browsers int `json:"browsers"`
	Alive    int `json:"alive"`
	// Supervised: dead processes are replaced (a Pool).
	Supervised bool `json:"supervised"`
	// Crashes counts processes that died without being closed; Restarts
	// the replacements started; RestartFailures the replacements that
	// failed to start (each is retried after the back-off).
	Crashes         int64 `json:"crashes"`
	Restarts        int64 `json:"restarts"`
	RestartFailures int64 `json:"restart_failures"`
	// Processes are the browser processes, in slot order.
	Processes []BrowserProcess `json:"processes"`
}

// BrowserProcess is one browser process of a BrowserHealth.
type BrowserProcess struct {
	PID   int  `json:"pid"` // Chromium's browser process
	Alive bool `json:"alive"`
	Envs  int  `json:"envs"` // environments placed on it
}

func (b *Browser) process() BrowserProcess {
	return BrowserProcess{PID: b.mainPID, Alive: b.Alive(), Envs: int(b.placed.Load())}
}

// Health is the one process's state (a lone Browser is not supervised).
func (b *Browser) Health() BrowserHealth {
	h := BrowserHealth{Browsers: 1, Processes: []BrowserProcess{b.process()}}
	if h.Processes[0].Alive {
		h.Alive = 1
	} else if b.crashErr() != nil {
		h.Crashes = 1
	}
	return h
}

// Pool is a supervised set of browser processes. It is safe for
// concurrent use.
type Pool struct {
	log  *zap.Logger
	opts BrowserOptions
	ctx  context.Context // ends with Close: stops the supervisors
	stop context.CancelFunc
	wg   sync.WaitGroup

	crashes, restarts, failures atomic.Int64

	mu      sync.Mutex
	slots   []*Browser
	changed chan struct{} // closed and replaced when a slot gets a new browser
	closed  bool
}

// LaunchPool starts n browser processes (DefaultBrowsers when n ≤ 0) with
// opts, each as Launch does, and supervises them until Close. The warm
// contexts of opts are shared out: each process keeps its part, rounded
// up. A process that cannot be started fails the launch.
func LaunchPool(ctx context.Context, log *zap.Logger, opts BrowserOptions, n int) (*Pool, error) {
	if log == nil {
		log = zap.NewNop()
	}
	if n <= 0 {
		n = DefaultBrowsers
	}
	if opts.WarmContexts > 0 {
		opts.WarmContexts = (opts.WarmContexts + n - 1) / n
	}
	pctx, stop := context.WithCancel(context.Background())
	p := &Pool{log: log, opts: opts, ctx: pctx, stop: stop, slots: make([]*Browser, n), changed: make(chan struct{})}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.slots[i], errs[i] = launch(ctx, log.With(zap.Int("browser", i)), opts, true)
		}()
	}
	wg.Wait()
	if err := startError(errs); err != nil {
		stop()
		for _, b := range p.slots {
			if b != nil {
				_ = b.Close()
			}
		}
		return nil, err
	}
	for i := range n {
		p.wg.Add(1)
		go p.supervise(i)
	}
	log.Info("browser pool started", zap.Int("browsers", n))
	return p, nil
}

// startError is the error of a pool whose processes failed to start
// (errs[i]: process i's), said once when they all failed alike (a missing
// user, a sandbox that cannot start), else per process.
func startError(errs []error) error {
	var failed []error
	var each []error
	for i, err := range errs {
		if err != nil {
			failed = append(failed, err)
			each = append(each, fmt.Errorf("start browser %d of %d: %w", i+1, len(errs), err))
		}
	}
	if len(failed) == 0 {
		return nil
	}
	for _, err := range failed[1:] {
		if err.Error() != failed[0].Error() {
			return errors.Join(each...)
		}
	}
	return fmt.Errorf("start browser processes (%d of %d failed): %w", len(failed), len(errs), failed[0])
}

// NewEnv creates an environment on the live browser with the fewest
// environments. It opens no page until Reset.
func (p *Pool) NewEnv(cfg Config) *Env {
	b := p.pick(false)
	return b.newEnv(cfg, p)
}

// pick is the live browser with the fewest environments; when none lives,
// the one with the fewest (its environments fail until a reset), unless
// liveOnly is set: then nil.
func (p *Pool) pick(liveOnly bool) *Browser {
	p.mu.Lock()
	defer p.mu.Unlock()
	var best, bestAny *Browser
	for _, b := range p.slots {
		if bestAny == nil || b.placed.Load() < bestAny.placed.Load() {
			bestAny = b
		}
		if b.Alive() && (best == nil || b.placed.Load() < best.placed.Load()) {
			best = b
		}
	}
	if best == nil && !liveOnly {
		return bestAny
	}
	return best
}

// place keeps e on its browser while that lives, else gives it the live
// browser with the fewest environments, waiting (within ctx) for a
// replacement when none lives.
func (p *Pool) place(ctx context.Context, e *Env) (*Browser, error) {
	if cur := e.br(); cur != nil && cur.Alive() {
		return cur, nil
	}
	for {
		p.mu.Lock()
		closed, changed := p.closed, p.changed
		p.mu.Unlock()
		if closed {
			return nil, ErrClosed
		}
		if b := p.pick(true); b != nil {
			return b, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("no browser process is running and none was restarted in time (they are restarted with a back-off of up to %s; see the server's log): %w", maxRestartDelay, ctx.Err())
		}
	}
}

// supervise watches slot i's browser and replaces it whenever it dies,
// until Close.
func (p *Pool) supervise(i int) {
	defer p.wg.Done()
	log := p.log.With(zap.Int("browser", i))
	inARow := 0
	for {
		p.mu.Lock()
		b := p.slots[i]
		p.mu.Unlock()
		select {
		case <-p.ctx.Done():
			return
		case <-b.proc.Closed():
		}
		if p.ctx.Err() != nil {
			return
		}
		p.crashes.Add(1)
		if time.Since(b.started) >= stableAfter {
			inARow = 0
		}
		go func() { _ = b.Close() }() // reap its processes and directories
		for {
			inARow++
			wait := restartDelay(inARow)
			log.Warn("restarting a browser process that died", zap.Int("dead_pid", b.mainPID), zap.Int("lost_environments", int(b.placed.Load())),
				zap.Int("restart_in_a_row", inARow), zap.Duration("after", wait))
			select {
			case <-p.ctx.Done():
				return
			case <-time.After(wait):
			}
			nb, err := launch(p.ctx, log, p.opts, true)
			if err != nil {
				if p.ctx.Err() != nil {
					return
				}
				p.failures.Add(1)
				log.Error("a replacement browser process failed to start; trying again after the back-off", zap.Error(err))
				continue
			}
			p.mu.Lock()
			if p.closed {
				p.mu.Unlock()
				_ = nb.Close()
				return
			}
			p.slots[i] = nb
			close(p.changed)
			p.changed = make(chan struct{})
			p.mu.Unlock()
			p.restarts.Add(1)
			log.Info("browser process replaced", zap.Int("pid", nb.mainPID), zap.Int("dead_pid", b.mainPID), zap.Duration("down", time.Since(time.Unix(0, b.diedAt.Load()))))
			break
		}
	}
}

// Replaced is closed when the pool next puts a new browser process in
// place of one that died (or when it closes): wait on it, then call again
// for the next.
func (p *Pool) Replaced() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.changed
}

// Health is the pool's state.
func (p *Pool) Health() BrowserHealth {
	p.mu.Lock()
	slots := append([]*Browser(nil), p.slots...)
	p.mu.Unlock()
	h := BrowserHealth{Browsers: len(slots), Supervised: true,
		Crashes: p.crashes.Load(), Restarts: p.restarts.Load(), RestartFailures: p.failures.Load()}
	for _, b := range slots {
		bp := b.process()
		if bp.Alive {
			h.Alive++
		}
		h.Processes = append(h.Processes, bp)
	}
	return h
}

// Close stops the supervisors and closes every browser process (and so
// every environment still open on them).
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
	p.stop()
	p.wg.Wait()
	p.mu.Lock()
	slots := append([]*Browser(nil), p.slots...)
	p.mu.Unlock()
	errs := make([]error, len(slots))
	var wg sync.WaitGroup
	for i, b := range slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = b.Close()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

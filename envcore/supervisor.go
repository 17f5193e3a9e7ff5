package envcore

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore/fleet"
)

// A supervised pool of browser processes. Environments are spread over N
// Chromium processes started with the same settings (binary, user,
// sandbox, switches, per-context proxies, warm contexts), each new one on
// the process with the fewest, so a browser that dies (the OOM killer's
// pick, a crash of Chromium itself, a kill -9) takes at most its share of
// the environments with it. A fleet.Keeper supervises the processes: when
// one dies, every environment on it answers its next operation with a
// *BrowserCrashedError, and a replacement starts at once; a process that
// keeps dying is restarted after a delay that doubles up to
// fleet.MaxRestartDelay. An environment's next Reset or RestoreState after
// the crash starts it on a live process (the replacement, having none, is
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

// Pool is a supervised set of browser processes (a fleet.Keeper of
// Browsers). It is safe for concurrent use.
type Pool struct {
	keep *fleet.Keeper[member]
}

// member is a Browser as the fleet sees it.
type member struct{ b *Browser }

func (m member) Closed() <-chan struct{} { return m.b.proc.Closed() }
func (m member) Close() error            { return m.b.Close() }
func (m member) Started() time.Time      { return m.b.started }
func (m member) DiedAt() time.Time       { return time.Unix(0, m.b.diedAt.Load()) }
func (m member) PID() int                { return m.b.mainPID }
func (m member) Placed() int             { return int(m.b.placed.Load()) }

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
	keep, err := fleet.Keep(ctx, log, n, func(ctx context.Context, log *zap.Logger) (member, error) {
		b, err := launch(ctx, log, opts, true)
		return member{b}, err
	})
	if err != nil {
		return nil, err
	}
	log.Info("browser pool started", zap.Int("browsers", n))
	return &Pool{keep: keep}, nil
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
	var best, bestAny *Browser
	for _, m := range p.keep.Members() {
		b := m.b
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
		changed := p.keep.Replaced() // closed by Close too
		if p.keep.Closing() {
			return nil, ErrClosed
		}
		if b := p.pick(true); b != nil {
			return b, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("no browser process is running and none was restarted in time (they are restarted with a back-off of up to %s; see the server's log): %w", fleet.MaxRestartDelay, ctx.Err())
		}
	}
}

// Replaced is closed when the pool next puts a new browser process in
// place of one that died (or when it closes): wait on it, then call again
// for the next.
func (p *Pool) Replaced() <-chan struct{} { return p.keep.Replaced() }

// Health is the pool's state.
func (p *Pool) Health() BrowserHealth {
	members := p.keep.Members()
	c := p.keep.Counts()
	h := BrowserHealth{Browsers: len(members), Supervised: true,
		Crashes: c.Crashes, Restarts: c.Restarts, RestartFailures: c.RestartFailures}
	for _, m := range members {
		bp := m.b.process()
		if bp.Alive {
			h.Alive++
		}
		h.Processes = append(h.Processes, bp)
	}
	return h
}

// Close stops the supervisors and closes every browser process (and so
// every environment still open on them).
func (p *Pool) Close() error { return p.keep.Close() }

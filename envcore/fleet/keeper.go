package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// A Member is one process a Keeper keeps running.
type Member interface {
	// Closed is closed when the member has ended, on its own or by Close.
	Closed() <-chan struct{}
	// Close ends the member and reaps what it leaves; it may be called
	// more than once.
	Close() error
	// Started is when the member started; DiedAt when it was found dead.
	Started() time.Time
	DiedAt() time.Time
	// PID and Placed (the work it holds, environments for envcore) are
	// what the Keeper logs of a member that dies.
	PID() int
	Placed() int
}

// Restart back-off: the first restart of a slot is immediate; each
// further one in a row waits firstRestartDelay, doubling up to
// MaxRestartDelay. A member that ran stableAfter before dying starts the
// count again.
const (
	firstRestartDelay = time.Second
	// MaxRestartDelay is the longest wait before a restart: a caller
	// waiting for a live member waits at most about this long.
	MaxRestartDelay = 30 * time.Second
	stableAfter     = time.Minute
)

// restartDelay is the wait before the n-th restart in a row (n ≥ 1).
func restartDelay(n int) time.Duration {
	if n <= 1 {
		return 0
	}
	d := firstRestartDelay
	for i := 2; i < n && d < MaxRestartDelay; i++ {
		d *= 2
	}
	return min(d, MaxRestartDelay)
}

// Counts are what a Keeper has seen of its members.
type Counts struct {
	// Crashes counts members that ended without the Keeper closing them;
	// Restarts the replacements started; RestartFailures the replacements
	// that failed to start (each is retried after the back-off).
	Crashes, Restarts, RestartFailures int64
}

// A Keeper keeps n members running, replacing each that dies. It is safe
// for concurrent use.
type Keeper[M Member] struct {
	log   *zap.Logger
	start func(ctx context.Context, log *zap.Logger) (M, error)
	ctx   context.Context // ends with Close: stops the supervisors
	stop  context.CancelFunc
	wg    sync.WaitGroup

	crashes, restarts, failures atomic.Int64

	mu      sync.Mutex
	slots   []M
	changed chan struct{} // closed and replaced when a slot gets a new member
	closed  bool
}

// Keep starts n members (n ≥ 1) with start, at once, and keeps them
// running until Close. start gets ctx for the first members and the
// Keeper's own (ended by Close) for replacements, and log with the
// member's slot as "browser". A member that cannot be started fails Keep,
// which then closes the others.
func Keep[M Member](ctx context.Context, log *zap.Logger, n int, start func(ctx context.Context, log *zap.Logger) (M, error)) (*Keeper[M], error) {
	if log == nil {
		log = zap.NewNop()
	}
	if n < 1 {
		return nil, fmt.Errorf("keep %d browser processes: give 1 or more", n)
	}
	kctx, stop := context.WithCancel(context.Background())
	k := &Keeper[M]{log: log, start: start, ctx: kctx, stop: stop, slots: make([]M, n), changed: make(chan struct{})}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k.slots[i], errs[i] = start(ctx, log.With(zap.Int("browser", i)))
		}()
	}
	wg.Wait()
	if err := startError(errs); err != nil {
		stop()
		for i, m := range k.slots {
			if errs[i] == nil {
				_ = m.Close()
			}
		}
		return nil, err
	}
	for i := range n {
		k.wg.Add(1)
		go k.supervise(i)
	}
	return k, nil
}

// startError is the error of members that failed to start (errs[i]: slot
// i's), said once when they all failed alike (a missing user, a sandbox
// that cannot start), else per slot.
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

// supervise watches slot i's member and replaces it whenever it dies,
// until Close.
func (k *Keeper[M]) supervise(i int) {
	defer k.wg.Done()
	log := k.log.With(zap.Int("browser", i))
	inARow := 0
	for {
		k.mu.Lock()
		m := k.slots[i]
		k.mu.Unlock()
		select {
		case <-k.ctx.Done():
			return
		case <-m.Closed():
		}
		if k.ctx.Err() != nil {
			return
		}
		k.crashes.Add(1)
		if time.Since(m.Started()) >= stableAfter {
			inARow = 0
		}
		go func() { _ = m.Close() }() // reap its processes and directories
		for {
			inARow++
			wait := restartDelay(inARow)
			log.Warn("restarting a browser process that died", zap.Int("dead_pid", m.PID()), zap.Int("lost_environments", m.Placed()),
				zap.Int("restart_in_a_row", inARow), zap.Duration("after", wait))
			select {
			case <-k.ctx.Done():
				return
			case <-time.After(wait):
			}
			nm, err := k.start(k.ctx, log)
			if err != nil {
				if k.ctx.Err() != nil {
					return
				}
				k.failures.Add(1)
				log.Error("a replacement browser process failed to start; trying again after the back-off", zap.Error(err))
				continue
			}
			k.mu.Lock()
			if k.closed {
				k.mu.Unlock()
				_ = nm.Close()
				return
			}
			k.slots[i] = nm
			close(k.changed)
			k.changed = make(chan struct{})
			k.mu.Unlock()
			k.restarts.Add(1)
			log.Info("browser process replaced", zap.Int("pid", nm.PID()), zap.Int("dead_pid", m.PID()), zap.Duration("down", time.Since(m.DiedAt())))
			break
		}
	}
}

// Members are the members now in the slots, in slot order; a dead one
// stays until its replacement starts.
func (k *Keeper[M]) Members() []M {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]M(nil), k.slots...)
}

// Replaced is closed when the Keeper next puts a new member in place of
// one that died (or when it closes): wait on it, then call again for the
// next.
func (k *Keeper[M]) Replaced() <-chan struct{} {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.changed
}

// Closing reports whether Close has been called.
func (k *Keeper[M]) Closing() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.closed
}

// Counts are the crashes, restarts and failed restarts so far.
func (k *Keeper[M]) Counts() Counts {
	return Counts{Crashes: k.crashes.Load(), Restarts: k.restarts.Load(), RestartFailures: k.failures.Load()}
}

// Close stops the supervisors and closes every member, at once.
func (k *Keeper[M]) Close() error {
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return nil
	}
	k.closed = true
	close(k.changed)
	k.changed = make(chan struct{})
	k.mu.Unlock()
	k.stop()
	k.wg.Wait()
	slots := k.Members()
	errs := make([]error, len(slots))
	var wg sync.WaitGroup
	for i, m := range slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = m.Close()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

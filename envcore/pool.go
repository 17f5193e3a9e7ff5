package envcore

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// A warm pool of browser contexts: each holds one prepared blank tab, so a
// Reset (or a fork's RestoreState) takes a context that exists instead of
// waiting for Chromium to create one and start its renderer, which many
// environments resetting at once would otherwise do one after another.
// BrowserOptions.WarmContexts sets its size; 0 turns it off. Only
// environments with the default viewport use it.
//
// Refilling is background work and yields to the foreground: it waits while
// environments are resetting, stepping or being restored, up to
// maxRefillDelay after the pool was last drawn from, so a burst of resets or
// forks does not compete with the pool refilling behind it (on a small
// machine Chromium's CPU is the bottleneck of such a burst).

// maxRefillDelay bounds how long the refill yields to busy environments.
const maxRefillDelay = 2 * time.Second

type warmContext struct {
	holder *Env // owns the context until an environment takes it
}

// startPool fills the pool in the background and keeps it full.
func (b *Browser) startPool(n int) {
	b.pool = make(chan *warmContext, n)
	b.poolWake = make(chan struct{}, 1)
	go func() {
		for {
			for len(b.pool) < cap(b.pool) {
				b.waitQuiet()
				w, err := b.warmOne()
				if err != nil {
					if b.ctx.Err() == nil {
						b.log.Warn("warm browser context failed", zap.Error(err))
					}
					break
				}
				select {
				case b.pool <- w:
				default:
					_ = w.holder.Close()
				}
			}
			select {
			case <-b.ctx.Done():
				return
			case <-b.poolWake:
			case <-time.After(5 * time.Second):
			}
		}
	}()
}

// drainPool ends the warm contexts' holders still in the pool, for Close:
// their watches stop, and their contexts go with the browser.
func (b *Browser) drainPool() {
	if b.pool == nil {
		return
	}
	for {
		select {
		case w := <-b.pool:
			w.holder.abandon()
		default:
			return
		}
	}
}

// working marks an environment operation in progress until the returned
// function is called; the pool's refill waits for none to be.
func (b *Browser) working() func() {
	b.busy.Add(1)
	return func() { b.busy.Add(-1) }
}

// waitQuiet returns once no environment operation is in progress, or
// maxRefillDelay after the pool was last drawn from.
func (b *Browser) waitQuiet() {
	for b.busy.Load() > 0 && time.Since(time.Unix(0, b.lastTake.Load())) < maxRefillDelay {
		select {
		case <-b.ctx.Done():
			return
		case <-time.After(25 * time.Millisecond):
		}
	}
}

func (b *Browser) warmOne() (*warmContext, error) {
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	h := b.newHolder()
	id, _, err := b.newContext(ctx, h)
	if err != nil {
		return nil, err
	}
	h.tabMu.Lock()
	h.ctxID = id
	h.tabMu.Unlock()
	if _, err := h.openTab(ctx); err != nil {
		_ = h.Close()
		return nil, err
	}
	return &warmContext{holder: h}, nil
}

// takeWarm moves a pooled context with its tab to e, or reports false.
// The caller holds e.mu and has disposed of e's last context.
func (b *Browser) takeWarm(e *Env) (*tab, bool) {
	if b.pool == nil || e.cfg.Viewport != (Config{}).withDefaults().Viewport {
		return nil, false
	}
	var w *warmContext
	select {
	case w = <-b.pool:
	default:
		return nil, false
	}
	b.lastTake.Store(time.Now().UnixNano())
	select {
	case b.poolWake <- struct{}{}:
	default:
	}
	h := w.holder
	h.tabMu.Lock()
	id, tabs := h.ctxID, h.tabs
	h.ctxID, h.tabs = "", nil
	h.tabMu.Unlock()
	if len(tabs) != 1 {
		return nil, false
	}
	b.mu.Lock()
	b.contexts[id] = e
	b.mu.Unlock()
	t := tabs[0]
	t.mu.Lock()
	t.env = e
	t.mu.Unlock()
	e.tabMu.Lock()
	e.ctxID = id
	e.tabs, e.active = []*tab{t}, 0
	e.tabMu.Unlock()
	e.bindContext(b.contextProxy(id))
	return t, true
}

// freshContext gives e a new browser context with one blank tab, in the
// browser its placer gives it (its own while that lives): a warm one when
// that browser's pool has it, else a new one.
func (e *Env) freshContext(ctx context.Context) (*tab, error) {
	b, err := e.src.place(ctx, e)
	if err != nil {
		return nil, err
	}
	e.moveTo(b)
	if t, ok := b.takeWarm(e); ok {
		return t, nil
	}
	id, p, err := b.newContext(ctx, e)
	if err != nil {
		return nil, err
	}
	e.tabMu.Lock()
	e.ctxID = id // written under both locks: addTab reads it under tabMu alone
	e.tabMu.Unlock()
	e.bindContext(p)
	return e.openTab(ctx)
}

// abandon closes a holder without disposing of its context (its browser
// is closing).
func (e *Env) abandon() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.closed {
		e.closed = true
		close(e.quit)
	}
}

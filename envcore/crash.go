package envcore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// ErrBrowserCrashed is wrapped by the error of every operation of an
// environment whose browser process died under it (a *BrowserCrashedError).
var ErrBrowserCrashed = errors.New("the browser process crashed")

// BrowserCrashedError is what an environment answers, until its next Reset
// or RestoreState, once the browser process its pages were in has died (a
// SIGKILL, the OOM killer, a crash of Chromium itself): its pages, cookies
// and history are gone with it. Under a Pool the reset starts the
// environment on a live browser; a lone Browser (Launch) has none to offer.
type BrowserCrashedError struct {
	PID        int       // the browser process that died
	Died       time.Time // when the server saw it die
	Supervised bool      // a Pool starts a replacement
	// Cause is why the server ended a browser that lived but could no
	// longer serve (its zygotes gone); "" when it died on its own.
	Cause string
}

func (e *BrowserCrashedError) Error() string {
	what := fmt.Sprintf("the browser process (pid %d) this environment's pages were in died at %s, taking the episode's pages with it", e.PID, e.Died.UTC().Format(time.RFC3339))
	if e.Cause != "" {
		what = fmt.Sprintf("the browser process (pid %d) this environment's pages were in was ended by the server at %s because %s, taking the episode's pages with it", e.PID, e.Died.UTC().Format(time.RFC3339), e.Cause)
	}
	if e.Supervised {
		return what + "; the server is starting a replacement: reset the environment to go on"
	}
	return what + "; nothing restarts it: restart the program"
}

func (e *BrowserCrashedError) Unwrap() error { return ErrBrowserCrashed }

// watchExit waits for the browser's DevTools pipe to close and, unless
// Close closed it, records and logs the death.
func (b *Browser) watchExit() {
	<-b.proc.Closed()
	b.diedAt.Store(time.Now().UnixNano())
	if ce := b.crashErr(); ce != nil {
		b.log.Error("browser process died", zap.Int("pid", ce.PID), zap.Int("environments", int(b.placed.Load())),
			zap.Duration("uptime", time.Since(b.started)), zap.Bool("supervised", b.supervised))
	}
}

// crashErr is the browser's crash, or nil while it lives or when Close
// ended it.
func (b *Browser) crashErr() *BrowserCrashedError {
	if b.Alive() {
		return nil
	}
	b.mu.RLock()
	deliberate, cause := b.deliberate, b.cause
	b.mu.RUnlock()
	if deliberate {
		return nil
	}
	died := time.Now()
	if ns := b.diedAt.Load(); ns != 0 {
		died = time.Unix(0, ns)
	}
	return &BrowserCrashedError{PID: b.mainPID, Died: died, Supervised: b.supervised, Cause: cause}
}

// crashed is the crash of e's browser while e has pages in it, else nil.
// The caller holds e.mu.
func (e *Env) crashed() error {
	if e.ctxID == "" {
		return nil
	}
	if ce := e.br().crashErr(); ce != nil {
		return ce
	}
	return nil
}

// orCrash is err, or, when e's browser died under the operation, the
// crash (of which err, a closed pipe or a call that got no answer, is
// only a symptom).
func (e *Env) orCrash(err error) error {
	if err == nil {
		return nil
	}
	if ce := e.br().crashErr(); ce != nil {
		return ce
	}
	return err
}

// live is ctx, cancelled also when e's browser dies, so that an operation
// under way (a settle waiting for the page, a call that will get no
// answer) ends at once and answers the crash (orCrash). When the browser
// is already dead, ctx as it is: a Reset or RestoreState moves e to a live
// one. The caller holds e.mu and calls stop when done.
func (e *Env) live(ctx context.Context) (_ context.Context, stop func()) {
	b := e.br()
	if !b.Alive() {
		return ctx, func() {}
	}
	lctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		select {
		case <-b.proc.Closed():
			cancel(ErrBrowserCrashed)
		case <-lctx.Done():
		case <-done:
		}
	}()
	return lctx, func() {
		close(done)
		cancel(nil)
	}
}

package envcore

import (
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore/chromium"
)

// A browser whose zygote processes have ended lives on and answers the
// DevTools protocol, but starts no renderer, so it opens no page: every
// new tab would wait out openTabTimeout and be reported as an overloaded
// host, forever, while the health said the browser was alive. Zygotes end
// when the OOM killer picks one, or when a kill meant for the browser
// reaches one. Such a browser is ended as a crash ends it: its
// environments answer BrowserCrashedError (an infrastructure fault, never
// an agent's) and a Pool starts a replacement.

// wedgeCheckEvery is how often a tab that is slow to open checks that its
// browser can still start pages.
const wedgeCheckEvery = 2 * time.Second

// startsPages reports whether b can still start renderers
// (chromium.StartsPages).
func (b *Browser) startsPages() bool { return chromium.StartsPages(b.mainPID) }

// endWedged ends b's processes because cause keeps it from serving, and
// waits (briefly) until its end is seen, so that the caller's next look
// finds it dead.
func (b *Browser) endWedged(cause string) {
	b.mu.Lock()
	if b.cause == "" {
		b.cause = cause
	}
	b.mu.Unlock()
	b.log.Error("ending a browser process that can no longer serve", zap.Int("pid", b.mainPID), zap.String("cause", cause),
		zap.Int("environments", int(b.placed.Load())), zap.Bool("supervised", b.supervised))
	b.proc.Kill()
	select {
	case <-b.proc.Closed():
	case <-time.After(5 * time.Second):
	}
}

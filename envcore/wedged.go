package envcore

import (
	"bytes"
	"os"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/internal/procstat"
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

// startsPages reports whether b can still start renderers: false once no
// zygote process is left under it. A browser run without zygotes
// (--no-zygote, --single-process) always can.
func (b *Browser) startsPages() bool {
	cmd, err := os.ReadFile("/proc/" + strconv.Itoa(b.mainPID) + "/cmdline")
	if err != nil || bytes.Contains(cmd, []byte("--no-zygote")) || bytes.Contains(cmd, []byte("--single-process")) {
		return true // gone (the crash path says so) or zygote-free
	}
	all, err := procstat.Processes()
	if err != nil {
		return true
	}
	children := map[int][]int{}
	for _, p := range all {
		children[p.Parent] = append(children[p.Parent], p.PID)
	}
	for next := children[b.mainPID]; len(next) > 0; {
		pid := next[0]
		next = append(next[1:], children[pid]...)
		cmd, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err == nil && bytes.Contains(cmd, []byte("--type=zygote")) {
			return true
		}
	}
	return false
}

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
	b.proc.kill()
	select {
	case <-b.proc.conn.closed:
	case <-time.After(5 * time.Second):
	}
}

package envcore

import (
	"context"
	"time"

	"github.com/go-rod/rod"
	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore/chromium"
)

// StartChromium starts Chromium as Launch does, for benchmarks that drive
// it themselves (a mode Launch does not offer): a rod connection to it
// over its DevTools pipe, its process id, and what stops it and removes
// its directories.
func StartChromium(ctx context.Context, opts BrowserOptions) (rb *rod.Browser, pid int, stop func(), err error) {
	po := opts.processOptions()
	p, err := chromium.Start(ctx, zap.NewNop(), chromium.Bin(po), po)
	if err != nil {
		return nil, 0, nil, err
	}
	rb, err = p.Connect(ctx, ctx, p.Pipe())
	if err != nil {
		_ = p.Stop(0)
		return nil, 0, nil, err
	}
	return rb, p.PID(), func() { _ = p.Stop(0) }, nil
}

// BrowserRod is b's rod connection, for benchmarks that read Chromium
// directly (its traces).
func BrowserRod(b *Browser) *rod.Browser { return b.rod }

// BrowserPID is the process id of b's Chromium.
func BrowserPID(b *Browser) int { return b.proc.PID() }

// BrowserDir is the directory that holds b's profile, HOME and TMPDIR.
func BrowserDir(b *Browser) string { return b.proc.Dir() }

// ReportedRequests names the requests the browser reported the active
// tab of env creating (netwatch.go), "METHOD URL (kind)", oldest first.
func ReportedRequests(env *Env) []string {
	t := env.activeTab()
	if t == nil {
		return nil
	}
	var out []string
	for _, r := range t.net.log.Since(time.Time{}) {
		out = append(out, r.Method+" "+r.URL+" ("+r.Dest+")")
	}
	return out
}

// BrowserMainPID is the pid of b's Chromium browser process itself (not
// its wrapper script or guard).
func BrowserMainPID(b *Browser) int { return b.mainPID }

// EnvBrowserPID is the pid of the Chromium browser process e's pages are
// in.
func EnvBrowserPID(e *Env) int { return e.br().mainPID }

// PoolRootPIDs are the pids at the root of each of the pool's browsers'
// process trees (the guard's child), for finding every process of them.
func PoolRootPIDs(p *Pool) []int {
	var out []int
	for _, m := range p.keep.Members() {
		out = append(out, m.b.proc.PID())
	}
	return out
}

// LaunchUnreported is Launch for a browser whose tabs get no Network
// reports (netwatch.go): the benchmark that weighs them.
func LaunchUnreported(ctx context.Context) (*Browser, error) {
	b, err := Launch(ctx, zap.NewNop(), BrowserOptions{})
	if err == nil {
		b.unreported = true
	}
	return b, err
}

// LaunchUnsampled launches a browser whose environments' pages are never
// sampled for their resource limits, for the benchmark that weighs what
// the samples cost.
func LaunchUnsampled(ctx context.Context) (*Browser, error) {
	b, err := Launch(ctx, zap.NewNop(), BrowserOptions{})
	if err == nil {
		b.unsampled = true
	}
	return b, err
}

// GivenUp is why e was given up (a limit its pages went over, its browser
// lost), nil while it is usable: tests of the watch between steps wait on
// it rather than on time.
func (e *Env) GivenUp() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lost
}

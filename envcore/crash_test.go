package envcore_test

import (
	"errors"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/internal/procstat"
)

// A renderer killed with SIGKILL ends only its environment's page: that
// environment's next step fails (and not as a browser crash: the browser
// lives), a reset recovers it, and the environment beside it, in the same
// browser, steps on untouched.
func TestKilledRendererLosesOnlyItsEnvironment(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	b, err := envcore.Launch(ctx, zap.NewNop(), envcore.BrowserOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cfg := envcore.Config{IdleWindow: 100 * time.Millisecond}
	victim, neighbour := b.NewEnv(cfg), b.NewEnv(cfg)
	defer victim.Close()
	defer neighbour.Close()
	for _, e := range []*envcore.Env{victim, neighbour} {
		if _, _, err := e.Reset(ctx, site.URL+"/a.html"); err != nil {
			t.Fatal(err)
		}
	}
	// Each browser context has a renderer of its own; the victim's is
	// the one that holds 256 MiB more than any other.
	if err := victim.Evaluate(ctx, `(window.held = new Uint8Array(256 << 20).fill(1), true)`, nil); err != nil {
		t.Fatal(err)
	}
	procs, err := procstat.Processes()
	if err != nil {
		t.Fatal(err)
	}
	rss := map[int]int64{}
	for _, p := range procs {
		rss[p.PID] = p.RSS
	}
	var renderers []chromiumProc
	for _, p := range browserTree(t, envcore.BrowserPID(b)) {
		if p.renderer() {
			renderers = append(renderers, p)
		}
	}
	sort.Slice(renderers, func(i, j int) bool { return rss[renderers[i].pid] > rss[renderers[j].pid] })
	if len(renderers) < 2 || rss[renderers[0].pid]-rss[renderers[1].pid] < 200<<20 {
		t.Fatalf("cannot tell the victim's renderer: %d renderers, resident sizes %v", len(renderers), rss)
	}
	pid := renderers[0].pid
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := procstat.WaitExit(ctx, pid); err != nil {
		t.Fatal(err)
	}
	if _, _, err := victim.StepText(ctx, `click("go-to-b")`); err == nil || errors.Is(err, envcore.ErrBrowserCrashed) {
		t.Errorf("the victim's step after its renderer was killed: %v; want its page's failure, not a browser crash", err)
	} else if !strings.Contains(err.Error(), "reset") && !strings.Contains(err.Error(), "Reset") {
		t.Errorf("the victim's error does not say a reset recovers: %v", err)
	}
	if obs, _, err := neighbour.StepText(ctx, `click("go-to-b")`); err != nil || !strings.HasSuffix(obs.URL, "/b.html") {
		t.Errorf("the neighbour's step: %v (at %q); want it untouched", err, obs.URL)
	}
	if _, _, err := victim.Reset(ctx, site.URL+"/a.html"); err != nil {
		t.Fatalf("the victim's reset: %v", err)
	}
	if obs, _, err := victim.StepText(ctx, `click("go-to-b")`); err != nil || !strings.HasSuffix(obs.URL, "/b.html") {
		t.Errorf("the victim's step after its reset: %v (at %q)", err, obs.URL)
	}
}

package envcore_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
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

// A step under way when its browser process dies ends at once with the
// crash, however long it would have waited for the page: here its settle
// waits for a request the server holds, with a settle timeout longer than
// the test's context.
func TestStepUnderWayEndsWhenItsBrowserDies(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	defer close(release)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			arrived <- struct{}{}
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		fmt.Fprint(w, `<!doctype html><button onclick="fetch('/hold')">Hold</button>`)
	}))
	defer hs.Close()
	b, err := envcore.Launch(ctx, zap.NewNop(), envcore.BrowserOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	env := b.NewEnv(envcore.Config{IdleWindow: 100 * time.Millisecond, SettleTimeout: 10 * time.Minute, LongRequest: 10 * time.Minute})
	defer env.Close()
	if _, _, err := env.Reset(ctx, hs.URL); err != nil {
		t.Fatal(err)
	}
	stepped := make(chan error, 1)
	go func() {
		_, _, err := env.StepText(ctx, `click("hold")`)
		stepped <- err
	}()
	select {
	case <-arrived:
	case err := <-stepped:
		t.Fatalf("the step ended before its request reached the server: %v", err)
	}
	// Both may have happened by now (a select picks either): a step that
	// already returned did not wait for the fetch its click started, a
	// settle fault, not the crash path this test is about.
	select {
	case err := <-stepped:
		t.Fatalf("the step ended while its fetch was still held by the server (settle did not wait for it): %v", err)
	default:
	}
	pid := envcore.BrowserMainPID(b)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-stepped:
		var ce *envcore.BrowserCrashedError
		if !errors.As(err, &ce) || ce.PID != pid || ce.Supervised {
			t.Errorf("the step under way: %v; want the crash of pid %d, unsupervised", err, pid)
		}
	case <-ctx.Done():
		t.Fatal("the step under way did not end when its browser died")
	}
}

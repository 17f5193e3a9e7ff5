package envcore_test

import (
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/internal/procstat"
)

// A browser process of a pool of two killed with SIGKILL: the
// environments on it answer ErrBrowserCrashed, those on the other step on
// untouched, the supervisor starts a replacement, a reset of a lost
// environment works, a new environment works, and Close leaves no process
// of any of the browsers running.
func TestPoolSurvivesAKilledBrowser(t *testing.T) {
	ctx := testCtx(t)
	pool, err := envcore.LaunchPool(ctx, zap.NewNop(), envcore.BrowserOptions{}, 2)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = pool.Close()
		}
	}()
	var envs []*envcore.Env
	for i := range 4 {
		e := pool.NewEnv(envcore.Config{IdleWindow: 100 * time.Millisecond})
		defer e.Close()
		if _, _, err := e.Reset(ctx, site.URL+"/a.html"); err != nil {
			t.Fatalf("env %d: reset: %v", i, err)
		}
		envs = append(envs, e)
	}
	h := pool.Health()
	if h.Browsers != 2 || h.Alive != 2 || !h.Supervised || len(h.Processes) != 2 || h.Processes[0].Envs != 2 || h.Processes[1].Envs != 2 {
		t.Fatalf("health after 4 environments on 2 browsers: %+v; want 2 alive with 2 environments each", h)
	}
	victim := h.Processes[0].PID
	var lost, kept []*envcore.Env
	for _, e := range envs {
		if envcore.EnvBrowserPID(e) == victim {
			lost = append(lost, e)
		} else {
			kept = append(kept, e)
		}
	}
	var tree []chromiumProc
	for _, root := range envcore.PoolRootPIDs(pool) {
		tree = append(tree, browserTree(t, root)...)
	}

	replaced := pool.Replaced()
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := procstat.WaitExit(ctx, victim); err != nil {
		t.Fatal(err)
	}
	for i, e := range lost {
		_, _, err := e.StepText(ctx, `click("go-to-b")`)
		var ce *envcore.BrowserCrashedError
		if !errors.As(err, &ce) || !errors.Is(err, envcore.ErrBrowserCrashed) || ce.PID != victim || !ce.Supervised {
			t.Fatalf("lost env %d: step after its browser was killed: %v; want a *BrowserCrashedError for pid %d", i, err, victim)
		}
		if !strings.Contains(err.Error(), "reset") {
			t.Errorf("the crash error does not say a reset recovers: %v", err)
		}
		if _, err := e.Observe(ctx, envcore.ObserveOptions{}); !errors.Is(err, envcore.ErrBrowserCrashed) {
			t.Errorf("lost env %d: observe: %v; want the crash until a reset", i, err)
		}
	}
	for i, e := range kept {
		obs, _, err := e.StepText(ctx, `click("go-to-b")`)
		if err != nil || !strings.HasSuffix(obs.URL, "/b.html") {
			t.Fatalf("env %d on the other browser: step: %v (at %q); want it untouched", i, err, obs.URL)
		}
	}
	for i, e := range lost {
		obs, _, err := e.Reset(ctx, site.URL+"/a.html")
		if err != nil || !strings.HasSuffix(obs.URL, "/a.html") {
			t.Fatalf("lost env %d: reset: %v (at %q)", i, err, obs.URL)
		}
		if envcore.EnvBrowserPID(e) == victim {
			t.Errorf("lost env %d was reset on the dead browser", i)
		}
		if obs, _, err := e.StepText(ctx, `click("go-to-b")`); err != nil || !strings.HasSuffix(obs.URL, "/b.html") {
			t.Fatalf("lost env %d: step after its reset: %v (at %q)", i, err, obs.URL)
		}
	}

	select {
	case <-replaced:
	case <-ctx.Done():
		t.Fatalf("no replacement browser started: %+v", pool.Health())
	}
	h = pool.Health()
	if h.Alive != 2 || h.Crashes != 1 || h.Restarts != 1 || slices.ContainsFunc(h.Processes, func(p envcore.BrowserProcess) bool { return p.PID == victim }) {
		t.Errorf("health after the replacement: %+v; want 2 alive, 1 crash, 1 restart, pid %d gone", h, victim)
	}
	fresh := pool.NewEnv(envcore.Config{IdleWindow: 100 * time.Millisecond})
	defer fresh.Close()
	if obs, _, err := fresh.Reset(ctx, site.URL+"/a.html"); err != nil || !strings.HasSuffix(obs.URL, "/a.html") {
		t.Fatalf("a new environment after the crash: %v (at %q)", err, obs.URL)
	}
	for _, root := range envcore.PoolRootPIDs(pool) {
		tree = append(tree, browserTree(t, root)...)
	}

	for _, e := range append(envs, fresh) {
		_ = e.Close()
	}
	closed = true
	if err := pool.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	for _, p := range tree {
		if st, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/cmdline"); err == nil && strings.ReplaceAll(string(st), "\x00", " ") == p.cmdline {
			t.Errorf("after Close, pid %d (%.90s) still runs", p.pid, p.cmdline)
		}
	}
}

// A pool whose browsers cannot start fails to launch, saying which and
// why.
func TestPoolThatCannotStartFails(t *testing.T) {
	t.Parallel()
	_, err := envcore.LaunchPool(testCtx(t), zap.NewNop(), envcore.BrowserOptions{Bin: "/bin/false"}, 2)
	if err == nil || !strings.Contains(err.Error(), "start browser") || !strings.Contains(err.Error(), "of 2") || !strings.Contains(err.Error(), "chromium ended") {
		t.Fatalf("launch with a browser that exits at once: %v; want an error naming the browser and what happened", err)
	}
}

// The browser's DevTools protocol is on a pipe: no process of the browser
// listens on a TCP port (which any local process could connect to), and
// the browser works.
func TestDevToolsIsOnAPipeNotAPort(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{})
	mustReset(t, env, "/a.html")
	tree := browserTree(t, envcore.BrowserPID(browser))
	var pids []int
	for _, p := range tree {
		pids = append(pids, p.pid)
		if strings.Contains(p.cmdline, "--remote-debugging-port") {
			t.Errorf("pid %d was started with a DevTools port: %.200s", p.pid, p.cmdline)
		}
	}
	main := envcore.BrowserMainPID(browser)
	if !slices.Contains(pids, main) {
		t.Fatalf("the browser process %d is not in the browser's tree %v", main, pids)
	}
	listeners, err := procstat.TCPListeners(pids)
	if err != nil {
		t.Fatal(err)
	}
	if len(listeners) > 0 {
		t.Errorf("processes of the browser listen on TCP: %v (pid: local addresses)", listeners)
	}
	if obs, _, err := env.StepText(testCtx(t), `click("go-to-b")`); err != nil || !strings.HasSuffix(obs.URL, "/b.html") {
		t.Errorf("a step over the pipe: %v (at %q)", err, obs.URL)
	}
}

// A pool's browser whose zygote processes have ended (the OOM killer's
// pick, or a kill meant for the browser) lives on but can start no page.
// The next reset on it answers the browser's crash, saying why, instead
// of waiting out the tab timeout as an overloaded host forever; the pool
// replaces the browser, and the reset after that works.
func TestABrowserThatCanStartNoPageIsReplaced(t *testing.T) {
	ctx := testCtx(t)
	pool, err := envcore.LaunchPool(ctx, zap.NewNop(), envcore.BrowserOptions{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	e := pool.NewEnv(envcore.Config{IdleWindow: 100 * time.Millisecond})
	defer e.Close()
	if _, _, err := e.Reset(ctx, site.URL+"/a.html"); err != nil {
		t.Fatal(err)
	}
	main := envcore.EnvBrowserPID(e)
	zygotes := 0
	for _, p := range browserTree(t, envcore.PoolRootPIDs(pool)[0]) {
		if strings.Contains(p.cmdline, "--type=zygote") {
			zygotes++
			if err := syscall.Kill(p.pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				t.Fatal(err) // ESRCH: it ended with the zygote before it
			}
		}
	}
	if zygotes == 0 {
		t.Fatal("the browser has no zygote process to end")
	}
	replaced := pool.Replaced()
	_, _, err = e.Reset(ctx, site.URL+"/a.html")
	var ce *envcore.BrowserCrashedError
	if !errors.As(err, &ce) || ce.PID != main || !ce.Supervised || !strings.Contains(ce.Error(), "zygote") {
		t.Fatalf("a reset on a browser whose zygotes ended: %v; want the crash of pid %d, saying why", err, main)
	}
	select {
	case <-replaced:
	case <-ctx.Done():
		t.Fatal("the pool did not replace the browser that could start no page")
	}
	obs, _, err := e.Reset(ctx, site.URL+"/a.html")
	if err != nil || !strings.HasSuffix(obs.URL, "/a.html") {
		t.Fatalf("the reset after the replacement: %v (at %q)", err, obs.URL)
	}
	if h := pool.Health(); h.Crashes != 1 || h.Alive != 1 || h.Processes[0].PID == main {
		t.Errorf("health after the replacement: %+v", h)
	}
}

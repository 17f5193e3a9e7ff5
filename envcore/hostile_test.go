package envcore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/internal/procstat"
)

// The hostile-policy suite: what a learning policy early in training emits,
// and what the pages it reaches do, must neither hang a step nor hurt the
// host or another environment. Each test runs alone (not in parallel) under
// guard: a second environment steps all along and must succeed every time,
// and the host memory of the browser and the test process is sampled and
// must stay within a stated bound of where it started.

// hostBound is how far the host memory (Chromium's processes and the test
// process) may rise during one hostile test. The limits it checks are far
// below (MaxMemoryMB is set to 256 MB where memory is the point); the bound
// is generous because the watch samples, and a page allocates between
// samples.
const hostBound = 2 << 30

// guard starts a second environment stepping beside the test and samples
// the host memory; the returned func stops both and checks them.
func guard(t *testing.T) (check func()) {
	t.Helper()
	rss := func() int64 {
		b, err := procstat.TreeRSS(envcore.BrowserPID(browser))
		if err != nil {
			t.Fatalf("host memory: %v", err)
		}
		own, err := procstat.TreeRSS(os.Getpid()) // the browser is the test's child: this includes it
		if err != nil || own < b {
			return b
		}
		return own
	}
	base := rss()
	var peak atomic.Int64
	peak.Store(base)
	other := newEnv(t, envcore.Config{})
	mustReset(t, other, "/inputs.html")
	done := make(chan struct{})
	var wg sync.WaitGroup
	var steps atomic.Int64
	failures := make(chan string, 100)
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			want := fmt.Sprintf("step %d", i)
			obs, info, err := other.StepText(testCtx(t), `fill("profile.full-name", "`+want+`")`)
			switch {
			case err != nil:
				failures <- err.Error()
			case info.ActionError != "":
				failures <- info.ActionError
			case inputValue(obs, "profile.full-name") != want:
				failures <- "the field holds " + inputValue(obs, "profile.full-name")
			default:
				steps.Add(1)
			}
		}
	}()
	go func() {
		defer wg.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if m := rss(); m > peak.Load() {
				peak.Store(m)
			}
		}
	}()
	return func() {
		t.Helper()
		close(done)
		wg.Wait()
		close(failures)
		for f := range failures {
			t.Errorf("the other environment's step failed: %s", f)
		}
		if steps.Load() == 0 {
			t.Errorf("the other environment made no step")
		}
		rise := peak.Load() - base
		t.Logf("host memory: %d MB at the start, %d MB at the peak; the other environment made %d steps", base>>20, peak.Load()>>20, steps.Load())
		if rise > hostBound {
			t.Errorf("host memory rose by %d MB, over the bound of %d MB", rise>>20, hostBound>>20)
		}
	}
}

// Oversized input is the agent's fault: bad_action with the limit in the
// message, the episode goes on, and nothing of the input comes back whole.
func TestHostileOversizedInputIsBadAction(t *testing.T) {
	defer guard(t)()
	env := newEnv(t, envcore.Config{})
	mustReset(t, env, "/hostile.html")
	mb := strings.Repeat("x", 1<<20)
	for _, c := range []struct {
		name, action, says string
	}{
		{"a 200 KB fill", `fill("notes", "` + strings.Repeat("y", 200_000) + `")`, "text is 200000 characters; the limit is 32768"},
		{"a 10 MB fill", `fill("notes", "` + strings.Repeat("z", 10<<20) + `")`, "bytes; the limit is"},
		{"a 1 MB id", `click("` + mb + `")`, "bytes; the limit is"},
		{"a 200 KB id", `click("` + mb[:200_000] + `")`, "target is 200000 characters; the limit is 512"},
	} {
		obs, info := mustStep(t, env, c.action)
		if info.ActionErrorCode != "bad_action" || !strings.Contains(info.ActionError, c.says) {
			t.Errorf("%s: error %.300q (%s), want bad_action saying %q", c.name, info.ActionError, info.ActionErrorCode, c.says)
		}
		if n := len(obs.LastAction) + len(obs.LastActionError); n > 2*envcore.MaxEchoChars+200 {
			t.Errorf("%s: the observation echoes %d bytes of the input", c.name, n)
		}
	}
	// The structured form, as the server passes it, is bounded the same way.
	obs, info, err := env.Step(testCtx(t), envcore.Action{Type: envcore.Type, Target: "notes", Text: strings.Repeat("w", 10<<20)})
	if err != nil || info.ActionErrorCode != "bad_action" || !strings.Contains(info.ActionError, "text is 10485760 characters; the limit is 32768") {
		t.Errorf("a structured 10 MB fill: %v, %.300q (%s)", err, info.ActionError, info.ActionErrorCode)
	}
	if len(obs.LastAction) > 100 || strings.Contains(obs.HTML, "www") {
		t.Errorf("a structured 10 MB fill reached the page or came back: last action %.100q", obs.LastAction)
	}
	// The episode goes on.
	obs = mustAct(t, env, `fill("notes", "still here")`)
	if v := inputValue(obs, "notes"); v != "still here" {
		t.Errorf("fill after the refused ones: %q", v)
	}
}

// Long text within the limit goes in at once (time proportional to its
// length), and the page still sees it typed: input events with the whole
// value, and a key event at its end. Short text is typed key by key.
func TestHostileLongFillGoesInWhole(t *testing.T) {
	defer guard(t)()
	env := newEnv(t, envcore.Config{})
	mustReset(t, env, "/hostile.html")
	obs := mustAct(t, env, `fill("notes", "short")`)
	if !strings.Contains(obs.HTML, "keys:5 inputs:5") {
		t.Errorf("a short fill is typed key by key: the page counted\n%s", obs.HTML)
	}
	keys, inputs := 5, 5
	for _, n := range []int{10_000, 32768} {
		text := strings.Repeat("0123456789abcdef\n", n/17) + strings.Repeat("x", n%17)
		obs = mustAct(t, env, `fill("notes", "`+strings.ReplaceAll(text, "\n", `\n`)+`")`)
		if v := inputValue(obs, "notes"); v != text {
			t.Errorf("fill of %d characters: the field holds %d", n, len(v))
		}
		// One keydown (the last character) and two input events (the
		// inserted text, the last character) more than before.
		var k, in int
		fmt.Sscanf(regexp.MustCompile(`keys:\d+ inputs:\d+`).FindString(obs.HTML), "keys:%d inputs:%d", &k, &in)
		if k != keys+1 || in != inputs+2 {
			t.Errorf("fill of %d characters: the page counted keys:%d inputs:%d after keys:%d inputs:%d", n, k, in, keys, inputs)
		}
		keys, inputs = k, in
	}
	// A contenteditable region takes long text through CDP; a maxlength
	// holds as it does for typing.
	long := strings.Repeat("abcdefghij", 1000)
	obs = mustAct(t, env, `fill("pad", "`+long+`")`)
	if v := inputValue(obs, "pad"); v != long {
		t.Errorf("contenteditable after a long fill holds %d characters: %.40q", len(v), v)
	}
	obs = mustAct(t, env, `fill("short", "`+long+`")`)
	if v := inputValue(obs, "short"); v != long[:100] {
		t.Errorf("a maxlength=100 field after a long fill holds %d characters", len(v))
	}
}

// A page that spins forever after a click: the step returns at its
// deadline with the page's script stopped, and the episode goes on.
func TestHostileSpinningPageIsStopped(t *testing.T) {
	defer guard(t)()
	env := newEnv(t, envcore.Config{ActionTimeout: 2 * time.Second, SettleTimeout: 2 * time.Second, ObserveTimeout: 3 * time.Second})
	mustReset(t, env, "/hostile.html")
	obs, info, err := env.StepText(testCtx(t), `click("spin")`)
	if err != nil {
		t.Fatalf("spin: %v", err)
	}
	if info.ActionErrorCode != "timeout" || !strings.Contains(info.ActionError, "did not finish within 2s") {
		t.Errorf("spin: %q (%s)", info.ActionError, info.ActionErrorCode)
	}
	if !strings.Contains(obs.HTML, "Hostile") {
		t.Errorf("spin: the observation is not the page's:\n%.300s", obs.HTML)
	}
	obs = mustAct(t, env, `fill("notes", "after the spin")`)
	if v := inputValue(obs, "notes"); v != "after the spin" {
		t.Errorf("fill after the spin: %q", v)
	}
	// A script that starts spinning after the action: the settle gives up
	// at its timeout, the observation at its own, and the page's script is
	// stopped so that it can be read.
	obs, info, err = env.StepText(testCtx(t), `click("spin-later")`)
	if err != nil || info.ActionError != "" || info.Settled || !strings.Contains(obs.HTML, "after the spin") {
		t.Fatalf("spin after the action: %v, %+v\n%.300s", err, info, obs.HTML)
	}
	obs = mustAct(t, env, `fill("notes", "after the late spin")`)
	if v := inputValue(obs, "notes"); v != "after the late spin" {
		t.Errorf("fill after the late spin: %q", v)
	}
}

// A page held where its script cannot be stopped (a synchronous request
// that never returns): the step fails with ErrUnresponsive at its deadline,
// the environment answers so until Reset, and after Reset it works again.
func TestHostileHungPageIsGivenUp(t *testing.T) {
	defer guard(t)()
	env := newEnv(t, envcore.Config{ActionTimeout: 2 * time.Second, SettleTimeout: 2 * time.Second, ObserveTimeout: 3 * time.Second})
	mustReset(t, env, "/hostile.html")
	_, _, err := env.StepText(testCtx(t), `click("hang")`)
	if !errors.Is(err, envcore.ErrUnresponsive) || !strings.Contains(err.Error(), "click did not finish within 2s") || !strings.Contains(err.Error(), "call Reset") {
		t.Fatalf("hung page: %v", err)
	}
	if _, _, err := env.StepText(testCtx(t), `noop()`); !errors.Is(err, envcore.ErrUnresponsive) {
		t.Errorf("a step after the environment was given up: %v", err)
	}
	mustReset(t, env, "/hostile.html")
	obs := mustAct(t, env, `fill("notes", "after the reset")`)
	if v := inputValue(obs, "notes"); v != "after the reset" {
		t.Errorf("fill after the reset: %q", v)
	}
}

// A page that allocates without bound: the step that sees it over
// MaxMemoryMB, or the next one when the watch between steps saw it, fails
// with a *ResourceLimitError naming memory; the environment answers so
// until Reset, and works again after it.
func TestHostileMemoryIsBounded(t *testing.T) {
	defer guard(t)()
	env := newEnv(t, envcore.Config{MaxMemoryMB: 256})
	mustReset(t, env, "/hostile.html")
	_, _, err := env.StepText(testCtx(t), `click("allocate")`)
	if err == nil { // the step ended before a sample saw the page over
		waitGivenUp(t, env) // the agent thinks; the page goes on
		_, _, err = env.StepText(testCtx(t), `noop()`)
	}
	var rl *envcore.ResourceLimitError
	if !errors.Is(err, envcore.ErrResourceLimit) || !errors.As(err, &rl) || rl.What != "memory" || rl.Used <= 256<<20 ||
		!strings.Contains(err.Error(), "limit is 256 MB") {
		t.Fatalf("a page allocating without bound: %v", err)
	}
	if _, _, err := env.StepText(testCtx(t), `noop()`); !errors.Is(err, envcore.ErrResourceLimit) {
		t.Errorf("a step after the limit: %v", err)
	}
	mustReset(t, env, "/hostile.html")
	mustAct(t, env, `fill("notes", "after the reset")`)
}

// waitGivenUp waits, while no step runs, for the watch between steps to
// give env up (a loaded host samples late, so no fixed wait would do).
func waitGivenUp(t *testing.T, env *envcore.Env) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for env.GivenUp() == nil {
		select {
		case <-ctx.Done():
			t.Fatal("the watch between steps did not give the environment up within 3 minutes")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// misbehave starts the ?hoard or ?spin page's misbehaviour, once the reset
// has observed the page (a start on a timer raced the reset's own reading
// of the page on a loaded host).
func misbehave(t *testing.T, env *envcore.Env) {
	t.Helper()
	if err := env.Evaluate(testCtx(t), "window.misbehave = true", nil); err != nil {
		t.Fatalf("start the page's misbehaviour: %v", err)
	}
}

// A page that allocates while no step runs (the agent thinks) is caught by
// the watch between steps: the host's memory stays within the bound (the
// page alone would pass it within the wait), and the next step answers
// the *ResourceLimitError at once.
func TestHostileMemoryIsBoundedBetweenSteps(t *testing.T) {
	defer guard(t)()
	env := newEnv(t, envcore.Config{MaxMemoryMB: 256})
	mustReset(t, env, "/hostile.html?hoard")
	misbehave(t, env)
	waitGivenUp(t, env) // the guard holds the host's memory to the bound meanwhile
	_, _, err := env.StepText(testCtx(t), `noop()`)
	var rl *envcore.ResourceLimitError
	if !errors.As(err, &rl) || rl.What != "memory" {
		t.Fatalf("a page allocating between steps: %v", err)
	}
}

// A page that spins while no step runs is over its CPU limit once it has
// been busy for MaxBusy without a break: the next step answers the
// *ResourceLimitError, and the environment works again after Reset.
func TestHostileSpinBetweenStepsIsBounded(t *testing.T) {
	defer guard(t)()
	env := newEnv(t, envcore.Config{MaxBusy: 2 * time.Second})
	mustReset(t, env, "/hostile.html?spin")
	misbehave(t, env)
	waitGivenUp(t, env) // the agent thinks; the page spins
	_, _, err := env.StepText(testCtx(t), `noop()`)
	var rl *envcore.ResourceLimitError
	if !errors.As(err, &rl) || rl.What != "cpu" || rl.Used < 2000 || !strings.Contains(err.Error(), "busy without a break") {
		t.Fatalf("a page spinning between steps: %v", err)
	}
	mustReset(t, env, "/hostile.html")
	mustAct(t, env, `fill("notes", "after the reset")`)
}

// A DOM that doubles every frame: the step fails over MaxDOMNodes instead
// of hanging the extraction, and the environment works again after Reset.
func TestHostileDOMIsBounded(t *testing.T) {
	defer guard(t)()
	env := newEnv(t, envcore.Config{})
	mustReset(t, env, "/hostile.html")
	_, _, err := env.StepText(testCtx(t), `click("grow")`)
	if err == nil { // the step ended before a sample saw the page over
		waitGivenUp(t, env) // the agent thinks; the page goes on
		_, _, err = env.StepText(testCtx(t), `noop()`)
	}
	var rl *envcore.ResourceLimitError
	if !errors.As(err, &rl) || rl.What != "dom_nodes" || rl.Limit != 300_000 || !strings.Contains(err.Error(), "DOM size") {
		t.Fatalf("a DOM doubling every frame: %v", err)
	}
	mustReset(t, env, "/hostile.html")
	mustAct(t, env, `fill("notes", "after the reset")`)
}

// A page that opens tabs in a loop: the environment keeps MaxTabs, closes
// the others as they appear and says so; the episode goes on.
func TestHostileTabLoopIsCapped(t *testing.T) {
	defer guard(t)()
	env := newEnv(t, envcore.Config{MaxTabs: 5, ActionTimeout: 60 * time.Second}) // refusing a popup takes Chromium ~0.1 s
	mustReset(t, env, "/hostile.html")
	obs, info := mustStep(t, env, `click("open-tabs")`)
	if info.ActionError != "" || len(obs.Tabs) != 5 || obs.BlockedTabs != 26 {
		t.Errorf("30 window.open: %q, %d tabs, %d blocked", info.ActionError, len(obs.Tabs), obs.BlockedTabs)
	}
	mustAct(t, env, `tab_focus(0)`)
	obs = mustAct(t, env, `fill("notes", "after the tabs")`)
	if v := inputValue(obs, "notes"); v != "after the tabs" {
		t.Errorf("fill after the tab loop: %q", v)
	}
}

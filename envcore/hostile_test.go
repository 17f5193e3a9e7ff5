package envcore_test

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/webserv-rl/webserv/envcore"
)

// The hostile-policy suite: what a learning policy early in training emits,
// and what the pages it reaches do, must neither hang a step nor hurt the
// host or another environment.

// Oversized input is the agent's fault: bad_action with the limit in the
// message, the episode goes on, and nothing of the input comes back whole.
func TestHostileOversizedInputIsBadAction(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
	env := newEnv(t, envcore.Config{ActionTimeout: 2 * time.Second, SettleTimeout: 2 * time.Second, ObserveTimeout: 3 * time.Second})
	mustReset(t, env, "/hostile.html")
	obs, info, err := env.StepText(testCtx(t), `click("spin")`)
	if err != nil {
		t.Fatalf("spin: %v", err)
	}
	if info.ActionErrorCode != "timeout" || !strings.Contains(info.ActionError, "was stopped") {
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
	t.Parallel()
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

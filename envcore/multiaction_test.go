package envcore_test

import (
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/envcore"
)

// Several calls, one a line, as BrowserGym's multi-action mode sends them,
// parse to the actions in order; a bad line is named.
func TestParseActionsReadsOneCallALine(t *testing.T) {
	acts, err := envcore.ParseActions("```python\nclick('a51')\n# then type\nfill('a12', \"two\\nlines (x)\"); keyboard_press('Enter')\n```")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`click("a51")`, `fill("a12", "two\nlines (x)")`, `keyboard_press("Enter")`}
	if len(acts) != len(want) {
		t.Fatalf("got %d actions %v, want %v", len(acts), acts, want)
	}
	for i, a := range acts {
		if a.String() != want[i] {
			t.Errorf("action %d = %s, want %s", i+1, a, want[i])
		}
	}
	for _, c := range []struct{ in, says string }{
		{"click('a')\nfly('b')", `line 2, fly('b'): unknown action "fly"`},
		{"click('a')\n\nclick [b]", "line 3: expected a call"},
		{"stop('x')\nclick('a')", "line 1, stop('x'): it ends the episode, so it must be the last action"},
		{"click('a')\nfill('b')", "line 2, fill('b'): fill(...) needs the text to type"},
		{strings.Repeat("noop()\n", envcore.MaxStepActions+1), "11 actions in one step; the limit is 10"},
		{`click("a") extra`, "one action per step; several actions go on separate lines"},
	} {
		if _, err := envcore.ParseActions(c.in); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("ParseActions(%q) = %v, want an error saying %q", c.in, err, c.says)
		}
	}
}

// A step of several lines runs them in order; the first that fails stops
// it, and the error names it and says the rest did not run.
func TestMultiActionStepRunsInOrderAndStopsAtTheFirstError(t *testing.T) {
	env := newEnv(t, envcore.Config{})
	mustReset(t, env, "/bgactions.html")
	obs := mustAct(t, env, "click('target')\nfill('field', 'first')\npress('field', 'Enter')")
	for _, want := range []string{"click on=target", `value="first"`, "keydown key=enter on=field"} {
		if !strings.Contains(obs.HTML, want) {
			t.Errorf("the page does not show %q after the three lines:\n%s", want, obs.HTML)
		}
	}
	if obs.LastAction != "click(\"target\")\nfill(\"field\", \"first\")\npress(\"field\", \"Enter\")" {
		t.Errorf("last action = %q, want the three lines", obs.LastAction)
	}
	obs, info := mustStep(t, env, "fill('field', 'second')\nclick('nope')\nfill('field', 'third')")
	if info.ActionErrorCode != "missing" || !strings.Contains(info.ActionError, `action 2 of 3, click("nope"): `) || !strings.Contains(info.ActionError, "(the 1 after it did not run)") {
		t.Errorf("error %s %q, want the second line's missing, named, and the third not run", info.ActionErrorCode, info.ActionError)
	}
	if !strings.Contains(obs.HTML, `value="second"`) || strings.Contains(obs.HTML, `value="third"`) {
		t.Errorf("the first line must have run and the third not:\n%s", obs.HTML)
	}
}

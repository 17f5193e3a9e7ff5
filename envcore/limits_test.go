package envcore_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/envcore"
)

// limitOf is the bound ActionLimits states for field.
func limitOf(t testing.TB, field string) envcore.ActionLimit {
	t.Helper()
	for _, l := range envcore.ActionLimits() {
		if l.Field == field {
			return l
		}
	}
	t.Fatalf("no limit for %s in %v", field, envcore.ActionLimits())
	return envcore.ActionLimit{}
}

// Every string an action carries is bounded, in the string forms and in
// the structured form alike; the error states the limit and the size and
// quotes only a short prefix of the input.
func TestOversizedActionsAreRefusedWithTheLimit(t *testing.T) {
	text := limitOf(t, "text").MaxChars
	target := limitOf(t, "target").MaxChars
	long := func(n int) string { return strings.Repeat("x", n) }
	cases := []struct {
		in   string
		says string
	}{
		{`fill("q", "` + long(text+1) + `")`, "text is " + strconv.Itoa(text+1) + " characters; the limit is " + strconv.Itoa(text)},
		{`fill("q", "` + strings.Repeat("é", text+1) + `")`, "text is " + strconv.Itoa(text+1) + " characters"},
		{`keyboard_type("` + long(text+1) + `")`, "text is " + strconv.Itoa(text+1) + " characters"},
		{`type [q] [` + long(text+1) + `] [1]`, "text is " + strconv.Itoa(text+1) + " characters"},
		{`click("` + long(1_000_000/8) + `")`, "target is 125000 characters; the limit is " + strconv.Itoa(target)},
		{`click [` + long(target+1) + `]`, "target is " + strconv.Itoa(target+1) + " characters"},
		{`goto("http://a/` + long(limitOf(t, "url").MaxChars) + `")`, "url is"},
		{`keyboard_press("` + long(100) + `")`, "key is 100 characters"},
		{`stop("` + long(limitOf(t, "answer").MaxChars+1) + `")`, "answer is"},
		{`select_option("s", ["` + strings.Repeat(`a", "`, limitOf(t, "option").MaxItems) + `b"])`, "options; the limit is"},
		{`send_msg_to_user("` + long(text+1) + `")`, "text is"},
		{`click("` + long(envcore.MaxActionBytes) + `")`, "bytes; the limit is " + strconv.Itoa(envcore.MaxActionBytes)},
		{long(100_000) + `("a")`, "no action has a name that long"},
	}
	for _, c := range cases {
		_, err := envcore.ParseAction(c.in)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s...: error %v, want one saying %q", c.in[:30], err, c.says)
			continue
		}
		if len(err.Error()) > 400 {
			t.Errorf("%s...: the error quotes %d characters of the input:\n%s", c.in[:30], len(err.Error()), err)
		}
	}
	// The structured form is checked by Validate, which Step runs.
	tab := 0
	for _, a := range []envcore.Action{
		{Type: envcore.Type, Target: "q", Text: long(10 << 20)},
		{Type: envcore.Click, Target: long(1 << 20)},
		{Type: envcore.SwitchTab, Tab: &tab, URL: long(1 << 20)}, // unused fields are bounded too
		{Type: envcore.MouseClick, Button: long(1 << 10)},
	} {
		err := a.Validate()
		if err == nil || !strings.Contains(err.Error(), "the limit is") || len(err.Error()) > 400 {
			t.Errorf("%s action with an oversized field: %v", a.Type, err)
		}
	}
	// At the limit is fine.
	if _, err := envcore.ParseAction(`fill("q", "` + long(text) + `")`); err != nil {
		t.Errorf("fill at the limit: %v", err)
	}
}

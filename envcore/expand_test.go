package envcore_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/envcore"
)

// budgetEnv is an environment whose observations are budgeted: 1024
// tokens of the byte-level BPE.
func budgetEnv(t *testing.T) *envcore.Env {
	return newEnv(t, envcore.Config{Observe: envcore.ObserveOptions{MaxTokens: 1024, Counter: byteBPE(t)}})
}

// lastFold is the id of the last fold line of an observation's text.
func lastFold(t *testing.T, text string) string {
	t.Helper()
	m := foldRe.FindAllStringSubmatch(text, -1)
	if len(m) == 0 {
		t.Fatalf("no fold line:\n%s", text)
	}
	return m[len(m)-1][1]
}

// A row of a 1,000-row table (far over the budget, a fifth of the
// 5,000-row page test_budget.py expands: each observation walks every row)
// that the budget folded is reached with
// expand, in real Chromium: each expand shows the fold's rows first (within
// the budget, byte-stable, the page untouched), folds the rest under the
// id of the first left out, and the row, once shown, is clicked by its id.
func TestExpandReachesAFoldedRow(t *testing.T) {
	t.Parallel()
	env := budgetEnv(t)
	first := mustReset(t, env, "/table.html?rows=1000")
	if !first.ObsTruncated || first.ObsTokens > 1024 {
		t.Fatalf("the table is not pruned to 1024 tokens: %d tokens, truncated %v", first.ObsTokens, first.ObsTruncated)
	}
	row := regexp.MustCompile(`\[([^\]\s]+)\] link "Open 60"`)
	if row.MatchString(first.AXTree) {
		t.Fatalf("row 60 is shown without an expand:\n%s", first.AXTree)
	}
	var dom string
	if err := env.Evaluate(testCtx(t), "document.body.innerHTML", &dom); err != nil {
		t.Fatal(err)
	}
	obs := first
	for i := 0; !row.MatchString(obs.AXTree); i++ {
		if i == 5 {
			t.Fatalf("row 60 not shown after %d expands:\n%s", i, obs.AXTree)
		}
		fold := lastFold(t, obs.AXTree)
		obs = mustAct(t, env, `expand("`+fold+`")`)
		if obs.ObsTokens > 1024 || !strings.Contains(obs.AXTree, "showing "+fold+" first") {
			t.Fatalf("expand %s: %d tokens:\n%s", fold, obs.ObsTokens, obs.AXTree)
		}
		if i == 0 {
			again, err := env.Observe(testCtx(t), env.Config().Observe)
			if err != nil {
				t.Fatal(err)
			}
			if again.AXTree != obs.AXTree {
				t.Fatalf("expand %s: the page observed again gives other text", fold)
			}
		}
	}
	var after string
	if err := env.Evaluate(testCtx(t), "document.body.innerHTML", &after); err != nil {
		t.Fatal(err)
	}
	if after != dom || obs.Viewport.ScrollY != 0 || obs.URL != first.URL {
		t.Fatalf("expand changed the page (scrolled to %v, at %s)", obs.Viewport.ScrollY, obs.URL)
	}
	id := row.FindStringSubmatch(obs.AXTree)[1]
	if obs = mustAct(t, env, `click("`+id+`")`); obs.Title != "row-60" {
		t.Fatalf("clicking %s opened %q", id, obs.Title)
	}
	// The next navigation ends the expansion: the table opened again is as
	// first seen.
	if obs = mustAct(t, env, `goto("`+first.URL+`")`); obs.AXTree != first.AXTree {
		t.Fatalf("the expansion outlived a navigation:\n%s", obs.AXTree)
	}
}

// expand is validated like every action: an id that is not a fold id does
// not parse, a fold the last observation did not show is the agent's
// error (missing) naming the folds it did show, and neither changes the
// observation.
func TestExpandRefusesWhatTheObservationDidNotFold(t *testing.T) {
	t.Parallel()
	env := budgetEnv(t)
	first := mustReset(t, env, "/table.html?rows=300")
	fold := lastFold(t, first.AXTree)
	for _, c := range []struct{ action, code, says string }{
		{`expand("open-3")`, "bad_action", `expand takes the id of a folded part`},
		{`expand()`, "bad_action", `expand(...) needs an element id`},
		{`expand("fold-00000000-2")`, "missing", `no folded part "fold-00000000-2" in the last observation; its folds are ` + fold},
	} {
		obs, info := mustStep(t, env, c.action)
		if info.ActionErrorCode != c.code || !strings.Contains(info.ActionError, c.says) {
			t.Errorf("%s: %s %q", c.action, info.ActionErrorCode, info.ActionError)
		}
		if obs.AXTree != first.AXTree {
			t.Errorf("%s changed the observation", c.action)
		}
	}
	// Without a budget nothing is folded.
	plain := newEnv(t, envcore.Config{})
	mustReset(t, plain, "/big.html")
	if _, info := mustStep(t, plain, `expand("`+fold+`")`); info.ActionErrorCode != "missing" || !strings.Contains(info.ActionError, "folded nothing") {
		t.Errorf("expand without a budget: %s %q", info.ActionErrorCode, info.ActionError)
	}
}

package envcore_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/envcore"
)

// The HTML view under a budget (view "html"), in real Chromium: within the
// budget as the tokenizer counts it, still HTML (every element it opens it
// closes), the first screen's elements with their ids, byte-stable, and a
// folded row reached with expand and clicked by its id.
func TestBudgetedHTMLView(t *testing.T) {
	t.Parallel()
	bpe := byteBPE(t)
	env := newEnv(t, envcore.Config{Observe: envcore.ObserveOptions{MaxTokens: 1024, Counter: bpe, View: "html"}})
	first := mustReset(t, env, "/table.html?rows=1000")
	if first.AXTree != "" || !first.ObsTruncated || first.ObsTokens > 1024 || first.ObsTokens != bpe.Count(first.HTML) {
		t.Fatalf("html view: axtree %d bytes, truncated %v, %d tokens (counted %d)", len(first.AXTree), first.ObsTruncated, first.ObsTokens, bpe.Count(first.HTML))
	}
	lines := strings.Split(first.HTML, "\n")
	if !strings.HasPrefix(lines[0], "<title>") || !strings.HasPrefix(lines[len(lines)-1], "<!-- [observation cut to its token budget:") {
		t.Errorf("first and last lines: %q, %q", lines[0], lines[len(lines)-1])
	}
	if err := balanced(first.HTML); err != "" {
		t.Errorf("the budgeted html is not well nested: %s\n%s", err, first.HTML)
	}
	// At 4,096 tokens the budget has room for the whole first screen.
	full, err := env.Observe(testCtx(t), envcore.ObserveOptions{Geometry: true})
	if err != nil {
		t.Fatal(err)
	}
	wide, err := env.Observe(testCtx(t), envcore.ObserveOptions{MaxTokens: 4096, Counter: bpe, View: "html"})
	if err != nil || !wide.ObsTruncated || wide.ObsTokens > 4096 {
		t.Fatalf("at 4096 tokens: %d tokens, truncated %v, %v", wide.ObsTokens, wide.ObsTruncated, err)
	}
	ids := map[string]bool{}
	for _, m := range htmlID.FindAllStringSubmatch(wide.HTML, -1) {
		ids[m[1]] = true
	}
	onScreen := 0
	for _, id := range full.Clickable {
		if full.ExtraElementProperties[id].InViewport > 0 {
			onScreen++
			if !ids[id] {
				t.Errorf("clickable %s on the first screen is not in the html budgeted to 4096 tokens", id)
			}
		}
	}
	if onScreen == 0 {
		t.Fatal("no clickable element on the first screen")
	}
	again, err := env.Observe(testCtx(t), env.Config().Observe)
	if err != nil || again.HTML != first.HTML {
		t.Fatalf("observed again: other text (%v)", err)
	}

	row := regexp.MustCompile(`<a href="[^"]*" data-semantic-id="([^"]+)"[^>]*>Open 60</a>`)
	if row.MatchString(first.HTML) {
		t.Fatalf("row 60 is shown without an expand:\n%s", first.HTML)
	}
	obs := first
	for i := 0; !row.MatchString(obs.HTML); i++ {
		if i == 5 {
			t.Fatalf("row 60 not shown after %d expands:\n%s", i, obs.HTML)
		}
		fold := lastFold(t, obs.HTML)
		obs = mustAct(t, env, `expand("`+fold+`")`)
		if obs.ObsTokens > 1024 || !strings.Contains(obs.HTML, "showing "+fold+" first") || balanced(obs.HTML) != "" {
			t.Fatalf("expand %s: %d tokens, %s:\n%s", fold, obs.ObsTokens, balanced(obs.HTML), obs.HTML)
		}
	}
	id := row.FindStringSubmatch(obs.HTML)[1]
	if obs = mustAct(t, env, `click("`+id+`")`); obs.Title != "row-60" {
		t.Fatalf("clicking %s opened %q", id, obs.Title)
	}
}

// A budget prunes one text view: asking for the axtree with view "html"
// is refused, as is a view that does not exist.
func TestBudgetViewIsChecked(t *testing.T) {
	for _, o := range []envcore.ObserveOptions{
		{MaxTokens: 256, Counter: byteBPE(t), View: "html", AXTree: true},
		{View: "pdf"},
	} {
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "view") {
			t.Errorf("Validate(%+v) = %v; want an error about the view", o, err)
		}
	}
}

var (
	htmlID  = regexp.MustCompile(` data-semantic-id="([^"]+)"`)
	htmlTag = regexp.MustCompile(`<(/?)([a-zA-Z][a-zA-Z0-9-]*)(?:"[^"]*"|[^">])*>`)
	voidTag = []string{"input", "img", "br", "hr", "area", "wbr"}
)

// balanced is "" when every element s opens (comments aside) is closed in
// order, else what is wrong.
func balanced(s string) string {
	s = regexp.MustCompile(`(?s)<!--.*?-->`).ReplaceAllString(s, "")
	var open []string
	for _, m := range htmlTag.FindAllStringSubmatch(s, -1) {
		switch {
		case m[1] == "/":
			if len(open) == 0 || open[len(open)-1] != m[2] {
				return "</" + m[2] + "> closes " + strings.Join(open, ">")
			}
			open = open[:len(open)-1]
		case !slices.Contains(voidTag, m[2]):
			open = append(open, m[2])
		}
	}
	if len(open) > 0 {
		return "left open: " + strings.Join(open, ">")
	}
	return ""
}

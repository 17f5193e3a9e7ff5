package envcore_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/sites/shop"
)

// previousFeatures is the --disable-features list before RenderDocument
// joined it: Chromium's default navigation, a new renderer frame per
// document.
const previousFeatures = "site-per-process,TranslateUI,BackForwardCache,MediaRouter,OptimizationHints,AutofillServerCommunication,InterestFeedContentSuggestions"

// The Chromium features the browser turns off for speed change nothing an
// agent sees: one walk through the fixture pages and the shop (links,
// history, frames, a new tab, forms) gives the same observations, geometry
// included, in the browser as launched and in one that keeps those
// features on.
func TestSwitchesLeaveObservationsUnchanged(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	prev, err := envcore.Launch(ctx, zap.NewNop(), envcore.BrowserOptions{Flags: []string{"disable-features=" + previousFeatures}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = prev.Close() })

	dir := t.TempDir()
	if err := shop.Generate(ctx, dir, shop.GenerateOptions{Seed: 1}); err != nil {
		t.Fatal(err)
	}
	s, err := shop.Open(dir, shop.Options{SuggestDelay: 1, ReportDelay: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)

	// Each step is an action, or a function of the last observation
	// that picks one (the first clickable id containing a word).
	fx, sh := site.URL, hs.URL
	steps := []func(envcore.Observation) string{
		say(`goto("` + fx + `/a.html")`),
		clickFirst("b"), // a.html's link to b.html
		say(`go_back()`),
		say(`go_forward()`),
		say(`goto("` + fx + `/frame.html")`),
		say(`goto("` + fx + `/widgets.html")`),
		say(`goto("` + fx + `/inputs.html")`),
		say(`goto("` + fx + `/repeated.html")`),
		say(`goto("` + fx + `/geometry.html")`),
		say(`goto("` + fx + `/newtab.html")`),
		clickFirst(""),
		say(`goto("` + sh + `/")`),
		clickFirst("categories"),
		clickFirst("pages"),
		say(`goto("` + sh + `/search?q=alpine")`),
		say(`go_back()`),
		clickFirst("cart"),
	}
	walk := func(b *envcore.Browser) []string {
		env := b.NewEnv(envcore.Config{})
		t.Cleanup(func() { _ = env.Close() })
		obs, _, err := env.Reset(ctx, fx+"/state.html")
		if err != nil {
			t.Fatal(err)
		}
		out := []string{observed(t, "reset", obs)}
		for _, next := range steps {
			act := next(obs)
			obs, _, err = env.StepTextObserve(ctx, act, envcore.ObserveOptions{Geometry: true})
			if err != nil {
				t.Fatalf("%s: %v", act, err)
			}
			out = append(out, observed(t, act, obs))
		}
		return out
	}
	now, before := walk(browser), walk(prev)
	for i := range now {
		if now[i] != before[i] {
			at := 0
			for at < min(len(now[i]), len(before[i])) && now[i][at] == before[i][at] {
				at++
			}
			t.Fatalf("step %d differs at byte %d:\nas launched: …%s\nfeatures on: …%s", i, at, clip(now[i], at), clip(before[i], at))
		}
	}
}

func say(action string) func(envcore.Observation) string {
	return func(envcore.Observation) string { return action }
}

func clickFirst(word string) func(envcore.Observation) string {
	return func(obs envcore.Observation) string {
		for _, id := range obs.Clickable {
			if strings.Contains(id, word) {
				return `click("` + id + `")`
			}
		}
		return `noop()`
	}
}

// observed is the observation as JSON, after the action that led to it;
// ports are the same in both walks (one fixture server, one shop).
func observed(t *testing.T, act string, obs envcore.Observation) string {
	t.Helper()
	b, err := json.Marshal(obs)
	if err != nil {
		t.Fatal(err)
	}
	return act + " -> " + string(b)
}

// clip is s around byte at.
func clip(s string, at int) string {
	return s[max(0, at-200):min(len(s), at+200)]
}

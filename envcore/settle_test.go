package envcore_test

import (
	"strings"
	"testing"
	"time"

	"github.com/webserv-rl/webserv/envcore"
)

// Each case acts on a single-page-app fixture and requires the observation
// the step returns to hold the content the page shows once it is done. They
// run with the default 500ms idle window.
func TestStepWaitsForQuiescence(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, page, action, want string
	}{
		{"delayed fetch (800ms)", "/spa.html", `click("delayed-fetch")`, "DELAYED-DONE"},
		{"chained fetches with a gap", "/spa.html", `click("chained-fetches")`, "CHAINED-DONE"},
		{"XHR", "/spa.html", `click("xhr")`, "XHR-DONE"},
		{"render after the response", "/spa.html", `click("render-after-response")`, "RENDER-DONE"},
		{"pushState route change", "/spa.html", `click("route-change")`, "ROUTE-DONE"},
		{"form submit navigation", "/spa.html", `click("submit-form")`, "SUBMIT-LOADED"},
		{"fetch inside an iframe", "/widgets.html", `click("load-in-frame")`, "IFRAME-DONE"},
		{"page with an open EventSource", "/stream.html", `click("load-orders")`, "ORDERS-DONE"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env := newEnv(t, envcore.Config{IdleWindow: 500 * time.Millisecond})
			mustReset(t, env, c.page)
			if c.page == "/widgets.html" {
				mustAct(t, env, `click("dismiss")`)
			}
			obs := mustAct(t, env, c.action)
			if !strings.Contains(obs.HTML, c.want) {
				t.Errorf("observation lacks %s:\n%s", c.want, obs.HTML)
			}
		})
	}
}

// A new tab whose document arrives after the idle window is still the
// one the step waits for: Chromium reports it loading only when the
// response commits, and until then it shows an empty document.
func TestNewTabWithASlowDocumentIsWaitedFor(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{IdleWindow: 500 * time.Millisecond})
	mustReset(t, env, "/slowtab.html")
	obs := mustAct(t, env, `click("open-the-slow-report")`)
	if len(obs.Tabs) != 2 || obs.ActiveTab != 1 || !strings.Contains(obs.HTML, "SLOW-TAB-DONE") {
		t.Fatalf("the step returned before the new tab's document: tabs %+v\n%s", obs.Tabs, obs.HTML)
	}
}

func TestLinkOpeningANewTabIsFollowed(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{IdleWindow: 500 * time.Millisecond})
	mustReset(t, env, "/spa.html")
	obs := mustAct(t, env, `click("open-report")`)
	if len(obs.Tabs) != 2 || obs.ActiveTab != 1 {
		t.Fatalf("popup not made active: %+v", obs.Tabs)
	}
	// The popup got the injected counter before its own script ran, so the
	// step waited for the report's fetch.
	if obs.Title != "Report" || !strings.Contains(obs.HTML, "NEWTAB-DONE") {
		t.Errorf("popup observation: %q\n%s", obs.Title, obs.HTML)
	}
	obs = mustAct(t, env, `tab_focus(0)`)
	if obs.Title != "SPA" {
		t.Errorf("back to the first tab: %q", obs.Title)
	}
}

func TestLongLivedRequestsDoNotHoldSteps(t *testing.T) {
	t.Parallel()
	// The page holds a long-poll fetch open forever and an EventSource;
	// neither may make every step wait for the settle timeout.
	env := newEnv(t, envcore.Config{IdleWindow: 300 * time.Millisecond, LongRequest: time.Second, SettleTimeout: 8 * time.Second})
	obs, info, err := env.Reset(testCtx(t), site.URL+"/stream.html?longpoll")
	if err != nil {
		t.Fatal(err)
	}
	if !info.Settled {
		t.Fatalf("reset with a held long-poll did not settle: %s", info.SettleError)
	}
	obs, info = mustStep(t, env, `click("load-orders")`)
	if !info.Settled || !strings.Contains(obs.HTML, "ORDERS-DONE") {
		t.Errorf("step on a long-polling page: settled=%v %s\n%s", info.Settled, info.SettleError, obs.HTML)
	}
}

func TestSlowRequestsAreWaitedForPastTheLongRequestBound(t *testing.T) {
	t.Parallel()
	// The orders take three times LongRequest to come, and the server
	// answers nothing else meanwhile: a slow server (a loaded machine), not
	// a long poll, so the step waits for them.
	env := newEnv(t, envcore.Config{IdleWindow: 200 * time.Millisecond, LongRequest: 500 * time.Millisecond, SettleTimeout: 8 * time.Second})
	if _, _, err := env.Reset(testCtx(t), site.URL+"/stream.html?ms=1500"); err != nil {
		t.Fatal(err)
	}
	obs, info := mustStep(t, env, `click("load-orders")`)
	if !info.Settled || !strings.Contains(obs.HTML, "ORDERS-DONE") {
		t.Errorf("step with a slow request: settled=%v reason=%s %s\n%s", info.Settled, info.SettleReason, info.SettleError, obs.HTML)
	}
}

func TestPageThatNeverSettlesReportsIt(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{IdleWindow: 500 * time.Millisecond, SettleTimeout: 2 * time.Second})
	obs, info, err := env.Reset(testCtx(t), site.URL+"/endless.html")
	if err != nil {
		t.Fatal(err)
	}
	if info.Settled || info.SettleReason != envcore.SettleTimeout || !strings.Contains(info.SettleError, "did not settle within 2") {
		t.Fatalf("settled=%v reason=%q error=%q", info.Settled, info.SettleReason, info.SettleError)
	}
	// StepInfo names what was still pending: the page's request, caught
	// either in flight (GET) or while its body is read (READ).
	named := false
	for _, p := range info.Pending {
		named = named || (strings.HasPrefix(p, "GET ") || strings.HasPrefix(p, "READ ")) && strings.Contains(p, "/api/delay")
	}
	if !named {
		t.Errorf("pending = %q, want the /api/delay request named", info.Pending)
	}
	// The observation of that moment still comes back.
	if obs.Title != "Endless" || !strings.Contains(obs.HTML, "polling") {
		t.Errorf("no observation with the not-settled state: %q", obs.HTML)
	}
}

// Each case is work an action causes that network idleness alone misses or
// that background traffic used to hold until the settle timeout. The step
// must settle (not time out) with the final content in its observation.
func TestStepWaitsForWhatTheActionCaused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, page, action, want string
	}{
		{"a page polling every 300ms, with the action's fetch", "/poll.html", `click("load-pipeline")`, "POLL-DONE"},
		{"a setInterval ticker rewriting the DOM", "/ticker.html", `click("load-quote")`, "TICKER-DONE"},
		{"an analytics beacon loop", "/beacon.html", `click("load-offers")`, "BEACON-DONE"},
		{"a fetch the click handler starts 700ms later", "/causal.html", `click("fetch-later")`, "LATER-DONE"},
		{"a render timer of 800ms", "/causal.html", `click("render-on-a-timer")`, "RENDER-TIMER-DONE"},
		{"a chain of animation-frame renders", "/causal.html", `click("render-over-frames")`, "FRAMES-DONE"},
		{"a MessageChannel hop, then a 700ms timer", "/causal.html", `click("render-after-a-message")`, "MESSAGE-DONE"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env := newEnv(t, envcore.Config{IdleWindow: 500 * time.Millisecond})
			mustReset(t, env, c.page)
			obs, info := mustStep(t, env, c.action)
			if info.ActionError != "" {
				t.Fatalf("%s failed: %s", c.action, info.ActionError)
			}
			t.Logf("action %s, settle %s (%s)", info.Action, info.Settle, info.SettleReason)
			if !info.Settled || info.SettleReason != envcore.SettleDrained {
				t.Errorf("settled=%v reason=%q: %s", info.Settled, info.SettleReason, info.SettleError)
			}
			if !strings.Contains(obs.HTML, c.want) {
				t.Errorf("observation lacks %s:\n%s", c.want, obs.HTML)
			}
		})
	}
}

func TestLongTimersAreNotWaitedFor(t *testing.T) {
	t.Parallel()
	// The click shows its content at once and sets a 5s timer. A settle
	// timeout shorter than the timer makes waiting for it a timeout.
	env := newEnv(t, envcore.Config{IdleWindow: 500 * time.Millisecond, SettleTimeout: 4 * time.Second})
	mustReset(t, env, "/causal.html")
	obs, info := mustStep(t, env, `click("show-now-more-in-5s")`)
	if !info.Settled || info.SettleReason == envcore.SettleTimeout {
		t.Errorf("waited for a 5s timer: reason=%q %s", info.SettleReason, info.SettleError)
	}
	if !strings.Contains(obs.HTML, "SOON-DONE") {
		t.Errorf("observation lacks SOON-DONE:\n%s", obs.HTML)
	}
}

func TestResetWaitsForStartUpWork(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{IdleWindow: 500 * time.Millisecond})
	// The content arrives from a fetch 1.5s after the load event.
	obs, info, err := env.Reset(testCtx(t), site.URL+"/late.html")
	if err != nil {
		t.Fatal(err)
	}
	if !info.Settled || info.SettleReason != envcore.SettleDrained || !strings.Contains(obs.HTML, "LATE-DONE") {
		t.Errorf("reset: settled=%v reason=%q %s\n%s", info.Settled, info.SettleReason, info.SettleError, obs.HTML)
	}
	// A page that polls faster than any idle window settles too: an
	// interval is not start-up work.
	obs, info, err = env.Reset(testCtx(t), site.URL+"/busy.html")
	if err != nil {
		t.Fatal(err)
	}
	if !info.Settled || !strings.Contains(obs.HTML, "polling") {
		t.Errorf("reset onto a polling page: settled=%v %s", info.Settled, info.SettleError)
	}
}

func TestSettleReasonSaysWhyTheStepReturned(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{IdleWindow: 300 * time.Millisecond})
	mustReset(t, env, "/poll.html")
	// Background polling is not the noop's doing.
	_, info := mustStep(t, env, `noop()`)
	if !info.Settled || info.SettleReason != envcore.SettleIdle {
		t.Errorf("noop on a polling page: settled=%v reason=%q %s", info.Settled, info.SettleReason, info.SettleError)
	}
	_, info = mustStep(t, env, `click("load-pipeline")`)
	if info.SettleReason != envcore.SettleDrained {
		t.Errorf("click that fetches: reason=%q", info.SettleReason)
	}
	_, info = mustStep(t, env, `send_msg_to_user("hello")`)
	if info.SettleReason != "" {
		t.Errorf("a step that does not wait has reason %q", info.SettleReason)
	}
}

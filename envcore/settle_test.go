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

func TestPageThatNeverSettlesReportsIt(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{IdleWindow: 500 * time.Millisecond, SettleTimeout: 2 * time.Second})
	obs, info, err := env.Reset(testCtx(t), site.URL+"/busy.html")
	if err != nil {
		t.Fatal(err)
	}
	if info.Settled || !strings.Contains(info.SettleError, "did not settle within 2") {
		t.Fatalf("settled=%v error=%q", info.Settled, info.SettleError)
	}
	// The observation of that moment still comes back.
	if obs.Title != "Busy" || !strings.Contains(obs.HTML, "polling") {
		t.Errorf("no observation with the not-settled state: %q", obs.HTML)
	}
}

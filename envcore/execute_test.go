package envcore_test

import (
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/envcore"
)

func TestTypeClearSelectAndPress(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{})
	mustReset(t, env, "/inputs.html")

	obs := mustAct(t, env, `fill("profile.full-name", "Grace Hopper")`)
	if v := inputValue(obs, "profile.full-name"); v != "Grace Hopper" {
		t.Errorf("after fill: %q (typed text must replace the old value)", v)
	}
	obs = mustAct(t, env, `type [profile.notes] [New notes ✓] [0]`)
	if v := inputValue(obs, "profile.notes"); v != "New notes ✓" {
		t.Errorf("contenteditable after type: %q", v)
	}
	obs = mustAct(t, env, `clear("profile.about-you")`)
	if v := inputValue(obs, "profile.about-you"); v != "" {
		t.Errorf("textarea after clear: %q", v)
	}
	obs = mustAct(t, env, `fill("profile.born", "2001-02-03")`)
	if v := inputValue(obs, "profile.born"); v != "2001-02-03" {
		t.Errorf("date after fill: %q", v)
	}

	obs = mustAct(t, env, `select_option("profile.country", "France")`)
	if obs.Selects[0].Value != "fr" || !strings.Contains(obs.HTML, "country:fr") {
		t.Errorf("select by text: value %q, page:\n%s", obs.Selects[0].Value, obs.HTML)
	}
	obs = mustAct(t, env, `select_option("profile.langs", ["Italian", "English"])`)
	if got := strings.Join(obs.Selects[2].Selected, ","); got != "English,Italian" {
		t.Errorf("multi-select = %q", got)
	}
	obs = mustAct(t, env, `click("profile.country.united-kingdom")`) // an option id selects it
	if obs.Selects[0].Value != "uk" {
		t.Errorf("click on option id: value %q", obs.Selects[0].Value)
	}
	_, info := mustStep(t, env, `select_option("profile.country", "Spain")`)
	if info.ActionErrorCode != "no_option" || !strings.Contains(info.ActionError, `"France"`) {
		t.Errorf("unknown option error = %q (%s)", info.ActionError, info.ActionErrorCode)
	}
	_, info = mustStep(t, env, `select_option("profile.country", "Germany")`)
	if info.ActionErrorCode != "disabled" {
		t.Errorf("disabled option error = %q (%s)", info.ActionError, info.ActionErrorCode)
	}

	// WebArena's type presses Enter unless told [0]; the page's keydown
	// handler sees real key events.
	obs = mustAct(t, env, `type [search] [socks]`)
	if !strings.Contains(obs.HTML, "searched:socks") {
		t.Errorf("Enter after type not seen by the page:\n%s", obs.HTML)
	}
	obs = mustAct(t, env, `press("profile.full-name", "Enter")`)
	if !strings.Contains(obs.HTML, "saved:Grace Hopper") {
		t.Errorf("Enter in a field did not submit its form:\n%s", obs.HTML)
	}
	obs = mustAct(t, env, `click("profile.newsletter")`)
	for _, in := range obs.Inputs {
		if in.ID == "profile.newsletter" && (in.Checked == nil || *in.Checked) {
			t.Errorf("checkbox still checked after click")
		}
	}
}

func TestActionErrorsTheAgentCanActOn(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{})
	mustReset(t, env, "/inputs.html")
	cases := []struct {
		action, code, says string
	}{
		{`click("profile.full-nme")`, "missing", "look alike: profile.full-name"},
		{`fill("profile.save-profile", "x")`, "not_editable", "not a text field"},
		{`fill("profile.code", "x")`, "readonly", "read-only"},
		{`select_option("profile.full-name", "x")`, "not_select", "not a <select>"},
		{`tab_focus(3)`, "bad_tab", "tabs are numbered 0 to 0"},
		{`go_forward()`, "no_history", "no later page"},
		{`go_back()`, "no_history", "no earlier page"},
		{`goto("file:///etc/passwd")`, "bad_url", "http and https"},
		{`scroll [down]`, "bad_action", "scroll(delta_x, delta_y)"},
		{`mouse_click(1280, 10)`, "out_of_viewport", "outside the viewport, which is 1280x720"},
		{`mouse_drag_and_drop(10, 10, 10, -1)`, "out_of_viewport", "(10, -1) is outside"},
		{`click(`, "bad_action", "cannot parse"},
	}
	for _, c := range cases {
		obs, info := mustStep(t, env, c.action)
		if info.ActionErrorCode != c.code || !strings.Contains(info.ActionError, c.says) {
			t.Errorf("%s: error %q (%s), want code %s saying %q", c.action, info.ActionError, info.ActionErrorCode, c.code, c.says)
		}
		if obs.LastActionError != info.ActionError || obs.HTML == "" {
			t.Errorf("%s: the observation must carry the error and the page", c.action)
		}
	}
	// The episode goes on after errors.
	obs := mustAct(t, env, `fill("profile.full-name", "Still works")`)
	if inputValue(obs, "profile.full-name") != "Still works" {
		t.Errorf("env unusable after action errors")
	}
	// A server that refuses the connection: the error says so, and the
	// observation is at the URL that failed and says the page could not be
	// loaded, the same on every Chromium build (the full browser draws an
	// error page, the headless shell none).
	closed := closedPortURL(t)
	obs, info := mustStep(t, env, `goto("`+closed+`")`)
	if info.ActionErrorCode != "navigation" || !strings.Contains(info.ActionError, "ERR_CONNECTION_REFUSED") {
		t.Errorf("refused connection: %q (%s)", info.ActionError, info.ActionErrorCode)
	}
	if obs.URL != closed || !strings.Contains(obs.HTML, "This page could not be loaded") || obs.Tabs[obs.ActiveTab].URL != closed {
		t.Errorf("failed load observed at %s (tab %s):\n%s", obs.URL, obs.Tabs[obs.ActiveTab].URL, obs.HTML)
	}
}

// closedPortURL is a loopback URL nothing listens on.
func closedPortURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/"
}

func TestCoveredTargetIsReportedThenClickable(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{Retries: -1})
	mustReset(t, env, "/widgets.html")
	obs, info := mustStep(t, env, `click("buy-now")`)
	if info.ActionErrorCode != "covered" || !strings.Contains(info.ActionError, `id="overlay"`) {
		t.Fatalf("covered click: %q (%s)", info.ActionError, info.ActionErrorCode)
	}
	if strings.Contains(obs.HTML, "bought") {
		t.Fatalf("a covered element was clicked anyway")
	}
	mustAct(t, env, `click("dismiss")`)
	obs = mustAct(t, env, `click("buy-now")`)
	if !strings.Contains(obs.HTML, "bought") {
		t.Errorf("click after dismissing the overlay did nothing:\n%s", obs.HTML)
	}
	obs = mustAct(t, env, `click("shadow-add")`)
	if !strings.Contains(obs.HTML, "shadow clicked") {
		t.Errorf("click inside a shadow root did nothing")
	}
}

func TestDialogsAreAcceptedAndReported(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{})
	mustReset(t, env, "/widgets.html")
	mustAct(t, env, `click("dismiss")`)
	obs := mustAct(t, env, `click("show-alert")`)
	if len(obs.Dialogs) != 1 || obs.Dialogs[0].Type != "alert" || obs.Dialogs[0].Message != "Saved!" {
		t.Errorf("dialogs = %+v", obs.Dialogs)
	}
	if !strings.Contains(obs.HTML, "after alert") {
		t.Errorf("page blocked by its alert:\n%s", obs.HTML)
	}
	obs = mustAct(t, env, `click("ask")`)
	if !strings.Contains(obs.HTML, "confirmed") || len(obs.Dialogs) != 1 || obs.Dialogs[0].Type != "confirm" {
		t.Errorf("confirm not accepted: %+v\n%s", obs.Dialogs, obs.HTML)
	}
	obs = mustAct(t, env, `noop()`)
	if len(obs.Dialogs) != 0 {
		t.Errorf("dialogs reported twice: %+v", obs.Dialogs)
	}
}

func TestNavigationActions(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{})
	mustReset(t, env, "/a.html")
	obs := mustAct(t, env, `click("go-to-b")`)
	if obs.Title != "Page B" || !strings.Contains(obs.HTML, "loads 1") {
		t.Fatalf("link click: %q\n%s", obs.Title, obs.HTML)
	}
	obs = mustAct(t, env, `go_back()`)
	if obs.Title != "Page A" {
		t.Errorf("back: %q", obs.Title)
	}
	obs = mustAct(t, env, `go_forward()`)
	if obs.Title != "Page B" || !strings.Contains(obs.HTML, "loads 2") {
		t.Errorf("forward re-runs the page (no back/forward cache): %q\n%s", obs.Title, obs.HTML)
	}
	obs = mustAct(t, env, `refresh()`)
	if !strings.Contains(obs.HTML, "loads 3") {
		t.Errorf("refresh did not reload:\n%s", obs.HTML)
	}
	obs = mustAct(t, env, `goto("/a.html")`) // relative to the current page
	if obs.Title != "Page A" {
		t.Errorf("relative goto: %q", obs.Title)
	}
}

func TestTabActions(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{})
	mustReset(t, env, "/a.html")
	obs := mustAct(t, env, `new_tab("`+site.URL+`/b.html")`)
	if len(obs.Tabs) != 2 || obs.ActiveTab != 1 || obs.Title != "Page B" {
		t.Fatalf("new_tab: active %d tabs %+v", obs.ActiveTab, obs.Tabs)
	}
	if obs.Tabs[0].Title != "Page A" || obs.Tabs[0].Active || !obs.Tabs[1].Active {
		t.Errorf("tabs = %+v", obs.Tabs)
	}
	obs = mustAct(t, env, `tab_focus(0)`)
	if obs.ActiveTab != 0 || obs.Title != "Page A" {
		t.Errorf("tab_focus(0): %d %q", obs.ActiveTab, obs.Title)
	}
	obs = mustAct(t, env, `tab_close(1)`)
	if len(obs.Tabs) != 1 || obs.Title != "Page A" {
		t.Errorf("tab_close(1): %+v", obs.Tabs)
	}
	obs = mustAct(t, env, `new_tab()`)
	if len(obs.Tabs) != 2 || obs.ActiveTab != 1 || obs.URL != "about:blank" {
		t.Errorf("blank new_tab: %+v %q", obs.Tabs, obs.URL)
	}
	obs = mustAct(t, env, `close_tab`)
	if len(obs.Tabs) != 1 || obs.ActiveTab != 0 || obs.Title != "Page A" {
		t.Errorf("closing the active tab activates the one before: %+v", obs.Tabs)
	}
	obs = mustAct(t, env, `tab_close()`)
	if len(obs.Tabs) != 1 || obs.URL != "about:blank" {
		t.Errorf("closing the last tab leaves one blank tab: %+v", obs.Tabs)
	}
}

func TestTerminateEndsTheEpisode(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{})
	mustReset(t, env, "/a.html")
	obs := mustAct(t, env, `send_msg_to_user("on it")`)
	if len(obs.Chat) != 1 || obs.Chat[0].Text != "on it" {
		t.Errorf("chat = %+v", obs.Chat)
	}
	_, info := mustStep(t, env, `stop [42 items]`)
	if !info.Terminated || info.Answer != "42 items" || info.Infeasible {
		t.Errorf("terminate info = %+v", info)
	}
	if _, _, err := env.StepText(testCtx(t), `click("go-to-b")`); !errors.Is(err, envcore.ErrTerminated) {
		t.Errorf("step after terminate: %v", err)
	}
	obs = mustReset(t, env, "/b.html")
	if obs.Title != "Page B" || len(obs.Chat) != 0 {
		t.Errorf("reset after terminate: %q %+v", obs.Title, obs.Chat)
	}
	// A fresh context: the session storage of the last episode is gone.
	if !strings.Contains(obs.HTML, "loads 1") {
		t.Errorf("reset kept storage of the last episode:\n%s", obs.HTML)
	}
	_, info = mustStep(t, env, `report_infeasible("no such product")`)
	if !info.Terminated || !info.Infeasible {
		t.Errorf("report_infeasible = %+v", info)
	}
}

func TestClosedEnvironment(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{})
	if _, _, err := env.StepText(testCtx(t), `noop()`); !errors.Is(err, envcore.ErrNotReset) {
		t.Errorf("step before reset: %v", err)
	}
	mustReset(t, env, "/a.html")
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := env.StepText(testCtx(t), `noop()`); !errors.Is(err, envcore.ErrClosed) {
		t.Errorf("step after close: %v", err)
	}
	if _, _, err := env.Reset(testCtx(t), site.URL+"/a.html"); !errors.Is(err, envcore.ErrClosed) {
		t.Errorf("reset after close: %v", err)
	}
}

func inputValue(obs envcore.Observation, id string) string {
	for _, in := range obs.Inputs {
		if in.ID == id {
			return in.Value
		}
	}
	return "<no input " + id + ">"
}

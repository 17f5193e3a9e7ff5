package inject_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/launcher"
	"github.com/go-rod/rod/lib/proto"

	"github.com/webserv-rl/webserv/inject"
)

// These tests drive Debian's Chromium through rod directly (package inject
// must not depend on envcore): each page gets the bundle with
// Page.addScriptToEvaluateOnNewDocument, as envcore installs it.

var (
	browser *rod.Browser
	site    *httptest.Server
)

func TestMain(m *testing.M) {
	bin := os.Getenv("WEBSERV_CHROMIUM")
	if bin == "" {
		bin = "/usr/bin/chromium"
		if _, err := os.Stat("/usr/bin/chromium-headless-shell"); err == nil {
			bin = "/usr/bin/chromium-headless-shell" // what the server runs by default
		}
	}
	l := launcher.New().Bin(bin).Headless(true).Leakless(true).
		Set("disable-background-networking").Set("disable-component-update").Set("disable-sync").
		Set("no-first-run").Set("disable-quic").Set("disable-gpu")
	if os.Geteuid() == 0 {
		l.Set("no-sandbox")
	}
	u, err := l.Launch()
	if err != nil {
		fmt.Fprintln(os.Stderr, "launch chromium:", err)
		os.Exit(1)
	}
	browser = rod.New().ControlURL(u)
	if err := browser.Connect(); err != nil {
		fmt.Fprintln(os.Stderr, "connect:", err)
		os.Exit(1)
	}
	mux := http.NewServeMux()
	// /api/slow answers after 400 ms, or ?ms=N.
	mux.HandleFunc("/api/slow", func(w http.ResponseWriter, r *http.Request) {
		ms, err := strconv.Atoi(r.URL.Query().Get("ms"))
		if err != nil {
			ms = 400
		}
		time.Sleep(time.Duration(ms) * time.Millisecond)
		fmt.Fprint(w, `{"ok":true}`)
	})
	mux.HandleFunc("/nav/nothing", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond)
		w.WriteHeader(http.StatusNoContent) // a navigation that replaces nothing
	})
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.URL.Query().Get("html"))
	})
	site = httptest.NewServer(mux)
	code := m.Run()
	site.Close()
	_ = browser.Close()
	l.Kill()
	os.Exit(code)
}

// open loads html in a fresh page that has the bundle installed.
func open(t *testing.T, html string) *rod.Page {
	t.Helper()
	p, err := browser.Page(proto.TargetCreateTarget{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	if _, err := p.EvalOnNewDocument(inject.Bundle()); err != nil {
		t.Fatal(err)
	}
	if err := p.Navigate(site.URL + "/page?html=" + url.QueryEscape(html)); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitLoad(); err != nil {
		t.Fatal(err)
	}
	return p
}

func eval(t *testing.T, p *rod.Page, js string) any {
	t.Helper()
	res, err := p.Eval(js)
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return res.Value.Val()
}

func TestBundleRunsBeforePageScripts(t *testing.T) {
	p := open(t, `<script>window.sawIt = typeof window.__webserv === 'object' && typeof __webserv.settle.state === 'function';</script>`)
	if eval(t, p, `() => window.sawIt`) != true {
		t.Fatal("the first page script did not see the injected namespace")
	}
	// The namespace is hidden from enumeration and cannot be replaced.
	if eval(t, p, `() => Object.keys(window).includes('__webserv')`) != false {
		t.Error("__webserv is enumerable")
	}
	if eval(t, p, `() => { try { window.__webserv = 1 } catch (e) {} return typeof window.__webserv }`) != "object" {
		t.Error("a page can overwrite __webserv")
	}
}

// A page whose bundle is installed twice (two sessions attached to it)
// tracks its work once: every file keeps to its first run.
func TestBundleInstalledTwiceTracksWorkOnce(t *testing.T) {
	p, err := browser.Page(proto.TargetCreateTarget{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	for range 2 {
		if _, err := p.EvalOnNewDocument(inject.Bundle()); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Navigate(site.URL + "/page?html=" + url.QueryEscape(`<p>twice</p>`)); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitLoad(); err != nil {
		t.Fatal(err)
	}
	eval(t, p, `() => { __webserv.settle.begin(1);
		setTimeout(() => {}, 300);
		fetch('/api/slow?ms=300');
		const x = new XMLHttpRequest(); x.open('GET', '/api/slow?ms=300'); x.send();
	}`)
	st := settleState(t, p, 1, 5000)
	if st["pending"] != float64(3) || st["requests"] != float64(2) {
		t.Errorf("one timer and two requests are pending as %v (pending %v, requests %v)", st["items"], st["pending"], st["requests"])
	}
}

// settleState is the tracker's answer for action k.
func settleState(t *testing.T, p *rod.Page, k int, longMs int) map[string]any {
	t.Helper()
	return eval(t, p, fmt.Sprintf(`() => __webserv.settle.state(%d, %d)`, k, longMs)).(map[string]any)
}

func TestSettleCountsTheActionsRequestsNotBackgroundOnes(t *testing.T) {
	// The page polls in the background from a timer set at load.
	p := open(t, `<p>counter</p><script>window.polls = 0; setInterval(() => { window.polls++; fetch('/api/slow'); }, 20);</script>`)
	eval(t, p, `() => new Promise(r => { const w = () => window.polls >= 2 ? r() : setTimeout(w, 5); w(); })`)
	eval(t, p, `() => __webserv.settle.begin(1)`)
	if st := settleState(t, p, 1, 5000); st["pending"] != float64(0) {
		t.Fatalf("pending before the action's requests = %v", st)
	}
	// As before every action, begin opens its window right before it: the
	// requests are the action's whatever ran last (here a poll's tick).
	eval(t, p, `() => { __webserv.settle.begin(1); window.f = fetch('/api/slow').then(r => r.json());
		const x = new XMLHttpRequest(); x.open('POST', '/api/slow'); x.send('a'); }`)
	st := settleState(t, p, 1, 5000)
	if st["requests"] != float64(2) || st["pending"] != float64(2) {
		t.Fatalf("the action's fetch and XHR are not the two requests counted: %v", st)
	}
	if st["background"].(float64) < 1 {
		t.Errorf("the poll's requests are not reported as background: %v", st)
	}
	items := st["items"].([]any)
	last := items[len(items)-1].(map[string]any)
	if len(items) != 2 || last["method"] != "POST" || !strings.HasSuffix(last["url"].(string), "/api/slow") {
		t.Errorf("pending items = %v", items)
	}
	if q := st["quiet_ms"].(float64); q > 200 {
		t.Errorf("quiet_ms right after starting requests = %v", q)
	}
	if st["wake_ms"] != float64(-1) {
		t.Errorf("wake_ms with only requests pending = %v, want -1 (their end restarts the idle window)", st["wake_ms"])
	}
	eval(t, p, `() => window.f`) // awaits the fetch and its json() read
	eval(t, p, `() => new Promise(r => { const w = () => __webserv.settle.state(1, 5000).requests === 0 ? r() : setTimeout(w, 5); w(); })`)
	st = settleState(t, p, 1, 5000)
	if st["pending"] != float64(0) || st["tracked"].(float64) < 3 {
		t.Errorf("after completion: %v", st)
	}
	// A request older than the long-request bound whose server answers
	// nothing sent after it is a slow server's: it still counts.
	eval(t, p, `() => { __webserv.settle.begin(2); fetch('/api/slow'); }`)
	eval(t, p, `() => new Promise(r => setTimeout(r, 150))`)
	st = settleState(t, p, 2, 100)
	if st["requests"] != float64(1) || st["long"] != float64(0) {
		t.Errorf("a slow request was let go as a long poll: %v", st)
	}
	// Once the server has answered a later request, the old one is held
	// open on purpose (a long poll) and is counted apart.
	eval(t, p, `() => { __webserv.settle.begin(3); fetch('/api/slow');
		return fetch('/page?html=ok').then(r => r.text()).then(() => new Promise(r => setTimeout(r, 150))); }`)
	st = settleState(t, p, 3, 100)
	if st["requests"] != float64(0) || st["long"] != float64(1) {
		t.Errorf("long poll not set apart: %v", st)
	}
}

// Work past its due time stops counting only when the page runs a later
// probe ahead of it: a page that is merely late (here a long task, on a
// loaded machine a starved renderer) still has it pending, while a message
// to a port that was never started is let go.
func TestSettleLetsGoOfOverdueWorkOnlyWhenItIsStuck(t *testing.T) {
	p := open(t, `<p>late</p>`)
	// The timer is due at once, but a 1.2 s task keeps it from running; the
	// poll right after the task comes before it.
	st := eval(t, p, `() => { __webserv.settle.begin(1); window.fired = false;
		setTimeout(() => { window.fired = true; }, 0);
		const end = performance.now() + 1200; while (performance.now() < end) {}
		return __webserv.settle.state(1, 5000); }`).(map[string]any)
	if st["pending"] != float64(1) {
		t.Errorf("a timer made late by a long task was let go: %v", st)
	}
	eval(t, p, `() => new Promise(r => { const w = () => window.fired ? r() : setTimeout(w, 5); w(); })`)
	if st := settleState(t, p, 1, 5000); st["pending"] != float64(0) {
		t.Errorf("after the timer ran: %v", st)
	}
	// A message to a port nobody listens on is never delivered.
	eval(t, p, `() => { __webserv.settle.begin(2); const ch = new MessageChannel(); ch.port2.postMessage('lost'); window.ch = ch; }`)
	if st := settleState(t, p, 2, 5000); st["pending"] != float64(1) {
		t.Errorf("a message just posted is not pending: %v", st)
	}
	eval(t, p, `() => new Promise(r => setTimeout(r, 150))`)
	settleState(t, p, 2, 5000) // past due: the probe goes out
	eval(t, p, `() => new Promise(r => setTimeout(r, 20))`)
	if st := settleState(t, p, 2, 5000); st["pending"] != float64(0) {
		t.Errorf("a message to a port never started still holds the step: %v", st)
	}
}

func TestSettleFollowsTimersWithinTheBudgetOnly(t *testing.T) {
	p := open(t, `<p>timers</p>`)
	eval(t, p, `() => { __webserv.settle.begin(1);
		window.short = setTimeout(() => {}, 3000);
		setTimeout(() => {}, 300);
		setTimeout(() => {}, 5000); // longer than the budget: never waited for
		setInterval(() => {}, 50);  // intervals are never waited for
	}`)
	st := settleState(t, p, 1, 5000)
	if st["pending"] != float64(1) {
		t.Fatalf("pending = %v, want only the 300ms timer", st)
	}
	if w := st["wake_ms"].(float64); w <= 0 || w > 300 {
		t.Errorf("wake_ms = %v, want when the 300ms timer is due", w)
	}
	eval(t, p, `() => { __webserv.settle.begin(2); window.t = setTimeout(() => {}, 300); clearTimeout(window.t); }`)
	if st := settleState(t, p, 2, 5000); st["pending"] != float64(0) {
		t.Errorf("a cleared timer is still pending: %v", st)
	}
	// A chain's timers add up: the second of 800ms + 1500ms is over the budget.
	eval(t, p, `() => { __webserv.settle.begin(3); window.chain = 0;
		setTimeout(() => { window.chain = 1; setTimeout(() => { window.chain = 2; }, 1500); }, 800); }`)
	eval(t, p, `() => new Promise(r => { const w = () => window.chain >= 1 ? r() : setTimeout(w, 5); w(); })`)
	if st := settleState(t, p, 3, 5000); st["pending"] != float64(0) {
		t.Errorf("a chain over the budget is still followed: %v", st)
	}
	// A callback that re-arms itself is a loop: its first turn is followed,
	// later turns are not.
	eval(t, p, `() => { __webserv.settle.begin(4); window.turns = 0;
		function poll() { window.turns++; setTimeout(poll, 10); } setTimeout(poll, 10); }`)
	eval(t, p, `() => new Promise(r => { const w = () => window.turns >= 3 ? r() : setTimeout(w, 5); w(); })`)
	if st := settleState(t, p, 4, 5000); st["pending"] != float64(0) {
		t.Errorf("a timer loop is still followed: %v", st)
	}
}

// Animation frames and idle callbacks carry their cause into what they
// schedule, and a cancelled one is no longer pending. The wrappers keep
// the originals' names.
func TestSettleFollowsFramesAndIdleCallbacks(t *testing.T) {
	p := open(t, `<p>frames</p>`)
	if got := eval(t, p, `() => [requestAnimationFrame.name, cancelAnimationFrame.name, requestIdleCallback.name, cancelIdleCallback.name].join(' ')`); got != "requestAnimationFrame cancelAnimationFrame requestIdleCallback cancelIdleCallback" {
		t.Errorf("wrapper names: %v", got)
	}
	eval(t, p, `() => { __webserv.settle.begin(1);
		cancelAnimationFrame(requestAnimationFrame(() => {}));
		cancelIdleCallback(requestIdleCallback(() => {}));
	}`)
	if st := settleState(t, p, 1, 5000); st["pending"] != float64(0) {
		t.Errorf("cancelled frame and idle callback still pending: %v", st["items"])
	}
	for k, schedule := range []string{"requestAnimationFrame", "requestIdleCallback"} {
		act := 2 + k*20
		// A later action begins before the callback runs: the timer is
		// still the earlier action's.
		eval(t, p, fmt.Sprintf(`() => new Promise(r => { __webserv.settle.begin(%d);
			%s(() => { setTimeout(() => {}, 300); r(); }); __webserv.settle.begin(%d); })`, act, schedule, act+10))
		st := settleState(t, p, act, 5000)
		if st["pending"] != float64(1) {
			t.Errorf("a timer set from a %s callback is not the action's: %v", schedule, st["items"])
		}
	}
}

func TestSettleCarriesTheCauseThroughCallbacks(t *testing.T) {
	p := open(t, `<p>chains</p>`)
	// Action 1 schedules five kinds of callbacks that each start a request
	// (long enough that all five are in flight together); action 2 begins
	// before any of them runs. The requests are action 1's.
	eval(t, p, `() => { __webserv.settle.begin(1); window.started = 0;
		const go = () => { window.started++; fetch('/api/slow?ms=5000'); };
		setTimeout(go, 30);
		requestAnimationFrame(go);
		const ch = new MessageChannel(); ch.port1.onmessage = go; ch.port2.postMessage(1);
		fetch('/api/slow').then(go);
		const x = new XMLHttpRequest(); x.open('GET', '/api/slow'); x.onload = go; x.send();
		__webserv.settle.begin(2); }`)
	eval(t, p, `() => new Promise(r => { const w = () => window.started >= 5 ? r() : setTimeout(w, 5); w(); })`)
	one, two := settleState(t, p, 1, 5000), settleState(t, p, 2, 5000)
	if one["requests"] != float64(5) || two["requests"] != float64(0) {
		t.Errorf("requests started from action 1's callbacks: action 1 counts %v, action 2 counts %v", one["requests"], two["requests"])
	}
}

func TestSettleCountsANewDocumentsStartUp(t *testing.T) {
	p := open(t, `<p id="c">loading</p><script>setTimeout(() => { document.getElementById('c').textContent = 'ready'; }, 1000);</script>`)
	// The document never saw action 7: it reports its own start-up work.
	st := settleState(t, p, 7, 5000)
	items := st["items"].([]any)
	if st["pending"] != float64(1) || items[0].(map[string]any)["kind"] != "timer" {
		t.Errorf("start-up timer not pending for a document newer than the action: %v", st)
	}
	eval(t, p, `() => __webserv.settle.begin(8)`)
	if st := settleState(t, p, 8, 5000); st["pending"] != float64(0) {
		t.Errorf("the start-up timer counted as action 8's: %v", st)
	}
}

// A form submission the action caused is pending from the moment it
// starts, before the browser reports a document loading; a same-document
// navigation is not. A navigation that never replaces the document (204)
// stops counting after the bridge.
func TestSettleCountsANavigationFromItsStart(t *testing.T) {
	p := open(t, `<p>submit</p><form action="/nav/nothing" method="post"><button id="go">Send</button></form>`)
	// The submission's navigation starts in the task after the click.
	st := eval(t, p, `() => { __webserv.settle.begin(1); document.getElementById('go').click();
		return new Promise(r => setTimeout(() => r(__webserv.settle.state(1, 5000)), 20)); }`).(map[string]any)
	items, _ := st["items"].([]any)
	if st["pending"] != float64(1) || len(items) != 1 || items[0].(map[string]any)["kind"] != "navigation" {
		t.Fatalf("the submission is not pending at once: %v", st)
	}
	// Once the browser has reported a load starting and ending since the
	// action, the navigation is over whatever the document did.
	if st := eval(t, p, `() => __webserv.settle.state(1, 5000, true)`).(map[string]any); st["pending"] != float64(0) {
		t.Errorf("a navigation the browser reported over is still pending: %v", st)
	}
	eval(t, p, `() => new Promise(r => setTimeout(r, 1300))`)
	if st := settleState(t, p, 1, 5000); st["pending"] != float64(0) {
		t.Errorf("a navigation answered 204 is still pending after the bridge: %v", st)
	}
	q := open(t, `<p>routes</p>`)
	st = eval(t, q, `() => { __webserv.settle.begin(2); history.pushState({}, '', '/route'); location.hash = 'x';
		return __webserv.settle.state(2, 5000); }`).(map[string]any)
	if st["pending"] != float64(0) {
		t.Errorf("same-document navigations are pending: %v", st)
	}
}

// A new tab the action asks for is pending from the moment it is asked
// for, before the browser reports the tab; a cancelled click, a link to the
// same document and a window name opened before are not; a tab that never
// comes stops counting after the bridge.
func TestSettleCountsANewTabFromItsRequest(t *testing.T) {
	p := open(t, `<a id="blank" href="/page?html=tab" target="_blank">report</a>
		<a id="cancelled" href="/page?html=no" target="_blank" onclick="event.preventDefault()">cancelled</a>
		<a id="here" href="#section">here</a>
		<form id="f" action="/page" target="results"><input name="html" value="r"></form>`)
	pendingTabs := func(k int, js string) []any {
		t.Helper()
		st := eval(t, p, fmt.Sprintf(`() => { __webserv.settle.begin(%d); %s; return __webserv.settle.state(%d, 5000); }`, k, js, k)).(map[string]any)
		var tabs []any
		items, _ := st["items"].([]any)
		for _, it := range items {
			if it.(map[string]any)["kind"] == "tab" {
				tabs = append(tabs, it)
			}
		}
		return tabs
	}
	for _, c := range []struct {
		k    int
		js   string
		want int
	}{
		{1, `document.getElementById('blank').click()`, 1},
		{2, `document.getElementById('cancelled').click()`, 0},
		{3, `document.getElementById('here').click()`, 0},
		{4, `document.getElementById('here').dispatchEvent(new MouseEvent('click', {ctrlKey: true, bubbles: true, cancelable: true}))`, 1},
		{5, `document.getElementById('f').requestSubmit()`, 1},
		{6, `document.getElementById('f').requestSubmit()`, 0}, // "results" exists now
		{7, `window.open('/page?html=w', 'w1')`, 1},
		{8, `window.open('/page?html=w', 'w1')`, 0},
		{9, `window.open('/page?html=n', '_blank', 'noopener')`, 1},
		// A tab closed as soon as it opened (as the environment closes one
		// past its tab limit) is not waited for.
		{10, `window.open('/page?html=c', 'c1').close()`, 0},
	} {
		if got := pendingTabs(c.k, c.js); len(got) != c.want {
			t.Errorf("action %d (%s): %d new tabs pending, want %d: %v", c.k, c.js, len(got), c.want, got)
		}
	}
	eval(t, p, `() => new Promise(r => setTimeout(r, 3100))`)
	if st := settleState(t, p, 1, 5000); st["pending"] != float64(0) {
		t.Errorf("a new tab is still pending after the bridge: %v", st)
	}
}

func TestListenerPatchMarksHoverTargets(t *testing.T) {
	p := open(t, `<div id="a">menu</div><div id="b">button</div><div id="c">both</div>
<script>
  const f = () => {};
  document.getElementById('a').addEventListener('mouseenter', f);
  document.getElementById('b').addEventListener('click', f);
  document.getElementById('c').addEventListener('pointerover', f);
  document.getElementById('c').removeEventListener('pointerover', f);
  document.body.addEventListener('mouseover', f);
</script>`)
	got := eval(t, p, `() => [...document.querySelectorAll('[data-maybe-hoverable]')].map(e => e.id || e.localName).join(',')`)
	if got != "a" {
		t.Errorf("hover-marked elements = %q, want only a (removed listeners unmark; body is page-wide delegation)", got)
	}
	if eval(t, p, `() => __webserv.listeners.click(document.getElementById('b'))`) != true {
		t.Error("click listener not recorded")
	}
	if eval(t, p, `() => __webserv.listeners.hover(document.getElementById('b'))`) != false {
		t.Error("click listener counted as hover")
	}
}

func TestParserObservesAndResolvesIDs(t *testing.T) {
	p := open(t, `<h1>Shop</h1><form aria-label="Search"><input placeholder="Find products"><button>Go</button></form>
<div style="display:none"><button>Hidden</button></div>`)
	obs := eval(t, p, `() => __webserv.parser.observe({axtree: true})`).(map[string]any)
	if fmt.Sprint(obs["clickable"]) != "[search.find-products search.go]" {
		t.Errorf("clickable = %v", obs["clickable"])
	}
	if !strings.Contains(obs["axtree"].(string), `[search.go] button "Go"`) {
		t.Errorf("axtree = %s", obs["axtree"])
	}
	if eval(t, p, `() => __webserv.parser.element('search.go').textContent`) != "Go" {
		t.Error("id does not resolve to its element")
	}
	prep := eval(t, p, `() => __webserv.act.prepare('search.go', 'click')`).(map[string]any)
	if prep["ok"] != true || prep["x"].(float64) <= 0 {
		t.Errorf("prepare = %v", prep)
	}
	missing := eval(t, p, `() => __webserv.act.prepare('nope', 'click')`).(map[string]any)
	if missing["ok"] != false || missing["code"] != "missing" {
		t.Errorf("prepare of an unknown id = %v", missing)
	}
}

func TestCallExpression(t *testing.T) {
	expr := inject.Call("act.selectOptions", "size", []string{"L", `"quoted"`})
	if !strings.HasSuffix(expr, `.act.selectOptions("size",["L","\"quoted\""])`) {
		t.Errorf("Call = %s", expr)
	}
	p := open(t, `<p>x</p>`)
	// In a document without the bundle the expression throws MissingMessage.
	blank, err := browser.Page(proto.TargetCreateTarget{})
	if err != nil {
		t.Fatal(err)
	}
	defer blank.Close()
	if _, err := blank.Eval(`() => ` + inject.Call("parser.ids")); err == nil || !strings.Contains(err.Error(), inject.MissingMessage) {
		t.Errorf("Call in a page without the bundle: %v", err)
	}
	if got := eval(t, p, `() => `+inject.Call("parser.ids")); fmt.Sprint(got) != "[]" {
		t.Errorf("parser.ids before any observation = %v", got)
	}
}

// act.insertText replaces the focused field's selection with the text at
// once, with one input event that carries it, honours maxlength, and
// declines what it cannot take (contenteditable, a type without a
// selection) so that the Go side inserts through CDP.
func TestInsertTextReplacesTheSelection(t *testing.T) {
	p := open(t, `<div>Fields</div><textarea id="t">old text</textarea><input id="m" maxlength="5" value="ab">
<input id="e" type="email"><div id="c" contenteditable="true">x</div>
<script>
  window.seen = [];
  for (const el of document.querySelectorAll('textarea, input'))
    el.addEventListener('input', e => seen.push(e.target.id + ':' + e.inputType + ':' + e.data.length));
</script>`)
	got := eval(t, p, `() => { const t = document.getElementById('t'); t.focus(); t.select();
		const r = __webserv.act.insertText('line\n'.repeat(2000));
		return [r.inserted, t.value.length, t.selectionStart, seen.join(',')].join('|') }`)
	if got != "true|10000|10000|t:insertText:10000" {
		t.Errorf("a textarea with its content selected: %v", got)
	}
	got = eval(t, p, `() => { const m = document.getElementById('m'); m.focus(); m.setSelectionRange(2, 2);
		__webserv.act.insertText('cdefgh'); return m.value }`)
	if got != "abcde" {
		t.Errorf("maxlength=5 holding %q", got)
	}
	for _, id := range []string{"e", "c"} {
		got = eval(t, p, `() => { document.getElementById('`+id+`').focus(); return __webserv.act.insertText('zz').inserted }`)
		if got != false {
			t.Errorf("#%s: inserted = %v, want false (CDP inserts there)", id, got)
		}
	}
}

package inject_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
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
	mux.HandleFunc("/api/slow", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(400 * time.Millisecond)
		fmt.Fprint(w, `{"ok":true}`)
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
	p := open(t, `<script>window.sawIt = typeof window.__webserv === 'object' && typeof __webserv.net.state === 'function';</script>`)
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

func TestRequestCounterTracksFetchAndXHR(t *testing.T) {
	p := open(t, `<p>counter</p>`)
	state := func() map[string]any {
		return eval(t, p, `() => __webserv.net.state(5000)`).(map[string]any)
	}
	if n := state()["inflight"]; n != float64(0) {
		t.Fatalf("inflight before any request = %v", n)
	}
	eval(t, p, `() => { window.f = fetch('/api/slow').then(r => r.json()); const x = new XMLHttpRequest(); x.open('POST', '/api/slow'); x.send('a'); }`)
	st := state()
	if st["inflight"] != float64(2) {
		t.Fatalf("inflight after fetch+xhr = %v", st["inflight"])
	}
	pending := st["pending"].([]any)
	if len(pending) != 2 || !strings.HasSuffix(pending[1].(map[string]any)["url"].(string), "/api/slow") || pending[1].(map[string]any)["method"] != "POST" {
		t.Errorf("pending = %v", pending)
	}
	if q := st["quiet_ms"].(float64); q > 100 {
		t.Errorf("quiet_ms right after starting requests = %v", q)
	}
	eval(t, p, `() => window.f`) // awaits the fetch and its json() read
	time.Sleep(100 * time.Millisecond)
	st = state()
	if st["inflight"] != float64(0) || st["total"].(float64) < 3 {
		t.Errorf("after completion: %v", st)
	}
	// A request older than the long-request bound is counted apart.
	eval(t, p, `() => { fetch('/api/slow'); }`)
	time.Sleep(150 * time.Millisecond)
	st = eval(t, p, `() => __webserv.net.state(100)`).(map[string]any)
	if st["inflight"] != float64(0) || st["long"] != float64(1) {
		t.Errorf("long request not set apart: %v", st)
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

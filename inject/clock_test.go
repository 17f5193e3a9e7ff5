package inject_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"

	"github.com/webserv-rl/webserv/inject"
)

// timePage shows what a page reads of the clock and of randomness when it
// loads, and again when its button is clicked.
const timePage = `<body style="margin:0"><button id=b style="position:absolute;left:0;top:0;width:100px;height:40px">again</button><pre id=out></pre><script>
function show(when, ev) {
  const u = new Uint32Array(2); crypto.getRandomValues(u);
  document.getElementById('out').textContent += when + ' ' + JSON.stringify({
    now: Date.now(), perf: performance.now(), iso: new Date().toISOString(), random: Math.random(),
    bytes: Array.from(u), uuid: crypto.randomUUID(), event: ev ? ev.timeStamp : null,
    origin: performance.timeOrigin, isDate: new Date() instanceof Date, parsed: new Date(0).getTime(),
  }) + '\n';
}
show('load');
document.getElementById('b').addEventListener('click', function (e) { show('click', e); });
</script>`

// openClocked loads html in a fresh page with the bundle and, when clock
// is not empty, the clock script after it, as envcore registers them.
func openClocked(t *testing.T, clock, html string) *rod.Page {
	t.Helper()
	p, err := browser.Page(proto.TargetCreateTarget{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	for _, s := range []string{inject.Bundle(), clock} {
		if s == "" {
			continue
		}
		if _, err := p.EvalOnNewDocument(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Navigate(site.URL + "/page?html=" + url.QueryEscape(html)); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitLoad(); err != nil {
		t.Fatal(err)
	}
	return p
}

// shown is what timePage shows after loading and one click of its button.
func shown(t *testing.T, clock string) string {
	t.Helper()
	p := openClocked(t, clock, timePage)
	// A real click at the button (the browser's input event).
	for _, typ := range []proto.InputDispatchMouseEventType{proto.InputDispatchMouseEventTypeMousePressed, proto.InputDispatchMouseEventTypeMouseReleased} {
		if err := (proto.InputDispatchMouseEvent{Type: typ, X: 20, Y: 18, Button: proto.InputMouseButtonLeft, ClickCount: 1}).Call(p); err != nil {
			t.Fatal(err)
		}
	}
	return eval(t, p, `() => document.getElementById('out').textContent`).(string)
}

// With the same seed, a page that reads the clock, the event times and
// randomness shows the same thing byte for byte, on any host at any load;
// another seed draws other numbers from the same fixed epoch.
func TestClockMakesASeededPageRepeatable(t *testing.T) {
	a, b := shown(t, inject.Clock(7, true, false)), shown(t, inject.Clock(7, true, false))
	if a != b {
		t.Fatalf("two runs with seed 7 differ:\n%s\n%s", a, b)
	}
	if !strings.Contains(a, `"iso":"2024-01-01T00:00:00`) || !strings.Contains(a, `"origin":1704067200000`) || !strings.Contains(a, `"isDate":true,"parsed":0`) {
		t.Errorf("the virtual clock does not start at its epoch, or Date lost its behaviour:\n%s", a)
	}
	if !strings.Contains(a, "\nclick {") || !strings.Contains(a, `"event":null`) {
		t.Errorf("the click was not shown:\n%s", a)
	}
	if c := shown(t, inject.Clock(8, true, false)); c == a {
		t.Errorf("seeds 7 and 8 show the same numbers:\n%s", c)
	}
}

// Without crypto (a site that needs real entropy), crypto stays the
// browser's: two pages with one seed draw different bytes.
func TestClockLeavesCryptoRealUnlessAsked(t *testing.T) {
	read := func() string {
		p := openClocked(t, inject.Clock(7, false, false), timePage)
		return eval(t, p, `() => { const u = new Uint32Array(4); crypto.getRandomValues(u); return Array.from(u).join(',') + crypto.randomUUID(); }`).(string)
	}
	if a, b := read(), read(); a == b {
		t.Errorf("crypto without the crypto option repeats itself: %s", a)
	}
	p := openClocked(t, inject.Clock(7, true, false), `<p>x</p>`)
	if got := eval(t, p, `() => { try { crypto.getRandomValues(new Float32Array(2)); return 'no error'; } catch (e) { return e.name; } }`); got != "TypeMismatchError" {
		t.Errorf("getRandomValues of a float array: %v, want the browser's TypeMismatchError", got)
	}
}

// A page whose task measures real time keeps the real clock, its
// randomness still seeded.
func TestClockWithRealTimeSeedsRandomnessAlone(t *testing.T) {
	read := func() []any {
		p := openClocked(t, inject.Clock(7, true, true), `<p>x</p>`)
		return eval(t, p, `() => [Math.random(), Date.now() > Date.UTC(2025, 0, 1), performance.timeOrigin > Date.UTC(2025, 0, 1)]`).([]any)
	}
	a, b := read(), read()
	if a[0] != b[0] {
		t.Errorf("Math.random with seed 7 differs: %v, %v", a[0], b[0])
	}
	if a[1] != true || a[2] != true {
		t.Errorf("with realTime the clock is not the host's (Date.now, timeOrigin after 2025: %v, %v)", a[1], a[2])
	}
}

// A timer's callback runs at its due time on the virtual clock: an
// animation that steps by the time it reads (jQuery's) moves as on the
// real clock, however slow the host.
func TestClockRunsTimersAtTheirDueTime(t *testing.T) {
	p := openClocked(t, inject.Clock(7, true, false), `<script>
const t0 = performance.now();
setTimeout(function () { window.dt = performance.now() - t0; }, 300);
let ticks = 0;
const i0 = Date.now();
const iv = setInterval(function () { if (++ticks === 3) { clearInterval(iv); window.di = Date.now() - i0; } }, 100);
</script>`)
	got := eval(t, p, `() => new Promise(function (resolve) {
  (function poll() { if (window.dt !== undefined && window.di !== undefined) resolve([window.dt, window.di]); else requestAnimationFrame(poll); })();
})`).([]any)
	dt, di := got[0].(float64), got[1].(float64)
	if dt < 300 || dt > 310 {
		t.Errorf("a 300 ms timer ran at %v ms on the page's clock", dt)
	}
	if di < 300 || di > 310 {
		t.Errorf("the third tick of a 100 ms interval ran at %v ms on the page's clock", di)
	}
}

package inject_test

import (
	"net/url"
	"strings"
	"testing"
)

// kinds lists the kinds of the pending items of a settle state.
func kinds(st map[string]any) string {
	var out []string
	for _, it := range st["items"].([]any) {
		out = append(out, it.(map[string]any)["kind"].(string))
	}
	return strings.Join(out, " ")
}

// A finite animation the action starts is pending until it has finished;
// an infinite one, or one that started before the action, never is.
func TestSettleFollowsFiniteAnimationsTheActionStarts(t *testing.T) {
	p := open(t, `<div id="spin">spin</div><div id="badge">badge</div><script>
		document.getElementById('spin').animate([{ opacity: 1 }, { opacity: 0 }], { duration: 300, iterations: Infinity });
		window.before = document.getElementById('badge').animate([{ opacity: 1 }, { opacity: 0.9 }], { duration: 1500 });
	</script>`)
	eval(t, p, `() => window.before.ready.then(() => { __webserv.settle.begin(1); })`)
	if st := settleState(t, p, 1, 5000); st["pending"] != float64(0) {
		t.Fatalf("animations that started before the action are pending: %v", st["items"])
	}
	eval(t, p, `() => { __webserv.settle.begin(2);
		window.a = document.getElementById('badge').animate([{ opacity: 1 }, { opacity: 0.5 }], { duration: 400 });
		document.getElementById('spin').animate([{ color: 'red' }, { color: 'blue' }], { duration: 200, iterations: Infinity });
		document.getElementById('spin').animate([{ color: 'red' }, { color: 'blue' }], { duration: 5000 }); // over the budget
	}`)
	st := settleState(t, p, 2, 5000)
	if st["pending"] != float64(1) || kinds(st) != "animation" || st["tracked"] == float64(0) {
		t.Fatalf("want the 400ms animation alone pending: %v", st)
	}
	eval(t, p, `() => window.a.finished`)
	// One more poll after it ends, for what its end does; then none.
	if st := settleState(t, p, 2, 5000); st["pending"] != float64(1) || st["wake_ms"] != float64(0) {
		t.Errorf("the poll after the end: %v", st)
	}
	if st := settleState(t, p, 2, 5000); st["pending"] != float64(0) {
		t.Errorf("a finished animation is still pending: %v", st)
	}
}

// A frame loop that ends by itself is followed to its end.
func TestSettleFollowsAFrameLoopToItsEnd(t *testing.T) {
	p := open(t, `<p>loop</p>`)
	eval(t, p, `() => new Promise(r => { __webserv.settle.begin(1); window.turns = 0;
		requestAnimationFrame(function step() { if (++window.turns < 60) requestAnimationFrame(step); });
		setTimeout(r, 0); })`)
	eval(t, p, `() => new Promise(r => { const w = () => window.turns >= 3 ? r() : setTimeout(w, 5); w(); })`)
	if st := settleState(t, p, 1, 5000); kinds(st) != "frame" {
		t.Fatalf("the loop's later turns are not followed: %v", st)
	}
	eval(t, p, `() => new Promise(r => { const w = () => window.turns >= 60 ? r() : setTimeout(w, 5); w(); })`)
	if st := settleState(t, p, 1, 5000); st["pending"] != float64(0) {
		t.Errorf("the loop ended, yet: %v", st)
	}
}

// The page names the requests it sends itself, for the Go side to leave
// to its rule; a beacon is named too.
func TestSettleNamesTheRequestsItSends(t *testing.T) {
	p := open(t, `<p>sent</p>`)
	// A request sent well before the action (over a second) is not named.
	eval(t, p, `() => new Promise(r => { fetch('/api/slow?ms=1&before'); setTimeout(r, 1200); })`)
	eval(t, p, `() => { __webserv.settle.begin(1); fetch('/api/slow?ms=1#frag'); navigator.sendBeacon('/api/slow?ms=2', 'x'); }`)
	st := settleState(t, p, 1, 5000)
	var sent []string
	for _, s := range st["sent"].([]any) {
		sent = append(sent, s.(string))
	}
	got := strings.Join(sent, "; ")
	if !strings.Contains(got, "GET "+site.URL+"/api/slow?ms=1;") && !strings.HasSuffix(got, "GET "+site.URL+"/api/slow?ms=1") ||
		!strings.Contains(got, "POST "+site.URL+"/api/slow?ms=2") || strings.Contains(got, "before") || strings.Contains(got, "#") {
		t.Errorf("sent = %q", got)
	}
}

// What the action posts to a worker makes the worker's reply pending; the
// reply's handler runs in the action's cause.
func TestSettleWaitsForTheWorkersReply(t *testing.T) {
	p := open(t, `<p>worker</p><script>
		window.w = new Worker(URL.createObjectURL(new Blob(['onmessage = (e) => setTimeout(() => postMessage(e.data), 200);'], { type: 'text/javascript' })));
		w.onmessage = (e) => { window.got = e.data; setTimeout(() => { window.after = true; }, 1500); };
	</script>`)
	eval(t, p, `() => { __webserv.settle.begin(1); w.postMessage('hi'); }`)
	if st := settleState(t, p, 1, 5000); kinds(st) != "reply" {
		t.Fatalf("the worker's reply is not pending: %v", st)
	}
	eval(t, p, `() => new Promise(r => { const x = () => window.got ? r() : setTimeout(x, 5); x(); })`)
	if st := settleState(t, p, 1, 5000); kinds(st) != "timer" {
		t.Errorf("after the reply, its handler's timer should be pending alone: %v", st)
	}
}

// A frame of another origin is probed after the action: it stays among
// the frames after the action until its bundle answers, and neither the
// probe nor the answer reaches the pages' own listeners.
func TestSettleProbesFramesOfAnotherOrigin(t *testing.T) {
	other := strings.Replace(site.URL, "127.0.0.1", "localhost", 1)
	p := open(t, `<iframe id="f" src="`+other+`/page?html=`+url.QueryEscape(`<script>window.addEventListener('message', (e) => parent.postMessage('seen', '*'));</script>`)+`"></iframe>
		<script>window.got = []; window.addEventListener('message', (e) => window.got.push(e.data));</script>`)
	eval(t, p, `() => new Promise(r => { const f = document.getElementById('f'); if (f.contentDocument === null && f.dataset.ready) r(); f.addEventListener('load', r); setTimeout(r, 1000); })`)
	eval(t, p, `() => __webserv.settle.begin(1)`)
	if st := settleState(t, p, 1, 5000); st["frames"] == float64(0) {
		t.Fatalf("the frame of another origin is not probed: %v", st)
	}
	eval(t, p, `() => new Promise(r => { const w = () => __webserv.settle.state(1, 5000).frames === 0 ? r() : setTimeout(w, 5); w(); })`)
	if got := eval(t, p, `() => JSON.stringify(window.got)`); got != "[]" {
		t.Errorf("the page saw the probe or its answer: %v", got)
	}
}

package inject_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-rod/rod"
)

// settleWait runs the tracker's wait for action k as the Go side does
// (envcore.settleWait): an evaluation that awaits its promise. The context
// bounds the evaluation far below capMs where a test needs the answer to
// come from the work ending, not from the cap.
func settleWait(t *testing.T, p *rod.Page, k, holdMs, idleMs, capMs int, within time.Duration) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	res, err := p.Context(ctx).Eval(fmt.Sprintf(`() => __webserv.settle.wait(%d, 5000, false, %d, %d, %d)`, k, holdMs, idleMs, capMs))
	if err != nil {
		t.Fatalf("wait(%d) did not answer within %s (cap %d ms): %v", k, within, capMs, err)
	}
	return res.Value.Val().(map[string]any)
}

// The wait answers when the chain the action started is over, rendered,
// and not at its cap: the work's end wakes it (a cap of a minute, an
// answer needed within 20 s).
func TestWaitAnswersWhenTheActionsChainEnds(t *testing.T) {
	p := open(t, `<!DOCTYPE html><button id="b">go</button><p id="out"></p><script>
		b.onclick = () => fetch('/api/slow?ms=150').then(r => r.json()).then(() =>
			setTimeout(() => fetch('/api/slow?ms=150').then(r => r.text()).then(() => { out.textContent = 'done'; }), 50));
	</script>`)
	eval(t, p, `() => { __webserv.settle.begin(1); document.getElementById("b").click(); }`)
	st := settleWait(t, p, 1, 0, 30, 60000, 20*time.Second)
	if st["pending"] != float64(0) || st["tracked"].(float64) < 3 {
		t.Fatalf("wait answered with the chain unfinished: %v", st)
	}
	if got := eval(t, p, `() => document.getElementById('out').textContent`); got != "done" {
		t.Fatalf("wait answered before the chain rendered: out = %q", got)
	}
}

// Work in a same-origin frame wakes its parent's wait.
func TestWaitIsWokenByAFramesWork(t *testing.T) {
	p := open(t, `<iframe id="f" srcdoc="<p id=x></p>"></iframe>`)
	eval(t, p, `() => new Promise(r => { const w = () => document.getElementById('f').contentWindow.__webserv ? r() : setTimeout(w, 5); w(); })`)
	eval(t, p, `() => { __webserv.settle.begin(1); const w = document.getElementById('f').contentWindow;
		w.fetch('/api/slow?ms=200').then(r => r.text()).then(() => { w.document.getElementById('x').textContent = 'framed'; }); }`)
	st := settleWait(t, p, 1, 0, 30, 60000, 20*time.Second)
	if st["pending"] != float64(0) {
		t.Fatalf("wait answered with the frame's fetch pending: %v", st)
	}
	if got := eval(t, p, `() => document.getElementById('f').contentDocument.getElementById('x').textContent`); got != "framed" {
		t.Fatalf("wait answered before the frame rendered: %q", got)
	}
}

// At its cap the wait answers with what is still pending, named, so that
// the Go side can report it at the settle timeout.
func TestWaitAnswersAtItsCapWithWhatIsPending(t *testing.T) {
	p := open(t, `<p>slow</p>`)
	eval(t, p, `() => { __webserv.settle.begin(1); fetch('/api/slow?ms=5000'); }`)
	st := settleWait(t, p, 1, 0, 30, 100, 4*time.Second)
	items, _ := st["items"].([]any)
	if st["pending"] != float64(1) || len(items) != 1 || !strings.Contains(items[0].(map[string]any)["url"].(string), "/api/slow?ms=5000") {
		t.Fatalf("at the cap: %v", st)
	}
}

// Work the action causes while the wait holds for the rest of the idle
// window is waited for too: here a window message (not tracked itself)
// whose handler fetches and renders, started after the wait's first look.
func TestWaitHoldsForWorkStartedDuringTheHold(t *testing.T) {
	p := open(t, `<p id="out"></p><script>
		addEventListener('message', (ev) => { if (ev.data === 'go') fetch('/api/slow?ms=150').then(r => r.text()).then(() => { out.textContent = 'late'; }); });
	</script>`)
	eval(t, p, `() => { __webserv.settle.begin(1); window.postMessage('go', '*'); }`)
	st := settleWait(t, p, 1, 100, 30, 60000, 20*time.Second)
	if st["pending"] != float64(0) {
		t.Fatalf("wait answered with work pending: %v", st)
	}
	if got := eval(t, p, `() => document.getElementById('out').textContent`); got != "late" {
		t.Fatalf("the hold ended before the work started in it was done: out = %q", got)
	}
}

// A finished transition's end event comes with the next rendered frame,
// however late it is: on a page whose frames each take 60 ms (a busy
// animation loop), the wait answers only once transitionend has run.
func TestWaitHoldsForTheFrameThatEndsATransition(t *testing.T) {
	p := open(t, `<!DOCTYPE html><style>#panel { width: 10px; transition: width 200ms linear; } #panel.open { width: 200px; }</style>
		<div id="panel">panel</div><p id="out"></p><script>
		const busy = () => { const until = performance.now() + 60; while (performance.now() < until) {} requestAnimationFrame(busy); };
		requestAnimationFrame(busy);
		panel.addEventListener('transitionend', () => { out.textContent = 'ended'; });
	</script>`)
	for i := 1; i <= 5; i++ {
		eval(t, p, fmt.Sprintf(`() => { document.getElementById('out').textContent = ''; __webserv.settle.begin(%d); document.getElementById('panel').classList.toggle('open'); }`, i))
		st := settleWait(t, p, i, 0, 30, 60000, 20*time.Second)
		if got := eval(t, p, `() => document.getElementById('out').textContent`); got != "ended" {
			t.Fatalf("round %d: the wait answered before transitionend ran: %v", i, st)
		}
	}
}

package envcore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"

	"github.com/webserv-rl/webserv/inject"
)

// Why a step stopped waiting (StepInfo.SettleReason).
const (
	// SettleDrained: the work the action caused (requests, timers,
	// animation frames, messages, navigations, a new tab) all finished, and
	// the idle window passed.
	SettleDrained = "drained"
	// SettleIdle: the action caused no work that could be tracked; the
	// step waited for the idle window alone.
	SettleIdle = "idle"
	// SettleTimeout: caused work was still pending at Config.SettleTimeout;
	// StepInfo.Pending names it.
	SettleTimeout = "timeout"
)

// NotSettledError says what the action had caused that was still pending
// when the settle timeout ran out. The step still returns the observation
// of that moment, with StepInfo.Settled false, StepInfo.SettleReason
// "timeout" and this error's text in StepInfo.SettleError.
type NotSettledError struct {
	Waited    time.Duration
	Loading   int      // frames still loading a document
	Inflight  int      // caused XHR/fetch requests in flight
	Callbacks int      // caused timers, animation frames, idle callbacks and messages pending
	Pending   []string // a few of them by name, "GET url (for 1.2s)", "setTimeout 700ms (for 0.3s)"
	Reason    string   // set when the page could not be asked
}

func (e *NotSettledError) Error() string {
	var parts []string
	if e.Loading > 0 {
		parts = append(parts, fmt.Sprintf("%d frame(s) still loading", e.Loading))
	}
	if e.Inflight > 0 {
		parts = append(parts, fmt.Sprintf("%d request(s) in flight", e.Inflight))
	}
	if e.Callbacks > 0 {
		parts = append(parts, fmt.Sprintf("%d timer(s) or callback(s) pending", e.Callbacks))
	}
	if e.Reason != "" {
		parts = append(parts, e.Reason)
	}
	if len(parts) == 0 {
		parts = append(parts, "activity did not stop")
	}
	s := fmt.Sprintf("page did not settle within %s: %s", e.Waited.Round(time.Millisecond), strings.Join(parts, ", "))
	if len(e.Pending) > 0 {
		s += ": " + strings.Join(e.Pending, "; ")
	}
	return s
}

// settle waits until the work that action act caused in the active tab is
// done (docs/envcore.md, "Settling"; the page side is inject/settle.js):
//
//  1. no frame of the tab is loading a document;
//  2. nothing the action caused is pending in the page: XHR and fetch
//     requests, timers, animation frames, idle callbacks and
//     MessageChannel messages scheduled from the action's input events
//     onwards (in a document newer than the action: its start-up work),
//     and in a routed context every request of the route's log that
//     started since actionStart and that the page does not track itself
//     (settle_route.go), and so is every request the browser reported the
//     tab's documents, workers and frames creating since then
//     (netwatch.go);
//  3. the idle window has passed since the latest of actionEnd, the last
//     navigation event and the last start or end of a caused request.
//
// Background work — requests of chains the action did not start, intervals,
// loops — is never waited for. A tab opened since actionStart (a popup, a
// target=_blank link) becomes the active tab first and is the one waited
// for. It returns the reason it stopped (SettleDrained or SettleIdle), a
// *NotSettledError at the settle timeout, or ctx's error.
func (e *Env) settle(ctx context.Context, act uint64, actionStart, actionEnd time.Time) (string, error) {
	deadline := actionEnd.Add(e.cfg.SettleTimeout)
	switched, caused := false, false
	// last is what the latest round saw; seen is the latest round in
	// which the page named pending work. Near the deadline a busy page can
	// miss its (short) answer window, and the timeout should still say
	// what was pending rather than only that the page did not answer.
	var last, seen NotSettledError
	logs := e.trafficLog()
	for {
		t, tabs, _ := e.snapshotTabs()
		if t == nil {
			return SettleIdle, nil
		}
		if !switched {
			for _, x := range tabs {
				if x.born.After(actionStart) && x != t {
					t = x
				}
			}
			if t != e.activeTab() {
				e.setActive(t)
				switched, caused = true, true
			}
		}
		// The grace grows by how late the browser answers: on a starved
		// host, what the window guards (a request on its way from the
		// renderer to the route) is late by as much.
		idle := e.cfg.IdleWindow + t.lag.get()
		now := time.Now()
		wait := pollEvery
		// The tab's or the route's log of requests changed: ask again.
		var reported, changed <-chan struct{}
		loading, lastEvent, crashed := t.loadState()
		if crashed {
			return SettleIdle, nil // observe reports the crash
		}
		if loading > 0 || lastEvent.After(actionStart) {
			caused = true
		}
		from := actionEnd
		if lastEvent.After(from) {
			from = lastEvent
		}
		quiet := now.Sub(from)
		busy := loading > 0
		last = NotSettledError{Loading: loading}
		if busy {
			url, _ := t.info()
			last.Pending = []string{"document loading: " + clipStr(url, 120)}
		} else if switched && t.starting(now) {
			// The new tab still shows its initial empty document: its first
			// navigation is on its way (Chromium reports it loading only
			// once the response commits).
			busy = true
			url, _ := t.info()
			last.Pending = []string{"new tab starting: " + clipStr(url, 120)}
		} else {
			var known []string // the requests the page tracks itself
			remaining := time.Until(deadline)
			// The page answers once the work is done and quiet for what
			// is left of the idle window, or at the cap (inject/settle.js,
			// wait): one round trip instead of a poll every few ms.
			hold := max(idle-quiet, 0)
			pageCap := max(min(maxPoll, remaining), 0)
			pctx, cancel := context.WithTimeout(ctx, max(min(2*time.Second, remaining), 50*time.Millisecond)+pageCap+hold)
			asked := time.Now()
			st, err := t.settleWait(pctx, act, e.cfg.LongRequest, t.load.loadedSince(actionStart), hold, idle, pageCap)
			cancel()
			// What happened meanwhile: a navigation's events, the
			// time itself.
			now = time.Now()
			wait = max(pollEvery-now.Sub(asked), 0)
			if err == nil {
				t.lag.observe(now.Sub(asked) - time.Duration(st.HeldMs)*time.Millisecond)
			}
			if n, ev, _ := t.loadState(); n > 0 || ev.After(from) {
				if ev.After(from) {
					from = ev
				}
				if n > 0 {
					caused, busy = true, true
					last.Loading = n
				}
			}
			quiet = now.Sub(from)
			switch {
			case errors.Is(err, errNoInjection):
				// A document without the tracker (about:blank, an error
				// page): only its loading state counts.
			case err != nil:
				if ctx.Err() != nil {
					return "", ctx.Err()
				}
				// Most often the document went away under us
				// (navigation); ask again.
				busy = true
				last.Reason = "the page did not answer: " + err.Error()
			default:
				known = st.Sent
				if st.Tracked > 0 {
					caused = true
				}
				if st.Pending > 0 {
					busy = true
					last.Inflight, last.Callbacks = st.Requests, st.Pending-st.Requests
					for _, it := range st.Items {
						last.Pending = append(last.Pending, it.String())
					}
					seen = last
				} else if q := time.Duration(st.QuietMs) * time.Millisecond; q < quiet {
					quiet = q
				}
				if st.Frames > 0 && st.Pending == 0 {
					// The frames just after the action render any moment
					// (what they start: observers, transitions).
					busy = true
				}
			}
			// The requests the browser reported created (any frame,
			// worker or document of the tab), and those the route saw.
			busy, wait, reported = e.routeRound(&t.net.log, known, actionStart, now, busy, wait, &last, &quiet, &caused)
			if logs != nil {
				busy, wait, changed = e.routeRound(logs, known, actionStart, now, busy, wait, &last, &quiet, &caused)
			}
			if len(last.Pending) > 0 {
				seen = last
			}
		}
		if !busy && quiet >= idle {
			if caused {
				return SettleDrained, nil
			}
			return SettleIdle, nil
		}
		now = time.Now()
		if !now.Before(deadline) {
			if last.Loading == 0 && len(last.Pending) == 0 && len(seen.Pending) > 0 {
				last.Inflight, last.Callbacks, last.Pending = seen.Inflight, seen.Callbacks, seen.Pending
			}
			last.Waited = now.Sub(actionEnd)
			return SettleTimeout, &last
		}
		if !busy {
			wait = quietWait(idle, quiet)
		}
		if left := deadline.Sub(now); wait > left {
			wait = left
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-changed:
			timer.Stop()
		case <-reported:
			timer.Stop()
		case <-ctx.Done():
			timer.Stop()
			return "", ctx.Err()
		}
	}
}

// quietWait is how long a round that found nothing pending waits before
// the next: until the idle window has passed since the last event. quiet
// is negative when events came in while the round asked the page (the
// question waited on a navigation): they are fresh, so one window, not
// the window plus their lead, which would hold the step up to a second
// past its content.
func quietWait(idle, quiet time.Duration) time.Duration {
	return idle - max(quiet, 0)
}

// beginAction tells the active document of t (and its same-origin frames)
// that action act starts now, so that the page attributes to it the work
// its input events cause. A document without the tracker is left alone: a
// document that never heard of act reports its start-up work instead.
//
// With pipelined the call is sent without waiting for its answer. That is
// right only when the action's next command to the page is an evaluation
// too (the page runs a session's evaluations in the order they come); input
// events travel another way and could overtake it.
func (t *tab) beginAction(ctx context.Context, act uint64, pipelined bool) {
	expr := inject.Call("settle.begin", act)
	if pipelined {
		_ = t.client(ctx).send(proto.RuntimeEvaluate{Expression: expr, Silent: true})
		return
	}
	_ = t.evalJSON(ctx, expr, nil)
}

// pageSettle is settle.js's answer for one action.
type pageSettle struct {
	Pending    int          `json:"pending"`    // items the action caused that are still pending
	Requests   int          `json:"requests"`   // of which XHR/fetch requests and body reads
	Long       int          `json:"long"`       // caused requests older than LongRequest, not counted
	Background int          `json:"background"` // requests of other chains, not counted
	QuietMs    int64        `json:"quiet_ms"`   // since a caused request last started or ended
	WakeMs     int64        `json:"wake_ms"`    // until the first pending item but a request is due (0: any moment; -1: only requests pending)
	Tracked    int          `json:"tracked"`    // items the action has caused in all
	Items      []settleItem `json:"items"`
	Sent       []string     `json:"sent"`    // "METHOD URL" of the requests it sent from a second before the action on
	Frames     int          `json:"frames"`  // the frames just after the action, not yet rendered
	HeldMs     int64        `json:"held_ms"` // how long the answer waited in the page (settleWait)
	Ready      string       `json:"ready"`
}

// While a frame is loading a document, settle looks at the tab's loading
// state every pollEvery (no round trip to the page); a page it can ask
// answers when its work is done or at the latest after maxPoll
// (settleWait), and is not asked again sooner than pollEvery after the
// last question.
const (
	pollEvery = 20 * time.Millisecond
	maxPoll   = 250 * time.Millisecond
)

// settleItem is one pending item of a pageSettle.
type settleItem struct {
	Kind   string `json:"kind"` // request, timer, frame, idle, message, navigation
	What   string `json:"what"`
	Method string `json:"method"`
	URL    string `json:"url"`
	Ms     int64  `json:"ms"` // its age
}

func (it settleItem) String() string {
	age := float64(it.Ms) / 1000
	if it.Kind == "request" {
		// As the route names its requests: what asked for it (fetch, xhr,
		// a body read, an image).
		return fmt.Sprintf("%s %s (%s, for %.1fs)", it.Method, clipStr(it.URL, 120), it.What, age)
	}
	return fmt.Sprintf("%s (for %.1fs)", it.What, age)
}

// settleWait asks t's page what action act caused that is still pending;
// loaded says Chromium reported a document load starting and ending since
// the action, so the navigations the page saw start are over. The page
// answers at once when nothing is pending and quiet; otherwise once the
// pending work is done and quiet for hold (what is left of the idle window),
// or at most after pageCap with what is pending then.
func (t *tab) settleWait(ctx context.Context, act uint64, long time.Duration, loaded bool, hold, idle, pageCap time.Duration) (pageSettle, error) {
	var st pageSettle
	err := t.evalAwait(ctx, inject.Call("settle.wait", act, long.Milliseconds(), loaded, hold.Milliseconds(), idle.Milliseconds(), pageCap.Milliseconds()), &st)
	return st, err
}

// loadWatch is a tab's document-loading state, kept from Chromium's Page
// events: which frames are between frameStartedLoading and
// frameStoppedLoading, and when the last navigation or load event happened.
// A page's tracker restarts with every document, so while a navigation is
// under way this state is what holds the wait until the new document (with
// a new tracker) is in place.
type loadWatch struct {
	mu      sync.Mutex
	loading map[proto.PageFrameID]struct{}
	last    time.Time
	stopped time.Time // the last frameStoppedLoading
	// committed: a document has committed in some frame since the tab
	// was attached (Page.frameNavigated).
	committed bool
}

func newLoadWatch() *loadWatch {
	return &loadWatch{loading: map[proto.PageFrameID]struct{}{}, last: time.Now()}
}

// onEvent takes the Page events that change the loading state and reports
// whether msg was one of them.
func (l *loadWatch) onEvent(msg *rod.Message) bool {
	switch msg.Method {
	case "Page.frameStartedLoading", "Page.frameStoppedLoading", "Page.frameDetached":
		id := eventFrame(msg)
		l.mu.Lock()
		l.last = time.Now()
		switch msg.Method {
		case "Page.frameStartedLoading":
			l.loading[id] = struct{}{}
		case "Page.frameStoppedLoading":
			delete(l.loading, id)
			l.stopped = l.last
		default:
			delete(l.loading, id)
		}
		l.mu.Unlock()
	case "Page.frameNavigated":
		l.mu.Lock()
		l.last = time.Now()
		l.committed = true
		l.mu.Unlock()
	case "Page.navigatedWithinDocument", "Page.frameRequestedNavigation":
		l.touch()
	default:
		return false
	}
	return true
}

// eventFrame is the frame a frame*Loading or frameDetached event is about.
func eventFrame(msg *rod.Message) proto.PageFrameID {
	var started proto.PageFrameStartedLoading
	if msg.Load(&started) {
		return started.FrameID
	}
	var stopped proto.PageFrameStoppedLoading
	if msg.Load(&stopped) {
		return stopped.FrameID
	}
	var detached proto.PageFrameDetached
	msg.Load(&detached)
	return detached.FrameID
}

// touch records an event that restarts the idle window: a navigation the
// environment starts itself, a dialog.
func (l *loadWatch) touch() {
	l.mu.Lock()
	l.last = time.Now()
	l.mu.Unlock()
}

func (l *loadWatch) state() (loading int, last time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.loading), l.last
}

// committedAny reports whether a document has committed since the tab was
// attached.
func (l *loadWatch) committedAny() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.committed
}

// loadedSince reports whether a frame stopped loading after t.
func (l *loadWatch) loadedSince(t time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stopped.After(t)
}

// tabStartBridge bounds how long a new tab may show its initial empty
// document before a step stops waiting for its first navigation (a popup
// whose response was a download or a 204 never commits one).
const tabStartBridge = 5 * time.Second

// starting reports whether t, a tab an action opened, still shows the
// initial empty document its opener created, with a navigation to come: no
// document has committed in it yet, it was not opened on about:blank, and
// it is younger than tabStartBridge.
func (t *tab) starting(now time.Time) bool {
	if t.load.committedAny() || now.Sub(t.born) > tabStartBridge {
		return false
	}
	url, _ := t.info()
	return url != "about:blank"
}

// loadState reports how many frames of t are loading, when the last
// navigation or load event happened, and whether the page crashed.
func (t *tab) loadState() (loading int, last time.Time, crashed bool) {
	loading, last = t.load.state()
	t.mu.Lock()
	defer t.mu.Unlock()
	return loading, last, t.crashed
}

func (t *tab) touch() { t.load.touch() }

// lagWatch is how late a tab's browser answers the settle's questions,
// beyond the time the page held them: near zero on a healthy host, tens or
// hundreds of ms on a starved one. A sample above the estimate replaces it;
// below, the estimate halves toward it, so a burst of load counts at once
// and fades within a few questions.
type lagWatch struct {
	mu  sync.Mutex
	est time.Duration
}

// maxLagGrace bounds what lag adds to the idle window.
const maxLagGrace = 250 * time.Millisecond

func (l *lagWatch) observe(d time.Duration) {
	d = min(max(d, 0), maxLagGrace)
	l.mu.Lock()
	l.est = max(d, l.est/2)
	l.mu.Unlock()
}

// get is the estimate, less the first millisecond (the round trip itself
// on a healthy host), so that an idle host's window stays as configured.
func (l *lagWatch) get() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return max(l.est-time.Millisecond, 0)
}

// DefaultIdleWindow is Config.IdleWindow's default: the grace a step
// gives, after the last request or navigation event it saw, to what it
// cannot see (docs/envcore.md, "Settling").
const DefaultIdleWindow = 30 * time.Millisecond

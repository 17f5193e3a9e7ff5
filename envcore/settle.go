package envcore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// NotSettledError says why a page was still busy when the settle timeout
// ran out. The step still returns the observation of that moment, with
// StepInfo.Settled false and this error's text in StepInfo.SettleError.
type NotSettledError struct {
	Waited   time.Duration
	Loading  int      // frames still loading a document
	Inflight int      // XHR/fetch requests in flight
	Pending  []string // a few of them, "GET url (for 1.2s)"
	Reason   string   // set when the page could not be asked
}

func (e *NotSettledError) Error() string {
	var parts []string
	if e.Loading > 0 {
		parts = append(parts, fmt.Sprintf("%d frame(s) still loading", e.Loading))
	}
	if e.Inflight > 0 {
		p := fmt.Sprintf("%d request(s) in flight", e.Inflight)
		if len(e.Pending) > 0 {
			p += ": " + strings.Join(e.Pending, "; ")
		}
		parts = append(parts, p)
	}
	if e.Reason != "" {
		parts = append(parts, e.Reason)
	}
	if len(parts) == 0 {
		parts = append(parts, "activity did not stop")
	}
	return fmt.Sprintf("page did not settle within %s: %s", e.Waited.Round(time.Millisecond), strings.Join(parts, ", "))
}

// settle waits until the active tab is quiet (WebServ paper, 3.3): no frame
// loading a document and no XHR/fetch in flight for the idle window, counted
// from the later of actionEnd and the last request or navigation event. A
// tab opened since actionStart (a popup, a target=_blank link) becomes the
// active tab first and is the one waited for.
//
// The page's own counter restarts with every document, so while a
// navigation is under way the frame-loading state from Chromium's events
// holds the wait until the new document (with a new counter) is in place.
// Requests open longer than Config.LongRequest stop counting, and WebSocket
// and EventSource are never counted, so long-lived channels do not hold
// every step until the timeout.
func (e *Env) settle(ctx context.Context, actionStart, actionEnd time.Time) error {
	idle := e.cfg.IdleWindow
	deadline := actionEnd.Add(e.cfg.SettleTimeout)
	switched := false
	var last NotSettledError
	for {
		t, tabs, _ := e.snapshotTabs()
		if t == nil {
			return nil
		}
		if !switched {
			for _, x := range tabs {
				if x.born.After(actionStart) && x != t {
					t = x
				}
			}
			if t != e.activeTab() {
				e.setActive(t)
				switched = true
			}
		}
		now := time.Now()
		loading, lastEvent, crashed := t.loadState()
		if crashed {
			return nil // observe reports the crash
		}
		from := actionEnd
		if lastEvent.After(from) {
			from = lastEvent
		}
		quiet := now.Sub(from)
		busy := loading > 0
		last = NotSettledError{Loading: loading}
		if !busy {
			remaining := time.Until(deadline)
			pctx, cancel := context.WithTimeout(ctx, max(min(2*time.Second, remaining), 50*time.Millisecond))
			st, err := t.net(pctx, e.cfg.LongRequest)
			cancel()
			switch {
			case errors.Is(err, errNoInjection):
				// A document without the counter (about:blank, an error
				// page): only its loading state counts.
			case err != nil:
				if ctx.Err() != nil {
					return ctx.Err()
				}
				// Most often the document went away under us
				// (navigation); ask again.
				busy = true
				last.Reason = "the page did not answer: " + err.Error()
			case st.Inflight > 0:
				busy = true
				last.Inflight = st.Inflight
				for _, p := range st.Pending {
					last.Pending = append(last.Pending, fmt.Sprintf("%s %s (for %.1fs)", p.Method, clipStr(p.URL, 120), float64(p.Ms)/1000))
				}
			default:
				if q := time.Duration(st.QuietMs) * time.Millisecond; q < quiet {
					quiet = q
				}
			}
		}
		if !busy && quiet >= idle {
			return nil
		}
		now = time.Now()
		if !now.Before(deadline) {
			last.Waited = now.Sub(actionEnd)
			return &last
		}
		wait := 20 * time.Millisecond
		if !busy {
			wait = idle - quiet
		}
		if left := deadline.Sub(now); wait > left {
			wait = left
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		}
	}
}

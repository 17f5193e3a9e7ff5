package envcore

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/webserv-rl/webserv/internal/traffic"
)

// The network truth of settling comes from the route: a browser context
// routed through a proxy (netroute.Route, BrowserOptions.Proxy) logs every
// request it makes, whoever made it — page scripts, the parser (images,
// scripts, stylesheets, frames, fonts), workers, frames of other origins,
// beacons. A step waits for the requests of its context that started after
// its action began (docs/envcore.md, "Settling"), read from that log with
// no DevTools call per request. The page's tracker (inject/settle.js) still
// judges the requests it sees itself (fetch, XHR, beacons of the page and
// its same-origin frames): those it names are left to it, so its rule for
// background chains and long polls holds.

// trafficSource is a ContextProxy that logs its context's requests.
type trafficSource interface {
	Traffic() *traffic.Log
}

// trafficLog is the request log of e's current context, or nil when its
// contexts are not routed.
func (e *Env) trafficLog() *traffic.Log {
	if e.ctxID == "" {
		return nil
	}
	if s, ok := e.br().contextProxy(e.ctxID).(trafficSource); ok {
		return s.Traffic()
	}
	return nil
}

// routeState is what the route saw of an action's requests.
type routeState struct {
	pending []traffic.Request // still to be waited for
	last    time.Time         // the latest start or end of a request not left to the page
	seen    int               // requests not left to the page
}

// routeWait judges the requests reqs (those that started after the
// action began, in the order they started) at now: the ones the page tracks itself (known, by
// "METHOD URL", counted) are left to it; of the others, one is pending
// until it ends, unless its response is a stream whose headers have come
// (an EventSource, a multipart image) or it is older than long while its
// origin has answered a request sent after it (a long poll; the same rule
// as the page's).
func routeWait(reqs []traffic.Request, known map[string]int, long time.Duration, now time.Time) routeState {
	var rs routeState
	answered := map[string]time.Time{} // origin -> latest start of a request it answered
	for _, r := range reqs {
		if !r.Head.IsZero() && r.Start.After(answered[r.Origin]) {
			answered[r.Origin] = r.Start
		}
	}
	// The page names its newest requests; the log may also hold older
	// ones of the same key, sent between the action's start and the page
	// hearing of it. Matched newest first, those older ones are left over.
	for i := len(reqs) - 1; i >= 0; i-- {
		r := reqs[i]
		k := r.Method + " " + r.URL
		if known[k] > 0 {
			known[k]--
			continue
		}
		rs.seen++
		for _, t := range []time.Time{r.Start, r.End} {
			if t.After(rs.last) {
				rs.last = t
			}
		}
		switch {
		case !r.End.IsZero():
		case r.Stream && !r.Head.IsZero():
		case now.Sub(r.Start) > long && answered[r.Origin].After(r.Start):
		default:
			rs.pending = append(rs.pending, r)
		}
	}
	return rs
}

// routeItem names a pending request of the route for StepInfo.Pending.
func routeItem(r traffic.Request, now time.Time) string {
	return fmt.Sprintf("%s %s (%s, for %.1fs)", r.Method, clipStr(r.URL, 120), r.Dest, now.Sub(r.Start).Seconds())
}

// routeRound adds a log's view to one round of settle (the route's, or the
// tab's requests as the browser reported them): requests the
// log saw start since actionStart that the page does not track itself
// (known) make the action's work caused, hold the step while they are
// pending, and restart the idle window when they start or end. It returns
// the round's busy and wait, and while the route's requests are pending a
// channel closed when one of them changes (the round's wait ends then).
func (e *Env) routeRound(logs *traffic.Log, known []string, actionStart, now time.Time, busy bool, wait time.Duration, last *NotSettledError, quiet *time.Duration, caused *bool) (bool, time.Duration, <-chan struct{}) {
	k := make(map[string]int, len(known))
	for _, s := range known {
		k[s]++
	}
	changed := logs.Changed()
	rs := routeWait(logs.Since(actionStart), k, e.cfg.LongRequest, now)
	if rs.seen > 0 {
		*caused = true
	}
	if !rs.last.IsZero() {
		if q := now.Sub(rs.last); q < *quiet {
			*quiet = q
		}
	}
	if len(rs.pending) == 0 {
		return busy, wait, nil
	}
	// The log wakes the wait when a request starts or ends; until then
	// nothing the route can tell changes, and the page answers for itself
	// within its own wait (settleWait). maxPoll bounds how stale a long
	// request's age in StepInfo.Pending, and the rule for long polls, get.
	w := maxPoll
	if busy {
		w = min(w, wait)
	}
	for _, r := range rs.pending {
		// Both logs may hold the same request: it is named and counted
		// once.
		if slices.ContainsFunc(last.Pending, func(s string) bool { return strings.HasPrefix(s, r.Method+" "+clipStr(r.URL, 120)+" (") }) {
			continue
		}
		last.Inflight++
		if len(last.Pending) < 8 {
			last.Pending = append(last.Pending, routeItem(r, now))
		}
	}
	return true, w, changed
}

// Package traffic is the log of one browser context's requests as its
// proxy (netroute.Route) sees them: every request the context makes, page
// scripts, the parser (images, scripts, stylesheets, frames, fonts),
// workers, frames of other origins and beacons alike. A step's settle rule
// (envcore, docs/envcore.md "Settling") reads what started after its action
// and is still in flight, with no DevTools call per request.
package traffic

import (
	"net/url"
	"strings"
	"sync"
	"time"
)

// keep is how long an ended request stays in the log: longer than any
// settle timeout asks back.
const keep = 2 * time.Minute

// Request is one request of the context.
type Request struct {
	Method string
	URL    string // absolute, as the browser sent it to the proxy
	Origin string // scheme://host[:port]
	// Dest is what asked for it: document, iframe, image, script, style,
	// font, fetch (fetch, XHR, a worker's requests, a beacon), or other.
	Dest  string
	Start time.Time
	Head  time.Time // when its response headers came (zero: not yet)
	End   time.Time // when it ended (zero: in flight)
	// Stream: the response is a stream that only ends when its server
	// stops (text/event-stream, multipart/x-mixed-replace).
	Stream bool
}

// Log is one context's requests, safe for concurrent use.
type Log struct {
	mu        sync.Mutex
	reqs      []*Request // by start time
	compactAt int        // the length at which Begin compacts reqs
	changed   chan struct{}
}

// Changed returns a channel that is closed when a request next starts,
// gets its response headers or ends: a settle that waits on requests in
// flight sleeps until then instead of asking at intervals. Take it before
// reading the log (Since), so that nothing between the two is missed.
func (l *Log) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.changed == nil {
		l.changed = make(chan struct{})
	}
	return l.changed
}

// notify wakes the waiters on Changed; l.mu is held.
func (l *Log) notify() {
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
}

// Begin records a request starting now and returns it, for Head and End.
func (l *Log) Begin(method, rawURL string, header map[string][]string) *Request {
	return l.Open(method, rawURL, dest(header))
}

// Open is Begin for a request whose destination is known already (the
// browser's own report of it names its kind).
func (l *Log) Open(method, rawURL, dest string) *Request {
	r := &Request{Method: method, URL: rawURL, Dest: dest}
	if u, err := url.Parse(rawURL); err == nil {
		r.Origin = u.Scheme + "://" + u.Host
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	r.Start = time.Now() // under the lock: the log stays in start order
	if len(l.reqs) >= l.compactAt {
		l.compact(r.Start)
	}
	l.reqs = append(l.reqs, r)
	l.notify()
	return r
}

// compact drops the requests that ended more than keep before now, keeping
// the others in order (one still in flight, a stream held for an hour,
// does not keep what came after it), and sets when to compact next: at
// twice what is left, so the work is constant per request.
func (l *Log) compact(now time.Time) {
	kept := l.reqs[:0]
	for _, q := range l.reqs {
		if q.End.IsZero() || now.Sub(q.End) <= keep {
			kept = append(kept, q)
		}
	}
	clear(l.reqs[len(kept):])
	l.reqs = kept
	l.compactAt = max(2*len(kept), 256)
}

// Head records that r's response headers came, with their content type.
func (l *Log) Head(r *Request, contentType string) {
	ct := strings.ToLower(contentType)
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.Head.IsZero() {
		r.Head = time.Now()
		r.Stream = strings.HasPrefix(ct, "text/event-stream") || strings.HasPrefix(ct, "multipart/x-mixed-replace")
		l.notify()
	}
}

// End records that r ended (answered, failed or abandoned).
func (l *Log) End(r *Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.End.IsZero() {
		r.End = time.Now()
		l.notify()
	}
}

// Since returns copies of the requests that started at or after t, in the
// order they started.
func (l *Log) Since(t time.Time) []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Request
	for i := len(l.reqs) - 1; i >= 0 && !l.reqs[i].Start.Before(t); i-- {
		out = append(out, *l.reqs[i])
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// dest says what asked for a request, from the Sec-Fetch-Dest header that
// Chromium sends to trustworthy origins (loopback, https) or else from its
// Accept header.
func dest(h map[string][]string) string {
	get := func(k string) string {
		if v := h[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	switch d := get("Sec-Fetch-Dest"); d {
	case "":
	case "empty":
		return "fetch"
	default:
		return d
	}
	a := get("Accept")
	switch {
	case strings.HasPrefix(a, "text/html"):
		return "document"
	case strings.HasPrefix(a, "image/"):
		return "image"
	case strings.HasPrefix(a, "text/css"):
		return "style"
	case a == "text/event-stream":
		return "eventsource"
	}
	return "other"
}

package envcore

import (
	"testing"
	"time"

	"github.com/webserv-rl/webserv/internal/traffic"
)

// The page names its newest requests of a key; older ones of the same key
// in the log (sent just before the page heard of the action) are the ones
// left over, so a poller's request in flight stays the page's.
func TestRouteWaitMatchesThePagesRequestsNewestFirst(t *testing.T) {
	t0 := time.Now()
	beacon := func(start, end int) traffic.Request {
		r := traffic.Request{Method: "POST", URL: "http://a.test/b", Origin: "http://a.test", Dest: "fetch",
			Start: t0.Add(time.Duration(start) * time.Millisecond)}
		if end > 0 {
			r.Head = t0.Add(time.Duration(end) * time.Millisecond)
			r.End = r.Head
		}
		return r
	}
	img := traffic.Request{Method: "GET", URL: "http://a.test/i.png", Origin: "http://a.test", Dest: "image", Start: t0.Add(5 * time.Millisecond)}
	reqs := []traffic.Request{beacon(0, 30), img, beacon(150, 0)}
	rs := routeWait(reqs, map[string]int{"POST http://a.test/b": 1}, 5*time.Second, t0.Add(200*time.Millisecond))
	if len(rs.pending) != 1 || rs.pending[0].URL != img.URL {
		t.Errorf("pending %+v, want the image alone", rs.pending)
	}
	if rs.seen != 2 {
		t.Errorf("seen %d, want the image and the older beacon", rs.seen)
	}
}

// A stream stops counting once its headers came; a long request stops
// counting once its origin answered a request sent after it.
func TestRouteWaitLetsStreamsAndLongPollsGo(t *testing.T) {
	t0 := time.Now()
	now := t0.Add(6 * time.Second)
	sse := traffic.Request{Method: "GET", URL: "http://a.test/events", Origin: "http://a.test", Start: t0, Head: t0.Add(time.Millisecond), Stream: true}
	poll := traffic.Request{Method: "GET", URL: "http://a.test/poll", Origin: "http://a.test", Start: t0}
	later := traffic.Request{Method: "GET", URL: "http://a.test/x", Origin: "http://a.test", Start: t0.Add(time.Second), Head: t0.Add(2 * time.Second), End: t0.Add(2 * time.Second)}
	slow := traffic.Request{Method: "GET", URL: "http://b.test/slow", Origin: "http://b.test", Start: t0}
	rs := routeWait([]traffic.Request{sse, poll, slow, later}, nil, 5*time.Second, now)
	if len(rs.pending) != 1 || rs.pending[0].URL != slow.URL {
		t.Errorf("pending %+v, want the slow server's request alone", rs.pending)
	}
}

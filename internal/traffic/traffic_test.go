package traffic

import (
	"testing"
	"time"
)

func TestSinceReturnsWhatStartedSinceInOrder(t *testing.T) {
	var l Log
	old := l.Begin("GET", "http://a.test/old", nil)
	l.End(old)
	mid := time.Now()
	img := l.Begin("GET", "http://a.test/img.png", map[string][]string{"Accept": {"image/avif,image/webp,*/*"}})
	sse := l.Begin("GET", "http://a.test/events", map[string][]string{"Sec-Fetch-Dest": {"empty"}})
	l.Head(sse, "text/event-stream; charset=utf-8")
	got := l.Since(mid)
	if len(got) != 2 || got[0].URL != img.URL || got[1].URL != sse.URL {
		t.Fatalf("Since: %+v", got)
	}
	if got[0].Dest != "image" || got[1].Dest != "fetch" || got[0].Origin != "http://a.test" {
		t.Errorf("dest/origin: %+v", got)
	}
	if !got[1].Stream || got[0].Stream || !got[0].End.IsZero() || got[1].Head.IsZero() {
		t.Errorf("stream/head/end: %+v", got)
	}
}

// What ended long ago is dropped, even behind a request still in flight.
func TestLogForgetsWhatEndedLongAgo(t *testing.T) {
	var l Log
	l.Begin("GET", "http://a.test/stream", nil) // never ends
	for i := 0; i < 300; i++ {
		r := l.Begin("GET", "http://a.test/x", nil)
		l.End(r)
		r.End = r.End.Add(-keep - time.Second) // ended long ago
	}
	l.Begin("GET", "http://a.test/last", nil)
	l.mu.Lock()
	n := len(l.reqs)
	l.mu.Unlock()
	if n > 50 {
		t.Errorf("%d requests kept", n)
	}
	if got := l.Since(time.Time{}); got[0].URL != "http://a.test/stream" || got[len(got)-1].URL != "http://a.test/last" {
		t.Errorf("kept %v ... %v", got[0].URL, got[len(got)-1].URL)
	}
}

// A settle waiting on requests in flight is woken by each start, response
// head and end, and by nothing else (a second End of the same request).
func TestChangedWakesOnStartHeadAndEnd(t *testing.T) {
	var l Log
	closed := func(c <-chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}
	c := l.Changed()
	if closed(c) {
		t.Fatal("Changed is closed before anything happened")
	}
	r := l.Begin("GET", "http://a.test/x", nil)
	if !closed(c) {
		t.Fatal("a request's start did not wake the waiter")
	}
	c = l.Changed()
	l.Head(r, "text/html")
	if !closed(c) {
		t.Fatal("a response's headers did not wake the waiter")
	}
	c = l.Changed()
	l.End(r)
	if !closed(c) {
		t.Fatal("a request's end did not wake the waiter")
	}
	c = l.Changed()
	l.End(r)
	l.Head(r, "text/html")
	if closed(c) {
		t.Fatal("a request that had already ended woke the waiter again")
	}
}

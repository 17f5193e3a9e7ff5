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

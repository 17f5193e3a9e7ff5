package envcore

import (
	"testing"
	"time"

	"github.com/go-rod/rod/lib/proto"
)

// The tap hands the four read events to the tab of their session (or of
// the worker's session the tab started), keyed by request id across
// sessions; a redirect continues its request; a frame's new document and
// a worker's end end what they had in flight.
func TestNetWatchFollowsARequestFromItsCreationToItsEnd(t *testing.T) {
	b := &Browser{sessions: map[proto.TargetSessionID]*tab{}, children: map[proto.TargetSessionID]*tab{}}
	tb := &tab{}
	b.sessions["page"] = tb
	b.children["worker"] = tb
	feed := func(msg string) {
		data := []byte(msg)
		if len(data) < len(networkPrefix) || string(data[:len(networkPrefix)]) != string(networkPrefix) {
			t.Fatalf("not a Network event as Chromium writes one: %s", msg)
		}
		b.onNetwork(data[len(networkPrefix):], data)
	}
	open := func() map[string]bool {
		out := map[string]bool{}
		for _, r := range tb.net.log.Since(time.Time{}) {
			out[r.URL] = r.End.IsZero()
		}
		return out
	}
	feed(`{"method":"Network.requestWillBeSent","params":{"requestId":"1.1","loaderId":"L1","frameId":"F","type":"Script","request":{"url":"http://a.test/m.mjs","method":"GET"}},"sessionId":"page"}`)
	feed(`{"method":"Network.requestWillBeSentExtraInfo","params":{"requestId":"1.1"},"sessionId":"page"}`)
	feed(`{"method":"Network.requestWillBeSent","params":{"requestId":"1.1","loaderId":"L1","frameId":"F","type":"Script","request":{"url":"http://a.test/moved.mjs","method":"GET"},"redirectResponse":{}},"sessionId":"page"}`)
	feed(`{"method":"Network.requestWillBeSent","params":{"requestId":"W.1","type":"Script","request":{"url":"http://a.test/worker.js","method":"GET"}},"sessionId":"page"}`)
	feed(`{"method":"Network.requestWillBeSent","params":{"requestId":"1.2","loaderId":"L1","frameId":"F","type":"Ping","request":{"url":"http://a.test/beacon","method":"POST"}},"sessionId":"page"}`)
	feed(`{"method":"Network.requestWillBeSent","params":{"requestId":"2.1","type":"Fetch","request":{"url":"http://a.test/api","method":"GET"}},"sessionId":"worker"}`)
	feed(`{"method":"Network.requestWillBeSent","params":{"requestId":"9.9","type":"Fetch","request":{"url":"http://a.test/other","method":"GET"}},"sessionId":"another-tab"}`)
	got := open()
	want := map[string]bool{"http://a.test/m.mjs": true, "http://a.test/worker.js": true, "http://a.test/beacon": true, "http://a.test/api": true}
	if len(got) != len(want) {
		t.Fatalf("requests %v, want %v", got, want)
	}
	rs := tb.net.log.Since(time.Time{})
	if rs[0].Dest != "script" || rs[0].Method != "GET" {
		t.Errorf("first request %+v", rs[0])
	}
	feed(`{"method":"Network.responseReceived","params":{"requestId":"1.1","type":"Script","response":{"mimeType":"text/javascript"}},"sessionId":"page"}`)
	feed(`{"method":"Network.dataReceived","params":{"requestId":"1.1"},"sessionId":"page"}`)
	feed(`{"method":"Network.loadingFinished","params":{"requestId":"1.1"},"sessionId":"page"}`)
	// The worker's script: asked for in the tab's session, loaded in the
	// worker's.
	feed(`{"method":"Network.loadingFinished","params":{"requestId":"W.1"},"sessionId":"worker"}`)
	got = open()
	if got["http://a.test/m.mjs"] || got["http://a.test/worker.js"] || !got["http://a.test/beacon"] || !got["http://a.test/api"] {
		t.Fatalf("after the module and the worker's script loaded: %v", got)
	}
	// The frame's next document commits: the beacon of the one it
	// replaced is over. The worker ends: so is its fetch.
	tb.net.onFrameNavigated(&proto.PageFrameNavigated{Frame: &proto.PageFrame{ID: "F", LoaderID: "L2"}})
	b.onChildDetached("worker")
	got = open()
	if got["http://a.test/beacon"] || got["http://a.test/api"] {
		t.Fatalf("after the frame's new document and the worker's end: %v", got)
	}
	if _, ok := b.children["worker"]; ok {
		t.Error("the worker's session is still mapped")
	}
}

package trajectory_test

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/webserv-rl/webserv/netroute"
	"github.com/webserv-rl/webserv/trajectory"
)

func entry(at time.Time, method, url string, status int, ms float64) netroute.HAREntry {
	var e netroute.HAREntry
	e.StartedDateTime = at.Format(time.RFC3339Nano)
	e.Request.Method, e.Request.URL = method, url
	e.Response.Status = status
	e.Time = ms
	return e
}

// A trace's requests land on the step whose action they followed, timed
// from that action's start; those the page began after the step replied
// are marked; requests before the first action are the start's. A trace
// reads back as written, and lines without Began are placed by their
// timings.
func TestNetworkPlacesRequestsOnSteps(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ep := &trajectory.Episode{Steps: []trajectory.Line{
		{Kind: trajectory.KindStep, Step: 1, Began: at(1000), Time: at(1400)},
		// Written before Began was recorded: began at 3000 - (50+150+50) ms.
		{Kind: trajectory.KindStep, Step: 2, Time: at(3000), Info: map[string]any{"action_ms": 50.0, "settle_ms": 150.0, "extract_ms": 50.0}},
	}}
	h := &netroute.HAR{}
	h.Log.Entries = []netroute.HAREntry{
		entry(at(2900), "POST", "http://shop/cart", 200, 20), // step 2
		entry(at(100), "GET", "http://shop/", 200, 80),       // the start page
		entry(at(300), "GET", "http://shop/app.js", 200, 10),
		entry(at(1050), "GET", "http://shop/api/list", 200, 300), // step 1's
		entry(at(1900), "GET", "http://shop/poll", 0, 5),         // after step 1 replied
	}
	path := filepath.Join(t.TempDir(), "0001"+trajectory.TraceExt)
	if err := trajectory.WriteTrace(path, h); err != nil {
		t.Fatal(err)
	}
	back, err := trajectory.ReadTrace(path)
	if err != nil || !reflect.DeepEqual(back.Log.Entries, h.Log.Entries) {
		t.Fatalf("trace read back = %+v, %v", back, err)
	}
	if got := trajectory.TracePath("/r/env-1/0001" + trajectory.Ext); got != "/r/env-1/0001.har.gz" {
		t.Errorf("TracePath = %s", got)
	}

	net := ep.Network(back)
	if len(net) != 3 {
		t.Fatalf("%d steps on the timeline, want the start and 2", len(net))
	}
	want := [][]trajectory.Request{
		{{Method: "GET", URL: "http://shop/", Status: 200, StartMS: 0, MS: 80}, {Method: "GET", URL: "http://shop/app.js", Status: 200, StartMS: 200, MS: 10}},
		{{Method: "GET", URL: "http://shop/api/list", Status: 200, StartMS: 50, MS: 300}, {Method: "GET", URL: "http://shop/poll", StartMS: 900, MS: 5, AfterReply: true}},
		{{Method: "POST", URL: "http://shop/cart", Status: 200, StartMS: 150, MS: 20}},
	}
	if !reflect.DeepEqual(net, want) {
		t.Errorf("timeline =\n%+v\nwant\n%+v", net, want)
	}
	if got := ep.Network(nil); len(got) != 3 || got[0] != nil {
		t.Errorf("no trace: %+v", got)
	}
}

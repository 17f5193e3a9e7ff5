package server_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/webserv-rl/webserv/server"
)

// The protocol's own cost per request: the round trip on loopback less
// the time the server reports spending on the request (server_ms), the
// median over b.N requests, for an op that runs at once (stats) and one
// that runs on an environment's worker (observe), and the reply's size.
// Both builds of a change run it in the same session to compare.
//
//	go test ./server -run '^$' -bench RequestOverhead -benchtime 3000x
func BenchmarkRequestOverhead(b *testing.B) {
	s := server.New(nil, browser, server.OpenFactory{}, server.Config{Env: envConfig()})
	hs := httptest.NewServer(s.Handler())
	defer func() { hs.Close(); _ = s.Close() }()
	ctx := context.Background()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http")+"/v1/ws", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.CloseNow()
	c.SetReadLimit(-1)
	size := 0 // of the last reply
	call := func(req map[string]any) map[string]any {
		data, _ := msgpack.Marshal(req)
		if err := c.Write(ctx, websocket.MessageBinary, data); err != nil {
			b.Fatal(err)
		}
		_, data, err := c.Read(ctx)
		if err != nil {
			b.Fatal(err)
		}
		size = len(data)
		var r map[string]any
		if err := msgpack.Unmarshal(data, &r); err != nil || r["ok"] != true {
			b.Fatalf("%v %v", r, err)
		}
		return r
	}
	env := call(map[string]any{"id": 1, "op": "make", "args": map[string]any{"start_url": pageURL(1)}})["result"].(map[string]any)["env"]
	for _, tc := range []struct {
		name string
		req  map[string]any
	}{
		{"stats", map[string]any{"id": 2, "op": "stats"}},
		{"observe", map[string]any{"id": 3, "op": "observe", "env": env}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			over := make([]float64, 0, b.N)
			for range b.N {
				t0 := time.Now()
				r := call(tc.req)
				rtt := float64(time.Since(t0).Nanoseconds()) / 1e3
				ms, _ := r["server_ms"].(float64)
				over = append(over, rtt-ms*1e3)
			}
			slices.Sort(over)
			b.ReportMetric(over[len(over)/2], "overhead-µs")
			b.ReportMetric(float64(size), "reply-bytes")
		})
	}
}

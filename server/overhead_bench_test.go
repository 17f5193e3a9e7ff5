package server_test

import (
	"slices"
	"testing"
	"time"
)

// The protocol's own cost per request: the round trip on loopback less
// the time the server reports spending on the request (server_ms), the
// median over b.N requests, for an op that runs at once (stats) and one
// that runs on an environment's worker (observe), and the reply's size.
// Both builds of a change run it in the same session to compare.
//
//	go test ./server -run '^$' -bench RequestOverhead -benchtime 3000x
func BenchmarkRequestOverhead(b *testing.B) {
	call := wsCaller(b, benchServer(b).URL)
	env := call(map[string]any{"id": 1, "op": "make", "args": map[string]any{"start_url": pageURL(1)}}).result()["env"]
	for _, tc := range []struct {
		name string
		req  map[string]any
	}{
		{"stats", map[string]any{"id": 2, "op": "stats"}},
		{"observe", map[string]any{"id": 3, "op": "observe", "env": env}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			over := make([]float64, 0, b.N)
			size := 0
			for range b.N {
				t0 := time.Now()
				r := call(tc.req)
				rtt := float64(time.Since(t0).Nanoseconds()) / 1e3
				ms, _ := r.m["server_ms"].(float64)
				over = append(over, rtt-ms*1e3)
				size = r.size
			}
			slices.Sort(over)
			b.ReportMetric(over[len(over)/2], "overhead-µs")
			b.ReportMetric(float64(size), "reply-bytes")
		})
	}
}

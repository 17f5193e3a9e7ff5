package netroute

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"
	"time"
)

// The per-request cost of a route is BenchmarkRouted's ns/op minus
// BenchmarkDirect's: the same small GET on a kept-alive connection, with
// and without the route in between.

func benchSite(b *testing.B) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html><body>a small page</body></html>")
	}))
	b.Cleanup(s.Close)
	return s
}

// benchGet GETs url with c b.N times and reports, besides the mean, the
// median request time (p50-ns), which the load of a shared machine
// disturbs less.
func benchGet(b *testing.B, c *http.Client, url string) {
	b.ReportAllocs()
	var times []time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		resp, err := c.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "p50-ns")
}

func BenchmarkDirect(b *testing.B) {
	s := benchSite(b)
	tr := &http.Transport{Proxy: nil, DisableCompression: true}
	b.Cleanup(tr.CloseIdleConnections)
	benchGet(b, &http.Client{Transport: tr}, s.URL+"/")
}

func BenchmarkRouted(b *testing.B) {
	s := benchSite(b)
	r := New(nil, Options{})
	b.Cleanup(func() { r.Close() })
	proxy, err := url.Parse(newRoute(b, r, tableWith(b, Policy{}, s)).ProxyURL())
	if err != nil {
		b.Fatal(err)
	}
	tr := &http.Transport{Proxy: http.ProxyURL(proxy), DisableCompression: true}
	b.Cleanup(tr.CloseIdleConnections)
	benchGet(b, &http.Client{Transport: tr}, shop+"/")
}

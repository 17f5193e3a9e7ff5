package netroute

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

const shop = "http://shop.webserv.test"

// newRouter returns a router closed when the test ends.
func newRouter(t testing.TB, opts Options) *Router {
	t.Helper()
	r := New(zaptest.NewLogger(t), opts)
	t.Cleanup(func() { r.Close() })
	return r
}

// newRoute returns a route of r bound to table (nil: unbound).
func newRoute(t testing.TB, r *Router, table *Table) *Route {
	t.Helper()
	rt, err := r.NewRoute()
	if err != nil {
		t.Fatal(err)
	}
	if table != nil {
		rt.Bind(table)
	}
	return rt
}

// proxyClient is a browser stand-in: a client that sends everything through
// rt and does not follow redirects.
func proxyClient(t testing.TB, rt *Route) *http.Client {
	t.Helper()
	u, err := url.Parse(rt.ProxyURL())
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{Proxy: http.ProxyURL(u), DisableCompression: true, MaxIdleConnsPerHost: 16}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{
		Transport:     tr,
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// site starts an instance that answers "name host=HOST path=URI".
func site(t testing.TB, name string) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s host=%s path=%s", name, r.Host, r.URL.RequestURI())
	}))
	t.Cleanup(s.Close)
	return s
}

// hostPortOf is the host:port of a test server.
func hostPortOf(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }

// tableWith returns a table with policy p and origin shop at s.
func tableWith(t testing.TB, p Policy, s *httptest.Server) *Table {
	t.Helper()
	tb := NewTable(p)
	if s != nil {
		if err := tb.Set(shop, TCPDialer(hostPortOf(s))); err != nil {
			t.Fatal(err)
		}
	}
	return tb
}

// response is what a test reads of an answer.
type response struct {
	status int
	body   string
	header http.Header
}

// get requests rawURL with c, with headers given as name, value pairs.
func get(t testing.TB, c *http.Client, rawURL string, headers ...string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", rawURL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", rawURL, err)
	}
	return response{status: resp.StatusCode, body: string(b), header: resp.Header}
}

// navigate are the headers of Chromium's document loads.
var navigate = []string{"Sec-Fetch-Mode", "navigate", "Accept", "text/html,application/xhtml+xml"}

// rawConnect sends CONNECT authority to rt on a connection of its own and
// returns the connection, its reader and the proxy's answer.
func rawConnect(t testing.TB, rt *Route, authority string) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	c, err := net.Dial("tcp", rt.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", authority, authority)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("CONNECT %s: %v", authority, err)
	}
	return c, br, resp
}

// rawGet sends a GET for path with Host host over c and reads the answer.
func rawGet(t testing.TB, c net.Conn, br *bufio.Reader, host, path string) response {
	t.Helper()
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, host)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("GET %s over the tunnel: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, body: string(b), header: resp.Header}
}

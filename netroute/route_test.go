package netroute_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/webserv-rl/webserv/netroute"
)

// instance is a site instance: it answers with its name and the Host it
// was asked for.
func instance(t testing.TB, name string) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "http://shop.webserv.test/there", http.StatusFound)
			return
		}
		fmt.Fprintf(w, "%s host=%s path=%s", name, r.Host, r.URL.RequestURI())
	}))
	t.Cleanup(s.Close)
	return s
}

// browserVia is an HTTP client that uses rt as its proxy, as a browser
// context does; it does not follow redirects.
func browserVia(rt *netroute.Route) *http.Client {
	u, _ := url.Parse(rt.ProxyURL())
	return &http.Client{
		Transport:     &http.Transport{Proxy: http.ProxyURL(u)},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       10 * time.Second,
	}
}

func get(t *testing.T, c *http.Client, u string, hdr ...string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func newRoute(t testing.TB, r *netroute.Router, tab *netroute.Table) *netroute.Route {
	t.Helper()
	rt, err := r.NewRoute()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	rt.Bind(tab)
	return rt
}

func addr(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }

// Two environments open the same URL and each reaches its own instance,
// which sees the canonical Host; redirects pass through untouched.
func TestCanonicalOriginReachesOwnInstance(t *testing.T) {
	r := netroute.New(nil, netroute.Options{})
	defer r.Close()
	a, b := instance(t, "A"), instance(t, "B")
	ta, tb := netroute.NewTable(netroute.Policy{}), netroute.NewTable(netroute.Policy{})
	if err := ta.Set("http://shop.webserv.test", netroute.TCPDialer(addr(a))); err != nil {
		t.Fatal(err)
	}
	if err := tb.Set("http://shop.webserv.test", netroute.TCPDialer(addr(b))); err != nil {
		t.Fatal(err)
	}
	ca, cb := browserVia(newRoute(t, r, ta)), browserVia(newRoute(t, r, tb))
	if _, body, _ := get(t, ca, "http://shop.webserv.test/p?q=1"); body != "A host=shop.webserv.test path=/p?q=1" {
		t.Errorf("environment A got %q", body)
	}
	if _, body, _ := get(t, cb, "http://shop.webserv.test/p?q=1"); body != "B host=shop.webserv.test path=/p?q=1" {
		t.Errorf("environment B got %q", body)
	}
	code, _, h := get(t, ca, "http://shop.webserv.test/redirect")
	if code != http.StatusFound || h.Get("Location") != "http://shop.webserv.test/there" {
		t.Errorf("redirect: %d %q", code, h.Get("Location"))
	}
	// Re-pointing the origin (a reset onto a new instance) takes effect at once.
	if err := ta.Set("http://shop.webserv.test", netroute.TCPDialer(addr(b))); err != nil {
		t.Fatal(err)
	}
	if _, body, _ := get(t, ca, "http://shop.webserv.test/"); !strings.HasPrefix(body, "B ") {
		t.Errorf("after re-pointing: %q", body)
	}
	// Rebinding the route to another table too.
	if got := ta.Origins(); len(got) != 1 || got[0] != "http://shop.webserv.test" {
		t.Errorf("origins = %v", got)
	}
	if err := ta.Set("http://metis.lti.cs.cmu.edu:7770", netroute.TCPDialer(addr(a))); err != nil {
		t.Fatal(err)
	}
	if _, body, _ := get(t, ca, "http://metis.lti.cs.cmu.edu:7770/x"); body != "A host=metis.lti.cs.cmu.edu:7770 path=/x" {
		t.Errorf("origin with a port: %q", body)
	}
	// The server's own client reaches the instance by origin, too.
	resp, err := tb.Client().Get("http://shop.webserv.test/own")
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b2) != "B host=shop.webserv.test path=/own" {
		t.Errorf("table client: %q", b2)
	}
}

// A hosted environment reaches its own origins and its allowlist only;
// refusals say why and are recorded, navigations as such.
func TestHostedPolicyRefuses(t *testing.T) {
	other := instance(t, "other")
	allowed := instance(t, "allowed")
	r := netroute.New(nil, netroute.Options{Refuse: []string{"127.0.0.1:8765"}})
	defer r.Close()
	tab := netroute.NewTable(netroute.Policy{Allow: []string{addr(allowed)}})
	_ = tab.Set("http://shop.webserv.test", netroute.TCPDialer(addr(instance(t, "own"))))
	rt := newRoute(t, r, tab)
	c := browserVia(rt)
	sibling := newRoute(t, r, netroute.NewTable(netroute.Policy{}))
	for _, u := range []string{other.URL + "/", "http://127.0.0.1:8765/healthz", sibling.ProxyURL() + "/", "http://example.com/"} {
		code, body, h := get(t, c, u)
		if code != http.StatusForbidden || h.Get("X-WebServ-Refused") == "" || !strings.Contains(body, "refused") {
			t.Errorf("%s: %d %q", u, code, body)
		}
	}
	code, _, h := get(t, c, other.URL+"/", "Upgrade-Insecure-Requests", "1", "Accept", "text/html,*/*")
	if code != http.StatusNoContent || !strings.Contains(h.Get("X-WebServ-Refused"), "only its own sites (http://shop.webserv.test)") {
		t.Errorf("a refused navigation: %d %q", code, h.Get("X-WebServ-Refused"))
	}
	refs := tab.Refused()
	if len(refs) != 5 || refs[0].Navigation || !refs[4].Navigation || refs[4].URL != other.URL+"/" {
		t.Errorf("refusals = %+v", refs)
	}
	if len(tab.Refused()) != 0 {
		t.Error("Refused does not clear the log")
	}
	if _, body, _ := get(t, c, allowed.URL+"/"); !strings.HasPrefix(body, "allowed ") {
		t.Errorf("allowlisted host: %q", body)
	}
	if err := tab.Check(other.URL + "/x"); err == nil || !strings.Contains(err.Error(), "is refused") {
		t.Errorf("Check(other) = %v", err)
	}
	if err := tab.Check("http://shop.webserv.test/cart"); err != nil {
		t.Errorf("Check(own) = %v", err)
	}
	if err := tab.Check("file:///etc/passwd"); err == nil {
		t.Error("Check(file:) passed")
	}
	// An unbound route refuses everything.
	unbound := newRoute(t, r, nil)
	if code, _, _ := get(t, browserVia(unbound), allowed.URL+"/"); code != http.StatusForbidden {
		t.Errorf("unbound route: %d", code)
	}
}

// The open web: loopback refused unless allowed (the start URL's host), the
// router's refused addresses always.
func TestOpenPolicy(t *testing.T) {
	start := instance(t, "start")
	r := netroute.New(nil, netroute.Options{})
	defer r.Close()
	tab := netroute.NewTable(netroute.Policy{Open: true, Allow: []string{addr(start)}})
	c := browserVia(newRoute(t, r, tab))
	if _, body, _ := get(t, c, start.URL+"/"); !strings.HasPrefix(body, "start ") {
		t.Errorf("start host: %q", body)
	}
	other := instance(t, "other")
	for _, u := range []string{other.URL + "/", "http://localhost:" + strings.Split(addr(other), ":")[1] + "/", "http://10.0.0.1/", "http://169.254.169.254/latest/meta-data"} {
		if code, body, _ := get(t, c, u); code != http.StatusForbidden || !strings.Contains(body, "not part of the open web") {
			t.Errorf("%s: %d %q", u, code, body)
		}
	}
	r.AddRefused(addr(start))
	if code, _, _ := get(t, c, start.URL+"/"); code != http.StatusForbidden {
		t.Errorf("a refused address that is also allowed: %d", code)
	}
}

// CONNECT to a canonical origin tunnels to the instance (ws:// goes this
// way); CONNECT to a refused address is answered 403.
func TestConnectTunnels(t *testing.T) {
	r := netroute.New(nil, netroute.Options{})
	defer r.Close()
	tab := netroute.NewTable(netroute.Policy{})
	_ = tab.Set("http://shop.webserv.test", netroute.TCPDialer(addr(instance(t, "own"))))
	rt := newRoute(t, r, tab)
	conn := func(target string) (*bufio.Reader, net.Conn, string) {
		c, err := net.Dial("tcp", rt.Addr())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
		br := bufio.NewReader(c)
		status, _ := br.ReadString('\n')
		for {
			l, err := br.ReadString('\n')
			if err != nil || l == "\r\n" {
				break
			}
		}
		return br, c, status
	}
	br, c, status := conn("shop.webserv.test:80")
	defer c.Close()
	if !strings.Contains(status, "200") {
		t.Fatalf("CONNECT own origin: %q", status)
	}
	fmt.Fprint(c, "GET /tunnel HTTP/1.1\r\nHost: shop.webserv.test\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "own host=shop.webserv.test path=/tunnel" {
		t.Errorf("through the tunnel: %q", b)
	}
	_, c2, status := conn(rt.Addr())
	defer c2.Close()
	if !strings.Contains(status, "403") {
		t.Errorf("CONNECT to a route: %q", status)
	}
}

// Server-sent events stream through the route: the first event arrives
// while the handler is still running.
func TestStreamsFlush(t *testing.T) {
	release := make(chan struct{})
	sse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		<-release
	}))
	defer sse.Close()
	defer close(release)
	r := netroute.New(nil, netroute.Options{})
	defer r.Close()
	tab := netroute.NewTable(netroute.Policy{})
	_ = tab.Set("http://events.webserv.test", netroute.TCPDialer(addr(sse)))
	resp, err := browserVia(newRoute(t, r, tab)).Get("http://events.webserv.test/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "data: first\n" {
		t.Errorf("first event: %q %v", line, err)
	}
}

// Politeness on the open web: a request cap per episode, and at most N
// requests in flight per host.
func TestPoliteness(t *testing.T) {
	var inFlight, most, seen atomic.Int32
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		seen.Add(1)
		time.Sleep(30 * time.Millisecond)
		inFlight.Add(-1)
	}))
	defer site.Close()
	r := netroute.New(nil, netroute.Options{})
	defer r.Close()
	tab := netroute.NewTable(netroute.Policy{Open: true, Allow: []string{addr(site)}, ConcurrencyPerHost: 2, MaxRequests: 6})
	c := browserVia(newRoute(t, r, tab))
	var wg sync.WaitGroup
	codes := make([]int, 8)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.Get(site.URL + "/")
			if err == nil {
				codes[i] = resp.StatusCode
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	if most.Load() > 2 {
		t.Errorf("%d requests in flight at once, the policy allows 2", most.Load())
	}
	ok := 0
	for _, c := range codes {
		if c == http.StatusOK {
			ok++
		}
	}
	if ok > 6 || seen.Load() > 6 {
		t.Errorf("%d requests got through (%d reached the site), the cap is 6: %v", ok, seen.Load(), codes)
	}
	tab.NewEpisode()
	if code, _, _ := get(t, c, site.URL+"/"); code != http.StatusOK {
		t.Errorf("a new episode starts a new count: %d", code)
	}
}

// Per-request cost: the same small GET directly and through a route.
func BenchmarkDirect(b *testing.B) {
	s := instance(b, "A")
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	benchGet(b, c, s.URL+"/")
}

func BenchmarkRouted(b *testing.B) {
	s := instance(b, "A")
	r := netroute.New(nil, netroute.Options{})
	defer r.Close()
	tab := netroute.NewTable(netroute.Policy{})
	_ = tab.Set("http://shop.webserv.test", netroute.TCPDialer(addr(s)))
	u, _ := url.Parse(newRoute(b, r, tab).ProxyURL())
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u), MaxIdleConnsPerHost: 4}}
	benchGet(b, c, "http://shop.webserv.test/")
}

func benchGet(b *testing.B, c *http.Client, u string) {
	b.ReportAllocs()
	for b.Loop() {
		resp, err := c.Get(u)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// With Robots set, what the host's robots.txt disallows is refused, for
// requests and for navigations checked before they start.
func TestRobots(t *testing.T) {
	var fetched atomic.Int32
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			fetched.Add(1)
			fmt.Fprint(w, "User-agent: *\nDisallow: /private\n")
			return
		}
		fmt.Fprint(w, "page "+r.URL.Path)
	}))
	defer site.Close()
	r := netroute.New(nil, netroute.Options{})
	defer r.Close()
	tab := netroute.NewTable(netroute.Policy{Open: true, Allow: []string{addr(site)}, Robots: true, UserAgent: "WebServ-test"})
	c := browserVia(newRoute(t, r, tab))
	if code, body, _ := get(t, c, site.URL+"/public"); code != http.StatusOK || body != "page /public" {
		t.Errorf("allowed path: %d %q", code, body)
	}
	if code, body, _ := get(t, c, site.URL+"/private/x"); code != http.StatusForbidden || !strings.Contains(body, "robots.txt disallows") {
		t.Errorf("disallowed path: %d %q", code, body)
	}
	if err := tab.Check(site.URL + "/private"); err == nil || !strings.Contains(err.Error(), "robots.txt") {
		t.Errorf("Check(disallowed) = %v", err)
	}
	if n := fetched.Load(); n != 1 {
		t.Errorf("robots.txt fetched %d times, want once", n)
	}
}

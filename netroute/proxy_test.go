package netroute

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestCanonicalOriginReachesItsOwnInstance(t *testing.T) {
	a, b := site(t, "A"), site(t, "B")
	r := newRouter(t, Options{})
	ta, tb := tableWith(t, Policy{}, a), tableWith(t, Policy{}, b)
	ca, cb := proxyClient(t, newRoute(t, r, ta)), proxyClient(t, newRoute(t, r, tb))

	// Two environments, one URL, two instances.
	if got := get(t, ca, shop+"/p?q=1"); got.status != 200 || got.body != "A host=shop.webserv.test path=/p?q=1" {
		t.Errorf("environment A got %d %q", got.status, got.body)
	}
	if got := get(t, cb, shop+"/p?q=1"); got.status != 200 || got.body != "B host=shop.webserv.test path=/p?q=1" {
		t.Errorf("environment B got %d %q", got.status, got.body)
	}
	if ta.Requests() != 1 || tb.Requests() != 1 {
		t.Errorf("Requests() = %d, %d; want 1, 1", ta.Requests(), tb.Requests())
	}
}

func TestOriginWithPortReachesItsInstance(t *testing.T) {
	s := site(t, "metis")
	tb := NewTable(Policy{})
	if err := tb.Set("http://metis.lti.cs.cmu.edu:7770", TCPDialer(hostPortOf(s))); err != nil {
		t.Fatal(err)
	}
	c := proxyClient(t, newRoute(t, newRouter(t, Options{}), tb))
	if got := get(t, c, "http://metis.lti.cs.cmu.edu:7770/admin"); got.body != "metis host=metis.lti.cs.cmu.edu:7770 path=/admin" {
		t.Errorf("got %d %q", got.status, got.body)
	}
	if got := get(t, c, "http://metis.lti.cs.cmu.edu/admin"); got.status != http.StatusForbidden {
		t.Errorf("the same host on port 80 is not the origin, yet got %d %q", got.status, got.body)
	}
}

func TestHeadersReachTheInstanceAsSent(t *testing.T) {
	seen := make(chan http.Header, 1)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Clone()
		h.Set("Host", r.Host)
		seen <- h
	}))
	defer s.Close()
	c := proxyClient(t, newRoute(t, newRouter(t, Options{}), tableWith(t, Policy{UserAgent: "polite-bot"}, s)))
	get(t, c, shop+"/", "User-Agent", "Chromium/140", "Cookie", "sid=1", "Accept-Language", "fr", "Proxy-Connection", "keep-alive")
	h := <-seen
	want := map[string]string{"Host": "shop.webserv.test", "User-Agent": "Chromium/140", "Cookie": "sid=1", "Accept-Language": "fr"}
	for k, v := range want {
		if h.Get(k) != v {
			t.Errorf("instance saw %s: %q, want %q", k, h.Get(k), v)
		}
	}
	for _, k := range []string{"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "Forwarded", "Via", "Proxy-Connection"} {
		if v, ok := h[k]; ok {
			t.Errorf("instance saw %s: %q; the proxy must not add or pass it", k, v)
		}
	}
	if h.Get("Accept-Encoding") != "" {
		t.Errorf("instance saw Accept-Encoding %q the browser did not send", h.Get("Accept-Encoding"))
	}
}

func TestRedirectPassesThroughUntouched(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://shop.webserv.test/x?y=1", http.StatusFound)
	}))
	defer s.Close()
	c := proxyClient(t, newRoute(t, newRouter(t, Options{}), tableWith(t, Policy{}, s)))
	got := get(t, c, shop+"/login")
	if got.status != http.StatusFound || got.header.Get("Location") != "http://shop.webserv.test/x?y=1" {
		t.Errorf("got %d Location %q; want 302 http://shop.webserv.test/x?y=1", got.status, got.header.Get("Location"))
	}
}

func TestServerSentEventsStream(t *testing.T) {
	release := make(chan struct{})
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
		io.WriteString(w, "data: second\n\n")
	}))
	defer s.Close()
	defer close(release)
	c := proxyClient(t, newRoute(t, newRouter(t, Options{}), tableWith(t, Policy{}, s)))
	resp, err := c.Get(shop + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(resp.Body).ReadString('\n')
		line <- l
	}()
	select {
	case l := <-line:
		if l != "data: first\n" {
			t.Errorf("first event line = %q", l)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first event did not arrive while the handler was still running: the proxy buffers streams")
	}
}

func TestWebSocketUpgradeOverPlainHTTP(t *testing.T) {
	rt := newRoute(t, newRouter(t, Options{}), tableWith(t, Policy{}, echoSite(t)))
	c, br := upgrade(t, rt)
	io.WriteString(c, "ping\n")
	if l, err := br.ReadString('\n'); err != nil || l != "ping\n" {
		t.Errorf("echo = %q, %v", l, err)
	}
}

// echoSite switches to an echo protocol on "Upgrade: echo", as a
// WebSocket server switches to WebSocket.
func echoSite(t *testing.T) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "echo" {
			http.Error(w, "want Upgrade: echo", http.StatusBadRequest)
			return
		}
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		io.Copy(c, brw)
	}))
	t.Cleanup(s.Close)
	return s
}

// upgrade switches a new connection through rt to the echo protocol of
// the shop's instance.
func upgrade(t *testing.T, rt *Route) (net.Conn, *bufio.Reader) {
	c, err := net.Dial("tcp", rt.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "GET %s/ws HTTP/1.1\r\nHost: shop.webserv.test\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n", shop)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status %d, want 101", resp.StatusCode)
	}
	return c, br
}

func TestUnreachableInstanceAnswers502(t *testing.T) {
	s := site(t, "gone")
	addr := hostPortOf(s)
	s.Close()
	tb := NewTable(Policy{})
	if err := tb.Set(shop, TCPDialer(addr)); err != nil {
		t.Fatal(err)
	}
	c := proxyClient(t, newRoute(t, newRouter(t, Options{}), tb))
	got := get(t, c, shop+"/")
	if got.status != http.StatusBadGateway || !strings.Contains(got.body, "http://shop.webserv.test could not be reached") || !strings.Contains(got.body, addr) {
		t.Errorf("got %d %q; want 502 naming the origin and the instance's address", got.status, got.body)
	}
	if refs := tb.Refused(); len(refs) != 0 {
		t.Errorf("an unreachable instance is not a refusal, yet Refused() = %v", refs)
	}
}

func TestPostBodyReachesTheInstance(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s", r.Method, b)
	}))
	defer s.Close()
	c := proxyClient(t, newRoute(t, newRouter(t, Options{}), tableWith(t, Policy{}, s)))
	resp, err := c.Post(shop+"/cart", "application/x-www-form-urlencoded", strings.NewReader("sku=42&qty=2"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); string(b) != "POST sku=42&qty=2" {
		t.Errorf("got %q", b)
	}
}

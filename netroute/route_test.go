package netroute

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestBindRepointsTheRoute(t *testing.T) {
	a, b := site(t, "A"), site(t, "B")
	ta, tb := tableWith(t, Policy{}, a), tableWith(t, Policy{}, b)
	rt := newRoute(t, newRouter(t, Options{}), ta)
	c := proxyClient(t, rt)
	if got := get(t, c, shop+"/"); !strings.HasPrefix(got.body, "A ") {
		t.Fatalf("bound to A, got %q", got.body)
	}
	rt.Bind(tb)
	if rt.Table() != tb {
		t.Error("Table() is not the table just bound")
	}
	// The browser's kept connection to the proxy is reused: routing must
	// follow the binding, not the connection.
	if got := get(t, c, shop+"/"); !strings.HasPrefix(got.body, "B ") {
		t.Errorf("re-bound to B, got %q", got.body)
	}
	rt.Bind(nil)
	got := get(t, c, shop+"/")
	if got.status != http.StatusForbidden || got.header.Get("X-WebServ-Refused") != "this browser context is not bound to an environment" {
		t.Errorf("unbound route answered %d %q", got.status, got.header.Get("X-WebServ-Refused"))
	}
}

func TestNewRouteRefusesUntilBound(t *testing.T) {
	c := proxyClient(t, newRoute(t, newRouter(t, Options{}), nil))
	got := get(t, c, shop+"/")
	if got.status != http.StatusForbidden || !strings.Contains(got.body, "not bound to an environment") {
		t.Errorf("got %d %q", got.status, got.body)
	}
}

func TestRebindingEndsTunnelsOfThePreviousBinding(t *testing.T) {
	s := site(t, "A")
	rt := newRoute(t, newRouter(t, Options{}), tableWith(t, Policy{}, s))
	c, br, resp := rawConnect(t, rt, "shop.webserv.test:80")
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT answered %d", resp.StatusCode)
	}
	if got := rawGet(t, c, br, "shop.webserv.test", "/"); !strings.HasPrefix(got.body, "A ") {
		t.Fatalf("tunnel reached %q", got.body)
	}
	rt.Bind(tableWith(t, Policy{}, site(t, "B")))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("the tunnel to the previous environment's instance stayed open (read: %v)", err)
	}
}

func TestRebindingEndsWebSocketsOfThePreviousBinding(t *testing.T) {
	rt := newRoute(t, newRouter(t, Options{}), tableWith(t, Policy{}, echoSite(t)))
	c, br := upgrade(t, rt)
	io.WriteString(c, "ping\n")
	if l, err := br.ReadString('\n'); err != nil || l != "ping\n" {
		t.Fatalf("echo = %q, %v", l, err)
	}
	rt.Bind(nil)
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("the WebSocket to the previous environment's instance stayed open (read: %v)", err)
	}
}

func TestRouteAddrAndClose(t *testing.T) {
	r := newRouter(t, Options{})
	rt := newRoute(t, r, nil)
	if !strings.HasPrefix(rt.Addr(), "127.0.0.1:") || rt.ProxyURL() != "http://"+rt.Addr() {
		t.Errorf("Addr %q, ProxyURL %q", rt.Addr(), rt.ProxyURL())
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	if c, err := net.DialTimeout("tcp", rt.Addr(), time.Second); err == nil {
		c.Close()
		t.Error("a closed route still accepts connections")
	}
}

func TestTrafficLogsEveryRequestOfTheContext(t *testing.T) {
	rt := newRoute(t, newRouter(t, Options{}), tableWith(t, Policy{}, site(t, "A")))
	c := proxyClient(t, rt)
	from := time.Now()
	get(t, c, shop+"/a.png", "Accept", "image/avif,image/webp,*/*")
	rt.Bind(nil)
	get(t, c, shop+"/refused") // refused requests end too
	reqs := rt.Traffic().Since(from)
	if len(reqs) != 2 {
		t.Fatalf("logged %+v", reqs)
	}
	r := reqs[0]
	if r.Method != "GET" || r.URL != shop+"/a.png" || r.Dest != "image" || r.Head.IsZero() || r.End.IsZero() || r.End.Before(r.Head) {
		t.Errorf("first request: %+v", r)
	}
	if reqs[1].End.IsZero() {
		t.Errorf("a refused request is still in flight: %+v", reqs[1])
	}
}

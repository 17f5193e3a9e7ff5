package netroute

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

func TestSetRepointsAnOrigin(t *testing.T) {
	a, b := site(t, "A"), site(t, "B")
	tb := tableWith(t, Policy{}, a)
	c := proxyClient(t, newRoute(t, newRouter(t, Options{}), tb))
	if got := get(t, c, shop+"/"); !strings.HasPrefix(got.body, "A ") {
		t.Fatalf("got %q", got.body)
	}
	// The route keeps a connection to A open; it must not carry the next
	// request.
	if err := tb.Set(shop, TCPDialer(hostPortOf(b))); err != nil {
		t.Fatal(err)
	}
	if got := get(t, c, shop+"/"); !strings.HasPrefix(got.body, "B ") {
		t.Errorf("after Set to B, got %q", got.body)
	}
}

func TestSetRepointsAnOriginWhileARequestIsInFlight(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(entered)
			<-release
		}
		io.WriteString(w, "A")
	}))
	defer a.Close()
	b := site(t, "B")
	tb := tableWith(t, Policy{}, a)
	c := proxyClient(t, newRoute(t, newRouter(t, Options{}), tb))
	done := make(chan response)
	go func() { done <- get(t, c, shop+"/slow") }()
	<-entered
	if err := tb.Set(shop, TCPDialer(hostPortOf(b))); err != nil {
		t.Fatal(err)
	}
	close(release)
	if got := <-done; got.body != "A" {
		t.Errorf("the request in flight got %q; want A's answer", got.body)
	}
	// The connection that request used goes back to an idle pool; it must
	// not be the one the next request takes.
	for i := 0; i < 3; i++ {
		if got := get(t, c, shop+"/"); !strings.HasPrefix(got.body, "B ") {
			t.Errorf("request %d after Set to B got %q", i, got.body)
		}
	}
}

func TestRemoveOrigin(t *testing.T) {
	tb := tableWith(t, Policy{}, site(t, "A"))
	c := proxyClient(t, newRoute(t, newRouter(t, Options{}), tb))
	tb.Remove(shop + "/")
	tb.Remove("http://not-there.test")
	got := get(t, c, shop+"/")
	if got.status != http.StatusForbidden || !strings.Contains(got.body, "its own sites (it has none)") {
		t.Errorf("after Remove: %d %q", got.status, got.body)
	}
	if len(tb.Origins()) != 0 {
		t.Errorf("Origins() = %v", tb.Origins())
	}
}

func TestOriginsAreNormalizedAndBadOnesRejected(t *testing.T) {
	tb := NewTable(Policy{})
	d := TCPDialer("127.0.0.1:1")
	for _, o := range []string{"http://Shop.WebServ.Test:80/", "http://metis.lti.cs.cmu.edu:7770", "http://[::1]:8080", "HTTP://cms.webserv.test"} {
		if err := tb.Set(o, d); err != nil {
			t.Errorf("Set(%q): %v", o, err)
		}
	}
	want := []string{"http://[::1]:8080", "http://cms.webserv.test", "http://metis.lti.cs.cmu.edu:7770", "http://shop.webserv.test"}
	if got := tb.Origins(); !slices.Equal(got, want) {
		t.Errorf("Origins() = %v, want %v", got, want)
	}
	bad := map[string]string{
		"https://shop.webserv.test":     "only http origins",
		"http://shop.webserv.test/shop": "more than a scheme, host and port",
		"http://":                       "has no host",
		"shop.webserv.test":             "has no scheme",
		"http://a b":                    "give it as http://host",
	}
	for o, want := range bad {
		if err := tb.Set(o, d); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Set(%q) = %v; want an error saying %q", o, err, want)
		}
	}
	if err := tb.Set(shop, nil); err == nil || !strings.Contains(err.Error(), "no Dialer") {
		t.Errorf("Set with a nil Dialer = %v", err)
	}
}

func TestClientReachesTheInstanceAtTheCanonicalURL(t *testing.T) {
	s := site(t, "A")
	other := site(t, "other")
	c := tableWith(t, Policy{Open: true}, s).Client()
	resp, err := c.Get(shop + "/login?next=/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "A host=shop.webserv.test path=/login?next=/" {
		t.Errorf("got %q", b)
	}
	// No policy, but no other host either, even under an open policy.
	if _, err := c.Get(other.URL + "/"); err == nil || !strings.Contains(err.Error(), "not one of this environment's sites (http://shop.webserv.test)") {
		t.Errorf("Client to another host: %v", err)
	}
}

func TestClientFollowsRedirectsWithinTheOrigin(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/login" {
			http.Redirect(w, r, "http://shop.webserv.test/account", http.StatusSeeOther)
			return
		}
		io.WriteString(w, "account of "+r.Host)
	}))
	defer s.Close()
	resp, err := tableWith(t, Policy{}, s).Client().Post(shop+"/login", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); string(b) != "account of shop.webserv.test" {
		t.Errorf("got %q", b)
	}
}

func TestPolicyIsACopy(t *testing.T) {
	allow := []string{"a.test"}
	tb := NewTable(Policy{Open: true, Allow: allow, MaxRequests: 7})
	allow[0] = "b.test"
	p := tb.Policy()
	if !p.Open || p.MaxRequests != 7 || !slices.Equal(p.Allow, []string{"a.test"}) {
		t.Fatalf("Policy() = %+v", p)
	}
	p.Allow[0] = "c.test"
	if tb.Policy().Allow[0] != "a.test" {
		t.Error("changing what Policy() returned changed the table's policy")
	}
}

func TestCloseDropsKeptConnectionsAndTheTableStaysUsable(t *testing.T) {
	var conns atomic.Int32
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	s.Start()
	defer s.Close()
	tb := tableWith(t, Policy{}, s)
	c := proxyClient(t, newRoute(t, newRouter(t, Options{}), tb))
	get(t, c, shop+"/")
	get(t, c, shop+"/")
	if conns.Load() != 1 {
		t.Fatalf("two requests opened %d connections to the instance; want 1 kept alive", conns.Load())
	}
	tb.Close()
	if got := get(t, c, shop+"/"); got.body != "ok" || conns.Load() != 2 {
		t.Errorf("after Close: %q over %d connections; want ok over a new one", got.body, conns.Load())
	}
}

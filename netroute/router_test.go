package netroute

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestRouterRefusesItsAddressesWhateverThePolicyAllows(t *testing.T) {
	server := site(t, "webserv-server")
	devtools := site(t, "devtools")
	r := newRouter(t, Options{Refuse: []string{hostPortOf(server)}})
	r.AddRefused(hostPortOf(devtools)) // learnt later
	other := newRoute(t, r, nil)
	// Everything on 127.0.0.1 is allowed, and the web is open.
	tb := NewTable(Policy{Open: true, Allow: []string{"127.0.0.1", "localhost"}})
	c := proxyClient(t, newRoute(t, r, tb))
	for _, target := range []string{
		server.URL + "/",
		devtools.URL + "/json/version",
		other.ProxyURL() + "/",
		"http://localhost:" + strings.Split(hostPortOf(server), ":")[1] + "/",
	} {
		got := get(t, c, target)
		if got.status != http.StatusForbidden || !strings.Contains(got.body, "WebServ server or its browser") {
			t.Errorf("%s: got %d %q; want 403 naming the server or browser", target, got.status, got.body)
		}
	}
	// A listed address of the machine covers the port on every address.
	_, port, _ := net.SplitHostPort(hostPortOf(server))
	if !r.refuses("127.0.0.2", port) || !r.refuses("::1", port) || !r.refuses("0.0.0.0", port) {
		t.Error("the server's port is not refused on every loopback address")
	}
	if r.refuses("93.184.216.34", port) {
		t.Error("a refused local port is refused on a remote address too")
	}
}

func TestRouterRefusesListenAddressesOfAllInterfaces(t *testing.T) {
	r := New(nil, Options{Refuse: []string{":8080", "[::]:9222", "example.test:80", "10.9.9.9"}})
	defer r.Close()
	cases := []struct {
		host, port string
		want       bool
	}{
		{"127.0.0.1", "8080", true},
		{"localhost", "8080", true},
		{"::1", "9222", true},
		{"127.0.0.1", "8081", false},
		{"example.test", "80", true},
		{"example.test", "81", false},
		{"10.9.9.9", "1", true},
	}
	for _, c := range cases {
		if got := r.refuses(c.host, c.port); got != c.want {
			t.Errorf("refuses(%s, %s) = %v, want %v", c.host, c.port, got, c.want)
		}
	}
}

func TestRouterCloseClosesEveryRoute(t *testing.T) {
	r := New(nil, Options{})
	a, err := r.NewRoute()
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.NewRoute()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	for _, rt := range []*Route{a, b} {
		if c, err := net.DialTimeout("tcp", rt.Addr(), time.Second); err == nil {
			c.Close()
			t.Errorf("route %s still listens after Router.Close", rt.Addr())
		}
	}
	if _, err := r.NewRoute(); err == nil || !strings.Contains(err.Error(), "router is closed") {
		t.Errorf("NewRoute on a closed router: %v", err)
	}
}

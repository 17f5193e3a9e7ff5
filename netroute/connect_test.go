package netroute

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestConnectToAnOriginTunnelsToItsInstance(t *testing.T) {
	a, b := site(t, "A"), site(t, "B")
	r := newRouter(t, Options{})
	ta := tableWith(t, Policy{}, a)
	newRoute(t, r, tableWith(t, Policy{}, b)) // another environment, same origin
	c, br, resp := rawConnect(t, newRoute(t, r, ta), "shop.webserv.test:80")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT answered %d", resp.StatusCode)
	}
	for i := 0; i < 2; i++ { // the tunnel carries several requests
		if got := rawGet(t, c, br, "shop.webserv.test", "/ws"); got.status != 200 || got.body != "A host=shop.webserv.test path=/ws" {
			t.Errorf("request %d over the tunnel got %d %q", i, got.status, got.body)
		}
	}
	if ta.Requests() != 1 {
		t.Errorf("Requests() = %d; a tunnel counts once", ta.Requests())
	}
}

func TestConnectRefusals(t *testing.T) {
	other, server := site(t, "other"), site(t, "webserv-server")
	r := newRouter(t, Options{Refuse: []string{hostPortOf(server)}})
	hosted := tableWith(t, Policy{}, site(t, "own"))
	open := NewTable(Policy{Open: true, Allow: []string{"127.0.0.1"}})
	cases := []struct {
		table     *Table
		authority string
		reason    string
	}{
		{hosted, hostPortOf(other), "reaches only its own sites"},
		{hosted, "shop.webserv.test:443", "reaches only its own sites"},
		{open, hostPortOf(server), "WebServ server"},
		{open, "localhost:9222", "loopback addresses"},
		{NewTable(Policy{Open: true}), hostPortOf(other), "loopback addresses"},
	}
	for _, c := range cases {
		_, _, resp := rawConnect(t, newRoute(t, r, c.table), c.authority)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(resp.Header.Get("X-WebServ-Refused"), c.reason) || !strings.Contains(string(body), c.reason) {
			t.Errorf("CONNECT %s: got %d %q; want 403 with %q", c.authority, resp.StatusCode, body, c.reason)
		}
	}
	refs := hosted.Refused()
	if len(refs) != 2 || refs[0].Method != http.MethodConnect || refs[0].URL != hostPortOf(other) || refs[0].Navigation {
		t.Errorf("hosted Refused() = %+v", refs)
	}
	_, _, resp := rawConnect(t, newRoute(t, r, nil), "shop.webserv.test:80")
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("CONNECT through an unbound route: %d", resp.StatusCode)
	}
}

func TestConnectToAnAllowedHostTunnels(t *testing.T) {
	s := site(t, "allowed")
	tb := NewTable(Policy{Open: true, Allow: []string{hostPortOf(s)}})
	c, br, resp := rawConnect(t, newRoute(t, newRouter(t, Options{}), tb), hostPortOf(s))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT answered %d", resp.StatusCode)
	}
	if got := rawGet(t, c, br, hostPortOf(s), "/x"); got.body != "allowed host="+hostPortOf(s)+" path=/x" {
		t.Errorf("over the tunnel: %d %q", got.status, got.body)
	}
}

func TestConnectToADeadInstanceAnswers502(t *testing.T) {
	s := site(t, "gone")
	tb := tableWith(t, Policy{}, s)
	s.Close()
	_, _, resp := rawConnect(t, newRoute(t, newRouter(t, Options{}), tb), "shop.webserv.test:80")
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), "http://shop.webserv.test could not be reached") {
		t.Errorf("got %d %q", resp.StatusCode, body)
	}
}

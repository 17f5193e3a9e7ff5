package netroute

import (
	"net/http"
	"strings"
	"testing"
)

// An instance that stops answering: the browser's request gets the
// route's 502, and the table remembers the failure once, for the server's
// look at the instance's health; the server's own client's failures count
// too.
func TestTableRemembersUnreachableInstance(t *testing.T) {
	t.Parallel()
	r := newRouter(t, Options{})
	s := site(t, "shop")
	tb := tableWith(t, Policy{}, s)
	rt := newRoute(t, r, tb)
	c := proxyClient(t, rt)
	if got := get(t, c, shop+"/"); got.status != http.StatusOK || tb.TakeUnreachable() != "" {
		t.Fatalf("live instance: %d %q, unreachable %q", got.status, got.body, tb.TakeUnreachable())
	}
	s.CloseClientConnections()
	s.Close()
	if got := get(t, c, shop+"/"); got.status != http.StatusBadGateway {
		t.Fatalf("dead instance answered %d %q", got.status, got.body)
	}
	if u := tb.TakeUnreachable(); !strings.Contains(u, shop) || !strings.Contains(u, "connection refused") {
		t.Errorf("unreachable = %q, want the origin and the dial's error", u)
	}
	if u := tb.TakeUnreachable(); u != "" {
		t.Errorf("taken twice: %q", u)
	}
	if _, err := tb.Client().Get(shop + "/"); err == nil || tb.TakeUnreachable() == "" {
		t.Errorf("the server's client: err %v, and no failure remembered", err)
	}
}

// A route whose listener fails says so, and so does the table bound to
// it; a closed route too; a table whose route was bound elsewhere has no
// route to blame.
func TestRouteReportsItsDeath(t *testing.T) {
	t.Parallel()
	r := newRouter(t, Options{})
	tb := tableWith(t, Policy{}, site(t, "shop"))
	rt := newRoute(t, r, tb)
	if err := tb.RouteErr(); err != nil || tb.Route() != rt {
		t.Fatalf("live route: %v, route %p want %p", err, tb.Route(), rt)
	}
	rt.ln.Close() // the listener fails under the route
	<-rt.stopped
	if err := tb.RouteErr(); err == nil || !strings.Contains(err.Error(), "stopped serving") || !strings.Contains(err.Error(), rt.Addr()) {
		t.Errorf("route with a failed listener: %v", err)
	}

	rt2 := newRoute(t, r, tb)
	if err := tb.RouteErr(); err != nil {
		t.Errorf("the table's new route: %v", err)
	}
	rt2.Close()
	if err := tb.RouteErr(); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("closed route: %v", err)
	}
	rt3 := newRoute(t, r, tb)
	rt3.Bind(NewTable(Policy{}))
	if err := tb.RouteErr(); err != nil {
		t.Errorf("a table whose route went to another: %v", err)
	}
}

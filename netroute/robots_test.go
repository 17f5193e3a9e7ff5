package netroute

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestRobotsTxtIsRespectedWhenThePolicySaysSo(t *testing.T) {
	var fetched atomic.Int32
	var ua atomic.Value
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			fetched.Add(1)
			ua.Store(r.UserAgent())
			fmt.Fprint(w, "User-agent: *\nDisallow: /private\n")
			return
		}
		fmt.Fprint(w, "page "+r.URL.Path)
	}))
	defer live.Close()
	tb := tableWith(t, Policy{Open: true, Allow: []string{live.URL}, Robots: true, UserAgent: "WebServ-test"}, site(t, "own"))
	c := proxyClient(t, newRoute(t, newRouter(t, Options{}), tb))

	if got := get(t, c, live.URL+"/public"); got.status != 200 || got.body != "page /public" {
		t.Errorf("an allowed path: %d %q", got.status, got.body)
	}
	got := get(t, c, live.URL+"/private/x", navigate...)
	if got.status != http.StatusNoContent || !strings.Contains(got.header.Get("X-WebServ-Refused"), "robots.txt disallows /private/x") {
		t.Errorf("a disallowed navigation: %d %q", got.status, got.header.Get("X-WebServ-Refused"))
	}
	if err := tb.Check(live.URL + "/private"); err == nil || !strings.Contains(err.Error(), "robots.txt disallows") {
		t.Errorf("Check(disallowed) = %v", err)
	}
	if err := tb.Check(live.URL + "/public"); err != nil {
		t.Errorf("Check(allowed) = %v", err)
	}
	// The environment's own site has no robots.txt to obey.
	if got := get(t, c, shop+"/private"); got.status != 200 {
		t.Errorf("the own site's /private: %d", got.status)
	}
	if n := fetched.Load(); n != 1 || ua.Load() != "WebServ-test" {
		t.Errorf("robots.txt fetched %d times as %q; want once, as the policy's User-Agent", n, ua.Load())
	}
	if refs := tb.Refused(); len(refs) != 1 || !refs[0].Navigation {
		t.Errorf("Refused() = %+v", refs)
	}
}

func TestRobotsTxtServerErrorDisallowsAndMissingAllows(t *testing.T) {
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "page")
	}))
	defer failing.Close()
	missing := site(t, "missing") // answers 200 with its name: no robots rules
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	tb := NewTable(Policy{Open: true, Allow: []string{failing.URL, missing.URL, notFound.URL}, Robots: true})
	newRoute(t, newRouter(t, Options{}), tb)
	if err := tb.Check(failing.URL + "/a"); err == nil {
		t.Error("a host whose robots.txt fails with 503 was allowed")
	}
	if err := tb.Check(notFound.URL + "/a"); err != nil {
		t.Errorf("a host without robots.txt (404): %v", err)
	}
	if err := tb.Check(missing.URL + "/a"); err != nil {
		t.Errorf("a robots.txt without rules: %v", err)
	}
}

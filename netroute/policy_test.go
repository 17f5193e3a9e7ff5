package netroute

import (
	"context"
	"encoding/binary"
	"net"
	"net/http"
	"strings"
	"testing"
)

func TestHostedPolicyReachesOnlyItsSitesAndAllowlist(t *testing.T) {
	own, other, allowed := site(t, "own"), site(t, "other-instance"), site(t, "allowed")
	server := site(t, "webserv-server")
	r := newRouter(t, Options{Refuse: []string{hostPortOf(server)}})
	otherRoute := newRoute(t, r, nil)
	tb := tableWith(t, Policy{Allow: []string{hostPortOf(allowed)}}, own)
	c := proxyClient(t, newRoute(t, r, tb))

	// A subresource is answered 403 with the reason; a navigation 204, so
	// the page stays.
	got := get(t, c, other.URL+"/secret")
	want := "this environment reaches only its own sites (http://shop.webserv.test) and its allowlist"
	if got.status != http.StatusForbidden || got.header.Get("X-WebServ-Refused") != want || !strings.HasSuffix(strings.TrimSpace(got.body), ": "+want) {
		t.Errorf("another instance's address: got %d %q %q", got.status, got.header.Get("X-WebServ-Refused"), got.body)
	}
	got = get(t, c, other.URL+"/", navigate...)
	if got.status != http.StatusNoContent || got.header.Get("X-WebServ-Refused") != want {
		t.Errorf("navigation to another instance: got %d %q", got.status, got.header.Get("X-WebServ-Refused"))
	}
	got = get(t, c, server.URL+"/", "Upgrade-Insecure-Requests", "1", "Accept", "text/html")
	if got.status != http.StatusNoContent || !strings.Contains(got.header.Get("X-WebServ-Refused"), "WebServ server") {
		t.Errorf("navigation to the server: got %d %q", got.status, got.header.Get("X-WebServ-Refused"))
	}
	if got = get(t, c, otherRoute.ProxyURL()+"/"); got.status != http.StatusForbidden {
		t.Errorf("another route: got %d", got.status)
	}
	if got = get(t, c, allowed.URL+"/ok"); got.status != 200 || got.body != "allowed host="+hostPortOf(allowed)+" path=/ok" {
		t.Errorf("allowed host:port: got %d %q", got.status, got.body)
	}

	refs := tb.Refused()
	if len(refs) != 4 {
		t.Fatalf("Refused() = %+v; want 4 refusals", refs)
	}
	wantRefs := []struct {
		url string
		nav bool
	}{{other.URL + "/secret", false}, {other.URL + "/", true}, {server.URL + "/", true}, {otherRoute.ProxyURL() + "/", false}}
	for i, w := range wantRefs {
		if refs[i].URL != w.url || refs[i].Navigation != w.nav || refs[i].Method != "GET" || refs[i].Reason == "" || refs[i].Time.IsZero() {
			t.Errorf("refusal %d = %+v; want URL %s navigation %v", i, refs[i], w.url, w.nav)
		}
	}
	if again := tb.Refused(); len(again) != 0 {
		t.Errorf("Refused() did not clear: %v", again)
	}
	if tb.Requests() != 1 {
		t.Errorf("Requests() = %d; want 1 (the allowed one)", tb.Requests())
	}
}

func TestOpenPolicyRefusesLocalAddressesUnlessAllowed(t *testing.T) {
	local, allowed := site(t, "local"), site(t, "allowed")
	server := site(t, "webserv-server")
	r := newRouter(t, Options{Refuse: []string{hostPortOf(server)}})
	tb := NewTable(Policy{Open: true, Allow: []string{hostPortOf(allowed), hostPortOf(server)}})
	c := proxyClient(t, newRoute(t, r, tb))

	got := get(t, c, local.URL+"/")
	if got.status != http.StatusForbidden || !strings.Contains(got.body, "policy: loopback addresses are not part of the open web; allow it with allow: [\""+hostPortOf(local)+"\"]") {
		t.Errorf("loopback: got %d %q", got.status, got.body)
	}
	_, port, _ := strings.Cut(hostPortOf(local), ":")
	if got = get(t, c, "http://localhost:"+port+"/"); got.status != http.StatusForbidden || !strings.Contains(got.body, "loopback") {
		t.Errorf("localhost: got %d %q", got.status, got.body)
	}
	if got = get(t, c, "http://[::1]:"+port+"/"); got.status != http.StatusForbidden || !strings.Contains(got.body, "loopback") {
		t.Errorf("[::1]: got %d %q", got.status, got.body)
	}
	if got = get(t, c, "http://169.254.169.254/latest/meta-data/"); got.status != http.StatusForbidden || !strings.Contains(got.body, "link-local") {
		t.Errorf("metadata service: got %d %q", got.status, got.body)
	}
	if got = get(t, c, "http://10.0.0.1/"); got.status != http.StatusForbidden || !strings.Contains(got.body, "private network") {
		t.Errorf("private address: got %d %q", got.status, got.body)
	}
	if got = get(t, c, allowed.URL+"/"); got.status != 200 || !strings.HasPrefix(got.body, "allowed ") {
		t.Errorf("allowed loopback host:port: got %d %q", got.status, got.body)
	}
	if got = get(t, c, server.URL+"/"); got.status != http.StatusForbidden || !strings.Contains(got.body, "WebServ server") {
		t.Errorf("the server's address, though allowed: got %d %q", got.status, got.body)
	}
}

func TestOpenPolicyChecksWhatNamesResolveTo(t *testing.T) {
	const name = "rebinds.example"
	s := site(t, "local")
	_, port, _ := strings.Cut(hostPortOf(s), ":")
	tb := NewTable(Policy{Open: true})
	c := proxyClient(t, newRoute(t, newRouter(t, Options{Resolver: loopbackDNS(t)}), tb))
	got := get(t, c, "http://"+name+":"+port+"/")
	if got.status != http.StatusForbidden || !strings.Contains(got.body, name+" resolves to 127.0.0.1: loopback addresses") {
		t.Errorf("%s (127.0.0.1 in /etc/hosts): got %d %q", name, got.status, got.body)
	}
	if refs := tb.Refused(); len(refs) != 1 || !strings.Contains(refs[0].Reason, "resolves to") {
		t.Errorf("Refused() = %+v", refs)
	}
	if tb.Requests() != 0 {
		t.Errorf("Requests() = %d after a refusal", tb.Requests())
	}
	// Allowing the name by name allows what it resolves to.
	tb.SetPolicy(Policy{Open: true, Allow: []string{name}})
	if got = get(t, c, "http://"+name+":"+port+"/"); got.status != 200 {
		t.Errorf("%s allowed by name: got %d %q", name, got.status, got.body)
	}
}

// loopbackDNS is a DNS server on 127.0.0.1 that answers every A query with
// 127.0.0.1 (a name that rebinds to loopback), and a resolver that asks it.
func loopbackDNS(t *testing.T) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if n < 12 {
				continue
			}
			// The question ends after its name's labels, type and class.
			q := 12
			for q < n && buf[q] != 0 {
				q += int(buf[q]) + 1
			}
			q += 5
			if q > n {
				continue
			}
			qtype := binary.BigEndian.Uint16(buf[q-4:])
			resp := append([]byte{}, buf[:q]...)
			resp[2], resp[3] = 0x81, 0x80            // a response, recursion available, no error
			binary.BigEndian.PutUint16(resp[4:], 1)  // one question
			binary.BigEndian.PutUint16(resp[8:], 0)  // no authority
			binary.BigEndian.PutUint16(resp[10:], 0) // no additional records
			binary.BigEndian.PutUint16(resp[6:], 0)  // no answer, but for A:
			if qtype == 1 {
				binary.BigEndian.PutUint16(resp[6:], 1)
				resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1)
			}
			_, _ = pc.WriteTo(resp, from)
		}
	}()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
}

func TestCheckExplainsEachRefusal(t *testing.T) {
	server := site(t, "webserv-server")
	r := newRouter(t, Options{Refuse: []string{hostPortOf(server)}})
	hosted := tableWith(t, Policy{Allow: []string{"127.0.0.1:8000", "*.wikipedia.org"}}, nil)
	if err := hosted.Set(shop, TCPDialer("127.0.0.1:1")); err != nil {
		t.Fatal(err)
	}
	open := NewTable(Policy{Open: true, Allow: []string{hostPortOf(server)}, MaxRequests: 1})
	newRoute(t, r, hosted)
	newRoute(t, r, open)

	cases := []struct {
		table *Table
		url   string
		want  string // "" for allowed
	}{
		{hosted, "http://shop.webserv.test/p?q=1", ""},
		{hosted, "http://SHOP.webserv.test:80/", ""},
		{hosted, "ws://shop.webserv.test/socket", ""},
		{hosted, "about:blank", ""},
		{hosted, "data:text/html,hi", ""},
		{hosted, "javascript:void(0)", ""},
		{hosted, "http://127.0.0.1:8000/start", ""},
		{hosted, "https://en.wikipedia.org/wiki/Go", ""},
		{hosted, "http://127.0.0.1:40125/", "http://127.0.0.1:40125/ is refused: this environment reaches only its own sites (http://shop.webserv.test) and its allowlist"},
		{hosted, "https://shop.webserv.test/", "https://shop.webserv.test/ is refused: this environment reaches only its own sites (http://shop.webserv.test) and its allowlist; shop.webserv.test is served at http://shop.webserv.test"},
		{hosted, "https://wikipedia.org/", "reaches only its own sites"},
		{hosted, "file:///etc/passwd", "file:///etc/passwd is refused: file: URLs are not opened in a web-agent environment; open an http:// or https:// URL"},
		{hosted, "chrome://settings", "chrome: URLs are not opened"},
		{hosted, "shop.webserv.test/p", "it is not an absolute URL"},
		{hosted, "http:///p", "it names no host"},
		{hosted, "http://%zz/", "cannot be opened"},
		{open, "https://example.com/", ""},
		{open, "http://127.0.0.1:40125/", "http://127.0.0.1:40125/ is refused: loopback addresses are not part of the open web; allow it with allow: [\"127.0.0.1:40125\"] or start there"},
		{open, "http://localhost/", "loopback addresses are not part of the open web; allow it with allow: [\"localhost:80\"]"},
		{open, "http://192.168.1.1/", "private network addresses are not part of the open web; allow it with allow: [\"192.168.1.1:80\"]"},
		{open, "http://169.254.169.254/", "link-local addresses"},
		{open, "http://0.0.0.0:8080/", "the unspecified address is not part of the open web"},
		{open, server.URL + "/", "it belongs to the WebServ server or its browser, which no environment reaches, whatever its allowlist"},
	}
	for _, c := range cases {
		err := c.table.Check(c.url)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("Check(%q) = %v; want allowed", c.url, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("Check(%q) = %v; want %q", c.url, err, c.want)
		}
	}

	// Past MaxRequests, the open web is refused but the table's own sites
	// are not.
	open.live.Store(1)
	if err := open.Check("https://example.com/"); err == nil || !strings.Contains(err.Error(), "max_requests") {
		t.Errorf("Check past MaxRequests = %v", err)
	}
	open.NewEpisode()
	if err := open.Check("https://example.com/"); err != nil {
		t.Errorf("Check after NewEpisode = %v", err)
	}
}

func TestAllowPatterns(t *testing.T) {
	r := compile(Policy{Allow: []string{" Example.COM ", "127.0.0.1:8000", "*.wiki.org", "*.api.test:8443", "[::1]:9000", "http://dev.test:3000/start", ""}})
	cases := []struct {
		host, port string
		want       bool
	}{
		{"example.com", "80", true},
		{"example.com", "8443", true},
		{"www.example.com", "80", false},
		{"127.0.0.1", "8000", true},
		{"127.0.0.1", "8001", false},
		{"en.wiki.org", "443", true},
		{"wiki.org", "443", false},
		{"a.api.test", "8443", true},
		{"a.api.test", "443", false},
		{"::1", "9000", true},
		{"dev.test", "3000", true},
		{"dev.test", "80", false},
	}
	for _, c := range cases {
		if got := r.allows(c.host, c.port); got != c.want {
			t.Errorf("allows(%s, %s) = %v, want %v", c.host, c.port, got, c.want)
		}
	}
}

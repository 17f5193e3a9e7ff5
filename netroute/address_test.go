package netroute

import (
	"net/netip"
	"testing"
)

func TestSplitHostPortNormalizes(t *testing.T) {
	cases := []struct{ in, def, host, port string }{
		{"Shop.WebServ.Test", "80", "shop.webserv.test", "80"},
		{"shop.webserv.test.:7770", "80", "shop.webserv.test", "7770"},
		{"[::1]:8080", "80", "::1", "8080"},
		{"[::ffff:127.0.0.1]", "443", "127.0.0.1", "443"},
		{"::1", "80", "::1", "80"},
		{"127.0.0.1:", "80", "127.0.0.1", "80"},
	}
	for _, c := range cases {
		h, p := splitHostPort(c.in, c.def)
		if h != c.host || p != c.port {
			t.Errorf("splitHostPort(%q) = %q, %q; want %q, %q", c.in, h, p, c.host, c.port)
		}
	}
}

func TestIPClass(t *testing.T) {
	cases := map[string]string{
		"127.0.0.1":        classLoopback,
		"127.9.9.9":        classLoopback,
		"::1":              classLoopback,
		"::ffff:127.0.0.1": classLoopback,
		"10.1.2.3":         classPrivate,
		"172.16.0.1":       classPrivate,
		"172.32.0.1":       "",
		"192.168.1.1":      classPrivate,
		"fd00::1":          classPrivate,
		"169.254.169.254":  classLinkLocal,
		"fe80::1":          classLinkLocal,
		"0.0.0.0":          classUnspecified,
		"0.1.2.3":          classUnspecified,
		"::":               classUnspecified,
		"93.184.216.34":    "",
		"2606:4700::1111":  "",
	}
	for s, want := range cases {
		if got := ipClass(netip.MustParseAddr(s)); got != want {
			t.Errorf("ipClass(%s) = %q, want %q", s, got, want)
		}
	}
}

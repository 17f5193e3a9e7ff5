package netroute

import (
	"net"
	"net/netip"
	"strings"
)

// splitHostPort splits an authority ("host", "host:port", "[::1]:80") into
// a normalized host (see normHost) and a port, defaultPort when it has none.
func splitHostPort(authority, defaultPort string) (host, port string) {
	host, port, err := net.SplitHostPort(authority)
	if err != nil {
		host, port = authority, defaultPort
	}
	if port == "" {
		port = defaultPort
	}
	return normHost(host), port
}

// normHost lowercases a host name, drops a trailing dot and IPv6 brackets,
// and writes an IP address in its canonical form (IPv4-mapped IPv6
// addresses as IPv4).
func normHost(h string) string {
	h = strings.TrimSuffix(strings.Trim(h, "[]"), ".")
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Unmap().WithZone("").String()
	}
	return strings.ToLower(h)
}

// defaultPort is the port a URL of scheme has when it names none.
func defaultPort(scheme string) string {
	switch scheme {
	case "https", "wss":
		return "443"
	}
	return "80"
}

// isLocalName reports whether host is a name of the loopback interface
// whatever DNS says ("localhost" and its subdomains).
func isLocalName(host string) bool {
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}

// Classes of addresses that are not part of the open web.
const (
	classLoopback    = "loopback"
	classPrivate     = "private"
	classLinkLocal   = "link-local"
	classUnspecified = "unspecified"
)

// ipClass says which of the classes above a belongs to, or "" for an
// address of the open web.
func ipClass(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case a.IsLoopback():
		return classLoopback
	case a.IsUnspecified(), a.Is4() && a.As4()[0] == 0:
		// 0.0.0.0/8 reaches this host on Linux.
		return classUnspecified
	case a.IsPrivate():
		return classPrivate
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast():
		return classLinkLocal
	}
	return ""
}

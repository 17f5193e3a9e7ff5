package netroute

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"sync"

	"golang.org/x/time/rate"
)

// Policy is an environment's network policy: what it may reach besides its
// own sites' origins, which are always reachable.
type Policy struct {
	// Open is the open web: hosts outside the table are allowed, except
	// loopback (127.0.0.0/8, ::1, "localhost"), private (10/8, 172.16/12,
	// 192.168/16, fc00::/7), link-local (169.254/16, fe80::/10) and
	// unspecified addresses, unless Allow lists them. When Open is false
	// (hosted sites) only the table's origins and Allow are reachable.
	Open bool
	// Allow lists hosts reachable in addition: "host", "host:port" or
	// "*.suffix". A start URL on 127.0.0.1 is allowed by listing its
	// host:port.
	Allow []string
	// Politeness towards live sites (zero: no limit). They apply to hosts
	// outside the table; https tunnels count once per connection.
	RatePerHost        float64 // requests per second per host
	ConcurrencyPerHost int     // requests in flight per host; more wait
	MaxRequests        int     // requests per episode; past it, refused
	UserAgent          string  // replaces User-Agent on plain-http requests
	// Robots refuses what the host's robots.txt disallows for UserAgent
	// (or *): every plain-http request, and https navigations opened with
	// goto or new_tab (Check); other https requests are tunnelled, their
	// paths unseen.
	Robots bool
}

// allowed reports whether host:port is on the allowlist.
func (p Policy) allowed(hostport string) bool {
	host, _, _ := net.SplitHostPort(hostport)
	for _, a := range p.Allow {
		a = strings.ToLower(strings.TrimSpace(a))
		switch {
		case strings.HasPrefix(a, "*."):
			if strings.HasSuffix(host, a[1:]) {
				return true
			}
		case strings.Contains(a, ":") && !strings.HasPrefix(a, "["):
			if hostPort(a, "") == hostport {
				return true
			}
		case strings.HasPrefix(a, "["):
			if hostPort(a, "") == hostport || strings.Trim(a, "[]") == host {
				return true
			}
		default:
			if a == host {
				return true
			}
		}
	}
	return false
}

// localAddr reports why ip is not part of the open web, or "".
func localAddr(ip netip.Addr) string {
	ip = ip.Unmap()
	switch {
	case ip.IsLoopback():
		return "loopback addresses are not part of the open web"
	case ip.IsPrivate():
		return "private addresses are not part of the open web"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "link-local addresses are not part of the open web"
	case ip.IsUnspecified(), ip.IsMulticast():
		return "that address is not part of the open web"
	}
	return ""
}

// decision is where a request may go: a table origin, or a checked address
// of the open web.
type decision struct {
	dial   Dialer // the instance, for a table origin
	addr   string // the address to dial otherwise (an IP:port checked by the policy)
	limits bool   // politeness applies
}

// decide applies the table's policy to a request for hostport.
// refuse lists addresses refused under every policy.
func (t *Table) decide(ctx context.Context, hostport string, refuse func(string) bool) (decision, error) {
	if d, ok := t.lookup(hostport); ok {
		return decision{dial: d}, nil
	}
	p := t.Policy()
	host, port, _ := net.SplitHostPort(hostport)
	if refuse(hostport) {
		return decision{}, fmt.Errorf("it is the WebServ server's own address or a browser route, which no environment may reach")
	}
	allowed := p.allowed(hostport)
	if !p.Open && !allowed {
		return decision{}, fmt.Errorf("this environment reaches only its own sites (%s) and its allowlist; add the host to the site's or make's allow to reach it", strings.Join(t.Origins(), ", "))
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		if !allowed {
			return decision{}, fmt.Errorf("loopback addresses are not part of the open web; start the episode there or add %s to allow", hostport)
		}
		host = "127.0.0.1"
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return decision{}, fmt.Errorf("cannot resolve %s: %v", host, err)
		}
		ips = addrs
	}
	if len(ips) == 0 {
		return decision{}, fmt.Errorf("%s has no address", host)
	}
	for _, ip := range ips {
		if why := localAddr(ip); why != "" && !allowed {
			return decision{}, fmt.Errorf("%s; start the episode there or add %s to allow", why, hostport)
		}
		if refuse(net.JoinHostPort(ip.Unmap().String(), port)) {
			return decision{}, fmt.Errorf("it is the WebServ server's own address or a browser route, which no environment may reach")
		}
	}
	return decision{addr: net.JoinHostPort(ips[0].Unmap().String(), port), limits: true}, nil
}

// take counts a request the policy let through; under a request cap it
// reports false (and counts nothing) once the episode has used it up.
func (t *Table) take(dec decision) error {
	n := t.requests.Add(1)
	if !dec.limits {
		return nil
	}
	if max := t.Policy().MaxRequests; max > 0 && n > int64(max) {
		t.requests.Add(-1)
		return fmt.Errorf("the episode has made its %d requests, the most its policy allows", max)
	}
	return nil
}

// Check reports whether rawURL may be opened, with an error an agent can
// act on when not. about:, data:, blob: and javascript: URLs are the
// browser's own; other non-http schemes are refused.
func (t *Table) Check(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("%s is refused: not a URL", rawURL)
	}
	switch u.Scheme {
	case "about", "data", "blob", "javascript":
		return nil
	case "http", "https", "ws", "wss":
	default:
		return fmt.Errorf("%s is refused: only http and https are opened", rawURL)
	}
	port := map[string]string{"http": "80", "ws": "80", "https": "443", "wss": "443"}[u.Scheme]
	hp := hostPort(u.Host, port)
	if _, ok := t.lookup(hp); ok && (u.Scheme == "http" || u.Scheme == "ws") {
		return nil
	}
	dec, err := t.decide(context.Background(), hp, noRefuse)
	if err == nil {
		err = t.checkRobots(context.Background(), u, dec)
	}
	if err != nil {
		return fmt.Errorf("%s is refused: %v", rawURL, err)
	}
	return nil
}

func noRefuse(string) bool { return false }

// limiter holds the politeness state of one policy.
type limiter struct {
	rate  float64
	conc  int
	mu    sync.Mutex
	hosts map[string]*hostLimit
}

type hostLimit struct {
	rl  *rate.Limiter
	sem chan struct{}
}

func newLimiter(p Policy) *limiter {
	if p.RatePerHost <= 0 && p.ConcurrencyPerHost <= 0 {
		return nil
	}
	return &limiter{rate: p.RatePerHost, conc: p.ConcurrencyPerHost, hosts: map[string]*hostLimit{}}
}

// acquire waits for host's turn; release must be called when the request
// is over.
func (l *limiter) acquire(ctx context.Context, host string) (release func(), err error) {
	if l == nil {
		return func() {}, nil
	}
	l.mu.Lock()
	h := l.hosts[host]
	if h == nil {
		h = &hostLimit{}
		if l.rate > 0 {
			h.rl = rate.NewLimiter(rate.Limit(l.rate), int(math.Max(1, math.Ceil(l.rate))))
		}
		if l.conc > 0 {
			h.sem = make(chan struct{}, l.conc)
		}
		l.hosts[host] = h
	}
	l.mu.Unlock()
	if h.rl != nil {
		if err := h.rl.Wait(ctx); err != nil {
			return nil, err
		}
	}
	if h.sem == nil {
		return func() {}, nil
	}
	select {
	case h.sem <- struct{}{}:
		return func() { <-h.sem }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

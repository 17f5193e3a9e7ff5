package netroute

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strings"
	"time"

	"go.uber.org/zap"
)

// forward proxies a plain http request (absolute URI, as browsers send
// proxies): a table origin's to its instance, any other's under the
// policy.
func (rt *Route) forward(w http.ResponseWriter, req *http.Request, t *Table) {
	u := req.URL
	if u.Scheme != "http" || u.Host == "" {
		writeError(w, http.StatusBadRequest, "this is WebServ's proxy for one browser context: send it absolute http:// requests or CONNECT host:port")
		return
	}
	st := t.st.Load()
	e := st.lookup[u.Host]
	if e == nil {
		host, port := splitHostPort(u.Host, "80")
		d := st.decide(rt.router, "http", host, port)
		if d.entry == nil {
			rt.forwardWeb(w, req, t, st, d, host)
			return
		}
		e = d.entry
	}
	t.requests.Add(1)
	if isUpgrade(req.Header) {
		rt.serveLong(w, req, t, e.proxy)
		return
	}
	t.through(w, req, e.proxy)
}

// forwardWeb proxies a request for a host outside the table, as decided.
func (rt *Route) forwardWeb(w http.ResponseWriter, req *http.Request, t *Table, st *state, d decision, host string) {
	if d.reason != "" {
		t.refuse(w, req, req.URL.String(), d.reason)
		return
	}
	_, port := splitHostPort(req.URL.Host, "80")
	if why := st.rules.submitRefusal(req.Method, host, port); why != "" {
		t.refuse(w, req, req.URL.String(), why)
		return
	}
	if st.rules.Robots {
		if why := t.robots.disallows(req.Context(), t.web, req.URL, st.rules.UserAgent); why != "" {
			t.refuse(w, req, req.URL.String(), why)
			return
		}
	}
	if !t.admitLive(st) {
		t.refuse(w, req, req.URL.String(), maxRequestsReason(st.rules.MaxRequests))
		return
	}
	g, err := t.polite.Load().acquire(req.Context(), host)
	if err != nil {
		return // the browser gave up waiting
	}
	defer g.release()
	t.requests.Add(1)
	if isUpgrade(req.Header) {
		rt.serveLong(w, req, t, t.webProxy)
		return
	}
	t.through(w, req, t.webProxy)
}

// rewriteWeb prepares a request to a live site: as the browser sent it,
// with the policy's User-Agent when it sets one.
func (t *Table) rewriteWeb(pr *httputil.ProxyRequest) {
	if ua := t.st.Load().rules.UserAgent; ua != "" {
		pr.Out.Header.Set("User-Agent", ua)
	}
}

// webError answers a request to a live site that did not get a response:
// a refusal when the host resolved to a refused address, 502 otherwise.
func (t *Table) webError(w http.ResponseWriter, req *http.Request, err error) {
	var re *RefusalError
	if errors.As(err, &re) {
		t.requests.Add(-1) // counted as let through before the dial refused it
		t.refuse(w, req, req.URL.String(), re.Reason)
		return
	}
	if req.Context().Err() != nil {
		return // the browser went away
	}
	t.log().Debug("live site unreachable", zap.String("url", req.URL.String()), zap.Error(err))
	writeError(w, http.StatusBadGateway, fmt.Sprintf("%s could not be reached: %v; check the address, or whether the site is up", req.URL.Host, err))
}

// dialWeb is the dialer of t's transport to live sites: it resolves the
// host, checks every address, and dials a checked one.
func (t *Table) dialWeb(ctx context.Context, _, addr string) (net.Conn, error) {
	host, port := splitHostPort(addr, "80")
	ips, err := t.resolve(ctx, t.router.Load(), host, port)
	if err != nil {
		return nil, err
	}
	return dialFirst(ctx, host, ips, port)
}

// resolve looks host up (once) and checks every address it resolves to
// against r's refused addresses and, unless the allowlist names host, the
// policy. A refused address fails the whole name with a *RefusalError
// (whose URL the caller fills in).
func (t *Table) resolve(ctx context.Context, r *Router, host, port string) ([]netip.Addr, error) {
	var ips []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{a}
	} else {
		res := net.DefaultResolver
		if r != nil {
			res = r.resolver
		}
		ips, err = res.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, fmt.Errorf("look up %s: %w; check the host name", host, err)
		}
		if len(ips) == 0 {
			return nil, fmt.Errorf("look up %s: it has no address; check the host name", host)
		}
	}
	st := t.st.Load()
	allowed := st.rules.allows(host, port)
	for i, a := range ips {
		a = a.Unmap().WithZone("")
		ips[i] = a
		hp := net.JoinHostPort(host, port)
		switch {
		case r != nil && r.refusesAddr(a, port):
			return nil, &RefusalError{Reason: resolvedAs(host, a) + reasonRouter}
		case allowed:
		case !st.rules.Open:
			return nil, &RefusalError{Reason: st.hostedReason(host)}
		default:
			if c := ipClass(a); c != "" {
				return nil, &RefusalError{Reason: resolvedAs(host, a) + classReason(c, hp)}
			}
		}
	}
	return ips, nil
}

// resolvedAs prefixes a reason about address a with the name it came from.
func resolvedAs(host string, a netip.Addr) string {
	if host == a.String() {
		return ""
	}
	return host + " resolves to " + a.String() + ": "
}

// dialFirst dials port on the first of ips that answers.
func dialFirst(ctx context.Context, host string, ips []netip.Addr, port string) (net.Conn, error) {
	d := net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	var first error
	for _, a := range ips {
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("connect to %s: %w", net.JoinHostPort(host, port), first)
}

// isUpgrade reports whether request headers h ask to switch protocols (a
// WebSocket over plain http).
func isUpgrade(h http.Header) bool {
	return len(h["Upgrade"]) > 0 && strings.Contains(strings.ToLower(h.Get("Connection")), "upgrade")
}

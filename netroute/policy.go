package netroute

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
)

// Policy is an environment's network policy: what it reaches besides its
// own sites' canonical origins, which it always reaches.
type Policy struct {
	// Open is the open web: hosts outside the table's origins are allowed,
	// except loopback (127.0.0.0/8, ::1, "localhost"), private (10/8,
	// 172.16/12, 192.168/16, fc00::/7), link-local (169.254/16, fe80::/10)
	// and unspecified addresses, unless listed in Allow. Host names are
	// resolved once per connection and every address they resolve to is
	// checked, so DNS cannot bring those addresses back. When Open is false
	// (hosted sites) only the table's origins and Allow are reachable.
	Open bool
	// Allow lists hosts reachable in addition, under either policy:
	// "host" (any port), "host:port", "*.suffix" or "*.suffix:port" (the
	// suffix's subdomains, not the suffix itself), or a URL, which allows
	// its host:port. A start URL on 127.0.0.1 is allowed by listing its
	// host:port. Whatever Allow says, the Router's refused addresses stay
	// refused.
	Allow []string
	// RatePerHost, ConcurrencyPerHost, MaxRequests and UserAgent are the
	// politeness owed to live sites; zero means no limit. They apply to
	// requests for hosts outside the table (a table origin is the
	// environment's own instance). An https connection is an opaque
	// tunnel: it counts as one request for its whole life, however many
	// requests the browser sends through it.
	RatePerHost        float64 // requests per second per host name (burst: ceil(rate), at least 1)
	ConcurrencyPerHost int     // requests in flight per host name; more wait their turn
	MaxRequests        int     // requests per episode (Table.NewEpisode); past it, refused
	UserAgent          string  // when set, replaces User-Agent on plain-http requests
	// Robots refuses what a live host's robots.txt disallows for
	// UserAgent (or "*"): every plain-http request, and the https URLs
	// Check is asked about (goto, new_tab); other https requests go
	// through tunnels, their paths unseen. Each host's robots.txt is
	// fetched once per table.
	Robots bool
	// DenySubmit refuses every request but GET, HEAD and OPTIONS (form
	// submissions by POST, fetch and XHR writes) to hosts outside the
	// table that SubmitAllow (Allow's patterns) does not name: the
	// irreversible actions an explorer must not take on the real web.
	// Plain-http requests only: an https tunnel's methods are unseen.
	DenySubmit  bool
	SubmitAllow []string
}

// rules is a Policy prepared for matching.
type rules struct {
	Policy
	hosts     map[string]bool // allowed on any port
	hostPorts map[string]bool // allowed "host:port"
	suffixes  []suffixRule
	submit    *rules // SubmitAllow, when DenySubmit
}

// suffixRule is an Allow pattern "*.suffix" or "*.suffix:port".
type suffixRule struct {
	suffix string // ".example.com"
	port   string // "" for any port
}

// compile prepares p for matching; p.Allow is copied.
func compile(p Policy) *rules {
	p.Allow = slices.Clone(p.Allow)
	p.SubmitAllow = slices.Clone(p.SubmitAllow)
	r := &rules{Policy: p, hosts: map[string]bool{}, hostPorts: map[string]bool{}}
	if p.DenySubmit {
		r.submit = compile(Policy{Allow: p.SubmitAllow})
	}
	for _, a := range p.Allow {
		a = strings.TrimSpace(a)
		switch {
		case a == "":
		case strings.Contains(a, "://"):
			if u, err := url.Parse(a); err == nil && u.Host != "" {
				h, port := splitHostPort(u.Host, defaultPort(strings.ToLower(u.Scheme)))
				r.hostPorts[net.JoinHostPort(h, port)] = true
			}
		case strings.HasPrefix(a, "*."):
			s, port := a[1:], ""
			if i := strings.LastIndexByte(s, ':'); i >= 0 {
				s, port = s[:i], s[i+1:]
			}
			r.suffixes = append(r.suffixes, suffixRule{suffix: strings.ToLower(strings.TrimSuffix(s, ".")), port: port})
		default:
			if h, port, err := net.SplitHostPort(a); err == nil && port != "" {
				r.hostPorts[net.JoinHostPort(normHost(h), port)] = true
			} else {
				r.hosts[normHost(a)] = true
			}
		}
	}
	return r
}

// allows reports whether the allowlist names host:port (both normalized).
func (r *rules) allows(host, port string) bool {
	if r.hosts[host] || (len(r.hostPorts) > 0 && r.hostPorts[net.JoinHostPort(host, port)]) {
		return true
	}
	for _, s := range r.suffixes {
		if strings.HasSuffix(host, s.suffix) && (s.port == "" || s.port == port) {
			return true
		}
	}
	return false
}

// submitRefusal says why DenySubmit refuses a method-request to host:port
// (both normalized) outside the table, or "" when it may go.
func (r *rules) submitRefusal(method, host, port string) string {
	if r.submit == nil || method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions {
		return ""
	}
	if r.submit.allows(host, port) {
		return ""
	}
	return fmt.Sprintf("deny_submit: a %s to %s would change the live site; only GET, HEAD and OPTIONS go to hosts outside submit_allow", method, net.JoinHostPort(host, port))
}

// decision is where a request for one host:port goes.
type decision struct {
	entry  *entry // a table origin: its instance; nil otherwise
	reason string // why it is refused; "" when it may go
}

// decide applies st to a request for host:port (normalized). scheme is the
// request's ("http", "https", "ws", "wss"), or "" for a CONNECT tunnel.
// Table origins are http, so they match plain http, ws and tunnels only.
// r, when not nil, supplies the addresses refused under every policy.
func (st *state) decide(r *Router, scheme, host, port string) decision {
	if scheme == "" || scheme == "http" || scheme == "ws" {
		if e := st.byKey[net.JoinHostPort(host, port)]; e != nil {
			return decision{entry: e}
		}
	}
	if r != nil && r.refuses(host, port) {
		return decision{reason: reasonRouter}
	}
	if st.rules.allows(host, port) {
		return decision{}
	}
	if !st.rules.Open {
		return decision{reason: st.hostedReason(host)}
	}
	if isLocalName(host) {
		return decision{reason: classReason(classLoopback, net.JoinHostPort(host, port))}
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if c := ipClass(a); c != "" {
			return decision{reason: classReason(c, net.JoinHostPort(host, port))}
		}
	}
	return decision{}
}

// reasonRouter is why the Router's refused addresses are refused.
const reasonRouter = "it belongs to the WebServ server or its browser, which no environment reaches, whatever its allowlist"

// reasonUnbound is why an unbound route refuses everything.
const reasonUnbound = "this browser context is not bound to an environment"

// hostedReason is why a hosted environment refuses host.
func (st *state) hostedReason(host string) string {
	sites := "it has none"
	if len(st.list) > 0 {
		sites = strings.Join(st.list, ", ")
	}
	why := fmt.Sprintf("this environment reaches only its own sites (%s) and its allowlist", sites)
	for _, e := range st.byKey {
		if e.host == host {
			return why + "; " + host + " is served at " + e.origin
		}
	}
	return why
}

// classReason is why the open web refuses hostport, an address of class c.
func classReason(c, hostport string) string {
	allow := fmt.Sprintf("allow it with allow: [%q]", hostport)
	switch c {
	case classLoopback:
		return "loopback addresses are not part of the open web; " + allow + " or start there"
	case classPrivate:
		return "private network addresses are not part of the open web; " + allow
	case classLinkLocal:
		return "link-local addresses (a cloud metadata service among them) are not part of the open web; " + allow
	}
	return "the unspecified address is not part of the open web; " + allow
}

// maxRequestsReason is why a request past Policy.MaxRequests is refused.
func maxRequestsReason(max int) string {
	return fmt.Sprintf("this episode has made the %d requests to live sites its policy allows (max_requests); the next episode starts counting anew", max)
}

// Check reports whether rawURL may be requested, and if not, why, as a
// *RefusalError whose text an agent can act on, such as
//
//	http://127.0.0.1:40125/ is refused: this environment reaches only its own sites (http://shop.webserv.test) and its allowlist
//
// about:, data:, blob: and javascript: URLs are the browser's own and are
// always allowed; other schemes than http(s) and ws(s) are refused. Check
// does not resolve host names: a name of the open web that resolves to a
// refused address passes Check and is refused when requested. Under
// Policy.Robots, Check may fetch the host's robots.txt (once per host, 5s
// at most).
func (t *Table) Check(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("%q cannot be opened: %w; give an absolute http:// or https:// URL", rawURL, err)
	}
	scheme := strings.ToLower(u.Scheme)
	switch scheme {
	case "about", "data", "blob", "javascript":
		return nil
	case "http", "https", "ws", "wss":
	case "":
		return &RefusalError{URL: rawURL, Reason: "it is not an absolute URL; give one with http:// or https://"}
	default:
		return &RefusalError{URL: rawURL, Reason: scheme + ": URLs are not opened in a web-agent environment; open an http:// or https:// URL"}
	}
	if u.Host == "" {
		return &RefusalError{URL: rawURL, Reason: "it names no host; give one like http://shop.webserv.test/"}
	}
	host, port := splitHostPort(u.Host, defaultPort(scheme))
	st := t.st.Load()
	d := st.decide(t.router.Load(), scheme, host, port)
	switch {
	case d.reason != "":
		return &RefusalError{URL: rawURL, Reason: d.reason}
	case d.entry != nil:
		return nil
	case st.rules.MaxRequests > 0 && t.live.Load() >= int64(st.rules.MaxRequests):
		return &RefusalError{URL: rawURL, Reason: maxRequestsReason(st.rules.MaxRequests)}
	case st.rules.Robots && (scheme == "http" || scheme == "https"):
		if why := t.robots.disallows(context.Background(), t.web, u, st.rules.UserAgent); why != "" {
			return &RefusalError{URL: rawURL, Reason: why}
		}
	}
	return nil
}

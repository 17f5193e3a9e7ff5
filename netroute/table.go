package netroute

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Dialer opens a connection to one site instance's HTTP server.
type Dialer func(ctx context.Context) (net.Conn, error)

// TCPDialer dials addr ("127.0.0.1:port") over TCP.
func TCPDialer(addr string) Dialer {
	var d net.Dialer
	return func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
}

// Table is one environment's routing: each canonical origin of its sites
// leads to the instance serving it now, and its Policy applies to every
// other request. It is safe for concurrent use; every Route bound to it
// sees a change at once.
type Table struct {
	mu      sync.RWMutex
	origins map[string]Dialer // by "host:port"
	policy  Policy
	limits  *limiter
	robots  robots

	refMu   sync.Mutex
	refused []Refusal

	requests  atomic.Int64
	transport *http.Transport
	client    *http.Client
}

// maxRefusals bounds the refusal log between two reads.
const maxRefusals = 100

// NewTable returns a table with no origins and policy p.
func NewTable(p Policy) *Table {
	t := &Table{origins: map[string]Dialer{}, policy: p, limits: newLimiter(p)}
	t.transport = &http.Transport{
		Proxy:               nil,
		DialContext:         t.dial,
		MaxIdleConnsPerHost: 32,
		IdleConnTimeout:     90 * time.Second,
		// Chromium sends what it sends; the instance answers as it would
		// to the browser.
		DisableCompression: true,
	}
	t.client = &http.Client{Transport: t.transport, Timeout: 30 * time.Second}
	return t
}

// originKey is a canonical origin's host:port ("shop.webserv.test:80").
func originKey(origin string) (string, error) {
	u, err := url.Parse(origin)
	if err != nil || u.Scheme != "http" || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return "", fmt.Errorf("origin %q: want http://host or http://host:port", origin)
	}
	return hostPort(u.Host, "80"), nil
}

// hostPort lowercases host and adds port when it has none.
func hostPort(host, port string) string {
	h, p, err := net.SplitHostPort(host)
	if err != nil {
		h, p = strings.Trim(host, "[]"), port
	}
	return net.JoinHostPort(strings.ToLower(h), p)
}

// Set points origin ("http://shop.webserv.test",
// "http://metis.lti.cs.cmu.edu:7770") at d. Connections kept open to the
// instance it pointed at before are closed.
func (t *Table) Set(origin string, d Dialer) error {
	k, err := originKey(origin)
	if err != nil {
		return err
	}
	t.mu.Lock()
	t.origins[k] = d
	t.mu.Unlock()
	t.transport.CloseIdleConnections()
	return nil
}

// Remove drops origin from the table.
func (t *Table) Remove(origin string) {
	k, err := originKey(origin)
	if err != nil {
		return
	}
	t.mu.Lock()
	delete(t.origins, k)
	t.mu.Unlock()
	t.transport.CloseIdleConnections()
}

// Origins lists the table's origins, like "http://shop.webserv.test".
func (t *Table) Origins() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]string, 0, len(t.origins))
	for k := range t.origins {
		out = append(out, originOf(k))
	}
	sort.Strings(out)
	return out
}

// originOf writes a host:port key as an origin, without the default port.
func originOf(k string) string {
	if h, p, err := net.SplitHostPort(k); err == nil && p == "80" {
		if strings.Contains(h, ":") {
			return "http://[" + h + "]"
		}
		return "http://" + h
	}
	return "http://" + k
}

// SetPolicy replaces the table's policy.
func (t *Table) SetPolicy(p Policy) {
	t.mu.Lock()
	t.policy = p
	t.limits = newLimiter(p)
	t.mu.Unlock()
}

// Policy is the table's policy.
func (t *Table) Policy() Policy {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.policy
}

// lookup returns the dialer of a canonical origin's host:port.
func (t *Table) lookup(hostport string) (Dialer, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	d, ok := t.origins[hostport]
	return d, ok
}

// dial is the transport's dialer: canonical origins only.
func (t *Table) dial(ctx context.Context, _, addr string) (net.Conn, error) {
	d, ok := t.lookup(hostPort(addr, "80"))
	if !ok {
		return nil, fmt.Errorf("%s is not one of this environment's sites (%s)", addr, strings.Join(t.Origins(), ", "))
	}
	c, err := d(ctx)
	if err != nil {
		return nil, fmt.Errorf("reach the instance behind http://%s: %w", addr, err)
	}
	return c, nil
}

// NewEpisode starts the per-episode counters (Policy.MaxRequests) anew and
// empties the refusal log.
func (t *Table) NewEpisode() {
	t.requests.Store(0)
	t.refMu.Lock()
	t.refused = nil
	t.refMu.Unlock()
}

// Requests is how many requests the table let through this episode.
func (t *Table) Requests() int64 { return t.requests.Load() }

// Refusal is one request the policy refused.
type Refusal struct {
	URL    string `json:"url"`
	Method string `json:"method"`
	Reason string `json:"reason"`
	// Navigation is set for a document load (Sec-Fetch-Mode: navigate, or
	// Upgrade-Insecure-Requests with an HTML Accept, which Chromium sends
	// on navigations to http origins).
	Navigation bool      `json:"navigation"`
	Time       time.Time `json:"time"`
}

func (t *Table) refuse(r Refusal) {
	t.refMu.Lock()
	defer t.refMu.Unlock()
	if len(t.refused) >= maxRefusals {
		t.refused = t.refused[1:]
	}
	t.refused = append(t.refused, r)
}

// Refused returns and clears the refusals recorded since the last call.
func (t *Table) Refused() []Refusal {
	t.refMu.Lock()
	defer t.refMu.Unlock()
	out := t.refused
	t.refused = nil
	return out
}

// Close drops the connections the table keeps open to its instances.
func (t *Table) Close() { t.transport.CloseIdleConnections() }

// Client is an HTTP client whose requests to the table's canonical origins
// go to their instances, as the browser's do. It applies no policy: it is
// for the server's own requests for the environment (signing in,
// grading). Requests to other hosts fail.
func (t *Table) Client() *http.Client { return t.client }

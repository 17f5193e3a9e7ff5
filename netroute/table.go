package netroute

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Dialer opens a connection to one site instance's HTTP server.
type Dialer func(ctx context.Context) (net.Conn, error)

// TCPDialer dials addr ("127.0.0.1:port") over TCP.
func TCPDialer(addr string) Dialer {
	d := net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return func(ctx context.Context) (net.Conn, error) {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("dial the site instance at %s: %w", addr, err)
		}
		return c, nil
	}
}

// Table is one environment's routing: each canonical origin of its sites
// leads to the instance serving it now, and its Policy applies to every
// other request. It is safe for concurrent use; every Route bound to it
// sees a change at once.
type Table struct {
	mu     sync.Mutex // serializes changes to st and polite
	st     atomic.Pointer[state]
	polite atomic.Pointer[politeness]
	router atomic.Pointer[Router] // the last Router whose route was bound to t

	requests atomic.Int64 // allowed requests this episode
	live     atomic.Int64 // requests to live sites this episode (MaxRequests)

	web      *http.Transport // the open web and the allowlist
	webProxy *httputil.ReverseProxy
	errLog   *log.Logger
	robots   robots

	refMu   sync.Mutex
	refused []Refusal

	rec atomic.Pointer[Recorder] // the episode's network trace, or nil (har.go)

	unreach atomic.Pointer[string] // the last failure to reach an instance since TakeUnreachable (health.go)
	route   atomic.Pointer[Route]  // the route last bound to t

	inj atomic.Pointer[injectorBox] // what rewrites the contexts' documents, or nil (inject.go)
}

// state is a table's routing at one moment; it is never changed once
// published.
type state struct {
	byKey  map[string]*entry // by "host:port"
	lookup map[string]*entry // by key and, for port 80, by host alone: a request's URL.Host as browsers send it
	list   []string          // origins, sorted
	rules  *rules
}

// entry is one canonical origin and the instance it leads to. Its
// transport keeps connections to that instance alone, so once the origin
// points elsewhere no kept connection can carry a request to the old one.
type entry struct {
	origin string // "http://shop.webserv.test"
	host   string // "shop.webserv.test"
	dial   Dialer
	tr     *http.Transport
	proxy  *httputil.ReverseProxy
}

// NewTable returns a table with no origins and policy p.
func NewTable(p Policy) *Table {
	t := &Table{}
	t.errLog = log.New(logWriter{t}, "", 0)
	t.st.Store(newState(map[string]*entry{}, compile(p)))
	t.polite.Store(newPoliteness(p, nil))
	t.web = &http.Transport{
		Proxy:               nil,
		DialContext:         t.dialWeb,
		MaxIdleConnsPerHost: 8,
		IdleConnTimeout:     60 * time.Second,
		// The site answers what it would answer the browser: no
		// Accept-Encoding is added, nothing is decompressed.
		DisableCompression:    true,
		ExpectContinueTimeout: time.Second,
	}
	t.webProxy = &httputil.ReverseProxy{
		Rewrite:        t.rewriteWeb,
		ModifyResponse: t.modifyResponse,
		Transport:      t.web,
		FlushInterval:  -1,
		BufferPool:     buffers,
		ErrorLog:       t.errLog,
		ErrorHandler:   t.webError,
	}
	return t
}

// newState indexes byKey.
func newState(byKey map[string]*entry, r *rules) *state {
	st := &state{byKey: byKey, lookup: make(map[string]*entry, 2*len(byKey)), rules: r}
	for k, e := range byKey {
		st.lookup[k] = e
		if strings.HasSuffix(k, ":80") {
			st.lookup[strings.TrimSuffix(k, ":80")] = e
		}
		st.list = append(st.list, e.origin)
	}
	slices.Sort(st.list)
	return st
}

// find returns the entry for a plain http request's URL.Host.
func (st *state) find(urlHost string) *entry {
	if e := st.lookup[urlHost]; e != nil {
		return e
	}
	host, port := splitHostPort(urlHost, "80")
	return st.byKey[net.JoinHostPort(host, port)]
}

// parseOrigin checks a canonical origin and returns it normalized
// ("http://shop.webserv.test"), with its host and "host:port" key.
func parseOrigin(origin string) (norm, host, key string, err error) {
	u, err := url.Parse(origin)
	if err != nil {
		return "", "", "", fmt.Errorf("origin %q: %w; give it as http://host or http://host:port", origin, err)
	}
	switch {
	case u.Scheme == "":
		return "", "", "", fmt.Errorf("origin %q has no scheme; give it as http://host or http://host:port", origin)
	case !strings.EqualFold(u.Scheme, "http"):
		return "", "", "", fmt.Errorf("origin %q: only http origins are routed (https is an opaque tunnel to the proxy); serve the site at http://%s", origin, u.Host)
	case u.Host == "" || u.Hostname() == "":
		return "", "", "", fmt.Errorf("origin %q has no host; give it as http://host or http://host:port", origin)
	case u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return "", "", "", fmt.Errorf("origin %q has more than a scheme, host and port; give it as http://host or http://host:port", origin)
	}
	host, port := splitHostPort(u.Host, "80")
	key = net.JoinHostPort(host, port)
	norm = "http://" + key
	if port == "80" {
		norm = "http://" + strings.TrimSuffix(key, ":80")
	}
	return norm, host, key, nil
}

// Set points origin ("http://shop.webserv.test" or
// "http://metis.lti.cs.cmu.edu:7770"; the scheme must be http, port 80 is
// implied) at d, replacing what it pointed at. Connections kept open to the
// instance it pointed at before are closed, and none of them carries
// another request.
func (t *Table) Set(origin string, d Dialer) error {
	if d == nil {
		return fmt.Errorf("set origin %q: no Dialer given; pass one, such as netroute.TCPDialer(\"127.0.0.1:port\")", origin)
	}
	norm, host, key, err := parseOrigin(origin)
	if err != nil {
		return err
	}
	e := t.newEntry(norm, host, d)
	t.mu.Lock()
	old := t.st.Load()
	byKey := make(map[string]*entry, len(old.byKey)+1)
	for k, v := range old.byKey {
		byKey[k] = v
	}
	byKey[key] = e
	t.st.Store(newState(byKey, old.rules))
	t.mu.Unlock()
	if prev := old.byKey[key]; prev != nil {
		prev.tr.CloseIdleConnections()
	}
	return nil
}

// Remove drops origin from the table; requests for it then fall under the
// policy. An origin that is not in the table is ignored.
func (t *Table) Remove(origin string) {
	_, _, key, err := parseOrigin(origin)
	if err != nil {
		return
	}
	t.mu.Lock()
	old := t.st.Load()
	prev := old.byKey[key]
	if prev == nil {
		t.mu.Unlock()
		return
	}
	byKey := make(map[string]*entry, len(old.byKey))
	for k, v := range old.byKey {
		if k != key {
			byKey[k] = v
		}
	}
	t.st.Store(newState(byKey, old.rules))
	t.mu.Unlock()
	prev.tr.CloseIdleConnections()
}

// Origins lists the table's origins, sorted, like
// "http://shop.webserv.test".
func (t *Table) Origins() []string { return slices.Clone(t.st.Load().list) }

// SetPolicy replaces the table's policy. Per-host rate and concurrency
// state carries over when those limits are unchanged.
func (t *Table) SetPolicy(p Policy) {
	t.mu.Lock()
	old := t.st.Load()
	t.st.Store(&state{byKey: old.byKey, lookup: old.lookup, list: old.list, rules: compile(p)})
	t.polite.Store(newPoliteness(p, t.polite.Load()))
	t.mu.Unlock()
	// A kept connection was checked against the old policy.
	t.web.CloseIdleConnections()
}

// Policy returns the table's policy.
func (t *Table) Policy() Policy {
	p := t.st.Load().rules.Policy
	p.Allow = slices.Clone(p.Allow)
	return p
}

// NewEpisode starts the per-episode counters (Requests, and
// Policy.MaxRequests) anew and drops the refusals not yet read.
func (t *Table) NewEpisode() {
	t.requests.Store(0)
	t.live.Store(0)
	t.refMu.Lock()
	t.refused = nil
	t.refMu.Unlock()
}

// Requests is how many requests the table routed this episode: the ones
// it let through, to its origins and elsewhere; a tunnel counts as one.
func (t *Table) Requests() int64 { return t.requests.Load() }

// admitLive counts a request to a live site against Policy.MaxRequests and
// reports whether it is within it.
func (t *Table) admitLive(st *state) bool {
	max := st.rules.MaxRequests
	return max <= 0 || t.live.Add(1) <= int64(max)
}

// Client is an HTTP client whose requests to the table's canonical origins
// go to their instances, as the browser's do, with no policy applied: it is
// for the server's own requests for the environment (signing in, grading).
// Requests to other hosts fail. Its timeout is 30s; it follows redirects
// as http.Client does.
func (t *Table) Client() *http.Client {
	return &http.Client{Transport: clientTransport{t}, Timeout: 30 * time.Second}
}

// clientTransport sends a request to its origin's instance.
type clientTransport struct{ t *Table }

func (c clientTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	st := c.t.st.Load()
	if req.URL.Scheme == "http" {
		if e := st.find(req.URL.Host); e != nil {
			return e.tr.RoundTrip(req)
		}
	}
	if req.Body != nil {
		req.Body.Close()
	}
	sites := "it has none"
	if len(st.list) > 0 {
		sites = strings.Join(st.list, ", ")
	}
	return nil, fmt.Errorf("%s is not one of this environment's sites (%s); its client reaches only those, so request a URL under one of them", req.URL.Redacted(), sites)
}

// newEntry makes the entry of one origin.
func (t *Table) newEntry(origin, host string, d Dialer) *entry {
	e := &entry{origin: origin, host: host, dial: d}
	e.tr = &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			c, err := d(ctx)
			if err != nil && ctx.Err() == nil {
				t.noteUnreachable(origin, err)
			}
			return c, err
		},
		MaxIdleConns:          64,
		MaxIdleConnsPerHost:   32,
		IdleConnTimeout:       60 * time.Second,
		DisableCompression:    true,
		ExpectContinueTimeout: time.Second,
	}
	e.proxy = &httputil.ReverseProxy{
		// The request goes out as the browser sent it: the same absolute
		// URL and Host, no X-Forwarded-* headers.
		Rewrite:        func(*httputil.ProxyRequest) {},
		ModifyResponse: t.modifyResponse,
		Transport:      e.tr,
		FlushInterval:  -1,
		BufferPool:     buffers,
		ErrorLog:       t.errLog,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return // the browser went away
			}
			t.log().Debug("site instance unreachable", zap.String("origin", e.origin), zap.Error(err))
			t.noteUnreachable(e.origin, err)
			writeError(w, http.StatusBadGateway, fmt.Sprintf("%s could not be reached: %v; this environment's instance of the site is not answering, so reset the environment or look at the instance's logs", e.origin, err))
		},
	}
	return e
}

// Close closes the connections t keeps open to its instances and to live
// sites, as when its environment ends or its instances are replaced. The
// table stays usable: a later request opens new connections.
func (t *Table) Close() {
	for _, e := range t.st.Load().byKey {
		e.tr.CloseIdleConnections()
	}
	t.web.CloseIdleConnections()
}

// log is the logger of the Router t was last bound through.
func (t *Table) log() *zap.Logger {
	if r := t.router.Load(); r != nil {
		return r.log
	}
	return zap.NewNop()
}

// logWriter sends what net/http/httputil logs to t's logger, at debug
// level.
type logWriter struct{ t *Table }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.log().Debug(strings.TrimSpace(string(p)))
	return len(p), nil
}

// bufferPool lends ReverseProxy its copy buffers.
type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, 32<<10)
}

func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }

// buffers is shared by every proxy: a buffer holds no state between uses.
var buffers = &bufferPool{}

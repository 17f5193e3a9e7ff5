package netroute

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Options configure a Router.
type Options struct {
	// Refuse lists host:port addresses refused under every policy and
	// every allowlist: the WebServ server's own listen address, Chromium's
	// DevTools port. Every route's own address is refused too.
	Refuse []string
}

// Router makes routes, one per browser context.
type Router struct {
	log *zap.Logger

	mu     sync.RWMutex
	refuse map[string]bool
	routes map[*Route]struct{}

	proxy *httputil.ReverseProxy
}

// openWeb sends requests to the open web, dialing only the address the
// policy checked for each (decisionKey in the request's context).
var openWeb = &http.Transport{
	Proxy: nil,
	DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		dec, _ := ctx.Value(decisionKey{}).(decision)
		if dec.addr == "" {
			return nil, errors.New("no address was checked for this request")
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", dec.addr)
	},
	MaxIdleConnsPerHost: 8,
	IdleConnTimeout:     30 * time.Second,
	DisableCompression:  true,
}

// New returns a router. log may be nil.
func New(log *zap.Logger, opts Options) *Router {
	if log == nil {
		log = zap.NewNop()
	}
	r := &Router{log: log, refuse: map[string]bool{}, routes: map[*Route]struct{}{}}
	for _, a := range opts.Refuse {
		r.AddRefused(a)
	}
	r.proxy = &httputil.ReverseProxy{
		// The request goes out as the browser sent it: same URL, same Host,
		// no X-Forwarded-* headers.
		Rewrite:       func(pr *httputil.ProxyRequest) {},
		Transport:     roundTripper(r.roundTrip),
		FlushInterval: -1, // stream: server-sent events arrive as sent
		ErrorLog:      nil,
		ErrorHandler: func(w http.ResponseWriter, req *http.Request, err error) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprintf(w, "WebServ could not reach %s: %v\n", req.URL.Host, err)
		},
	}
	return r
}

type decisionKey struct{}
type tableKey struct{}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// roundTrip sends a request the policy let through: to the instance of a
// table origin, or to the checked address on the open web.
func (r *Router) roundTrip(req *http.Request) (*http.Response, error) {
	if dec, _ := req.Context().Value(decisionKey{}).(decision); dec.dial != nil {
		return req.Context().Value(tableKey{}).(*Table).transport.RoundTrip(req)
	}
	return openWeb.RoundTrip(req)
}

// AddRefused refuses host:port to every route from now on (the server
// learns its own port once it listens).
func (r *Router) AddRefused(hostport string) {
	r.mu.Lock()
	r.refuse[hostPort(hostport, "80")] = true
	r.mu.Unlock()
}

func (r *Router) refused(hostport string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.refuse[hostport]
}

// Close closes every route.
func (r *Router) Close() error {
	r.mu.Lock()
	list := make([]*Route, 0, len(r.routes))
	for rt := range r.routes {
		list = append(list, rt)
	}
	r.mu.Unlock()
	for _, rt := range list {
		_ = rt.Close()
	}
	return nil
}

// Route is the proxy of one browser context: a loopback listener whose
// requests go where the table it is bound to says.
type Route struct {
	r     *Router
	l     net.Listener
	hs    *http.Server
	table atomic.Pointer[Table]
	once  sync.Once

	mu      sync.Mutex
	tunnels map[net.Conn]struct{}
}

// NewRoute opens a route on a loopback port. Until Bind it refuses
// everything.
func (r *Router) NewRoute() (*Route, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("open a browser route on loopback: %w", err)
	}
	rt := &Route{r: r, l: l, tunnels: map[net.Conn]struct{}{}}
	rt.hs = &http.Server{Handler: rt, ReadHeaderTimeout: time.Minute, ErrorLog: zap.NewStdLog(r.log)}
	r.mu.Lock()
	r.routes[rt] = struct{}{}
	r.refuse[l.Addr().String()] = true
	r.mu.Unlock()
	go func() { _ = rt.hs.Serve(l) }()
	return rt, nil
}

// ProxyURL is the route as a proxy server, "http://127.0.0.1:PORT".
func (rt *Route) ProxyURL() string { return "http://" + rt.l.Addr().String() }

// Addr is the route's listen address.
func (rt *Route) Addr() string { return rt.l.Addr().String() }

// Bind points the route at t (nil: refuse everything).
func (rt *Route) Bind(t *Table) { rt.table.Store(t) }

// Table is the table the route is bound to.
func (rt *Route) Table() *Table { return rt.table.Load() }

// Close stops the route and ends its connections.
func (rt *Route) Close() error {
	rt.once.Do(func() {
		rt.r.mu.Lock()
		delete(rt.r.routes, rt)
		delete(rt.r.refuse, rt.l.Addr().String())
		rt.r.mu.Unlock()
		_ = rt.hs.Close()
		rt.mu.Lock()
		for c := range rt.tunnels {
			_ = c.Close()
		}
		rt.mu.Unlock()
	})
	return nil
}

// isNavigation tells a document load from a subresource.
func isNavigation(r *http.Request) bool {
	if m := r.Header.Get("Sec-Fetch-Mode"); m != "" {
		return m == "navigate"
	}
	return r.Header.Get("Upgrade-Insecure-Requests") == "1" && strings.Contains(r.Header.Get("Accept"), "text/html")
}

// ServeHTTP proxies one request of the browser context.
func (rt *Route) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	t := rt.table.Load()
	if req.Method == http.MethodConnect {
		rt.connect(w, req, t)
		return
	}
	if !req.URL.IsAbs() || req.URL.Scheme != "http" {
		http.Error(w, "this is a WebServ browser route: it proxies absolute http:// requests and CONNECT", http.StatusBadRequest)
		return
	}
	if t == nil {
		refuse(w, isNavigation(req), "this browser context is not bound to an environment")
		return
	}
	hp := hostPort(req.URL.Host, "80")
	dec, err := t.decide(req.Context(), hp, rt.r.refused)
	if err == nil {
		err = t.checkRobots(req.Context(), req.URL, dec)
	}
	if err == nil {
		err = t.take(dec)
	}
	if err != nil {
		nav := isNavigation(req)
		t.refuse(Refusal{URL: req.URL.String(), Method: req.Method, Reason: err.Error(), Navigation: nav, Time: time.Now()})
		refuse(w, nav, err.Error())
		return
	}
	if dec.limits {
		release, err := t.limitsFor().acquire(req.Context(), req.URL.Hostname())
		if err != nil {
			http.Error(w, "request cancelled while waiting for its turn", http.StatusServiceUnavailable)
			return
		}
		defer release()
		if ua := t.Policy().UserAgent; ua != "" {
			req.Header.Set("User-Agent", ua)
		}
	}
	ctx := context.WithValue(context.WithValue(req.Context(), decisionKey{}, dec), tableKey{}, t)
	rt.r.proxy.ServeHTTP(w, req.WithContext(ctx))
}

// limitsFor is the table's current politeness state.
func (t *Table) limitsFor() *limiter {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.limits
}

// refuse answers a refused request: a navigation gets 204 (the browser stays
// on its page), anything else 403; both carry the reason.
func refuse(w http.ResponseWriter, navigation bool, reason string) {
	w.Header().Set("X-WebServ-Refused", reason)
	if navigation {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusForbidden)
	fmt.Fprintf(w, "refused by the environment's network policy: %s\n", reason)
}

// connect tunnels a CONNECT (https, or ws:// through the proxy) to a table
// origin's instance or, where the policy allows, to the host itself.
func (rt *Route) connect(w http.ResponseWriter, req *http.Request, t *Table) {
	hp := hostPort(req.Host, "443")
	shown := "https://" + req.Host + "/"
	if !strings.HasSuffix(hp, ":443") {
		shown = req.Host
	}
	var dec decision
	err := errors.New("this browser context is not bound to an environment")
	if t != nil {
		if dec, err = t.decide(req.Context(), hp, rt.r.refused); err == nil {
			err = t.take(dec)
		}
	}
	if err != nil {
		if t != nil {
			t.refuse(Refusal{URL: shown, Method: http.MethodConnect, Reason: err.Error(), Time: time.Now()})
		}
		w.Header().Set("X-WebServ-Refused", err.Error())
		http.Error(w, "refused by the environment's network policy: "+err.Error(), http.StatusForbidden)
		return
	}
	ctx, cancel := context.WithTimeout(req.Context(), 30*time.Second)
	defer cancel()
	var release = func() {}
	if dec.limits {
		if release, err = t.limitsFor().acquire(ctx, req.URL.Hostname()); err != nil {
			http.Error(w, "request cancelled while waiting for its turn", http.StatusServiceUnavailable)
			return
		}
	}
	defer release()
	var up net.Conn
	if dec.dial != nil {
		up, err = dec.dial(ctx)
	} else {
		var d net.Dialer
		up, err = d.DialContext(ctx, "tcp", dec.addr)
	}
	if err != nil {
		http.Error(w, fmt.Sprintf("WebServ could not reach %s: %v", req.Host, err), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "this route cannot tunnel", http.StatusInternalServerError)
		return
	}
	c, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		c.Close()
		up.Close()
		return
	}
	rt.track(c, up)
	defer rt.untrack(c, up)
	done := make(chan struct{}, 2)
	go func() {
		// Bytes the client sent after its CONNECT are in buf.
		_, _ = io.Copy(up, io.MultiReader(buf.Reader, c))
		closeWrite(up)
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(c, up)
		closeWrite(c)
		done <- struct{}{}
	}()
	<-done
	<-done
	c.Close()
	up.Close()
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

func (rt *Route) track(cs ...net.Conn) {
	rt.mu.Lock()
	for _, c := range cs {
		rt.tunnels[c] = struct{}{}
	}
	rt.mu.Unlock()
}

func (rt *Route) untrack(cs ...net.Conn) {
	rt.mu.Lock()
	for _, c := range cs {
		delete(rt.tunnels, c)
	}
	rt.mu.Unlock()
}

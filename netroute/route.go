package netroute

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/internal/traffic"
)

// Route is the HTTP proxy of one browser context: an HTTP/1.1 forward
// proxy on a loopback port of its own, bound to one environment's Table at
// a time.
type Route struct {
	router *Router
	ln     net.Listener
	srv    *http.Server
	addr   string // "127.0.0.1:PORT"
	port   string
	url    string // "http://127.0.0.1:PORT"
	table  atomic.Pointer[Table]
	log    traffic.Log // every request of the context, for settling

	mu     sync.Mutex
	long   map[*longLived]struct{} // tunnels and upgraded connections of the current binding
	closed bool

	failed  atomic.Pointer[error] // why the listener stopped serving by itself (health.go)
	stopped chan struct{}         // closed when the listener is no longer served
}

// longLived is a connection that outlives its request (a CONNECT tunnel, a
// WebSocket); stop ends it.
type longLived struct{ stop func() }

// ProxyURL is the proxy server to give the browser context, like
// "http://127.0.0.1:40123".
func (rt *Route) ProxyURL() string { return rt.url }

// Addr is the route's listen address, like "127.0.0.1:40123". The Router
// refuses every route's address, whatever a policy allows, so one
// context's proxy can never reach another's.
func (rt *Route) Addr() string { return rt.addr }

// Bind points the route at t from its next request on; nil refuses
// everything. Tunnels and WebSockets opened under the previous binding are
// closed, and so are the connections the previous table keeps to its
// instances.
func (rt *Route) Bind(t *Table) {
	if t != nil {
		t.router.Store(rt.router)
		t.route.Store(rt)
	}
	rt.mu.Lock()
	prev := rt.table.Swap(t)
	if prev == t {
		rt.mu.Unlock()
		return
	}
	long := rt.long
	rt.long = map[*longLived]struct{}{}
	rt.mu.Unlock()
	for l := range long {
		l.stop()
	}
	if prev != nil {
		prev.Close()
	}
}

// Traffic is the log of the context's requests: when each started, got
// its response headers and ended. WebSocket upgrades and CONNECT tunnels
// (long-lived, opaque) are not in it.
func (rt *Route) Traffic() *traffic.Log { return &rt.log }

// Table is the table the route is bound to, or nil.
func (rt *Route) Table() *Table { return rt.table.Load() }

// Close stops the route: its listener, its connections, its tunnels.
func (rt *Route) Close() error {
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		return nil
	}
	rt.closed = true
	long := rt.long
	rt.long = nil
	rt.mu.Unlock()
	err := rt.srv.Close()
	// Serve may not have taken the listener over yet.
	if lerr := rt.ln.Close(); err == nil && !errors.Is(lerr, net.ErrClosed) {
		err = lerr
	}
	for l := range long {
		l.stop()
	}
	rt.router.forget(rt)
	rt.router.log.Debug("route closed", zap.String("addr", rt.addr))
	if err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("close the browser context's proxy %s: %w", rt.addr, err)
	}
	return nil
}

// track registers a connection of t's binding that outlives its request.
// It fails when the route is no longer bound to t (or is closed); the
// caller then stops the connection itself.
func (rt *Route) track(t *Table, stop func()) (*longLived, bool) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.closed || rt.table.Load() != t {
		return nil, false
	}
	l := &longLived{stop: stop}
	rt.long[l] = struct{}{}
	return l, true
}

// untrack drops a connection that ended by itself.
func (rt *Route) untrack(l *longLived) {
	rt.mu.Lock()
	delete(rt.long, l)
	rt.mu.Unlock()
}

// serve is the proxy's handler.
func (rt *Route) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodConnect && !isUpgrade(req.Header) {
		r := rt.log.Begin(req.Method, req.URL.String(), req.Header)
		defer rt.log.End(r)
		w = &loggedWriter{ResponseWriter: w, log: &rt.log, req: r}
	}
	t := rt.table.Load()
	if t != nil {
		t.saw(req)
	}
	switch {
	case t == nil:
		writeRefused(w, http.StatusForbidden, reasonUnbound)
	case req.Method == http.MethodConnect:
		rt.connect(w, req, t)
	default:
		rt.forward(w, req, t)
	}
}

// loggedWriter notes in the traffic log when a response's headers go out.
type loggedWriter struct {
	http.ResponseWriter
	log *traffic.Log
	req *traffic.Request
}

func (w *loggedWriter) WriteHeader(code int) {
	if code >= 200 {
		w.log.Head(w.req, w.Header().Get("Content-Type"))
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *loggedWriter) Write(p []byte) (int, error) {
	w.log.Head(w.req, w.Header().Get("Content-Type"))
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection (flushes).
func (w *loggedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// serveLong serves an upgrade request (a WebSocket) through h so that
// rebinding or closing the route ends the upgraded connection.
func (rt *Route) serveLong(w http.ResponseWriter, req *http.Request, t *Table, h http.Handler) {
	ctx, cancel := context.WithCancel(req.Context())
	defer cancel()
	l, ok := rt.track(t, cancel)
	if !ok {
		writeError(w, http.StatusServiceUnavailable, "the browser context was bound to another environment meanwhile; retry")
		return
	}
	defer rt.untrack(l)
	h.ServeHTTP(w, req.WithContext(ctx))
}

package netroute

import (
	"errors"
	"fmt"
	"net"
	"net/http"

	"go.uber.org/zap"
)

// An environment whose instance died sees it first here: its requests
// fail to reach the instance. A table remembers the last such failure so
// its server can look at the instance's health before handing out an
// observation of an error page; a route remembers that its listener
// stopped, so an environment whose browser context lost its proxy is told
// so rather than shown the browser's proxy error.

// noteUnreachable records that origin's instance could not be reached.
func (t *Table) noteUnreachable(origin string, err error) {
	msg := fmt.Sprintf("%s: %v", origin, err)
	t.unreach.Store(&msg)
}

// TakeUnreachable returns the last failure to reach one of t's instances
// since the previous call (a dial that failed, a response that never
// came), and forgets it; "" when there was none.
func (t *Table) TakeUnreachable() string {
	if p := t.unreach.Swap(nil); p != nil {
		return *p
	}
	return ""
}

// Route is the route last bound to t (nil when none was).
func (t *Table) Route() *Route { return t.route.Load() }

// RouteErr says why the route bound to t no longer carries its browser
// context's requests (closed, or its listener failed); nil while it does
// or when no route is bound to t.
func (t *Table) RouteErr() error {
	rt := t.route.Load()
	if rt == nil || rt.table.Load() != t {
		return nil
	}
	return rt.Err()
}

// Err is nil while the route serves, else why it does not.
func (rt *Route) Err() error {
	if p := rt.failed.Load(); p != nil {
		return *p
	}
	rt.mu.Lock()
	closed := rt.closed
	rt.mu.Unlock()
	if closed {
		return fmt.Errorf("the browser context's proxy %s is closed", rt.addr)
	}
	return nil
}

// serveOn serves the route's listener and records why it stopped when
// nobody closed it.
func (rt *Route) serveOn(ln net.Listener) {
	defer close(rt.stopped)
	err := rt.srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return
	}
	rt.mu.Lock()
	closed := rt.closed
	rt.mu.Unlock()
	if closed {
		return
	}
	ferr := fmt.Errorf("the browser context's proxy %s stopped serving: %v", rt.addr, err)
	rt.failed.Store(&ferr)
	rt.router.log.Warn("route stopped serving", zap.String("addr", rt.addr), zap.Error(err))
}

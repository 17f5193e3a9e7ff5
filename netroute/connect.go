package netroute

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"
)

// connect opens a CONNECT tunnel: to the instance for a table origin's
// host:port (Chromium tunnels ws:// through an HTTP proxy), to the checked
// address of the real host otherwise. What goes through a tunnel (https)
// is opaque: politeness counts the tunnel as one request and holds its
// concurrency slot for the tunnel's life.
func (rt *Route) connect(w http.ResponseWriter, req *http.Request, t *Table) {
	h, port, err := net.SplitHostPort(req.Host)
	if err != nil || port == "" {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("CONNECT %s: give the tunnel's end as host:port", req.Host))
		return
	}
	host := normHost(h)
	ctx := req.Context()
	st := t.st.Load()
	d := st.decide(rt.router, "", host, port)
	var up net.Conn
	if d.entry != nil {
		up, err = d.entry.dial(ctx)
		if err != nil {
			t.log().Debug("site instance unreachable", zap.String("origin", d.entry.origin), zap.Error(err))
			writeError(w, http.StatusBadGateway, fmt.Sprintf("%s could not be reached: %v; this environment's instance of the site is not answering, so reset the environment or look at the instance's logs", d.entry.origin, err))
			return
		}
	} else {
		if d.reason != "" {
			t.refuse(w, req, req.Host, d.reason)
			return
		}
		if !t.admitLive(st) {
			t.refuse(w, req, req.Host, maxRequestsReason(st.rules.MaxRequests))
			return
		}
		g, err := t.polite.Load().acquire(ctx, host)
		if err != nil {
			return // the browser gave up waiting
		}
		defer g.release()
		ips, err := t.resolve(ctx, rt.router, host, port)
		var re *RefusalError
		switch {
		case errors.As(err, &re):
			t.refuse(w, req, req.Host, re.Reason)
			return
		case err != nil:
			writeError(w, http.StatusBadGateway, fmt.Sprintf("%s could not be reached: %v", req.Host, err))
			return
		}
		if up, err = dialFirst(ctx, host, ips, port); err != nil {
			writeError(w, http.StatusBadGateway, fmt.Sprintf("%s could not be reached: %v; check the address, or whether the site is up", req.Host, err))
			return
		}
	}
	t.requests.Add(1)
	rt.tunnel(w, t, up)
}

// tunnel answers the CONNECT with 200 and copies bytes both ways between
// the browser and up until either side closes, the route is bound
// elsewhere, or it closes.
func (rt *Route) tunnel(w http.ResponseWriter, t *Table, up net.Conn) {
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		up.Close()
		writeError(w, http.StatusBadGateway, fmt.Sprintf("open the tunnel: %v; the proxy connection cannot be taken over, retry", err))
		return
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			conn.Close()
			up.Close()
		})
	}
	l, ok := rt.track(t, stop)
	if !ok {
		stop()
		return
	}
	defer rt.untrack(l)
	conn.SetDeadline(time.Time{})
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		stop()
		return
	}
	var client io.Reader = conn
	if n := brw.Reader.Buffered(); n > 0 {
		client = io.MultiReader(io.LimitReader(brw.Reader, int64(n)), conn)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(up, client)
		stop()
	}()
	io.Copy(conn, up)
	stop()
	<-done
}

// writeError answers a request the route could not serve (not a refusal)
// with status and msg as text.
func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	io.WriteString(w, msg+"\n")
}

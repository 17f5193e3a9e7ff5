package netroute

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/temoto/robotstxt"
)

// robots keeps the robots.txt of each host a live-site environment visits,
// fetched once per host and table.
type robots struct {
	mu    sync.Mutex
	hosts map[string]*robotsEntry // by scheme://host:port
}

type robotsEntry struct {
	ready chan struct{}
	data  *robotstxt.RobotsData
}

// allowed reports whether u may be requested under the host's robots.txt
// for agent. A robots.txt that cannot be fetched allows everything; a
// server error disallows everything (robotstxt.FromStatusAndBytes).
func (r *robots) allowed(ctx context.Context, get func(context.Context, string) (int, []byte, error), u *url.URL, agent string) bool {
	key := u.Scheme + "://" + u.Host
	r.mu.Lock()
	if r.hosts == nil {
		r.hosts = map[string]*robotsEntry{}
	}
	e, ok := r.hosts[key]
	if !ok {
		e = &robotsEntry{ready: make(chan struct{})}
		r.hosts[key] = e
	}
	r.mu.Unlock()
	if !ok {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		status, body, err := get(fctx, key+"/robots.txt")
		cancel()
		if err == nil {
			e.data, _ = robotstxt.FromStatusAndBytes(status, body)
		}
		close(e.ready)
	}
	select {
	case <-e.ready:
	case <-ctx.Done():
		return false
	}
	if e.data == nil {
		return true
	}
	if agent == "" {
		agent = "*"
	}
	return e.data.TestAgent(u.RequestURI(), agent)
}

// checkRobots refuses u when the policy respects robots.txt and the host's
// disallows it.
func (t *Table) checkRobots(ctx context.Context, u *url.URL, dec decision) error {
	p := t.Policy()
	if !p.Robots || !dec.limits {
		return nil
	}
	get := func(ctx context.Context, raw string) (int, []byte, error) {
		req, err := http.NewRequestWithContext(context.WithValue(ctx, decisionKey{}, dec), http.MethodGet, raw, nil)
		if err != nil {
			return 0, nil, err
		}
		if p.UserAgent != "" {
			req.Header.Set("User-Agent", p.UserAgent)
		}
		resp, err := openWeb.RoundTrip(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, 512<<10))
		return resp.StatusCode, b, err
	}
	if !t.robots.allowed(ctx, get, u, p.UserAgent) {
		return fmt.Errorf("%s's robots.txt disallows %s for this agent", u.Host, u.Path)
	}
	return nil
}

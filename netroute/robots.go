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

// robots keeps the robots.txt of each live host a table's environment
// visits, fetched once per host.
type robots struct {
	mu    sync.Mutex
	hosts map[string]*robotsFile // by "scheme://host:port"
}

// robotsFile is one host's robots.txt; ready closes once it is fetched.
type robotsFile struct {
	ready chan struct{}
	data  *robotstxt.RobotsData // nil: allows everything
}

// maxRobots bounds the hosts a table remembers the robots.txt of.
const maxRobots = 1024

// disallows says why u's host's robots.txt disallows u for agent, or ""
// when it allows it. A robots.txt that cannot be fetched, or is missing
// (4xx), allows everything; a server error (5xx) disallows everything.
func (r *robots) disallows(ctx context.Context, tr http.RoundTripper, u *url.URL, agent string) string {
	key := u.Scheme + "://" + u.Host
	r.mu.Lock()
	if r.hosts == nil || len(r.hosts) >= maxRobots {
		r.hosts = map[string]*robotsFile{}
	}
	f, ok := r.hosts[key]
	if !ok {
		f = &robotsFile{ready: make(chan struct{})}
		r.hosts[key] = f
	}
	r.mu.Unlock()
	if !ok {
		f.data = fetchRobots(ctx, tr, key+"/robots.txt", agent)
		close(f.ready)
	}
	select {
	case <-f.ready:
	case <-ctx.Done():
		return "the request ended while the host's robots.txt was being read"
	}
	if agent == "" {
		agent = "*"
	}
	if f.data == nil || f.data.TestAgent(u.RequestURI(), agent) {
		return ""
	}
	return fmt.Sprintf("%s's robots.txt disallows %s for this agent, and the policy respects robots.txt; open another page", u.Host, u.EscapedPath())
}

// fetchRobots gets and parses a robots.txt through tr, in 5s at most
// (without ctx's cancellation: other requests wait for the same file).
func fetchRobots(ctx context.Context, tr http.RoundTripper, rawURL, agent string) *robotstxt.RobotsData {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil
	}
	if agent != "" {
		req.Header.Set("User-Agent", agent)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 512<<10))
	if err != nil {
		return nil
	}
	data, err := robotstxt.FromStatusAndBytes(resp.StatusCode, body)
	if err != nil {
		return nil
	}
	return data
}

package netroute

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// liveSite is a stand-in for a live site: it counts the requests it gets
// and the most it had in flight at once.
type liveSite struct {
	*httptest.Server
	got, inFlight, maxInFlight atomic.Int64
	ua                         atomic.Value
}

func newLiveSite(t *testing.T, delay time.Duration) *liveSite {
	s := &liveSite{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.got.Add(1)
		s.ua.Store(r.UserAgent())
		n := s.inFlight.Add(1)
		for {
			m := s.maxInFlight.Load()
			if n <= m || s.maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(delay)
		s.inFlight.Add(-1)
	}))
	t.Cleanup(s.Close)
	return s
}

func TestMaxRequestsPerEpisode(t *testing.T) {
	live := newLiveSite(t, 0)
	tb := tableWith(t, Policy{Open: true, Allow: []string{live.URL}, MaxRequests: 3}, site(t, "own"))
	c := proxyClient(t, newRoute(t, newRouter(t, Options{}), tb))
	var refused int
	for i := 0; i < 5; i++ {
		get(t, c, shop+"/") // the environment's own site is not counted
		got := get(t, c, live.URL+"/")
		if got.status == http.StatusForbidden {
			refused++
			if !strings.Contains(got.body, "max_requests") {
				t.Errorf("refusal past MaxRequests says %q", got.body)
			}
		}
	}
	if live.got.Load() != 3 || refused != 2 {
		t.Errorf("the live site got %d requests and %d were refused; want 3 and 2", live.got.Load(), refused)
	}
	if tb.Requests() != 8 {
		t.Errorf("Requests() = %d; want 8 (5 to the own site, 3 to the live one)", tb.Requests())
	}
	tb.NewEpisode()
	if got := get(t, c, live.URL+"/"); got.status != 200 || live.got.Load() != 4 {
		t.Errorf("after NewEpisode: %d, the site got %d", got.status, live.got.Load())
	}
}

func TestRatePerHost(t *testing.T) {
	live := newLiveSite(t, 0)
	// 20 per second, burst 20: 30 requests need at least half a second.
	tb := tableWith(t, Policy{Open: true, Allow: []string{live.URL}, RatePerHost: 20}, site(t, "own"))
	c := proxyClient(t, newRoute(t, newRouter(t, Options{}), tb))
	start := time.Now()
	for i := 0; i < 30; i++ {
		get(t, c, live.URL+"/")
	}
	if d := time.Since(start); d < 450*time.Millisecond {
		t.Errorf("30 requests at 20/s (burst 20) took %v; want at least 0.5s", d)
	}
	if live.got.Load() != 30 {
		t.Errorf("the site got %d requests, want 30", live.got.Load())
	}
	// The environment's own site is not rate limited: at one request per
	// hundred seconds, four would take five minutes, which no host is slow
	// enough to take for four local requests.
	tb.SetPolicy(Policy{Open: true, Allow: []string{live.URL}, RatePerHost: 0.01})
	start = time.Now()
	for i := 0; i < 4; i++ {
		get(t, c, shop+"/")
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("4 requests to the own site took %v; it must not be rate limited", d)
	}
}

func TestConcurrencyPerHost(t *testing.T) {
	live := newLiveSite(t, 40*time.Millisecond)
	tb := NewTable(Policy{Open: true, Allow: []string{live.URL}, ConcurrencyPerHost: 2})
	c := proxyClient(t, newRoute(t, newRouter(t, Options{}), tb))
	var wg sync.WaitGroup
	var ok atomic.Int64
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.Get(live.URL + "/")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					ok.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 8 || live.maxInFlight.Load() != 2 {
		t.Errorf("%d of 8 answered, at most %d in flight; want 8 answered, 2 in flight", ok.Load(), live.maxInFlight.Load())
	}
}

func TestUserAgentReplacedOnLiveSitesOnly(t *testing.T) {
	live := newLiveSite(t, 0)
	seen := make(chan string, 1)
	own := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen <- r.UserAgent() }))
	defer own.Close()
	tb := tableWith(t, Policy{Open: true, Allow: []string{live.URL}, UserAgent: "WebServ-research (+https://example.org/bot)"}, own)
	c := proxyClient(t, newRoute(t, newRouter(t, Options{}), tb))
	get(t, c, live.URL+"/", "User-Agent", "Chromium/140")
	if ua := live.ua.Load(); ua != "WebServ-research (+https://example.org/bot)" {
		t.Errorf("the live site saw User-Agent %q", ua)
	}
	get(t, c, shop+"/", "User-Agent", "Chromium/140")
	if ua := <-seen; ua != "Chromium/140" {
		t.Errorf("the own site saw User-Agent %q; want the browser's", ua)
	}
}

func TestSetPolicyKeepsPolitenessStateWhenLimitsAreUnchanged(t *testing.T) {
	tb := NewTable(Policy{Open: true, RatePerHost: 5})
	p := tb.polite.Load()
	tb.SetPolicy(Policy{Open: true, RatePerHost: 5, Allow: []string{"a.test"}})
	if tb.polite.Load() != p {
		t.Error("the same limits started a new per-host state: resetting a policy would forgive its rate")
	}
	tb.SetPolicy(Policy{Open: true, RatePerHost: 1})
	if tb.polite.Load() == p {
		t.Error("new limits kept the old per-host state")
	}
	tb.SetPolicy(Policy{Open: true})
	if tb.polite.Load() != nil {
		t.Error("no limits, yet a per-host state")
	}
}

// DenySubmit: live hosts get GETs, but a POST (a form submission) is
// refused and reported, unless SubmitAllow names its host; the
// environment's own site is never subject to it.
func TestDenySubmitRefusesWritesToLiveHosts(t *testing.T) {
	live, allowed := newLiveSite(t, 0), newLiveSite(t, 0)
	p := Policy{Open: true, Allow: []string{live.URL, allowed.URL}, DenySubmit: true, SubmitAllow: []string{hostPortOf(allowed.Server)}}
	tb := tableWith(t, p, site(t, "own"))
	c := proxyClient(t, newRoute(t, newRouter(t, Options{}), tb))
	post := func(u string) response {
		t.Helper()
		resp, err := c.Post(u, "application/x-www-form-urlencoded", strings.NewReader("q=1"))
		if err != nil {
			t.Fatalf("POST %s: %v", u, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return response{status: resp.StatusCode, body: string(b)}
	}
	if got := get(t, c, live.URL+"/"); got.status != 200 {
		t.Errorf("GET to a live host: %d", got.status)
	}
	got := post(live.URL + "/order")
	if got.status != http.StatusForbidden || !strings.Contains(got.body, "deny_submit: a POST to "+hostPortOf(live.Server)) {
		t.Errorf("POST to a live host: %d %q; want it refused by deny_submit", got.status, got.body)
	}
	if live.got.Load() != 1 {
		t.Errorf("the live site got %d requests; want 1 (the GET)", live.got.Load())
	}
	if got := post(allowed.URL + "/order"); got.status != 200 || allowed.got.Load() != 1 {
		t.Errorf("POST to a submit_allow host: %d, it got %d", got.status, allowed.got.Load())
	}
	if got := post(shop + "/cart"); got.status != 200 || !strings.HasPrefix(got.body, "own ") {
		t.Errorf("POST to the environment's own site: %d %q", got.status, got.body)
	}
	refused := tb.Refused()
	if len(refused) != 1 || refused[0].Method != http.MethodPost || refused[0].URL != live.URL+"/order" {
		t.Errorf("refusals = %+v; want the one POST", refused)
	}
}

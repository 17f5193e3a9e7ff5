package suites

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/netroute"
)

// RouteOptions configure the route suite: the same measurements with every
// browser context sent straight to the shop (direct) and through a
// netroute.Route per context (routed), interleaved in one run.
type RouteOptions struct {
	Shop ShopOptions
	// Requests is how many small GETs each configuration makes with a Go
	// HTTP client (full: 2000; smoke: 200).
	Requests int
	// Rounds of the page-load and step measurements, each configuration
	// once per round (full: 5 and 8 episodes; smoke: 1).
	Rounds int
	// N environments step at once for the throughput (full: 16; smoke: 2).
	N int
	// Run is the measured stepping time per configuration, split into
	// rounds of at most 5 s that alternate (full: 20 s; smoke: 2 s).
	Run time.Duration
	// IdleMs is the idle window of the step and throughput measurements
	// (500).
	IdleMs  int
	Out     string
	Command string
	Smoke   bool
	Log     io.Writer
}

// routeOrigin is the shop's canonical origin in the routed configuration.
const routeOrigin = "http://shop.webserv.test"

// routePageIdleMs is the idle window of the page-load environments: the
// navigation timing does not depend on it, the run's length does.
const routePageIdleMs = 100

// routeAsset is what the per-request measurement GETs: a small static file
// of the shop (no database work, so the shop adds little noise).
const routeAsset = "/static/shop.css"

// routeStepScript is the step measurement's episode: goto and click steps
// on the shop (navigations, the kind of step a proxy could slow).
var routeStepScript = []struct{ typ, action string }{
	{"goto", `goto("{base}/")`},
	{"click", `click("categories.clothing-2")`},
	{"click", `click("pages.2")`},
	{"goto", `goto("{base}/search?q=tent")`},
	{"click", `click("cart")`},
	{"goto", `goto("{base}/page/shipping")`},
}

// RouteRow is one line of the headline table.
type RouteRow struct {
	Metric string  `json:"metric"`
	Unit   string  `json:"unit"`
	Direct float64 `json:"direct"`
	Routed float64 `json:"routed"`
	// Ratio is routed / direct.
	Ratio  float64 `json:"ratio"`
	Target string  `json:"target"`
	Met    bool    `json:"met"`
}

// RoutePage is one shop page the page-load measurement opens.
type RoutePage struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// RoutePageSample is one page load, read from the page's navigation
// timing entry.
type RoutePageSample struct {
	Config string `json:"config"`
	Round  int    `json:"round"`
	Page   string `json:"page"`
	// Cold loads open the page with a reset (a fresh browser context:
	// empty cache, new connections, in the routed case a new route);
	// warm loads goto it again in that context.
	Cold bool `json:"cold"`
	// LoadMs is loadEventEnd - startTime; ResponseMs responseEnd -
	// startTime (the document's bytes in).
	LoadMs     float64 `json:"load_ms"`
	ResponseMs float64 `json:"response_ms"`
}

// RoutePageRow summarises one page in one mode.
type RoutePageRow struct {
	Page   string `json:"page"`
	Cold   bool   `json:"cold"`
	Direct Stats  `json:"direct_load_ms"`
	Routed Stats  `json:"routed_load_ms"`
}

// RouteStepSample is one step of the step measurement.
type RouteStepSample struct {
	Config string `json:"config"`
	Round  int    `json:"round"`
	StepSample
}

// RouteThroughput is one configuration's stepping round.
type RouteThroughput struct {
	Config      string  `json:"config"`
	Round       int     `json:"round"`
	Seconds     float64 `json:"seconds"`
	Steps       int     `json:"steps"`
	StepsPerSec float64 `json:"steps_per_s"`
	Latency     Stats   `json:"step_ms"`
	CPUPercent  float64 `json:"cpu_percent"`
	Errors      int     `json:"errors"`
}

// RouteReport is the route suite's output.
type RouteReport struct {
	Header
	Requests int `json:"requests"`
	// AssetBytes is the size of what each request fetches.
	AssetBytes int64   `json:"asset_bytes"`
	Rounds     int     `json:"rounds"`
	N          int     `json:"n"`
	RunSec     float64 `json:"run_seconds_per_config"`
	IdleMs     int     `json:"idle_ms"`
	Layout     string  `json:"layout"`
	// LoadAvg is /proc/loadavg when the suite started and when it ended.
	LoadAvg [2]string  `json:"loadavg"`
	Rows    []RouteRow `json:"rows"`
	// RequestDirect and RequestRouted are the per-request latencies in ms.
	RequestDirect Stats             `json:"request_direct_ms"`
	RequestRouted Stats             `json:"request_routed_ms"`
	Pages         []RoutePage       `json:"pages"`
	PageRows      []RoutePageRow    `json:"page_rows"`
	PageSamples   []RoutePageSample `json:"page_samples"`
	StepSamples   []RouteStepSample `json:"step_samples"`
	Throughput    []RouteThroughput `json:"throughput"`
	// Refused counts the requests the routed environments' tables refused
	// (the shop needs none outside its origin, so this should be 0).
	Refused int `json:"refused"`
}

// routeNetwork is an environment's table as envcore sees it (the
// server's tableNetwork).
type routeNetwork struct{ t *netroute.Table }

func (n routeNetwork) Bind(p envcore.ContextProxy) {
	if r, ok := p.(*netroute.Route); ok {
		r.Bind(n.t)
	}
}

func (n routeNetwork) Check(rawURL string) error { return n.t.Check(rawURL) }

// routeConf is one configuration: its browser and how an environment of it
// reaches an instance.
type routeConf struct {
	name   string
	b      *envcore.Browser
	routed bool

	mu     sync.Mutex
	tables []*netroute.Table
}

// env makes an environment that reaches in, and the base URL it opens.
func (c *routeConf) env(cfg envcore.Config, in hosting.Instance) (*envcore.Env, string, error) {
	env := c.b.NewEnv(cfg)
	if !c.routed {
		return env, in.URL(), nil
	}
	u, err := url.Parse(in.URL())
	if err != nil {
		return nil, "", err
	}
	t := netroute.NewTable(netroute.Policy{})
	if err := t.Set(routeOrigin, netroute.TCPDialer(u.Host)); err != nil {
		return nil, "", err
	}
	if err := env.SetNetwork(routeNetwork{t}); err != nil {
		return nil, "", err
	}
	c.mu.Lock()
	c.tables = append(c.tables, t)
	c.mu.Unlock()
	return env, routeOrigin, nil
}

// refused counts what the configuration's tables refused so far.
func (c *routeConf) refused() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.tables {
		n += len(t.Refused())
	}
	return n
}

// Route runs the route suite.
func Route(ctx context.Context, o RouteOptions) (*RouteReport, error) {
	def := func(v *int, full, smoke int) {
		if *v <= 0 {
			*v = full
			if o.Smoke {
				*v = smoke
			}
		}
	}
	def(&o.Requests, 2000, 200)
	def(&o.Rounds, 5, 1)
	def(&o.N, 16, 2)
	def(&o.IdleMs, 500, 100)
	if o.Run <= 0 {
		o.Run = 20 * time.Second
		if o.Smoke {
			o.Run = 2 * time.Second
		}
	}
	stepRounds := o.Rounds
	if !o.Smoke {
		stepRounds = o.Rounds * 8 / 5 // 8 episodes per configuration at the full 5 rounds
	}
	rep := &RouteReport{Header: newHeader("route", o.Command, o.Smoke), Requests: o.Requests, Rounds: o.Rounds, N: o.N,
		RunSec: o.Run.Seconds(), IdleMs: o.IdleMs}
	rep.LoadAvg[0] = loadAvg()
	logf := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format+"\n", args...)
		}
	}

	local, site, err := shopSite(ctx, o.Shop)
	if err != nil {
		return nil, err
	}
	defer local.Close(context.Background())
	in, err := local.Start(ctx, site)
	if err != nil {
		return nil, err
	}
	defer func() { _ = in.Stop(context.Background()) }()
	pages, err := routePages(ctx, in.URL())
	if err != nil {
		return nil, err
	}
	rep.Pages = pages

	router := netroute.New(nil, netroute.Options{})
	defer router.Close()
	direct, err := envcore.Launch(ctx, zap.NewNop(), envcore.BrowserOptions{})
	if err != nil {
		return nil, err
	}
	defer direct.Close()
	routed, err := envcore.Launch(ctx, zap.NewNop(), envcore.BrowserOptions{Proxy: func() (envcore.ContextProxy, error) { return router.NewRoute() }})
	if err != nil {
		return nil, err
	}
	defer routed.Close()
	confs := []*routeConf{{name: "direct", b: direct}, {name: "routed", b: routed, routed: true}}

	// 1. Per request: a Go client, keep-alive, straight or through a route.
	logf("route suite: %d GETs of %s per configuration", o.Requests, routeAsset)
	d, r, size, err := routeRequests(ctx, router, in.URL(), o.Requests)
	if err != nil {
		return nil, fmt.Errorf("per-request: %w", err)
	}
	rep.RequestDirect, rep.RequestRouted, rep.AssetBytes = stats(d), stats(r), size

	// 2 and 3. Page loads and steps: one environment per configuration
	// for each, on the one shared instance.
	type pair struct {
		env  *envcore.Env
		base string
	}
	pageEnvs, stepEnvs := make([]pair, 2), make([]pair, 2)
	for i, c := range confs {
		e, base, err := c.env(envcore.Config{IdleWindow: routePageIdleMs * time.Millisecond}, in)
		if err != nil {
			return nil, err
		}
		defer e.Close()
		pageEnvs[i] = pair{e, base}
		e, base, err = c.env(envcore.Config{IdleWindow: time.Duration(o.IdleMs) * time.Millisecond}, in)
		if err != nil {
			return nil, err
		}
		defer e.Close()
		stepEnvs[i] = pair{e, base}
		// Warm-up, not measured: the first loads of a fresh browser.
		for _, p := range []pair{pageEnvs[i], stepEnvs[i]} {
			if _, info, err := p.env.Reset(ctx, p.base+"/"); err != nil {
				return nil, fmt.Errorf("%s warm-up: %w", c.name, err)
			} else if info.ActionError != "" {
				return nil, fmt.Errorf("%s warm-up: %s", c.name, info.ActionError)
			}
		}
	}
	bar := progress(o.Log, 2*o.Rounds*len(pages), "route suite: page loads")
	for round := 0; round < o.Rounds; round++ {
		for i, c := range confs {
			for _, pg := range pages {
				for _, cold := range []bool{true, false} {
					s, err := routePageLoad(ctx, pageEnvs[i].env, pageEnvs[i].base+pg.Path, cold)
					if err != nil {
						return nil, fmt.Errorf("%s page load %s: %w", c.name, pg.Path, err)
					}
					s.Config, s.Round, s.Page = c.name, round, pg.Name
					rep.PageSamples = append(rep.PageSamples, s)
				}
				_ = bar.Add(1)
			}
		}
	}
	bar = progress(o.Log, 2*stepRounds*len(routeStepScript), "route suite: steps")
	for round := 0; round < stepRounds; round++ {
		for i, c := range confs {
			env, base := stepEnvs[i].env, stepEnvs[i].base
			if _, _, err := env.Reset(ctx, ""); err != nil {
				return nil, err
			}
			for _, s := range routeStepScript {
				act := strings.ReplaceAll(s.action, "{base}", base)
				t0 := time.Now()
				obs, info, err := env.StepText(ctx, act)
				if err != nil {
					return nil, fmt.Errorf("%s %s: %w", c.name, act, err)
				}
				if info.ActionError != "" {
					return nil, fmt.Errorf("%s %s: %s", c.name, act, info.ActionError)
				}
				rep.StepSamples = append(rep.StepSamples, RouteStepSample{Config: c.name, Round: round, StepSample: StepSample{
					IdleMs: o.IdleMs, Type: s.typ, Action: act, ActionMs: ms(info.Action), SettleMs: ms(info.Settle),
					ExtractMs: ms(info.Extract), TotalMs: ms(time.Since(t0)), Settled: info.Settled, HTMLBytes: len(obs.HTML),
					Targets: len(obs.Clickable) + len(obs.Inputs) + len(obs.Selects)}})
				_ = bar.Add(1)
			}
		}
	}
	for _, p := range append(pageEnvs, stepEnvs...) {
		_ = p.env.Close()
	}

	// 4. Steps per second with N environments at once, each with its own
	// shop instance (shared by the two configurations, which never step
	// at the same time).
	tp, err := routeThroughput(ctx, local, site, confs, o)
	if err != nil {
		return nil, fmt.Errorf("throughput: %w", err)
	}
	rep.Throughput = tp
	for _, c := range confs {
		rep.Refused += c.refused()
	}
	rep.LoadAvg[1] = loadAvg()
	rep.Layout = fmt.Sprintf("Two Chromium processes, one per configuration, alive for the whole run. The per-request, page-load and step measurements share one shop instance; the throughput gives each of the N environments its own instance (environment i of both configurations uses instance i). Direct environments open the instance's loopback URL; routed ones open %s through a netroute.Route per browser context, bound to a netroute.Table per environment.", routeOrigin)

	rep.PageRows = routePageRows(pages, rep.PageSamples)
	rep.Rows = routeRows(rep)
	var md strings.Builder
	md.WriteString("| metric | direct | routed | ratio routed/direct | target | met? |\n|---|---|---|---|---|---|\n")
	for _, r := range rep.Rows {
		met := "yes"
		if !r.Met {
			met = "**no**"
		}
		if r.Target == "" {
			met = ""
		}
		fmt.Fprintf(&md, "| %s (%s) | %s | %s | %.3f | %s | %s |\n", r.Metric, r.Unit, num(r.Direct), num(r.Routed), r.Ratio, r.Target, met)
	}
	fmt.Fprintf(&md, "\nPer request: %d GETs of the shop's `%s` (%s) per configuration with a Go HTTP client (keep-alive), straight to the instance or through a netroute.Route (`Transport.Proxy` = the route), in alternating blocks of 100 after 100 warm-up requests each.\n", o.Requests, routeAsset, fmt.Sprintf("%d bytes", rep.AssetBytes))
	fmt.Fprintf(&md, "Page loads: loadEventEnd - startTime of each page's navigation timing entry; cold = a reset onto the page (fresh browser context), warm = a goto of it in that context; %d rounds, direct then routed in each. Step overhead: total minus the %d ms idle window of every goto and click step of `%s`, %d episodes per configuration, alternating. Throughput: N = %d environments running `%s` in a loop, %s per configuration in alternating rounds of %s.\n",
		o.Rounds, o.IdleMs, routeScriptText(), stepRounds, o.N, strings.Join(scalePolicy, "; "), o.Run, routeRoundLen(o.Run))
	md.WriteString("\n" + rep.Layout + "\n")
	fmt.Fprintf(&md, "\nLoad average at the start: %s; at the end: %s. Requests the routed tables refused: %d.\n", rep.LoadAvg[0], rep.LoadAvg[1], rep.Refused)
	md.WriteString("\n### Page loads (load ms p50, n per cell in the JSON)\n\n| page | path | cold direct | cold routed | ratio | warm direct | warm routed | ratio |\n|---|---|---|---|---|---|---|---|\n")
	for _, pg := range pages {
		var cold, warm RoutePageRow
		for _, r := range rep.PageRows {
			if r.Page == pg.Name {
				if r.Cold {
					cold = r
				} else {
					warm = r
				}
			}
		}
		fmt.Fprintf(&md, "| %s | `%s` | %.1f | %.1f | %.3f | %.1f | %.1f | %.3f |\n", pg.Name, pg.Path, cold.Direct.P50, cold.Routed.P50, ratio(cold.Routed.P50, cold.Direct.P50),
			warm.Direct.P50, warm.Routed.P50, ratio(warm.Routed.P50, warm.Direct.P50))
	}
	md.WriteString("\n### Throughput rounds\n\n| round | config | s | steps | steps/s | step p50 ms | step p95 ms | CPU % | errors |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, t := range rep.Throughput {
		fmt.Fprintf(&md, "| %d | %s | %.1f | %d | %.2f | %.0f | %.0f | %.0f | %d |\n", t.Round, t.Config, t.Seconds, t.Steps, t.StepsPerSec, t.Latency.P50, t.Latency.P95, t.CPUPercent, t.Errors)
	}
	rep.Headline = routeHeadline(rep.Rows)
	if err := write(o.Out, &rep.Header, rep, md.String()); err != nil {
		return nil, err
	}
	return rep, plotRoute(o.Out, rep)
}

func routeScriptText() string {
	var s []string
	for _, a := range routeStepScript {
		s = append(s, a.action)
	}
	return strings.Join(s, "; ")
}

func num(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.3f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// routePages are the shop pages whose loads are measured; the product
// page's slug is read from a search (slugs end in the generated SKU).
func routePages(ctx context.Context, base string) ([]RoutePage, error) {
	product := ""
	re := regexp.MustCompile(`href="(/product/[^"?#]+)"`)
	for _, q := range []string{"/search?q=Sierra+Organic+Pocket+Tee", "/category/clothing"} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+q, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		if m := re.FindSubmatch(b); m != nil {
			product = string(m[1])
			break
		}
	}
	if product == "" {
		return nil, errors.New("found no product page in the shop's search or category pages")
	}
	return []RoutePage{
		{"home", "/"}, {"category", "/category/clothing"}, {"product", product}, {"search", "/search?q=tent"},
		{"cart", "/cart"}, {"content page", "/page/shipping"}, {"account login", "/account/login"}, {"admin login", "/admin/login"},
	}, nil
}

// routeRequests makes n GETs of the asset directly and n through a route,
// alternating blocks, and returns each one's latency in ms.
func routeRequests(ctx context.Context, router *netroute.Router, base string, n int) (direct, routed []float64, size int64, err error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, nil, 0, err
	}
	rt, err := router.NewRoute()
	if err != nil {
		return nil, nil, 0, err
	}
	defer rt.Close()
	t := netroute.NewTable(netroute.Policy{})
	if err := t.Set(routeOrigin, netroute.TCPDialer(u.Host)); err != nil {
		return nil, nil, 0, err
	}
	rt.Bind(t)
	proxy, err := url.Parse(rt.ProxyURL())
	if err != nil {
		return nil, nil, 0, err
	}
	dc := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 2, DisableCompression: true}}
	rc := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy), MaxIdleConnsPerHost: 2, DisableCompression: true}}
	defer dc.CloseIdleConnections()
	defer rc.CloseIdleConnections()
	get := func(c *http.Client, target string) (float64, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		t0 := time.Now()
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		size, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		d := float64(time.Since(t0).Nanoseconds()) / 1e6
		if err != nil {
			return 0, err
		}
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("GET %s: HTTP %d", target, resp.StatusCode)
		}
		return d, nil
	}
	const block = 100
	for i := 0; i < 2 || len(direct) < n || len(routed) < n; i++ {
		c, target, out := dc, base+routeAsset, &direct
		if i%2 == 1 {
			c, target, out = rc, routeOrigin+routeAsset, &routed
		}
		warm := i < 2
		for k := 0; k < block && (warm || len(*out) < n); k++ {
			d, err := get(c, target)
			if err != nil {
				return nil, nil, 0, err
			}
			if !warm {
				*out = append(*out, d)
			}
		}
	}
	return direct, routed, size, nil
}

// routePageLoad opens url (cold: a reset, a fresh context; warm: a goto)
// and reads its navigation timing.
func routePageLoad(ctx context.Context, env *envcore.Env, target string, cold bool) (RoutePageSample, error) {
	var info envcore.StepInfo
	var err error
	if cold {
		_, info, err = env.Reset(ctx, target)
	} else {
		_, info, err = env.StepText(ctx, fmt.Sprintf("goto(%q)", target))
	}
	if err != nil {
		return RoutePageSample{}, err
	}
	if info.ActionError != "" {
		return RoutePageSample{}, errors.New(info.ActionError)
	}
	var nav struct {
		Load     float64 `json:"load"`
		Response float64 `json:"response"`
		Status   int     `json:"status"`
		URL      string  `json:"url"`
	}
	const expr = `(() => { const e = performance.getEntriesByType('navigation')[0]; return e ? {load: e.loadEventEnd > 0 ? e.loadEventEnd - e.startTime : -1, response: e.responseEnd - e.startTime, status: e.responseStatus || 0, url: e.name} : {load: -1} })()`
	for try := 0; ; try++ {
		if err := env.Evaluate(ctx, expr, &nav); err != nil {
			return RoutePageSample{}, err
		}
		if nav.Load >= 0 || try == 20 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if nav.Load < 0 {
		return RoutePageSample{}, fmt.Errorf("no load event in the navigation timing of %s", target)
	}
	if nav.Status != 0 && nav.Status != http.StatusOK {
		return RoutePageSample{}, fmt.Errorf("%s: HTTP %d", nav.URL, nav.Status)
	}
	return RoutePageSample{Cold: cold, LoadMs: nav.Load, ResponseMs: nav.Response}, nil
}

func routePageRows(pages []RoutePage, samples []RoutePageSample) []RoutePageRow {
	var rows []RoutePageRow
	for _, pg := range pages {
		for _, cold := range []bool{true, false} {
			row := RoutePageRow{Page: pg.Name, Cold: cold}
			var d, r []float64
			for _, s := range samples {
				if s.Page == pg.Name && s.Cold == cold {
					if s.Config == "direct" {
						d = append(d, s.LoadMs)
					} else {
						r = append(r, s.LoadMs)
					}
				}
			}
			row.Direct, row.Routed = stats(d), stats(r)
			rows = append(rows, row)
		}
	}
	return rows
}

func routeRoundLen(run time.Duration) time.Duration {
	rounds := max(1, int(run/(5*time.Second)))
	return run / time.Duration(rounds)
}

// routeThroughput starts N instances and N environments per configuration,
// then steps all N of one configuration at once, alternating rounds.
func routeThroughput(ctx context.Context, local *hosting.Local, site *hosting.Site, confs []*routeConf, o RouteOptions) ([]RouteThroughput, error) {
	type member struct {
		env  *envcore.Env
		base string
		k    int // the policy's next action
	}
	ins := make([]hosting.Instance, o.N)
	members := make([][]*member, len(confs))
	defer func() {
		for _, list := range members {
			for _, m := range list {
				if m != nil {
					_ = m.env.Close()
				}
			}
		}
		for _, in := range ins {
			if in != nil {
				_ = in.Stop(context.Background())
			}
		}
	}()
	bar := progress(o.Log, o.N*(1+len(confs)), fmt.Sprintf("route suite: start N=%d", o.N))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for i := range ins {
		g.Go(func() error {
			in, err := local.Start(gctx, site)
			if err != nil {
				return err
			}
			ins[i] = in
			_ = bar.Add(1)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	cfg := envcore.Config{IdleWindow: time.Duration(o.IdleMs) * time.Millisecond, SettleTimeout: time.Minute, ActionTimeout: time.Minute}
	for ci, c := range confs {
		members[ci] = make([]*member, o.N)
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(4)
		for i := range ins {
			g.Go(func() error {
				env, base, err := c.env(cfg, ins[i])
				if err != nil {
					return err
				}
				members[ci][i] = &member{env: env, base: base}
				_, info, err := env.Reset(gctx, base+"/")
				if err == nil && info.ActionError != "" {
					err = errors.New(info.ActionError)
				}
				_ = bar.Add(1)
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
	}
	roundLen := routeRoundLen(o.Run)
	rounds := int(o.Run / roundLen)
	var out []RouteThroughput
	bar = progress(o.Log, rounds*len(confs), fmt.Sprintf("route suite: N=%d stepping, %s per round", o.N, roundLen))
	for round := 0; round < rounds; round++ {
		for ci, c := range confs {
			var mu sync.Mutex
			var lat []float64
			var errs atomic.Int64
			cpu0 := machineCPU()
			start := time.Now()
			deadline := start.Add(roundLen)
			var wg sync.WaitGroup
			for _, m := range members[ci] {
				wg.Add(1)
				go func() {
					defer wg.Done()
					stepUntil(ctx, m.env, m.base, deadline, &m.k, &mu, &lat, &errs)
				}()
			}
			wg.Wait()
			elapsed := time.Since(start).Seconds()
			cpu := machineCPU().Sub(cpu0)
			t := RouteThroughput{Config: c.name, Round: round, Seconds: elapsed, Steps: len(lat), StepsPerSec: float64(len(lat)) / elapsed,
				Latency: stats(lat), Errors: int(errs.Load())}
			t.CPUPercent = 100 * cpu.Share()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if t.Steps == 0 {
				return nil, fmt.Errorf("%s: no step finished", c.name)
			}
			out = append(out, t)
			_ = bar.Add(1)
		}
	}
	return out, nil
}

// routeRows are the headline table: medians of each configuration, their
// ratio and the target.
func routeRows(rep *RouteReport) []RouteRow {
	pick := func(cfg string, cold bool) []float64 {
		var xs []float64
		for _, s := range rep.PageSamples {
			if s.Config == cfg && s.Cold == cold {
				xs = append(xs, s.LoadMs)
			}
		}
		return xs
	}
	steps := func(cfg, typ string) []float64 {
		var xs []float64
		for _, s := range rep.StepSamples {
			if s.Config == cfg && (typ == "" || s.Type == typ) {
				xs = append(xs, s.TotalMs-float64(s.IdleMs))
			}
		}
		return xs
	}
	sps := func(cfg string) float64 {
		steps, secs := 0, 0.0
		for _, t := range rep.Throughput {
			if t.Config == cfg {
				steps += t.Steps
				secs += t.Seconds
			}
		}
		return ratio(float64(steps), secs)
	}
	lat := func(cfg string) []float64 {
		var xs []float64
		for _, t := range rep.Throughput {
			if t.Config == cfg {
				xs = append(xs, t.Latency.P50)
			}
		}
		return xs
	}
	row := func(metric, unit string, d, r float64, target string, met func(d, r float64) bool) RouteRow {
		x := RouteRow{Metric: metric, Unit: unit, Direct: d, Routed: r, Ratio: ratio(r, d), Target: target}
		if met != nil {
			x.Met = met(d, r)
		}
		return x
	}
	le105 := func(d, r float64) bool { return ratio(r, d) <= 1.05 }
	rd, rr := rep.RequestDirect, rep.RequestRouted
	return []RouteRow{
		row("request latency p50", "ms", rd.P50, rr.P50, fmt.Sprintf("added < 0.2 ms (added %.3f)", rr.P50-rd.P50), func(d, r float64) bool { return r-d < 0.2 }),
		row("request latency p95", "ms", rd.P95, rr.P95, "", nil),
		row("page load p50, cold (reset onto the page)", "ms", stats(pick("direct", true)).P50, stats(pick("routed", true)).P50, "ratio ≤ 1.05", le105),
		row("page load p50, warm (goto in the same context)", "ms", stats(pick("direct", false)).P50, stats(pick("routed", false)).P50, "ratio ≤ 1.05", le105),
		row("step overhead beyond the idle window p50, goto + click", "ms", stats(steps("direct", "")).P50, stats(steps("routed", "")).P50, "ratio ≤ 1.05", le105),
		row("step overhead p50, goto", "ms", stats(steps("direct", "goto")).P50, stats(steps("routed", "goto")).P50, "", nil),
		row("step overhead p50, click", "ms", stats(steps("direct", "click")).P50, stats(steps("routed", "click")).P50, "", nil),
		row(fmt.Sprintf("steps/s at N=%d", rep.N), "steps/s", sps("direct"), sps("routed"), "ratio ≥ 0.95", func(d, r float64) bool { return ratio(r, d) >= 0.95 }),
		row(fmt.Sprintf("step latency at N=%d, median of round p50s", rep.N), "ms", stats(lat("direct")).P50, stats(lat("routed")).P50, "", nil),
	}
}

func routeHeadline(rows []RouteRow) string {
	var met, all int
	for _, r := range rows {
		if r.Target != "" {
			all++
			if r.Met {
				met++
			}
		}
	}
	return fmt.Sprintf("Routing every browser context through its own netroute proxy adds %.3f ms per request at p50 (%.3f vs %.3f ms); page loads %.3fx (cold) and %.3fx (warm), step overhead %.3fx, steps/s at N=%s %.3fx the direct figures, same run; %d of %d targets met.",
		rows[0].Routed-rows[0].Direct, rows[0].Routed, rows[0].Direct, rows[2].Ratio, rows[3].Ratio, rows[4].Ratio,
		strings.TrimPrefix(rows[7].Metric, "steps/s at N="), rows[7].Ratio, met, all)
}

func plotRoute(dir string, rep *RouteReport) error {
	names := []string{"direct", "routed"}
	a, err := grouped("request latency (Go client)", "ms", []string{"p50", "p95"}, names,
		[][]float64{{rep.RequestDirect.P50, rep.RequestDirect.P95}, {rep.RequestRouted.P50, rep.RequestRouted.P95}})
	if err != nil {
		return err
	}
	var labels []string
	loads := make([][]float64, 2)
	for _, r := range rep.PageRows {
		if r.Cold {
			labels = append(labels, r.Page)
			loads[0] = append(loads[0], r.Direct.P50)
			loads[1] = append(loads[1], r.Routed.P50)
		}
	}
	b, err := grouped("page load p50, cold", "ms", labels, names, loads)
	if err != nil {
		return err
	}
	b.X.Tick.Label.Rotation = math.Pi / 6
	b.X.Tick.Label.XAlign, b.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	var rl []string
	var rv []float64
	for _, r := range rep.Rows {
		if r.Target != "" {
			rl = append(rl, strings.NewReplacer("request latency p50", "request p50", "page load p50, cold (reset onto the page)", "load cold",
				"page load p50, warm (goto in the same context)", "load warm", "step overhead beyond the idle window p50, goto + click", "step overhead").Replace(r.Metric))
			rv = append(rv, r.Ratio)
		}
	}
	c, err := grouped("routed / direct (same run)", "ratio", rl, []string{"ratio"}, [][]float64{rv})
	if err != nil {
		return err
	}
	one, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: 1}, {X: float64(len(rv)) - 0.5, Y: 1}})
	if err != nil {
		return err
	}
	one.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	c.Add(one)
	c.Legend = plot.NewLegend()
	for _, p := range []*plot.Plot{a, b, c} {
		p.Y.Min, p.Y.Max = 0, p.Y.Max*1.25 // room for the legend
	}
	return savePlots(dir, "route", a, b, c)
}

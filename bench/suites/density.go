package suites

// The density suite asks how many environment pairs one host holds open
// at once, as a user runs them: the bundled shop on the Incus backend (a
// copy-on-write container per environment), made, stepped and reset
// through the server's protocol, on the same stack `webserv serve
// --shop-image` brings up (a routed, supervised browser pool and the site
// catalogue). N grows until a bound breaks: host memory, the step
// latency, errors, or a make that fails (Incus, file descriptors).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	incus "github.com/lxc/incus/v6/client"
	"github.com/lxc/incus/v6/shared/api"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/incusmgr"
	"github.com/webserv-rl/webserv/internal/procstat"
	"github.com/webserv-rl/webserv/netroute"
	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/sites/bundled"
	"github.com/webserv-rl/webserv/sites/catalog"
	"github.com/webserv-rl/webserv/sites/shop"
)

// DensityOptions configure the density suite.
type DensityOptions struct {
	// Shop.Command is the static program that serves the shop ([bin,
	// shop] for webserv or webserv-bench, [bin] for the shop binary): it
	// goes into the Incus image. Shop.Work holds the catalog.
	Shop ShopOptions
	Ns   []int         // environment pairs open at once (1, 2, 4, 8, ...)
	Run  time.Duration // measured time per N, every environment stepping
	// IdleMs is the idle window (envcore.DefaultIdleWindow when 0).
	IdleMs int
	// Episode is the steps between an environment's resets: resets run
	// while the others step (10 when 0).
	Episode int
	// MinFreeGiB stops growing N when the host's MemAvailable falls
	// below it (2 when 0).
	MinFreeGiB float64
	// MaxP95Ms stops growing N when the step p95 passes it; 0 means
	// LatencyFactor times the p95 at the first N.
	MaxP95Ms float64
	// LatencyFactor is the relative latency bound (2 when 0).
	LatencyFactor float64
	// Pool is the Incus storage pool ("webserv" when empty); Image the
	// alias the shop's image is imported as.
	Pool, Image  string
	Out, Command string
	Smoke        bool
	Log          io.Writer
	// Logger receives the server's, pool's and Incus manager's log; nil
	// discards it.
	Logger *zap.Logger
}

// DensityRow is one N: every pair open, every one stepping.
type DensityRow struct {
	N int `json:"n"`
	// Containers is the running instance containers this run's server
	// owns, counted once the round's requests have all returned (N unless
	// an instance failed); ContainersStepping counted with the memory,
	// while resets replace containers (off N by the resets in flight).
	Containers         int     `json:"containers"`
	ContainersStepping int     `json:"containers_stepping"`
	Steps              int     `json:"steps"`
	StepsPerSec        float64 `json:"steps_per_s"`
	StepsPerSecPerCore float64 `json:"steps_per_s_per_core"`
	Step               Stats   `json:"step_ms"`
	Resets             int     `json:"resets"`
	ResetP50           float64 `json:"reset_p50_ms"`
	ResetP99           float64 `json:"reset_p99_ms"`
	Reset              Stats   `json:"reset_ms"`
	// BrowserPSSMiB is the Chromium processes' proportional set size;
	// ContainersMiB the instance containers' memory as Incus reports it
	// (their cgroups' usage); SitePSSMiB the PSS of the shop processes
	// inside them, for comparison; ServerPSSMiB this process's (the
	// server). Sampled while stepping.
	BrowserPSSMiB   float64 `json:"browser_pss_mib"`
	ContainersMiB   float64 `json:"containers_mib"`
	SitePSSMiB      float64 `json:"site_pss_mib"`
	ServerPSSMiB    float64 `json:"server_pss_mib"`
	PerPairMiB      float64 `json:"per_pair_mib"` // (browser PSS + containers) / N
	MemAvailableGiB float64 `json:"mem_available_gib"`
	CPUPercent      float64 `json:"cpu_percent"`
	// TreeCPUmsPerStep is the CPU time of this process and its browsers
	// per step (the containers and Incus aside): this run's own cost,
	// whatever else the machine runs.
	TreeCPUmsPerStep float64 `json:"tree_cpu_ms_per_step"`
	FDs              int     `json:"server_fds"`
	PoolUsedGiB      float64 `json:"pool_used_gib"`
	Errors           int     `json:"errors"`
	ActionErrors     int     `json:"action_errors"`
	FirstError       string  `json:"first_error,omitempty"`
	// Broke names the bound this N broke ("" when it held).
	Broke string `json:"broke,omitempty"`
}

// DensityReport is the density suite's output.
type DensityReport struct {
	Header
	IdleMs  int          `json:"idle_ms"`
	Episode int          `json:"episode_steps"`
	Rows    []DensityRow `json:"rows"`
	// Held is the largest N that broke no bound; StopReason says what
	// ended the ramp (a bound, or that every N asked for held).
	Held       int    `json:"largest_n_held"`
	StopReason string `json:"stop_reason"`
	// Within2x is the largest N whose step p95 stayed under twice the
	// first N's (the scale suite's knee), whatever bound was applied.
	Within2x int `json:"largest_n_p95_under_2x"`
	// LatencyBoundMs is the step p95 bound applied; MinFreeGiB the floor.
	LatencyBoundMs float64 `json:"latency_bound_ms"`
	MinFreeGiB     float64 `json:"min_free_gib"`
	// PerPairMiB is the memory per pair at the largest N that held;
	// MemoryBoundN the pairs this host's memory would hold at that cost
	// (MemTotal less the floor, over it).
	PerPairMiB float64 `json:"per_pair_mib"`
	// MarginalPerPairMiB and FixedMiB fit (browser PSS + containers) =
	// fixed + marginal x N over the rows that held (least squares): what
	// one more pair costs, and what the browser pool costs with none.
	MarginalPerPairMiB float64 `json:"marginal_per_pair_mib"`
	FixedMiB           float64 `json:"fixed_mib"`
	// MemoryBoundN is the pairs this host's memory would hold: (MemTotal
	// - the floor - fixed) / marginal.
	MemoryBoundN int `json:"memory_bound_n"`
	// StepsPerSecPerCore is the best steps/s per core seen (saturation).
	StepsPerSecPerCore float64     `json:"steps_per_s_per_core"`
	FDLimit            uint64      `json:"fd_limit"`
	Sizing             []SizingRow `json:"sizing"`
}

// SizingRow is how many environments a node of a size holds, and the
// nodes a fleet needs, at one steps/s per environment.
type SizingRow struct {
	Cores       int     `json:"cores"`
	MemoryGiB   int     `json:"memory_gib"`
	StepsPerEnv float64 `json:"steps_per_s_per_env"`
	MemoryEnvs  int     `json:"memory_envs"`
	CPUEnvs     int     `json:"cpu_envs"`
	Envs        int     `json:"envs_per_node"`
	Bound       string  `json:"bound"`
	Nodes1000   int     `json:"nodes_for_1000"`
	Nodes10000  int     `json:"nodes_for_10000"`
}

// Density runs the density suite.
func Density(ctx context.Context, o DensityOptions) (*DensityReport, error) {
	if len(o.Ns) == 0 {
		o.Ns = []int{1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128}
	}
	if o.Run <= 0 {
		o.Run = 30 * time.Second
	}
	if o.IdleMs <= 0 {
		o.IdleMs = int(envcore.DefaultIdleWindow.Milliseconds())
	}
	if o.Episode <= 0 {
		o.Episode = 10
	}
	if o.MinFreeGiB <= 0 {
		o.MinFreeGiB = 2
	}
	if o.LatencyFactor <= 0 {
		o.LatencyFactor = 2
	}
	if o.Pool == "" {
		o.Pool = "webserv"
	}
	if o.Image == "" {
		o.Image = "webserv-bench-shop"
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if len(o.Shop.Command) == 0 {
		return nil, errors.New("density: give the static program that serves the shop (ShopOptions.Command)")
	}
	log := o.Logger
	rep := &DensityReport{Header: newHeader("density", o.Command, o.Smoke), IdleMs: o.IdleMs, Episode: o.Episode, MinFreeGiB: o.MinFreeGiB}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil {
		rep.FDLimit = lim.Cur
	}

	// The shop's image, as `webserv image shop` builds it.
	data := filepath.Join(o.Shop.Work, "shop-data")
	if err := bundled.EnsureData(ctx, data); err != nil {
		return nil, fmt.Errorf("density: the shop's catalog in %s: %w", data, err)
	}
	img, err := shop.Image(o.Shop.Command[0], o.Shop.Command[1:], data)
	if err != nil {
		return nil, fmt.Errorf("density: build the shop's image (the program must be static: CGO_ENABLED=0): %w", err)
	}
	layout, err := os.MkdirTemp(o.Shop.Work, "density-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(layout)
	if err := incusmgr.WriteLayout(filepath.Join(layout, "oci"), img); err != nil {
		return nil, fmt.Errorf("density: write the shop's image: %w", err)
	}
	ic, err := incusmgr.Client(incusmgr.Config{})
	if err != nil {
		return nil, err
	}
	if _, err := incusmgr.ImportImage(ctx, ic, filepath.Join(layout, "oci"), o.Image); err != nil {
		return nil, fmt.Errorf("density: import the shop's image as %s: %w", o.Image, err)
	}

	// The stack `webserv serve --shop-image` runs: routed browser pool,
	// the bundled sites on the Incus backend, the server.
	m, err := incusmgr.Connect(ctx, log.Named("incus"), incusmgr.Config{Pool: o.Pool})
	if err != nil {
		return nil, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		_ = m.Close(cctx)
	}()
	sites, sets, err := catalog.Bundled(ctx, bundled.Options{IncusImage: o.Image}, nil)
	if err != nil {
		return nil, err
	}
	factory := catalog.New(sites, []hosting.Backend{m}, nil)
	for name, st := range sets {
		factory.SetTasks(name, st)
	}
	router := netroute.New(log.Named("route"), netroute.Options{})
	defer router.Close()
	pool, err := envcore.LaunchPool(ctx, log.Named("browser"), server.Routed(envcore.BrowserOptions{}, router), envcore.DefaultBrowsers)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	srv := server.New(log.Named("server"), pool, factory, server.Config{MaxEnvs: 4096, MaxCreating: 8, CreateWait: 10 * time.Minute,
		StepTimeout: 5 * time.Minute, TTL: time.Hour, NoUI: true,
		Env: envcore.Config{IdleWindow: time.Duration(o.IdleMs) * time.Millisecond}})
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	defer srv.Close()

	d := &densityRun{o: o, base: hs.URL, ic: ic, owner: incusmgr.Owner()}
	defer d.closeAll()
	for _, n := range o.Ns {
		row, stop := d.one(ctx, n)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if row.Steps > 0 || row.Broke != "" {
			rep.Rows = append(rep.Rows, row)
		}
		if rep.LatencyBoundMs == 0 && row.Steps > 0 {
			rep.LatencyBoundMs = o.MaxP95Ms
			if rep.LatencyBoundMs <= 0 {
				rep.LatencyBoundMs = o.LatencyFactor * row.Step.P95
			}
		}
		if row.Broke == "" && row.Step.P95 > rep.LatencyBoundMs {
			row.Broke = fmt.Sprintf("latency: step p95 %.0f ms above the bound %.0f ms", row.Step.P95, rep.LatencyBoundMs)
			rep.Rows[len(rep.Rows)-1] = row
		}
		if row.Broke != "" {
			rep.StopReason = fmt.Sprintf("at N=%d, %s", n, row.Broke)
			break
		}
		if stop {
			break
		}
		rep.Held = n
	}
	if len(rep.Rows) == 0 {
		return nil, fmt.Errorf("density: no N measured: %s", rep.StopReason)
	}
	if rep.StopReason == "" {
		rep.StopReason = fmt.Sprintf("none: every N asked for held (up to %d); give larger -n", rep.Held)
	}
	d.closeAll()
	densitySummary(rep)
	md := densityMarkdown(rep, o)
	if err := write(o.Out, &rep.Header, rep, md); err != nil {
		return nil, err
	}
	return rep, plotDensity(o.Out, rep)
}

// densityRun is the environments open across the ramp: each N adds to
// the ones the last N left open.
type densityRun struct {
	o     DensityOptions
	base  string
	ic    incus.InstanceServer
	owner string
	envs  []*densityEnv
}

type densityEnv struct {
	c      *protoClient
	id     string
	origin string // the instance's base URL, as the browser reaches it
	k      int    // steps into the policy
	ep     int    // steps into the episode
}

func (d *densityRun) closeAll() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, e := range d.envs {
		_, _ = e.c.call(ctx, "close", e.id, nil)
		e.c.close()
	}
	d.envs = nil
}

// one brings the open pairs up to n, steps them all for o.Run and
// measures. stop reports a failure that ends the ramp (recorded in
// row.Broke).
func (d *densityRun) one(ctx context.Context, n int) (DensityRow, bool) {
	o := d.o
	row := DensityRow{N: n}
	if add := n - len(d.envs); add > 0 {
		bar := progress(o.Log, add, fmt.Sprintf("density N=%d: make", n))
		made := make([]*densityEnv, add)
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(8)
		for i := range made {
			g.Go(func() error {
				c, err := dialProto(gctx, d.base)
				if err != nil {
					return err
				}
				r, err := c.call(gctx, "make", "", map[string]any{"site": "shopping"})
				if err != nil {
					c.close()
					return err
				}
				id, _ := r["env"].(string)
				made[i] = &densityEnv{c: c, id: id, origin: obsOrigin(r)}
				_ = bar.Add(1)
				return nil
			})
		}
		err := g.Wait()
		for _, e := range made {
			if e != nil {
				d.envs = append(d.envs, e)
			}
		}
		if err != nil {
			row.Broke = "make: " + classify(err)
			row.FirstError = err.Error()
			return row, true
		}
	}
	var mu sync.Mutex
	var lat, resets []float64
	var errs, actErrs atomic.Int64
	var firstErr atomic.Value
	fail := func(err error) {
		errs.Add(1)
		firstErr.CompareAndSwap(nil, err.Error())
	}
	cpu0 := machineCPU()
	tree0, _ := procstat.TreeCPU(os.Getpid())
	deadline := time.Now().Add(o.Run)
	var wg sync.WaitGroup
	warm := make(chan struct{}, n)
	for _, e := range d.envs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			warmed := false
			for time.Now().Before(deadline) && ctx.Err() == nil {
				if e.ep >= o.Episode {
					t0 := time.Now()
					if _, err := e.c.call(ctx, "reset", e.id, nil); err != nil {
						fail(err)
						continue
					}
					mu.Lock()
					resets = append(resets, ms(time.Since(t0)))
					mu.Unlock()
					e.ep, e.k = 0, 0
				}
				act := strings.ReplaceAll(scalePolicy[e.k%len(scalePolicy)], "{base}", e.origin)
				e.k++
				e.ep++
				t0 := time.Now()
				r, err := e.c.call(ctx, "step", e.id, map[string]any{"action": act})
				took := ms(time.Since(t0))
				if err != nil {
					fail(err)
					continue
				}
				if info, _ := r["info"].(map[string]any); info != nil && info["action_error"] != nil && info["action_error"] != "" {
					actErrs.Add(1)
				}
				mu.Lock()
				lat = append(lat, took)
				mu.Unlock()
				if !warmed {
					warmed = true
					warm <- struct{}{}
				}
			}
		}()
	}
	// Sample memory once every environment has stepped in this round
	// (each holding a page), or at the deadline.
	sampled := false
	sample := func() {
		sampled = true
		// Only this run's processes: the machine is shared, and other
		// Chromiums and shops may run beside it.
		self := os.Getpid()
		isChromium := func(cmd string) bool { return strings.Contains(cmd, "chromium") }
		row.BrowserPSSMiB = pssUnder([]int{self}, isChromium) / (1 << 20)
		row.ServerPSSMiB = pssOf(self) / (1 << 20)
		var mem int64
		var inits []int
		row.ContainersStepping, mem, inits = d.containers()
		row.SitePSSMiB = pssUnder(inits, nil) / (1 << 20)
		row.ContainersMiB = float64(mem) / (1 << 20)
		row.MemAvailableGiB = float64(memAvailable()) / (1 << 30)
		row.FDs = openFDs()
		row.PoolUsedGiB = d.poolUsed()
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for i := 0; i < n && !sampled; i++ {
		select {
		case <-warm:
		case <-timer.C:
			sample()
		case <-ctx.Done():
			wg.Wait()
			return row, true
		}
	}
	if !sampled {
		sample()
	}
	wg.Wait()
	row.Containers, _, _ = d.containers()
	elapsed := o.Run.Seconds() + max(0, time.Since(deadline).Seconds())
	cpu := machineCPU().Sub(cpu0)
	row.Steps = len(lat)
	row.StepsPerSec = float64(len(lat)) / elapsed
	row.StepsPerSecPerCore = row.StepsPerSec / float64(runtime.NumCPU())
	row.Step = stats(lat)
	row.Resets = len(resets)
	row.Reset = stats(resets)
	row.ResetP50, row.ResetP99 = quantile(resets, .5), quantile(resets, .99)
	row.CPUPercent = 100 * cpu.Share()
	if tree1, err := procstat.TreeCPU(os.Getpid()); err == nil && len(lat) > 0 {
		row.TreeCPUmsPerStep = float64((tree1 - tree0).Milliseconds()) / float64(len(lat))
	}
	row.PerPairMiB = (row.BrowserPSSMiB + row.ContainersMiB) / float64(n)
	row.Errors, row.ActionErrors = int(errs.Load()), int(actErrs.Load())
	if s, ok := firstErr.Load().(string); ok {
		row.FirstError = s
	}
	ops := row.Steps + row.Resets + row.Errors
	switch {
	case row.Steps == 0:
		row.Broke = "errors: no step finished (" + row.FirstError + ")"
	case row.Errors > 0 && float64(row.Errors) > 0.01*float64(ops):
		row.Broke = fmt.Sprintf("errors: %d of %d requests failed (%s)", row.Errors, ops, classify(errors.New(row.FirstError)))
	case row.MemAvailableGiB < o.MinFreeGiB:
		row.Broke = fmt.Sprintf("memory: MemAvailable %.1f GiB below the floor %.1f GiB", row.MemAvailableGiB, o.MinFreeGiB)
	case row.Containers < n:
		row.Broke = fmt.Sprintf("incus: %d running instance containers for %d environments", row.Containers, n)
	}
	return row, row.Broke != ""
}

// obsOrigin is the scheme and host of the observation's URL in a make or
// reset reply: the instance's base as the browser reaches it.
func obsOrigin(r map[string]any) string {
	obs, _ := r["obs"].(map[string]any)
	s, _ := obs["url"].(string)
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// classify names the resource behind a failure.
func classify(err error) string {
	s := err.Error()
	switch {
	case strings.Contains(s, "too many open files"):
		return "file descriptors: " + s
	case strings.Contains(strings.ToLower(s), "incus") || strings.Contains(s, "container"):
		return "incus: " + s
	case strings.Contains(s, "no space left"):
		return "disk: " + s
	case strings.Contains(s, "cannot allocate memory"):
		return "memory: " + s
	}
	return s
}

// containers counts the running instance containers this process's
// Incus manager made, sums their memory as Incus reports it and lists
// their init processes' host pids.
func (d *densityRun) containers() (int, int64, []int) {
	list, err := d.ic.GetInstances(api.InstanceTypeContainer)
	if err != nil {
		return 0, 0, nil
	}
	n, total := 0, int64(0)
	var inits []int
	for _, in := range list {
		if in.Config["user.webserv.role"] != "instance" || in.Config["user.webserv.owner"] != d.owner || in.Status != "Running" {
			continue
		}
		st, _, err := d.ic.GetInstanceState(in.Name)
		if err != nil || st.Status != "Running" {
			continue
		}
		n++
		total += st.Memory.Usage
		inits = append(inits, int(st.Pid))
	}
	return n, total, inits
}

func (d *densityRun) poolUsed() float64 {
	r, err := d.ic.GetStoragePoolResources(d.o.Pool)
	if err != nil {
		return -1
	}
	return float64(r.Space.Used) / (1 << 30)
}

// pssUnder sums the PSS, in bytes, of the processes at or under any
// of roots whose command line keep accepts (nil: every one).
func pssUnder(roots []int, keep func(cmd string) bool) float64 {
	procs, err := procstat.Processes()
	if err != nil {
		return 0
	}
	total := 0.0
	for pid := range under(procs, roots) {
		if keep != nil {
			cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if err != nil || !keep(string(cmd)) {
				continue
			}
		}
		total += pssOf(pid)
	}
	return total
}

// openFDs counts this process's (the server's) open file descriptors.
func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[int(math.Ceil(q*float64(len(s)))-1)]
}

// densitySummary fills the report's per-pair figures, memory bound and
// sizing table from its rows.
func densitySummary(rep *DensityReport) {
	var held *DensityRow
	for i := range rep.Rows {
		r := &rep.Rows[i]
		rep.StepsPerSecPerCore = max(rep.StepsPerSecPerCore, r.StepsPerSecPerCore)
		if r.Broke == "" {
			held = r
		}
	}
	if held == nil {
		held = &rep.Rows[0]
	}
	rep.PerPairMiB = held.PerPairMiB
	for _, r := range rep.Rows {
		if r.Steps > 0 && r.Step.P95 < 2*rep.Rows[0].Step.P95 && (r.Broke == "" || strings.HasPrefix(r.Broke, "latency")) && r.N > rep.Within2x {
			rep.Within2x = r.N
		}
	}
	rep.MarginalPerPairMiB, rep.FixedMiB = rep.PerPairMiB, 0
	var xs, ys []float64
	for _, r := range rep.Rows {
		if r.Broke == "" || strings.HasPrefix(r.Broke, "latency") {
			xs, ys = append(xs, float64(r.N)), append(ys, r.PerPairMiB*float64(r.N))
		}
	}
	if slope, icept := fit(xs, ys); slope > 0 && icept >= 0 {
		rep.MarginalPerPairMiB, rep.FixedMiB = slope, icept
	}
	total := memTotalGiB()
	if rep.MarginalPerPairMiB > 0 {
		rep.MemoryBoundN = int(((total-rep.MinFreeGiB)*1024 - rep.FixedMiB) / rep.MarginalPerPairMiB)
	}
	rep.Sizing = sizing(rep.FixedMiB, rep.MarginalPerPairMiB, rep.StepsPerSecPerCore)
	rep.Headline = fmt.Sprintf("%d environment pairs (browser context + Incus container) held at once on %d cores, stopped %s; %.0f MiB per pair at N=%d (%.0f MiB each past a fixed %.0f MiB), so this host's %.0f GiB would hold %d by memory; %.2f steps/s per core at saturation.",
		rep.Held, rep.Machine.Cores, rep.StopReason, rep.PerPairMiB, held.N, rep.MarginalPerPairMiB, rep.FixedMiB, total, rep.MemoryBoundN, rep.StepsPerSecPerCore)
}

// Node sizes of the sizing table: cores and memory (4 GiB per core, a
// common cloud ratio); steps/s per environment: an LLM agent's pace
// (a step every 5 s) and a fast scripted or small-model policy (1/s).
var (
	sizingNodes = [][2]int{{8, 32}, {32, 128}, {96, 384}}
	sizingRates = []float64{0.2, 1}
)

// fit is the least-squares line y = slope x + icept (zeros for fewer
// than two distinct x).
func fit(xs, ys []float64) (slope, icept float64) {
	n := float64(len(xs))
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx, sy, sxx, sxy = sx+xs[i], sy+ys[i], sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
	}
	den := n*sxx - sx*sx
	if len(xs) < 2 || den == 0 {
		return 0, 0
	}
	slope = (n*sxy - sx*sy) / den
	return slope, (sy - slope*sx) / n
}

// sizing: environments per node = min(memory bound, CPU bound), with
// memory bound = ((node GiB - 2 GiB reserve) x 1024 - fixed) / marginal
// per pair and CPU bound = cores x steps/s per core at saturation /
// steps/s per env.
func sizing(fixedMiB, perPairMiB, spsPerCore float64) []SizingRow {
	var out []SizingRow
	for _, rate := range sizingRates {
		for _, nd := range sizingNodes {
			r := SizingRow{Cores: nd[0], MemoryGiB: nd[1], StepsPerEnv: rate}
			if perPairMiB > 0 {
				r.MemoryEnvs = int((float64(nd[1]-2)*1024 - fixedMiB) / perPairMiB)
			}
			r.CPUEnvs = int(float64(nd[0]) * spsPerCore / rate)
			r.Envs, r.Bound = r.MemoryEnvs, "memory"
			if r.CPUEnvs < r.MemoryEnvs {
				r.Envs, r.Bound = r.CPUEnvs, "CPU"
			}
			if r.Envs > 0 {
				r.Nodes1000 = (1000 + r.Envs - 1) / r.Envs
				r.Nodes10000 = (10000 + r.Envs - 1) / r.Envs
			}
			out = append(out, r)
		}
	}
	return out
}

func memTotalGiB() float64 {
	var f float64
	_, _ = fmt.Sscanf(machine().MemoryGB, "%g", &f)
	return f
}

func densityMarkdown(rep *DensityReport, o DensityOptions) string {
	var md strings.Builder
	md.WriteString("| N | containers | steps/s | steps/s per core | step p50 ms | step p95 ms | resets | reset p50 ms | reset p99 ms | browser PSS MiB | containers MiB | per pair MiB | MemAvailable GiB | CPU % | server+browser CPU ms/step | server fds | errors | bound broken |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Rows {
		fmt.Fprintf(&md, "| %d | %d | %.1f | %.2f | %.0f | %.0f | %d | %.0f | %.0f | %.0f | %.0f | %.1f | %.1f | %.0f | %.0f | %d | %d | %s |\n",
			r.N, r.Containers, r.StepsPerSec, r.StepsPerSecPerCore, r.Step.P50, r.Step.P95, r.Resets, r.ResetP50, r.ResetP99,
			r.BrowserPSSMiB, r.ContainersMiB, r.PerPairMiB, r.MemAvailableGiB, r.CPUPercent, r.TreeCPUmsPerStep, r.FDs, r.Errors, r.Broke)
	}
	fmt.Fprintf(&md, "\nStopped: %s. Largest N that held every bound: **%d**. Bounds: step p95 at most %.0f ms, MemAvailable at least %.1f GiB, errors at most 1%% of requests, a running container per environment, every make answered. The largest N with step p95 under twice the first N's (%.0f ms), the scale suite's knee: %d.\n",
		rep.StopReason, rep.Held, rep.LatencyBoundMs, rep.MinFreeGiB, 2*rep.Rows[0].Step.P95, rep.Within2x)
	fmt.Fprintf(&md, "\nEach pair is a browser context (a pool of %d Chromium processes, routed) and its own copy-on-write Incus container of the bundled shop, made with `make(site=\"shopping\")` through the server's protocol as `webserv serve --shop-image` serves it. Every environment plays `%s` in a loop at a %d ms idle window and resets after %d steps while the others step, for %s per N; the pairs of one N stay open into the next. Per pair = (this run's Chromium processes' PSS (its descendants only: the machine is shared) + the containers' memory as Incus reports it, their cgroups' usage) / N, sampled once every pair has stepped. The shop processes' PSS inside the containers (already in the containers' figure) was %.0f MiB at the largest N; the server (this process) %.0f MiB.\n",
		envcore.DefaultBrowsers, strings.Join(scalePolicy, "; "), rep.IdleMs, rep.Episode, o.Run, rep.Rows[len(rep.Rows)-1].SitePSSMiB, rep.Rows[len(rep.Rows)-1].ServerPSSMiB)
	fmt.Fprintf(&md, "\nAgainst the paper's 200+ containers per host: the memory of the pairs that held fits %.0f MiB fixed (the browser pool) + %.1f MiB per pair (least squares over N); at that cost this host's %.0f GiB (less the %.1f GiB floor) holds **%d** pairs by memory. With every pair stepping flat out it held %d within the bounds on %d cores%s. File descriptors: the server held %d at the largest N (limit %d).\n",
		rep.FixedMiB, rep.MarginalPerPairMiB, memTotalGiB(), rep.MinFreeGiB, rep.MemoryBoundN, rep.Held, rep.Machine.Cores, endedBy(rep), rep.Rows[len(rep.Rows)-1].FDs, rep.FDLimit)
	md.WriteString("\n## Sizing\n\nEnvironments per node = min(memory bound, CPU bound); memory bound = ((node GiB - 2) x 1024 - fixed MiB) / marginal MiB per pair; CPU bound = cores x steps/s per core at saturation / steps/s per environment. Nodes = ceil(fleet / environments per node). Nodes have 4 GiB per core; 0.2 steps/s per environment is an LLM agent's pace (a step every 5 s), 1 step/s a fast scripted or small-model policy.\n\n")
	fmt.Fprintf(&md, "Measured inputs: %.0f MiB fixed + %.1f MiB per pair, %.2f steps/s per core.\n\n", rep.FixedMiB, rep.MarginalPerPairMiB, rep.StepsPerSecPerCore)
	md.WriteString("| node | steps/s per env | memory bound | CPU bound | envs per node | bound | nodes for 1,000 | nodes for 10,000 |\n|---|---|---|---|---|---|---|---|\n")
	for _, s := range rep.Sizing {
		fmt.Fprintf(&md, "| %d cores, %d GiB | %.1f | %d | %d | %d | %s | %d | %d |\n", s.Cores, s.MemoryGiB, s.StepsPerEnv, s.MemoryEnvs, s.CPUEnvs, s.Envs, s.Bound, s.Nodes1000, s.Nodes10000)
	}
	return md.String()
}

// endedBy says which resource ended the ramp, for the comparison with
// the memory bound.
func endedBy(rep *DensityReport) string {
	switch r := rep.StopReason; {
	case strings.Contains(r, "latency:"):
		return ": the CPU (through the latency bound), not memory, ended the ramp"
	case strings.Contains(r, "memory:"):
		return ": memory ended the ramp"
	case strings.HasPrefix(r, "none"):
		return " (no bound broke)"
	}
	return ": " + rep.StopReason
}

func plotDensity(dir string, rep *DensityReport) error {
	x := make([]float64, len(rep.Rows))
	sps, p95, rp99, pair := make([]float64, len(x)), make([]float64, len(x)), make([]float64, len(x)), make([]float64, len(x))
	for i, r := range rep.Rows {
		x[i], sps[i], p95[i], rp99[i], pair[i] = float64(r.N), r.StepsPerSec, r.Step.P95, r.ResetP99, r.PerPairMiB
	}
	a, err := lines("throughput", "environment pairs", "steps/s", x, []string{"steps/s"}, [][]float64{sps})
	if err != nil {
		return err
	}
	b, err := lines("latency under load", "environment pairs", "ms", x, []string{"step p95", "reset p99"}, [][]float64{p95, rp99})
	if err != nil {
		return err
	}
	c, err := lines("memory per pair", "environment pairs", "MiB", x, []string{"(browser PSS + container) / N"}, [][]float64{pair})
	if err != nil {
		return err
	}
	return savePlots(dir, "density", a, b, c)
}

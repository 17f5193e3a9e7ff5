package suites

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/hosting"
)

// ScaleOptions configure the scale suite.
type ScaleOptions struct {
	Shop    ShopOptions
	Ns      []int         // environment counts (1, 8, 32, 64, 128)
	Run     time.Duration // measured time per N, after one warm-up step each
	IdleMs  int           // idle window (envcore.DefaultIdleWindow)
	Out     string
	Command string
	Smoke   bool
	Log     io.Writer
	// MinFreeGiB stops growing N when less memory than this is left.
	MinFreeGiB float64
	// Refine bisects between the largest N that held the latency bound
	// and the next that did not.
	Refine bool
}

// ScaleRow is one N.
type ScaleRow struct {
	N            int     `json:"n"`
	Steps        int     `json:"steps"`
	StepsPerSec  float64 `json:"steps_per_s"`
	Latency      Stats   `json:"step_ms"`
	MemPerEnvMiB float64 `json:"memory_per_env_mib"`
	// PSSPerEnvMiB is the proportional set size of the Chromium and site
	// processes divided by N, sampled while stepping: memory that other
	// processes on the machine do not move.
	PSSPerEnvMiB float64 `json:"pss_per_env_mib"`
	CPUPercent   float64 `json:"cpu_percent"`
	// CPUmsPerStep is the machine's CPU time (all processes) per step.
	CPUmsPerStep float64 `json:"cpu_ms_per_step"`
	// CPUShare is each process group's share of the CPU time that ran
	// while stepping (chromium browser, renderers, gpu/utility, the site
	// processes, this process, other).
	CPUShare map[string]float64 `json:"cpu_share"`
	// GoCPU is this process's share (envcore, CDP, the shop's proxying
	// aside) by phase of the step and by kind of work.
	GoCPU  GoProfile `json:"go_cpu"`
	Errors int       `json:"errors"`
	Note   string    `json:"note,omitempty"`
}

// ScaleReport is the scale suite's output.
type ScaleReport struct {
	Header
	IdleMs  int        `json:"idle_ms"`
	Rows    []ScaleRow `json:"rows"`
	Largest int        `json:"largest_n_p95_under_2x"`
}

// scalePolicy is what every environment does, in a loop: browse a
// category, page through it, search, open the cart.
var scalePolicy = []string{
	`goto("{base}/")`, `click("categories.clothing-2")`, `click("pages.2")`,
	`fill("search.search-products", "alpine")`, `press("search.search-products", "Enter")`, `click("cart")`,
}

// Scale runs the scale suite.
func Scale(ctx context.Context, o ScaleOptions) (*ScaleReport, error) {
	if len(o.Ns) == 0 {
		o.Ns = []int{1, 8, 32, 64, 128}
	}
	if o.Run <= 0 {
		o.Run = 40 * time.Second
	}
	if o.IdleMs <= 0 {
		o.IdleMs = int(envcore.DefaultIdleWindow.Milliseconds())
	}
	if o.MinFreeGiB <= 0 {
		o.MinFreeGiB = 2
	}
	rep := &ScaleReport{Header: newHeader("scale", o.Command, o.Smoke), IdleMs: o.IdleMs}
	local, site, err := shopSite(ctx, o.Shop)
	if err != nil {
		return nil, err
	}
	defer local.Close(context.Background())
	b, err := envcore.Launch(ctx, zap.NewNop(), envcore.BrowserOptions{})
	if err != nil {
		return nil, err
	}
	defer b.Close()
	for _, n := range o.Ns {
		row, err := scaleOne(ctx, b, local, site, n, o)
		if err != nil {
			return nil, fmt.Errorf("scale at N=%d: %w", n, err)
		}
		rep.Rows = append(rep.Rows, row)
		if row.Note != "" {
			break
		}
	}
	base := rep.Rows[0].Latency.P95
	good := func(r ScaleRow) bool { return r.Note == "" && r.Latency.P95 < 2*base }
	// Narrow the knee: bisect between the largest N that held and the
	// next that did not, down to a step of a quarter of N.
	for o.Refine {
		lo, hi := 0, 0
		for _, r := range rep.Rows {
			if good(r) {
				lo = max(lo, r.N)
			} else if r.N > lo && (hi == 0 || r.N < hi) {
				hi = r.N
			}
		}
		if lo == 0 || hi == 0 || hi-lo <= max(2, lo/4) {
			break
		}
		row, err := scaleOne(ctx, b, local, site, (lo+hi)/2, o)
		if err != nil {
			return nil, fmt.Errorf("scale at N=%d: %w", (lo+hi)/2, err)
		}
		rep.Rows = append(rep.Rows, row)
		slices.SortFunc(rep.Rows, func(a, b ScaleRow) int { return a.N - b.N })
	}
	for _, r := range rep.Rows {
		if good(r) && r.N > rep.Largest {
			rep.Largest = r.N
		}
	}
	var md strings.Builder
	md.WriteString("| N | steps/s | step p50 ms | step p95 ms | memory per env MiB | PSS per env MiB | CPU % | CPU ms per step | errors |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Rows {
		fmt.Fprintf(&md, "| %d | %.1f | %.0f | %.0f | %.0f | %.1f | %.0f | %.0f | %d |", r.N, r.StepsPerSec, r.Latency.P50, r.Latency.P95, r.MemPerEnvMiB, r.PSSPerEnvMiB, r.CPUPercent, r.CPUmsPerStep, r.Errors)
		if r.Note != "" {
			md.WriteString(" " + r.Note)
		}
		md.WriteString("\n")
	}
	fmt.Fprintf(&md, "\nEach environment is a browser context plus its own shop process (local backend), running `%s` in a loop at a %d ms idle window, for %s per N after a warm-up step. Memory per environment is the drop in the host's available memory divided by N; PSS per environment is the proportional set size of the Chromium and site processes divided by N, read while they step.\n",
		strings.Join(scalePolicy, "; "), o.IdleMs, o.Run)
	md.WriteString("\nWhere the CPU went while stepping (share of all processes' CPU time, from /proc/<pid>/stat):\n\n| N |")
	for _, g := range procGroups {
		md.WriteString(" " + g + " |")
	}
	md.WriteString("\n|---|" + strings.Repeat("---|", len(procGroups)) + "\n")
	for _, r := range rep.Rows {
		fmt.Fprintf(&md, "| %d |", r.N)
		for _, g := range procGroups {
			fmt.Fprintf(&md, " %.0f%% |", 100*r.CPUShare[g])
		}
		md.WriteString("\n")
	}
	md.WriteString("\nThe Go side (this process) by phase of the step, outermost first, and by kind of work, innermost (shares of its CPU profile):\n\n| N | Go CPU ms per step | by phase | by kind |\n|---|---|---|---|\n")
	for _, r := range rep.Rows {
		perStep := 0.0
		if r.Steps > 0 {
			perStep = r.GoCPU.CPUms / float64(r.Steps)
		}
		fmt.Fprintf(&md, "| %d | %.1f | %s | %s |\n", r.N, perStep, shares(r.GoCPU.Phases), shares(r.GoCPU.Kinds))
	}
	rep.Headline = fmt.Sprintf("This machine holds %d environments with p95 step latency under twice the single-environment p95 (%.0f ms); throughput peaks at %.1f steps/s.",
		rep.Largest, base, peak(rep.Rows))
	if err := write(o.Out, &rep.Header, rep, md.String()); err != nil {
		return nil, err
	}
	return rep, plotScale(o.Out, rep.Rows)
}

// shares writes a share map largest first: "settle polling 41%, ...".
func shares(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			if m[a] > m[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.0f%%", k, 100*m[k])
	}
	return strings.Join(parts, ", ")
}

func peak(rows []ScaleRow) float64 {
	best := 0.0
	for _, r := range rows {
		best = max(best, r.StepsPerSec)
	}
	return best
}

// scaleOne starts n environments (each with its own shop instance), runs
// the policy in all of them for o.Run and measures.
func scaleOne(ctx context.Context, b *envcore.Browser, local *hosting.Local, site *hosting.Site, n int, o ScaleOptions) (ScaleRow, error) {
	row := ScaleRow{N: n}
	before := memAvailable()
	type member struct {
		env *envcore.Env
		in  hosting.Instance
	}
	members := make([]member, n)
	bar := progress(o.Log, n, fmt.Sprintf("scale N=%d: start", n))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i := range members {
		g.Go(func() error {
			in, err := local.Start(gctx, site)
			if err != nil {
				return err
			}
			env := b.NewEnv(envcore.Config{IdleWindow: time.Duration(o.IdleMs) * time.Millisecond, SettleTimeout: time.Minute, ActionTimeout: time.Minute})
			members[i] = member{env, in}
			if _, _, err := env.Reset(gctx, in.URL()+"/"); err != nil {
				return err
			}
			_ = bar.Add(1)
			return nil
		})
	}
	startErr := g.Wait()
	defer func() {
		for _, m := range members {
			if m.env != nil {
				_ = m.env.Close()
			}
			if m.in != nil {
				_ = m.in.Stop(context.Background())
			}
		}
	}()
	if startErr != nil {
		return row, startErr
	}
	used := float64(before-memAvailable()) / float64(n) / (1 << 20)
	row.MemPerEnvMiB = used
	if free := float64(memAvailable()) / (1 << 30); free < o.MinFreeGiB {
		row.Note = fmt.Sprintf("(stopped: %.1f GiB left)", free)
	}
	var mu sync.Mutex
	var lat []float64
	var errs atomic.Int64
	cpu0, procs0 := machineCPU(), procCPU()
	stopProfile := startGoProfile()
	deadline := time.Now().Add(o.Run)
	bar = progress(o.Log, int(o.Run.Seconds()), fmt.Sprintf("scale N=%d: run", n))
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = bar.Add(1)
			}
		}
	}()
	var wg sync.WaitGroup
	for _, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var k int
			stepUntil(ctx, m.env, m.in.URL(), deadline, &k, &mu, &lat, &errs)
		}()
	}
	pss := procPSS() // while the n environments step, each holding its page
	wg.Wait()
	row.GoCPU = stopProfile()
	close(done)
	elapsed := o.Run.Seconds() + max(0, time.Since(deadline).Seconds())
	cpu := machineCPU().Sub(cpu0)
	row.Steps = len(lat)
	row.StepsPerSec = float64(len(lat)) / elapsed
	row.Latency = stats(lat)
	row.Errors = int(errs.Load())
	row.CPUPercent = 100 * cpu.Share()
	row.CPUShare = cpuShares(procs0, procCPU())
	row.PSSPerEnvMiB = (pss[procBrowser] + pss[procRenderer] + pss[procHelpers] + pss[procSite]) / float64(n) / (1 << 20)
	if row.Steps > 0 {
		row.CPUmsPerStep = float64(cpu.Busy.Milliseconds()) / float64(row.Steps)
	}
	if row.Steps == 0 {
		return row, errors.New("no step finished")
	}
	return row, nil
}

// memAvailable is the host's MemAvailable in bytes.
func memAvailable() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemAvailable:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// stepUntil plays scalePolicy on env (at base) from step *k on until
// deadline, appending each step's latency to lat under mu and counting
// failed steps in errs.
func stepUntil(ctx context.Context, env *envcore.Env, base string, deadline time.Time, k *int, mu *sync.Mutex, lat *[]float64, errs *atomic.Int64) {
	for ; time.Now().Before(deadline) && ctx.Err() == nil; *k++ {
		act := strings.ReplaceAll(scalePolicy[*k%len(scalePolicy)], "{base}", base)
		t0 := time.Now()
		_, info, err := env.StepText(ctx, act)
		d := ms(time.Since(t0))
		if err != nil || info.ActionError != "" {
			errs.Add(1)
			continue
		}
		mu.Lock()
		*lat = append(*lat, d)
		mu.Unlock()
	}
}

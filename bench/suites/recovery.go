package suites

// The recovery suite measures what a browser process's death costs a
// server on a supervised pool (envcore.LaunchPool, docs/envcore.md
// "Browser processes"), through the protocol, for each pool size:
//
//   - recovery: N environments step a page in episodes of a few steps;
//     the browser process with the most environments is killed with
//     SIGKILL. Measured: the time from the kill to the first new
//     environment that makes and steps successfully, to the supervisor's
//     replacement, and to each lost environment's first good step after
//     its reset; how many environments were lost and how many completed
//     steps their lost episodes held (steps lost), and the error replies.
//   - cost: N environments (32) step as fast as they can for a while on a
//     pool of each size; measured: the CPU time of the browsers' process
//     trees per step and their memory (proportional set size) at the end,
//     against one process.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/internal/procstat"
	"github.com/webserv-rl/webserv/netroute"
	"github.com/webserv-rl/webserv/server"
)

// RecoveryOptions configure the recovery suite.
type RecoveryOptions struct {
	Browsers []int         // pool sizes (1, 2, 4)
	N        int           // environments in the recovery runs (16)
	CostN    int           // environments in the cost runs (32)
	Run      time.Duration // cost: measured stepping per pool size (30 s)
	Episode  int           // steps per episode before a reset (10)
	IdleMs   int           // idle window (100)
	Out      string
	Command  string
	Smoke    bool
	Log      io.Writer
	// Logger receives the pool's and server's log (the supervisor's
	// restarts); nil discards it.
	Logger *zap.Logger
	// Limit bounds each wait for an event the kill should cause (the
	// replacement, a lost environment's recovery); 0 is 3 minutes.
	Limit time.Duration
}

// RecoveryRow is one pool size's recovery from a killed browser process.
type RecoveryRow struct {
	Browsers int `json:"browsers"`
	N        int `json:"n"`
	// FirstNewEnvMs: from the kill to the first new environment that was
	// made and stepped.
	FirstNewEnvMs float64 `json:"first_new_env_ms"`
	// ReplacedMs: from the kill to the supervisor's replacement.
	ReplacedMs float64 `json:"replaced_ms"`
	// EnvsLost: environments that answered browser_crashed; StepsLost:
	// the completed steps of their lost episodes.
	EnvsLost  int `json:"envs_lost"`
	StepsLost int `json:"steps_lost"`
	// Recovered: from the kill to each lost environment's first good
	// step after its reset.
	Recovered Stats `json:"recovered_ms"`
	// Errors: error replies of every kind (browser_crashed included).
	Errors int `json:"errors"`
}

// RecoveryCostRow is one pool size's cost at CostN environments.
type RecoveryCostRow struct {
	Browsers     int     `json:"browsers"`
	N            int     `json:"n"`
	Steps        int     `json:"steps"`
	StepsPerSec  float64 `json:"steps_per_s"`
	CPUmsPerStep float64 `json:"browser_cpu_ms_per_step"`
	PSSMiB       float64 `json:"browser_pss_mib"`
	// CPURatio and PSSRatio are against the one-process row.
	CPURatio float64 `json:"cpu_ratio"`
	PSSRatio float64 `json:"pss_ratio"`
}

// RecoveryReport is the recovery suite's output.
type RecoveryReport struct {
	Header
	Recovery []RecoveryRow     `json:"recovery"`
	Cost     []RecoveryCostRow `json:"cost"`
}

// recoveryPage is the stepped page: each click counts.
const recoveryPage = `<!doctype html><title>Counter</title><h1>Counter</h1>
<button onclick="document.getElementById('n').textContent = String(Number(document.getElementById('n').textContent) + 1)">Add</button>
<p id="n">0</p>`

// Recovery runs the recovery suite.
func Recovery(ctx context.Context, o RecoveryOptions) (*RecoveryReport, error) {
	if len(o.Browsers) == 0 {
		o.Browsers = []int{1, 2, 4}
	}
	if o.N <= 0 {
		o.N = 16
	}
	if o.CostN <= 0 {
		o.CostN = 32
	}
	if o.Run <= 0 {
		o.Run = 30 * time.Second
	}
	if o.Episode <= 0 {
		o.Episode = 10
	}
	if o.IdleMs <= 0 {
		o.IdleMs = 100
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Limit <= 0 {
		o.Limit = 3 * time.Minute
	}
	rep := &RecoveryReport{Header: newHeader("recovery", o.Command, o.Smoke)}
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, recoveryPage) }))
	defer page.Close()
	for _, b := range o.Browsers {
		row, err := recoveryOne(ctx, o, b, page.URL)
		if err != nil {
			return nil, fmt.Errorf("recovery with %d browsers: %w", b, err)
		}
		rep.Recovery = append(rep.Recovery, row)
	}
	for _, b := range o.Browsers {
		row, err := recoveryCost(ctx, o, b, page.URL)
		if err != nil {
			return nil, fmt.Errorf("cost with %d browsers: %w", b, err)
		}
		if len(rep.Cost) > 0 {
			row.CPURatio, row.PSSRatio = row.CPUmsPerStep/rep.Cost[0].CPUmsPerStep, row.PSSMiB/rep.Cost[0].PSSMiB
		} else {
			row.CPURatio, row.PSSRatio = 1, 1
		}
		rep.Cost = append(rep.Cost, row)
	}
	var md strings.Builder
	md.WriteString("| browsers | N | first new env (ms) | replaced (ms) | envs lost | steps lost | lost envs recovered p50 / max (ms) | errors |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Recovery {
		fmt.Fprintf(&md, "| %d | %d | %.0f | %.0f | %d | %d | %.0f / %.0f | %d |\n", r.Browsers, r.N, r.FirstNewEnvMs, r.ReplacedMs, r.EnvsLost, r.StepsLost, r.Recovered.P50, r.Recovered.Max, r.Errors)
	}
	md.WriteString("\n| browsers | N | steps/s | browser CPU ms/step | browser PSS (MiB) | CPU vs 1 | memory vs 1 |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Cost {
		fmt.Fprintf(&md, "| %d | %d | %.1f | %.1f | %.0f | %.2fx | %.2fx |\n", r.Browsers, r.N, r.StepsPerSec, r.CPUmsPerStep, r.PSSMiB, r.CPURatio, r.PSSRatio)
	}
	var parts []string
	for _, r := range rep.Recovery {
		parts = append(parts, fmt.Sprintf("%d browsers: %d of %d envs lost, first new env %.1f s", r.Browsers, r.EnvsLost, r.N, r.FirstNewEnvMs/1000))
	}
	last := rep.Cost[len(rep.Cost)-1]
	rep.Headline = fmt.Sprintf("After a browser kill at N=%d: %s; %d browsers cost %.2fx the memory and %.2fx the CPU per step of one at N=%d.",
		o.N, strings.Join(parts, "; "), last.Browsers, last.PSSRatio, last.CPURatio, o.CostN)
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, err
	}
	if err := plotRecovery(o.Out, rep); err != nil {
		return nil, err
	}
	return rep, write(o.Out, &rep.Header, rep, md.String())
}

// recoveryServer is a server on a routed pool of b browser processes.
type recoveryServer struct {
	pool   *envcore.Pool
	srv    *server.Server
	hs     *httptest.Server
	router *netroute.Router
}

func startRecoveryServer(ctx context.Context, log *zap.Logger, b int, idleMs int) (*recoveryServer, error) {
	router := netroute.New(log, netroute.Options{})
	pool, err := envcore.LaunchPool(ctx, log, server.Routed(envcore.BrowserOptions{}, router), b)
	if err != nil {
		_ = router.Close()
		return nil, err
	}
	srv := server.New(log, pool, server.OpenFactory{}, server.Config{MaxEnvs: 256, MaxCreating: 8,
		Env: envcore.Config{IdleWindow: time.Duration(idleMs) * time.Millisecond}})
	return &recoveryServer{pool: pool, srv: srv, hs: httptest.NewServer(srv.Handler()), router: router}, nil
}

func (s *recoveryServer) close() {
	s.hs.Close()
	_ = s.srv.Close()
	_ = s.pool.Close()
	_ = s.router.Close()
}

// recoveryEnv is one stepping environment of a recovery run.
type recoveryEnv struct {
	c         *protoClient
	id        string
	steps     atomic.Int64 // completed steps of the current episode
	lostSteps atomic.Int64
	lost      atomic.Bool
	recovered atomic.Int64  // unix ns of the first good step after the loss
	back      chan struct{} // closed then
}

func recoveryOne(ctx context.Context, o RecoveryOptions, b int, pageURL string) (RecoveryRow, error) {
	row := RecoveryRow{Browsers: b, N: o.N}
	s, err := startRecoveryServer(ctx, o.Logger, b, o.IdleMs)
	if err != nil {
		return row, err
	}
	defer s.close()
	envs := make([]*recoveryEnv, o.N)
	for i := range envs {
		c, err := dialProto(ctx, s.hs.URL)
		if err != nil {
			return row, err
		}
		defer c.close()
		made, err := c.call(ctx, "make", "", map[string]any{"start_url": pageURL})
		if err != nil {
			return row, err
		}
		envs[i] = &recoveryEnv{c: c, id: made["env"].(string), back: make(chan struct{})}
	}
	var errorsSeen atomic.Int64
	var killedAt atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	warm := make(chan struct{}, o.N)
	lostCh := make(chan *recoveryEnv, o.N)
	for _, e := range envs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			warmed := false
			for {
				select {
				case <-stop:
					return
				default:
				}
				if e.steps.Load() >= int64(o.Episode) {
					if _, err := e.c.call(ctx, "reset", e.id, nil); err != nil {
						errorsSeen.Add(1)
						continue
					}
					e.steps.Store(0)
				}
				_, err := e.c.call(ctx, "step", e.id, map[string]any{"action": `click("Add")`})
				var pe *protoError
				switch {
				case err == nil:
					e.steps.Add(1)
					if e.lost.Load() && e.recovered.Load() == 0 {
						e.recovered.Store(time.Now().UnixNano())
						close(e.back)
					}
					if !warmed {
						warmed = true
						warm <- struct{}{}
					}
				case errors.As(err, &pe) && pe.code == "browser_crashed":
					errorsSeen.Add(1)
					if !e.lost.Swap(true) {
						e.lostSteps.Store(e.steps.Load())
						lostCh <- e
					}
					e.steps.Store(int64(o.Episode)) // reset next
				case ctx.Err() != nil:
					return
				default:
					errorsSeen.Add(1)
				}
			}
		}()
	}
	for range envs {
		select {
		case <-warm:
		case <-ctx.Done():
			return row, ctx.Err()
		}
	}
	h := s.pool.Health()
	victim := h.Processes[0]
	for _, p := range h.Processes {
		if p.Envs > victim.Envs {
			victim = p
		}
	}
	replaced := s.pool.Replaced()
	if err := isBrowserProcess(victim.PID); err != nil {
		close(stop)
		wg.Wait()
		return row, fmt.Errorf("the pool's health names process %d as a browser: %w", victim.PID, err)
	}
	killedAt.Store(time.Now().UnixNano())
	kill := time.Now()
	if err := syscall.Kill(victim.PID, syscall.SIGKILL); err != nil {
		close(stop)
		wg.Wait()
		return row, err
	}
	// missed says what was seen when an event the kill should cause did
	// not come within o.Limit.
	missed := func(what string) error {
		return fmt.Errorf("%s did not come within %s of killing browser process %d (%s); the pool: %+v",
			what, o.Limit, victim.PID, processState(victim.PID), s.pool.Health())
	}
	waitKill := func(ch <-chan struct{}, what string) error {
		t := time.NewTimer(o.Limit)
		defer t.Stop()
		select {
		case <-ch:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return missed(what)
		}
	}
	// The first new environment: make and step, again until it works.
	c, err := dialProto(ctx, s.hs.URL)
	if err != nil {
		close(stop)
		wg.Wait()
		return row, err
	}
	defer c.close()
	for {
		made, err := c.call(ctx, "make", "", map[string]any{"start_url": pageURL})
		if err == nil {
			if _, err = c.call(ctx, "step", made["env"].(string), map[string]any{"action": `click("Add")`}); err == nil {
				row.FirstNewEnvMs = ms(time.Since(kill))
				break
			}
		}
		errorsSeen.Add(1)
		if ctx.Err() != nil {
			close(stop)
			wg.Wait()
			return row, ctx.Err()
		}
	}
	err = waitKill(replaced, "the pool's replacement of the killed process")
	if err == nil {
		row.ReplacedMs = ms(time.Since(kill))
	}
	// Every environment of the killed process answers browser_crashed
	// once, then steps again after its reset.
	for i := 0; i < victim.Envs && err == nil; i++ {
		t := time.NewTimer(o.Limit)
		select {
		case e := <-lostCh:
			err = waitKill(e.back, "the recovery of lost environment "+e.id)
		case <-ctx.Done():
			err = ctx.Err()
		case <-t.C:
			err = missed(fmt.Sprintf("the browser_crashed answer of %d more of its %d environments", victim.Envs-i, victim.Envs))
		}
		t.Stop()
	}
	close(stop)
	wg.Wait()
	if err != nil {
		return row, err
	}
	var rec []float64
	for _, e := range envs {
		if e.lost.Load() {
			row.EnvsLost++
			row.StepsLost += int(e.lostSteps.Load())
			rec = append(rec, float64(e.recovered.Load()-killedAt.Load())/1e6)
		}
	}
	row.Recovered = stats(rec)
	row.Errors = int(errorsSeen.Load())
	return row, ctx.Err()
}

func recoveryCost(ctx context.Context, o RecoveryOptions, b int, pageURL string) (RecoveryCostRow, error) {
	row := RecoveryCostRow{Browsers: b, N: o.CostN}
	s, err := startRecoveryServer(ctx, o.Logger, b, o.IdleMs)
	if err != nil {
		return row, err
	}
	defer s.close()
	type stepper struct {
		c  *protoClient
		id string
	}
	var ss []stepper
	for range o.CostN {
		c, err := dialProto(ctx, s.hs.URL)
		if err != nil {
			return row, err
		}
		defer c.close()
		made, err := c.call(ctx, "make", "", map[string]any{"start_url": pageURL})
		if err != nil {
			return row, err
		}
		ss = append(ss, stepper{c, made["env"].(string)})
	}
	roots := func() []int {
		var pids []int
		for _, p := range s.pool.Health().Processes {
			pids = append(pids, p.PID)
		}
		return pids
	}
	cpu := func() (time.Duration, error) {
		var sum time.Duration
		for _, pid := range roots() {
			d, err := procstat.TreeCPU(pid)
			if err != nil {
				return 0, err
			}
			sum += d
		}
		return sum, nil
	}
	before, err := cpu()
	if err != nil {
		return row, err
	}
	var steps atomic.Int64
	var failed error
	var mu sync.Mutex
	start := time.Now()
	deadline := start.Add(o.Run)
	var wg sync.WaitGroup
	for _, st := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				if _, err := st.c.call(ctx, "step", st.id, map[string]any{"action": `click("Add")`}); err != nil {
					mu.Lock()
					failed = err
					mu.Unlock()
					return
				}
				steps.Add(1)
			}
		}()
	}
	wg.Wait()
	if failed != nil {
		return row, failed
	}
	elapsed := time.Since(start)
	after, err := cpu()
	if err != nil {
		return row, err
	}
	row.Steps = int(steps.Load())
	row.StepsPerSec = float64(row.Steps) / elapsed.Seconds()
	if row.Steps > 0 {
		row.CPUmsPerStep = ms(after-before) / float64(row.Steps)
	}
	row.PSSMiB = pssUnder(roots(), nil) / (1 << 20)
	return row, nil
}

// isBrowserProcess checks that pid is a Chromium browser process: one
// with the DevTools pipe switch and no --type (which its zygotes,
// renderers and helpers have).
func isBrowserProcess(pid int) error {
	cmd, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return fmt.Errorf("read its command line: %w", err)
	}
	line := strings.ReplaceAll(string(cmd), "\x00", " ")
	if !strings.Contains(line, "--remote-debugging-pipe") || strings.Contains(line, "--type=") {
		return fmt.Errorf("it runs %.200q, not a browser process", line)
	}
	return nil
}

// processState is what /proc says of pid: its state letter and command,
// or that it is gone.
func processState(pid int) string {
	p, err := procstat.ReadProcess(pid)
	if err != nil {
		return "gone"
	}
	return fmt.Sprintf("still there: %+v", p)
}

package envcore_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
)

// BenchmarkSandbox measures what Chromium's sandbox costs, against the
// --no-sandbox launch WebServ used as root before issue 28, side by side
// in one run:
//
//   - CPU per step: both browsers step through the scale workload's loop
//     on shops of their own at once (as BenchmarkSwitches does), CPU of
//     each browser's process tree per step;
//   - memory per environment: 8 environments on a shop opened in each
//     browser, one after the other, the growth of the tree's proportional set
//     size (PSS, shared pages split between the processes that map them)
//     divided by 8.
//
// Ratios are sandboxed/unsandboxed. BenchmarkSandboxLaunch measures the
// launch.
//
//	go test ./envcore -run '^$' -bench 'Sandbox$' -benchtime 4x -count 5
func BenchmarkSandbox(b *testing.B) {
	ctx := testCtx(b)
	confs := []envcore.BrowserOptions{{}, {NoSandbox: true}}
	browsers := make([]*envcore.Browser, len(confs))
	for c, opts := range confs {
		br, err := envcore.Launch(ctx, zap.NewNop(), opts)
		if err != nil {
			b.Fatal(err)
		}
		defer br.Close()
		browsers[c] = br
	}

	// Memory per environment: one browser after the other, on one shop.
	const perEnv = 8
	base := shopServer(b)
	var mem [2]float64
	var envs []*envcore.Env
	for c, br := range browsers {
		pid := envcore.BrowserPID(br)
		before := treePSS(b, pid)
		for i := 0; i < perEnv; i++ {
			env := br.NewEnv(envcore.Config{IdleWindow: 200 * time.Millisecond})
			envs = append(envs, env)
			if _, _, err := env.Reset(ctx, base+"/"); err != nil {
				b.Fatal(err)
			}
			mustStep(b, env, `click("categories.clothing-2")`)
		}
		mem[c] = (treePSS(b, pid) - before) / perEnv
	}
	for _, e := range envs {
		_ = e.Close()
	}

	// CPU per step, both at once.
	sides := []*cpuSide{newShopSide(b, browsers[0], envcore.BrowserPID(browsers[0])), newShopSide(b, browsers[1], envcore.BrowserPID(browsers[1]))}
	ms := sideBySide(b, sides)

	b.ReportMetric(ms[0]/6, "sandboxed-cpu-ms/step")
	b.ReportMetric(ms[1]/6, "unsandboxed-cpu-ms/step")
	b.ReportMetric(ms[0]/ms[1], "cpu-ratio")
	b.ReportMetric(mem[0]/(1<<20), "sandboxed-MiB/env")
	b.ReportMetric(mem[1]/(1<<20), "unsandboxed-MiB/env")
	b.ReportMetric(mem[0]/mem[1], "mem-ratio")
}

// BenchmarkSandboxLaunch measures Launch to the first observation of a
// page (a fixture, 100 ms idle window), then Close, with the sandbox and
// with --no-sandbox, alternating, b.N launches of each: the medians (ms)
// and their ratio (sandboxed/unsandboxed).
//
//	go test ./envcore -run '^$' -bench SandboxLaunch -benchtime 20x -count 3
func BenchmarkSandboxLaunch(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	confs := []envcore.BrowserOptions{{}, {NoSandbox: true}}
	launch := [2][]float64{}
	for i := 0; i < b.N; i++ {
		for c, opts := range confs {
			t0 := time.Now()
			br, err := envcore.Launch(ctx, zap.NewNop(), opts)
			if err != nil {
				b.Fatal(err)
			}
			env := br.NewEnv(envcore.Config{IdleWindow: 100 * time.Millisecond})
			if _, _, err := env.Reset(ctx, site.URL+"/a.html"); err != nil {
				b.Fatal(err)
			}
			launch[c] = append(launch[c], float64(time.Since(t0).Microseconds())/1000)
			_ = env.Close()
			_ = br.Close()
		}
	}
	l0, l1 := medianOf(launch[0]), medianOf(launch[1])
	b.ReportMetric(l0, "sandboxed-launch-ms")
	b.ReportMetric(l1, "unsandboxed-launch-ms")
	b.ReportMetric(l0/l1, "launch-ratio")
}

// treePSS is the proportional set size, in bytes, of process root and its
// descendants.
func treePSS(b *testing.B, root int) float64 {
	total := 0.0
	for _, p := range browserTree(b, root) {
		rollup, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/smaps_rollup")
		if err != nil {
			continue // ended meanwhile
		}
		for _, line := range strings.Split(string(rollup), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "Pss:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				total += kb * 1024
			}
		}
	}
	return total
}

func medianOf(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

package suites_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/webserv-rl/webserv/bench/suites"
	"github.com/webserv-rl/webserv/hosting/hostingtest"
)

// The density suite's smoke mode: the bundled shop in Incus containers,
// two N, seconds each; the report must carry every figure the full run
// quotes, the containers' memory among them.
func TestDensitySmoke(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := t.TempDir()
	bin := hostingtest.BuildStatic(t, "sites/shop/cmd/shop", filepath.Join(dir, "shop"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	_, err := suites.Density(ctx, suites.DensityOptions{
		Shop: suites.ShopOptions{Command: []string{bin}, Work: dir},
		Ns:   []int{1, 2}, Run: 4 * time.Second, Episode: 3, Image: "webserv-test-density-shop",
		Out: out, Command: "test", Smoke: true, Logger: zaptest.NewLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	var rep suites.DensityReport
	checkFiles(t, out, "density", &rep)
	checkHeader(t, rep.Header, "density")
	if len(rep.Rows) == 0 {
		t.Fatal("no rows")
	}
	if rep.StopReason == "" || rep.LatencyBoundMs <= 0 || rep.PerPairMiB <= 0 || rep.MemoryBoundN <= 0 || rep.StepsPerSecPerCore <= 0 || len(rep.Sizing) == 0 {
		t.Errorf("summary: stop %q, bound %v ms, per pair %v MiB, memory bound %d, steps/s per core %v, %d sizing rows",
			rep.StopReason, rep.LatencyBoundMs, rep.PerPairMiB, rep.MemoryBoundN, rep.StepsPerSecPerCore, len(rep.Sizing))
	}
	for _, r := range rep.Rows {
		if r.Broke != "" && !strings.HasPrefix(r.Broke, "latency") {
			t.Errorf("N=%d broke %q (first error %q)", r.N, r.Broke, r.FirstError)
			continue
		}
		if r.Containers < r.N || r.ContainersMiB <= 0 || r.BrowserPSSMiB <= 0 {
			t.Errorf("N=%d: %d containers holding %.1f MiB, browser PSS %.1f MiB", r.N, r.Containers, r.ContainersMiB, r.BrowserPSSMiB)
		}
		// Per pair counts the containers' memory, not the browser's alone.
		if want := (r.BrowserPSSMiB + r.ContainersMiB) / float64(r.N); r.PerPairMiB < want-0.01 || r.PerPairMiB <= r.BrowserPSSMiB/float64(r.N) {
			t.Errorf("N=%d: per pair %.1f MiB, want (browser + containers) / N = %.1f", r.N, r.PerPairMiB, want)
		}
		if r.Steps <= 0 || r.StepsPerSec <= 0 || r.Step.P50 <= 0 || r.Step.P95 < r.Step.P50 {
			t.Errorf("N=%d steps: %d, %.2f/s, %+v", r.N, r.Steps, r.StepsPerSec, r.Step)
		}
		if r.Resets <= 0 || r.ResetP50 <= 0 || r.ResetP99 < r.ResetP50 {
			t.Errorf("N=%d resets: %d, p50 %.0f ms, p99 %.0f ms", r.N, r.Resets, r.ResetP50, r.ResetP99)
		}
		if r.MemAvailableGiB <= 0 || r.FDs <= 0 {
			t.Errorf("N=%d: MemAvailable %.1f GiB, %d fds", r.N, r.MemAvailableGiB, r.FDs)
		}
	}
}

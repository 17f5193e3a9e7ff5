package suites_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/webserv-rl/webserv/bench/suites"
	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/hosting/hostingtest"
)

// Benchmarks are not tests: these run each suite's smoke mode (seconds)
// against the real browser, shop and Incus, and check the output it
// writes, never its figures.

func shop(t *testing.T) suites.ShopOptions {
	dir := t.TempDir()
	return suites.ShopOptions{Command: []string{hostingtest.BuildStatic(t, "sites/shop/cmd/shop", filepath.Join(dir, "shop"))}, Work: dir}
}

// checkFiles reads out/suite.json into rep and checks the Markdown and a
// real PNG are there.
func checkFiles(t *testing.T, out, suite string, rep any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, suite+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, rep); err != nil {
		t.Fatalf("%s.json: %v", suite, err)
	}
	md, err := os.ReadFile(filepath.Join(out, suite+".md"))
	if err != nil || !bytes.Contains(md, []byte("Machine: ")) || !bytes.Contains(md, []byte("Command: ")) {
		t.Errorf("%s.md must state machine and command: %v\n%s", suite, err, md)
	}
	png, err := os.ReadFile(filepath.Join(out, suite+".png"))
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("%s.png: %v", suite, err)
	}
}

func checkHeader(t *testing.T, h suites.Header, suite string) {
	t.Helper()
	if h.Suite != suite || !h.Smoke || h.Command == "" || h.Machine.Cores <= 0 || h.Machine.Chromium == "" || h.Headline == "" || h.Seconds <= 0 {
		t.Errorf("header = %+v", h)
	}
}

func TestStepSmoke(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	if _, err := suites.Step(context.Background(), suites.StepOptions{Shop: shop(t), Reps: 1, Out: out, Command: "test", Smoke: true}); err != nil {
		t.Fatal(err)
	}
	var rep suites.StepReport
	checkFiles(t, out, "step", &rep)
	checkHeader(t, rep.Header, "step")
	types := map[string]bool{}
	for _, r := range rep.Rows {
		types[r.Type] = true
		if r.Total.N == 0 || r.Total.P50 <= 0 || r.Settle.P50 <= 0 || r.Extract.P50 <= 0 || r.HTMLBytes <= 0 {
			t.Errorf("row %+v", r)
		}
	}
	for _, typ := range []string{"goto", "hover", "click", "select", "fill", "press", "go_back", "noop"} {
		if !types[typ] {
			t.Errorf("no %s row", typ)
		}
	}
	idles := map[int]bool{}
	for _, s := range rep.Samples {
		idles[s.IdleMs] = true
	}
	if def := int(envcore.DefaultIdleWindow.Milliseconds()); !idles[def] || !idles[500] {
		t.Errorf("idle windows measured: %v", idles)
	}
}

func TestScaleSmoke(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	if _, err := suites.Scale(context.Background(), suites.ScaleOptions{Shop: shop(t), Ns: []int{1, 2}, Run: 3 * time.Second, Out: out, Command: "test", Smoke: true}); err != nil {
		t.Fatal(err)
	}
	var rep suites.ScaleReport
	checkFiles(t, out, "scale", &rep)
	checkHeader(t, rep.Header, "scale")
	if len(rep.Rows) != 2 || rep.Rows[0].N != 1 || rep.Rows[1].N != 2 {
		t.Fatalf("rows = %+v", rep.Rows)
	}
	for _, r := range rep.Rows {
		if r.Steps == 0 || r.StepsPerSec <= 0 || r.Latency.P95 <= 0 || r.CPUPercent <= 0 || r.PSSPerEnvMiB <= 0 {
			t.Errorf("row %+v", r)
		}
	}
	if rep.Largest < 1 {
		t.Errorf("largest N = %d", rep.Largest)
	}
}

// Needs incusd (scripts/incus-setup.sh) and a btrfs pool.
func TestSystemSmoke(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	if _, err := suites.System(context.Background(), suites.SystemOptions{Out: out, Work: t.TempDir(), Pool: "webserv", Command: "test", Smoke: true}); err != nil {
		t.Fatal(err)
	}
	var rep suites.SystemReport
	checkFiles(t, out, "system", &rep)
	checkHeader(t, rep.Header, "system")
	if len(rep.Results) != 2 || rep.Results[0].Backend != "incus-cow" || rep.Results[1].Backend != "full-copy" {
		t.Fatalf("results = %+v", rep.Results)
	}
	for _, r := range rep.Results {
		if r.LaunchP50 <= 0 || r.ResetP50 <= 0 || r.ForkMs <= 0 || r.WrittenP50 <= 0 || r.MemoryP50 <= 0 || r.StateBytes != 4<<20 {
			t.Errorf("%s: incomplete result %+v", r.Backend, r)
		}
	}
	// Copy-on-write writes far less than the state; the full copy writes it all.
	if cow, full := rep.Results[0].WrittenP50, rep.Results[1].WrittenP50; cow >= 1<<20 || full < 4<<20 {
		t.Errorf("written per launch: cow %d, full copy %d", cow, full)
	}
}

func TestUISmoke(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	if _, err := suites.UI(context.Background(), suites.UIOptions{Rounds: 1, Steps: 3, Out: out, Command: "test", Smoke: true}); err != nil {
		t.Fatal(err)
	}
	var rep suites.UIReport
	checkFiles(t, out, "ui", &rep)
	checkHeader(t, rep.Header, "ui")
	if len(rep.Rows) != 3 || rep.Rows[0].Latency.N != 3 || !rep.ViewerFrames {
		t.Errorf("report = %+v", rep)
	}
}

func TestRecoverySmoke(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	if _, err := suites.Recovery(context.Background(), suites.RecoveryOptions{Browsers: []int{1, 2}, N: 4, CostN: 4, Run: 2 * time.Second, Episode: 3, Out: out, Command: "test", Smoke: true,
		Logger: zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel))}); err != nil {
		t.Fatal(err)
	}
	var rep suites.RecoveryReport
	checkFiles(t, out, "recovery", &rep)
	checkHeader(t, rep.Header, "recovery")
	if len(rep.Recovery) != 2 || len(rep.Cost) != 2 {
		t.Fatalf("report = %+v", rep)
	}
	for _, r := range rep.Recovery {
		// Every environment of the killed process is lost (the one
		// process, or the one with the most of the two) and comes back.
		if r.EnvsLost == 0 || r.EnvsLost > r.N || r.FirstNewEnvMs <= 0 || r.ReplacedMs <= 0 || r.Recovered.N != r.EnvsLost {
			t.Errorf("recovery row %+v", r)
		}
	}
	if rep.Recovery[0].EnvsLost != 4 {
		t.Errorf("one browser process killed lost %d of 4 environments, want all", rep.Recovery[0].EnvsLost)
	}
	for _, r := range rep.Cost {
		if r.Steps == 0 || r.CPUmsPerStep <= 0 || r.PSSMiB <= 0 {
			t.Errorf("cost row %+v", r)
		}
	}
}

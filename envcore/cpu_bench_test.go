package envcore_test

import (
	"context"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/internal/procstat"
	"github.com/webserv-rl/webserv/sites/shop"
)

// The benchmarks in this file run two browsers side by side, each on a
// bundled shop of its own, and read the CPU of each browser's process tree
// (browser, renderers, GPU and utility processes) from /proc. Both see the
// same machine at the same moment, so their ratio holds on a machine whose
// speed drifts from one minute to the next, which absolute figures do not.

// BenchmarkSwitches compares Chromium as WebServ launches it with a
// candidate: the binary $WEBSERV_CANDIDATE_CHROMIUM (by default the same)
// given the extra switches in $WEBSERV_CANDIDATE_FLAGS (separated by
// spaces, as in WEBSERV_CHROMIUM_FLAGS; a disable-features list replaces
// WebServ's). Both run the scale workload's loop at a 500 ms idle window,
// and it reports the CPU per step of each and their ratio
// (candidate/as-launched).
//
//	WEBSERV_CANDIDATE_FLAGS='--disable-lcd-text' \
//	  go test ./envcore -run '^$' -bench Switches -benchtime 4x -count 3
//
// The configuration before issue 16 (the full browser, RenderDocument on):
//
//	WEBSERV_CANDIDATE_CHROMIUM=/usr/bin/chromium \
//	WEBSERV_CANDIDATE_FLAGS='--disable-features=site-per-process,TranslateUI,BackForwardCache,MediaRouter,OptimizationHints,AutofillServerCommunication,InterestFeedContentSuggestions' \
//	  go test ./envcore -run '^$' -bench Switches -benchtime 4x -count 3
func BenchmarkSwitches(b *testing.B) {
	ctx := testCtx(b)
	other, err := envcore.Launch(ctx, zap.NewNop(), envcore.BrowserOptions{
		Bin: os.Getenv("WEBSERV_CANDIDATE_CHROMIUM"), Flags: strings.Fields(os.Getenv("WEBSERV_CANDIDATE_FLAGS"))})
	if err != nil {
		b.Fatal(err)
	}
	defer other.Close()
	sides := []*cpuSide{newShopSide(b, browser, envcore.BrowserPID(browser)), newShopSide(b, other, envcore.BrowserPID(other))}
	ms := sideBySide(b, sides)
	b.ReportMetric(ms[0]/6, "as-launched-cpu-ms/step")
	b.ReportMetric(ms[1]/6, "candidate-cpu-ms/step")
	b.ReportMetric(ms[1]/ms[0], "ratio")
}

// BenchmarkChromiumFloor measures what WebServ adds to Chromium's own cost
// of the scale workload: WebServ steps through the loop (goto the home
// page, a category, its second page, type in the search box, Enter, the
// cart) while a second browser, launched the same way but driven by bare
// CDP, with no injected script, no settling and no observations, loads
// the same five pages, each followed by the same 500 ms idle window. It
// reports both browsers' CPU per loop and their ratio (WebServ/bare): the
// bare browser's figure is the floor no step of this loop can go below
// with this Chromium.
//
//	go test ./envcore -run '^$' -bench ChromiumFloor -benchtime 4x -count 3
func BenchmarkChromiumFloor(b *testing.B) {
	ctx := testCtx(b)
	ws := newShopSide(b, browser, envcore.BrowserPID(browser))
	bare := newBareSide(b, ctx, ws)
	ms := sideBySide(b, []*cpuSide{ws, bare})
	b.ReportMetric(ms[0], "webserv-cpu-ms/loop")
	b.ReportMetric(ms[1], "bare-cpu-ms/loop")
	b.ReportMetric(ms[0]/ms[1], "ratio")
}

// BenchmarkRequestReportsCPU weighs the browser's reports of every
// request (netwatch.go): the scale workload's loop in the browser as
// launched and, side by side, in one whose tabs get no Network events.
// It reports both browsers' CPU per step and their ratio
// (reported/unreported). The Go side's share (reading the events off the
// connection) is in this process, which drives both: scale's Go profile
// (`webserv-bench scale`, "Go CPU ms per step") shows it.
//
//	go test ./envcore -run '^$' -bench RequestReportsCPU -benchtime 4x -count 3
func BenchmarkRequestReportsCPU(b *testing.B) {
	other, err := envcore.LaunchUnreported(testCtx(b))
	if err != nil {
		b.Fatal(err)
	}
	defer other.Close()
	sides := []*cpuSide{newShopSide(b, browser, envcore.BrowserPID(browser)), newShopSide(b, other, envcore.BrowserPID(other))}
	ms := sideBySide(b, sides)
	b.ReportMetric(ms[0]/6, "reported-cpu-ms/step")
	b.ReportMetric(ms[1]/6, "unreported-cpu-ms/step")
	b.ReportMetric(ms[0]/ms[1], "ratio")
}

// BenchmarkResourceWatchCPU weighs the resource watch (resources.go: every
// tab's Performance.getMetrics and Runtime.getHeapUsage, before a step and
// every 200 ms of it, every second between steps): the scale workload's
// loop in the browser as launched and, side by side, in one whose pages
// are never sampled. It reports both browsers' CPU per step and their
// ratio (sampled/unsampled); the Go side's share is in this process.
//
//	go test ./envcore -run '^$' -bench ResourceWatchCPU -benchtime 6x -count 5
func BenchmarkResourceWatchCPU(b *testing.B) {
	other, err := envcore.LaunchUnsampled(testCtx(b))
	if err != nil {
		b.Fatal(err)
	}
	defer other.Close()
	sides := []*cpuSide{newShopSide(b, browser, envcore.BrowserPID(browser)), newShopSide(b, other, envcore.BrowserPID(other))}
	ms := sideBySide(b, sides)
	b.ReportMetric(ms[0]/6, "sampled-cpu-ms/step")
	b.ReportMetric(ms[1]/6, "unsampled-cpu-ms/step")
	b.ReportMetric(ms[0]/ms[1], "ratio")
}

// cpuSide is one browser of a side-by-side benchmark: its process tree and
// one loop of its workload.
type cpuSide struct {
	pid  int
	loop func() error
	urls []string // the page after each step of a shop loop
}

// sideBySide runs b.N loops of every side at once and returns each side's
// CPU per loop, in ms.
func sideBySide(b *testing.B, sides []*cpuSide) []float64 {
	b.ResetTimer()
	cpu0 := make([]float64, len(sides))
	for i, s := range sides {
		cpu0[i] = treeCPU(b, s.pid)
	}
	var wg sync.WaitGroup
	for _, s := range sides {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < b.N; i++ {
				if err := s.loop(); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	ms := make([]float64, len(sides))
	for i, s := range sides {
		ms[i] = (treeCPU(b, s.pid) - cpu0[i]) / float64(b.N)
	}
	return ms
}

// newShopSide is an environment of br on a shop of its own, stepping
// through the scale workload's loop at a 500 ms idle window, warmed up by
// one loop.
func newShopSide(b *testing.B, br *envcore.Browser, pid int) *cpuSide {
	ctx := testCtx(b)
	base := shopServer(b)
	env := br.NewEnv(envcore.Config{IdleWindow: 500 * time.Millisecond})
	b.Cleanup(func() { env.Close() })
	if _, _, err := env.Reset(ctx, base+"/"); err != nil {
		b.Fatal(err)
	}
	steps := []string{`goto("` + base + `/")`, `click("categories.clothing-2")`, `click("pages.2")`,
		`fill("search.search-products", "alpine")`, `press("search.search-products", "Enter")`, `click("cart")`}
	s := &cpuSide{pid: pid, loop: func() error {
		for _, a := range steps {
			if _, _, err := env.StepText(ctx, a); err != nil {
				return err
			}
		}
		return nil
	}}
	for _, a := range steps {
		obs, _ := mustStep(b, env, a)
		s.urls = append(s.urls, strings.TrimPrefix(obs.URL, base))
	}
	return s
}

// newBareSide is a second Chromium, launched as Launch launches it but
// driven by bare CDP in a browser context of its own, loading the pages
// that ws's loop shows, on a shop of its own, each followed by the idle
// window.
func newBareSide(b *testing.B, ctx context.Context, ws *cpuSide) *cpuSide {
	base := shopServer(b)
	p, pid := bareTab(b, ctx, envcore.BrowserOptions{}, false)
	if err := (proto.EmulationSetDeviceMetricsOverride{Width: 1280, Height: 720, DeviceScaleFactor: 1}).Call(p); err != nil {
		b.Fatal(err)
	}
	var pages []string // the loop's page loads: a step that stays on its page loads none
	for i, u := range ws.urls {
		if i == 0 || u != ws.urls[i-1] {
			pages = append(pages, u)
		}
	}
	s := &cpuSide{pid: pid, loop: func() error {
		for _, u := range pages {
			wait := p.WaitNavigation(proto.PageLifecycleEventNameLoad)
			if err := p.Navigate(base + u); err != nil {
				return err
			}
			wait()
			time.Sleep(500 * time.Millisecond)
		}
		return nil
	}}
	if err := s.loop(); err != nil { // warm-up
		b.Fatal(err)
	}
	return s
}

// bareTab launches Chromium as Launch does with opts, and returns a tab in
// a browser context of its own, driven by bare CDP (with begin-frame
// control when asked), and the browser's process id. Chromium ends with
// the benchmark.
func bareTab(b *testing.B, ctx context.Context, opts envcore.BrowserOptions, beginFrameControl bool) (*rod.Page, int) {
	br, pid, stop, err := envcore.StartChromium(ctx, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(stop)
	bc, err := proto.TargetCreateBrowserContext{}.Call(br)
	if err != nil {
		b.Fatal(err)
	}
	tg, err := proto.TargetCreateTarget{URL: "about:blank", BrowserContextID: bc.BrowserContextID, EnableBeginFrameControl: beginFrameControl}.Call(br)
	if err != nil {
		b.Fatal(err)
	}
	p, err := br.PageFromTarget(tg.TargetID)
	if err != nil {
		b.Fatal(err)
	}
	return p, pid
}

// shopServer serves a freshly generated bundled shop until the benchmark
// ends and returns its URL.
func shopServer(b *testing.B) string {
	dir := b.TempDir()
	if err := shop.Generate(testCtx(b), dir, shop.GenerateOptions{Seed: 1}); err != nil {
		b.Fatal(err)
	}
	sh, err := shop.Open(dir, shop.Options{})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(sh)
	b.Cleanup(func() { hs.Close(); sh.Close() })
	return hs.URL
}

// treeCPU is the CPU time, in ms, that process root and its descendants
// have used, children that ended included.
func treeCPU(b *testing.B, root int) float64 {
	d, err := procstat.TreeCPU(root)
	if err != nil {
		b.Fatal(err)
	}
	return float64(d) / float64(time.Millisecond)
}

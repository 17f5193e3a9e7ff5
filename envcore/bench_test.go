package envcore_test

import (
	"encoding/json"
	"sort"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/internal/procstat"
)

// Run with:
//
//	go test ./envcore -run '^$' -bench . -benchtime 40x
//
// Figures are medians and 90th percentiles over the iterations (ms), not
// means: the machines are shared and a few slow iterations should not move
// the headline.

// BenchmarkExtract measures a full observation (the DOM walk in the page,
// the CDP round trip and decoding) of a catalogue page with 300 interactive
// elements (/big.html: 100 cards with a link, a price and a button).
func BenchmarkExtract(b *testing.B) {
	env := newEnv(b, envcore.Config{})
	obs := mustReset(b, env, "/big.html")
	if len(obs.Clickable) != 200 || obs.Stats.Visited < 300 {
		b.Fatalf("unexpected page: %d clickable, %d elements", len(obs.Clickable), obs.Stats.Visited)
	}
	for _, opts := range []struct {
		name string
		o    envcore.ObserveOptions
	}{{"html", envcore.ObserveOptions{}}, {"html+axtree", envcore.ObserveOptions{AXTree: true}}} {
		b.Run(opts.name, func(b *testing.B) {
			var total, inPage []time.Duration
			var size int
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				o, err := env.Observe(testCtx(b), opts.o)
				if err != nil {
					b.Fatal(err)
				}
				total = append(total, time.Since(t0))
				inPage = append(inPage, time.Duration(o.Stats.JSMs*float64(time.Millisecond)))
				size = len(o.HTML) + len(o.AXTree)
			}
			report(b, "total", total)
			report(b, "in-page", inPage)
			b.ReportMetric(float64(size), "obs-bytes")
			b.ReportMetric(float64(obs.Stats.Visited), "elements")
		})
	}
}

// BenchmarkObserveBrowserGym measures what BrowserGym's raw objects
// (ObserveOptions.BrowserGym: the accessibility tree and DOM snapshot
// Chromium answers, with the semantic ids joined in) cost over the compact
// observation with geometry, on the catalogue page of BenchmarkExtract:
// the time of an observation and the objects' size as JSON.
//
//	go test ./envcore -run '^$' -bench ObserveBrowserGym -benchtime 30x
func BenchmarkObserveBrowserGym(b *testing.B) {
	env := newEnv(b, envcore.Config{})
	mustReset(b, env, "/big.html")
	for _, c := range []struct {
		name string
		o    envcore.ObserveOptions
	}{
		{"axtree+geometry", envcore.ObserveOptions{AXTree: true, Geometry: true}},
		{"browsergym", envcore.ObserveOptions{AXTree: true, BrowserGym: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var total []time.Duration
			var size int
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				o, err := env.Observe(testCtx(b), c.o)
				if err != nil {
					b.Fatal(err)
				}
				total = append(total, time.Since(t0))
				raw, err := json.Marshal(map[string]any{"axtree_object": o.AXTreeObject, "dom_object": o.DOMObject})
				if err != nil {
					b.Fatal(err)
				}
				size = len(raw)
			}
			report(b, "total", total)
			b.ReportMetric(float64(size), "object-bytes")
		})
	}
}

// BenchmarkStepOverhead measures what a step costs beyond the idle window
// (500ms, the default): acting, the settle wait's overshoot, and extraction,
// for actions that start no request.
func BenchmarkStepOverhead(b *testing.B) {
	env := newEnv(b, envcore.Config{IdleWindow: 500 * time.Millisecond})
	mustReset(b, env, "/inputs.html")
	for _, c := range []struct{ name, action string }{
		{"click", `click("profile.newsletter")`},
		{"type", `fill("profile.full-name", "Grace Hopper")`},
		{"select", `select_option("profile.country", "France")`},
		{"hover", `hover("profile.save-profile")`},
		{"noop", `noop()`},
	} {
		b.Run(c.name, func(b *testing.B) {
			var over, act, extract []time.Duration
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				_, info := mustStep(b, env, c.action)
				if info.ActionError != "" || !info.Settled {
					b.Fatalf("%s: %s %s", c.action, info.ActionError, info.SettleError)
				}
				over = append(over, time.Since(t0)-500*time.Millisecond)
				act = append(act, info.Action)
				extract = append(extract, info.Extract)
			}
			report(b, "overhead", over)
			report(b, "action", act)
			report(b, "extract", extract)
		})
	}
}

func report(b *testing.B, name string, d []time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	ms := func(q float64) float64 {
		return float64(d[int(q*float64(len(d)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(ms(0.5), name+"-p50-ms")
	b.ReportMetric(ms(0.9), name+"-p90-ms")
}

// BenchmarkSeeing measures what the optional parts of the observation cost
// a step, in one run on one page: a noop step (the idle window is 100ms)
// on /big.html (100 cards, 200 elements with ids)
// with nothing extra, geometry only, layout cues, a plain screenshot, and
// set-of-marks (PNG at full size; JPEG shrunk to 1024 pixels).
//
//	go test ./envcore -run '^$' -bench Seeing -benchtime 30x
func BenchmarkSeeing(b *testing.B) {
	env := newEnv(b, envcore.Config{IdleWindow: 100 * time.Millisecond})
	mustReset(b, env, "/big.html")
	for _, c := range []struct {
		name string
		o    envcore.ObserveOptions
	}{
		{"none", envcore.ObserveOptions{}},
		{"geometry", envcore.ObserveOptions{Geometry: true}},
		{"layout", envcore.ObserveOptions{Layout: true}},
		{"screenshot", envcore.ObserveOptions{Screenshot: true}},
		{"marks-png", envcore.ObserveOptions{Marks: true}},
		{"marks-jpeg-1024", envcore.ObserveOptions{Marks: true, Format: "jpeg", MaxSide: 1024}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var step, extract []time.Duration
			var size int
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				obs, info, err := env.StepTextObserve(testCtx(b), "noop()", c.o)
				if err != nil || info.ActionError != "" {
					b.Fatal(err, info.ActionError)
				}
				step = append(step, time.Since(t0))
				extract = append(extract, info.Extract)
				size = len(obs.Screenshot) + len(obs.ScreenshotSOM)
			}
			report(b, "step", step)
			report(b, "extract", extract)
			b.ReportMetric(float64(size), "image-bytes")
		})
	}
}

// BenchmarkNavigationCPU measures the machine's CPU time (every process:
// Chromium's browser, renderer and GPU processes, the fixture server, this
// one) per navigating step, goto between two fixture pages at a 100 ms
// idle window, in the browser as launched and, in the same run, in one
// that keeps RenderDocument on (the switches before it was turned off).
//
//	go test ./envcore -run '^$' -bench NavigationCPU -benchtime 100x
func BenchmarkNavigationCPU(b *testing.B) {
	prev, err := envcore.Launch(testCtx(b), zap.NewNop(), envcore.BrowserOptions{Flags: []string{"disable-features=" + previousFeatures}})
	if err != nil {
		b.Fatal(err)
	}
	defer prev.Close()
	for _, c := range []struct {
		name string
		b    *envcore.Browser
	}{{"as-launched", browser}, {"render-document", prev}} {
		b.Run(c.name, func(b *testing.B) {
			env := c.b.NewEnv(envcore.Config{IdleWindow: 100 * time.Millisecond})
			defer env.Close()
			if _, _, err := env.Reset(testCtx(b), site.URL+"/a.html"); err != nil {
				b.Fatal(err)
			}
			pages := []string{"/big.html", "/a.html", "/inputs.html"}
			b.ResetTimer()
			cpu0 := machineCPU(b)
			for i := 0; i < b.N; i++ {
				mustStep(b, env, `goto("`+site.URL+pages[i%len(pages)]+`")`)
			}
			b.ReportMetric((machineCPU(b)-cpu0)/float64(b.N), "cpu-ms/step")
		})
	}
}

// BenchmarkResetCPU measures the CPU of all processes per reset (a fresh
// browser context, so a new renderer process, and the start page) against
// a navigating step to the same page, in one run, at a 100 ms idle window.
//
//	go test ./envcore -run '^$' -bench ResetCPU -benchtime 40x -count 3
func BenchmarkResetCPU(b *testing.B) {
	env := browser.NewEnv(envcore.Config{IdleWindow: 100 * time.Millisecond})
	defer env.Close()
	if _, _, err := env.Reset(testCtx(b), site.URL+"/a.html"); err != nil {
		b.Fatal(err)
	}
	for _, op := range []struct {
		name string
		run  func() error
	}{
		{"reset", func() error { _, _, err := env.Reset(testCtx(b), site.URL+"/a.html"); return err }},
		{"goto", func() error { _, _, err := env.StepText(testCtx(b), `goto("`+site.URL+`/a.html")`); return err }},
	} {
		b.Run(op.name, func(b *testing.B) {
			cpu0 := machineCPU(b)
			for i := 0; i < b.N; i++ {
				if err := op.run(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((machineCPU(b)-cpu0)/float64(b.N), "cpu-ms/op")
		})
	}
}

// machineCPU is the CPU time all processes have used, in ms.
func machineCPU(b *testing.B) float64 {
	t, err := procstat.Read()
	if err != nil {
		b.Fatal(err)
	}
	return float64(t.Busy) / float64(time.Millisecond)
}

package envcore_test

import (
	"encoding/json"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-rod/rod/lib/proto"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/sites/shop"
)

// BenchmarkStepThreads splits the CPU of a step by Chromium thread, from a
// Chromium trace: the scale workload's loop on the bundled shop (goto the
// home page, a category, its second page, type in the search box, Enter,
// the cart) at a 500 ms idle window, one loop per iteration. It reports the
// thread CPU per step of the renderer's main thread, the browser's main
// thread, drawing (the GPU process's compositor, the renderer's compositor
// and raster workers), networking (the network service and the browser's
// IO thread) and all threads, and of the renderer's main thread the part
// spent in our scripts (the injected bundle, settle polls, actions and the
// observation walk: every evaluation without a script URL). Only the
// first three loops are traced (a loop's trace is about 8 MB).
//
//	go test ./envcore -run '^$' -bench StepThreads -benchtime 3x
func BenchmarkStepThreads(b *testing.B) {
	ctx := testCtx(b)
	dir := b.TempDir()
	if err := shop.Generate(ctx, dir, shop.GenerateOptions{Seed: 1}); err != nil {
		b.Fatal(err)
	}
	s, err := shop.Open(dir, shop.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	hs := httptest.NewServer(s)
	defer hs.Close()
	env := browser.NewEnv(envcore.Config{IdleWindow: 500 * time.Millisecond})
	defer env.Close()
	if _, _, err := env.Reset(ctx, hs.URL+"/"); err != nil {
		b.Fatal(err)
	}
	loop := []string{`goto("` + hs.URL + `/")`, `click("categories.clothing-2")`, `click("pages.2")`,
		`fill("search.search-products", "alpine")`, `press("search.search-products", "Enter")`, `click("cart")`}
	run := func() {
		for _, a := range loop {
			mustStep(b, env, a)
		}
	}
	run() // warm-up, untraced
	rb := envcore.BrowserRod(browser)
	done := make(chan proto.IOStreamHandle, 1)
	wait := rb.Context(ctx).EachEvent(func(e *proto.TracingTracingComplete) bool { done <- e.Stream; return true })
	cats := []string{"toplevel", "devtools.timeline", "disabled-by-default-devtools.timeline", "v8", "blink", "cc", "viz", "gpu", "ipc", "mojom", "loading", "navigation"}
	if err := (proto.TracingStart{TransferMode: proto.TracingStartTransferModeReturnAsStream,
		TraceConfig: &proto.TracingTraceConfig{IncludedCategories: cats}}).Call(rb); err != nil {
		b.Fatal(err)
	}
	traced := min(b.N, 3)
	end := func() {
		if err := (proto.TracingEnd{}).Call(rb); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i == traced {
			end()
		}
		run()
	}
	b.StopTimer()
	if traced == b.N {
		end()
	}
	wait()
	var trace strings.Builder
	for h := <-done; ; {
		r, err := proto.IORead{Handle: h}.Call(rb)
		if err != nil {
			b.Fatal(err)
		}
		trace.WriteString(r.Data)
		if r.EOF {
			break
		}
	}
	steps := float64(traced * len(loop))
	for name, ms := range threadCPU(b, trace.String()) {
		b.ReportMetric(ms/steps, name+"-ms/step")
	}
}

// traceEvent is the part of a Chromium trace event threadCPU reads.
type traceEvent struct {
	Name string  `json:"name"`
	Ph   string  `json:"ph"`
	Pid  int     `json:"pid"`
	Tid  int     `json:"tid"`
	Ts   float64 `json:"ts"`
	Dur  float64 `json:"dur"`
	TDur float64 `json:"tdur"` // thread CPU, µs
	Args struct {
		Name string `json:"name"`
		Data struct {
			URL string `json:"url"`
		} `json:"data"`
	} `json:"args"`
}

// threadCPU sums a trace's thread CPU (ms) by group: of each thread the
// events not nested in another, grouped by process and thread name, and
// our evaluations on the renderer's main thread.
func threadCPU(b *testing.B, trace string) map[string]float64 {
	var tr struct {
		TraceEvents []traceEvent `json:"traceEvents"`
	}
	if err := json.Unmarshal([]byte(trace), &tr); err != nil {
		b.Fatal(err)
	}
	type thread struct{ pid, tid int }
	proc, name := map[int]string{}, map[thread]string{}
	events := map[thread][]traceEvent{}
	for _, e := range tr.TraceEvents {
		switch {
		case e.Ph == "M" && e.Name == "process_name":
			proc[e.Pid] = e.Args.Name
		case e.Ph == "M" && e.Name == "thread_name":
			name[thread{e.Pid, e.Tid}] = e.Args.Name
		case e.Ph == "X":
			events[thread{e.Pid, e.Tid}] = append(events[thread{e.Pid, e.Tid}], e)
		}
	}
	group := func(p, t string) string {
		switch {
		case p == "Renderer" && t == "CrRendererMain":
			return "renderer-main"
		case p == "Browser" && t == "CrBrowserMain":
			return "browser-main"
		case t == "VizCompositorThread" || p == "Renderer" && (t == "Compositor" || strings.HasPrefix(t, "ThreadPool")):
			return "drawing"
		case strings.Contains(p, "NetworkService") || p == "Browser" && t == "Chrome_IOThread":
			return "network"
		}
		return ""
	}
	out := map[string]float64{}
	for th, evs := range events {
		sort.Slice(evs, func(i, j int) bool { return evs[i].Ts < evs[j].Ts || evs[i].Ts == evs[j].Ts && evs[i].Dur > evs[j].Dur })
		g := group(proc[th.pid], name[th])
		end := -1.0
		for _, e := range evs {
			if g == "renderer-main" && e.Name == "EvaluateScript" && e.Args.Data.URL == "" {
				out["renderer-ours"] += e.TDur / 1000
			}
			if e.Ts < end {
				continue // nested in the last top-level event
			}
			end = e.Ts + e.Dur
			out["all"] += e.TDur / 1000
			if g != "" {
				out[g] += e.TDur / 1000
			}
		}
	}
	return out
}

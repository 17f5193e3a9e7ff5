package envcore_test

import (
	"testing"
	"time"

	"github.com/go-rod/rod/lib/proto"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/envcore/chromium"
)

// BenchmarkFramesOnDemand measures what drawing frames costs a navigation:
// the CPU of all processes per navigation between fixture pages (waiting
// for the load event, reading every element's box as an observation does,
// then idling 250 ms as a step's idle window does), in the headless shell as Launch starts it, where
// the compositor draws whenever the page changes, and in the same run with
// begin-frame control, where no frame is drawn unless one is asked for
// (HeadlessExperimental.beginFrame) and this benchmark asks for none.
//
// It measures a mode WebServ does not run in: a page under begin-frame
// control gets no requestAnimationFrame callbacks, IntersectionObserver
// entries (lazy images) or screenshots until frames are driven; see
// bench/README.md, "scale", for a prototype that drove them.
//
//	go test ./envcore -run '^$' -bench FramesOnDemand -benchtime 60x -count 3
func BenchmarkFramesOnDemand(b *testing.B) {
	bin := chromium.Bin(chromium.Options{})
	if bin != chromium.DefaultHeadlessShell {
		b.Fatalf("begin-frame control needs the headless shell (%s); this machine runs %s", chromium.DefaultHeadlessShell, bin)
	}
	for _, mode := range []struct {
		name     string
		onDemand bool
	}{{"compositor", false}, {"begin-frame-control", true}} {
		b.Run(mode.name, func(b *testing.B) {
			var opts envcore.BrowserOptions
			if mode.onDemand {
				opts.Flags = []string{"enable-begin-frame-control"}
			}
			p, _ := bareTab(b, testCtx(b), opts, mode.onDemand)
			pages := []string{"/big.html", "/a.html", "/inputs.html"}
			b.ResetTimer()
			cpu0 := machineCPU(b)
			for i := 0; i < b.N; i++ {
				wait := p.WaitNavigation(proto.PageLifecycleEventNameLoad)
				if err := p.Navigate(site.URL + pages[i%len(pages)]); err != nil {
					b.Fatal(err)
				}
				wait()
				if _, err := p.Eval(`() => [...document.querySelectorAll('*')].filter(e => e.getBoundingClientRect().width > 0).length`); err != nil {
					b.Fatal(err)
				}
				time.Sleep(250 * time.Millisecond)
			}
			b.ReportMetric((machineCPU(b)-cpu0)/float64(b.N), "cpu-ms/nav")
		})
	}
}

package envcore_test

import (
	"sync"
	"testing"
	"time"

	"github.com/webserv-rl/webserv/envcore"
)

// BenchmarkNeighbour measures what a hostile page costs another
// environment: the step time (p50, ms) of a fill in one environment alone,
// then while a second environment runs each hostile page of the suite over
// and over (a script spinning after a click, allocation without bound, a
// DOM doubling every frame, a window.open loop), and the ratio to alone.
//
//	go test ./envcore -run '^$' -bench Neighbour -benchtime 20x
func BenchmarkNeighbour(b *testing.B) {
	env := newEnv(b, envcore.Config{IdleWindow: 100 * time.Millisecond})
	mustReset(b, env, "/inputs.html")
	measure := func(b *testing.B) time.Duration {
		var d []time.Duration
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			_, info := mustStep(b, env, `fill("profile.full-name", "Grace Hopper")`)
			if info.ActionError != "" {
				b.Fatal(info.ActionError)
			}
			d = append(d, time.Since(t0))
		}
		report(b, "step", d)
		return median(d)
	}
	var alone time.Duration
	b.Run("alone", func(b *testing.B) { alone = measure(b) })
	for _, c := range []struct{ name, action string }{
		{"spin", `click("spin")`},
		{"allocate", `click("allocate")`},
		{"grow", `click("grow")`},
		{"tabs", `click("open-tabs")`},
	} {
		b.Run(c.name, func(b *testing.B) {
			hostile := newEnv(b, envcore.Config{ActionTimeout: 2 * time.Second, SettleTimeout: 2 * time.Second, MaxMemoryMB: 256})
			done := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { // reset, misbehave, again: errors are the point
				defer wg.Done()
				for {
					select {
					case <-done:
						return
					default:
					}
					if _, _, err := hostile.Reset(testCtx(b), site.URL+"/hostile.html"); err != nil {
						continue
					}
					_, _, _ = hostile.StepText(testCtx(b), c.action)
					_, _, _ = hostile.StepText(testCtx(b), `noop(500)`)
				}
			}()
			time.Sleep(time.Second)
			beside := measure(b)
			close(done)
			wg.Wait()
			b.ReportMetric(float64(beside)/float64(alone), "x-alone")
		})
	}
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	for i := range s { // insertion sort: a few dozen values
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s[len(s)/2]
}

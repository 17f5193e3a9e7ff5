package suites

import (
	"bytes"
	"runtime/pprof"
	"strings"

	"github.com/google/pprof/profile"
)

// The Go side of a step, by phase: a CPU profile of this process while the
// scale suite steps, each sample charged to the outermost phase of
// envcore's step on its stack (what the step was doing), and, apart, to the
// innermost kind of work (what the CPU was doing there). Only this
// process's CPU is profiled; Chromium's and the site's is in the
// per-process shares.
var stepPhases = []struct{ name, frame string }{
	{"action", "envcore.(*Env).execute"},
	{"settle polling", "envcore.(*Env).settle"},
	{"observation (page walk + decode)", "envcore.(*Env).observe"},
	{"tab events", "envcore.(*tab).onEvent"},
	{"network proxy", "netroute."},
	{"CDP event loop", "go-rod/rod/lib/cdp."},
}

var workKinds = []struct{ name, frame string }{
	{"JSON encode/decode", "encoding/json."},
	{"CDP WebSocket I/O", "go-rod/rod/lib/cdp.(*WebSocket)"},
	{"syscalls", "syscall."},
	{"garbage collection", "runtime.gcBgMarkWorker"},
	{"allocation", "runtime.mallocgc"},
	{"scheduler", "runtime.schedule"},
}

// GoProfile is where this process's CPU went, as shares of its samples.
type GoProfile struct {
	CPUms  float64            `json:"cpu_ms"`
	Phases map[string]float64 `json:"phases"`
	Kinds  map[string]float64 `json:"kinds"`
}

// startGoProfile starts profiling this process's CPU; the function it
// returns stops and summarizes. Profiling that cannot start (another
// profile is running) gives an empty summary.
func startGoProfile() func() GoProfile {
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		return func() GoProfile { return GoProfile{} }
	}
	return func() GoProfile {
		pprof.StopCPUProfile()
		p, err := profile.Parse(&buf)
		if err != nil {
			return GoProfile{}
		}
		return summarize(p)
	}
}

// summarize charges every sample to a phase (outermost match, from the
// root) and a kind (innermost match, from the leaf); "other" takes the
// rest.
func summarize(p *profile.Profile) GoProfile {
	vi := len(p.SampleType) - 1 // cpu nanoseconds
	for i, st := range p.SampleType {
		if st.Type == "cpu" {
			vi = i
		}
	}
	out := GoProfile{Phases: map[string]float64{}, Kinds: map[string]float64{}}
	var total float64
	for _, s := range p.Sample {
		v := float64(s.Value[vi])
		total += v
		var names []string // leaf first
		for _, loc := range s.Location {
			for _, ln := range loc.Line {
				if ln.Function != nil {
					names = append(names, ln.Function.Name)
				}
			}
		}
		phase := "other"
	root:
		for i := len(names) - 1; i >= 0; i-- {
			for _, ph := range stepPhases {
				if strings.Contains(names[i], ph.frame) {
					phase = ph.name
					break root
				}
			}
		}
		kind := "other"
	leaf:
		for _, n := range names {
			for _, k := range workKinds {
				if strings.Contains(n, k.frame) {
					kind = k.name
					break leaf
				}
			}
		}
		out.Phases[phase] += v
		out.Kinds[kind] += v
	}
	if total == 0 {
		return out
	}
	for k := range out.Phases {
		out.Phases[k] /= total
	}
	for k := range out.Kinds {
		out.Kinds[k] /= total
	}
	out.CPUms = total / 1e6
	return out
}

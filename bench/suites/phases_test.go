package suites

import (
	"math"
	"testing"

	"github.com/google/pprof/profile"
)

// A sample is charged to the outermost step phase on its stack and the
// innermost kind of work: JSON decoding under the observation is the
// observation's, and decoding's.
func TestProfileSamplesGoToTheirPhaseAndKind(t *testing.T) {
	fn := map[string]*profile.Function{}
	loc := func(names ...string) []*profile.Location { // leaf first, as pprof stores them
		var out []*profile.Location
		for i, n := range names {
			if fn[n] == nil {
				fn[n] = &profile.Function{ID: uint64(len(fn) + 1), Name: n}
			}
			out = append(out, &profile.Location{ID: uint64(i + 1), Line: []profile.Line{{Function: fn[n]}}})
		}
		return out
	}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		Sample: []*profile.Sample{
			{Value: []int64{3, 30e6}, Location: loc("encoding/json.(*decodeState).object", "github.com/webserv-rl/webserv/envcore.(*tab).extract",
				"github.com/webserv-rl/webserv/envcore.(*Env).observe", "github.com/webserv-rl/webserv/envcore.(*Env).finishStep")},
			{Value: []int64{1, 10e6}, Location: loc("syscall.Syscall6", "github.com/webserv-rl/webserv/envcore.(*tab).evalJSON",
				"github.com/webserv-rl/webserv/envcore.(*Env).settle")},
			{Value: []int64{1, 10e6}, Location: loc("runtime.gcBgMarkWorker")},
		},
	}
	got := summarize(p)
	want := GoProfile{CPUms: 50,
		Phases: map[string]float64{"observation (page walk + decode)": 0.6, "settle polling": 0.2, "other": 0.2},
		Kinds:  map[string]float64{"JSON encode/decode": 0.6, "syscalls": 0.2, "garbage collection": 0.2}}
	if math.Abs(got.CPUms-want.CPUms) > 1e-9 {
		t.Errorf("CPU ms = %v, want %v", got.CPUms, want.CPUms)
	}
	for name, m := range map[string][2]map[string]float64{"phases": {got.Phases, want.Phases}, "kinds": {got.Kinds, want.Kinds}} {
		if len(m[0]) != len(m[1]) {
			t.Errorf("%s = %v, want %v", name, m[0], m[1])
		}
		for k, v := range m[1] {
			if math.Abs(m[0][k]-v) > 1e-9 {
				t.Errorf("%s[%s] = %v, want %v", name, k, m[0][k], v)
			}
		}
	}
}

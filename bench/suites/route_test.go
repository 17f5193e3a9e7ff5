package suites_test

import (
	"context"
	"testing"

	"github.com/webserv-rl/webserv/bench/suites"
)

func TestRouteSmoke(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	if _, err := suites.Route(context.Background(), suites.RouteOptions{Shop: shop(t), Out: out, Command: "test", Smoke: true}); err != nil {
		t.Fatal(err)
	}
	var rep suites.RouteReport
	checkFiles(t, out, "route", &rep)
	checkHeader(t, rep.Header, "route")
	if rep.RequestDirect.N == 0 || rep.RequestRouted.N != rep.RequestDirect.N || rep.RequestDirect.P50 <= 0 || rep.RequestRouted.P50 <= 0 {
		t.Errorf("per-request: direct %+v, routed %+v", rep.RequestDirect, rep.RequestRouted)
	}
	if len(rep.Rows) == 0 {
		t.Fatal("no rows")
	}
	for _, r := range rep.Rows {
		if r.Direct <= 0 || r.Routed <= 0 || r.Ratio <= 0 {
			t.Errorf("row %+v", r)
		}
	}
	configs := map[string]int{}
	for _, s := range rep.PageSamples {
		configs[s.Config]++
		if s.LoadMs <= 0 {
			t.Errorf("page sample %+v", s)
		}
	}
	if configs["direct"] == 0 || configs["direct"] != configs["routed"] || configs["direct"] != 2*len(rep.Pages) {
		t.Errorf("page loads per configuration: %v for %d pages", configs, len(rep.Pages))
	}
	types := map[string]bool{}
	for _, s := range rep.StepSamples {
		types[s.Config+" "+s.Type] = true
	}
	for _, k := range []string{"direct goto", "direct click", "routed goto", "routed click"} {
		if !types[k] {
			t.Errorf("no %s steps", k)
		}
	}
	if len(rep.Throughput) != 2 || rep.Throughput[0].Config != "direct" || rep.Throughput[1].Config != "routed" {
		t.Errorf("throughput rounds: %+v", rep.Throughput)
	}
	if rep.Refused != 0 {
		t.Errorf("the routed tables refused %d requests", rep.Refused)
	}
}

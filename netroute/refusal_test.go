package netroute

import (
	"fmt"
	"net/http"
	"testing"
)

func TestRefusedKeepsTheLastHundred(t *testing.T) {
	tb := NewTable(Policy{})
	for i := 0; i < 250; i++ {
		tb.record(Refusal{URL: fmt.Sprint(i)})
	}
	refs := tb.Refused()
	if len(refs) != maxRefusals || refs[0].URL != "150" || refs[len(refs)-1].URL != "249" {
		t.Errorf("kept %d refusals, %s to %s; want the last 100, 150 to 249", len(refs), refs[0].URL, refs[len(refs)-1].URL)
	}
	tb.record(Refusal{URL: "x"})
	tb.NewEpisode()
	if refs := tb.Refused(); len(refs) != 0 {
		t.Errorf("NewEpisode left %v", refs)
	}
}

func TestIsNavigation(t *testing.T) {
	cases := []struct {
		h    http.Header
		want bool
	}{
		{http.Header{"Sec-Fetch-Mode": {"navigate"}}, true},
		{http.Header{"Sec-Fetch-Mode": {"no-cors"}, "Accept": {"image/avif"}}, false},
		{http.Header{"Upgrade-Insecure-Requests": {"1"}, "Accept": {"text/html,application/xhtml+xml"}}, true},
		{http.Header{"Upgrade-Insecure-Requests": {"1"}, "Accept": {"*/*"}}, false},
		{http.Header{"Accept": {"text/html"}}, false},
	}
	for _, c := range cases {
		if got := isNavigation(c.h); got != c.want {
			t.Errorf("isNavigation(%v) = %v, want %v", c.h, got, c.want)
		}
	}
}

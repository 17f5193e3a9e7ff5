package server

import (
	"testing"

	"github.com/webserv-rl/webserv/envcore"
)

// The model-facing text: the goal first, then the last action's error,
// then the page (the accessibility tree, else the HTML); no goal line
// without a goal. python/webserv/prompt.py writes the same words
// (python/tests/test_contract.py compares them through OpenEnv).
func TestModelTextPutsTheGoalFirst(t *testing.T) {
	for _, c := range []struct {
		obs  Observation
		want string
	}{
		{Observation{Goal: "Buy a mug.", Observation: envcore.Observation{AXTree: "[1] button 'Buy'", HTML: "<button>"}}, "Goal: Buy a mug.\n\n[1] button 'Buy'"},
		{Observation{Goal: " Buy a mug. ", Observation: envcore.Observation{HTML: "<p>hi</p>", LastActionError: "no element 'x'"}}, "Goal: Buy a mug.\n\nError: no element 'x'\n\n<p>hi</p>"},
		{Observation{Observation: envcore.Observation{AXTree: "[1] link"}}, "[1] link"},
	} {
		if got := ModelText(c.obs); got != c.want {
			t.Errorf("ModelText = %q, want %q", got, c.want)
		}
	}
}

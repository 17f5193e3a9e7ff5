package tasks_test

import (
	"context"
	"errors"
	"testing"

	"github.com/webserv-rl/webserv/tasks"
)

func TestStringMatchRules(t *testing.T) {
	cases := []struct {
		name string
		fn   func() float64
		want float64
	}{
		{"exact ignores case and quotes", func() float64 { return tasks.ExactMatch("Sprite", ` "sprite" `) }, 1},
		{"exact is exact", func() float64 { return tasks.ExactMatch("Sprite", "Sprite Zero") }, 0},
		{"substring", func() float64 { return tasks.MustInclude("mouth guard", "The Mouth Guard is best", false) }, 1},
		{"one character must be a whole token", func() float64 { return tasks.MustInclude("1", "there are 10 items", true) }, 0},
		{"a whole one-character token matches", func() float64 { return tasks.MustInclude("1", "I found 1.", true) }, 1},
		{"without tokenize a character is a substring", func() float64 { return tasks.MustInclude("1", "10", false) }, 1},
	}
	for _, c := range cases {
		if got := c.fn(); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	refs := &tasks.ReferenceAnswers{MustInclude: []string{"jaw bruxism", "mouth guard |OR| night guard"}}
	for pred, want := range map[string]float64{
		"For jaw bruxism buy a night guard": 1, "jaw bruxism, mouth guard": 1, "a mouth guard": 0,
	} {
		if got, _ := tasks.StringMatch(context.Background(), refs, pred, nil, "", ""); got != want {
			t.Errorf("must_include with |OR| on %q: %v, want %v", pred, got, want)
		}
	}
	na := &tasks.ReferenceAnswers{FuzzyMatch: []string{"N/A"}}
	if got, _ := tasks.StringMatch(context.Background(), na, "N/A", nil, "", ""); got != 1 {
		t.Errorf("N/A answered N/A: %v", got)
	}
	if got, err := tasks.StringMatch(context.Background(), na, "it costs $5", nil, "", ""); got != 0 || !errors.Is(err, tasks.ErrNoJudge) {
		t.Errorf("N/A task answered without a judge: %v, %v", got, err)
	}
	fuzzy := &tasks.ReferenceAnswers{FuzzyMatch: []string{"a long explanation"}}
	if _, err := tasks.StringMatch(context.Background(), fuzzy, "a long explanation", nil, "", ""); !errors.Is(err, tasks.ErrNoJudge) {
		t.Errorf("fuzzy_match without a judge: %v, want ErrNoJudge (an error, never a silent 0)", err)
	}
}

func TestURLMatchRules(t *testing.T) {
	ref := "http://127.0.0.1:7780/admin/sales/order/ |OR| http://127.0.0.1:7780/admin/sales/invoice/"
	cases := map[string]float64{
		"http://127.0.0.1:7780/admin/sales/order/":           1,
		"http://127.0.0.1:7780/admin/sales/order/view/id/3/": 1, // gold path within the prediction's
		"http://127.0.0.1:7780/admin/sales/invoice":          1, // the other alternative, trailing slash aside
		"http://127.0.0.1:7780/admin/customer/":              0,
	}
	for pred, want := range cases {
		if got := tasks.URLMatch(ref, "GOLD in PRED", pred); got != want {
			t.Errorf("GOLD in PRED %s: %v, want %v", pred, got, want)
		}
	}
	// Query parameters of the references must all be in the prediction.
	// WebArena merges them over every |OR| alternative, and so do we.
	q := "http://127.0.0.1:7770/catalogsearch/result/?q=jeans"
	for pred, want := range map[string]float64{
		"http://127.0.0.1:7770/catalogsearch/result/?q=jeans&p=2": 1,
		"http://127.0.0.1:7770/catalogsearch/result/?q=shoes":     0,
		"http://127.0.0.1:7770/catalogsearch/result/":             0,
	} {
		if got := tasks.URLMatch(q, "", pred); got != want {
			t.Errorf("query check %s: %v, want %v", pred, got, want)
		}
	}
	if got := tasks.URLMatch("http://x:1/a", "EXACT", "http://x:1/a/b"); got != 0 {
		t.Errorf("EXACT on a longer URL: %v", got)
	}
	if got := tasks.URLMatch("http://x:1/a", "EXACT", "http://x:1/a/"); got != 1 {
		t.Errorf("EXACT ignores the trailing slash: %v", got)
	}
}

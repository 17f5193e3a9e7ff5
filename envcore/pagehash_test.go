package envcore

import "testing"

// The page hash changes with what the page shows and with nothing else.
func TestPageHashSeesThePageAlone(t *testing.T) {
	checked := true
	base := func() Observation {
		return Observation{URL: "http://a.test/", Title: "A", HTML: "<p>hi</p>", Clickable: []string{"b"},
			Inputs:   []InputField{{ID: "q", Tag: "input", Type: "text", Value: "ab", Editable: true}, {ID: "c", Type: "checkbox", Checked: &checked}},
			Tabs:     []Tab{{URL: "http://a.test/", Title: "A", Active: true}},
			Viewport: ViewportState{Width: 800, Height: 600, ScrollY: 10}}
	}
	ref := base()
	want := ref.PageHash()
	if len(want) != 32 {
		t.Fatalf("hash %q: want 32 hex digits", want)
	}
	same := base()
	same.LastAction, same.LastActionError, same.Screenshot, same.AXTree = "click(\"b\")", "oops", []byte{1}, "x"
	same.Dialogs, same.Chat, same.Stats.Visited = []Dialog{{Type: "alert"}}, []ChatMessage{{Role: "user"}}, 7
	if got := same.PageHash(); got != want {
		t.Errorf("the hash changed with what the page does not show: %s != %s", got, want)
	}
	unchecked := false
	for name, change := range map[string]func(*Observation){
		"url":       func(o *Observation) { o.URL = "http://a.test/b" },
		"html":      func(o *Observation) { o.HTML = "<p>ho</p>" },
		"value":     func(o *Observation) { o.Inputs[0].Value = "a" },
		"checked":   func(o *Observation) { o.Inputs[1].Checked = &unchecked },
		"focused":   func(o *Observation) { o.Focused = "q" },
		"scroll":    func(o *Observation) { o.Viewport.ScrollY = 0 },
		"tabs":      func(o *Observation) { o.Tabs = append(o.Tabs, Tab{URL: "about:blank"}) },
		"clickable": func(o *Observation) { o.Clickable = nil },
	} {
		o := base()
		change(&o)
		if o.PageHash() == want {
			t.Errorf("the hash did not change with the page's %s", name)
		}
	}
}

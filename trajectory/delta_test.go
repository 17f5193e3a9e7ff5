package trajectory

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/envcore"
)

// checkRoundTrip asserts the delta guarantee on a pair: Apply(a, Diff(a,
// b)) deep-equals b, and so does applying the delta read back from its
// JSON (compared as JSON, which is what a reader of an export has).
func checkRoundTrip(t testing.TB, a, b Observation) Delta {
	t.Helper()
	d := Diff(a, b)
	got, err := Apply(a, d)
	if err != nil {
		t.Fatalf("Apply(a, Diff(a, b)): %v\ndelta %+v", err, d)
	}
	if !reflect.DeepEqual(got, b) {
		t.Fatalf("Apply(a, Diff(a, b)) differs from b\n got %+v\nwant %+v\ndelta %+v", got, b, d)
	}
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseDelta(raw)
	if err != nil {
		t.Fatalf("delta JSON does not read back: %v\n%s", err, raw)
	}
	got, err = Apply(a, back)
	if err != nil {
		t.Fatalf("Apply of the delta read from JSON: %v\n%s", err, raw)
	}
	gj, _ := json.Marshal(got)
	bj, _ := json.Marshal(b)
	if string(gj) != string(bj) {
		t.Fatalf("the delta read from JSON gives another observation\n got %s\nwant %s\ndelta %s", gj, bj, raw)
	}
	return d
}

func shopObs() Observation {
	yes := true
	return Observation{Goal: "Buy the red mug", Observation: envcore.Observation{
		URL: "http://shopping.webserv.test/", Title: "Shop",
		HTML:      `<h1>Shop</h1><a data-semantic-id="cart" href="/cart">Cart (0)</a><ul><li><span>Red mug</span> <button data-semantic-id="add-1">Add</button></li><li><span>Blue mug</span> <button data-semantic-id="add-2">Add</button></li></ul><input data-semantic-id="q" value="">`,
		AXTree:    "RootWebArea \"Shop\"\n\theading \"Shop\" level=1\n\t[cart] link \"Cart (0)\" url=\"/cart\"\n\tStaticText \"Red mug\"\n\t[add-1] button \"Add\"\n\t[add-2] button \"Add\"",
		Clickable: []string{"cart", "add-1", "add-2", "nav-home", "nav-account", "nav-orders", "footer-about", "footer-contact"}, Hoverable: []string{},
		Inputs:  []envcore.InputField{{ID: "q", Tag: "input", Type: "text", Editable: true}, {ID: "gift", Tag: "input", Type: "checkbox", Checked: &yes}},
		Selects: []envcore.SelectField{},
		Tabs:    []envcore.Tab{{Index: 0, URL: "http://shopping.webserv.test/", Title: "Shop", Active: true}},
	}}
}

// A typical step (an item added to the cart) is a few keyed edits: the
// cart link's text, the button replaced, the input filled; the URL and the
// unchanged parts are not in the delta.
func TestDiffIsElementLevel(t *testing.T) {
	a := shopObs()
	b := shopObs()
	b.HTML = strings.Replace(b.HTML, "Cart (0)", "Cart (1)", 1)
	b.HTML = strings.Replace(b.HTML, `<button data-semantic-id="add-1">Add</button>`, `<button data-semantic-id="remove-1">Remove</button>`, 1)
	b.AXTree = strings.Replace(b.AXTree, "Cart (0)", "Cart (1)", 1)
	b.Clickable = slices.Replace(slices.Clone(b.Clickable), 1, 2, "remove-1")
	b.Inputs[0].Value = "mug"
	b.LastAction = `click("add-1")`
	d := checkRoundTrip(t, a, b)

	if d.Set["url"] != nil || d.Set["last_action"] != `click("add-1")` || len(d.Set) != 1 {
		t.Errorf("set = %v, want only last_action", d.Set)
	}
	if d.HTML == nil || len(d.HTML.Edits) != 2 || d.HTML.Edits[0].ID != "cart" || d.HTML.Edits[0].Op != EditChange ||
		d.HTML.Edits[1].ID != "add-1" || !strings.Contains(d.HTML.Edits[1].Text, "remove-1") {
		t.Errorf("html edits = %+v", d.HTML)
	}
	if d.AXTree == nil || len(d.AXTree.Edits) != 1 || d.AXTree.Edits[0].ID != "cart" {
		t.Errorf("axtree edits = %+v", d.AXTree)
	}
	if d.Clickable == nil || !reflect.DeepEqual(d.Clickable.Remove, []string{"add-1"}) || len(d.Clickable.Insert) != 1 || d.Clickable.Insert[0] != (Inserted[string]{At: 1, Item: "remove-1"}) {
		t.Errorf("clickable = %+v", d.Clickable)
	}
	if d.Inputs == nil || len(d.Inputs.Change) != 1 || d.Inputs.Change[0].Value != "mug" || d.Tabs != nil || d.Selects != nil {
		t.Errorf("inputs %+v, tabs %+v, selects %+v", d.Inputs, d.Tabs, d.Selects)
	}
	raw, _ := json.Marshal(d)
	if obs, _ := json.Marshal(b); len(raw)*2 > len(obs) {
		t.Errorf("delta of %d bytes for an observation of %d:\n%s", len(raw), len(obs), raw)
	}
	// A field the observation's JSON leaves out when empty is unset when
	// it empties, so the next observation's JSON has it no more.
	b.Focused = "q"
	if d := checkRoundTrip(t, b, a); !slices.Contains(d.Unset, "focused") || d.Set["focused"] != nil {
		t.Errorf("focus lost: unset %v, set %v", d.Unset, d.Set)
	}
	if !Diff(a, a).Empty() {
		t.Errorf("Diff(a, a) = %+v", Diff(a, a))
	}
}

// Whatever cannot be diffed by key is replaced whole, so the guarantee
// holds anyway: lists that reorder or repeat an id, null against empty,
// a new page, the goal, a tab opened, the viewport. So is a part whose
// edits would be longer than it.
func TestDiffFallsBackToWhole(t *testing.T) {
	a := shopObs()
	for name, change := range map[string]func(o *Observation){
		"reordered": func(o *Observation) { o.Clickable = []string{"add-2", "add-1", "cart"} },
		"duplicate": func(o *Observation) { o.Clickable = []string{"cart", "cart"} },
		"null":      func(o *Observation) { o.Clickable = nil },
		"empty":     func(o *Observation) { o.Inputs = []envcore.InputField{} },
		"new page": func(o *Observation) {
			o.HTML, o.AXTree, o.URL = "<p>Thanks</p>", "RootWebArea \"Done\"", "http://shopping.webserv.test/done"
		},
		"no html": func(o *Observation) { o.HTML = "" },
		"goal":    func(o *Observation) { o.Goal = "Buy the blue mug" },
		"tab": func(o *Observation) {
			o.Tabs = append(o.Tabs, envcore.Tab{Index: 1, URL: "about:blank"})
			o.ActiveTab = 1
		},
		"viewport":    func(o *Observation) { o.Viewport.ScrollY = 300 },
		"screenshot":  func(o *Observation) { o.Screenshot = []byte{} },
		"error":       func(o *Observation) { o.LastActionError = `no element with id "nope"` },
		"stats":       func(o *Observation) { o.Stats.Kept = 3 },
		"short list":  func(o *Observation) { o.Hoverable = []string{"menu"} },
		"dup html id": func(o *Observation) { o.HTML = `<b data-semantic-id="x">1</b><b data-semantic-id="x">2</b>` },
	} {
		t.Run(name, func(t *testing.T) {
			b := shopObs()
			change(&b)
			d := checkRoundTrip(t, a, b)
			if raw, _ := json.Marshal(d); len(d.Set) == 0 && len(d.Unset) == 0 && d.Stats == nil {
				t.Errorf("nothing set whole: %s", raw)
			}
			checkRoundTrip(t, b, a)
		})
	}
}

// A delta that does not fit the observation is refused with what is
// wrong, not applied in part.
func TestApplyRefusesWhatDoesNotFit(t *testing.T) {
	a := shopObs()
	for name, tc := range map[string]struct {
		d    Delta
		want string
	}{
		"set and unset":  {Delta{Set: map[string]any{"focused": "q"}, Unset: []string{"focused"}}, "both sets and unsets focused"},
		"unset unknown":  {Delta{Unset: []string{"colour"}}, `unknown observation field "colour"`},
		"set and edited": {Delta{Set: map[string]any{"html": ""}, HTML: &TextDelta{}}, "both sets html whole and edits it"},
		"unknown field":  {Delta{Set: map[string]any{"colour": "red"}}, `unknown observation field "colour"`},
		"wrong type":     {Delta{Set: map[string]any{"active_tab": "two"}}, "does not fit"},
		"missing id":     {Delta{HTML: &TextDelta{Edits: []TextEdit{{Op: EditRemove, ID: "nope"}}}}, `id "nope"`},
		"bad op":         {Delta{AXTree: &TextDelta{Edits: []TextEdit{{Op: "replace", At: ptr(0)}}}}, `op "replace"`},
		"twice":          {Delta{HTML: &TextDelta{Edits: []TextEdit{{Op: EditRemove, ID: "cart"}, {Op: EditChange, ID: "cart"}}}}, "second time"},
		"insert past":    {Delta{HTML: &TextDelta{Edits: []TextEdit{{Op: EditInsert, At: ptr(99)}}}}, "inserts at 99"},
		"list remove":    {Delta{Clickable: &ListDelta[string]{Remove: []string{"nope"}}}, "does not have"},
		"list change":    {Delta{Inputs: &ListDelta[envcore.InputField]{Change: []envcore.InputField{{ID: "nope"}}}}, `id "nope"`},
	} {
		_, err := Apply(a, tc.d)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to say %q", name, err, tc.want)
		}
	}
	for name, tc := range map[string]struct{ json, want string }{
		"unknown key":      {`{"htlm": {"edits": []}}`, `unknown field "htlm"`},
		"unknown edit key": {`{"html": {"edits": [{"op": "remove", "idd": "cart"}]}}`, `unknown field "idd"`},
		"two values":       {`{} {}`, "more than one"},
	} {
		if _, err := ParseDelta([]byte(tc.json)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseDelta %s: err = %v, want it to say %q", name, err, tc.want)
		}
	}
	if d, err := ParseDelta([]byte(`{"set": {"viewport": {"width": 800, "heigth": 600}}}`)); err != nil {
		t.Fatal(err)
	} else if _, err := Apply(a, d); err == nil || !strings.Contains(err.Error(), `unknown field "heigth"`) {
		t.Errorf("a set value with a misspelt key: err = %v", err)
	}
	d, err := ParseDelta([]byte(`{"set": {"url": "http://shopping.webserv.test/cart"}, "html": {"edits": [{"op": "remove", "id": "cart"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Apply(a, d); err != nil || got.URL != "http://shopping.webserv.test/cart" || strings.Contains(got.HTML, "Cart (0)") || got.HTML == a.HTML {
		t.Errorf("a parsed delta: %v, url %q, html %q", err, got.URL, got.HTML)
	}
	if _, err := Apply(a, Delta{}); err != nil {
		t.Errorf("the empty delta: %v", err)
	}
}

// fuzzObs makes an observation from fuzzed text: html and axtree as
// given, the ids of the HTML as clickable and inputs, the first line as
// the URL.
func fuzzObs(html, ax string) Observation {
	var o Observation
	o.HTML, o.AXTree = html, ax
	o.URL, _, _ = strings.Cut(ax, "\n")
	for _, p := range splitHTML(html) {
		if p.id != "" {
			o.Clickable = append(o.Clickable, p.id)
			o.Inputs = append(o.Inputs, envcore.InputField{ID: p.id, Value: p.text})
		}
	}
	for _, p := range splitLines(ax) {
		o.Tabs = append(o.Tabs, envcore.Tab{Index: len(p.text) % 3, Title: p.id})
	}
	return o
}

// The guarantee on synthetic observations; the seed corpus is in
// testdata/fuzz/FuzzDelta and runs as an ordinary test.
func FuzzDelta(f *testing.F) {
	f.Add(`<a data-semantic-id="x">1</a><b>2</b>`, `<a data-semantic-id="y">1</a><b>3</b>`, "u\n\t[x] link \"1\"", "u\n\t[y] link \"1\"")
	f.Fuzz(func(t *testing.T, h1, h2, ax1, ax2 string) {
		// Observations are UTF-8 (they come from the page's strings), and
		// JSON could not carry anything else.
		v := func(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
		checkRoundTrip(t, fuzzObs(v(h1), v(ax1)), fuzzObs(v(h2), v(ax2)))
	})
}

package envcore_test

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/webserv-rl/webserv/envcore"
)

func tab(i int) *int { return &i }

func TestParseAction(t *testing.T) {
	cases := []struct {
		in   string
		want envcore.Action
	}{
		// BrowserGym calls.
		{`click("add-to-cart")`, envcore.Action{Type: envcore.Click, Target: "add-to-cart"}},
		{`click('a12', button="left")`, envcore.Action{Type: envcore.Click, Target: "a12"}},
		{`fill("search", "blue \"denim\" shirt")`, envcore.Action{Type: envcore.Type, Target: "search", Text: `blue "denim" shirt`}},
		{`fill(bid="q", value='it\'s')`, envcore.Action{Type: envcore.Type, Target: "q", Text: "it's"}},
		{`type("q", "socks", enter=True)`, envcore.Action{Type: envcore.Type, Target: "q", Text: "socks", Enter: true}},
		{`clear("q")`, envcore.Action{Type: envcore.Clear, Target: "q"}},
		{`select_option("size", "L")`, envcore.Action{Type: envcore.Select, Target: "size", Options: []string{"L"}}},
		{`select_option("langs", ["en", "fr"])`, envcore.Action{Type: envcore.Select, Target: "langs", Options: []string{"en", "fr"}}},
		{`hover("menu")`, envcore.Action{Type: envcore.Hover, Target: "menu"}},
		{`press("q", "Enter")`, envcore.Action{Type: envcore.Press, Target: "q", Key: "Enter"}},
		{`keyboard_press("Control+a")`, envcore.Action{Type: envcore.Press, Key: "Control+a"}},
		{`goto("http://127.0.0.1:8080/cart")`, envcore.Action{Type: envcore.Goto, URL: "http://127.0.0.1:8080/cart"}},
		{`go_back()`, envcore.Action{Type: envcore.Back}},
		{`go_forward()`, envcore.Action{Type: envcore.Forward}},
		{`refresh()`, envcore.Action{Type: envcore.Refresh}},
		{`new_tab()`, envcore.Action{Type: envcore.NewTab}},
		{`new_tab("http://x.test/")`, envcore.Action{Type: envcore.NewTab, URL: "http://x.test/"}},
		{`tab_focus(2)`, envcore.Action{Type: envcore.SwitchTab, Tab: tab(2)}},
		{`tab_close()`, envcore.Action{Type: envcore.CloseTab}},
		{`send_msg_to_user("done")`, envcore.Action{Type: envcore.SendMsg, Text: "done"}},
		{`report_infeasible("no such item")`, envcore.Action{Type: envcore.Terminate, Answer: "no such item", Infeasible: true}},
		{`noop()`, envcore.Action{Type: envcore.Noop}},
		{`noop(500)`, envcore.Action{Type: envcore.Noop, WaitMs: 500}},
		{`stop("$42.00")`, envcore.Action{Type: envcore.Terminate, Answer: "$42.00"}},
		{"```python\nclick(\"buy\")\n```", envcore.Action{Type: envcore.Click, Target: "buy"}},
		{`  click("x");  `, envcore.Action{Type: envcore.Click, Target: "x"}},
		{`fill("q", "\u00e9t\u00e9")`, envcore.Action{Type: envcore.Type, Target: "q", Text: "été"}},
		// WebArena commands.
		{`click [1582]`, envcore.Action{Type: envcore.Click, Target: "1582"}},
		{`hover [menu]`, envcore.Action{Type: envcore.Hover, Target: "menu"}},
		{`type [q] [socks]`, envcore.Action{Type: envcore.Type, Target: "q", Text: "socks", Enter: true}},
		{`type [q] [socks] [0]`, envcore.Action{Type: envcore.Type, Target: "q", Text: "socks"}},
		{`type [q] [a [bracketed] text] [1]`, envcore.Action{Type: envcore.Type, Target: "q", Text: "a [bracketed] text", Enter: true}},
		{`press [Control+Enter]`, envcore.Action{Type: envcore.Press, Key: "Control+Enter"}},
		{`goto [http://shop.test/]`, envcore.Action{Type: envcore.Goto, URL: "http://shop.test/"}},
		{`go_back`, envcore.Action{Type: envcore.Back}},
		{`go_forward`, envcore.Action{Type: envcore.Forward}},
		{`new_tab`, envcore.Action{Type: envcore.NewTab}},
		{`tab_focus [1]`, envcore.Action{Type: envcore.SwitchTab, Tab: tab(1)}},
		{`close_tab`, envcore.Action{Type: envcore.CloseTab}},
		{`stop [The answer is [3]]`, envcore.Action{Type: envcore.Terminate, Answer: "The answer is [3]"}},
		{`stop [N/A]`, envcore.Action{Type: envcore.Terminate, Answer: "N/A", Infeasible: true}},
		{`stop`, envcore.Action{Type: envcore.Terminate}},
		{`select [size] [Large]`, envcore.Action{Type: envcore.Select, Target: "size", Options: []string{"Large"}}},
		{`clear [q]`, envcore.Action{Type: envcore.Clear, Target: "q"}},
		// Coordinate actions, in BrowserGym's argument order or by name.
		{`mouse_click(10, 20.5)`, envcore.Action{Type: envcore.MouseClick, X: 10, Y: 20.5}},
		{`mouse_click(x=10, y=20, button="right")`, envcore.Action{Type: envcore.MouseClick, X: 10, Y: 20, Button: "right"}},
		{`mouse_dblclick(3, 4)`, envcore.Action{Type: envcore.MouseDblClick, X: 3, Y: 4}},
		{`mouse_move(0, 0)`, envcore.Action{Type: envcore.MouseMove}},
		{`mouse_drag_and_drop(1, 2, 3, 4)`, envcore.Action{Type: envcore.MouseDrag, X: 1, Y: 2, ToX: 3, ToY: 4}},
		{`mouse_drag_and_drop(from_x=1, from_y=2, to_x=3, to_y=4)`, envcore.Action{Type: envcore.MouseDrag, X: 1, Y: 2, ToX: 3, ToY: 4}},
		{`scroll(0, -300)`, envcore.Action{Type: envcore.Scroll, DeltaY: -300}},
		{`keyboard_type("hello")`, envcore.Action{Type: envcore.KeyboardType, Text: "hello"}},
	}
	for _, c := range cases {
		got, err := envcore.ParseAction(c.in)
		if err != nil {
			t.Errorf("ParseAction(%q): %v", c.in, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseAction(%q) = %+v, want %+v", c.in, got, c.want)
		}
	}
}

func TestParseActionErrors(t *testing.T) {
	cases := []struct{ in, says string }{
		{``, "empty action"},
		{`scroll(0)`, "needs delta_y"},
		{`scroll [down]`, "scroll(0, 600)"},
		{`mouse_click("buy")`, "must be a number"},
		{`mouse_click(1, 2, button="side")`, "button must be"},
		{`mouse_move(1, 2, 3)`, "takes 2 argument"},
		{`keyboard_type()`, "needs the text"},
		{`click()`, "needs an element id"},
		{`click("a", "b", "c") extra`, "one action per step"},
		{`click("unterminated)`, "unterminated string"},
		{`fly("away")`, `unknown action "fly"`},
		{`click("a", modifiers=["Hyper"])`, `unknown modifier "Hyper"`},
		{`dblclick("a", button="side")`, "button must be"},
		{`keyboard_down("Control+a")`, "takes one key"},
		{`upload_file("a")`, "needs the file"},
		{`drag_and_drop("a")`, "needs the element to drop on"},
		{`tab_focus("one")`, "must be an integer"},
		{`select_option("s")`, "needs the option"},
		{`press("Hyper+x")`, "unknown modifier"},
		{`keyboard_press("Bogus")`, `unknown key "Bogus"`},
		{`type [q]`, "needs 2 bracketed"},
		{`noop(999999)`, "between 0 and"},
		{`!!`, "cannot parse"},
	}
	for _, c := range cases {
		_, err := envcore.ParseAction(c.in)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("ParseAction(%q) error = %v, want one saying %q", c.in, err, c.says)
		}
	}
}

func TestActionStringRoundTrips(t *testing.T) {
	actions := []envcore.Action{
		{Type: envcore.Type, Target: "q", Text: "line\nbreak \"quoted\" \\ tab\t", Enter: true},
		{Type: envcore.Select, Target: "s", Options: []string{"a", "b"}},
		{Type: envcore.Press, Target: "x", Key: "Shift+Tab"},
		{Type: envcore.CloseTab, Tab: tab(0)},
		{Type: envcore.Terminate, Answer: "N/A", Infeasible: true},
		{Type: envcore.Noop, WaitMs: 250},
		{Type: envcore.MouseClick, X: 1.5, Y: 2, Button: "middle"},
		{Type: envcore.MouseDrag, X: 1, Y: 2, ToX: 300, ToY: 4},
		{Type: envcore.Scroll, DeltaX: -10, DeltaY: 600},
		{Type: envcore.KeyboardType, Text: "a \"b\""},
	}
	for _, a := range actions {
		back, err := envcore.ParseAction(a.String())
		if err != nil || !reflect.DeepEqual(back, a) {
			t.Errorf("%s parses back to %+v (%v), want %+v", a, back, err, a)
		}
	}
}

// FuzzParseAction checks that no input panics the parser and that every
// action it accepts prints to a string that parses back to the same action.
// The seeds in testdata/fuzz/FuzzParseAction run as part of go test.
func FuzzParseAction(f *testing.F) {
	for _, s := range []string{`click("a")`, `fill("q", "x", enter=True)`, `type [q] [t] [0]`, `select_option("s", ["a","b"])`, `stop [x]`, `tab_focus(1)`, `noop(5)`, `mouse_click(1, 2.5, button="right")`, `mouse_drag_and_drop(1, 2, 3, 4)`, `scroll(0, -5)`, `keyboard_type("x")`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := envcore.ParseAction(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("empty error for %q", s)
			}
			return
		}
		if err := a.Validate(); err != nil {
			t.Fatalf("ParseAction(%q) accepted an invalid action %+v: %v", s, a, err)
		}
		if !utf8.ValidString(s) {
			return // printing normalises invalid UTF-8
		}
		back, err := envcore.ParseAction(a.String())
		if err != nil {
			t.Fatalf("%q -> %+v -> %q does not parse: %v", s, a, a.String(), err)
		}
		if !reflect.DeepEqual(back, a) {
			t.Fatalf("%q -> %+v -> %q -> %+v", s, a, a.String(), back)
		}
	})
}

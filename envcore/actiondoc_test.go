package envcore_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/envcore"
)

// Every call form and coordinate action is described, once, with an
// example that parses to the action it describes and arguments a tool can
// type.
func TestActionsDescribeEveryCallForm(t *testing.T) {
	docs := envcore.Actions()
	byName := map[string]envcore.ActionDoc{}
	for _, d := range docs {
		if _, dup := byName[d.Name]; dup {
			t.Errorf("%s is described twice", d.Name)
		}
		byName[d.Name] = d
	}
	var want []string
	for _, names := range envcore.CallFormNames() {
		want = append(want, names[0])
	}
	for _, typ := range envcore.CoordActionTypes() {
		want = append(want, string(typ))
	}
	if len(docs) != len(want) {
		t.Errorf("Actions has %d entries, the grammar %d forms: %v", len(docs), len(want), want)
	}
	for _, name := range want {
		d, ok := byName[name]
		if !ok {
			t.Errorf("call form %s is not described", name)
			continue
		}
		if d.Args == nil {
			t.Errorf("%s: Args is nil, which the actions op sends as null instead of a list", name)
		}
		if d.Description == "" || d.Example == "" {
			t.Errorf("%s: empty description or example", name)
		}
		a, err := envcore.ParseAction(d.Example)
		if err != nil {
			t.Errorf("%s: example %s does not parse: %v", name, d.Example, err)
			continue
		}
		if a.Type != d.Type {
			t.Errorf("%s: example parses to %s, doc says %s", name, a.Type, d.Type)
		}
		for _, arg := range d.Args {
			if !slices.Contains([]string{envcore.ArgString, envcore.ArgNumber, envcore.ArgInteger, envcore.ArgBoolean, envcore.ArgArray}, arg.Type) || arg.Doc == "" {
				t.Errorf("%s.%s: type %q, doc %q", name, arg.Name, arg.Type, arg.Doc)
			}
		}
	}
}

// Call writes JSON arguments as a call that parses to the action the
// example names; element ids are strings, coordinates numbers.
func TestActionCallFromJSONArguments(t *testing.T) {
	doc := func(name string) envcore.ActionDoc {
		for _, d := range envcore.Actions() {
			if d.Name == name {
				return d
			}
		}
		t.Fatalf("no action %s", name)
		return envcore.ActionDoc{}
	}
	for _, c := range []struct {
		name, args string
		want       envcore.Action
	}{
		{"click", `{"bid": "buy"}`, envcore.Action{Type: envcore.Click, Target: "buy"}},
		{"fill", `{"bid": "q", "value": "say \"hi\"\n", "enter": true}`, envcore.Action{Type: envcore.Type, Target: "q", Text: "say \"hi\"\n", Enter: true}},
		{"press", `{"key": "Enter", "bid": "q"}`, envcore.Action{Type: envcore.Press, Target: "q", Key: "Enter"}},
		{"press", `{"key": "Escape"}`, envcore.Action{Type: envcore.Press, Key: "Escape"}},
		{"select_option", `{"bid": "size", "options": ["S", "M"]}`, envcore.Action{Type: envcore.Select, Target: "size", Options: []string{"S", "M"}}},
		{"tab_focus", `{"index": 1}`, envcore.Action{Type: envcore.SwitchTab, Tab: ptr(1)}},
		{"stop", `{"answer": "42"}`, envcore.Action{Type: envcore.Terminate, Answer: "42"}},
		{"go_back", `{}`, envcore.Action{Type: envcore.Back}},
		{"mouse_click", `{"x": 10.5, "y": 20, "button": "right"}`, envcore.Action{Type: envcore.MouseClick, X: 10.5, Y: 20, Button: "right"}},
		{"mouse_drag_and_drop", `{"from_x": 1, "from_y": 2, "to_x": 3, "to_y": 4}`, envcore.Action{Type: envcore.MouseDrag, X: 1, Y: 2, ToX: 3, ToY: 4}},
	} {
		var args map[string]any
		if err := json.Unmarshal([]byte(c.args), &args); err != nil {
			t.Fatal(err)
		}
		call, err := doc(c.name).Call(args)
		if err != nil {
			t.Errorf("%s %s: %v", c.name, c.args, err)
			continue
		}
		got, err := envcore.ParseAction(call)
		if err != nil {
			t.Errorf("%s %s: %s does not parse: %v", c.name, c.args, call, err)
			continue
		}
		if got.String() != c.want.String() {
			t.Errorf("%s %s: got %s, want %s", c.name, c.args, got, c.want)
		}
		// Build makes the same action without the call form.
		built, err := doc(c.name).Build(args)
		if err != nil || !built.OK() || !reflect.DeepEqual(built.Action, got) {
			t.Errorf("%s %s: Build made %+v (%v), the call form parses to %+v", c.name, c.args, built.Action, err, got)
		}
		if built.Echo() != got.String() {
			t.Errorf("%s %s: Build's echo %q, want %q", c.name, c.args, built.Echo(), got.String())
		}
	}
	for _, c := range []struct{ name, args, want string }{
		{"click", `{}`, "click needs bid"},
		{"click", `{"bid": 12}`, "bid must be a string"},
		{"click", `{"bid": "a", "ref": "b"}`, "unknown argument ref; click takes only bid"},
		{"mouse_click", `{"x": "10", "y": 2}`, "x must be a number"},
		{"tab_focus", `{"index": 1.5}`, "index must be an integer"},
		{"select_option", `{"bid": "s", "options": [1]}`, "options must be an array of strings"},
		{"go_back", `{"n": 2}`, "go_back takes no arguments"},
	} {
		var args map[string]any
		_ = json.Unmarshal([]byte(c.args), &args)
		_, err := doc(c.name).Call(args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: got error %v, want one saying %q", c.name, c.args, err, c.want)
		}
		if _, err := doc(c.name).Build(args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: Build's error %v, want one saying %q", c.name, c.args, err, c.want)
		}
	}
}

func ptr(n int) *int { return &n }

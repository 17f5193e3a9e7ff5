package envcore

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// ActionDoc describes one action of the call grammar for tools that offer
// the actions one by one (the MCP front end makes one tool of each): its
// call name, what it does, and its arguments with their JSON types. The
// element actions are the call forms of parse_call.go, the coordinate
// actions those of coords.go; Actions lists them in that order.
type ActionDoc struct {
	// Name is the call name ParseAction reads: "click", "fill",
	// "mouse_click".
	Name string `json:"name"`
	// Type is the semantic action it makes.
	Type ActionType `json:"type"`
	// Description is one or two sentences for a model.
	Description string `json:"description"`
	// Args are the arguments, required ones first.
	Args []ActionArg `json:"args"`
	// Example is a call of this action that ParseAction reads.
	Example string `json:"example"`
}

// ActionArg is one argument of an action.
type ActionArg struct {
	// Name is the argument's keyword in the call form.
	Name string `json:"name"`
	// Type is its JSON type: "string", "number" (CSS pixels), "integer",
	// "boolean", or "array" (of strings).
	Type string `json:"type"`
	// Doc says what it is, in one line.
	Doc      string `json:"doc"`
	Required bool   `json:"required"`
}

// The argument types of ActionArg.Type.
const (
	ArgString  = "string"
	ArgNumber  = "number"
	ArgInteger = "integer"
	ArgBoolean = "boolean"
	ArgArray   = "array"
)

// actionDocText is what the tables do not say about each call form: a
// description, the arguments (with the keyword each form's parse reads)
// and an example. An element argument's doc is the action table's target
// text. A test keeps it equal to callForms.
var actionDocText = map[string]struct {
	desc    string
	args    []ActionArg
	example string
}{
	"click": {"Click an element.", []ActionArg{bid(Click)}, `click("add-to-cart")`},
	"hover": {"Move the mouse over an element (opens menus and tooltips that react to hover).", []ActionArg{bid(Hover)}, `hover("menu")`},
	"press": {"Press a key or key combination, on an element when bid is given (focused first), else on whatever has focus.",
		[]ActionArg{keyArg("key"), {Name: "bid", Type: ArgString, Doc: "the semantic id of the element to press the key on"}}, `press("search", "Enter")`},
	"keyboard_press": {"Press a key or key combination on whatever has focus.", []ActionArg{keyArg("key")}, `keyboard_press("Escape")`},
	"fill": {"Replace the text of a text field with value; enter=true presses Enter after it (to submit a search, say).",
		[]ActionArg{bid(Type), {Name: "value", Type: ArgString, Doc: "the text to type", Required: true},
			{Name: "enter", Type: ArgBoolean, Doc: "press Enter after typing"}}, `fill("search", "red shoes", enter=True)`},
	"clear": {"Empty a text field.", []ActionArg{bid(Clear)}, `clear("search")`},
	"select_option": {"Select one or more options of a <select>, by their text, value or id.",
		[]ActionArg{bid(Select), {Name: "options", Type: ArgArray, Doc: "the options to select: their text, value or id", Required: true}},
		`select_option("size", ["M"])`},
	"goto":       {"Open a URL in the active tab.", []ActionArg{{Name: "url", Type: ArgString, Doc: "an http or https URL", Required: true}}, `goto("http://shop.test/")`},
	"go_back":    {"Go back in the active tab's history.", nil, `go_back()`},
	"go_forward": {"Go forward in the active tab's history.", nil, `go_forward()`},
	"refresh":    {"Reload the page.", nil, `refresh()`},
	"new_tab":    {"Open a new tab, at url when given, and switch to it.", []ActionArg{{Name: "url", Type: ArgString, Doc: "the URL to open (a blank tab without it)"}}, `new_tab()`},
	"tab_focus":  {"Switch to a tab.", []ActionArg{tabArg(true)}, `tab_focus(0)`},
	"tab_close":  {"Close a tab (the active one without index).", []ActionArg{tabArg(false)}, `tab_close()`},
	"stop": {"End the episode, with the answer when the task asks a question (empty for tasks that only ask to do something).",
		[]ActionArg{{Name: "answer", Type: ArgString, Doc: "the answer to the task's question"}}, `stop("42")`},
	"report_infeasible": {"End the episode, reporting that the task cannot be done here.",
		[]ActionArg{{Name: "reason", Type: ArgString, Doc: "why it cannot be done"}}, `report_infeasible("no such product")`},
	"send_msg_to_user": {"Send a message to the user (chat tasks).", []ActionArg{{Name: "text", Type: ArgString, Doc: "the message", Required: true}}, `send_msg_to_user("done")`},
	"noop": {"Do nothing, wait up to wait_ms, then observe (for a page still changing).",
		[]ActionArg{{Name: "wait_ms", Type: ArgInteger, Doc: fmt.Sprintf("milliseconds to wait, 0 to %d", MaxNoopWait)}}, `noop(500)`},
}

// coordDocText describes the coordinate actions; their arguments come from
// coordActions.
var coordDocText = map[ActionType]struct{ desc, example string }{
	MouseClick:    {"Click at a point of the viewport.", `mouse_click(120, 48)`},
	MouseDblClick: {"Double-click at a point of the viewport.", `mouse_dblclick(120, 48)`},
	MouseMove:     {"Move the mouse to a point of the viewport.", `mouse_move(120, 48)`},
	MouseDrag:     {"Press the mouse at one point, move it to another and release it there.", `mouse_drag_and_drop(10, 20, 200, 20)`},
	Scroll:        {"Turn the mouse wheel where the mouse is, by delta_x and delta_y CSS pixels (positive delta_y scrolls down).", `scroll(0, 400)`},
	KeyboardType:  {"Type text into the focused element, key by key.", `keyboard_type("hello")`},
}

func bid(t ActionType) ActionArg {
	s, _ := specOf(t)
	return ActionArg{Name: "bid", Type: ArgString, Doc: s.target + ", as the observation shows it", Required: true}
}

func keyArg(name string) ActionArg {
	return ActionArg{Name: name, Type: ArgString, Doc: `a key or combination: "Enter", "Escape", "Tab", "Control+a", "ArrowDown"`, Required: true}
}

func tabArg(required bool) ActionArg {
	return ActionArg{Name: "index", Type: ArgInteger, Doc: "the tab's index, 0 for the first", Required: required}
}

// coordArgDoc is the doc of a coordinate action's numeric argument.
func coordArgDoc(name string) string {
	if strings.HasPrefix(name, "delta_") {
		return "wheel delta in CSS pixels"
	}
	return "CSS pixels of the viewport (a screenshot's pixel divided by screenshot_scale)"
}

// Actions describes every action of the call grammar: the call forms'
// first names, then the coordinate actions.
func Actions() []ActionDoc {
	var out []ActionDoc
	for _, f := range callForms {
		name := f.names[0]
		// A form without its text (a test catches it) is still listed, so
		// front ends never lose an action the parser reads.
		t := actionDocText[name]
		d := ActionDoc{Name: name, Description: t.desc, Args: slices.Clone(t.args), Example: t.example}
		if a, err := ParseAction(t.example); err == nil {
			d.Type = a.Type
		}
		out = append(out, d)
	}
	for _, c := range coordActions {
		t := coordDocText[c.typ]
		d := ActionDoc{Name: string(c.typ), Type: c.typ, Description: t.desc, Example: t.example}
		for _, p := range c.params {
			d.Args = append(d.Args, ActionArg{Name: p.name, Type: ArgNumber, Doc: coordArgDoc(p.name), Required: true})
		}
		if c.text {
			d.Args = append(d.Args, ActionArg{Name: "text", Type: ArgString, Doc: "the characters to type", Required: true})
		}
		if c.button {
			d.Args = append(d.Args, ActionArg{Name: "button", Type: ArgString, Doc: `"left" (the default), "middle" or "right"`})
		}
		out = append(out, d)
	}
	return out
}

// Call writes the action d with the given JSON arguments (as
// encoding/json decodes them) in the call form ParseAction reads, every
// argument by keyword. An unknown, missing or mistyped argument is an
// error that names it.
func (d ActionDoc) Call(args map[string]any) (string, error) {
	var names []string
	for _, a := range d.Args {
		names = append(names, a.Name)
	}
	var unknown []string
	for k := range args {
		if !slices.Contains(names, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		takes := "no arguments"
		if len(names) > 0 {
			takes = "only " + strings.Join(names, ", ")
		}
		return "", fmt.Errorf("%s: unknown argument %s; %s takes %s", d.Name, strings.Join(unknown, ", "), d.Name, takes)
	}
	var parts []string
	for _, a := range d.Args {
		v, ok := args[a.Name]
		if !ok || v == nil {
			if a.Required {
				return "", fmt.Errorf("%s needs %s (%s, %s)", d.Name, a.Name, a.Type, a.Doc)
			}
			continue
		}
		lit, err := literal(a, v)
		if err != nil {
			return "", fmt.Errorf("%s: %w", d.Name, err)
		}
		parts = append(parts, a.Name+"="+lit)
	}
	return d.Name + "(" + strings.Join(parts, ", ") + ")", nil
}

// literal writes v, of argument a, as the Python literal the call grammar
// reads.
func literal(a ActionArg, v any) (string, error) {
	bad := func() (string, error) {
		return "", fmt.Errorf("%s must be %s, got %T %v", a.Name, articled(a.Type), v, v)
	}
	switch a.Type {
	case ArgString:
		s, ok := v.(string)
		if !ok {
			return bad()
		}
		return quote(s), nil
	case ArgNumber, ArgInteger:
		n, ok := v.(float64)
		if !ok || math.IsNaN(n) || math.IsInf(n, 0) {
			return bad()
		}
		if a.Type == ArgInteger && n != math.Trunc(n) {
			return bad()
		}
		return strconv.FormatFloat(n, 'f', -1, 64), nil
	case ArgBoolean:
		b, ok := v.(bool)
		if !ok {
			return bad()
		}
		if b {
			return "True", nil
		}
		return "False", nil
	case ArgArray:
		list, ok := v.([]any)
		if !ok {
			return bad()
		}
		items := make([]string, len(list))
		for i, x := range list {
			s, ok := x.(string)
			if !ok {
				return "", fmt.Errorf("%s must be an array of strings, item %d is %T", a.Name, i, x)
			}
			items[i] = quote(s)
		}
		return "[" + strings.Join(items, ", ") + "]", nil
	}
	return bad()
}

func articled(typ string) string {
	switch typ {
	case ArgArray:
		return "an array of strings"
	case ArgInteger:
		return "an integer"
	}
	return "a " + typ
}

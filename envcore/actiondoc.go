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
	// Args are the arguments in the order the call form reads them
	// positionally (press's optional bid comes before its key, as in
	// BrowserGym; a single positional argument of press is its key).
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
	if strings.HasPrefix(name, "delta_") || name == "dx" || name == "dy" {
		return "wheel delta in CSS pixels"
	}
	return "CSS pixels of the viewport (a screenshot's pixel divided by screenshot_scale)"
}

// Actions describes every action of the call grammar: the call forms'
// first names, then the coordinate actions.
func Actions() []ActionDoc {
	var out []ActionDoc
	for _, f := range callForms {
		// The example of every form parses (TestActionsDescribeEveryCallForm);
		// the type comes from it.
		// Args is a list even without arguments: the actions op sends [], not null.
		d := ActionDoc{Name: f.names[0], Description: f.desc, Args: append([]ActionArg{}, f.args...), Example: f.example}
		if a, err := ParseAction(f.example); err == nil {
			d.Type = a.Type
		}
		out = append(out, d)
	}
	for _, c := range coordActions {
		d := ActionDoc{Name: string(c.typ), Type: c.typ, Description: c.desc, Args: []ActionArg{}, Example: c.example}
		for _, p := range c.params {
			d.Args = append(d.Args, ActionArg{Name: p.name, Type: ArgNumber, Doc: coordArgDoc(p.name), Required: true})
		}
		if c.text {
			d.Args = append(d.Args, ActionArg{Name: "text", Type: ArgString, Doc: "the characters to type", Required: true})
		}
		if c.files {
			d.Args = append(d.Args, filesArg)
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
	given, err := d.given(args)
	if err != nil {
		return "", err
	}
	parts := make([]string, 0, len(given))
	for _, g := range given {
		lit, err := literal(g.arg, g.v)
		if err != nil {
			return "", fmt.Errorf("%s: %w", d.Name, err)
		}
		parts = append(parts, g.arg.Name+"="+lit)
	}
	return d.Name + "(" + strings.Join(parts, ", ") + ")", nil
}

// Build makes the action d with the given JSON arguments, read as Call's
// keyword arguments are but without writing them out and parsing them
// back: an unknown, missing or mistyped argument, or an action the
// grammar refuses, is an error that names it.
func (d ActionDoc) Build(args map[string]any) (Parsed, error) {
	given, err := d.given(args)
	if err != nil {
		return Parsed{}, err
	}
	ca := callArgs{kw: make(map[string]argValue, len(given))}
	for _, g := range given {
		if _, err := literal(g.arg, g.v); err != nil { // the type check
			return Parsed{}, fmt.Errorf("%s: %w", d.Name, err)
		}
		ca.kw[g.arg.Name] = argValueOf(g.v)
	}
	a, err := callAction(d.Name, ca)
	if err != nil {
		return Parsed{}, err
	}
	return Parsed{Action: a, valid: true}, nil
}

// givenArg is one argument a tool call gave.
type givenArg struct {
	arg ActionArg
	v   any
}

// given checks args against d's arguments (none unknown, every required
// one there) and lists those given, in d's order.
func (d ActionDoc) given(args map[string]any) ([]givenArg, error) {
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
		return nil, fmt.Errorf("%s: unknown argument %s; %s takes %s", d.Name, strings.Join(unknown, ", "), d.Name, takes)
	}
	var out []givenArg
	for _, a := range d.Args {
		v, ok := args[a.Name]
		if !ok || v == nil {
			if a.Required {
				return nil, fmt.Errorf("%s needs %s (%s, %s)", d.Name, a.Name, a.Type, a.Doc)
			}
			continue
		}
		out = append(out, givenArg{a, v})
	}
	return out, nil
}

// argValueOf is a JSON value (one literal checked) as the call grammar's
// parser holds it.
func argValueOf(v any) argValue {
	switch x := v.(type) {
	case string:
		return argValue{kind: "str", str: x}
	case float64:
		return argValue{kind: "num", num: x}
	case bool:
		return argValue{kind: "bool", b: x}
	case []any:
		list := make([]argValue, len(x))
		for i, e := range x {
			list[i] = argValueOf(e)
		}
		return argValue{kind: "list", list: list}
	}
	return argValue{kind: "none"}
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

// Describe is the action grammar as text for a model's prompt, in the
// manner of BrowserGym's action-space description: every action with its
// arguments, what it does, and an example, one table (Actions) behind it.
func Describe() string {
	var b strings.Builder
	b.WriteString("Actions are calls; element ids are the ids the observation shows. Several calls, one a line, run in order in one step (the first that fails stops it).\n\n")
	for _, d := range Actions() {
		b.WriteString(d.Signature())
		b.WriteString("\n    ")
		b.WriteString(d.Description)
		b.WriteString("\n    Example: ")
		b.WriteString(d.Example)
		b.WriteString("\n")
	}
	return b.String()
}

// Signature is the action's call with its arguments and their types:
// fill(bid: string, value: string, enter?: boolean).
func (d ActionDoc) Signature() string {
	args := make([]string, len(d.Args))
	for i, a := range d.Args {
		opt := ""
		if !a.Required {
			opt = "?"
		}
		args[i] = a.Name + opt + ": " + a.Type
	}
	return d.Name + "(" + strings.Join(args, ", ") + ")"
}

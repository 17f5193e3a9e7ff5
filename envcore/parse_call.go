package envcore

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// The call grammar: BrowserGym's actions as Python calls, click("12"),
// fill("5", "shoes", enter=True), select_option("7", ["S", "M"]). The
// arguments are Python literals; callForms says which names mean which
// semantic action and reads their arguments.

// argValue is a parsed Python literal: a string, an int, a bool, None, or a
// list of those.
type argValue struct {
	kind string // "str", "int", "float", "bool", "none", "list"
	str  string
	num  float64
	b    bool
	list []argValue
}

type callArgs struct {
	pos []argValue
	kw  map[string]argValue
}

type scanner struct {
	s string
	i int
}

func (sc *scanner) skipSpace() {
	for sc.i < len(sc.s) && (sc.s[sc.i] == ' ' || sc.s[sc.i] == '\t' || sc.s[sc.i] == '\n' || sc.s[sc.i] == '\r') {
		sc.i++
	}
}

func (sc *scanner) peek() byte {
	if sc.i < len(sc.s) {
		return sc.s[sc.i]
	}
	return 0
}

func parseCallArgs(s string) (callArgs, error) {
	args, end, err := parseCallArgsAt(s)
	if err != nil {
		return args, err
	}
	if rest := strings.TrimSpace(s[end:]); rest != "" {
		return args, fmt.Errorf("unexpected text after the call: %q (one action per step; several actions go on separate lines)", clipStr(rest, 40))
	}
	return args, nil
}

// parseCallArgsAt reads the arguments of a call from s, which begins at its
// "(", through the closing ")" and a ";" after it, and returns where it
// stopped.
func parseCallArgsAt(s string) (callArgs, int, error) {
	sc := &scanner{s: s, i: 1} // past "("
	args := callArgs{kw: map[string]argValue{}}
	for {
		sc.skipSpace()
		if sc.peek() == ')' {
			sc.i++
			break
		}
		if sc.i >= len(sc.s) {
			return args, sc.i, fmt.Errorf("missing closing parenthesis")
		}
		// keyword argument?
		j := sc.i
		for j < len(sc.s) && (sc.s[j] == '_' || sc.s[j] >= 'a' && sc.s[j] <= 'z' || sc.s[j] >= 'A' && sc.s[j] <= 'Z' || j > sc.i && sc.s[j] >= '0' && sc.s[j] <= '9') {
			j++
		}
		k := j
		for k < len(sc.s) && sc.s[k] == ' ' {
			k++
		}
		key := ""
		if j > sc.i && k < len(sc.s) && sc.s[k] == '=' && (k+1 >= len(sc.s) || sc.s[k+1] != '=') {
			key = sc.s[sc.i:j]
			sc.i = k + 1
			sc.skipSpace()
		}
		v, err := sc.value(0)
		if err != nil {
			return args, sc.i, err
		}
		if key != "" {
			if _, dup := args.kw[key]; dup {
				return args, sc.i, fmt.Errorf("argument %s given twice", key)
			}
			args.kw[key] = v
		} else {
			if len(args.kw) > 0 {
				return args, sc.i, fmt.Errorf("positional argument after a keyword argument")
			}
			args.pos = append(args.pos, v)
		}
		sc.skipSpace()
		switch sc.peek() {
		case ',':
			sc.i++
		case ')':
		default:
			if sc.i >= len(sc.s) {
				return args, sc.i, fmt.Errorf("missing closing parenthesis")
			}
			return args, sc.i, fmt.Errorf("unexpected %q after an argument", sc.s[sc.i])
		}
	}
	for sc.i < len(sc.s) && (sc.s[sc.i] == ' ' || sc.s[sc.i] == '\t') {
		sc.i++
	}
	if sc.i < len(sc.s) && sc.s[sc.i] == ';' {
		sc.i++
	}
	return args, sc.i, nil
}

func (sc *scanner) value(depth int) (argValue, error) {
	if depth > 4 {
		return argValue{}, fmt.Errorf("lists nested too deep")
	}
	sc.skipSpace()
	c := sc.peek()
	switch {
	case c == '"' || c == '\'':
		str, err := sc.str()
		return argValue{kind: "str", str: str}, err
	case c == '[':
		sc.i++
		var list []argValue
		for {
			sc.skipSpace()
			if sc.peek() == ']' {
				sc.i++
				return argValue{kind: "list", list: list}, nil
			}
			v, err := sc.value(depth + 1)
			if err != nil {
				return argValue{}, err
			}
			list = append(list, v)
			sc.skipSpace()
			switch sc.peek() {
			case ',':
				sc.i++
			case ']':
			default:
				return argValue{}, fmt.Errorf("expected , or ] in a list")
			}
		}
	case c == '-' || c == '+' || c >= '0' && c <= '9' || c == '.':
		j := sc.i + 1
		for j < len(sc.s) && (sc.s[j] >= '0' && sc.s[j] <= '9' || sc.s[j] == '.' || sc.s[j] == 'e' || sc.s[j] == 'E' || sc.s[j] == '_') {
			j++
		}
		lit := strings.ReplaceAll(sc.s[sc.i:j], "_", "")
		sc.i = j
		n, err := strconv.ParseFloat(lit, 64)
		if err != nil {
			return argValue{}, fmt.Errorf("bad number %q", lit)
		}
		return argValue{kind: "num", num: n}, nil
	default:
		for _, w := range []struct {
			word string
			v    argValue
		}{{"True", argValue{kind: "bool", b: true}}, {"False", argValue{kind: "bool"}},
			{"true", argValue{kind: "bool", b: true}}, {"false", argValue{kind: "bool"}}, {"None", argValue{kind: "none"}}} {
			if strings.HasPrefix(sc.s[sc.i:], w.word) {
				sc.i += len(w.word)
				return w.v, nil
			}
		}
		if sc.i >= len(sc.s) {
			return argValue{}, fmt.Errorf("missing closing parenthesis")
		}
		return argValue{}, fmt.Errorf("expected a quoted string, a number, True/False or a list, found %q", clipStr(sc.s[sc.i:], 20))
	}
}

// str reads a single- or double-quoted Python string literal.
func (sc *scanner) str() (string, error) {
	q := sc.s[sc.i]
	sc.i++
	var b strings.Builder
	for sc.i < len(sc.s) {
		c := sc.s[sc.i]
		switch {
		case c == q:
			sc.i++
			return b.String(), nil
		case c == '\\' && sc.i+1 < len(sc.s):
			e := sc.s[sc.i+1]
			sc.i += 2
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case '0':
				b.WriteByte(0)
			case '\\', '\'', '"':
				b.WriteByte(e)
			case 'x', 'u', 'U':
				n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
				if sc.i+n > len(sc.s) {
					return "", fmt.Errorf("short \\%c escape", e)
				}
				v, err := strconv.ParseUint(sc.s[sc.i:sc.i+n], 16, 32)
				if err != nil || v > unicode.MaxRune {
					return "", fmt.Errorf("bad \\%c escape", e)
				}
				b.WriteRune(rune(v))
				sc.i += n
			default:
				b.WriteByte('\\')
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
			sc.i++
		}
	}
	return "", fmt.Errorf("unterminated string")
}

// arg returns the i-th positional argument or the keyword argument named one
// of names.
func (a callArgs) arg(i int, names ...string) (argValue, bool) {
	for _, n := range names {
		if v, ok := a.kw[n]; ok {
			return v, true
		}
	}
	if i >= 0 && i < len(a.pos) {
		return a.pos[i], true
	}
	return argValue{}, false
}

func (a callArgs) count() int { return len(a.pos) + len(a.kw) }

func (v argValue) text() (string, bool) {
	switch v.kind {
	case "str":
		return v.str, true
	case "num":
		return strconv.FormatFloat(v.num, 'f', -1, 64), true
	}
	return "", false
}

func (v argValue) integer() (int, bool) {
	if v.kind != "num" || v.num != float64(int(v.num)) || v.num > 1<<31 || v.num < -(1<<31) {
		return 0, false
	}
	return int(v.num), true
}

// parsedCall is one parsed call, with the readers its form's parse uses.
type parsedCall struct {
	name string
	args callArgs
}

// str reads a string argument: positional i or a keyword in names.
func (c parsedCall) str(i int, what string, names ...string) (string, error) {
	v, ok := c.args.arg(i, names...)
	if !ok {
		return "", fmt.Errorf("%s(...) needs %s", c.name, what)
	}
	s, ok := v.text()
	if !ok {
		return "", fmt.Errorf("%s(...): %s must be a string", c.name, what)
	}
	return s, nil
}

// optStr reads an optional string argument ("" when absent).
func (c parsedCall) optStr(i int, names ...string) (string, error) {
	if _, ok := c.args.arg(i, names...); !ok {
		return "", nil
	}
	return c.str(i, names[0], names...)
}

func (c parsedCall) atMost(n int) error {
	if c.args.count() > n {
		return fmt.Errorf("%s(...) takes at most %d argument(s), got %d", c.name, n, c.args.count())
	}
	return nil
}

func (c parsedCall) target() (string, error) { return c.str(0, "an element id", "bid", "id", "target") }

func (c parsedCall) tab(required bool) (*int, error) {
	v, ok := c.args.arg(0, "index", "tab", "page_index")
	if !ok {
		if required {
			return nil, fmt.Errorf("%s(...) needs a tab index", c.name)
		}
		return nil, nil
	}
	n, ok := v.integer()
	if !ok {
		return nil, fmt.Errorf("%s(...): the tab index must be an integer", c.name)
	}
	return &n, nil
}

// targetOnly is the parse of a call that names an element and nothing
// else.
func targetOnly(t ActionType) func(parsedCall, *Action) error {
	return func(c parsedCall, a *Action) (err error) {
		a.Type = t
		if a.Target, err = c.target(); err != nil {
			return err
		}
		return c.atMost(1)
	}
}

// noArgs is the parse of a call without arguments.
func noArgs(t ActionType) func(parsedCall, *Action) error {
	return func(c parsedCall, a *Action) error {
		a.Type = t
		return c.atMost(0)
	}
}

// keyArg1 is the argument of keyboard_down and keyboard_up: one key.
func keyArg1(name string) ActionArg {
	return ActionArg{Name: name, Type: ArgString, Doc: `one key: "Shift", "Control", "a", "Enter"`, Required: true}
}

// filesArg is an upload's files.
var filesArg = ActionArg{Name: "file", Type: ArgArray, Doc: "a path or a list of paths inside the environment's upload directory (a path may also be given as a string); [] clears the choice", Required: true}

// pointerDocArgs are the arguments of click and dblclick.
func pointerDocArgs(t ActionType) []ActionArg {
	return []ActionArg{bid(t),
		{Name: "button", Type: ArgString, Doc: `"left" (the default), "middle" or "right"`},
		{Name: "modifiers", Type: ArgArray, Doc: `keys held during the click: "Alt", "Control", "ControlOrMeta", "Meta", "Shift"`}}
}

// pointerCall is the parse of click and dblclick: bid, button, modifiers,
// in BrowserGym's order.
func pointerCall(t ActionType) func(parsedCall, *Action) error {
	return func(c parsedCall, a *Action) (err error) {
		a.Type = t
		if a.Target, err = c.target(); err != nil {
			return err
		}
		if a.Button, err = c.optStr(1, "button"); err != nil {
			return err
		}
		if a.Button == "left" {
			a.Button = "" // the default, as String prints it
		}
		if v, ok := c.args.arg(2, "modifiers"); ok {
			if a.Modifiers, err = c.strings(v, "modifiers"); err != nil {
				return err
			}
		}
		return c.atMost(3)
	}
}

// keyCall is the parse of keyboard_down and keyboard_up.
func keyCall(t ActionType) func(parsedCall, *Action) error {
	return func(c parsedCall, a *Action) (err error) {
		a.Type = t
		if a.Key, err = c.str(0, "a key", "key"); err != nil {
			return err
		}
		return c.atMost(1)
	}
}

// strings reads a list of strings (or one string, as a list of one).
func (c parsedCall) strings(v argValue, what string) ([]string, error) {
	if v.kind == "str" {
		return []string{v.str}, nil
	}
	if v.kind != "list" {
		return nil, fmt.Errorf("%s(...): %s must be a string or a list of strings", c.name, what)
	}
	out := make([]string, 0, len(v.list))
	for _, x := range v.list {
		if x.kind != "str" {
			return nil, fmt.Errorf("%s(...): %s must be a list of strings", c.name, what)
		}
		out = append(out, x.str)
	}
	return out, nil
}

// files reads an upload's files, positional i or file=.
func (c parsedCall) files(i int) ([]string, error) {
	v, ok := c.args.arg(i, "file", "files")
	if !ok {
		return nil, fmt.Errorf("%s(...) needs the file to upload (a path, or a list of paths)", c.name)
	}
	return c.strings(v, "file")
}

// callForm is a semantic action in the call grammar: the names agents
// call it by (names are listed in errors, aliases are only accepted) and
// how its arguments are read. The coordinate actions have their table in
// coords.go.
type callForm struct {
	names, aliases []string
	// desc, args and example describe the action for a model and for tools
	// (Actions, Describe, the MCP tools, the docs' table): what it does, its
	// arguments with their JSON types, and a call ParseAction reads.
	desc    string
	args    []ActionArg
	example string
	parse   func(c parsedCall, a *Action) error
}

var callForms = []callForm{
	{names: []string{"click"},
		desc:    "Click an element; button= picks the mouse button and modifiers= the keys held during the click.",
		args:    pointerDocArgs(Click),
		example: `click("add-to-cart")`,
		parse:   pointerCall(Click)},
	{names: []string{"hover"},
		desc:    "Move the mouse over an element (opens menus and tooltips that react to hover).",
		args:    []ActionArg{bid(Hover)},
		example: `hover("menu")`,
		parse:   targetOnly(Hover)},
	{names: []string{"dblclick"},
		desc:    "Double-click an element; button= picks the mouse button and modifiers= the keys held during the clicks.",
		args:    pointerDocArgs(DblClick),
		example: `dblclick("title")`,
		parse:   pointerCall(DblClick)},
	{names: []string{"focus"},
		desc:    "Focus an element, without clicking it.",
		args:    []ActionArg{bid(Focus)},
		example: `focus("search")`,
		parse:   targetOnly(Focus)},
	{names: []string{"drag_and_drop"},
		desc:    "Drag an element onto another: press the left button over from_bid, move over to_bid and release it there.",
		args:    []ActionArg{{Name: "from_bid", Type: ArgString, Doc: "the semantic id of the element to drag", Required: true}, {Name: "to_bid", Type: ArgString, Doc: "the semantic id of the element to drop on", Required: true}},
		example: `drag_and_drop("card-3", "done-column")`,
		parse: func(c parsedCall, a *Action) (err error) {
			a.Type = DragDrop
			if a.Target, err = c.str(0, "the element to drag", "from_bid"); err != nil {
				return err
			}
			if a.To, err = c.str(1, "the element to drop on", "to_bid"); err != nil {
				return err
			}
			return c.atMost(2)
		}},
	{names: []string{"upload_file"},
		desc:    "Click an element that opens a file chooser (a file input, or a button that clicks one) and choose files in it; an empty list clears the choice. Paths are inside the environment's upload directory, which is their root.",
		args:    []ActionArg{bid(Upload), filesArg},
		example: `upload_file("receipt", ["receipt.pdf"])`,
		parse: func(c parsedCall, a *Action) (err error) {
			a.Type = Upload
			if a.Target, err = c.target(); err != nil {
				return err
			}
			if a.Files, err = c.files(1); err != nil {
				return err
			}
			return c.atMost(2)
		}},
	{names: []string{"press"},
		desc:    "Press a key or key combination on an element (focused first), as BrowserGym's press(bid, key_comb); with the key alone, on whatever has focus.",
		args:    []ActionArg{{Name: "bid", Type: ArgString, Doc: "the semantic id of the element to press the key on; leave it out to press on whatever has focus"}, keyArg("key")},
		example: `press("search", "Enter")`,
		parse: func(c parsedCall, a *Action) (err error) {
			a.Type = Press
			if c.args.count() >= 2 {
				if a.Target, err = c.target(); err != nil {
					return err
				}
				a.Key, err = c.str(1, "a key", "key_comb", "key")
				return err
			}
			a.Key, err = c.str(0, "a key", "key_comb", "key")
			return err
		}},
	{names: []string{"keyboard_press"},
		desc:    "Press a key or key combination on whatever has focus.",
		args:    []ActionArg{keyArg("key")},
		example: `keyboard_press("Escape")`,
		parse: func(c parsedCall, a *Action) (err error) {
			a.Type = Press
			if a.Key, err = c.str(0, "a key", "key", "key_comb"); err != nil {
				return err
			}
			return c.atMost(1)
		}},
	{names: []string{"keyboard_down"},
		desc:    "Press a key and hold it (until keyboard_up): a held modifier applies to the clicks and keys that follow.",
		args:    []ActionArg{keyArg1("key")},
		example: `keyboard_down("Shift")`,
		parse:   keyCall(KeyDown)},
	{names: []string{"keyboard_up"},
		desc:    "Release a key held with keyboard_down.",
		args:    []ActionArg{keyArg1("key")},
		example: `keyboard_up("Shift")`,
		parse:   keyCall(KeyUp)},
	{names: []string{"fill", "type"}, aliases: []string{"type_text"},
		desc: "Replace the text of a text field with value, typed key by key (so autocomplete menus open: enable_autocomplete_menu is accepted and always in effect); enter=true presses Enter after it (to submit a search, say).",
		args: []ActionArg{bid(Type), {Name: "value", Type: ArgString, Doc: "the text to type", Required: true},
			{Name: "enable_autocomplete_menu", Type: ArgBoolean, Doc: "BrowserGym's flag; typing is always key by key, so the page's autocomplete sees it either way"},
			{Name: "enter", Type: ArgBoolean, Doc: "press Enter after typing"}},
		example: `fill("search", "red shoes", enter=True)`,
		parse: func(c parsedCall, a *Action) (err error) {
			a.Type = Type
			if a.Target, err = c.target(); err != nil {
				return err
			}
			if a.Text, err = c.str(1, "the text to type", "value", "text"); err != nil {
				return err
			}
			if v, ok := c.args.arg(2, "enable_autocomplete_menu"); ok && v.kind != "bool" {
				return fmt.Errorf("%s(...): enable_autocomplete_menu must be True or False", c.name)
			}
			if v, ok := c.args.arg(-1, "enter", "press_enter", "press_enter_after", "submit"); ok {
				switch v.kind {
				case "bool":
					a.Enter = v.b
				case "num":
					a.Enter = v.num != 0
				default:
					return fmt.Errorf("%s(...): enter must be True or False", c.name)
				}
			}
			return c.atMost(4)
		}},
	{names: []string{"clear"},
		desc:    "Empty a text field.",
		args:    []ActionArg{bid(Clear)},
		example: `clear("search")`,
		parse:   targetOnly(Clear)},
	{names: []string{"select_option"}, aliases: []string{"select"},
		desc:    "Select one or more options of a <select>, by their text, value or id.",
		args:    []ActionArg{bid(Select), {Name: "options", Type: ArgArray, Doc: "the options to select: their text, value or id", Required: true}},
		example: `select_option("size", ["M"])`,
		parse: func(c parsedCall, a *Action) (err error) {
			a.Type = Select
			if a.Target, err = c.target(); err != nil {
				return err
			}
			v, ok := c.args.arg(1, "options", "option", "value")
			if !ok {
				return fmt.Errorf("%s(...) needs the option to select", c.name)
			}
			if v.kind == "list" {
				for _, x := range v.list {
					s, ok := x.text()
					if !ok {
						return fmt.Errorf("%s(...): options must be strings", c.name)
					}
					a.Options = append(a.Options, s)
				}
			} else if s, ok := v.text(); ok {
				a.Options = []string{s}
			} else {
				return fmt.Errorf("%s(...): the option must be a string or a list of strings", c.name)
			}
			if len(a.Options) == 0 {
				return fmt.Errorf("%s(...) needs at least one option", c.name)
			}
			return c.atMost(2)
		}},
	{names: []string{"goto"}, aliases: []string{"navigate"},
		desc:    "Open a URL in the active tab.",
		args:    []ActionArg{{Name: "url", Type: ArgString, Doc: "an http or https URL", Required: true}},
		example: `goto("http://shop.test/")`,
		parse: func(c parsedCall, a *Action) (err error) {
			a.Type = Goto
			a.URL, err = c.str(0, "a URL", "url")
			return err
		}},
	{names: []string{"go_back"}, aliases: []string{"back"},
		desc:    "Go back in the active tab's history.",
		args:    nil,
		example: `go_back()`,
		parse:   noArgs(Back)},
	{names: []string{"go_forward"}, aliases: []string{"forward"},
		desc:    "Go forward in the active tab's history.",
		args:    nil,
		example: `go_forward()`,
		parse:   noArgs(Forward)},
	{names: []string{"refresh"}, aliases: []string{"reload"},
		desc:    "Reload the page.",
		args:    nil,
		example: `refresh()`,
		parse:   noArgs(Refresh)},
	{names: []string{"new_tab"},
		desc:    "Open a new tab, at url when given, and switch to it.",
		args:    []ActionArg{{Name: "url", Type: ArgString, Doc: "the URL to open (a blank tab without it)"}},
		example: `new_tab()`,
		parse: func(c parsedCall, a *Action) (err error) {
			a.Type = NewTab
			a.URL, err = c.optStr(0, "url")
			return err
		}},
	{names: []string{"tab_focus"}, aliases: []string{"switch_tab"},
		desc:    "Switch to a tab.",
		args:    []ActionArg{tabArg(true)},
		example: `tab_focus(0)`,
		parse: func(c parsedCall, a *Action) (err error) {
			a.Type = SwitchTab
			a.Tab, err = c.tab(true)
			return err
		}},
	{names: []string{"tab_close"}, aliases: []string{"close_tab"},
		desc:    "Close a tab (the active one without index).",
		args:    []ActionArg{tabArg(false)},
		example: `tab_close()`,
		parse: func(c parsedCall, a *Action) (err error) {
			a.Type = CloseTab
			a.Tab, err = c.tab(false)
			return err
		}},
	{names: []string{"stop"}, aliases: []string{"terminate", "answer"},
		desc:    "End the episode, with the answer when the task asks a question (empty for tasks that only ask to do something).",
		args:    []ActionArg{{Name: "answer", Type: ArgString, Doc: "the answer to the task's question"}},
		example: `stop("42")`,
		parse: func(c parsedCall, a *Action) (err error) {
			a.Type = Terminate
			a.Answer, err = c.optStr(0, "answer", "text")
			return err
		}},
	{names: []string{"report_infeasible"},
		desc:    "End the episode, reporting that the task cannot be done here.",
		args:    []ActionArg{{Name: "reason", Type: ArgString, Doc: "why it cannot be done"}},
		example: `report_infeasible("no such product")`,
		parse: func(c parsedCall, a *Action) (err error) {
			a.Type = Terminate
			a.Infeasible = true
			a.Answer, err = c.optStr(0, "reason", "text")
			return err
		}},
	{names: []string{"send_msg_to_user"}, aliases: []string{"send_msg"},
		desc:    "Send a message to the user (chat tasks).",
		args:    []ActionArg{{Name: "text", Type: ArgString, Doc: "the message", Required: true}},
		example: `send_msg_to_user("done")`,
		parse: func(c parsedCall, a *Action) (err error) {
			a.Type = SendMsg
			a.Text, err = c.str(0, "the message", "text")
			return err
		}},
	{names: []string{"expand"},
		desc:    "Show a part the observation folded to fit its token budget (a line \"… N more items like this\" gives its id): the next observations keep its items first, until the page navigates. Nothing in the page changes.",
		args:    []ActionArg{bid(Expand)},
		example: `expand("fold-3935a2be-2")`,
		parse:   targetOnly(Expand)},
	{names: []string{"noop"}, aliases: []string{"wait"},
		desc:    "Do nothing, wait up to wait_ms, then observe (for a page still changing).",
		args:    []ActionArg{{Name: "wait_ms", Type: ArgInteger, Doc: fmt.Sprintf("milliseconds to wait, 0 to %d", MaxNoopWait)}},
		example: `noop(500)`,
		parse: func(c parsedCall, a *Action) error {
			a.Type = Noop
			if v, ok := c.args.arg(0, "wait_ms"); ok {
				if v.kind != "num" || v.num < 0 || v.num > MaxNoopWait {
					return fmt.Errorf("%s(...): wait_ms must be a number of milliseconds between 0 and %d", c.name, MaxNoopWait)
				}
				a.WaitMs = int(math.Round(v.num))
			}
			return c.atMost(1)
		}},
}

// callFormOf finds a call's form by any of its names.
var callFormOf = func() map[string]*callForm {
	m := map[string]*callForm{}
	for i, f := range callForms {
		for _, n := range append(slices.Clone(f.names), f.aliases...) {
			m[n] = &callForms[i]
		}
	}
	return m
}()

// callNames lists the calls for errors: the forms' names (not their
// aliases), then the coordinate actions with their signatures.
var callNames = func() string {
	var names []string
	for _, f := range callForms {
		names = append(names, f.names...)
	}
	for _, c := range coordActions {
		names = append(names, string(c.typ)+"("+c.signature()+")")
	}
	return strings.Join(names, ", ")
}()

func callAction(name string, args callArgs) (Action, error) {
	if c, ok := coordActionOf(ActionType(name)); ok {
		return c.parse(name, args)
	}
	var a Action
	f, ok := callFormOf[name]
	if !ok {
		return a, fmt.Errorf("unknown action %q; use one of %s", name, callNames)
	}
	if err := f.parse(parsedCall{name, args}, &a); err != nil {
		return a, err
	}
	return a, a.Validate()
}

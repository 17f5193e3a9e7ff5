package envcore

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ParseAction reads an action in one of the string forms agents emit:
//
//   - BrowserGym calls: click("id"), fill("id", "text"), select_option("id",
//     "opt") or with a list, hover("id"), press("id", "Enter"),
//     keyboard_press("Enter"), goto("url"), go_back(), go_forward(),
//     new_tab(), tab_focus(1), tab_close(), send_msg_to_user("text"),
//     report_infeasible("why"), noop(), noop(500); and WebServ's own:
//     type("id", "text", enter=True), clear("id"), refresh(), stop("answer").
//   - WebArena commands: click [id], type [id] [text] [1], hover [id],
//     press [Control+a], goto [url], go_back, go_forward, new_tab,
//     tab_focus [1], close_tab, stop [answer]; and clear [id],
//     select [id] [option], refresh.
//
// Surrounding whitespace and a Markdown code fence are ignored. The error of
// a string that does not parse says what was expected.
func ParseAction(s string) (Action, error) {
	s = stripFence(strings.TrimSpace(s))
	if s == "" {
		return Action{}, fmt.Errorf("empty action: expected a call like click(\"id\") or a command like click [id]")
	}
	i := 0
	for i < len(s) && (s[i] == '_' || s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' || i > 0 && s[i] >= '0' && s[i] <= '9') {
		i++
	}
	name := strings.ToLower(s[:i])
	if name == "" {
		return Action{}, fmt.Errorf("cannot parse action %q: expected a call like click(\"id\") or a command like click [id]", clipStr(s, 60))
	}
	rest := strings.TrimLeftFunc(s[i:], unicode.IsSpace)
	if strings.HasPrefix(rest, "(") {
		args, err := parseCallArgs(rest)
		if err != nil {
			return Action{}, fmt.Errorf("cannot parse %s(...): %w", name, err)
		}
		return callAction(name, args)
	}
	return commandAction(name, rest)
}

func stripFence(s string) string {
	if !strings.HasPrefix(s, "```") {
		return s
	}
	s = strings.TrimPrefix(s, "```")
	if nl := strings.IndexByte(s, '\n'); nl >= 0 && !strings.ContainsAny(s[:nl], "([") {
		s = s[nl+1:] // language tag line
	}
	s = strings.TrimSpace(s)
	s = strings.TrimSuffix(s, "```")
	return strings.TrimSpace(s)
}

func clipStr(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// ---- BrowserGym call form -------------------------------------------------

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
	sc := &scanner{s: s, i: 1} // past "("
	args := callArgs{kw: map[string]argValue{}}
	for {
		sc.skipSpace()
		if sc.peek() == ')' {
			sc.i++
			break
		}
		if sc.i >= len(sc.s) {
			return args, fmt.Errorf("missing closing parenthesis")
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
			return args, err
		}
		if key != "" {
			if _, dup := args.kw[key]; dup {
				return args, fmt.Errorf("argument %s given twice", key)
			}
			args.kw[key] = v
		} else {
			if len(args.kw) > 0 {
				return args, fmt.Errorf("positional argument after a keyword argument")
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
				return args, fmt.Errorf("missing closing parenthesis")
			}
			return args, fmt.Errorf("unexpected %q after an argument", sc.s[sc.i])
		}
	}
	sc.skipSpace()
	if sc.i < len(sc.s) && sc.s[sc.i] == ';' {
		sc.i++
		sc.skipSpace()
	}
	if sc.i < len(sc.s) {
		return args, fmt.Errorf("unexpected text after the call: %q (one action per step)", clipStr(sc.s[sc.i:], 40))
	}
	return args, nil
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

func callAction(name string, args callArgs) (Action, error) {
	strArg := func(i int, what string, names ...string) (string, error) {
		v, ok := args.arg(i, names...)
		if !ok {
			return "", fmt.Errorf("%s(...) needs %s", name, what)
		}
		s, ok := v.text()
		if !ok {
			return "", fmt.Errorf("%s(...): %s must be a string", name, what)
		}
		return s, nil
	}
	optStr := func(i int, names ...string) (string, error) {
		if _, ok := args.arg(i, names...); !ok {
			return "", nil
		}
		return strArg(i, names[0], names...)
	}
	maxArgs := func(n int) error {
		if args.count() > n {
			return fmt.Errorf("%s(...) takes at most %d argument(s), got %d", name, n, args.count())
		}
		return nil
	}
	target := func() (string, error) { return strArg(0, "an element id", "bid", "id", "target") }
	tabArg := func(required bool) (*int, error) {
		v, ok := args.arg(0, "index", "tab", "page_index")
		if !ok {
			if required {
				return nil, fmt.Errorf("%s(...) needs a tab index", name)
			}
			return nil, nil
		}
		n, ok := v.integer()
		if !ok {
			return nil, fmt.Errorf("%s(...): the tab index must be an integer", name)
		}
		return &n, nil
	}

	if c, ok := coordActionOf(ActionType(name)); ok {
		return c.parse(name, args)
	}
	var a Action
	var err error
	switch name {
	case "click":
		a.Type = Click
		if a.Target, err = target(); err != nil {
			return a, err
		}
		if v, ok := args.kw["button"]; ok {
			if b, _ := v.text(); b != "left" {
				return a, fmt.Errorf("click(...): only the left button is supported, got button=%q", b)
			}
		}
	case "dblclick":
		return a, fmt.Errorf("dblclick is not supported: use click")
	case "hover":
		a.Type = Hover
		if a.Target, err = target(); err != nil {
			return a, err
		}
		err = maxArgs(1)
	case "fill", "type", "type_text":
		a.Type = Type
		if a.Target, err = target(); err != nil {
			return a, err
		}
		if a.Text, err = strArg(1, "the text to type", "value", "text"); err != nil {
			return a, err
		}
		if v, ok := args.arg(-1, "enter", "press_enter", "press_enter_after", "submit"); ok {
			switch v.kind {
			case "bool":
				a.Enter = v.b
			case "num":
				a.Enter = v.num != 0
			default:
				return a, fmt.Errorf("%s(...): enter must be True or False", name)
			}
		}
		err = maxArgs(3)
	case "clear":
		a.Type = Clear
		if a.Target, err = target(); err != nil {
			return a, err
		}
		err = maxArgs(1)
	case "select_option", "select":
		a.Type = Select
		if a.Target, err = target(); err != nil {
			return a, err
		}
		v, ok := args.arg(1, "options", "option", "value")
		if !ok {
			return a, fmt.Errorf("%s(...) needs the option to select", name)
		}
		if v.kind == "list" {
			for _, x := range v.list {
				s, ok := x.text()
				if !ok {
					return a, fmt.Errorf("%s(...): options must be strings", name)
				}
				a.Options = append(a.Options, s)
			}
		} else if s, ok := v.text(); ok {
			a.Options = []string{s}
		} else {
			return a, fmt.Errorf("%s(...): the option must be a string or a list of strings", name)
		}
		if len(a.Options) == 0 {
			return a, fmt.Errorf("%s(...) needs at least one option", name)
		}
		err = maxArgs(2)
	case "press":
		a.Type = Press
		if len(args.pos)+len(args.kw) >= 2 {
			if a.Target, err = target(); err != nil {
				return a, err
			}
			a.Key, err = strArg(1, "a key", "key_comb", "key")
		} else {
			a.Key, err = strArg(0, "a key", "key_comb", "key")
		}
	case "keyboard_press":
		a.Type = Press
		a.Key, err = strArg(0, "a key", "key", "key_comb")
		if err == nil {
			err = maxArgs(1)
		}
	case "goto", "navigate":
		a.Type = Goto
		a.URL, err = strArg(0, "a URL", "url")
	case "go_back", "back":
		a.Type = Back
		err = maxArgs(0)
	case "go_forward", "forward":
		a.Type = Forward
		err = maxArgs(0)
	case "refresh", "reload":
		a.Type = Refresh
		err = maxArgs(0)
	case "new_tab":
		a.Type = NewTab
		a.URL, err = optStr(0, "url")
	case "tab_focus", "switch_tab":
		a.Type = SwitchTab
		a.Tab, err = tabArg(true)
	case "tab_close", "close_tab":
		a.Type = CloseTab
		a.Tab, err = tabArg(false)
	case "stop", "terminate", "answer":
		a.Type = Terminate
		a.Answer, err = optStr(0, "answer", "text")
	case "report_infeasible":
		a.Type = Terminate
		a.Infeasible = true
		a.Answer, err = optStr(0, "reason", "text")
	case "send_msg_to_user", "send_msg":
		a.Type = SendMsg
		a.Text, err = strArg(0, "the message", "text")
	case "noop", "wait":
		a.Type = Noop
		if v, ok := args.arg(0, "wait_ms"); ok {
			n, ok := v.integer()
			if !ok {
				return a, fmt.Errorf("%s(...): wait_ms must be an integer", name)
			}
			a.WaitMs = n
		}
	case "mouse_down", "mouse_up", "drag_and_drop", "mouse_upload_file":
		return a, fmt.Errorf("%s is not supported; use mouse_click(x, y) or mouse_drag_and_drop(from_x, from_y, to_x, to_y)", name)
	case "upload_file", "focus", "keyboard_insert_text", "keyboard_down", "keyboard_up":
		return a, fmt.Errorf("%s is not supported; use one of %s", name, stringActionNames)
	default:
		return a, fmt.Errorf("unknown action %q; use one of %s", name, stringActionNames)
	}
	if err != nil {
		return a, err
	}
	return a, a.Validate()
}

var stringActionNames = func() string {
	s := `click, hover, press, keyboard_press, fill, type, clear, select_option, goto, go_back, go_forward, refresh, new_tab, tab_focus, tab_close, stop, report_infeasible, send_msg_to_user, noop`
	for _, c := range coordActions {
		s += ", " + string(c.typ) + "(" + c.signature() + ")"
	}
	return s
}()

var errNoScroll = fmt.Errorf(`the WebArena scroll command is not supported: element actions scroll their target into view; to scroll the page use scroll(delta_x, delta_y), for example scroll(0, 600)`)

// ---- WebArena command form ------------------------------------------------

// brackets splits "[a] [b] [c]" into its groups. The last group runs to the
// last "]" so free text (an answer, typed text) may contain brackets.
func brackets(s string, n int) ([]string, error) {
	var out []string
	s = strings.TrimSpace(s)
	for len(out) < n && s != "" {
		if s[0] != '[' {
			return nil, fmt.Errorf("expected [ at %q", clipStr(s, 20))
		}
		var end int
		if len(out) == n-1 {
			end = strings.LastIndexByte(s, ']')
		} else {
			end = strings.IndexByte(s, ']')
		}
		if end < 0 {
			return nil, fmt.Errorf("missing ]")
		}
		out = append(out, s[1:end])
		s = strings.TrimSpace(s[end+1:])
	}
	if s != "" {
		return nil, fmt.Errorf("unexpected text %q", clipStr(s, 20))
	}
	return out, nil
}

func commandAction(name, rest string) (Action, error) {
	var a Action
	groups := func(min, max int) ([]string, error) {
		g, err := brackets(rest, max)
		if err != nil {
			return nil, fmt.Errorf("cannot parse %s command: %w", name, err)
		}
		if len(g) < min {
			return nil, fmt.Errorf("%s needs %d bracketed argument(s), like %s", name, min, commandExample(name))
		}
		return g, nil
	}
	var g []string
	var err error
	switch name {
	case "click", "hover", "clear":
		a.Type = map[string]ActionType{"click": Click, "hover": Hover, "clear": Clear}[name]
		if g, err = groups(1, 1); err == nil {
			a.Target = strings.TrimSpace(g[0])
		}
	case "type":
		a.Type = Type
		a.Enter = true // WebArena presses Enter after typing unless told [0]
		if g, err = groups(2, 2); err != nil {
			return a, err
		}
		a.Target = strings.TrimSpace(g[0])
		a.Text = g[1]
		// A trailing "] [0" or "] [1" inside the last group is the flag.
		if i := strings.LastIndex(a.Text, "] ["); i >= 0 && (a.Text[i+3:] == "0" || a.Text[i+3:] == "1") {
			a.Enter = a.Text[i+3:] == "1"
			a.Text = a.Text[:i]
		}
	case "select":
		a.Type = Select
		if g, err = groups(2, 2); err == nil {
			a.Target = strings.TrimSpace(g[0])
			a.Options = []string{g[1]}
		}
	case "press":
		a.Type = Press
		if g, err = groups(1, 2); err == nil {
			if len(g) == 2 {
				a.Target, a.Key = strings.TrimSpace(g[0]), strings.TrimSpace(g[1])
			} else {
				a.Key = strings.TrimSpace(g[0])
			}
		}
	case "goto":
		a.Type = Goto
		if g, err = groups(1, 1); err == nil {
			a.URL = strings.TrimSpace(g[0])
		}
	case "new_tab":
		a.Type = NewTab
		if g, err = groups(0, 1); err == nil && len(g) == 1 {
			a.URL = strings.TrimSpace(g[0])
		}
	case "tab_focus", "switch_tab", "close_tab", "tab_close":
		if name == "tab_focus" || name == "switch_tab" {
			a.Type = SwitchTab
			g, err = groups(1, 1)
		} else {
			a.Type = CloseTab
			g, err = groups(0, 1)
		}
		if err == nil && len(g) == 1 {
			n, perr := strconv.Atoi(strings.TrimSpace(g[0]))
			if perr != nil {
				return a, fmt.Errorf("%s: the tab index must be an integer, got %q", name, g[0])
			}
			a.Tab = &n
		}
	case "go_back", "go_forward", "refresh", "noop":
		a.Type = map[string]ActionType{"go_back": Back, "go_forward": Forward, "refresh": Refresh, "noop": Noop}[name]
		_, err = groups(0, 0)
	case "stop":
		a.Type = Terminate
		if g, err = groups(0, 1); err == nil && len(g) == 1 {
			a.Answer = strings.TrimSpace(g[0])
			if a.Answer == "N/A" {
				a.Infeasible = true
			}
		}
	case "scroll":
		return a, errNoScroll
	default:
		return a, fmt.Errorf("unknown action %q; use a call like click(\"id\") or a WebArena command like click [id]", name)
	}
	if err != nil {
		return a, err
	}
	return a, a.Validate()
}

func commandExample(name string) string {
	switch name {
	case "type":
		return "type [id] [text] [1]"
	case "select":
		return "select [id] [option]"
	case "goto":
		return "goto [http://...]"
	case "tab_focus":
		return "tab_focus [1]"
	}
	return name + " [id]"
}

package envcore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/webserv-rl/webserv/envcore/budget"
)

// ActionType names an action (WebServ paper, 3.2.2). Element actions need
// no scrolling: targets are scrolled into view before every element
// action. The coordinate actions (coords.go) act on viewport points.
type ActionType string

// The actions.
const (
	Click     ActionType = "click"         // click Target
	Hover     ActionType = "hover"         // move the mouse over Target
	Press     ActionType = "press"         // press Key, on Target if set
	Type      ActionType = "type"          // replace Target's text with Text; Enter presses Enter after
	Clear     ActionType = "clear"         // empty Target
	Select    ActionType = "select"        // select Options of the <select> Target
	Goto      ActionType = "goto"          // open URL in the active tab
	Back      ActionType = "back"          // history back
	Forward   ActionType = "forward"       // history forward
	Refresh   ActionType = "refresh"       // reload the page
	NewTab    ActionType = "new_tab"       // open a tab (at URL if set) and switch to it
	SwitchTab ActionType = "switch_tab"    // make tab Tab active
	CloseTab  ActionType = "close_tab"     // close tab Tab (the active one if nil)
	Terminate ActionType = "terminate"     // end the episode with Answer
	Noop      ActionType = "noop"          // do nothing for WaitMs, then observe
	SendMsg   ActionType = "send_msg"      // send Text to the user (chat)
	Expand    ActionType = "expand"        // show the fold Target first in the next observations (expand.go)
	DblClick  ActionType = "dblclick"      // double-click Target
	Focus     ActionType = "focus"         // focus Target
	DragDrop  ActionType = "drag_and_drop" // press on Target, move to To, release there
	Upload    ActionType = "upload_file"   // click Target and give the file chooser it opens Files
	KeyDown   ActionType = "keyboard_down" // press and hold Key
	KeyUp     ActionType = "keyboard_up"   // release Key
)

// Action is one agent action in structured form. Targets are semantic ids
// from the last observation. The zero values of unused fields are ignored.
type Action struct {
	Type    ActionType `json:"type"`
	Target  string     `json:"target,omitempty"`
	Text    string     `json:"text,omitempty"`
	Key     string     `json:"key,omitempty"`
	URL     string     `json:"url,omitempty"`
	Options []string   `json:"options,omitempty"`
	Enter   bool       `json:"enter,omitempty"`
	Tab     *int       `json:"tab,omitempty"`
	Answer  string     `json:"answer,omitempty"`
	// Infeasible marks a terminate that reports the task cannot be done
	// (BrowserGym's report_infeasible, WebArena's "stop [N/A]").
	Infeasible bool `json:"infeasible,omitempty"`
	WaitMs     int  `json:"wait_ms,omitempty"`

	// X and Y are the point of a coordinate action (a drag's start), ToX
	// and ToY a drag's end, in CSS pixels of the viewport; DeltaX and
	// DeltaY a scroll's wheel deltas in CSS pixels. Button is a click's
	// button: "left" (the default), "middle" or "right".
	X      float64 `json:"x,omitempty"`
	Y      float64 `json:"y,omitempty"`
	ToX    float64 `json:"to_x,omitempty"`
	ToY    float64 `json:"to_y,omitempty"`
	DeltaX float64 `json:"delta_x,omitempty"`
	DeltaY float64 `json:"delta_y,omitempty"`
	Button string  `json:"button,omitempty"`
	// Modifiers are the keys held during a click or double-click: "Alt",
	// "Control", "ControlOrMeta", "Meta", "Shift" (BrowserGym's modifiers=).
	Modifiers []string `json:"modifiers,omitempty"`
	// To is where a drag_and_drop drops: the semantic id of an element.
	To string `json:"to,omitempty"`
	// Files are an upload's files: paths inside the environment's upload
	// directory (Config.UploadDir), which is their root; an empty list
	// clears the chosen files.
	Files []string `json:"files,omitempty"`
}

// MaxNoopWait bounds a noop's wait.
const MaxNoopWait = 10000

// actionSpec is one semantic action of the grammar: what it needs, how it
// prints in call form and how it runs. actionSpecs is the one table that
// validation, printing, execution and previews read; the coordinate
// actions have theirs (coords.go), and the parsers (parse.go) map the
// names agents write, aliases included, onto these types.
type actionSpec struct {
	typ ActionType
	// target says what Target must name ("" when the action takes none
	// or, as press, may take one).
	target string
	// check validates the other fields (nil: nothing to check).
	check func(a Action) error
	// format prints a in the call form ParseAction reads back.
	format func(a Action) string
	// run runs a in tab t and returns how many attempts it made.
	run func(e *Env, ctx context.Context, t *tab, a Action) (int, error)
	// evaluates reports whether a's first command to the page is an
	// evaluation or a new document, so that settle.begin may be pipelined
	// ahead of it (see tab.beginAction).
	evaluates func(a Action) bool
	// preview: Preview outlines the target, when a has one.
	preview bool
	// inert: the action does nothing in the page, so no action begins
	// there and the page's work is not attributed to it.
	inert bool
}

func always(Action) bool       { return true }
func never(Action) bool        { return false }
func withTarget(a Action) bool { return a.Target != "" }
func call(name string, args ...string) string {
	return name + "(" + strings.Join(args, ", ") + ")"
}

var actionSpecs = []actionSpec{
	{typ: Click, target: "the semantic id of an element", preview: true, evaluates: always, run: (*Env).runClick,
		check: checkPointer, format: func(a Action) string { return call("click", pointerArgs(a)...) }},
	{typ: DblClick, target: "the semantic id of an element", preview: true, evaluates: always, run: (*Env).runDblClick,
		check: checkPointer, format: func(a Action) string { return call("dblclick", pointerArgs(a)...) }},
	{typ: Focus, target: "the semantic id of an element", preview: true, evaluates: always, run: (*Env).runFocus,
		format: func(a Action) string { return call("focus", quote(a.Target)) }},
	{typ: DragDrop, target: "the semantic id of the element to drag", preview: true, evaluates: always, run: (*Env).runDragDrop,
		check: func(a Action) error {
			if a.To == "" {
				return need(a, "to", "the semantic id of the element to drop on")
			}
			return nil
		},
		format: func(a Action) string { return call("drag_and_drop", quote(a.Target), quote(a.To)) }},
	{typ: Upload, target: "the semantic id of the element that opens a file chooser (a file input, or what clicks one)", preview: true, evaluates: always, run: (*Env).runUpload,
		check: checkFiles, format: func(a Action) string { return call("upload_file", quote(a.Target), filesLiteral(a.Files)) }},
	{typ: KeyDown, evaluates: never, run: (*Env).runKeyDown, check: checkSingleKey,
		format: func(a Action) string { return call("keyboard_down", quote(a.Key)) }},
	{typ: KeyUp, evaluates: never, run: (*Env).runKeyUp, check: checkSingleKey,
		format: func(a Action) string { return call("keyboard_up", quote(a.Key)) }},
	{typ: Hover, target: "the semantic id of an element", preview: true, evaluates: always, run: (*Env).runHover,
		format: func(a Action) string { return call("hover", quote(a.Target)) }},
	{typ: Press, preview: true, evaluates: withTarget, run: (*Env).runPress,
		check: func(a Action) error {
			if a.Key == "" {
				return need(a, "a key", `for example "Enter", "Escape", "Control+a"`)
			}
			_, err := parseKeyCombo(a.Key)
			return err
		},
		format: func(a Action) string {
			if a.Target != "" {
				return call("press", quote(a.Target), quote(a.Key))
			}
			return call("keyboard_press", quote(a.Key))
		}},
	{typ: Type, target: "the semantic id of a text field", preview: true, evaluates: always, run: (*Env).typeInto,
		format: func(a Action) string {
			args := []string{quote(a.Target), quote(a.Text)}
			if a.Enter {
				args = append(args, "enter=True")
			}
			return call("fill", args...)
		}},
	{typ: Clear, target: "the semantic id of an element", preview: true, evaluates: always, run: (*Env).typeInto,
		format: func(a Action) string { return call("clear", quote(a.Target)) }},
	{typ: Select, target: "the semantic id of a <select>", preview: true, evaluates: always, run: (*Env).runSelect,
		check: func(a Action) error {
			if len(a.Options) == 0 {
				return need(a, "options", "the text, value or id of the option to select")
			}
			return nil
		},
		format: func(a Action) string {
			if len(a.Options) == 1 {
				return call("select_option", quote(a.Target), quote(a.Options[0]))
			}
			opts := make([]string, len(a.Options))
			for i, o := range a.Options {
				opts[i] = quote(o)
			}
			return call("select_option", quote(a.Target), "["+strings.Join(opts, ", ")+"]")
		}},
	{typ: Goto, evaluates: always, run: (*Env).runGoto,
		check: func(a Action) error {
			if a.URL == "" {
				return need(a, "a URL", "http or https")
			}
			return nil
		},
		format: func(a Action) string { return call("goto", quote(a.URL)) }},
	{typ: Back, evaluates: never, run: (*Env).runBack,
		format: func(Action) string { return call("go_back") }},
	{typ: Forward, evaluates: never, run: (*Env).runForward,
		format: func(Action) string { return call("go_forward") }},
	{typ: Refresh, evaluates: never, run: (*Env).runRefresh,
		format: func(Action) string { return call("refresh") }},
	{typ: NewTab, evaluates: always, run: (*Env).runNewTab,
		format: func(a Action) string {
			if a.URL != "" {
				return call("new_tab", quote(a.URL))
			}
			return call("new_tab")
		}},
	{typ: SwitchTab, evaluates: never, run: (*Env).runSwitchTab,
		check: func(a Action) error {
			if a.Tab == nil {
				return need(a, "a tab index", "0 is the first tab")
			}
			return nil
		},
		format: func(a Action) string {
			if a.Tab == nil {
				return call("tab_focus")
			}
			return call("tab_focus", strconv.Itoa(*a.Tab))
		}},
	{typ: CloseTab, evaluates: never, run: (*Env).runCloseTab,
		format: func(a Action) string {
			if a.Tab != nil {
				return call("tab_close", strconv.Itoa(*a.Tab))
			}
			return call("tab_close")
		}},
	{typ: Terminate, inert: true, evaluates: never, run: runNothing,
		format: func(a Action) string {
			if a.Infeasible {
				return call("report_infeasible", quote(a.Answer))
			}
			return call("stop", quote(a.Answer))
		}},
	{typ: Noop, evaluates: always, run: (*Env).runNoop,
		check: func(a Action) error {
			if a.WaitMs < 0 || a.WaitMs > MaxNoopWait {
				return fmt.Errorf("noop wait must be between 0 and %d ms, got %d", MaxNoopWait, a.WaitMs)
			}
			return nil
		},
		format: func(a Action) string {
			if a.WaitMs > 0 {
				return call("noop", strconv.Itoa(a.WaitMs))
			}
			return call("noop")
		}},
	{typ: SendMsg, inert: true, evaluates: never, run: runNothing,
		format: func(a Action) string { return call("send_msg_to_user", quote(a.Text)) }},
	{typ: Expand, target: "the id of a folded part, fold-…", inert: true, evaluates: never, run: (*Env).runExpand,
		check: func(a Action) error {
			if !budget.IsFoldID(a.Target) {
				return fmt.Errorf(`expand takes the id of a folded part as its fold line shows it, like expand("fold-3935a2be-2"), got %q`, a.Target)
			}
			return nil
		},
		format: func(a Action) string { return call("expand", quote(a.Target)) }},
}

// checkPointer checks a click's button and modifiers.
func checkPointer(a Action) error {
	if a.Button != "" {
		if _, ok := mouseButtons[a.Button]; !ok {
			return fmt.Errorf("%s: button must be \"left\", \"middle\" or \"right\", got %q", a.Type, a.Button)
		}
	}
	_, err := modifierMask(a.Type, a.Modifiers)
	return err
}

// pointerArgs are a click's arguments in call form: the target, then
// button= and modifiers= when they are not the defaults.
func pointerArgs(a Action) []string {
	args := []string{quote(a.Target)}
	if a.Button != "" && a.Button != "left" {
		args = append(args, "button="+quote(a.Button))
	}
	if len(a.Modifiers) > 0 {
		args = append(args, "modifiers="+listLiteral(a.Modifiers))
	}
	return args
}

// listLiteral writes strings as a list literal.
func listLiteral(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// filesLiteral writes an upload's files: one as a string, else a list.
func filesLiteral(files []string) string {
	if len(files) == 1 {
		return quote(files[0])
	}
	return listLiteral(files)
}

// checkSingleKey checks the key of keyboard_down and keyboard_up: one
// key, not a combination.
func checkSingleKey(a Action) error {
	if a.Key == "" {
		return need(a, "a key", `for example "Shift" or "a"`)
	}
	kc, err := parseKeyCombo(a.Key)
	if err != nil {
		return err
	}
	if len(kc.mods) > 0 {
		return fmt.Errorf("%s takes one key, got the combination %q; hold its keys one by one (keyboard_down(\"Shift\"), then keyboard_down(\"a\")) or press it with keyboard_press", a.Type, a.Key)
	}
	return nil
}

// specOf returns the table entry of type typ.
func specOf(typ ActionType) (actionSpec, bool) {
	for _, s := range actionSpecs {
		if s.typ == typ {
			return s, true
		}
	}
	return actionSpec{}, false
}

func need(a Action, field, what string) error {
	return fmt.Errorf("%s needs %s (%s)", a.Type, field, what)
}

// Validate checks that the action has the fields its type needs and that
// none is over its limit (ActionLimits).
func (a Action) Validate() error {
	if c, ok := coordActionOf(a.Type); ok {
		if err := checkLimits(a); err != nil {
			return err
		}
		return c.validate(a)
	}
	if err := checkLimits(a); err != nil {
		return err
	}
	if err := refuseDerivedID(a); err != nil {
		return err
	}
	s, ok := specOf(a.Type)
	switch {
	case a.Type == "":
		return fmt.Errorf("action has no type; use one of %s", actionNames())
	case !ok:
		return fmt.Errorf("unknown action type %q; use one of %s", a.Type, actionNames())
	case s.target != "" && a.Target == "":
		return need(a, "a target", s.target)
	case s.check != nil:
		return s.check(a)
	}
	return nil
}

func actionNames() string {
	var names []string
	for _, s := range actionSpecs {
		names = append(names, string(s.typ))
	}
	for _, c := range coordActions {
		names = append(names, string(c.typ))
	}
	return strings.Join(names, ", ")
}

// String returns the action in the BrowserGym-style call form that
// ParseAction reads back: click("buy"), fill("q", "shoes", enter=True), ...
func (a Action) String() string {
	if c, ok := coordActionOf(a.Type); ok {
		return c.format(a)
	}
	if s, ok := specOf(a.Type); ok {
		return s.format(a)
	}
	return string(a.Type) + "(?)"
}

// quote writes s as a double-quoted literal that both Python and
// ParseAction read back exactly.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

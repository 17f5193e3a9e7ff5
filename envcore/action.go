package envcore

import (
	"fmt"
	"strconv"
	"strings"
)

// ActionType names an action (WebServ paper, 3.2.2). Element actions need
// no scrolling: targets are scrolled into view before every element
// action. The coordinate actions (coords.go) act on viewport points.
type ActionType string

// The actions.
const (
	Click     ActionType = "click"      // click Target
	Hover     ActionType = "hover"      // move the mouse over Target
	Press     ActionType = "press"      // press Key, on Target if set
	Type      ActionType = "type"       // replace Target's text with Text; Enter presses Enter after
	Clear     ActionType = "clear"      // empty Target
	Select    ActionType = "select"     // select Options of the <select> Target
	Goto      ActionType = "goto"       // open URL in the active tab
	Back      ActionType = "back"       // history back
	Forward   ActionType = "forward"    // history forward
	Refresh   ActionType = "refresh"    // reload the page
	NewTab    ActionType = "new_tab"    // open a tab (at URL if set) and switch to it
	SwitchTab ActionType = "switch_tab" // make tab Tab active
	CloseTab  ActionType = "close_tab"  // close tab Tab (the active one if nil)
	Terminate ActionType = "terminate"  // end the episode with Answer
	Noop      ActionType = "noop"       // do nothing for WaitMs, then observe
	SendMsg   ActionType = "send_msg"   // send Text to the user (chat)
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
}

// MaxNoopWait bounds a noop's wait.
const MaxNoopWait = 10000

// Validate checks that the action has the fields its type needs.
func (a Action) Validate() error {
	need := func(field, what string) error {
		return fmt.Errorf("%s needs %s (%s)", a.Type, field, what)
	}
	if c, ok := coordActionOf(a.Type); ok {
		return c.validate(a)
	}
	switch a.Type {
	case Click, Hover, Clear:
		if a.Target == "" {
			return need("a target", "the semantic id of an element")
		}
	case Type:
		if a.Target == "" {
			return need("a target", "the semantic id of a text field")
		}
	case Select:
		if a.Target == "" {
			return need("a target", "the semantic id of a <select>")
		}
		if len(a.Options) == 0 {
			return need("options", "the text, value or id of the option to select")
		}
	case Press:
		if a.Key == "" {
			return need("a key", `for example "Enter", "Escape", "Control+a"`)
		}
		if _, err := parseKeyCombo(a.Key); err != nil {
			return err
		}
	case Goto:
		if a.URL == "" {
			return need("a URL", "http or https")
		}
	case SwitchTab:
		if a.Tab == nil {
			return need("a tab index", "0 is the first tab")
		}
	case Noop:
		if a.WaitMs < 0 || a.WaitMs > MaxNoopWait {
			return fmt.Errorf("noop wait must be between 0 and %d ms, got %d", MaxNoopWait, a.WaitMs)
		}
	case Back, Forward, Refresh, NewTab, CloseTab, Terminate, SendMsg:
	case "":
		return fmt.Errorf("action has no type; use one of %s", actionNames())
	default:
		return fmt.Errorf("unknown action type %q; use one of %s", a.Type, actionNames())
	}
	return nil
}

func actionNames() string {
	names := "click, hover, press, type, clear, select, goto, back, forward, refresh, new_tab, switch_tab, close_tab, terminate, noop, send_msg"
	for _, c := range coordActions {
		names += ", " + string(c.typ)
	}
	return names
}

// String returns the action in the BrowserGym-style call form that
// ParseAction reads back: click("buy"), fill("q", "shoes", enter=True), ...
func (a Action) String() string {
	q := quote
	if c, ok := coordActionOf(a.Type); ok {
		return c.format(a)
	}
	switch a.Type {
	case Click:
		return "click(" + q(a.Target) + ")"
	case Hover:
		return "hover(" + q(a.Target) + ")"
	case Press:
		if a.Target != "" {
			return "press(" + q(a.Target) + ", " + q(a.Key) + ")"
		}
		return "keyboard_press(" + q(a.Key) + ")"
	case Type:
		s := "fill(" + q(a.Target) + ", " + q(a.Text)
		if a.Enter {
			s += ", enter=True"
		}
		return s + ")"
	case Clear:
		return "clear(" + q(a.Target) + ")"
	case Select:
		if len(a.Options) == 1 {
			return "select_option(" + q(a.Target) + ", " + q(a.Options[0]) + ")"
		}
		parts := make([]string, len(a.Options))
		for i, o := range a.Options {
			parts[i] = q(o)
		}
		return "select_option(" + q(a.Target) + ", [" + strings.Join(parts, ", ") + "])"
	case Goto:
		return "goto(" + q(a.URL) + ")"
	case Back:
		return "go_back()"
	case Forward:
		return "go_forward()"
	case Refresh:
		return "refresh()"
	case NewTab:
		if a.URL != "" {
			return "new_tab(" + q(a.URL) + ")"
		}
		return "new_tab()"
	case SwitchTab:
		if a.Tab == nil {
			return "tab_focus()"
		}
		return "tab_focus(" + strconv.Itoa(*a.Tab) + ")"
	case CloseTab:
		if a.Tab != nil {
			return "tab_close(" + strconv.Itoa(*a.Tab) + ")"
		}
		return "tab_close()"
	case Terminate:
		if a.Infeasible {
			return "report_infeasible(" + q(a.Answer) + ")"
		}
		return "stop(" + q(a.Answer) + ")"
	case Noop:
		if a.WaitMs > 0 {
			return "noop(" + strconv.Itoa(a.WaitMs) + ")"
		}
		return "noop()"
	case SendMsg:
		return "send_msg_to_user(" + q(a.Text) + ")"
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

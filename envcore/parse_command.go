package envcore

import (
	"fmt"
	"strconv"
	"strings"
)

// The command grammar: WebArena's actions as a name and bracketed groups,
// click [12], type [5] [shoes] [1], stop [answer]; commandForms says which
// names mean which semantic action and reads their groups.

var errNoScroll = fmt.Errorf(`the WebArena scroll command is not supported: element actions scroll their target into view; to scroll the page use scroll(delta_x, delta_y), for example scroll(0, 600)`)

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

// commandForm is a semantic action in WebArena's command grammar: its
// names, how many bracketed groups it takes, an example for errors, and
// how the groups are read.
type commandForm struct {
	names    []string
	min, max int    // bracketed groups
	example  string // "" for "name [id]"
	parse    func(name string, g []string, a *Action) error
}

// targetGroup reads a command whose one group is an element id.
func targetGroup(t ActionType) func(string, []string, *Action) error {
	return func(_ string, g []string, a *Action) error {
		a.Type, a.Target = t, strings.TrimSpace(g[0])
		return nil
	}
}

// tabGroup reads a command whose optional group is a tab index.
func tabGroup(t ActionType) func(string, []string, *Action) error {
	return func(name string, g []string, a *Action) error {
		a.Type = t
		if len(g) == 0 {
			return nil
		}
		n, err := strconv.Atoi(strings.TrimSpace(g[0]))
		if err != nil {
			return fmt.Errorf("%s: the tab index must be an integer, got %q", name, g[0])
		}
		a.Tab = &n
		return nil
	}
}

// bare reads a command without groups.
func bare(t ActionType) func(string, []string, *Action) error {
	return func(_ string, _ []string, a *Action) error {
		a.Type = t
		return nil
	}
}

var commandForms = []commandForm{
	{[]string{"click"}, 1, 1, "", targetGroup(Click)},
	{[]string{"hover"}, 1, 1, "", targetGroup(Hover)},
	{[]string{"clear"}, 1, 1, "", targetGroup(Clear)},
	{[]string{"type"}, 2, 2, "type [id] [text] [1]", func(_ string, g []string, a *Action) error {
		a.Type, a.Target, a.Text = Type, strings.TrimSpace(g[0]), g[1]
		a.Enter = true // WebArena presses Enter after typing unless told [0]
		// A trailing "] [0" or "] [1" inside the last group is the flag.
		if i := strings.LastIndex(a.Text, "] ["); i >= 0 && (a.Text[i+3:] == "0" || a.Text[i+3:] == "1") {
			a.Enter = a.Text[i+3:] == "1"
			a.Text = a.Text[:i]
		}
		return nil
	}},
	{[]string{"select"}, 2, 2, "select [id] [option]", func(_ string, g []string, a *Action) error {
		a.Type, a.Target, a.Options = Select, strings.TrimSpace(g[0]), []string{g[1]}
		return nil
	}},
	{[]string{"press"}, 1, 2, "", func(_ string, g []string, a *Action) error {
		a.Type = Press
		if len(g) == 2 {
			a.Target, a.Key = strings.TrimSpace(g[0]), strings.TrimSpace(g[1])
		} else {
			a.Key = strings.TrimSpace(g[0])
		}
		return nil
	}},
	{[]string{"goto"}, 1, 1, "goto [http://...]", func(_ string, g []string, a *Action) error {
		a.Type, a.URL = Goto, strings.TrimSpace(g[0])
		return nil
	}},
	{[]string{"new_tab"}, 0, 1, "", func(_ string, g []string, a *Action) error {
		a.Type = NewTab
		if len(g) == 1 {
			a.URL = strings.TrimSpace(g[0])
		}
		return nil
	}},
	{[]string{"tab_focus", "switch_tab"}, 1, 1, "tab_focus [1]", tabGroup(SwitchTab)},
	{[]string{"close_tab", "tab_close"}, 0, 1, "", tabGroup(CloseTab)},
	{[]string{"go_back"}, 0, 0, "", bare(Back)},
	{[]string{"go_forward"}, 0, 0, "", bare(Forward)},
	{[]string{"refresh"}, 0, 0, "", bare(Refresh)},
	{[]string{"noop"}, 0, 0, "", bare(Noop)},
	{[]string{"expand"}, 1, 1, "expand [fold-3935a2be-2]", targetGroup(Expand)},
	{[]string{"stop"}, 0, 1, "", func(_ string, g []string, a *Action) error {
		a.Type = Terminate
		if len(g) == 1 {
			a.Answer = strings.TrimSpace(g[0])
			a.Infeasible = a.Answer == "N/A"
		}
		return nil
	}},
}

// commandFormOf finds a command's form by any of its names.
var commandFormOf = func() map[string]*commandForm {
	m := map[string]*commandForm{}
	for i := range commandForms {
		for _, n := range commandForms[i].names {
			m[n] = &commandForms[i]
		}
	}
	return m
}()

func commandAction(name, rest string) (Action, error) {
	var a Action
	if name == "scroll" {
		return a, errNoScroll
	}
	f, ok := commandFormOf[name]
	if !ok {
		return a, fmt.Errorf("unknown action %q; use a call like click(\"id\") or a WebArena command like click [id]", name)
	}
	g, err := brackets(rest, f.max)
	if err != nil {
		return a, fmt.Errorf("cannot parse %s command: %w", name, err)
	}
	if len(g) < f.min {
		example := f.example
		if example == "" {
			example = name + " [id]"
		}
		return a, fmt.Errorf("%s needs %d bracketed argument(s), like %s", name, f.min, example)
	}
	if err := f.parse(name, g, &a); err != nil {
		return a, err
	}
	return a, a.Validate()
}

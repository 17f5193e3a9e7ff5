package envcore

import (
	"fmt"
	"unicode/utf8"
)

// Bounded actions. A learning policy emits degenerate output (a fill of
// megabytes, an id that repeats for thousands of tokens); an action larger
// than any real agent sends is refused before anything reaches the browser,
// as a bad_action the episode survives. actionLimits is the one table of
// the limits; docs/envcore.md ("Limits") prints it.

// MaxActionBytes bounds an action string as a whole (StepText): the parser
// refuses a longer string before it reads it.
const MaxActionBytes = 256 << 10

// MaxEchoChars bounds what an observation echoes of the agent's input:
// LastAction and LastActionError are cut to this many characters (and the
// message says how long the whole was).
const MaxEchoChars = 2048

// quoteChars is how much of an oversized input an error quotes.
const quoteChars = 40

// fieldLimit is the most an Action field may hold, in characters (runes),
// and for a list, in entries.
type fieldLimit struct {
	field string // the field as errors name it
	max   int
	// strings returns the field's strings ("" when unused).
	strings func(a Action) []string
	// items bounds the number of entries of a list field (0: not a list).
	items int
	hint  string // what to do instead
}

var actionLimits = []fieldLimit{
	{field: "target", max: 512, strings: func(a Action) []string { return []string{a.Target} },
		hint: "targets are the semantic ids of the last observation"},
	{field: "text", max: 32768, strings: func(a Action) []string { return []string{a.Text} },
		hint: "send shorter text"},
	{field: "key", max: 64, strings: func(a Action) []string { return []string{a.Key} },
		hint: `keys are names like "Enter" or "Control+a"`},
	{field: "url", max: 8192, strings: func(a Action) []string { return []string{a.URL} },
		hint: "open a shorter URL"},
	{field: "answer", max: 32768, strings: func(a Action) []string { return []string{a.Answer} },
		hint: "give a shorter answer"},
	{field: "option", max: 1024, items: 256, strings: func(a Action) []string { return a.Options },
		hint: "options are named by their id, visible text or value"},
	{field: "to", max: 512, strings: func(a Action) []string { return []string{a.To} },
		hint: "targets are the semantic ids of the last observation"},
	{field: "modifier", max: 16, items: 8, strings: func(a Action) []string { return a.Modifiers },
		hint: "modifiers are Alt, Control, ControlOrMeta, Meta and Shift"},
	{field: "file", max: 1024, items: 64, strings: func(a Action) []string { return a.Files },
		hint: "files are paths inside the upload directory"},
	{field: "button", max: 16, strings: func(a Action) []string { return []string{a.Button} },
		hint: `buttons are "left", "middle" or "right"`},
}

// ActionLimit is one bound on an action's fields: the field (as an
// Action's JSON names it), the most characters one value may have and, for
// a list, the most entries.
type ActionLimit struct {
	Field    string `json:"field"`
	MaxChars int    `json:"max_chars"`
	MaxItems int    `json:"max_items,omitempty"`
}

// ActionLimits returns the bounds every action is checked against (the
// whole action string is bounded by MaxActionBytes).
func ActionLimits() []ActionLimit {
	out := make([]ActionLimit, len(actionLimits))
	for i, l := range actionLimits {
		out[i] = ActionLimit{Field: l.field, MaxChars: l.max, MaxItems: l.items}
	}
	return out
}

// checkLimits refuses an action with a field over its limit. It runs
// before any other check, so nothing later (printing, suggestions, the
// page) sees an oversized value.
func checkLimits(a Action) error {
	name := a.Type
	if len(name) > 64 {
		return fmt.Errorf("action type is %d bytes long; no action has a name longer than 20", len(name))
	}
	for _, l := range actionLimits {
		vals := l.strings(a)
		if l.items > 0 && len(vals) > l.items {
			return fmt.Errorf("%s has %d %ss; the limit is %d", name, len(vals), l.field, l.items)
		}
		for _, v := range vals {
			// len is an upper bound of the count: most values skip counting.
			if len(v) <= l.max {
				continue
			}
			if n := utf8.RuneCountInString(v); n > l.max {
				return fmt.Errorf("%s %s is %d characters; the limit is %d characters: %s (it began %s)",
					name, l.field, n, l.max, l.hint, quote(clipRunes(v, quoteChars)))
			}
		}
	}
	return nil
}

// checkActionString refuses an action string over MaxActionBytes.
func checkActionString(s string) error {
	if len(s) > MaxActionBytes {
		return fmt.Errorf("action is %d bytes; the limit is %d bytes: send one short action (it began %s)",
			len(s), MaxActionBytes, quote(clipRunes(s, quoteChars)))
	}
	return nil
}

// clipRunes returns s cut to at most n characters, with "..." when cut.
func clipRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i, count := 0, 0
	for i < len(s) && count < n {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		count++
	}
	if i >= len(s) {
		return s
	}
	return s[:i] + "..."
}

// clipEcho bounds what an observation echoes of the agent's input to
// MaxEchoChars, saying how long the whole was.
func clipEcho(s string) string {
	if len(s) <= MaxEchoChars {
		return s
	}
	n := utf8.RuneCountInString(s)
	if n <= MaxEchoChars {
		return s
	}
	return clipRunes(s, MaxEchoChars) + fmt.Sprintf(" [cut: %d characters in all]", n)
}

// ClipEcho is s cut to MaxEchoChars, as an observation echoes the agent's
// input (last_action, last_action_error), saying how long the whole was.
func ClipEcho(s string) string { return clipEcho(s) }

// EchoOf is how an observation's last_action shows action a before it is
// cut to MaxEchoChars: its string form, or only its type when a field is
// over its limit (an oversized action is not printed whole). The dream
// environment echoes the actions it refuses the same way.
func EchoOf(a Action) string {
	if checkLimits(a) != nil {
		return string(a.Type) + "(...)"
	}
	return a.String()
}

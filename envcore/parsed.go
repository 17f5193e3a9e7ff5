package envcore

import "sync/atomic"

// Parsed is a step's action as the edge read it, once: the action, and for
// one an agent wrote as a string, that string and why it does not parse.
// Everything after the edge (the server's approval, preview, recording and
// observers, and the step itself) reads this value instead of the string.
type Parsed struct {
	// Action is the action (the zero Action when Err is set): the first
	// of several when Text had several lines (ParseActions).
	Action Action
	// Then are the actions of Text's later lines, run after Action in
	// order in the same step (BrowserGym's multi-action mode).
	Then []Action
	// Text is the string the agent wrote ("" for a structured action).
	Text string
	// Err is why Text does not parse. It is the agent's error, not the
	// request's: the step observes the unchanged page and reports Err in
	// LastActionError with action_error_code bad_action.
	Err error
	// valid: Action passed Validate when it was read (the parsers and
	// ActionDoc.Build check what they make), so the step does not check
	// it again.
	valid bool
}

// ParseText reads the action string s (ParseAction): the action, or the
// parse error with s.
func ParseText(s string) Parsed {
	acts, err := ParseActions(s)
	if err != nil {
		return Parsed{Text: s, Err: err}
	}
	return Parsed{Action: acts[0], Then: acts[1:], Text: s, valid: true}
}

// Actions are the step's actions in the order they run: Action, then
// Then.
func (p Parsed) Actions() []Action {
	return append([]Action{p.Action}, p.Then...)
}

// Terminates reports whether the step ends the episode (its last action is
// stop or report_infeasible), read without running it.
func (p Parsed) Terminates() bool {
	acts := p.Actions()
	return p.OK() && acts[len(acts)-1].Type == Terminate
}

// Structured is a structured action, as sent; the step validates it.
func Structured(a Action) Parsed { return Parsed{Action: a} }

// OK reports whether the action parsed.
func (p Parsed) OK() bool { return p.Err == nil }

// Echo is the action as an observation and a recording show it: the
// string the agent wrote, else the action's call form.
func (p Parsed) Echo() string {
	if p.Text != "" || p.Err != nil {
		return p.Text
	}
	return p.Action.String()
}

// parseHook, when set, is told of every string ParseAction reads.
var parseHook atomic.Pointer[func(string)]

// OnParse registers f to be told of every action string ParseAction
// reads, until the returned function is called. It is for tests that
// check a step reads its action once; f must be safe for concurrent use.
func OnParse(f func(s string)) (remove func()) {
	parseHook.Store(&f)
	return func() { parseHook.CompareAndSwap(&f, nil) }
}

func parsed(s string) {
	if f := parseHook.Load(); f != nil {
		(*f)(s)
	}
}

package envcore

import (
	"fmt"
	"strings"
)

// Several actions in one step, as BrowserGym's multi-action mode sends
// them: one call a line (a ";" or a space may also separate calls on one
// line; "#" starts a comment to the end of its line). The step runs them in
// order, each at once after the one before, as BrowserGym does ("without
// feedback from the page"; an element action still finds its element
// re-rendered by the one before). The first that fails stops the step: the
// lines after it do not run, and LastActionError names the failing line,
// its call and why. The step then settles and observes once, as for one
// action. stop and report_infeasible end the episode, so only the last
// line may be one.

// MaxStepActions bounds the actions of one step string.
const MaxStepActions = 10

// ParseActions reads a step string of one action (ParseAction) or of
// several calls, one a line. An error in a later line names the line.
func ParseActions(s string) ([]Action, error) {
	parsed(s)
	if err := checkActionString(s); err != nil {
		return nil, err
	}
	body := stripFence(strings.TrimSpace(s))
	calls, bad, err := splitCalls(body)
	if err != nil && len(calls) > 0 && bad > calls[0].line {
		return nil, fmt.Errorf("line %d: %w", bad, err)
	}
	if err != nil || len(calls) <= 1 {
		a, err := parseOne(s)
		if err != nil {
			return nil, err
		}
		return []Action{a}, nil
	}
	if len(calls) > MaxStepActions {
		return nil, fmt.Errorf("%d actions in one step; the limit is %d: send the rest in the next steps", len(calls), MaxStepActions)
	}
	acts := make([]Action, 0, len(calls))
	for i, c := range calls {
		a, err := parseOne(c.text)
		if err != nil {
			return nil, fmt.Errorf("line %d, %s: %w", c.line, clipStr(c.text, 80), err)
		}
		if a.Type == Terminate && i < len(calls)-1 {
			return nil, fmt.Errorf("line %d, %s: it ends the episode, so it must be the last action of the step", c.line, clipStr(c.text, 80))
		}
		acts = append(acts, a)
	}
	return acts, nil
}

// lineCall is one call of a multi-action string and the line it begins on.
type lineCall struct {
	text string
	line int
}

// splitCalls cuts s into its calls. When s is not a sequence of calls (a
// WebArena command, or text after a call that is no call), err says why and
// bad is the line it is on; ParseAction then reads a string whose trouble
// is on its first call's line as one action, for its own error.
func splitCalls(s string) (calls []lineCall, bad int, err error) {
	line, i := 1, 0
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n' || s[i] == ';') {
			if s[i] == '\n' {
				line++
			}
			i++
		}
		if i < len(s) && s[i] == '#' {
			for i < len(s) && s[i] != '\n' {
				i++
			}
			continue
		}
		if i >= len(s) || len(calls) > MaxStepActions {
			return calls, 0, nil
		}
		j := i
		for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || j > i && s[j] >= '0' && s[j] <= '9') {
			j++
		}
		k := j
		for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
			k++
		}
		if j == i || k >= len(s) || s[k] != '(' {
			return calls, line, fmt.Errorf(`expected a call like click("id") on each line, found %q`, clipStr(strings.SplitN(s[i:], "\n", 2)[0], 40))
		}
		_, end, err := parseCallArgsAt(s[k:])
		if err != nil {
			return calls, line, fmt.Errorf("cannot parse %s(...): %w", s[i:j], err)
		}
		calls = append(calls, lineCall{text: s[i : k+end], line: line})
		line += strings.Count(s[i:k+end], "\n")
		i = k + end
	}
}

package envcore

import (
	"fmt"
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
// a string that does not parse says what was expected. A string longer than
// MaxActionBytes, or with a field over its limit (ActionLimits), is refused
// with an error that states the limit and the size.
func ParseAction(s string) (Action, error) {
	parsed(s)
	return parseOne(s)
}

// parseOne is ParseAction without telling the parse hook.
func parseOne(s string) (Action, error) {
	if err := checkActionString(s); err != nil {
		return Action{}, err
	}
	s = stripFence(strings.TrimSpace(s))
	if s == "" {
		return Action{}, fmt.Errorf("empty action: expected a call like click(\"id\") or a command like click [id]")
	}
	i := 0
	for i < len(s) && (s[i] == '_' || s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' || i > 0 && s[i] >= '0' && s[i] <= '9') {
		i++
	}
	if i > 64 {
		return Action{}, fmt.Errorf("cannot parse action %q: no action has a name that long; expected a call like click(\"id\") or a command like click [id]", clipStr(s, 60))
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

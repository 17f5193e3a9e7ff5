package envcore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/go-rod/rod/lib/input"
	"github.com/go-rod/rod/lib/proto"

	"github.com/webserv-rl/webserv/inject"
	"github.com/webserv-rl/webserv/internal/similar"
)

// ActionError is an action that failed in a way the agent can act on. It is
// reported in Observation.LastActionError, never as a step error.
type ActionError struct {
	// Code classifies the failure; it is one of ActionErrorCodes.
	Code    string
	Message string
}

// actionErrorCodes is the closed set of action error codes, in the order
// docs/envcore.md ("Error codes") explains them. The injected actions.js
// answers a subset of them (act.codes); tests keep the Go side, the
// injected scripts and the docs in agreement.
var actionErrorCodes = []string{
	"missing", "stale", "hidden", "covered", "out_of_viewport", "disabled", "not_editable", "readonly",
	"no_option", "not_select", "bad_value", "bad_url", "navigation", "refused",
	"no_history", "bad_tab", "too_many_tabs", "bad_action", "timeout",
}

// ActionErrorCodes returns the closed set of codes an ActionError (and
// StepInfo.ActionErrorCode) can have: missing, stale, hidden, covered,
// out_of_viewport (a coordinate action's point), disabled, not_editable, readonly, no_option, not_select, bad_value,
// bad_url, navigation, refused (the environment's network policy, or an
// upload without Config.UploadDir),
// no_history, bad_tab, too_many_tabs, bad_action, timeout. A client can
// rely on no other code appearing.
func ActionErrorCodes() []string {
	return append([]string(nil), actionErrorCodes...)
}

func (e *ActionError) Error() string { return e.Message }

func actionErr(code, format string, args ...any) *ActionError {
	return &ActionError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// jsResult is the answer of the act.* functions in actions.js.
type jsResult struct {
	OK      bool    `json:"ok"`
	Code    string  `json:"code"`
	Message string  `json:"message"`
	X       float64 `json:"x"`
	Y       float64 `json:"y"`
	Tag     string  `json:"tag"`
	Kind    string  `json:"kind"`
	Option  bool    `json:"option"`
}

// execute runs a validated action in the active tab. It returns how many
// attempts it made; an *ActionError is the agent's problem, any other error
// the environment's.
//
// more: a is a later action of the same step (multiaction.go), so it goes
// on as the step's action: the page's work of all the step's actions is
// the step's to wait for.
func (e *Env) execute(ctx context.Context, a Action, more bool) (int, error) {
	t := e.activeTab()
	if t == nil {
		return 1, fmt.Errorf("environment has no open tab")
	}
	if s, ok := specOf(a.Type); !ok || !s.inert {
		if !more {
			e.act++
		}
		t.beginAction(ctx, e.act, evaluatesFirst(a))
	}
	if c, ok := coordActionOf(a.Type); ok {
		return 1, c.execute(ctx, e, t, a)
	}
	if s, ok := specOf(a.Type); ok {
		return s.run(e, ctx, t, a)
	}
	return 1, actionErr("bad_action", "unknown action type %q", a.Type)
}

// evaluatesFirst reports whether a's first command to the page, if any, is
// an evaluation (act.prepare, act.selectOptions, the settle question), or whether
// a replaces the document anyway, so that settle.begin may be pipelined
// ahead of it (see beginAction).
func evaluatesFirst(a Action) bool {
	s, ok := specOf(a.Type)
	return ok && s.evaluates(a)
}

// The run functions of actionSpecs, one per semantic action.

func (e *Env) runClick(ctx context.Context, t *tab, a Action) (int, error) {
	return e.clickTarget(ctx, t, a, 1)
}

func (e *Env) runDblClick(ctx context.Context, t *tab, a Action) (int, error) {
	return e.clickTarget(ctx, t, a, 2)
}

// clickTarget clicks a's target clicks times with a's button, holding
// a's modifiers.
func (e *Env) clickTarget(ctx context.Context, t *tab, a Action, clicks int) (int, error) {
	keys, err := modifierMask(a.Type, a.Modifiers)
	if err != nil {
		return 1, actionErr("bad_action", "%v", err)
	}
	p, n, err := e.target(ctx, t, a.Target, "click")
	if err != nil {
		return n, err
	}
	if p.Option && clicks == 1 && a.Button == "" && len(keys) == 0 { // clicking an option of a <select> selects it
		return n, e.jsAct(ctx, t, "act.selectOptions", a.Target, []string{})
	}
	return n, t.holding(ctx, keys, func() error { return t.clickAt(ctx, p.X, p.Y, a.Button, clicks) })
}

func (e *Env) runFocus(ctx context.Context, t *tab, a Action) (int, error) {
	_, n, err := e.target(ctx, t, a.Target, "focus")
	if err != nil {
		return n, err
	}
	return n, e.jsAct(ctx, t, "act.focus", a.Target)
}

// runDragDrop presses the left button over the target, moves over a.To in
// steps and releases it there (dragAndDrop), as BrowserGym's drag_and_drop
// does with the two elements' centres.
func (e *Env) runDragDrop(ctx context.Context, t *tab, a Action) (int, error) {
	from, n, err := e.target(ctx, t, a.Target, "hover")
	if err != nil {
		return n, err
	}
	to, m, err := e.target(ctx, t, a.To, "hover")
	if err != nil {
		return n + m - 1, err
	}
	return n + m - 1, t.dragAndDrop(ctx, Action{X: from.X, Y: from.Y, ToX: to.X, ToY: to.Y})
}

func (e *Env) runHover(ctx context.Context, t *tab, a Action) (int, error) {
	p, n, err := e.target(ctx, t, a.Target, "hover")
	if err != nil {
		return n, err
	}
	return n, t.mouse(ctx, proto.InputDispatchMouseEventTypeMouseMoved, p.X, p.Y, "", 0)
}

func (e *Env) runPress(ctx context.Context, t *tab, a Action) (int, error) {
	kc, err := parseKeyCombo(a.Key)
	if err != nil {
		return 1, actionErr("bad_action", "%v", err)
	}
	n := 1
	if a.Target != "" {
		if _, n, err = e.target(ctx, t, a.Target, "focus"); err != nil {
			return n, err
		}
		if err := e.jsAct(ctx, t, "act.focus", a.Target); err != nil {
			return n, err
		}
	}
	return n, t.press(ctx, kc)
}

func (e *Env) runSelect(ctx context.Context, t *tab, a Action) (int, error) {
	n := 1
	err := e.jsAct(ctx, t, "act.selectOptions", a.Target, a.Options)
	var ae *ActionError
	if errors.As(err, &ae) && (ae.Code == "missing" || ae.Code == "stale") {
		n++ // the page may have re-rendered since the observation
		e.refreshIDs(ctx, t)
		err = e.jsAct(ctx, t, "act.selectOptions", a.Target, a.Options)
	}
	return n, e.withSuggestions(ctx, t, a.Target, err)
}

func (e *Env) runGoto(ctx context.Context, t *tab, a Action) (int, error) {
	return 1, e.navigate(ctx, t, a.URL)
}

func (e *Env) runBack(ctx context.Context, t *tab, _ Action) (int, error) {
	_, err := e.history(ctx, t, -1)
	return 1, err
}

func (e *Env) runForward(ctx context.Context, t *tab, _ Action) (int, error) {
	_, err := e.history(ctx, t, +1)
	return 1, err
}

func (e *Env) runRefresh(ctx context.Context, t *tab, _ Action) (int, error) {
	t.touch()
	if err := (proto.PageReload{}).Call(t.client(ctx)); err != nil {
		return 1, fmt.Errorf("reload: %w", err)
	}
	return 1, nil
}

func (e *Env) runNewTab(ctx context.Context, _ *tab, a Action) (int, error) {
	_, tabs, _ := e.snapshotTabs()
	if len(tabs) >= e.cfg.MaxTabs {
		return 1, actionErr("too_many_tabs", "%d tabs are open, the most allowed; close one with tab_close first", len(tabs))
	}
	nt, err := e.openTab(ctx)
	if err != nil || a.URL == "" {
		return 1, err
	}
	return 1, e.navigate(ctx, nt, a.URL)
}

func (e *Env) runSwitchTab(ctx context.Context, _ *tab, a Action) (int, error) {
	_, tabs, _ := e.snapshotTabs()
	if *a.Tab < 0 || *a.Tab >= len(tabs) {
		return 1, actionErr("bad_tab", "there is no tab %d: tabs are numbered 0 to %d", *a.Tab, len(tabs)-1)
	}
	e.setActive(tabs[*a.Tab])
	// What the switch causes in the tab (focus and visibility handlers)
	// is the action's; its earlier work is not.
	tabs[*a.Tab].beginAction(ctx, e.act, false)
	return 1, proto.PageBringToFront{}.Call(tabs[*a.Tab].client(ctx))
}

func (e *Env) runCloseTab(ctx context.Context, _ *tab, a Action) (int, error) {
	return 1, e.closeTab(ctx, a.Tab)
}

func (e *Env) runNoop(ctx context.Context, _ *tab, a Action) (int, error) {
	select {
	case <-time.After(time.Duration(a.WaitMs) * time.Millisecond):
		return 1, nil
	case <-ctx.Done():
		return 1, ctx.Err()
	}
}

// runNothing runs the actions that only end the episode or talk to the
// user (terminate, send_msg): the server acts on them.
func runNothing(*Env, context.Context, *tab, Action) (int, error) { return 1, nil }

// target resolves and checks an element for mode (click, hover, focus,
// type). A missing or stale id gets one more try after the ids are
// refreshed (the page may have re-rendered since the observation); a covered
// or hidden target is retried up to Config.Retries times.
func (e *Env) target(ctx context.Context, t *tab, id, mode string) (jsResult, int, error) {
	refreshed := false
	for attempt := 1; ; attempt++ {
		var p jsResult
		err := t.evalJSON(ctx, inject.Call("act.prepare", id, mode), &p)
		if errors.Is(err, errNoInjection) {
			url, _ := t.info()
			return p, attempt, actionErr("missing", "no element with id '%s': the page (%s) has no elements to act on", id, url)
		}
		if err != nil {
			return p, attempt, err
		}
		if p.OK {
			return p, attempt, nil
		}
		switch p.Code {
		case "missing", "stale":
			if !refreshed {
				refreshed = true
				e.refreshIDs(ctx, t)
				continue
			}
			return p, attempt, e.withSuggestions(ctx, t, id, actionErr(p.Code, "%s", p.Message))
		case "covered", "hidden":
			if attempt <= e.cfg.Retries {
				select {
				case <-time.After(time.Duration(attempt) * 150 * time.Millisecond):
				case <-ctx.Done():
					return p, attempt, ctx.Err()
				}
				continue
			}
		}
		return p, attempt, actionErr(p.Code, "%s", p.Message)
	}
}

// refreshIDs re-runs the parser so that ids resolve against the page as it
// is now (elements re-rendered since the observation get their ids back).
func (e *Env) refreshIDs(ctx context.Context, t *tab) {
	_ = t.evalJSON(ctx, "("+inject.Call("parser.observe", map[string]bool{})+", 0)", nil)
}

// jsAct calls an act.* function whose answer is {ok, code, message}.
func (e *Env) jsAct(ctx context.Context, t *tab, fn string, args ...any) error {
	var r jsResult
	if err := t.evalJSON(ctx, inject.Call(fn, args...), &r); err != nil {
		if errors.Is(err, errNoInjection) {
			return actionErr("missing", "the page has no elements to act on")
		}
		return err
	}
	if !r.OK {
		return actionErr(r.Code, "%s", r.Message)
	}
	return nil
}

// typeInto replaces a field's content with a.Text (Type) or empties it
// (Clear), then presses Enter if asked.
func (e *Env) typeInto(ctx context.Context, t *tab, a Action) (int, error) {
	p, n, err := e.target(ctx, t, a.Target, "type")
	if err != nil {
		return n, err
	}
	text := a.Text
	if a.Type == Clear {
		text = ""
	}
	if p.Kind == "value" { // date, time, colour, range: set like a picker does
		if err := e.jsAct(ctx, t, "act.setValue", a.Target, text); err != nil {
			return n, err
		}
	} else {
		if err := e.jsAct(ctx, t, "act.focusForTyping", a.Target); err != nil {
			return n, err
		}
		if text == "" {
			err = t.press(ctx, keyCombo{key: input.Delete})
		} else {
			err = t.typeText(ctx, text)
		}
		if err != nil {
			return n, err
		}
	}
	if a.Enter && a.Type == Type {
		return n, t.press(ctx, keyCombo{key: input.Enter})
	}
	return n, nil
}

// navigate opens rawURL in t. Relative URLs resolve against the page's URL;
// a bare host gets http://. Only http, https and about:blank are opened.
func (e *Env) navigate(ctx context.Context, t *tab, rawURL string) error {
	cur, _ := t.info()
	u, err := resolveURL(cur, rawURL)
	if err != nil {
		return err
	}
	if err := e.checkURL(u); err != nil {
		return err
	}
	t.touch()
	res, err := proto.PageNavigate{URL: u}.Call(t.client(ctx))
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return actionErr("bad_url", "could not open %s: %v", u, err)
	}
	if res.ErrorText != "" {
		return actionErr("navigation", "could not open %s: %s", u, res.ErrorText)
	}
	return nil
}

func resolveURL(current, raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "about:blank" {
		return raw, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", actionErr("bad_url", "cannot parse URL %q: %v", raw, err)
	}
	if u.Scheme == "" || (u.Opaque != "" && u.Host == "") {
		if strings.HasPrefix(raw, "/") || strings.HasPrefix(raw, ".") || strings.HasPrefix(raw, "?") || strings.HasPrefix(raw, "#") {
			base, err := url.Parse(current)
			if err != nil || (base.Scheme != "http" && base.Scheme != "https") {
				return "", actionErr("bad_url", "cannot open relative URL %q from %s: give a full http:// URL", raw, current)
			}
			return base.ResolveReference(u).String(), nil
		}
		if u2, err := url.Parse("http://" + raw); err == nil && u2.Host != "" {
			return u2.String(), nil
		}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", actionErr("bad_url", "goto opens http and https URLs only, not %q", u.Scheme+":")
	}
	if u.Host == "" {
		return "", actionErr("bad_url", "URL %q has no host", raw)
	}
	return u.String(), nil
}

// history moves delta steps in t's history and returns the id of the
// entry it moves to (the move itself completes after the call).
func (e *Env) history(ctx context.Context, t *tab, delta int) (int, error) {
	c := t.client(ctx)
	h, err := proto.PageGetNavigationHistory{}.Call(c)
	if err != nil {
		return 0, fmt.Errorf("read history: %w", err)
	}
	i := h.CurrentIndex + delta
	if i < 0 || i >= len(h.Entries) || h.Entries[i].URL == "about:blank" && i == 0 {
		if delta < 0 {
			return 0, actionErr("no_history", "there is no earlier page in this tab's history")
		}
		return 0, actionErr("no_history", "there is no later page in this tab's history")
	}
	t.touch()
	if err := (proto.PageNavigateToHistoryEntry{EntryID: h.Entries[i].ID}).Call(c); err != nil {
		return 0, fmt.Errorf("navigate history: %w", err)
	}
	return h.Entries[i].ID, nil
}

func (e *Env) closeTab(ctx context.Context, index *int) error {
	_, tabs, active := e.snapshotTabs()
	i := active
	if index != nil {
		i = *index
	}
	if i < 0 || i >= len(tabs) {
		return actionErr("bad_tab", "there is no tab %d: tabs are numbered 0 to %d", i, len(tabs)-1)
	}
	if _, err := (proto.TargetCloseTarget{TargetID: tabs[i].id}).Call(e.br().rod.Context(ctx)); err != nil {
		return fmt.Errorf("close tab: %w", err)
	}
	e.br().forget(tabs[i])
	if t := e.activeTab(); t != nil {
		return proto.PageBringToFront{}.Call(t.client(ctx))
	}
	// The last tab closed: like a browser window, keep one blank tab.
	_, err := e.openTab(ctx)
	return err
}

// withSuggestions adds ids that look like a missing one to its error.
func (e *Env) withSuggestions(ctx context.Context, t *tab, id string, err error) error {
	var ae *ActionError
	if !errors.As(err, &ae) || (ae.Code != "missing" && ae.Code != "stale") {
		return err
	}
	var ids []string
	if t.evalJSON(ctx, inject.Call("parser.ids"), &ids) != nil {
		return err
	}
	if s := similarIDs(id, ids, 5); len(s) > 0 {
		ae.Message += "; ids that exist and look alike: " + strings.Join(s, ", ")
	} else if len(ids) == 0 {
		ae.Message += "; the page has no interactive elements now"
	}
	return ae
}

// similarIDs returns up to n ids close to id: sharing a word or within a
// small edit distance, closest first.
func similarIDs(id string, ids []string, n int) []string {
	type cand struct {
		id    string
		score int
	}
	words := strings.FieldsFunc(id, func(r rune) bool { return r == '-' || r == '.' || r == '_' })
	var cs []cand
	far := max(3, len(id)/2)
	for _, x := range ids {
		shared := 0
		for _, w := range words {
			if len(w) > 1 && strings.Contains(x, w) {
				shared++
			}
		}
		// The distance is at least the difference in length: an id far
		// longer or shorter is not measured (nor is any id against an
		// agent's runaway one).
		if shared == 0 && (abs(len(x)-len(id)) > 4*far || len(id) > 256) {
			continue
		}
		d := similar.Distance(id, x)
		if d > far && shared == 0 {
			continue
		}
		cs = append(cs, cand{x, d - 4*shared})
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].score < cs[j].score })
	out := make([]string, 0, n)
	for i := 0; i < len(cs) && i < n; i++ {
		out = append(out, cs[i].id)
	}
	return out
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

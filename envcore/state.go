package envcore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/go-rod/rod/lib/proto"

	"github.com/webserv-rl/webserv/inject"
)

// BrowserState is the browser side of a snapshot: what a fork or restore
// rebuilds in a fresh browser context. It holds the context's cookies and,
// per tab, its history (http(s) entries and the position in them), local
// and session storage, form field values (by semantic id) and scroll. It
// cannot hold in-memory JavaScript state: a page is loaded again and runs
// its scripts from the start.
type BrowserState struct {
	Cookies []*proto.NetworkCookie `json:"cookies"`
	Tabs    []TabState             `json:"tabs"`
	Active  int                    `json:"active"`
}

// TabState is one tab of a BrowserState.
type TabState struct {
	History []string  `json:"history"` // entry URLs, oldest first
	Current int       `json:"current"` // index of the current entry
	Page    pageState `json:"page"`    // of the current entry
}

// pageState is what state.js captures.
type pageState struct {
	ScrollX float64                   `json:"scroll_x"`
	ScrollY float64                   `json:"scroll_y"`
	Local   map[string]string         `json:"local"`
	Session map[string]string         `json:"session"`
	Fields  map[string]map[string]any `json:"fields"`
	Focused string                    `json:"focused,omitempty"` // semantic id of the focused element
}

// CaptureState records the browser state of the environment.
func (e *Env) CaptureState(ctx context.Context) (BrowserState, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ctx, stop := e.live(ctx)
	defer stop()
	st, err := e.captureState(ctx)
	return st, e.orCrash(err)
}

// captureState is CaptureState's work, with e.mu held.
func (e *Env) captureState(ctx context.Context) (BrowserState, error) {
	var st BrowserState
	if e.closed {
		return st, ErrClosed
	}
	if e.ctxID == "" {
		return st, ErrNotReset
	}
	if err := e.crashed(); err != nil {
		return st, err
	}
	cookies, err := proto.StorageGetCookies{BrowserContextID: e.ctxID}.Call(e.br().rod.Context(ctx))
	if err != nil {
		return st, fmt.Errorf("read cookies: %w", err)
	}
	st.Cookies = cookies.Cookies
	_, tabs, active := e.snapshotTabs()
	st.Active = active
	for _, t := range tabs {
		h, err := proto.PageGetNavigationHistory{}.Call(t.client(ctx))
		if err != nil {
			return st, fmt.Errorf("read history: %w", err)
		}
		ts := TabState{Current: -1}
		for i, entry := range h.Entries {
			if !strings.HasPrefix(entry.URL, "http://") && !strings.HasPrefix(entry.URL, "https://") {
				continue
			}
			if i <= h.CurrentIndex {
				ts.Current = len(ts.History)
			}
			ts.History = append(ts.History, entry.URL)
		}
		if err := t.evalJSON(ctx, inject.Call("state.capture"), &ts.Page); err != nil && !errors.Is(err, errNoInjection) {
			return st, fmt.Errorf("read page state: %w", err)
		}
		st.Tabs = append(st.Tabs, ts)
	}
	return st, nil
}

// RestoreState starts a new episode in a fresh browser context rebuilt from
// st: cookies set, each tab's history rebuilt with only its current page
// loaded from the site (see replayHistory) and its storage
// in place first, then field values and scroll applied. It returns the
// observation of the active tab once settled; StepInfo.Action is the time
// the rebuild took.
func (e *Env) RestoreState(ctx context.Context, st BrowserState) (Observation, StepInfo, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	defer e.br().working()()
	ctx, stop := e.live(ctx)
	defer stop()
	obs, info, err := e.restoreState(ctx, st)
	return obs, info, e.orCrash(err)
}

// restoreState is RestoreState's work, with e.mu held.
func (e *Env) restoreState(ctx context.Context, st BrowserState) (Observation, StepInfo, error) {
	if e.closed {
		return Observation{}, StepInfo{}, ErrClosed
	}
	start := time.Now()
	if err := e.dispose(ctx); err != nil {
		e.log.Warn("disposing the last episode's context failed")
	}
	first, err := e.freshContext(ctx)
	if err != nil {
		return Observation{}, StepInfo{}, err
	}
	id := e.ctxID
	e.terminated, e.chat = false, nil

	if len(st.Cookies) > 0 {
		params := make([]*proto.NetworkCookieParam, len(st.Cookies))
		for i, c := range st.Cookies {
			params[i] = &proto.NetworkCookieParam{Name: c.Name, Value: c.Value, Domain: c.Domain, Path: c.Path,
				Secure: c.Secure, HTTPOnly: c.HTTPOnly, SameSite: c.SameSite, Expires: c.Expires}
		}
		if err := (proto.StorageSetCookies{Cookies: params, BrowserContextID: id}).Call(e.br().rod.Context(ctx)); err != nil {
			return Observation{}, StepInfo{}, fmt.Errorf("set cookies: %w", err)
		}
	}
	tabs := st.Tabs
	if len(tabs) == 0 {
		tabs = []TabState{{}}
	}
	opened := make([]*tab, 0, len(tabs))
	var settleFrom time.Time
	for i, ts := range tabs {
		t := first
		if i > 0 {
			if t, err = e.openTab(ctx); err != nil {
				return Observation{}, StepInfo{}, err
			}
			settleFrom = time.Now()
		}
		opened = append(opened, t)
		last, err := e.replayHistory(ctx, t, ts)
		if err != nil {
			return Observation{}, StepInfo{}, err
		}
		if last.After(settleFrom) {
			settleFrom = last
		}
	}
	if settleFrom.IsZero() {
		settleFrom = time.Now()
	}
	if st.Active >= 0 && st.Active < len(opened) {
		e.setActive(opened[st.Active])
	}
	// The replay is the action: the work it caused counts from its last
	// navigation, and the quiet window and the settle timeout from its end
	// (its pages have loaded by then, however long they took), as they
	// would after an action. Every tab was opened before that navigation,
	// so settle keeps st.Active.
	action := time.Since(start)
	obs, info, err := e.finishStep(ctx, StepInfo{Attempts: 1, Action: time.Since(settleFrom)}, settleFrom, "", e.cfg.Observe)
	info.Action = action
	if err != nil {
		return obs, info, err
	}
	// Field values and scroll go in last, on the settled pages, by the ids
	// a fresh observation assigned (the same as the parent's: ids are
	// derived from the page). Setting them is an action of its own: the
	// input and change events it fires run the page's handlers (a search
	// box's debounced suggestions), as the parent's typing ran them, and
	// what they cause is settled as a step's work is, so the observation
	// shows what the parent's did, not a page half-way there.
	changed := false
	began := time.Now()
	for i, ts := range tabs {
		if len(ts.Page.Fields) == 0 && ts.Page.ScrollX == 0 && ts.Page.ScrollY == 0 {
			continue
		}
		e.refreshIDs(ctx, opened[i])
		if !changed {
			e.act++
		}
		opened[i].beginAction(ctx, e.act, true)
		if err := opened[i].evalJSON(ctx, inject.Call("state.applyFields", ts.Page), nil); err != nil && !errors.Is(err, errNoInjection) {
			return obs, info, fmt.Errorf("restore fields: %w", err)
		}
		changed = true
	}
	if changed {
		obs, fin, err := e.finishStep(ctx, StepInfo{Attempts: 1, Action: time.Since(began)}, began, "", e.cfg.Observe)
		fin.Action, fin.Settle, fin.Extract = action, info.Settle+fin.Settle, info.Extract+fin.Extract
		return obs, fin, err
	}
	return obs, info, nil
}

// replayHistory rebuilds a tab's back/forward list and loads its current
// entry for real. The other entries are committed with the stand-in
// document (inject/standin.html, served by tab.useStandIns) at their real
// URLs; going back or forward to one later loads the real page, as any
// history navigation without a cached page does. So a long history costs
// one real page load, no request of the history (a GET with side effects)
// reaches the site again, and the captured storage, written in a stand-in
// of the current page's origin, is in place before the page's first script
// runs. It returns once that page has loaded (see restoreDeadline), with
// last the moment its load was started.
func (e *Env) replayHistory(ctx context.Context, t *tab, ts TabState) (last time.Time, err error) {
	n := len(ts.History)
	if n == 0 {
		return last, nil
	}
	current := n - 1
	if ts.Current >= 0 && ts.Current < n {
		current = ts.Current
	}
	storage := len(ts.Page.Local)+len(ts.Page.Session) > 0
	standIns := false
	setStandIns := func(on bool) error {
		if on == standIns {
			return nil
		}
		standIns = on
		if err := t.useStandIns(ctx, on); err != nil {
			return fmt.Errorf("restore history: %w", err)
		}
		return nil
	}
	defer func() {
		if standIns {
			_ = t.useStandIns(context.WithoutCancel(ctx), false)
		}
	}()
	applyStorage := func() error {
		// In the stand-in just committed: wait for it to be in place.
		if err := e.waitLoaded(ctx, t); err != nil {
			return err
		}
		if err := t.evalJSON(ctx, inject.Call("state.applyStorage", ts.Page), nil); err != nil {
			return fmt.Errorf("restore storage: %w", err)
		}
		storage = false
		return nil
	}
	shown := "" // the origin of the stand-in shown now
	for i, u := range ts.History {
		if i == n-1 && i == current && (!storage || shown == origin(u)) {
			// The usual case: the current page is the last; navigate to it.
			if storage {
				if err := applyStorage(); err != nil {
					return last, err
				}
			}
			if err := setStandIns(false); err != nil {
				return last, err
			}
			last = time.Now()
			if err := e.navigate(ctx, t, u); err != nil {
				return last, fmt.Errorf("restore history (%s): %w", u, err)
			}
			// Loaded means the new document loaded: on a loaded host the
			// old one may still be current when navigate returns.
			if err := e.waitCommitted(ctx, t, u); err != nil {
				return last, err
			}
			return last, e.waitLoaded(ctx, t)
		}
		if err := setStandIns(true); err != nil {
			return last, err
		}
		// Page.navigate returns once the stand-in has committed, which is
		// all an entry needs: the next navigation may start at once.
		if err := e.navigate(ctx, t, u); err != nil {
			return last, fmt.Errorf("restore history (%s): %w", u, err)
		}
		shown = origin(u)
		if i == current && storage {
			if err := applyStorage(); err != nil {
				return last, err
			}
		}
	}
	// The current entry shows a stand-in, or lies behind the last entry:
	// load it for real (a history move may restore its stand-in from the
	// back/forward cache, which a reload then replaces).
	if err := e.waitLoaded(ctx, t); err != nil {
		return last, err
	}
	if err := setStandIns(false); err != nil {
		return last, err
	}
	last = time.Now()
	if current < n-1 {
		// A history move is relative to the entry committed now: wait until
		// the last entry's navigation has committed, or on a loaded host the
		// move starts from the entry before it and lands one too far back.
		if err := e.waitCommitted(ctx, t, ts.History[n-1]); err != nil {
			return last, fmt.Errorf("restore history position: %w", err)
		}
		if err := e.goToEntry(ctx, t, current-(n-1)); err != nil {
			return last, fmt.Errorf("restore history position: %w", err)
		}
		var standIn bool
		if err := t.evalJSON(ctx, inject.Call("state.isStandIn"), &standIn); err != nil || !standIn {
			return last, nil
		}
	}
	t.touch()
	last = time.Now()
	if err := (proto.PageReload{}).Call(t.client(ctx)); err != nil {
		return last, fmt.Errorf("load the current page (%s): %w", ts.History[current], err)
	}
	return last, e.waitLoaded(ctx, t)
}

// goToEntry moves delta entries in t's history and waits until the move
// has happened and the page is loaded.
func (e *Env) goToEntry(ctx context.Context, t *tab, delta int) error {
	id, err := e.history(ctx, t, delta)
	if err != nil {
		return err
	}
	start, deadline := time.Now(), e.restoreDeadline(ctx)
	for {
		h, err := proto.PageGetNavigationHistory{}.Call(t.client(ctx))
		if err == nil && h.CurrentIndex >= 0 && h.CurrentIndex < len(h.Entries) && h.Entries[h.CurrentIndex].ID == id {
			return e.waitLoaded(ctx, t)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the history did not move %d entries within %s", delta, time.Since(start).Round(time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// waitCommitted waits until t's current history entry is url (the last
// navigation of a replay has committed), at most commitWait: a URL the
// browser spells otherwise must not hold the restore up, and then the move
// goes ahead as it did before this wait.
func (e *Env) waitCommitted(ctx context.Context, t *tab, url string) error {
	deadline := time.Now().Add(commitWait)
	if d := e.restoreDeadline(ctx); d.Before(deadline) {
		deadline = d
	}
	for {
		h, err := proto.PageGetNavigationHistory{}.Call(t.client(ctx))
		if err == nil && h.CurrentIndex >= 0 && h.CurrentIndex < len(h.Entries) && h.Entries[h.CurrentIndex].URL == url {
			return nil
		}
		if time.Now().After(deadline) {
			return nil // not seen (the browser may spell the URL otherwise): move as before
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// commitWait bounds waitCommitted.
const commitWait = 10 * time.Second

// origin is a URL's scheme://host:port ("" when it does not parse).
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// restoreDeadline bounds each wait of a restore for a page to load or the
// history to move. A restore is part of a reset, not an action: its pages
// must load for the episode to start from the captured state (a group
// member starts where its leader did), so a page slower than
// Config.SettleTimeout (a loaded site, a starved machine) is waited for as
// long as ctx allows. Without a deadline on ctx, SettleTimeout bounds it.
func (e *Env) restoreDeadline(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(e.cfg.SettleTimeout)
}

// waitLoaded waits until no frame of the tab is loading a document, until
// restoreDeadline. The frame events that count loading documents arrive on
// their own goroutine and may trail a history move on a loaded host, so the
// main document's readyState must say complete as well.
func (e *Env) waitLoaded(ctx context.Context, t *tab) error {
	start, deadline := time.Now(), e.restoreDeadline(ctx)
	time.Sleep(10 * time.Millisecond) // let the navigation's first event arrive
	for {
		loading, _, crashed := t.loadState()
		if crashed {
			return fmt.Errorf("the page crashed while its state was restored")
		}
		if loading == 0 && t.documentComplete(ctx) {
			return nil
		}
		if !time.Now().Before(deadline) {
			url, _ := t.info()
			return fmt.Errorf("page %s of the restored history did not finish loading within %s", clipStr(url, 120), time.Since(start).Round(time.Millisecond))
		}
		select {
		case <-ctx.Done():
			url, _ := t.info()
			return fmt.Errorf("waiting for page %s of the restored history to load: %w", clipStr(url, 120), ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// documentComplete reports whether the tab's main document has loaded
// (document.readyState is "complete"); false while the answer is not known,
// as when the document is being replaced.
func (t *tab) documentComplete(ctx context.Context) bool {
	var state string
	return t.evalJSON(ctx, "document.readyState", &state) == nil && state == "complete"
}

package envcore

import (
	"context"
	"errors"
	"fmt"
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
}

// CaptureState records the browser state of the environment.
func (e *Env) CaptureState(ctx context.Context) (BrowserState, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var st BrowserState
	if e.closed {
		return st, ErrClosed
	}
	if e.ctxID == "" {
		return st, ErrNotReset
	}
	cookies, err := proto.StorageGetCookies{BrowserContextID: e.ctxID}.Call(e.b.rod.Context(ctx))
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
// st: cookies set, each tab's history loaded again (rebase maps every URL,
// for a fork whose site lives at another address; nil keeps them), storage
// set and the current page reloaded with it, then field values and scroll
// applied. It returns the observation of the active tab once settled.
func (e *Env) RestoreState(ctx context.Context, st BrowserState, rebase func(string) string) (Observation, StepInfo, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return Observation{}, StepInfo{}, ErrClosed
	}
	if rebase == nil {
		rebase = func(s string) string { return s }
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
		if err := (proto.StorageSetCookies{Cookies: params, BrowserContextID: id}).Call(e.b.rod.Context(ctx)); err != nil {
			return Observation{}, StepInfo{}, fmt.Errorf("set cookies: %w", err)
		}
	}
	tabs := st.Tabs
	if len(tabs) == 0 {
		tabs = []TabState{{}}
	}
	opened := make([]*tab, 0, len(tabs))
	for i, ts := range tabs {
		t := first
		if i > 0 {
			if t, err = e.openTab(ctx); err != nil {
				return Observation{}, StepInfo{}, err
			}
		}
		opened = append(opened, t)
		if err := e.replayHistory(ctx, t, ts, rebase); err != nil {
			return Observation{}, StepInfo{}, err
		}
	}
	if st.Active >= 0 && st.Active < len(opened) {
		e.setActive(opened[st.Active])
	}
	info := StepInfo{Attempts: 1, Action: time.Since(start)}
	obs, info, err := e.finishStep(ctx, info, time.Now(), "", e.cfg.Observe)
	if err != nil {
		return obs, info, err
	}
	// Field values and scroll go in last, on the settled pages, by the ids
	// a fresh observation assigned (the same as the parent's: ids are
	// derived from the page).
	changed := false
	for i, ts := range tabs {
		if len(ts.Page.Fields) == 0 && ts.Page.ScrollX == 0 && ts.Page.ScrollY == 0 {
			continue
		}
		e.refreshIDs(ctx, opened[i])
		if err := opened[i].evalJSON(ctx, inject.Call("state.applyFields", ts.Page), nil); err != nil && !errors.Is(err, errNoInjection) {
			return obs, info, fmt.Errorf("restore fields: %w", err)
		}
		changed = true
	}
	if changed {
		t0 := time.Now()
		if obs, err = e.observe(ctx, e.cfg.Observe); err != nil {
			return obs, info, err
		}
		info.Extract += time.Since(t0)
	}
	return obs, info, nil
}

// replayHistory navigates through a tab's history entries in order (so
// back and forward work as they did), moves to the current one, and
// reloads it with the captured storage.
func (e *Env) replayHistory(ctx context.Context, t *tab, ts TabState, rebase func(string) string) error {
	for i, u := range ts.History {
		if err := e.navigate(ctx, t, rebase(u)); err != nil {
			return fmt.Errorf("restore history (%s): %w", u, err)
		}
		// Page.navigate returns once the navigation has committed, which
		// is all a history entry needs; only the last page must load.
		if i == len(ts.History)-1 {
			if err := waitLoaded(ctx, t, e.cfg.SettleTimeout); err != nil {
				return err
			}
		}
	}
	if n := len(ts.History); n > 0 && ts.Current >= 0 && ts.Current < n-1 {
		if err := e.history(ctx, t, ts.Current-(n-1)); err != nil {
			return fmt.Errorf("restore history position: %w", err)
		}
		if err := waitLoaded(ctx, t, e.cfg.SettleTimeout); err != nil {
			return err
		}
	}
	if len(ts.Page.Local)+len(ts.Page.Session) > 0 {
		if err := t.evalJSON(ctx, inject.Call("state.applyStorage", ts.Page), nil); err != nil {
			return fmt.Errorf("restore storage: %w", err)
		}
		t.touch()
		if err := (proto.PageReload{}).Call(t.client(ctx)); err != nil {
			return fmt.Errorf("reload with restored storage: %w", err)
		}
		if err := waitLoaded(ctx, t, e.cfg.SettleTimeout); err != nil {
			return err
		}
	}
	return nil
}

// waitLoaded waits until no frame of the tab is loading a document.
func waitLoaded(ctx context.Context, t *tab, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	time.Sleep(10 * time.Millisecond) // let the navigation's first event arrive
	for {
		loading, _, crashed := t.loadState()
		if crashed {
			return fmt.Errorf("the page crashed while its state was restored")
		}
		if loading == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("a page of the restored history did not load within %s", limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

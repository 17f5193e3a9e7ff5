package envcore

// An environment's tabs: which may open, the list in opening order, the
// active one, and opening one.

import (
	"context"
	"fmt"
	"time"

	"github.com/go-rod/rod/lib/proto"
)

// admitTab is asked by the browser when a page target of this
// environment's context appears, before it is prepared. Past MaxTabs it
// answers false and counts the refusal for the next observation: the page
// opened one popup too many (the headless browser has no popup blocker,
// and a page that reopens itself would otherwise fill the host's memory).
// An agent's own new_tab is refused earlier, with an action error.
func (e *Env) admitTab(ctxID proto.BrowserBrowserContextID) bool {
	e.tabMu.Lock()
	defer e.tabMu.Unlock()
	if ctxID != e.ctxID {
		return true // a tab of an earlier episode's context: addTab drops it
	}
	if len(e.tabs)+e.attaching >= e.cfg.MaxTabs {
		e.blocked++
		return false
	}
	e.attaching++
	return true
}

// takeBlocked returns and clears the number of tabs refused since the
// last call.
func (e *Env) takeBlocked() int {
	e.tabMu.Lock()
	defer e.tabMu.Unlock()
	b := e.blocked
	e.blocked = 0
	return b
}

// addTab is called by the browser when a page target of this environment's
// context is ready (ours or a popup).
func (e *Env) addTab(t *tab) {
	e.tabMu.Lock()
	defer e.tabMu.Unlock()
	if t.ctxID != e.ctxID {
		return // a tab of an earlier episode's context
	}
	e.attaching = max(0, e.attaching-1)
	e.tabs = append(e.tabs, t)
	close(e.changed)
	e.changed = make(chan struct{})
}

// dropTab is called when a tab's target goes away.
func (e *Env) dropTab(t *tab) {
	e.tabMu.Lock()
	defer e.tabMu.Unlock()
	for i, x := range e.tabs {
		if x != t {
			continue
		}
		e.tabs = append(e.tabs[:i], e.tabs[i+1:]...)
		// Closing the active tab activates the one before it.
		if e.active > i || e.active == i {
			e.active = max(0, e.active-1)
		}
		e.active = min(e.active, max(0, len(e.tabs)-1))
		close(e.changed)
		e.changed = make(chan struct{})
		return
	}
}

func (e *Env) snapshotTabs() (activeTab *tab, tabs []*tab, active int) {
	e.tabMu.Lock()
	defer e.tabMu.Unlock()
	if len(e.tabs) == 0 {
		return nil, nil, 0
	}
	return e.tabs[e.active], append([]*tab(nil), e.tabs...), e.active
}

func (e *Env) activeTab() *tab {
	t, _, _ := e.snapshotTabs()
	return t
}

func (e *Env) setActive(t *tab) {
	e.tabMu.Lock()
	defer e.tabMu.Unlock()
	for i, x := range e.tabs {
		if x == t {
			e.active = i
		}
	}
}

// openTabTimeout bounds how long a new tab may take to be reported.
const openTabTimeout = 30 * time.Second

// openTab creates a tab in the environment's context, waits until the
// browser has prepared it, and makes it active.
//
// The wait is bounded by ctx and by openTabTimeout.
func (e *Env) openTab(ctx context.Context) (*tab, error) {
	res, err := proto.TargetCreateTarget{URL: "about:blank", BrowserContextID: e.ctxID}.Call(e.br().rod.Context(ctx))
	if err != nil {
		return nil, fmt.Errorf("open tab: %w", err)
	}
	// One deadline for the whole wait: a browser busy creating many tabs
	// at once reports each late, but reports it.
	deadline := time.NewTimer(openTabTimeout)
	defer deadline.Stop()
	check := time.NewTicker(wedgeCheckEvery)
	defer check.Stop()
	for {
		e.tabMu.Lock()
		for i, t := range e.tabs {
			if t.id == res.TargetID {
				e.active = i
				e.tabMu.Unlock()
				return t, nil
			}
		}
		ch := e.changed
		e.tabMu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("open tab: %w", ctx.Err())
		case <-check.C:
			// A slow tab: a busy browser, or one that can start no page
			// (wedged.go), which no wait would cure.
			if b := e.br(); !b.startsPages() {
				b.endWedged("its zygote processes had ended, so it could start no page")
				if ce := b.crashErr(); ce != nil {
					return nil, fmt.Errorf("open tab: %w", ce)
				}
			}
		case <-deadline.C:
			return nil, fmt.Errorf("open tab: the browser did not report the new tab within %s; it is overloaded: retry, or let fewer environments start at once (max_creating)", openTabTimeout)
		}
	}
}

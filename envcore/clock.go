package envcore

import (
	"context"
	"fmt"

	"github.com/go-rod/rod/lib/proto"

	"github.com/webserv-rl/webserv/inject"
)

// Clock asks for deterministic pages in a seeded episode
// (ResetOptions.Clock): every document of the episode's tabs gets a
// seeded Math.random and a virtual clock (Date, performance.now, event and
// animation-frame times) that starts at a fixed epoch and moves only when
// the page reads it, so the same actions give the same observations
// whatever the host's timing (inject/clock.js says what it covers). A
// site opts in: it is for pages that need no real time.
type Clock struct {
	// Seed seeds the page's generators.
	Seed int64
	// Crypto makes crypto.getRandomValues and crypto.randomUUID seeded
	// too: only for a site that needs no real entropy (MiniWoB's tasks),
	// never for one that signs in or encrypts.
	Crypto bool
	// RealTime keeps the real clock (Date, performance.now, event and
	// frame times) and seeds the randomness alone: for a task whose reward
	// measures real time (how long the pointer stayed on a target), where
	// a virtual clock would pay for time not spent.
	RealTime bool
}

// script is the clock's new-document script.
func (c *Clock) script() string {
	if c == nil {
		return ""
	}
	return inject.Clock(c.Seed, c.Crypto, c.RealTime)
}

// setClock makes c the clock of the environment's tabs from now on ("" for
// none): each tab installed later registers it after the bundle.
func (e *Env) setClock(c *Clock) {
	e.tabMu.Lock()
	e.clock = c.script()
	e.tabMu.Unlock()
}

// clockScript is the environment's clock script, "" when it has none.
func (e *Env) clockScript() string {
	e.tabMu.Lock()
	defer e.tabMu.Unlock()
	return e.clock
}

// addClock registers the environment's clock in t, a tab installed before
// the environment had it (a warm one), unless t has it already.
func (t *tab) addClock(ctx context.Context, script string) error {
	t.mu.Lock()
	had := t.clocked
	t.clocked = true
	t.mu.Unlock()
	if script == "" || had {
		return nil
	}
	if _, err := (proto.PageAddScriptToEvaluateOnNewDocument{Source: script}).Call(t.client(ctx)); err != nil {
		return fmt.Errorf("install the episode's clock: %w", err)
	}
	return nil
}

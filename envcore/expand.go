package envcore

import (
	"context"
	"slices"
	"strings"
)

// The expand action (docs/envcore.md, "Token budget"): a budgeted
// observation folds runs of like items into one line with an id, and
// expand("fold-…") asks the next observations of the tab to show that
// fold's items first. It is a preference of the observation, not an act in
// the page: nothing is sent to the page, and the page's next navigation
// (a new document, or a move within it: history, a fragment) ends it, as
// the next episode does (a fresh context has fresh tabs).

// foldState is a tab's folds and expansion. Its fields are under the tab's
// mu: the navigation count is written by the browser's event loop.
type foldState struct {
	navs int // the main frame's navigations so far
	// shown are the fold ids of the tab's last budgeted observation, at
	// navigation shownAt.
	shown   []string
	shownAt int
	// expanded is the fold an expand named, at navigation expandedAt.
	expanded   string
	expandedAt int
}

// navigated counts a navigation of the tab's main frame.
func (t *tab) navigated() {
	t.mu.Lock()
	t.fold.navs++
	t.mu.Unlock()
}

// expansion is the fold the tab's observations show first: the one the
// last expand named, unless the page has navigated since.
func (t *tab) expansion() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.fold.expandedAt != t.fold.navs {
		t.fold.expanded = ""
	}
	return t.fold.expanded
}

// shown records the folds a budgeted observation showed.
func (t *tab) shown(folds []string) {
	t.mu.Lock()
	t.fold.shown, t.fold.shownAt = folds, t.fold.navs
	t.mu.Unlock()
}

// maxListedFolds bounds the folds an error lists.
const maxListedFolds = 8

// runExpand runs expand: a.Target must be a fold of the tab's last
// budgeted observation, on the page it was taken on.
func (e *Env) runExpand(_ context.Context, t *tab, a Action) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := &t.fold
	if f.shownAt != f.navs || len(f.shown) == 0 {
		return 1, actionErr("missing", "no folded part %q: the last observation of this page folded nothing (fold lines, \"… N more items like this\", come with a token budget, observe.max_tokens, on a page over it)", a.Target)
	}
	if !slices.Contains(f.shown, a.Target) {
		listed := f.shown[:min(len(f.shown), maxListedFolds)]
		return 1, actionErr("missing", "no folded part %q in the last observation; its folds are %s", a.Target, strings.Join(listed, ", "))
	}
	f.expanded, f.expandedAt = a.Target, f.navs
	return 1, nil
}

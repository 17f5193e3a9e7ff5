// Package inject holds the JavaScript that WebServ runs inside every page,
// and the Go accessors for it.
//
// The scripts are installed with the DevTools call
// Page.addScriptToEvaluateOnNewDocument, so they run in every document of a
// page (its frames, its reloads, and popups it opens) before any script of
// the page itself. They add one non-enumerable global, window.__webserv, with
// these parts:
//
//   - settle (settle.js, with its wrappers settle_callbacks.js,
//     settle_messages.js, settle_requests.js and settle_navigation.js):
//     tracks the work an action causes (timers, animation frames,
//     MessageChannel messages, XHR and fetch, navigations and new tabs)
//     from the action's input events through everything they schedule, and
//     answers what of it is still pending. The environment observes the page once
//     that work has drained and an idle window has passed
//     (docs/envcore.md, "Settling").
//   - listeners (listeners.js): wraps addEventListener to record which
//     elements listen for hover events (marked data-maybe-hoverable="true")
//     and click events, so hover-only menus and div buttons are found.
//   - elements (elements.js): what the parser and the actions both ask of
//     an element (disabled, how text goes into it, its frame's offset), so
//     the two always agree.
//   - parser (parser.js, then parser_ids.js, parser_geometry.js,
//     parser_views.js and parser_observe.js): walks the rendered DOM once
//     and returns the compact observation: stripped HTML with semantic ids,
//     clickable and hoverable ids, inputs and selects with their live
//     state, the focused id, and optionally an accessibility-tree text view
//     and each target's geometry.
//   - act (actions.js): resolves a semantic id, checks the element can be
//     acted on, scrolls it into view and returns the point to click; a
//     check that fails answers one of the codes in act.codes, a part of
//     envcore's closed set of action error codes.
//   - state (state.js): captures and re-applies what a fork of the page must
//     carry: storage, form field values, scroll.
//
// standin.html is not injected: it is the document a restore commits, in
// place of the site's response, for the history entries it does not load
// (StandIn).
//
// Each file is plain, commented JavaScript embedded with go:embed. Bundle
// returns them as one script; Call builds the expression that calls one of
// their functions:
//
//	expr := inject.Call("parser.observeJSON", map[string]any{"axtree": true})
//	// window.__webserv.parser.observeJSON({"axtree":true})
//
// The package knows nothing about browsers, servers or sites: envcore drives
// Chromium and evaluates these expressions.
package inject

// Package envcore is the web-agent environment and its action language: a
// Chromium browser context with its tabs, a compact observation of the
// page, a small set of semantic actions with the string forms agents emit
// (ParseAction), and a step that returns only once the work the action
// caused has finished. It follows the WebServ paper, sections 3.2 and 3.3.
//
// Three concerns live in packages of their own beneath it, and import
// nothing of it: envcore/chromium starts and ends one Chromium process
// (binary, command line, account and sandbox, directories, the DevTools
// pipe), envcore/fleet keeps N such processes running (restarts with a
// back-off, start errors, crash and restart counts), and envcore/budget
// cuts a page's text view to a token budget.
//
// # Browser and environments
//
// A Browser owns one Chromium process (chromium.Start: Debian's
// chromium-headless-shell when installed, else /usr/bin/chromium; see
// chromium.Bin; nothing is downloaded) and routes its DevTools events to
// the environments' tabs. Environments share it, each in its own incognito
// browser context, so cookies, storage and history never leak between
// them:
//
//	b, err := envcore.Launch(ctx, logger, envcore.BrowserOptions{})
//	...
//	defer b.Close()
//	env := b.NewEnv(envcore.Config{IdleWindow: 500 * time.Millisecond})
//	defer env.Close()
//	obs, info, err := env.Reset(ctx, "http://127.0.0.1:8080/")
//
// A Pool (LaunchPool) supervises several Browsers, kept running by a
// fleet.Keeper: a new environment goes to the live one with the fewest,
// and one that dies is replaced, its environments answering a
// *BrowserCrashedError until their next Reset.
//
// Every page target the environment gets — the first tab, a new_tab, a
// popup the page opens — is held paused by Chromium until the scripts of
// package inject are installed, so the settle tracker and the listener
// patch see everything the page does from its first script on.
//
// # Observation
//
// Observation has the paper's five components: HTML stripped to what a
// person sees, annotated with data-semantic-id on every element an action
// can target; the Clickable and Hoverable ids; Inputs and Selects with their
// live state. Ids are readable slugs ("add-to-cart", "login.email",
// "size.large") that stay the same across steps while the page does not
// change. ObserveOptions adds, only when asked: an accessibility-tree text
// view with the same ids; a screenshot (PNG or JPEG, shrunk to MaxSide);
// element geometry per id in BrowserGym's extra_element_properties shape
// (bbox in CSS pixels of the viewport, visibility, clickable); a
// set-of-marks copy of the screenshot, drawn in Go from that geometry so
// that nothing enters the page, labelled with numbers that SOMLabels maps
// to ids; layout cues (cols="N" on grids and flex rows) in the HTML; and
// BrowserGym's raw objects (Chromium's accessibility tree and DOM snapshot
// with the ids joined in, for agents that read them with BrowserGym's
// utilities). ObserveOptions.MaxTokens cuts the text view to a token budget (package
// budget), keeping what can be acted on.
//
// # Actions
//
// Action is the structured form; ParseAction reads the string forms agents
// emit, BrowserGym calls (click("buy"), fill("q", "shoes")) and WebArena
// commands (click [buy], type [q] [shoes] [1], stop [answer]):
//
//	obs, info, err = env.StepText(ctx, `fill("search", "blue shirt", enter=True)`)
//
// Coordinate actions (mouse_click(x, y), mouse_dblclick, mouse_move,
// mouse_drag_and_drop, scroll(dx, dy), keyboard_type, keyboard_press) are
// for policies that act on pixels: BrowserGym's names and argument order,
// CSS pixels of the viewport, real CDP input, the same settle rule.
//
// Element actions resolve the id, check the element is visible, enabled
// and not covered, scroll it into view and send real mouse and keyboard
// input. A failed action is not an error: the observation says what went
// wrong in LastActionError, with ids that look alike when an id is unknown,
// and the episode goes on. Errors returned by Step are the environment's:
// closed, terminated, browser gone.
//
// # Quiescence
//
// After an action the step waits for what the action caused, not for the
// whole network to go quiet (docs/envcore.md, "Settling"). The injected
// tracker follows the action's input events through everything they
// schedule — timers, animation frames, messages, XHR and fetch, finite
// animations, replies on channels the action used, navigations and new tabs
// — and, in a routed context, the proxy's log adds every request that
// started after the action (images, scripts, workers, other-origin frames).
// The step returns once that work has drained, no frame is loading a
// document, and Config.IdleWindow (DefaultIdleWindow, 30ms, a grace) has
// passed since the action's end and the last caused request or navigation.
// Background work (pollers, intervals, beacon loops), timers beyond a 2s
// budget, long polls and channels the action did not use never hold a
// step. StepInfo.SettleReason says why the step
// returned ("drained", "idle" or "timeout"); a page still busy at
// Config.SettleTimeout is observed as it is, with StepInfo.Settled false
// and StepInfo.Pending naming what it was waiting for. StepInfo reports the
// time spent acting, settling and extracting.
package envcore

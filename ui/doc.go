// Package ui is WebServ's web UI: the live view of a server's open
// environments, people's verdicts on actions, and the replayer of recorded
// episodes. Its pages are plain HTML, CSS and JavaScript embedded in the
// binary (static/), with one vendored library: jsdiff 9.0.0
// (static/vendor, BSD-3-Clause) for the line diffs of observations.
//
// The server mounts Handler at /ui behind its token (see server.Handler);
// `webserv replay DIR` serves the replayer alone, without a browser.
//
//	board := ui.NewBoard()                 // fed by the server's observer hook
//	h := ui.Handler(ui.Config{Board: board, Screens: s, Replay: ui.NewReplay(dir), Rerunner: s})
//	mux.Handle("/ui/", http.StripPrefix("/ui", h))
//
// # Live view
//
// Board holds each open environment's state (site, task, goal, step, last
// action and error, reward so far, settle state, age), its recent history
// and its last observation. Updating it is a map write under a lock, and
// viewers poll its Version, so a server nobody watches pays next to
// nothing. The pages follow it through a server-sent event stream
// (/api/events). A live picture of a page (/api/envs/{id}/screen) is a CDP
// screencast that runs only while a page shows it, throttled to 5 frames a
// second.
//
// # Approval
//
// An environment made with approve: true asks Board.Ask before each
// action; the live view shows the action (its target outlined on the live
// picture) with Approve and Reject buttons and a comment box, and
// Board.Decide answers. A question nobody answers in time is rejected.
//
// # Replayer
//
// Replay lists the episodes under a trajectory directory (package
// trajectory) and serves one episode's lines and screenshots: the page
// steps through it with each step's screenshot, action, observation and
// its line diff against the step before, timings, settle state, reward,
// errors and verdicts. Every step has its own link
// (replay.html?ep=PATH#step=N). A Rerunner runs an episode's actions again
// on a fresh environment and reports the first step that differs.
package ui

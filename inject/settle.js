// settle.js — tracks the work an action causes, so that a step returns once
// that work is done instead of waiting for the whole page to go quiet.
//
// The rule it serves is written in docs/envcore.md ("Settling"); this file
// is its page half. Every piece of asynchronous work the page schedules is
// given a cause: the cause of the code that scheduled it. A cause is one link
// of a causal chain and records
//
//   act    the action that started the chain (0: the document's start-up),
//   spent  the timer delay the chain has accumulated so far,
//   live   whether the chain is still followed,
//   fn     the callback of the chain's last timer or animation frame.
//
// Work of a live chain is "pending" until it has run: timers (setTimeout),
// animation frames, idle callbacks, MessageChannel messages, and XHR / fetch
// requests with their body reads. A chain stops being followed (its later
// work is not pending, and neither is anything that work schedules) when
//
//   - its timers add up to more than BUDGET ms (a 5 s timer is never waited
//     for; neither is the 30th turn of a 100 ms retry chain),
//   - a callback re-arms itself (setTimeout(poll, 300) inside poll, a
//     requestAnimationFrame loop): a loop's first turn is followed, later
//     turns are not,
//   - or it comes from setInterval after the first tick: intervals are
//     recurring background work (clocks, pollers, carousels).
//
// This file keeps the bookkeeping (causes, pending work, the action window,
// the answer to the Go side); the wrappers of the page's APIs live beside
// it and reach it through window.__webserv.settleKit:
//
//   settle_callbacks.js   timers, intervals, animation frames, idle callbacks
//   settle_messages.js    MessageChannel messages
//   settle_requests.js    fetch, body reads, XMLHttpRequest
//   settle_navigation.js  navigations and new tabs a document asks for
//   settle_channels.js    replies on WebSockets, EventSources and workers
//
// Besides, this file follows the document's finite animations (CSS
// transitions and animations, Web Animations) that started after the
// action, and the frames rendered just after it; and it names the requests
// the document sends itself (`sent`), which the Go side leaves to this
// rule when it reads the proxy's log of every request of the context.
//
// Where the cause comes from:
//
//   - begin(k), called by the Go side before action k, makes k the latest
//     action and opens its action window; until the next state() call every
//     trusted input event (click, key, input, focus, scroll, popstate...)
//     runs with k's cause, whatever ran just before it;
//   - every wrapped callback (timers, frames, idle callbacks, XHR events,
//     fetch and body-read continuations, MessageChannel deliveries) runs with
//     the cause recorded when it was scheduled. The cause stays current after
//     the callback returns, so `await fetch(...)` continues in the fetch's
//     cause (native await resumes in the same microtask checkpoint);
//   - code that runs in a task none of these wrappers started (a dynamic
//     import() resolving, a script element executing, an image's load event)
//     has no known cause and is counted as caused by the latest action: when
//     unsure, the step waits. A private MessageChannel message clears the
//     current cause after every wrapped callback, so that such tasks do not
//     inherit the cause of whatever ran just before them.
//
// A document that never saw begin(k) is newer than action k (the action
// navigated, opened a tab or added an iframe): for it, state(k) counts the
// document's own start-up work (act 0), which is what a navigation or a reset
// waits for.
//
// Long-lived channels do not hold steps: an EventSource's or WebSocket's
// connection never counts, only the reply to what the action sent on it
// (settle_channels.js, bounded), a fetch body read as a stream stops counting once the
// headers arrive, and state(k, longMs) leaves out a request open longer than
// longMs once its server has answered a request of this document sent after
// it: the server is answering, yet holds this one (a long poll). A server
// that is merely slow (a loaded machine) answers nothing newer, and its
// requests are waited for. Requests of chains that are not followed (background polling,
// analytics beacons, intervals) are reported as `background` and never
// counted.
(function () {
  'use strict';
  const W = window.__webserv;
  if (!W || W.settle) return;
  const now = W.now;

  // Bounds of the rule (docs/envcore.md states them).
  const BUDGET = 2000; // ms of timer delay a chain may accumulate and still be followed
  const MIN_TIMER = 4; // what a timer costs at least (Chromium clamps nested timers to 4 ms)
  const FRAME_COST = 16; // an animation frame, at 60 Hz
  const IDLE_COST = 50; // an idle callback
  const MESSAGE_COST = 4; // a MessageChannel hop
  const OVERDUE = 1000; // a timer, frame or idle callback this late (a throttled document) may stop counting
  const MESSAGE_OVERDUE = 100; // a message undelivered this long (its port never started) may stop counting
  const REPLY = BUDGET; // ms a reply is waited for on a channel the action sent on (a WebSocket, a worker)
  const CHANNEL_REPLY = 1000; // ms an open EventSource or WebSocket is waited on after the answer to a request of the action that changes something

  // The originals this file uses, before any page script can replace them.
  const origAdd = EventTarget.prototype.addEventListener;
  const oSetTimeout = window.setTimeout;
  const oRAF = window.requestAnimationFrame;
  const OMessageChannel = window.MessageChannel;
  const oPortPost = typeof MessagePort === 'function' ? MessagePort.prototype.postMessage : null;
  const OPromise = Promise;
  const oClearTimeout = window.clearTimeout;


  function makeCause(act, spent, live, fn) {
    return { act: act, spent: spent, live: live, fn: fn };
  }

  // child is the cause of work that `parent` schedules at `cost` ms of timer
  // delay with callback fn (undefined for requests and messages, which keep
  // their parent's fn).
  // A callback that schedules itself again is a loop and stops the chain,
  // unless loops is set (animation frames: a progress loop that ends by
  // itself is followed while the chain is within its budget).
  function child(parent, cost, fn, loops) {
    const spent = parent.spent + cost;
    const loop = !loops && fn !== undefined && parent.fn === fn;
    return makeCause(parent.act, spent, parent.live && !loop && spent <= BUDGET, fn !== undefined ? fn : parent.fn);
  }

  const seen = new Set([0]); // actions begun in this document
  let latest = makeCause(0, 0, true, undefined); // root cause of the latest action (0: start-up)
  let cur = latest; // cause of the code running now; null: not known
  let acting = false; // between begin() and the next state()

  function current() {
    return cur || latest;
  }

  // A message on a private channel clears the current cause once the task
  // that set it (and its microtasks) is over.
  let resetQueued = false;
  let resetPort = null;
  if (OMessageChannel && oPortPost) {
    const ch = new OMessageChannel();
    ch.port1.onmessage = function () { resetQueued = false; cur = null; };
    resetPort = ch.port2;
  }

  function enter(c) {
    cur = c;
    if (resetPort && !resetQueued) {
      resetQueued = true;
      oPortPost.call(resetPort, null);
    }
  }

  // Pending work, by number. Requests are kept whatever their cause (for
  // the `background` count); other kinds only when their chain is followed.
  const pending = new Map(); // id -> {kind, act, live, start, expires, what, method, url}
  const lastRequest = new Map(); // act -> time a followed request of it last started or ended
  const answered = new Map(); // origin -> latest start of a request its server answered
  const tracked = new Map(); // act -> how many followed items it has had
  let seq = 0;

  // The requests this document sends itself (fetch, XHR, beacons), by
  // "METHOD URL": the Go side also sees every request of the browser
  // context in its proxy's log, and leaves these to this file's rule
  // (background chains, long polls). Kept for the latest SENT_KEEP.
  const SENT_KEEP = 200;
  const SENT_MARGIN = 1000; // ms before begin(k) that state(k) names requests from
  const sent = []; // [time, key]
  let beganAt = 0; // when the latest action began in this document
  function note(method, url) {
    sent.push([now(), method + ' ' + String(url).split('#')[0]]);
    if (sent.length > SENT_KEEP) sent.splice(0, sent.length - SENT_KEEP);
  }

  function track(c, item) {
    if (!c.live && item.kind !== 'request') return 0;
    const id = ++seq;
    item.act = c.act;
    item.live = c.live;
    item.start = now();
    pending.set(id, item);
    if (item.kind === 'request' && item.what !== 'body') note(item.method, item.url);
    if (c.live && !item.quiet) {
      tracked.set(c.act, (tracked.get(c.act) || 0) + 1);
      if (item.kind === 'request') lastRequest.set(c.act, item.start);
    }
    if (c.live) poke();
    return id;
  }

  function untrack(id) {
    const item = pending.get(id);
    if (!item) return;
    pending.delete(id);
    if (item.kind === 'request' && item.live) lastRequest.set(item.act, now());
    if (item.replies) { // the channel waits a change started: from its answer on
      const until = now() + CHANNEL_REPLY;
      for (const r of item.replies) {
        const w = pending.get(r);
        if (w) w.expires = Math.max(w.expires, until);
      }
    }
    poke();
  }

  // Waiters: the Go side's settle does not poll this document every few
  // milliseconds; it asks wait(), which answers when the work is done (or
  // at a cap), and is woken here whenever pending work starts or ends, in
  // this document or a same-origin frame (whose waiters are its parent's).
  // A wake-up runs in a task of its own, after the callback that caused it
  // and its microtasks.
  const waiters = new Set();
  const EXTERNAL_POLL = 20; // ms between answers while a tab or navigation is awaited
  let poked = false;
  function poke() {
    if (waiters.size > 0 && !poked) {
      poked = true;
      oSetTimeout.call(window, function () {
        poked = false;
        for (const w of Array.from(waiters)) w();
      }, 0);
    }
    if (window.parent !== window) {
      try { const s = window.parent.__webserv && window.parent.__webserv.settle; if (s) s.poke(); } catch (e) { /* another origin */ }
    }
  }

  // answer(id) untracks request id, which its server answered.
  function answer(id) {
    const item = pending.get(id);
    if (item && item.start > (answered.get(item.origin) || -Infinity)) answered.set(item.origin, item.start);
    untrack(id);
  }

  // held(item) tells a long poll from a slow server: the server of request
  // item has answered a request sent after it.
  function held(item) {
    return (answered.get(item.origin) || -Infinity) > item.start;
  }

  // The action window: trusted input events during an action are the action's doing. Capture
  // listeners on window, registered before any page script, run first.
  const INPUT_EVENTS = [
    'pointerdown', 'pointerup', 'pointermove', 'pointerover', 'pointerout', 'pointerenter', 'pointerleave', 'pointercancel',
    'mousedown', 'mouseup', 'mousemove', 'mouseover', 'mouseout', 'mouseenter', 'mouseleave',
    'click', 'auxclick', 'dblclick', 'contextmenu', 'wheel', 'scroll', 'scrollend',
    'keydown', 'keypress', 'keyup', 'beforeinput', 'input', 'change', 'select', 'selectionchange',
    'compositionstart', 'compositionupdate', 'compositionend',
    'focus', 'blur', 'focusin', 'focusout', 'submit', 'reset', 'invalid', 'toggle',
    'popstate', 'hashchange', 'visibilitychange', 'paste', 'copy', 'cut',
    'touchstart', 'touchmove', 'touchend', 'dragstart', 'drag', 'dragend', 'drop',
  ];
  const onInput = function (ev) {
    if (acting && ev.isTrusted) enter(latest);
  };
  for (let i = 0; i < INPUT_EVENTS.length; i++) {
    origAdd.call(window, INPUT_EVENTS[i], onInput, { capture: true, passive: true });
  }

  function sameOriginFrames(win, fn) {
    for (let i = 0; i < win.frames.length; i++) {
      let w;
      try { w = win.frames[i].__webserv; } catch (e) { continue; } // cross-origin frame
      if (w && w.settle) fn(w.settle);
    }
  }

  // Overdue work. A timer, frame, idle callback or message past its
  // expiry stops counting only once a probe scheduled after that moment has
  // run while the item still has not: a timer of ours, or for a message a
  // message on a channel of ours. A page that is merely late (a loaded
  // machine, a long task) runs the item first, since it was due first; a
  // throttled frame, a port never started or a busy page's idle callback
  // lets the probe through and the item behind. An answer to the Go side's
  // poll can come before a late timer has run, so lateness alone is not
  // proof. A navigation's bridge is the exception: past it, the browser
  // should long have reported the load (NAV_BRIDGE, settle_navigation.js).
  const probeQueue = [];
  const probePort = OMessageChannel && oPortPost ? (function () {
    const ch = new OMessageChannel();
    ch.port1.onmessage = function () { const fn = probeQueue.shift(); if (fn) fn(); };
    return ch.port2;
  })() : null;

  function overdue(item, t) {
    if (t <= item.expires) return false;
    if (item.kind === 'navigation' || item.kind === 'reply') return true;
    if (item.probe) return item.probe.ran;
    const p = item.probe = { ran: false };
    const ran = function () { p.ran = true; };
    if (item.kind === 'message' && probePort) {
      probeQueue.push(ran);
      oPortPost.call(probePort, null);
    } else {
      oSetTimeout.call(window, ran, 0);
    }
    return false;
  }

  // Open channels (EventSource, WebSocket; settle_channels.js) by the
  // function that makes one wait for its next message: when the action
  // sends a request that changes something (not GET or HEAD), its answer
  // may come over one of them (a chat message posted, the reply pushed).
  // changed(c) answers the pending ids of those waits; they last until
  // CHANNEL_REPLY ms after the request that changed something is answered
  // (untrack), not after it was sent: on a starved host its answer is late,
  // and the push that follows it as late.
  const channels = new Set();
  function changed(c) {
    const ids = [];
    if (!c.live) return ids;
    for (const expect of channels) {
      const id = expect(c, CHANNEL_REPLY);
      if (id) ids.push(id);
    }
    return ids;
  }

  // Animations. A finite CSS transition, CSS animation or Web Animation
  // that started after the action began (in a document newer than the
  // action: any) and lasts at most BUDGET ms is pending until it has
  // finished and the two frames after its end have rendered, so what its
  // end event or finished promise does is seen; infinite ones never are.
  const hasAnimations = typeof document.getAnimations === 'function';
  let beganTimeline = 0; // document.timeline's time when the latest action began
  const watched = new Set(); // animations seen pending, reported once more after they end
  function animations(fromTimeline, t, acc) {
    if (!hasAnimations) return 0;
    let list = [];
    try { list = document.getAnimations(); } catch (e) { /* none */ }
    for (let i = 0; i < list.length; i++) {
      const a = list[i];
      if (a.playState !== 'running' || watched.has(a)) continue;
      let timing;
      try { timing = a.effect && a.effect.getComputedTiming(); } catch (e) { continue; }
      if (timing && timing.endTime <= BUDGET) watched.add(a); // not infinite, not too long
    }
    let n = 0;
    for (const a of watched) {
      if (a.startTime !== null && a.startTime < fromTimeline) { // an earlier action's
        if (a.playState !== 'running') watched.delete(a);
        continue;
      }
      let left = 0;
      if (a.playState === 'running') {
        const timing = a.effect.getComputedTiming();
        left = Math.max(0, timing.endTime - (timing.localTime || 0));
      } else {
        watched.delete(a); // finished, cancelled or paused: this poll is its last
        if (a.playState === 'paused') continue;
        // Its end event (transitionend, animationend) and finished promise
        // come with the next rendered frame, which on a loaded host can be
        // later than any fixed wait: that frame is pending, as the frames
        // after an action are.
        framesAfter('the frame after an animation ended', ANIMATION_FRAMES_OVERDUE);
      }
      n++;
      acc.wake = Math.min(acc.wake, left);
      if (acc.items.length < 8) {
        const name = a.transitionProperty ? 'transition ' + a.transitionProperty : a.animationName ? 'animation ' + a.animationName : 'animation';
        acc.items.push({ kind: 'animation', what: name + ' (' + Math.round(left) + 'ms left)', method: '', url: '', ms: Math.round(a.currentTime || 0) });
      }
    }
    return n;
  }

  // The frames after the action. What an action changes is rendered in
  // the next frames, and with them run what rendering starts: intersection
  // observers (lazy loading after a scroll), resize observers, the
  // transitions a style change creates. The first poll after the action
  // makes the next two frames pending (two: an observer's callback is a
  // task queued while the first renders); they do not make the action's
  // work "caused". A document that renders no frames (hidden) lets them go
  // past FRAMES_OVERDUE, as overdue work.
  const FRAMES_OVERDUE = 100;
  // An animation that ran was rendering, so its document renders frames:
  // the frame after its end is let go only on a host starved that long.
  const ANIMATION_FRAMES_OVERDUE = 1000;
  function framesAfter(what, overdue) {
    if (typeof oRAF !== 'function') return;
    const id = track(latest, { kind: 'frames', what: what, quiet: true, expires: now() + overdue });
    oRAF.call(window, function () { oRAF.call(window, function () { untrack(id); }); });
  }
  function afterFrames() {
    framesAfter('the frames after the action', FRAMES_OVERDUE);
  }

  // Frames of another origin. This document cannot read their trackers,
  // and a postMessage the action sent one is a task in that frame, not
  // yet run when the action ends: what its handler starts (a fetch, which
  // the Go side then sees in the proxy's log) could begin after the idle
  // window. So the first poll after the action posts each such frame a
  // probe; messages from one window to another arrive in order, so when
  // the frame's bundle answers, what the action posted before has been
  // handled. Until then (at most PROBE_OVERDUE, for a frame without the
  // bundle: a sandboxed frame that may not run scripts) the frame is
  // reported with the frames after the action. The bound is wide because
  // a frame with the bundle answers within PROBE_HOLD on a healthy host,
  // while on a starved one 300 ms let the action's message go unhandled
  // (a miss seen at load 50). The probe and its answer are stopped before
  // any page listener sees them.
  const PROBE_OVERDUE = 1000;
  const PROBE_HOLD = 100;
  const probes = new Map(); // probe number -> pending id
  let probeSeq = 0;
  origAdd.call(window, 'message', function (ev) {
    const d = ev.data;
    if (!d || typeof d !== 'object') return;
    if (typeof d.__webservProbe === 'number') {
      ev.stopImmediatePropagation();
      // Answer once the requests this frame has in flight are done, or
      // PROBE_HOLD ms on (by then they reach the proxy, whose log the Go
      // side reads): a fetch just started is not yet in that log.
      const src = ev.source;
      // Only requests just started (by the message the probe follows,
      // most likely): a poller's long request does not hold the answer.
      const held = [];
      const t = now();
      for (const [id, item] of pending) if (item.kind === 'request' && item.start > t - PROBE_HOLD) held.push(id);
      const until = t + PROBE_HOLD;
      const answer = function () {
        if (now() < until && held.some(function (id) { return pending.has(id); })) { oSetTimeout.call(window, answer, 10); return; }
        try { src.postMessage({ __webservProbeDone: d.__webservProbe }, '*'); } catch (e) { /* gone */ }
      };
      answer();
    } else if (typeof d.__webservProbeDone === 'number') {
      ev.stopImmediatePropagation();
      const id = probes.get(d.__webservProbeDone);
      if (id) { probes.delete(d.__webservProbeDone); untrack(id); }
    }
  }, { capture: true });
  function probeFrames() {
    for (let i = 0; i < window.frames.length; i++) {
      const w = window.frames[i];
      try { if (w.document) continue; } catch (e) { /* another origin */ }
      const n = ++probeSeq;
      const id = track(latest, { kind: 'frames', what: 'a frame of another origin', quiet: true, expires: now() + PROBE_OVERDUE });
      probes.set(n, id);
      try { w.postMessage({ __webservProbe: n }, '*'); } catch (e) { probes.delete(n); untrack(id); }
    }
  }

  // own(k, longMs) is this document's part of state(k, longMs).
  function own(k, longMs, acc, loaded) {
    const act = seen.has(k) ? k : 0;
    const t = now();
    for (const [id, item] of pending) {
      if (item.kind === 'tab' && ((item.ev && item.ev.defaultPrevented) || (item.win && item.win.closed) || t > item.expires)) {
        pending.delete(id); // cancelled, closed, or refused
        continue;
      }
      if (item.kind === 'request' && (!item.live || item.act !== act)) {
        acc.background++;
        continue;
      }
      if (item.act !== act) continue;
      if (item.kind === 'navigation' && loaded) continue; // the browser saw it start and end
      if (item.kind === 'navigation' || item.kind === 'tab') acc.external++;
      if (item.kind === 'frames') { // reported apart, let go once late (no rendering)
        if (t > item.expires) pending.delete(id); else acc.frames++;
        continue;
      }
      const age = t - item.start;
      if (item.kind === 'request') {
        if (age > longMs && held(item)) { acc.long++; continue; }
        acc.requests++;
      } else if (overdue(item, t)) {
        continue;
      }
      acc.pending++;
      // A timer cannot end before it is due; anything else but a request
      // may end any moment. (A request's end restarts the idle window, so
      // the Go side loses nothing by asking later.)
      if (item.kind !== 'request') acc.wake = Math.min(acc.wake, item.due > t ? item.due - t : 0);
      if (acc.items.length < 8) {
        acc.items.push({ kind: item.kind, what: item.what, method: item.method || '', url: item.url || '', ms: Math.round(age) });
      }
    }
    const anim = animations(act === k ? beganTimeline : -Infinity, t, acc);
    acc.pending += anim;
    if (lastRequest.has(act)) acc.quiet = Math.min(acc.quiet, t - lastRequest.get(act));
    acc.tracked += (tracked.get(act) || 0) + anim;
    // Since a little before the action began: the Go side's log starts at
    // the action's start, a moment before this document hears of it.
    const from = act === k ? beganAt - SENT_MARGIN : 0;
    for (let i = sent.length - 1; i >= 0 && sent[i][0] >= from; i--) acc.sent.push(sent[i][1]);
  }

  W.settle = {
    // begin(k) is called before action k: k becomes the latest action of
    // this document and of its same-origin frames, and its window opens.
    begin: function (k) {
      seen.add(k);
      beganAt = now();
      beganTimeline = (document.timeline && document.timeline.currentTime) || 0;
      latest = makeCause(k, 0, true, undefined);
      acting = true;
      cur = latest;
      for (const a of tracked.keys()) if (a !== k && a !== 0) tracked.delete(a);
      for (const a of lastRequest.keys()) if (a !== k && a !== 0) lastRequest.delete(a);
      sameOriginFrames(window, function (s) { s.begin(k); });
      return true;
    },
    // enterAction() gives the code that runs next (an action's own dispatch
    // of input and change events, from actions.js) the latest action's cause
    // while its window is open.
    enterAction: function () {
      if (acting) enter(latest);
    },
    // state(k, longMs) answers the Go side's settle question for action k and
    // closes the action window: what k caused that is still pending, in this
    // document and its same-origin frames (a document that never saw k
    // reports its start-up work instead); requests open longer than longMs
    // while their server answered later ones apart as `long` (long polls); requests of other chains as `background`; quiet_ms
    // since a followed request last started or ended; wake_ms, how soon the
    // first pending item other than a request is due (0: any moment; -1:
    // only requests are pending); `tracked`, how many
    // items the action has caused in all. `loaded` says the browser has
    // reported a document load starting and ending since the action: the
    // navigations the action started are over.
    state: function (k, longMs, loaded) {
      const acc = { pending: 0, requests: 0, long: 0, background: 0, quiet: Infinity, wake: Infinity, tracked: 0, items: [], sent: [], frames: 0, external: 0 };
      const walk = function (s) { s.own(k, longMs || 5000, acc, !!loaded); s.frames(walk); };
      walk(W.settle);
      return {
        pending: acc.pending,
        requests: acc.requests,
        long: acc.long,
        background: acc.background,
        quiet_ms: acc.quiet === Infinity ? 1e9 : Math.round(acc.quiet),
        wake_ms: acc.wake === Infinity ? -1 : Math.ceil(acc.wake),
        tracked: acc.tracked,
        items: acc.items,
        sent: acc.sent,
        frames: acc.frames,
        external: acc.external,
        ready: document.readyState,
      };
    },
    // wait(k, longMs, loaded, holdMs, idleMs, capMs) is state(k, longMs,
    // loaded) once it is worth an answer, as a promise: when nothing k
    // caused is pending any more, its last request started or ended idleMs
    // ago or more and holdMs have passed since the call (what the Go side
    // still needs of its own idle window); or at capMs, whatever is
    // pending then. It looks again whenever work starts or ends, when the
    // first pending timer, animation or frame is due, and at those
    // deadlines: one round trip per step for most actions instead of one
    // per poll.
    wait: function (k, longMs, loaded, holdMs, idleMs, capMs) {
      const start = now();
      let st = W.settle.state(k, longMs, loaded);
      // Only the Go side sees a new tab appear or a navigation's load
      // end (`external` items): while one is pending, answer as often as
      // it used to poll.
      const cap = st.external > 0 ? Math.min(capMs, EXTERNAL_POLL) : capMs;
      const ready = function (s, t) {
        if (s.pending > 0 || s.frames > 0) return -1;
        return Math.max(0, start + holdMs - t, idleMs - s.quiet_ms);
      };
      // held_ms: how long this answer waited in the page, which the Go
      // side takes from its round trip to learn how late the browser is.
      st.held_ms = 0;
      if (cap <= 0 || ready(st, start) === 0) return st;
      return new OPromise(function (resolve) {
        let timer = 0;
        const schedule = function (t) {
          let next = ready(st, t);
          if (next === 0 || t - start >= cap) {
            waiters.delete(look);
            st.held_ms = Math.round(now() - start);
            resolve(st);
            return;
          }
          if (next < 0) {
            // Due work is looked at once it is due: a timer has run by
            // then (and woken this anyway); a finished animation, or work
            // that ends any moment, a frame later (an end event).
            next = st.wake_ms >= 0 ? Math.max(st.wake_ms + 1, MIN_TIMER) : cap;
            if (st.frames > 0 || st.wake_ms === 0) next = Math.max(next, FRAME_COST);
          }
          timer = oSetTimeout.call(window, look, Math.min(next, start + cap - t));
        };
        const look = function () {
          if (timer) oClearTimeout.call(window, timer);
          timer = 0;
          st = W.settle.state(k, longMs, loaded);
          schedule(now());
        };
        waiters.add(look);
        schedule(now());
      });
    },
    poke: poke,
    own: function (k, longMs, acc, loaded) {
      if (acting && seen.has(k)) { afterFrames(); probeFrames(); }
      acting = false;
      own(k, longMs, acc, loaded);
    },
    frames: function (fn) { sameOriginFrames(window, fn); },
  };

  // The kit the settle_*.js files wrap the page's APIs with (they run
  // next, before any page script): this file's bookkeeping and the bounds
  // of the rule. claim(name) is true only the first time a file asks in
  // this document, so a bundle run twice wraps nothing twice.
  const claimed = new Set();
  Object.defineProperty(W, 'settleKit', {
    value: Object.freeze({
      now, makeCause, child, current, enter, track, untrack, answer, note, channels, changed,
      MIN_TIMER, FRAME_COST, IDLE_COST, MESSAGE_COST, OVERDUE, MESSAGE_OVERDUE, REPLY,
      claim: function (name) {
        if (claimed.has(name)) return false;
        claimed.add(name);
        return true;
      },
    }),
  });
})();

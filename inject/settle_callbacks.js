// settle_callbacks.js — follows the callbacks a page schedules: timers,
// intervals, animation frames and idle callbacks (the rule: settle.js).
//
// Each wrapper runs its callback with the cause of the code that scheduled
// it, one timer delay (at least MIN_TIMER), frame or idle callback further
// down the chain, and counts the callback as pending, while the chain is
// followed, until it runs or is cancelled. An interval's first tick
// continues its chain; later ticks are background work.
(function () {
  'use strict';
  const K = window.__webserv && window.__webserv.settleKit;
  if (!K || !K.claim('callbacks')) return;
  const { now, makeCause, child, current, enter, track, untrack, MIN_TIMER, FRAME_COST, IDLE_COST, OVERDUE } = K;

  // The originals, before any page script can replace them.
  const oSetTimeout = window.setTimeout;
  const oClearTimeout = window.clearTimeout;
  const oSetInterval = window.setInterval;
  const oClearInterval = window.clearInterval;

  const timerItems = new Map(); // timer handle -> pending id

  function clearTimer(handle) {
    const id = timerItems.get(handle);
    if (id) {
      timerItems.delete(handle);
      untrack(id);
    }
  }

  window.setTimeout = function setTimeout(fn, delay) {
    if (typeof fn !== 'function') return oSetTimeout.apply(window, arguments);
    const d = Math.max(Number(delay) || 0, 0);
    const c = child(current(), Math.max(d, MIN_TIMER), fn);
    const args = Array.prototype.slice.call(arguments, 2);
    let id = 0;
    const handle = oSetTimeout.call(window, function () {
      clearTimer(handle);
      enter(c);
      return fn.apply(this, args);
    }, delay);
    id = track(c, { kind: 'timer', what: 'setTimeout ' + Math.round(d) + 'ms', due: now() + d, expires: now() + d + OVERDUE });
    if (id) timerItems.set(handle, id);
    return handle;
  };
  window.clearTimeout = function clearTimeout(handle) {
    clearTimer(handle);
    return oClearTimeout.call(window, handle);
  };

  window.setInterval = function setInterval(fn, period) {
    if (typeof fn !== 'function') return oSetInterval.apply(window, arguments);
    const parent = current();
    const first = child(parent, Math.max(Number(period) || 0, MIN_TIMER), fn);
    const later = makeCause(first.act, first.spent, false, fn);
    const args = Array.prototype.slice.call(arguments, 2);
    let ticks = 0;
    return oSetInterval.call(window, function () {
      enter(ticks++ === 0 ? first : later);
      return fn.apply(this, args);
    }, period);
  };
  window.clearInterval = function clearInterval(handle) {
    clearTimer(handle); // the two clear functions share one id space
    return oClearInterval.call(window, handle);
  };

  // Animation frames and idle callbacks: schedulers that take a callback
  // (and options) and answer a handle, each with its cancel function. A
  // callback is pending, at cost in timer delay, until it runs or is
  // cancelled. The wrappers are methods named as the originals are.
  function followScheduler(request, cancel, kind, cost, loops) {
    const oRequest = window[request], oCancel = window[cancel];
    if (typeof oRequest !== 'function') return;
    const items = new Map(); // handle -> pending id
    const wrappers = {
      [request](fn) {
        if (typeof fn !== 'function') return oRequest.apply(window, arguments);
        const c = child(current(), cost, fn, loops);
        let id = 0;
        // The callback's one argument: a timestamp or an idle deadline. An
        // idle callback's options pass through.
        const handle = oRequest.call(window, function (arg) {
          if (id) { items.delete(handle); untrack(id); }
          enter(c);
          return fn.call(this, arg);
        }, arguments[1]);
        id = track(c, { kind: kind, what: request, expires: now() + OVERDUE });
        if (id) items.set(handle, id);
        return handle;
      },
      [cancel](handle) {
        const id = items.get(handle);
        if (id) { items.delete(handle); untrack(id); }
        return oCancel.call(window, handle);
      },
    };
    window[request] = wrappers[request];
    window[cancel] = wrappers[cancel];
  }
  // An animation-frame loop (a callback that asks for the next frame) is
  // followed while its chain is within budget: a progress loop that ends by
  // itself is waited for, an endless one for at most the budget.
  followScheduler('requestAnimationFrame', 'cancelAnimationFrame', 'frame', FRAME_COST, true);
  followScheduler('requestIdleCallback', 'cancelIdleCallback', 'idle', IDLE_COST, false);
})();

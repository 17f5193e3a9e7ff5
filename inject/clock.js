// clock.js — a deterministic clock and deterministic randomness for the
// pages of a seeded episode whose site opts in (envcore.ResetOptions.Clock;
// MiniWoB's tasks do). It is registered after the bundle, so the bundle's
// own timing (settle.js) keeps the real clock, and before every page script.
//
// What it makes deterministic, from the seed alone:
//   - Math.random: a seeded generator (sfc32, its state from splitmix32).
//   - Date (new Date(), Date(), Date.now), performance.now,
//     performance.timeOrigin, an event's timeStamp and the time an
//     animation-frame callback is given: a virtual clock that starts at a
//     fixed epoch (EPOCH) and moves only when the page reads it (TICK each
//     read: a busy loop waiting for time to pass still ends) and when a
//     timer, interval tick or animation frame of the page runs (to its due
//     time), never with the host's time. Two runs whose pages read the
//     clock and run their callbacks in the same order read the same times.
//   - with cfg.crypto only (a site that needs no real entropy):
//     crypto.getRandomValues and crypto.randomUUID, from a second stream
//     of the same seed.
// Timers still fire after their real delays: a page that changes by itself
// between steps (an endless interval, an animation longer than a step's
// settling) is as repeatable as the number of its timers' firings is.
//
// __webserv.clock.reset(seed) puts the clock and the generators back at
// their start for seed: a page that starts its episode itself (MiniWoB's
// start.js) calls it, so that a page started in place reads the same as a
// fresh load.
//
// Evaluated as an expression: (CLOCK)({seed: N, crypto: bool, realTime: bool}).
(function (cfg) {
  'use strict';
  const W = window.__webserv;
  if (!W || W.clock) return;
  const EPOCH = Date.UTC(2024, 0, 1); // 2024-01-01T00:00:00Z
  const TICK = 1; // ms the clock moves at each read

  // splitmix32 turns a seed into well-mixed words; sfc32 is the generator.
  function splitmix(seed) {
    let s = seed >>> 0;
    return function () {
      s = (s + 0x9e3779b9) >>> 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      return (z ^ (z >>> 16)) >>> 0;
    };
  }
  function sfc32(seed, stream) {
    const mix = splitmix((seed ^ Math.imul(stream, 0x632be5ab)) >>> 0);
    let a = mix(), b = mix(), c = mix(), d = 1;
    const next = function () {
      const t = (((a + b) >>> 0) + d) >>> 0;
      d = (d + 1) >>> 0;
      a = b ^ (b >>> 9);
      b = (c + (c << 3)) >>> 0;
      c = ((c << 21) | (c >>> 11)) >>> 0;
      c = (c + t) >>> 0;
      return t;
    };
    for (let i = 0; i < 12; i++) next();
    return next;
  }
  // The seed as a 32-bit word (seeds above 2^32 keep their high bits too).
  function word(seed) {
    const n = Math.floor(Number(seed) || 0);
    return ((n >>> 0) ^ Math.floor(n / 4294967296)) >>> 0;
  }

  let t = 0; // virtual ms since the time origin
  // The clock's timeline: a reset starts a new one, on which the callbacks
  // set before it (at load, in the last episode) have no due time, so
  // they move the clock no more (a fresh load and a restart in place then
  // agree).
  let timeline = 0;
  let random, bytes;
  function reset(seed) {
    t = 0;
    timeline++;
    random = sfc32(word(seed), 1);
    bytes = sfc32(word(seed), 2);
  }
  reset(cfg.seed);
  function read() {
    const r = t;
    t += TICK;
    return r;
  }

  Math.random = function random_() { return random() / 4294967296; };

  // cfg.realTime: a page whose task measures real time (how long the
  // pointer stayed on a target, a wait between two clicks) keeps the real
  // clock: a virtual one would pay an agent for time it did not spend.
  if (!cfg.realTime) installClock();
  function installClock() {
    const RealDate = Date;
    const VirtualDate = function Date() {
      if (!new.target) return new RealDate(EPOCH + read()).toString();
      if (arguments.length === 0) return Reflect.construct(RealDate, [EPOCH + read()], new.target);
      return Reflect.construct(RealDate, Array.prototype.slice.call(arguments), new.target);
    };
    VirtualDate.prototype = RealDate.prototype;
    VirtualDate.now = function now() { return Math.floor(EPOCH + read()); };
    VirtualDate.parse = RealDate.parse;
    VirtualDate.UTC = RealDate.UTC;
    Object.defineProperty(RealDate.prototype, 'constructor', { value: VirtualDate, writable: true, configurable: true });
    window.Date = VirtualDate;

    const perf = Object.getPrototypeOf(performance);
    Object.defineProperty(perf, 'now', { value: function now() { return read(); }, writable: true, configurable: true });
    Object.defineProperty(perf, 'timeOrigin', { get: function () { return EPOCH; }, configurable: true });
    Object.defineProperty(Event.prototype, 'timeStamp', { get: function () { return read(); }, configurable: true });

    // A timer's callback runs at its due time on the virtual clock (the
    // time it was set plus its delay, an interval's k-th tick k periods
    // on), an animation frame's a frame (FRAME ms) after it was asked for:
    // an animation that steps by the time it reads (jQuery's) moves as far
    // per tick as it would on the real clock, and finishes in as many.
    const FRAME = 16;
    const slice = Array.prototype.slice;
    const oSetTimeout = window.setTimeout, oSetInterval = window.setInterval;
    window.setTimeout = function setTimeout(fn, delay) {
      if (typeof fn !== 'function') return oSetTimeout.apply(window, arguments);
      const due = t + Math.max(Number(delay) || 0, 0), on = timeline;
      const args = slice.call(arguments, 2);
      return oSetTimeout.call(window, function () {
        if (on === timeline && t < due) t = due;
        return fn.apply(this, args);
      }, delay);
    };
    window.setInterval = function setInterval(fn, period) {
      if (typeof fn !== 'function') return oSetInterval.apply(window, arguments);
      const p = Math.max(Number(period) || 0, 0);
      let due = t + p;
      const on = timeline, args = slice.call(arguments, 2);
      return oSetInterval.call(window, function () {
        if (on === timeline && t < due) t = due;
        due += p;
        return fn.apply(this, args);
      }, period);
    };
    const oRAF = window.requestAnimationFrame;
    if (typeof oRAF === 'function') {
      window.requestAnimationFrame = function requestAnimationFrame(fn) {
        if (typeof fn !== 'function') return oRAF.apply(window, arguments);
        const due = t + FRAME, on = timeline;
        return oRAF.call(window, function () {
          if (on === timeline && t < due) t = due;
          return fn.call(this, t);
        });
      };
    }
  }

  if (cfg.crypto && window.crypto) {
    const C = Object.getPrototypeOf(window.crypto);
    const oGet = C.getRandomValues;
    Object.defineProperty(C, 'getRandomValues', {
      value: function getRandomValues(array) {
        // The real one checks the argument (an integer typed array of at
        // most 65536 bytes) and throws as the page expects; its bytes are
        // then replaced.
        oGet.call(this, array);
        const u8 = new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
        for (let i = 0; i < u8.length; i += 4) {
          const w = bytes();
          for (let k = 0; k < 4 && i + k < u8.length; k++) u8[i + k] = (w >>> (8 * k)) & 0xff;
        }
        return array;
      },
      writable: true, configurable: true,
    });
    if (typeof C.randomUUID === 'function') {
      Object.defineProperty(C, 'randomUUID', {
        value: function randomUUID() {
          const b = window.crypto.getRandomValues(new Uint8Array(16));
          b[6] = (b[6] & 0x0f) | 0x40; // version 4
          b[8] = (b[8] & 0x3f) | 0x80; // the RFC 4122 variant
          const h = Array.prototype.map.call(b, function (x) { return (x + 0x100).toString(16).slice(1); }).join('');
          return h.slice(0, 8) + '-' + h.slice(8, 12) + '-' + h.slice(12, 16) + '-' + h.slice(16, 20) + '-' + h.slice(20);
        },
        writable: true, configurable: true,
      });
    }
  }

  W.clock = Object.freeze({ reset: reset, crypto: !!cfg.crypto });
})

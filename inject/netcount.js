// netcount.js — counts the page's in-flight XHR and fetch requests.
//
// After an action the Go side waits until this document (and its same-origin
// iframes) has had zero outstanding requests for an idle window. That needs
// two facts, both kept here: which requests are open right now, and when the
// set last changed. Requests are tracked from the call (fetch(), xhr.send())
// until the response is complete: for fetch, until the promise settles and, if
// the page reads the body with json()/text()/..., until that read settles too;
// for XHR, until `loadend`.
//
// Long-lived channels must not hold every step: EventSource and WebSocket are
// not wrapped at all, a fetch body read through response.body.getReader() (a
// stream) stops counting once the headers arrive, and state(longMs) leaves out
// any request open longer than longMs (long polling).
(function () {
  'use strict';
  const W = window.__webserv;
  if (!W || W.net) return;

  const open = new Map(); // request number -> {kind, method, url, start}
  let seq = 0;
  let lastChange = W.now();
  let total = 0;

  function begin(kind, method, url) {
    const id = ++seq;
    open.set(id, { kind: kind, method: String(method || 'GET').toUpperCase(), url: String(url), start: W.now() });
    lastChange = W.now();
    total++;
    return id;
  }

  function end(id) {
    if (open.delete(id)) lastChange = W.now();
  }

  // --- fetch -------------------------------------------------------------
  const origFetch = window.fetch;
  if (typeof origFetch === 'function') {
    const wrapped = function fetch(input, init) {
      let method = (init && init.method) || (input && typeof input === 'object' && input.method) || 'GET';
      let url = (input && typeof input === 'object' && 'url' in input) ? input.url : input;
      const id = begin('fetch', method, url);
      let p;
      try {
        p = origFetch.apply(this, arguments);
      } catch (e) {
        end(id);
        throw e;
      }
      return p.then(
        function (resp) { end(id); return resp; },
        function (err) { end(id); throw err; });
    };
    window.fetch = wrapped;
  }

  // Body reads: a response whose body is read with one of these methods keeps
  // counting until the read completes (large or slow bodies).
  if (typeof Response === 'function') {
    ['json', 'text', 'arrayBuffer', 'blob', 'formData'].forEach(function (name) {
      const orig = Response.prototype[name];
      if (typeof orig !== 'function') return;
      Response.prototype[name] = function () {
        const id = begin('body', 'READ', this.url);
        let p;
        try {
          p = orig.apply(this, arguments);
        } catch (e) {
          end(id);
          throw e;
        }
        return p.then(
          function (v) { end(id); return v; },
          function (err) { end(id); throw err; });
      };
    });
  }

  // --- XMLHttpRequest ----------------------------------------------------
  const XHR = window.XMLHttpRequest;
  if (typeof XHR === 'function') {
    const info = new WeakMap(); // xhr -> {method, url}
    const addListener = EventTarget.prototype.addEventListener; // the original: no hover marking
    const origOpen = XHR.prototype.open;
    const origSend = XHR.prototype.send;
    XHR.prototype.open = function (method, url) {
      info.set(this, { method: method, url: url });
      return origOpen.apply(this, arguments);
    };
    XHR.prototype.send = function () {
      const meta = info.get(this) || { method: 'GET', url: '' };
      const id = begin('xhr', meta.method, meta.url);
      addListener.call(this, 'loadend', function () { end(id); }, { once: true });
      try {
        return origSend.apply(this, arguments);
      } catch (e) {
        end(id);
        throw e;
      }
    };
  }

  // Collects the requests of `win` and of its same-origin frames into acc.
  // performance.now() has a different origin in every document, so each
  // frame's ages and quiet time are measured against that frame's own clock.
  function collect(win, longMs, acc) {
    let w;
    try { w = win.__webserv; } catch (e) { return; } // cross-origin frame
    if (!w || !w.net) return;
    const now = w.now();
    const own = w.net.snapshot();
    acc.quiet = Math.min(acc.quiet, now - own.lastChange);
    own.open.forEach(function (r) {
      const age = now - r.start;
      if (age > longMs) { acc.long++; return; }
      acc.inflight++;
      if (acc.pending.length < 5) acc.pending.push({ method: r.method, url: r.url, ms: Math.round(age) });
    });
    acc.total += own.total;
    for (let i = 0; i < win.frames.length; i++) collect(win.frames[i], longMs, acc);
  }

  W.net = {
    snapshot: function () {
      return { open: Array.from(open.values()), lastChange: lastChange, total: total };
    },
    // state(longMs) answers the Go side's settle poll: inflight requests (those
    // open longer than longMs are counted apart as `long`), quiet_ms since any
    // tracked request started or ended, a few pending requests for error
    // messages, and the document's readyState.
    state: function (longMs) {
      const acc = { inflight: 0, long: 0, quiet: Infinity, pending: [], total: 0 };
      collect(window, longMs || 5000, acc);
      return {
        inflight: acc.inflight,
        long: acc.long,
        quiet_ms: acc.quiet === Infinity ? 1e9 : Math.round(acc.quiet),
        pending: acc.pending,
        total: acc.total,
        ready: document.readyState,
      };
    },
  };
})();

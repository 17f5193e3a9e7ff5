// settle_requests.js — follows a page's requests: fetch, the body reads of
// its responses, and XMLHttpRequest (the rule: settle.js).
//
// A request is pending from the call until its answer or failure, whatever
// its cause; settle.js counts the followed ones and reports the rest as
// background. Its continuations (then-callbacks, XHR events) run with the
// cause of the code that sent it.
(function () {
  'use strict';
  const K = window.__webserv && window.__webserv.settleKit;
  if (!K || !K.claim('requests')) return;
  const { current, enter, track, untrack, answer, note, changed } = K;

  // The original, before any page script can replace it.
  const origAdd = EventTarget.prototype.addEventListener;

  // request tracks a request of kind 'fetch', 'body' or 'xhr' for cause c,
  // named by its absolute URL and grouped by origin (see held in settle.js).
  function request(c, kind, method, url) {
    let abs = String(url);
    let origin = '';
    try {
      const u = new URL(abs, document.baseURI);
      abs = u.href;
      origin = u.origin;
    } catch (e) { /* named as given */ }
    const m = String(method || 'GET').toUpperCase();
    // A request that changes something may be answered on an open channel
    // (settle.js, changed): those waits run from its answer on.
    const replies = kind !== 'body' && m !== 'GET' && m !== 'HEAD' ? changed(c) : null;
    return track(c, { kind: 'request', what: kind, method: m, url: abs, origin: origin, replies: replies && replies.length ? replies : null });
  }

  // follow calls orig (fetch, a body read) on self with args as request id
  // of cause c: it stops being pending when the call throws or its promise
  // settles (answered when it resolves), and what follows runs in cause c.
  function follow(c, id, orig, self, args) {
    let p;
    try {
      p = orig.apply(self, args);
    } catch (e) {
      untrack(id);
      throw e;
    }
    return p.then(
      function (v) { answer(id); enter(c); return v; },
      function (err) { untrack(id); enter(c); throw err; });
  }

  const origFetch = window.fetch;
  if (typeof origFetch === 'function') {
    window.fetch = function fetch(input, init) {
      const method = (init && init.method) || (input && typeof input === 'object' && input.method) || 'GET';
      const url = (input && typeof input === 'object' && 'url' in input) ? input.url : input;
      const c = current();
      return follow(c, request(c, 'fetch', method, url), origFetch, this, arguments);
    };
  }

  // Body reads: a response whose body is read with one of these methods keeps
  // counting until the read completes (large or slow bodies). A body read as
  // a stream (response.body.getReader()) is not counted.
  if (typeof Response === 'function') {
    ['json', 'text', 'arrayBuffer', 'blob', 'formData', 'bytes'].forEach(function (name) {
      const orig = Response.prototype[name];
      if (typeof orig !== 'function') return;
      Response.prototype[name] = function () {
        const c = current();
        return follow(c, request(c, 'body', 'READ', this.url), orig, this, arguments);
      };
    });
  }

  // Beacons are never waited for (the page cannot know when they end), but
  // noted, so the proxy's log of them is left to this rule too.
  if (typeof navigator === 'object' && typeof navigator.sendBeacon === 'function') {
    const origBeacon = navigator.sendBeacon;
    navigator.sendBeacon = function sendBeacon(url) {
      try { note('POST', new URL(String(url), document.baseURI).href); } catch (e) { /* not a URL: sends nothing */ }
      return origBeacon.apply(navigator, arguments);
    };
  }

  // XMLHttpRequest.
  // Listeners of ours, added when the object is made (before any of the
  // page's), restore the cause of send() for every event of the request.
  const OXHR = window.XMLHttpRequest;
  if (typeof OXHR === 'function') {
    const XHR_EVENTS = ['readystatechange', 'loadstart', 'progress', 'abort', 'error', 'load', 'timeout', 'loadend'];
    const info = new WeakMap(); // xhr -> {method, url, cause, id}
    const onEvent = function () {
      const m = info.get(this);
      if (m && m.cause) enter(m.cause);
    };
    const onEnd = function () {
      const m = info.get(this);
      if (m && m.id) {
        if (this.status > 0) answer(m.id); else untrack(m.id);
        m.id = 0;
      }
    };
    const XMLHttpRequest = function XMLHttpRequest() {
      const x = Reflect.construct(OXHR, arguments, new.target || XMLHttpRequest);
      for (let i = 0; i < XHR_EVENTS.length; i++) origAdd.call(x, XHR_EVENTS[i], onEvent);
      origAdd.call(x, 'loadend', onEnd);
      return x;
    };
    XMLHttpRequest.prototype = OXHR.prototype;
    Object.setPrototypeOf(XMLHttpRequest, OXHR); // the UNSENT...DONE constants
    window.XMLHttpRequest = XMLHttpRequest;
    const origOpen = OXHR.prototype.open;
    const origSend = OXHR.prototype.send;
    OXHR.prototype.open = function (method, url) {
      const m = info.get(this);
      if (m && m.id) untrack(m.id); // open() ends a request in flight without events
      info.set(this, { method: method, url: url, cause: null, id: 0 });
      return origOpen.apply(this, arguments);
    };
    OXHR.prototype.send = function () {
      let m = info.get(this);
      if (!m) {
        m = { method: 'GET', url: '', cause: null, id: 0 };
        info.set(this, m);
      }
      m.cause = current();
      m.id = request(m.cause, 'xhr', m.method, m.url);
      try {
        return origSend.apply(this, arguments);
      } catch (e) {
        untrack(m.id);
        m.id = 0;
        throw e;
      }
    };
  }

  // Images. An image the action asks for (its src set, by a property or
  // an attribute) is pending from that moment until its load or error
  // event, as a request: the proxy's log sees its request only once the
  // browser sends it, which on a loaded machine can be later than the idle
  // window, and what the page's load handler renders comes after the
  // response. Setting src again ends the previous one (it fires nothing);
  // requests' rules bound it (a long one whose server answers later ones
  // stops counting).
  const imgItems = new WeakMap(); // image -> pending id
  function imageAsked(img, url) {
    const prev = imgItems.get(img);
    if (prev) untrack(prev);
    imgItems.delete(img);
    if (url === null || url === undefined || String(url) === '') return;
    // A lazy image loads when scrolled to, maybe never: the proxy's log
    // sees it if it does.
    if (img.loading === 'lazy') return;
    const id = request(current(), 'image', 'GET', url);
    imgItems.set(img, id);
    const done = function (ev) {
      if (imgItems.get(img) !== id) return;
      imgItems.delete(img);
      if (ev.type === 'load') answer(id); else untrack(id);
    };
    origAdd.call(img, 'load', done, { once: true });
    origAdd.call(img, 'error', done, { once: true });
  }
  const srcDesc = Object.getOwnPropertyDescriptor(HTMLImageElement.prototype, 'src');
  if (srcDesc && srcDesc.set) {
    Object.defineProperty(HTMLImageElement.prototype, 'src', {
      configurable: true,
      enumerable: srcDesc.enumerable,
      get: srcDesc.get,
      set: function (v) {
        srcDesc.set.call(this, v);
        imageAsked(this, v);
      },
    });
  }
  const origSetAttribute = Element.prototype.setAttribute;
  Element.prototype.setAttribute = function (name, value) {
    const r = origSetAttribute.apply(this, arguments);
    if (this instanceof HTMLImageElement && String(name).toLowerCase() === 'src') imageAsked(this, value);
    return r;
  };

  // Scripts. A script element with a source that the action inserts is
  // pending from its insertion until its load or error event (after it
  // ran), for the same reason as an image. Only scripts the browser will
  // fetch: a classic or module script, not a noModule one, inserted once.
  const startedScripts = new WeakSet();
  const SCRIPT_TYPES = ['', 'module', 'text/javascript', 'application/javascript', 'text/ecmascript', 'application/ecmascript'];
  function scriptInserted(node) {
    if (!(node instanceof HTMLScriptElement) || startedScripts.has(node) || !node.isConnected) return;
    startedScripts.add(node);
    const src = node.getAttribute('src');
    if (!src || node.noModule || SCRIPT_TYPES.indexOf(String(node.type || '').trim().toLowerCase()) < 0) return;
    const id = request(current(), 'script', 'GET', node.src);
    const done = function (ev) {
      if (ev.type === 'load') answer(id); else untrack(id);
    };
    origAdd.call(node, 'load', done, { once: true });
    origAdd.call(node, 'error', done, { once: true });
  }
  // wrapInsert makes proto[name] look, at no cost for other nodes, for the
  // script elements among the nodes it inserts (its first `count`
  // arguments) and in the fragments among them (read before: a fragment
  // is empty once inserted). Only the one-node methods are wrapped: the
  // variadic ones (append, before...) take a page's spread of thousands of
  // nodes, which a wrapper's apply would have to pass on again. A script
  // they insert, or one inside an inserted element, is left to the
  // proxy's log.
  function wrapInsert(proto, name, count) {
    const orig = proto[name];
    if (typeof orig !== 'function') return;
    proto[name] = function () {
      let scripts = null;
      const n = Math.min(count, arguments.length);
      for (let i = 0; i < n; i++) {
        const node = arguments[i];
        if (node instanceof HTMLScriptElement) {
          (scripts || (scripts = [])).push(node);
        } else if (node instanceof DocumentFragment && node.firstElementChild) {
          const inner = node.querySelectorAll('script');
          for (let j = 0; j < inner.length; j++) (scripts || (scripts = [])).push(inner[j]);
        }
      }
      const r = orig.apply(this, arguments);
      if (scripts) for (let i = 0; i < scripts.length; i++) scriptInserted(scripts[i]);
      return r;
    };
  }
  wrapInsert(Node.prototype, 'appendChild', 1);
  wrapInsert(Node.prototype, 'insertBefore', 1);
  wrapInsert(Node.prototype, 'replaceChild', 1);
})();

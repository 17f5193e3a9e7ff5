// settle_channels.js — follows the replies on channels a page keeps open:
// WebSockets, EventSources and workers (the rule: settle.js).
//
// A channel's traffic is not a request that ends, so it never holds a step
// by itself: the page's tracker waits for one thing only, the first
// message that answers the action.
//
//   - The action sends on a WebSocket or posts to a worker: the channel is
//     pending until its next message (or its close or error), at most
//     REPLY ms; a WebSocket the action opens, until it is open.
//   - The action sends a request that changes something (not GET or HEAD,
//     settle_requests.js): its answer may be pushed over an open
//     EventSource or WebSocket instead, so each is pending until its next
//     message, at most CHANNEL_REPLY ms after the request is answered.
//
// What the message handler then does runs in the cause of the send it
// answers. Channels the action did not use are ignored.
(function () {
  'use strict';
  const K = window.__webserv && window.__webserv.settleKit;
  if (!K || !K.claim('channels')) return;
  const { now, current, enter, track, untrack, channels, REPLY } = K;

  // The original, before any page script can replace it.
  const origAdd = EventTarget.prototype.addEventListener;

  // follow makes channel ch (an object with message and end events) wait
  // for replies: it returns expect(c, bound, what), which tracks, for cause
  // c, the channel's next message as pending for at most bound ms (and
  // answers the pending id, 0 when c is not followed). Every
  // waiter ends at the next message, or at an end event.
  function follow(ch, name, endEvents) {
    let waiting = []; // [cause, pending id]
    const settle = function () {
      const w = waiting;
      waiting = [];
      for (let i = 0; i < w.length; i++) untrack(w[i][1]);
      return w.length ? w[0][0] : null;
    };
    origAdd.call(ch, 'message', function () {
      const c = settle();
      if (c) enter(c);
    });
    for (let i = 0; i < endEvents.length; i++) origAdd.call(ch, endEvents[i], settle);
    return function expect(c, bound, what) {
      const id = track(c, { kind: 'reply', what: (what || 'reply on ') + name, expires: now() + bound });
      if (id) waiting.push([c, id]);
      return id;
    };
  }

  // wrap replaces constructor name of window with one that calls make on
  // each new object (the prototype and statics stay the original's).
  function wrap(name, make) {
    const O = window[name];
    if (typeof O !== 'function') return;
    const W = function () {
      const x = Reflect.construct(O, arguments, new.target || W);
      make(x, arguments);
      return x;
    };
    W.prototype = O.prototype;
    Object.setPrototypeOf(W, O); // CONNECTING...CLOSED and the like
    Object.defineProperty(W, 'name', { value: name });
    window[name] = W;
  }

  const expects = new WeakMap(); // channel -> its expect function

  function url(u) {
    return String(u).slice(0, 120);
  }

  // An open channel is one of K.channels while it is open, so a request
  // that changes something makes it wait for its next message.
  function open(ch, expect, closeEvents) {
    channels.add(expect);
    for (let i = 0; i < closeEvents.length; i++) {
      origAdd.call(ch, closeEvents[i], function () {
        if (ch.readyState === 2) channels.delete(expect); // CLOSED (both kinds)
      });
    }
  }

  wrap('WebSocket', function (ws, args) {
    const expect = follow(ws, 'WebSocket ' + url(args[0]), ['close', 'error']);
    expects.set(ws, expect);
    open(ws, expect, ['close', 'error']);
    // Opened by the action: pending until open (or failed).
    const c = current();
    const id = track(c, { kind: 'reply', what: 'WebSocket opening ' + url(args[0]), expires: now() + REPLY });
    if (id) {
      const done = function () { untrack(id); };
      origAdd.call(ws, 'open', done);
      origAdd.call(ws, 'error', done);
      origAdd.call(ws, 'close', done);
    }
  });
  if (typeof WebSocket === 'function') {
    const oSend = WebSocket.prototype.send;
    WebSocket.prototype.send = function send() {
      const expect = expects.get(this);
      if (expect && this.readyState === 1) expect(current(), REPLY);
      return oSend.apply(this, arguments);
    };
  }

  wrap('EventSource', function (es, args) {
    const expect = follow(es, 'EventSource ' + url(args[0]), ['error']);
    open(es, expect, ['error']);
    const oClose = es.close;
    es.close = function close() {
      channels.delete(expect);
      return oClose.apply(this, arguments);
    };
  });

  wrap('Worker', function (w, args) {
    expects.set(w, follow(w, 'worker ' + url(args[0]), ['error', 'messageerror']));
  });
  if (typeof Worker === 'function') {
    const oPost = Worker.prototype.postMessage;
    Worker.prototype.postMessage = function postMessage() {
      const expect = expects.get(this);
      if (expect) expect(current(), REPLY);
      return oPost.apply(this, arguments);
    };
  }
})();

// settle_messages.js — follows MessageChannel messages (the rule:
// settle.js).
(function () {
  'use strict';
  const K = window.__webserv && window.__webserv.settleKit;
  if (!K || !K.claim('messages')) return;
  const { now, child, current, enter, track, untrack, MESSAGE_COST, MESSAGE_OVERDUE } = K;

  // The originals, before any page script can replace them.
  const origAdd = EventTarget.prototype.addEventListener;
  const OMessageChannel = window.MessageChannel;
  const oPortPost = typeof MessagePort === 'function' ? MessagePort.prototype.postMessage : null;

  // Schedulers (React's among them) post to themselves through a
  // MessageChannel to run work in a later task. A message carries its
  // sender's cause; a listener of ours, registered on both ports before the
  // page gets them, runs first at delivery and restores it.
  if (OMessageChannel && oPortPost) {
    const partner = new WeakMap(); // port -> the port its messages arrive at
    const inbox = new WeakMap(); // port -> [[cause, pending id]] in order
    const deliver = function () {
      const q = inbox.get(this);
      if (!q || !q.length) return;
      const m = q.shift();
      untrack(m[1]);
      enter(m[0]);
    };
    const MessageChannel = function MessageChannel() {
      const ch = Reflect.construct(OMessageChannel, [], new.target || MessageChannel);
      partner.set(ch.port1, ch.port2);
      partner.set(ch.port2, ch.port1);
      inbox.set(ch.port1, []);
      inbox.set(ch.port2, []);
      origAdd.call(ch.port1, 'message', deliver);
      origAdd.call(ch.port2, 'message', deliver);
      return ch;
    };
    MessageChannel.prototype = OMessageChannel.prototype;
    window.MessageChannel = MessageChannel;
    MessagePort.prototype.postMessage = function postMessage() {
      const to = partner.get(this);
      if (to) {
        const c = child(current(), MESSAGE_COST);
        const id = track(c, { kind: 'message', what: 'MessageChannel message', expires: now() + MESSAGE_OVERDUE });
        inbox.get(to).push([c, id]);
      }
      return oPortPost.apply(this, arguments);
    };
  }
})();

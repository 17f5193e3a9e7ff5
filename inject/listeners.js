// listeners.js — records which elements listen for hover and click events.
//
// Many menus and tooltips only open on hover, and many "buttons" are plain
// divs with a click listener. Neither shows in the markup, so we wrap
// EventTarget.prototype.addEventListener (and removeEventListener) before any
// page script runs and keep a per-element count of hover-type and click-type
// listeners. Elements with hover listeners are marked in the live DOM with
// data-maybe-hoverable="true", as the WebServ paper describes; click-type
// listeners are only recorded (the parser reads them through W.listeners).
//
// Listeners registered on window, document, <html> or <body> are page-wide
// delegation (React and jQuery do this) and say nothing about one element, so
// they are not recorded.
(function () {
  'use strict';
  const W = window.__webserv;
  if (!W || W.listeners) return;

  const HOVER = new Set(['mouseenter', 'mouseover', 'pointerenter', 'pointerover']);
  const CLICK = new Set(['click', 'mousedown', 'mouseup', 'pointerdown', 'pointerup', 'dblclick', 'touchstart']);
  const counts = new WeakMap(); // element -> {hover: n, click: n}

  function relevant(target) {
    if (!(target instanceof Element)) return false;
    const tag = target.localName;
    return tag !== 'html' && tag !== 'body';
  }

  function bump(target, type, delta) {
    const kind = HOVER.has(type) ? 'hover' : CLICK.has(type) ? 'click' : null;
    if (!kind || !relevant(target)) return;
    let c = counts.get(target);
    if (!c) {
      if (delta < 0) return;
      c = { hover: 0, click: 0 };
      counts.set(target, c);
    }
    c[kind] = Math.max(0, c[kind] + delta);
    if (kind !== 'hover') return;
    try {
      if (c.hover > 0) target.setAttribute('data-maybe-hoverable', 'true');
      else target.removeAttribute('data-maybe-hoverable');
    } catch (e) { /* a page that forbids attribute writes keeps working */ }
  }

  const proto = EventTarget.prototype;
  const origAdd = proto.addEventListener;
  const origRemove = proto.removeEventListener;
  proto.addEventListener = function addEventListener(type, listener) {
    if (listener) bump(this, type, +1);
    return origAdd.apply(this, arguments);
  };
  proto.removeEventListener = function removeEventListener(type, listener) {
    if (listener) bump(this, type, -1);
    return origRemove.apply(this, arguments);
  };

  // Frameworks that attach listeners at a root container keep per-element
  // handlers in properties instead; React keeps its props under
  // "__reactProps$<random>" and Vue 3 its invokers under "_vei".
  function frameworkHandlers(el) {
    const out = { hover: false, click: false };
    const vei = el._vei;
    if (vei) {
      for (const k in vei) {
        const n = k.toLowerCase();
        if (n === 'onclick' || n === 'onmousedown' || n === 'onpointerdown') out.click = true;
        if (n === 'onmouseenter' || n === 'onmouseover' || n === 'onpointerenter' || n === 'onpointerover') out.hover = true;
      }
    }
    const own = Object.keys(el); // React's props are own properties; inherited ones are not walked
    for (let i = 0; i < own.length; i++) {
      const k = own[i];
      if (!k.startsWith('__reactProps$')) continue;
      const p = el[k];
      if (p && typeof p === 'object') {
        if (p.onClick || p.onMouseDown || p.onPointerDown) out.click = true;
        if (p.onMouseEnter || p.onMouseOver || p.onPointerEnter || p.onPointerOver) out.hover = true;
      }
      break;
    }
    return out;
  }

  W.listeners = {
    // hover(el): true if the element registered a hover-type listener, has an
    // onmouseover/onmouseenter handler, or a framework hover handler.
    hover: function (el, fw) {
      const c = counts.get(el);
      if (c && c.hover > 0) return true;
      if (typeof el.onmouseover === 'function' || typeof el.onmouseenter === 'function') return true;
      return fw ? fw.hover : false;
    },
    // click(el): the same for click-type listeners and onclick handlers.
    click: function (el, fw) {
      const c = counts.get(el);
      if (c && c.click > 0) return true;
      if (typeof el.onclick === 'function' || typeof el.onmousedown === 'function') return true;
      return fw ? fw.click : false;
    },
    framework: frameworkHandlers,
  };
})();

// state.js — captures and re-applies the page state a fork must carry.
//
// A snapshot of an environment records, per tab, what the page's own
// document holds and a reload would lose: local and session storage, the
// values of form fields (by semantic id), the element that has the focus
// (by semantic id) and the scroll position. A fork
// or restore loads the same URL in a fresh browser context, applies this,
// and so shows the page as it was. In-memory JavaScript state (variables,
// closures, timers) cannot be carried.
(function () {
  'use strict';
  const W = window.__webserv;
  if (!W || W.state) return;

  function storage(area) {
    const out = {};
    try {
      for (let i = 0; i < area.length; i++) {
        const k = area.key(i);
        out[k] = area.getItem(k);
      }
    } catch (e) { /* storage disabled for this origin */ }
    return out;
  }

  // fields records every form control that has a semantic id.
  function fields() {
    const out = {};
    document.querySelectorAll('input[data-semantic-id], textarea[data-semantic-id], select[data-semantic-id], [contenteditable][data-semantic-id]').forEach(function (el) {
      const id = el.getAttribute('data-semantic-id');
      if (el.localName === 'select') {
        out[id] = { selected: Array.from(el.options).filter(function (o) { return o.selected; }).map(function (o) { return o.index; }) };
      } else if (el.type === 'checkbox' || el.type === 'radio') {
        out[id] = { checked: el.checked };
      } else if (el.isContentEditable && el.localName !== 'input' && el.localName !== 'textarea') {
        out[id] = { text: el.innerText };
      } else if (el.type !== 'file' && el.type !== 'password') {
        out[id] = { value: el.value };
      }
    });
    return out;
  }

  // focused is the semantic id of the focused element, looking through open
  // shadow roots; '' when the focus is on the body or an element without id.
  function focused() {
    let el = document.activeElement;
    while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
    return (el && el.getAttribute && el.getAttribute('data-semantic-id')) || '';
  }

  function capture() {
    return {
      scroll_x: window.scrollX, scroll_y: window.scrollY,
      local: storage(window.localStorage), session: storage(window.sessionStorage),
      fields: fields(), focused: focused(),
    };
  }

  // applyStorage sets storage before the page is loaded again.
  function applyStorage(s) {
    try {
      Object.keys(s.local || {}).forEach(function (k) { localStorage.setItem(k, s.local[k]); });
      Object.keys(s.session || {}).forEach(function (k) { sessionStorage.setItem(k, s.session[k]); });
    } catch (e) { return { ok: false, message: String(e) }; }
    return { ok: true };
  }

  // isStandIn reports whether this document is the stand-in that a
  // restore commits for history entries it does not load (standin.html).
  function isStandIn() {
    return document.querySelector('meta[name="webserv-stand-in"]') !== null;
  }

  // applyFields sets field values (firing input and change, so frameworks
  // see them), the focus and the scroll position. Ids come from a fresh
  // observation. The focus moves without scrolling, so the scroll position
  // set last is the captured one.
  function applyFields(s) {
    const missing = [];
    const fire = function (el) {
      el.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
      el.dispatchEvent(new Event('change', { bubbles: true }));
    };
    Object.keys(s.fields || {}).forEach(function (id) {
      const el = W.parser.element(id);
      const f = s.fields[id];
      if (!el) { missing.push(id); return; }
      if (f.selected) {
        Array.from(el.options).forEach(function (o) { o.selected = f.selected.indexOf(o.index) >= 0; });
        fire(el);
      } else if ('checked' in f) {
        if (el.checked !== f.checked) { el.checked = f.checked; fire(el); }
      } else if ('text' in f) {
        if (el.innerText !== f.text) { el.innerText = f.text; fire(el); }
      } else if (el.value !== f.value) {
        const d = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(el), 'value');
        if (d && d.set) d.set.call(el, f.value); else el.value = f.value;
        fire(el);
      }
    });
    if (s.focused) {
      const el = W.parser.element(s.focused);
      if (el && typeof el.focus === 'function') el.focus({ preventScroll: true });
      else missing.push(s.focused);
    }
    window.scrollTo(s.scroll_x || 0, s.scroll_y || 0);
    return { ok: true, missing: missing };
  }

  W.state = { capture: capture, applyStorage: applyStorage, applyFields: applyFields, isStandIn: isStandIn };
})();

// elements.js — what the parser and the actions both ask of an element:
// whether it is disabled, how text goes into it, and where its frame sits
// in the top-level viewport. One answer serves both, so an observation
// never calls editable a field that an action then refuses to type into.
(function () {
  'use strict';
  const W = window.__webserv;
  if (!W || W.elements) return;

  // Input types that take typed keystrokes, and those whose value is set
  // directly (pickers).
  const TEXT_TYPES = new Set(['text', 'search', 'email', 'url', 'tel', 'password', 'number', '']);
  const VALUE_TYPES = new Set(['date', 'time', 'datetime-local', 'month', 'week', 'color', 'range']);

  // disabled: the element matches :disabled (itself or a disabled
  // fieldset) or says aria-disabled="true".
  function disabled(el) {
    try {
      if (el.matches(':disabled')) return true;
    } catch (e) { /* not a form-associated element */ }
    return el.getAttribute('aria-disabled') === 'true';
  }

  // editKind says how text goes into an element: "text" (typed keystrokes),
  // "value" (date/colour/range pickers: the value is set directly) or "" (not
  // editable).
  function editKind(el) {
    if (el.localName === 'textarea') return 'text';
    if (el.localName === 'input') {
      const t = el.type || 'text';
      if (TEXT_TYPES.has(t)) return 'text';
      if (VALUE_TYPES.has(t)) return 'value';
      return '';
    }
    return el.isContentEditable ? 'text' : '';
  }

  // frameOffset is the offset of a frame's viewport (win) inside the
  // top-level viewport.
  function frameOffset(win) {
    let x = 0, y = 0;
    while (win !== window.top) {
      const fe = win.frameElement;
      if (!fe) break;
      const r = fe.getBoundingClientRect();
      x += r.left + fe.clientLeft;
      y += r.top + fe.clientTop;
      win = win.parent;
    }
    return [x, y];
  }

  W.elements = Object.freeze({ disabled, editKind, frameOffset });
})();

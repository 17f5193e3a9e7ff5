// actions.js — the page side of WebServ's actions.
//
// The Go side executes an element action in two steps: one call here
// resolves the semantic id, checks that the element can be acted on, scrolls
// it into view and answers with the viewport point to click (one CDP round
// trip); then Go dispatches real mouse and keyboard events at that point, so
// the page sees what a person's input would produce. Checks that fail answer
// {ok: false, code, message} with a message an agent can act on; `code`
// tells Go whether a retry can help (covered, hidden) or not (missing,
// disabled).
//
// The codes are part of the environment's closed set of action error codes
// (docs/envcore.md, "Error codes"; envcore.ActionErrorCodes): CODES lists
// the ones this file answers, and fail() refuses any other.
(function () {
  'use strict';
  const W = window.__webserv;
  if (!W || W.act || !W.elements) return;

  const CODES = Object.freeze(['missing', 'stale', 'hidden', 'covered', 'disabled', 'not_editable',
    'readonly', 'no_option', 'not_select', 'bad_value', 'bad_action']);

  const { disabled, editKind, frameOffset } = W.elements;

  function describe(el) {
    if (!el || !el.localName) return 'nothing';
    let s = '<' + el.localName;
    if (el.id) s += ' id="' + el.id + '"';
    const sid = el.getAttribute('data-semantic-id');
    if (sid) s += ' data-semantic-id="' + sid + '"';
    else if (el.className && typeof el.className === 'string') s += ' class="' + el.className.slice(0, 40) + '"';
    s += '>';
    const t = (el.innerText || '').replace(/\s+/g, ' ').trim();
    if (t) s += ' "' + t.slice(0, 40) + '"';
    return s;
  }

  function fail(code, message) {
    if (CODES.indexOf(code) < 0) throw new Error('webserv: action error code ' + code + ' is not in the closed set');
    return { ok: false, code: code, message: message };
  }

  // Events this file dispatches itself (focus, input, change) are the
  // action's doing: the settle tracker attributes what they cause to it.
  function acting() {
    if (W.settle) W.settle.enterAction();
  }

  function resolve(id) {
    const el = W.parser.element(id);
    if (!el) return [null, fail('missing', "no element with id '" + id + "' on the page")];
    if (!el.isConnected) {
      return [null, fail('stale', "element '" + id + "' is no longer on the page (it changed after the last observation)")];
    }
    return [el, null];
  }

  // prepare(id, mode) validates the target for mode "click", "hover", "focus"
  // or "type", scrolls it into view, and answers the point to act at.
  function prepare(id, mode) {
    acting();
    const [el, err] = resolve(id);
    if (err) return err;
    const tag = el.localName;
    if (tag === 'option') {
      return { ok: true, option: true, tag: tag };
    }
    if (!el.checkVisibility({ opacityProperty: true, visibilityProperty: true })) {
      return fail('hidden', "element '" + id + "' is not visible now");
    }
    if (mode !== 'hover' && disabled(el)) return fail('disabled', "element '" + id + "' is disabled");
    const view = el.ownerDocument.defaultView;
    if (view.getComputedStyle(el).pointerEvents === 'none' && mode !== 'focus' && mode !== 'type') {
      return fail('disabled', "element '" + id + "' does not take pointer input (pointer-events: none)");
    }
    let kind = '';
    if (mode === 'type') {
      kind = editKind(el);
      if (!kind) return fail('not_editable', "element '" + id + "' (" + describe(el) + ') is not a text field; use click or select_option');
      if (el.readOnly) return fail('readonly', "element '" + id + "' is read-only");
    }
    if (el.scrollIntoViewIfNeeded) el.scrollIntoViewIfNeeded(true); else el.scrollIntoView({ block: 'center' });
    const rects = el.getClientRects();
    let r = null;
    for (let i = 0; i < rects.length; i++) {
      if (rects[i].width > 0 && rects[i].height > 0) { r = rects[i]; break; }
    }
    if (!r) return fail('hidden', "element '" + id + "' has no size on screen");
    // Centre of the part of the box that lies inside the viewport.
    const left = Math.max(r.left, 0), top = Math.max(r.top, 0);
    const right = Math.min(r.right, view.innerWidth), bottom = Math.min(r.bottom, view.innerHeight);
    if (right <= left || bottom <= top) return fail('hidden', "element '" + id + "' could not be scrolled into view");
    const lx = (left + right) / 2, ly = (top + bottom) / 2;
    if (mode === 'click' || mode === 'hover') {
      const rootNode = el.getRootNode();
      const hit = (rootNode.elementFromPoint ? rootNode : el.ownerDocument).elementFromPoint(lx, ly);
      const ok = hit && (hit === el || el.contains(hit) || (hit.localName === 'label' && hit.control === el) ||
        (el.localName === 'label' && el.control === hit));
      if (!ok) {
        return fail('covered', "element '" + id + "' is covered by " + describe(hit) + '; close or dismiss that first');
      }
    }
    const off = frameOffset(view);
    return { ok: true, x: lx + off[0], y: ly + off[1], tag: tag, kind: kind, type: el.type || '' };
  }

  // focusForTyping(id) focuses a text target and selects its whole content,
  // so typed text replaces it.
  function focusForTyping(id) {
    acting();
    const [el, err] = resolve(id);
    if (err) return err;
    el.focus();
    if (el.localName === 'input' || el.localName === 'textarea') {
      try { el.select(); } catch (e) { /* types without a selection */ }
    } else {
      const doc = el.ownerDocument;
      const range = doc.createRange();
      range.selectNodeContents(el);
      const sel = doc.defaultView.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
    }
    return { ok: true, focused: el.ownerDocument.activeElement === el || el.contains(el.ownerDocument.activeElement) };
  }

  function focus(id) {
    acting();
    const [el, err] = resolve(id);
    if (err) return err;
    el.focus();
    return { ok: true };
  }

  // setValue(id, v) sets a picker's value (date, time, colour, range) the way
  // a picker does: through the native setter, then input and change events.
  function setValue(id, v) {
    acting();
    const [el, err] = resolve(id);
    if (err) return err;
    const setter = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(el), 'value');
    if (setter && setter.set) setter.set.call(el, v); else el.value = v;
    if (v !== '' && el.value === '') return fail('bad_value', "'" + v + "' is not a valid value for the " + el.type + " input '" + id + "'");
    el.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
    return { ok: true };
  }

  // insertText(text) puts long text into the focused text field at once:
  // the selection (focusForTyping selected the old content) is replaced
  // through setRangeText, which costs time in proportion to the text, and
  // one input event says so. Chromium's own text insertion lays the field
  // out again at every line break, so 30 KB of lines took longer than an
  // action may. maxlength is honoured as typing honours it. Answers
  // {inserted: false} when the focus is not in an <input> or <textarea>
  // that takes a selection (contenteditable, email fields): the Go side then
  // inserts through CDP.
  function insertText(text) {
    let el = document.activeElement;
    while (el) {
      if (el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
      else if (el.localName === 'iframe' && el.contentDocument && el.contentDocument.activeElement) el = el.contentDocument.activeElement;
      else break;
    }
    if (!el || (el.localName !== 'input' && el.localName !== 'textarea') || editKind(el) !== 'text' || el.readOnly) {
      return { ok: true, inserted: false };
    }
    let start, end;
    try {
      start = el.selectionStart;
      end = el.selectionEnd;
    } catch (e) {
      return { ok: true, inserted: false }; // a type without a selection
    }
    if (start === null || end === null) return { ok: true, inserted: false };
    acting();
    if (el.maxLength >= 0) text = text.slice(0, Math.max(0, el.maxLength - (el.value.length - (end - start))));
    el.setRangeText(text, start, end, 'end');
    el.dispatchEvent(new InputEvent('input', { bubbles: true, composed: true, inputType: 'insertText', data: text }));
    return { ok: true, inserted: true };
  }

  // selectOptions(id, wanted) selects options of a <select> by option id,
  // visible text or value (exact first, then case-insensitive). id may also
  // be an option's own id. Fires input and change like a person's choice.
  function selectOptions(id, wanted) {
    acting();
    let [el, err] = resolve(id);
    if (err) return err;
    if (el.localName === 'option') {
      const sel = el.closest('select');
      if (!sel) return fail('not_select', "option '" + id + "' is not inside a <select>");
      wanted = [el.getAttribute('data-semantic-id')];
      el = sel;
    }
    if (el.localName !== 'select') {
      return fail('not_select', "element '" + id + "' (" + describe(el) + ') is not a <select>; click it to open a custom menu instead');
    }
    if (disabled(el)) return fail('disabled', "select '" + id + "' is disabled");
    if (!wanted.length) return fail('bad_action', 'select_option needs at least one option');
    if (wanted.length > 1 && !el.multiple) return fail('bad_action', "select '" + id + "' takes one option, not " + wanted.length);
    const opts = Array.from(el.options);
    const norm = function (s) { return String(s).replace(/\s+/g, ' ').trim(); };
    const picks = [];
    for (const w of wanted) {
      const n = norm(w), low = n.toLowerCase();
      const o = opts.find(function (o) { return o.getAttribute('data-semantic-id') === w; }) ||
        opts.find(function (o) { return norm(o.text) === n; }) ||
        opts.find(function (o) { return o.value === w; }) ||
        opts.find(function (o) { return norm(o.text).toLowerCase() === low; });
      if (!o) {
        const have = opts.slice(0, 15).map(function (o) { return '"' + norm(o.text) + '"'; }).join(', ');
        return fail('no_option', "select '" + id + "' has no option '" + w + "'; options: " + have + (opts.length > 15 ? ', ...' : ''));
      }
      if (o.disabled) return fail('disabled', "option '" + w + "' of select '" + id + "' is disabled");
      picks.push(o);
    }
    el.focus();
    if (el.multiple) opts.forEach(function (o) { o.selected = picks.indexOf(o) >= 0; });
    else picks[0].selected = true;
    el.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
    return { ok: true, value: el.value };
  }

  W.act = {
    codes: CODES,
    prepare: prepare,
    focusForTyping: focusForTyping,
    focus: focus,
    setValue: setValue,
    insertText: insertText,
    selectOptions: selectOptions,
  };
})();

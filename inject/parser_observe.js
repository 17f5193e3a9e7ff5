// parser_observe.js — the entry point, W.parser: observe(opts) walks the
// page and assembles the observation (see parser.js), with the component
// lists of its targets: clickable, hoverable, inputs and selects with their
// live state, and the focused id.
(function () {
  'use strict';
  const W = window.__webserv;
  if (!W || W.parser || !W.parserKit) return;
  const K = W.parserKit;
  const { walk, assignIds, geometry, round2, html, axtreeText, htmlOutlineText } = K;
  const { disabled, editKind } = W.elements;

  let registry = new Map(); // semantic id -> element, from the last observation

  function deepActive(doc) {
    let a = doc.activeElement;
    for (;;) {
      if (a && a.shadowRoot && a.shadowRoot.activeElement) { a = a.shadowRoot.activeElement; continue; }
      if (a && (a.localName === 'iframe' || a.localName === 'frame')) {
        let d = null;
        try { d = a.contentDocument; } catch (e) { /* cross-origin */ }
        if (d && d.activeElement) { a = d.activeElement; continue; }
      }
      return a;
    }
  }

  function inputState(n, focusedEl) {
    const el = n.el;
    const tag = n.t;
    const type = tag === 'input' ? (el.type || 'text') : (tag === 'textarea' ? 'textarea' : 'contenteditable');
    const editable = !disabled(el) && !el.readOnly && editKind(el) !== '';
    const s = {
      id: n.id, tag: tag, type: type,
      value: el.isContentEditable && tag !== 'input' && tag !== 'textarea' ? el.innerText : String(el.value),
      editable: editable, focused: el === focusedEl,
    };
    if (type === 'checkbox' || type === 'radio') s.checked = el.checked;
    if (type === 'number' && el.value !== '' && !isNaN(el.valueAsNumber)) s.numeric_value = el.valueAsNumber;
    if (el.placeholder) s.placeholder = el.placeholder;
    if (el.getAttribute('name')) s.name = el.getAttribute('name');
    if (el.required) s.required = true;
    try {
      if (typeof el.selectionStart === 'number') {
        s.selection_start = el.selectionStart;
        s.selection_end = el.selectionEnd;
      }
    } catch (e) { /* types without a text selection (email in some engines) */ }
    return s;
  }

  function selectState(n, focusedEl) {
    const el = n.el;
    return {
      id: n.id, value: el.value, selected_index: el.selectedIndex, multiple: el.multiple,
      focused: el === focusedEl, disabled: disabled(el),
      options: n.options.map(function (o) {
        const x = { id: o.id, text: o.text, value: o.value, selected: o.selected };
        if (o.disabled) x.disabled = true;
        return x;
      }),
      selected: n.options.filter(function (o) { return o.selected; }).map(function (o) { return o.value; }),
    };
  }

  function observe(opts) {
    opts = opts || {};
    const t0 = W.now();
    const w = walk(opts);
    const targets = w.targets, st = w.stats;
    assignIds(targets);

    registry = new Map();
    const focusedEl = deepActive(document);
    const out = {
      url: location.href, title: document.title, html: '', clickable: [], hoverable: [],
      inputs: [], selects: [], focused: null,
      viewport: {
        width: window.innerWidth, height: window.innerHeight, device_scale_factor: window.devicePixelRatio,
        scroll_x: round2(window.scrollX), scroll_y: round2(window.scrollY),
      },
    };
    for (const n of targets) {
      registry.set(n.id, n.el);
      if (n.el === focusedEl) out.focused = n.id;
      if (n.click) out.clickable.push(n.id);
      if (n.hover) out.hoverable.push(n.id);
      if (n.kind === 'input') out.inputs.push(inputState(n, focusedEl));
      if (n.kind === 'select') {
        out.selects.push(selectState(n, focusedEl));
        for (const o of n.options) registry.set(o.id, o.el);
      }
    }
    // With places, the budgeted view (the HTML outline, or else the
    // axtree) reports each line's place.
    const places = opts.places ? [] : null;
    out.html = opts.outline ? htmlOutlineText(w.root, places) : html(w.root);
    if (opts.axtree) out.axtree = axtreeText(w.root, opts.outline ? null : places);
    if (places) out.places = places.join('');
    if (opts.geometry) out.geometry = targets.map(geometry);
    out.stats = { visited: st.visited, kept: st.kept, frames: st.frames, targets: targets.length, ms: Math.round((W.now() - t0) * 100) / 100 };
    return out;
  }

  Object.freeze(K);
  W.parser = {
    observe: observe,
    // observeJSON is what the Go side calls: one string crosses CDP instead of
    // a deep object, which is decoded once on the Go side.
    observeJSON: function (opts) { return W.stringify(observe(opts)); },
    // element(id) resolves a semantic id from the last observation.
    element: function (id) { return registry.get(id) || null; },
    ids: function () { return Array.from(registry.keys()); },
  };
})();

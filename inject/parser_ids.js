// parser_ids.js — gives the targets of a walk their semantic ids.
//
// Semantic ids are slugs of what a person would call the element (its label,
// text, placeholder, alt, or its tag), prefixed with the name of the
// enclosing form/dialog/nav/section when it has one, and made unique with a
// numeric suffix. They are written to the live element as data-semantic-id
// and reused on the next observation while the element still earns the same
// name, so ids are stable across steps on an unchanged page.
(function () {
  'use strict';
  const W = window.__webserv;
  if (!W || W.parser || !W.parserKit) return;
  const K = W.parserKit;
  const { slug, textOf, labelledBy, labelText, BUTTON_INPUT } = K;

  const bases = new WeakMap(); // element -> the base id it was given

  function baseName(node) {
    const el = node.el, tag = node.t;
    let s = el.getAttribute('aria-label') || labelledBy(el);
    if (!s && (node.kind === 'input' || node.kind === 'select')) {
      if (el.labels && el.labels.length) s = labelText(el.labels[0]);
      if (!s) s = el.getAttribute('placeholder') || el.getAttribute('name') || el.getAttribute('title');
    }
    if (!s && tag === 'input' && BUTTON_INPUT.has(el.type)) s = el.value || el.alt || el.type;
    if (!s && !node.kind) s = textOf(node, 60);
    if (!s) s = el.getAttribute('title') || el.getAttribute('alt') || el.getAttribute('name');
    let b = slug(s);
    if (!b) {
      const role = el.getAttribute('role');
      b = tag === 'input' ? 'input-' + (el.type || 'text') : (role || tag);
    }
    return node.scope ? node.scope + '.' + b : b;
  }

  function assignIds(targets) {
    const used = new Set();
    for (const n of targets) {
      n.base = baseName(n);
      const prev = n.el.getAttribute('data-semantic-id');
      if (prev && bases.get(n.el) === n.base && !used.has(prev)) {
        n.id = prev;
        used.add(prev);
      }
    }
    for (const n of targets) {
      if (n.id) continue;
      n.id = unique(n.base, used);
      bases.set(n.el, n.base);
      n.el.setAttribute('data-semantic-id', n.id);
    }
    for (const n of targets) {
      if (n.click) n.el.setAttribute('data-clickable', 'true');
      else if (n.el.hasAttribute('data-clickable')) n.el.removeAttribute('data-clickable');
      if (!n.options) continue;
      const local = new Set();
      for (const o of n.options) {
        o.id = n.id + '.' + unique(slug(o.text || o.value, 24) || 'option', local);
        if (o.el.getAttribute('data-semantic-id') !== o.id) o.el.setAttribute('data-semantic-id', o.id);
      }
    }
  }

  function unique(base, used) {
    let id = base, k = 2;
    while (used.has(id)) id = base + '-' + k++;
    used.add(id);
    return id;
  }

  Object.assign(K, { assignIds });
})();

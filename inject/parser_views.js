// parser_views.js — writes the stripped tree out: as the observation's
// html (kept attributes plus data-semantic-id, data-clickable,
// data-maybe-hoverable and cols) and as the axtree text view, which names
// elements by role with the same ids.
(function () {
  'use strict';
  const W = window.__webserv;
  if (!W || W.parser || !W.parserKit) return;
  const K = W.parserKit;
  const { clip, textOf, labelText, BUTTON_INPUT, MAX_HREF } = K;

  // Tags that start a new line in the serialized HTML (readability; one token each).
  const BLOCK = new Set(['div', 'p', 'ul', 'ol', 'li', 'table', 'tr', 'form', 'section', 'article',
    'header', 'footer', 'nav', 'main', 'aside', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'fieldset',
    'dl', 'dt', 'dd', 'blockquote', 'pre', 'iframe', 'details', 'summary', 'dialog', 'label', 'hr',
    'select', 'textarea', 'thead', 'tbody', 'figure', 'figcaption']);
  const VOID = new Set(['input', 'img', 'br', 'hr', 'area', 'wbr']);
  const MAX_HTML_OPTIONS = 30;

  function escText(s) {
    return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  }

  function escAttr(s) {
    return s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
  }

  // openTag writes node's start tag: its kept attributes and the parser's.
  function openTag(node, out) {
    out.push('<', node.t);
    for (const a of node.a) {
      out.push(' ', a[0]);
      if (a[1] !== '') out.push('="', escAttr(a[1]), '"');
    }
    if (node.id) out.push(' data-semantic-id="', escAttr(node.id), '"');
    if (node.click) out.push(' data-clickable="true"');
    if (node.hover) out.push(' data-maybe-hoverable="true"');
    if (node.cols) out.push(' cols="', String(node.cols), '"');
    out.push('>');
  }

  // optionTags are a select's options (the first MAX_HTML_OPTIONS, then a
  // comment saying how many more), one string each.
  function optionTags(node) {
    const n = Math.min(node.options.length, MAX_HTML_OPTIONS);
    const out = [];
    for (let i = 0; i < n; i++) {
      const o = node.options[i];
      out.push('<option data-semantic-id="' + escAttr(o.id) + '"' + (o.selected ? ' selected' : '') + '>' + escText(o.text) + '</option>');
    }
    if (node.options.length > n) out.push('<!-- ' + String(node.options.length - n) + ' more options: see selects -->');
    return out;
  }

  function serialize(node, out) {
    if (typeof node === 'string') { out.push(escText(node)); return; }
    const tag = node.t;
    if (BLOCK.has(tag) && out.length) out.push('\n');
    openTag(node, out);
    if (VOID.has(tag)) return;
    if (node.options) out.push(optionTags(node).join(''));
    const c = node.c;
    for (let i = 0; i < c.length; i++) {
      if (i > 0 && (typeof c[i] === 'string' || typeof c[i - 1] === 'string')) out.push(' ');
      serialize(c[i], out);
    }
    out.push('</', tag, '>');
  }

  // Roles for the text view; elements without one are transparent there.
  function roleOf(node) {
    const el = node.el, tag = node.t;
    const r = el.getAttribute('role');
    if (r) return r;
    switch (tag) {
      case 'a': return el.hasAttribute('href') ? 'link' : (node.click ? 'link' : '');
      case 'button': case 'summary': return 'button';
      case 'select': return el.multiple ? 'listbox' : 'combobox';
      case 'textarea': return 'textbox';
      case 'img': return 'img';
      case 'ul': case 'ol': return 'list';
      case 'li': return 'listitem';
      case 'table': return 'table';
      case 'tr': return 'row';
      case 'td': return 'cell';
      case 'th': return 'columnheader';
      case 'nav': return 'navigation';
      case 'form': return 'form';
      case 'main': return 'main';
      case 'dialog': return 'dialog';
      case 'iframe': return 'iframe';
      case 'h1': case 'h2': case 'h3': case 'h4': case 'h5': case 'h6': return 'heading';
      case 'input': {
        const t = el.type;
        if (BUTTON_INPUT.has(t)) return 'button';
        if (t === 'checkbox' || t === 'radio') return t;
        if (t === 'number') return 'spinbutton';
        if (t === 'range') return 'slider';
        if (t === 'search') return 'searchbox';
        return 'textbox';
      }
    }
    if (node.kind === 'input') return 'textbox';
    if (node.click) return 'clickable';
    if (node.hover) return 'hoverable';
    return '';
  }

  // Roles whose name is their text: their text children are not repeated.
  const NAMED_BY_TEXT = new Set(['link', 'button', 'heading', 'clickable', 'hoverable', 'tab', 'menuitem', 'option', 'checkbox', 'radio', 'switch', 'cell', 'columnheader', 'listitem-leaf']);

  // place is where an element is against the viewport, for an observation
  // budget (docs/envcore.md): '0' on the screen, 'a' above it, 'b' below or
  // beside it; an element without a box is where its parent is.
  function place(el, parent) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) return parent;
    const view = el.ownerDocument.defaultView || window;
    if (r.bottom <= 0) return 'a';
    if (r.top >= view.innerHeight || r.right <= 0 || r.left >= view.innerWidth) return 'b';
    return '0';
  }

  // axtree writes node's lines; with places (an array), the place of each
  // line too, the same index.
  function axtree(node, depth, lines, places, parent) {
    const pad = '\t'.repeat(depth);
    if (typeof node === 'string') {
      lines.push(pad + 'StaticText ' + JSON.stringify(node));
      if (places) places.push(parent);
      return;
    }
    const here = places ? place(node.el, parent) : '';
    const role = roleOf(node);
    if (!role) { for (const c of node.c) axtree(c, depth, lines, places, here); return; }
    const el = node.el;
    let name = el.getAttribute('aria-label') || '';
    const byText = NAMED_BY_TEXT.has(role) && node.c.every(function (c) { return typeof c === 'string' || !roleOf(c); });
    if (!name && byText) name = textOf(node, 200);
    if (!name && (node.kind === 'input' || node.kind === 'select') && el.labels && el.labels.length) name = labelText(el.labels[0]);
    if (!name && node.t === 'img') name = el.alt || el.title || '';
    let line = pad + (node.id ? '[' + node.id + '] ' : '') + role;
    if (name) line += ' ' + JSON.stringify(clip(name.replace(/\s+/g, ' ').trim(), 200));
    if (node.kind === 'input') {
      const t = el.type;
      if (t === 'checkbox' || t === 'radio') line += el.checked ? ' checked' : ' unchecked';
      else if (el.isContentEditable) line += ' value=' + JSON.stringify(clip(el.innerText.trim(), 200));
      else if (el.value !== undefined) line += ' value=' + JSON.stringify(clip(el.value, 200));
      if (el.placeholder) line += ' placeholder=' + JSON.stringify(el.placeholder);
    }
    if (node.t === 'a' && el.getAttribute('href')) line += ' url=' + JSON.stringify(clip(el.getAttribute('href'), MAX_HREF));
    if (el.getAttribute('aria-expanded')) line += ' expanded=' + el.getAttribute('aria-expanded');
    if (node.t.length === 2 && node.t[0] === 'h' && node.t[1] >= '1' && node.t[1] <= '6') line += ' level=' + node.t[1];
    lines.push(line);
    if (places) places.push(here);
    if (node.options) {
      for (const o of node.options) {
        lines.push(pad + '\t[' + o.id + '] option ' + JSON.stringify(o.text) + (o.selected ? ' selected' : ''));
        if (places) places.push(here);
      }
      return;
    }
    if (byText) return;
    for (const c of node.c) axtree(c, depth + 1, lines, places, here);
  }

  // htmlOutline writes node as lines of the HTML view for a token budget
  // (docs/envcore.md): one line per element or text, indented by depth
  // with tabs; an element whose children are all texts (or that has none)
  // is one whole line, start tag to end tag, and every other element's end
  // tag is a line of its own after its children's. With places, the place
  // of each line.
  function htmlOutline(node, depth, lines, places, parent) {
    const pad = '\t'.repeat(depth);
    if (typeof node === 'string') {
      lines.push(pad + escText(node));
      if (places) places.push(parent);
      return;
    }
    const here = places ? place(node.el, parent) : '';
    const out = [pad];
    openTag(node, out);
    const leaf = !node.options && node.c.every(function (c) { return typeof c === 'string'; });
    if (leaf && !VOID.has(node.t)) out.push(node.c.map(escText).join(' '), '</', node.t, '>');
    lines.push(out.join(''));
    if (places) places.push(here);
    if (node.options) {
      for (const o of optionTags(node)) {
        lines.push(pad + '\t' + o);
        if (places) places.push(here);
      }
    }
    if (leaf) return;
    for (const c of node.c) htmlOutline(c, depth + 1, lines, places, here);
    lines.push(pad + '</' + node.t + '>');
    if (places) places.push(here);
  }

  // htmlOutlineText is the HTML view as htmlOutline's lines, under a first
  // line with the page's title; the page's elements start at depth 1 (the
  // reader takes that one tab off).
  function htmlOutlineText(root, places) {
    const lines = ['<title>' + escText(document.title) + '</title>'];
    if (places) places.push('0');
    for (const c of root.c) htmlOutline(c, 1, lines, places, '0');
    return lines.join('\n');
  }

  // html is the observation's html: the root's children, serialized.
  function html(root) {
    const parts = [];
    for (let i = 0; i < root.c.length; i++) {
      if (i > 0 && (typeof root.c[i] === 'string' || typeof root.c[i - 1] === 'string')) parts.push(' ');
      serialize(root.c[i], parts);
    }
    return parts.join('').trim();
  }

  // axtreeText is the text view of the tree, under the page's title. With
  // places (an empty array), it is filled with each line's place.
  function axtreeText(root, places) {
    const lines = ['RootWebArea ' + JSON.stringify(document.title)];
    if (places) places.push('0');
    for (const c of root.c) axtree(c, 1, lines, places, '0');
    return lines.join('\n');
  }

  Object.assign(K, { html, axtreeText, htmlOutlineText });
})();

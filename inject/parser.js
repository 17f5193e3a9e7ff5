// parser.js — turns the live DOM into WebServ's compact observation.
//
// W.parser.observe(opts) walks the rendered page once and returns five
// components (WebServ paper, section 3.2.1):
//
//   html       the page stripped to what a person sees, annotated with ids
//   clickable  semantic ids of elements a click does something on
//   hoverable  semantic ids of elements with hover listeners
//   inputs     text fields, checkboxes, textareas, contenteditable: live state
//   selects    <select> elements with every option and its own id
//
// plus url, title, the viewport, the focused element's id and, when asked:
//
//   axtree     an accessibility-tree style text view that uses the same ids
//   geometry   per id, its box in CSS pixels of the top-level viewport, how
//              much of it a person sees (share inside the viewport times the
//              share of sample points where it is the topmost element), and
//              whether it is clickable: what a vision agent needs to tie
//              pixels to ids (BrowserGym's extra_element_properties)
//   layout     a cols="N" attribute on containers that lay their children
//              out side by side (grids, flex rows, inline-block or floated
//              children): N is how many sit in the widest row
//
// Geometry and layout read the rendered boxes and change nothing in the page.
//
// The walk, in one pass per element: drop tags nobody sees (script, style,
// media, ...), drop what CSS hides (display:none, visibility, opacity:0,
// closed <details>, zero-size boxes that clip), drop boxes that sit entirely
// outside the scrollable document, keep a short whitelist of attributes plus
// aria-*/data-*, collapse chains of plain <div>/<span> wrappers, prune
// elements left empty (form controls and images excepted). Same-origin
// iframes and open shadow roots are walked in place.
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
  if (!W || W.parser) return;

  // Tags that never reach the observation, with their whole subtree.
  const SKIP = new Set(['script', 'style', 'link', 'meta', 'noscript', 'template', 'base', 'head',
    'video', 'audio', 'canvas', 'svg', 'math', 'object', 'embed', 'source', 'track', 'param',
    'datalist']);
  // Attributes kept on the stripped nodes (plus every aria-* and data-*).
  const KEEP_ATTR = new Set(['id', 'name', 'type', 'placeholder', 'role', 'href', 'alt', 'title', 'for',
    'label', 'checked', 'selected', 'disabled', 'readonly', 'required', 'multiple', 'min', 'max', 'step',
    'open', 'tabindex', 'contenteditable', 'colspan', 'rowspan']);
  // Our own annotations; they are emitted from the walk's decisions instead.
  const OWN_ATTR = new Set(['data-semantic-id', 'data-clickable', 'data-maybe-hoverable']);
  const VOID = new Set(['input', 'img', 'br', 'hr', 'area', 'wbr']);
  // Elements that may stay even when they end up with no content.
  const KEEP_EMPTY = new Set(['input', 'select', 'textarea', 'button', 'img', 'hr']);
  // Non-semantic containers that are flattened when trivial.
  const WRAPPER = new Set(['div', 'span', 'font', 'center', 'picture']);
  // Inline wrappers whose children are spliced into the parent.
  const INLINE_WRAPPER = new Set(['span', 'font', 'picture']);
  // Tags that start a new line in the serialized HTML (readability; one token each).
  const BLOCK = new Set(['div', 'p', 'ul', 'ol', 'li', 'table', 'tr', 'form', 'section', 'article',
    'header', 'footer', 'nav', 'main', 'aside', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'fieldset',
    'dl', 'dt', 'dd', 'blockquote', 'pre', 'iframe', 'details', 'summary', 'dialog', 'label', 'hr',
    'select', 'textarea', 'thead', 'tbody', 'figure', 'figcaption']);
  const NATIVE_CLICK = new Set(['button', 'select', 'summary', 'textarea', 'option']);
  const CLICK_ROLES = new Set(['button', 'link', 'checkbox', 'radio', 'menuitem', 'menuitemcheckbox',
    'menuitemradio', 'option', 'tab', 'switch', 'treeitem', 'combobox', 'slider', 'spinbutton',
    'textbox', 'searchbox']);
  const SCOPE_TAGS = new Set(['form', 'nav', 'dialog', 'fieldset', 'section', 'aside', 'menu']);
  const SCOPE_ROLES = new Set(['dialog', 'alertdialog', 'navigation', 'search', 'form', 'region', 'menu',
    'menubar', 'listbox', 'tablist', 'toolbar', 'tree', 'grid']);
  const TEXT_INPUT = new Set(['text', 'search', 'email', 'url', 'tel', 'password', 'number', '']);
  const VALUE_INPUT = new Set(['date', 'time', 'datetime-local', 'month', 'week', 'color', 'range']);
  const BUTTON_INPUT = new Set(['button', 'submit', 'reset', 'image']);
  const MAX_ATTR = 100;
  const MAX_HREF = 150;
  const MAX_HTML_OPTIONS = 30;

  let registry = new Map(); // semantic id -> element, from the last observation
  const bases = new WeakMap(); // element -> the base id it was given

  // ---- small helpers ---------------------------------------------------

  function slug(s, max) {
    if (!s) return '';
    s = String(s).normalize('NFKD').replace(/[\u0300-\u036f]/g, '').toLowerCase();
    const words = s.split(/[^\p{L}\p{N}]+/u).filter(Boolean);
    let out = '';
    for (const w of words) {
      const next = out ? out + '-' + w : w;
      if (next.length > (max || 32) && out) break;
      out = next.slice(0, max || 32);
    }
    return out;
  }

  function clip(s, n) {
    return s.length > n ? s.slice(0, n - 1) + '…' : s;
  }

  function escText(s) {
    return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  }

  function escAttr(s) {
    return s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
  }

  function clipsOverflow(st) {
    return st.overflowX !== 'visible' || st.overflowY !== 'visible';
  }

  function isScroller(el, st) {
    const ox = st.overflowX, oy = st.overflowY;
    return ((oy === 'auto' || oy === 'scroll') && el.scrollHeight > el.clientHeight) ||
      ((ox === 'auto' || ox === 'scroll') && el.scrollWidth > el.clientWidth);
  }

  function isDisabled(el) {
    try {
      if (el.matches(':disabled')) return true;
    } catch (e) { /* not a form-associated element */ }
    return el.getAttribute('aria-disabled') === 'true';
  }

  // Text of a stripped subtree, up to max characters.
  function textOf(node, max) {
    let out = '';
    (function walk(n) {
      if (out.length >= max) return;
      if (typeof n === 'string') { out += (out ? ' ' : '') + n; return; }
      if (n.t === 'img' && n.el.alt) { out += (out ? ' ' : '') + n.el.alt; return; }
      for (const c of n.c) walk(c);
    })(node);
    return out.slice(0, max);
  }

  function labelledBy(el) {
    const ids = el.getAttribute('aria-labelledby');
    if (!ids) return '';
    const root = el.getRootNode();
    return ids.split(/\s+/).map(function (id) {
      const x = root.getElementById ? root.getElementById(id) : null;
      return x ? x.textContent : '';
    }).join(' ').trim();
  }

  // Text of a <label>, leaving out the controls inside it (a select's
  // options, a textarea's content): "Size" for <label>Size <select>...</label>.
  function labelText(label) {
    let out = '';
    (function walk(n) {
      for (let c = n.firstChild; c; c = c.nextSibling) {
        if (c.nodeType === 3) out += c.nodeValue;
        else if (c.nodeType === 1 && !/^(select|textarea|input|button|option|datalist|script|style)$/.test(c.localName)) walk(c);
      }
    })(label);
    return out.replace(/\s+/g, ' ').trim();
  }

  // The name a person would use for a container that scopes ids inside it.
  function scopeName(el, tag) {
    const role = el.getAttribute('role');
    if (!SCOPE_TAGS.has(tag) && !(role && SCOPE_ROLES.has(role))) return '';
    let s = el.getAttribute('aria-label') || labelledBy(el);
    if (!s && tag === 'fieldset') {
      const lg = el.querySelector(':scope > legend');
      if (lg) s = lg.textContent;
    }
    if (!s && (tag === 'form' || tag === 'section' || tag === 'dialog' || role === 'dialog')) {
      s = el.getAttribute('name') || el.id || '';
      if (!s || /\d{3,}/.test(s)) {
        const h = el.querySelector('h1, h2, h3, h4, legend');
        s = h ? h.textContent : '';
      }
    }
    if (!s && tag === 'nav') s = el.id || '';
    return slug(s, 20);
  }

  // ---- interactivity ---------------------------------------------------

  function inputKind(el, tag) {
    if (tag === 'textarea') return 'input';
    if (tag === 'select') return 'select';
    if (tag === 'input') return BUTTON_INPUT.has(el.type) ? null : 'input';
    if (el.isContentEditable && !(el.parentElement && el.parentElement.isContentEditable)) return 'input';
    return null;
  }

  // isClickable answers 0 (not clickable), STRONG (the markup says so:
  // native controls, links, onclick attributes, ARIA roles) or WEAK
  // (inferred from a click listener or cursor:pointer). A weak target that
  // turns out to contain other targets is event delegation (one listener on
  // a list for all its buttons), not a target itself.
  const STRONG = 2, WEAK = 1;
  function isClickable(el, tag, st, ctx, fw) {
    if (st.pointerEvents === 'none' || isDisabled(el)) return 0;
    if (NATIVE_CLICK.has(tag)) return STRONG;
    if (tag === 'input') return el.type !== 'hidden' ? STRONG : 0;
    if ((tag === 'a' || tag === 'area') && el.hasAttribute('href')) return STRONG;
    if (el.hasAttribute('onclick')) return STRONG;
    const role = el.getAttribute('role');
    if (role && CLICK_ROLES.has(role)) return STRONG;
    if (el.isContentEditable && !(el.parentElement && el.parentElement.isContentEditable)) return STRONG;
    if (tag === 'label' && el.control && !el.control.checkVisibility({ opacityProperty: true, visibilityProperty: true })) {
      return STRONG; // the visible stand-in for a hidden, custom-styled checkbox or radio
    }
    if (W.listeners.click(el, fw)) return WEAK;
    // cursor:pointer counts only where it starts: children of a pointer
    // element inherit it and are not separate targets.
    return st.cursor === 'pointer' && !ctx.pointer ? WEAK : 0;
  }

  // ---- the walk --------------------------------------------------------

  function childNodesOf(el) {
    if (el.shadowRoot) return el.shadowRoot.childNodes;
    if (el.localName === 'slot') {
      const a = el.assignedNodes({ flatten: true });
      if (a.length) return a;
    }
    return el.childNodes;
  }

  function walkChildren(el, ctx, out, textVisible) {
    const list = childNodesOf(el);
    for (let i = 0; i < list.length; i++) {
      const n = list[i];
      if (n.nodeType === 3) {
        if (!textVisible) continue;
        const s = n.nodeValue;
        if (!/\S/.test(s)) continue;
        out.push(s.replace(/\s+/g, ' ').trim());
      } else if (n.nodeType === 1) {
        const r = visit(n, ctx);
        if (r === null) continue;
        if (Array.isArray(r)) { for (const x of r) out.push(x); } else out.push(r);
      }
    }
  }

  function offscreen(r, st, ctx) {
    if (r.width === 0 && r.height === 0) return false;
    if (st.position === 'fixed') {
      return r.right <= 0 || r.bottom <= 0 || r.left >= ctx.vw || r.top >= ctx.vh;
    }
    if (ctx.scroller) return false; // an ancestor scrolls: it can bring this into view
    return r.right + ctx.sx <= 0 || r.bottom + ctx.sy <= 0 ||
      r.left + ctx.sx >= ctx.docW || r.top + ctx.sy >= ctx.docH;
  }

  function frameCtx(doc, parent) {
    const view = doc.defaultView;
    const de = doc.documentElement;
    return {
      st: parent.st, targets: parent.targets, view: view, scope: parent.scope, pointer: false, scroller: false,
      layout: parent.layout,
      sx: view.scrollX, sy: view.scrollY, vw: view.innerWidth, vh: view.innerHeight,
      docW: Math.max(de.scrollWidth, view.innerWidth), docH: Math.max(de.scrollHeight, view.innerHeight),
    };
  }

  function visitFrame(el, ctx) {
    let doc = null;
    try { doc = el.contentDocument; } catch (e) { /* cross-origin */ }
    if (!doc || !doc.body || !el.checkVisibility()) return null;
    const node = { t: 'iframe', el: el, a: [], c: [], kind: null, click: false, hover: false };
    const title = el.getAttribute('title') || el.getAttribute('name');
    if (title) node.a.push(['title', clip(title, MAX_ATTR)]);
    ctx.st.frames++;
    walkChildren(doc.body, frameCtx(doc, ctx), node.c, true);
    return node.c.length ? node : null;
  }

  function visit(el, ctx) {
    const tag = el.localName;
    if (SKIP.has(tag)) return null;
    if (tag === 'iframe' || tag === 'frame') return visitFrame(el, ctx);
    ctx.st.visited++;
    const st = ctx.view.getComputedStyle(el);
    if (st.display === 'none') return null;
    if (st.display === 'contents') {
      const out = [];
      walkChildren(el, ctx, out, true);
      return out;
    }
    // checkVisibility covers display:none ancestors and content-visibility
    // (closed <details>); opacity:0 hides the subtree.
    if (!el.checkVisibility() || parseFloat(st.opacity) === 0) return null;
    const r = el.getBoundingClientRect();
    if ((r.width === 0 || r.height === 0) && clipsOverflow(st) && tag !== 'option') return null;
    if (offscreen(r, st, ctx)) return null;
    const shown = st.visibility === 'visible';

    const node = { t: tag, el: el, a: null, c: [], kind: null, click: false, hover: false, scope: ctx.scope };
    let clickKind = 0, targetAt = -1;
    if (shown) {
      const fw = W.listeners.framework(el);
      node.kind = inputKind(el, tag);
      clickKind = isClickable(el, tag, st, ctx, fw);
      node.click = clickKind > 0;
      node.hover = st.pointerEvents !== 'none' && W.listeners.hover(el, fw);
      if (node.kind || node.click || node.hover) {
        targetAt = ctx.targets.length;
        ctx.targets.push(node);
      }
    }

    // Children: selects list their options, inputs have none, the rest recurse.
    if (tag === 'select') {
      node.options = [];
      for (let i = 0; i < el.options.length; i++) {
        const o = el.options[i];
        node.options.push({ el: o, text: o.text.replace(/\s+/g, ' ').trim(), value: o.value, selected: o.selected, disabled: o.disabled });
      }
    } else if (tag === 'details' && !el.open) {
      // A closed <details> shows only its <summary>.
      const sum = el.querySelector(':scope > summary');
      if (sum) {
        const r2 = visit(sum, ctx);
        if (r2) node.c.push(r2);
      }
    } else if (tag !== 'textarea' && tag !== 'input') {
      const sc = scopeName(el, tag);
      const childCtx = (sc || st.cursor === 'pointer' || isScroller(el, st)) ? Object.assign({}, ctx, {
        scope: sc ? (ctx.scope ? ctx.scope + '.' + sc : sc) : ctx.scope,
        pointer: st.cursor === 'pointer',
        scroller: ctx.scroller || isScroller(el, st),
      }) : (ctx.pointer ? Object.assign({}, ctx, { pointer: false }) : ctx);
      walkChildren(el, childCtx, node.c, shown);
    }

    if (clickKind === WEAK && targetAt >= 0 && ctx.targets.length > targetAt + 1) {
      node.click = false; // delegation container: its descendants are the targets
      if (!node.kind && !node.hover) ctx.targets.splice(targetAt, 1);
    }
    node.a = attrsOf(el, tag);
    if (ctx.layout && node.c.length > 1) node.cols = layoutCols(node, st);
    const interactive = node.kind || node.click || node.hover;
    if (!interactive) {
      if (node.c.length === 0) {
        if (!KEEP_EMPTY.has(tag)) return null;
        if (tag === 'img' && !node.a.length) return null; // an image with no alt or title tells nothing
      }
      if (!shown && node.c.length === 0) return null;
      if (WRAPPER.has(tag) && !node.a.some(blocksFlatten) && !node.cols) {
        if (node.c.length === 1 && typeof node.c[0] !== 'string') return node.c[0];
        if (INLINE_WRAPPER.has(tag)) return node.c;
      }
    }
    ctx.st.kept++;
    return node;
  }

  // ---- layout cues -----------------------------------------------------

  // layoutCols answers how many element children of node sit side by side
  // in its widest row when its element lays them out in rows (a grid, a
  // flex row, inline-block or floated children), else 0. A child starts a
  // new row when it begins below the bottom of the shortest box of the row
  // so far, or left of the box before it (a wrap).
  function layoutCols(node, st) {
    const d = st.display;
    let rows = d === 'grid' || d === 'inline-grid' ||
      ((d === 'flex' || d === 'inline-flex') && st.flexDirection.indexOf('column') < 0);
    const kids = [];
    for (const c of node.c) if (typeof c !== 'string' && c.el) kids.push(c.el);
    if (kids.length < 2) return 0;
    if (!rows) {
      const k = kids[0];
      if (k.parentElement !== node.el) return 0;
      const ks = k.ownerDocument.defaultView.getComputedStyle(k);
      rows = ks.display === 'inline-block' || ks.display === 'inline-flex' || ks.cssFloat !== 'none';
      if (!rows) return 0;
    }
    let best = 0, inRow = 0, rowBottom = 0, lastLeft = 0;
    for (const k of kids) {
      const r = k.getBoundingClientRect();
      if (r.width === 0 && r.height === 0) continue;
      if (inRow === 0 || r.top >= rowBottom - 1 || r.left < lastLeft) {
        inRow = 1;
        rowBottom = r.bottom;
      } else {
        inRow++;
        rowBottom = Math.min(rowBottom, r.bottom);
      }
      lastLeft = r.left;
      if (inRow > best) best = inRow;
    }
    return best >= 2 ? best : 0;
  }

  // ---- geometry --------------------------------------------------------

  // Sample points per axis of the covered test: a 3x3 grid of cell centres
  // over the part of the box inside the viewport.
  const SAMPLES = 3;

  function round2(x) { return Math.round(x * 100) / 100; }

  // Offset of a frame's viewport inside the top-level viewport.
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

  // geometry describes a target's box: bbox [x, y, width, height] in CSS
  // pixels of the top-level viewport; in_viewport, the share of its area
  // inside the viewport (and inside its frame's); covered, whether other
  // elements hide most of that part (fewer than half the sample points hit
  // it or its descendants); visibility, the share of its area a person
  // sees: in_viewport times the share of sample points that hit it.
  function geometry(n) {
    const el = n.el;
    const view = el.ownerDocument.defaultView;
    const off = frameOffset(view);
    const r = el.getBoundingClientRect();
    const g = {
      id: n.id, bbox: [round2(r.left + off[0]), round2(r.top + off[1]), round2(r.width), round2(r.height)],
      visibility: 0, in_viewport: 0, covered: false, clickable: n.click, set_of_marks: false,
    };
    const area = r.width * r.height;
    if (area <= 0) return g;
    // The visible part, in the frame's own coordinates.
    const x0 = Math.max(r.left, 0, -off[0]), y0 = Math.max(r.top, 0, -off[1]);
    const x1 = Math.min(r.right, view.innerWidth, window.innerWidth - off[0]);
    const y1 = Math.min(r.bottom, view.innerHeight, window.innerHeight - off[1]);
    if (x1 <= x0 || y1 <= y0) return g;
    const share = ((x1 - x0) * (y1 - y0)) / area;
    const root = el.getRootNode();
    const probe = typeof root.elementFromPoint === 'function' ? root : el.ownerDocument;
    let hits = 0;
    for (let i = 0; i < SAMPLES; i++) {
      for (let j = 0; j < SAMPLES; j++) {
        const h = probe.elementFromPoint(x0 + (x1 - x0) * (i + 0.5) / SAMPLES, y0 + (y1 - y0) * (j + 0.5) / SAMPLES);
        if (h && (h === el || el.contains(h))) hits++;
      }
    }
    g.in_viewport = round2(share);
    g.covered = hits * 2 < SAMPLES * SAMPLES;
    g.visibility = round2(share * hits / (SAMPLES * SAMPLES));
    g.set_of_marks = g.visibility > 0;
    return g;
  }

  function blocksFlatten(a) {
    const k = a[0];
    return k === 'id' || k === 'role' || k === 'title' || k.startsWith('aria-');
  }

  function attrsOf(el, tag) {
    const out = [];
    const attrs = el.attributes;
    for (let i = 0; i < attrs.length; i++) {
      const k = attrs[i].name;
      let v = attrs[i].value;
      if (OWN_ATTR.has(k)) continue;
      if (k.startsWith('data-')) { if (!v) continue; } else if (!KEEP_ATTR.has(k) && !k.startsWith('aria-')) continue;
      if (k === 'value' || k === 'checked' || k === 'selected') continue; // live state is emitted below
      if (k === 'id' && (v.length > 32 || /\d{4,}/.test(v))) continue; // generated ids are noise
      out.push([k, clip(v, k === 'href' ? MAX_HREF : MAX_ATTR)]);
    }
    if (tag === 'input' || tag === 'textarea') {
      const t = el.type;
      if (t === 'checkbox' || t === 'radio') {
        if (el.checked) out.push(['checked', '']);
      } else if (el.value) out.push(['value', clip(el.value, 200)]);
    }
    return out;
  }

  // ---- semantic ids ----------------------------------------------------

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

  // ---- serialization ---------------------------------------------------

  function serialize(node, out) {
    if (typeof node === 'string') { out.push(escText(node)); return; }
    const tag = node.t;
    if (BLOCK.has(tag) && out.length) out.push('\n');
    out.push('<', tag);
    for (const a of node.a) {
      out.push(' ', a[0]);
      if (a[1] !== '') out.push('="', escAttr(a[1]), '"');
    }
    if (node.id) out.push(' data-semantic-id="', escAttr(node.id), '"');
    if (node.click) out.push(' data-clickable="true"');
    if (node.hover) out.push(' data-maybe-hoverable="true"');
    if (node.cols) out.push(' cols="', String(node.cols), '"');
    out.push('>');
    if (VOID.has(tag)) return;
    if (node.options) {
      const n = Math.min(node.options.length, MAX_HTML_OPTIONS);
      for (let i = 0; i < n; i++) {
        const o = node.options[i];
        out.push('<option data-semantic-id="', escAttr(o.id), '"', o.selected ? ' selected' : '', '>', escText(o.text), '</option>');
      }
      if (node.options.length > n) out.push('<!-- ', String(node.options.length - n), ' more options: see selects -->');
    }
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

  function axtree(node, depth, lines) {
    const pad = '\t'.repeat(depth);
    if (typeof node === 'string') { lines.push(pad + 'StaticText ' + JSON.stringify(node)); return; }
    const role = roleOf(node);
    if (!role) { for (const c of node.c) axtree(c, depth, lines); return; }
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
    if (node.options) {
      for (const o of node.options) lines.push(pad + '\t[' + o.id + '] option ' + JSON.stringify(o.text) + (o.selected ? ' selected' : ''));
      return;
    }
    if (byText) return;
    for (const c of node.c) axtree(c, depth + 1, lines);
  }

  // ---- component lists -------------------------------------------------

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
    const editable = !isDisabled(el) && !el.readOnly &&
      (tag === 'textarea' || el.isContentEditable || TEXT_INPUT.has(type) || VALUE_INPUT.has(type));
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
      focused: el === focusedEl, disabled: isDisabled(el),
      options: n.options.map(function (o) {
        const x = { id: o.id, text: o.text, value: o.value, selected: o.selected };
        if (o.disabled) x.disabled = true;
        return x;
      }),
      selected: n.options.filter(function (o) { return o.selected; }).map(function (o) { return o.value; }),
    };
  }

  // ---- entry point -----------------------------------------------------

  function observe(opts) {
    opts = opts || {};
    const t0 = W.now();
    const st = { visited: 0, kept: 0, frames: 0 };
    const ctx = Object.assign(frameCtx(document, { st: st, scope: '', layout: !!opts.layout }), { targets: [] });
    ctx.st = st;
    const root = { t: 'body', el: document.body, a: [], c: [], kind: null, click: false, hover: false };
    if (document.body) walkChildren(document.body, ctx, root.c, true);
    const targets = ctx.targets;
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
    const parts = [];
    for (let i = 0; i < root.c.length; i++) {
      if (i > 0 && (typeof root.c[i] === 'string' || typeof root.c[i - 1] === 'string')) parts.push(' ');
      serialize(root.c[i], parts);
    }
    out.html = parts.join('').trim();
    if (opts.axtree) {
      const lines = ['RootWebArea ' + JSON.stringify(document.title)];
      for (const c of root.c) axtree(c, 1, lines);
      out.axtree = lines.join('\n');
    }
    if (opts.geometry) out.geometry = targets.map(geometry);
    out.stats = { visited: st.visited, kept: st.kept, frames: st.frames, targets: targets.length, ms: Math.round((W.now() - t0) * 100) / 100 };
    return out;
  }

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

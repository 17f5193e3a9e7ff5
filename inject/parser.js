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
// The observation is built by five files, in the order they run:
//
//   parser.js           the walk: the stripped tree and the targets in it
//   parser_ids.js       semantic ids for the targets
//   parser_geometry.js  boxes and visibility of the targets (geometry)
//   parser_views.js     the tree as html and as the axtree text view
//   parser_observe.js   the component lists and W.parser, the entry point
//
// Each reaches what the files before it provide through
// window.__webserv.parserKit, which parser_observe.js freezes, and what it
// shares with actions.js through window.__webserv.elements (elements.js).
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
(function () {
  'use strict';
  const W = window.__webserv;
  if (!W || W.parser || W.parserKit || !W.elements) return;
  const isDisabled = W.elements.disabled; // as actions.js judges it

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
  // Elements that may stay even when they end up with no content.
  const KEEP_EMPTY = new Set(['input', 'select', 'textarea', 'button', 'img', 'hr']);
  // Non-semantic containers that are flattened when trivial.
  const WRAPPER = new Set(['div', 'span', 'font', 'center', 'picture']);
  // Inline wrappers whose children are spliced into the parent.
  const INLINE_WRAPPER = new Set(['span', 'font', 'picture']);
  const NATIVE_CLICK = new Set(['button', 'select', 'summary', 'textarea', 'option']);
  const CLICK_ROLES = new Set(['button', 'link', 'checkbox', 'radio', 'menuitem', 'menuitemcheckbox',
    'menuitemradio', 'option', 'tab', 'switch', 'treeitem', 'combobox', 'slider', 'spinbutton',
    'textbox', 'searchbox']);
  const SCOPE_TAGS = new Set(['form', 'nav', 'dialog', 'fieldset', 'section', 'aside', 'menu']);
  const SCOPE_ROLES = new Set(['dialog', 'alertdialog', 'navigation', 'search', 'form', 'region', 'menu',
    'menubar', 'listbox', 'tablist', 'toolbar', 'tree', 'grid']);
  const BUTTON_INPUT = new Set(['button', 'submit', 'reset', 'image']);
  const MAX_ATTR = 100;
  const MAX_HREF = 150;

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


  function clipsOverflow(st) {
    return st.overflowX !== 'visible' || st.overflowY !== 'visible';
  }

  function isScroller(el, st) {
    const ox = st.overflowX, oy = st.overflowY;
    return ((oy === 'auto' || oy === 'scroll') && el.scrollHeight > el.clientHeight) ||
      ((ox === 'auto' || ox === 'scroll') && el.scrollWidth > el.clientWidth);
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

  // Layout cues.

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

  // walk strips the document (and its same-origin frames) into a tree
  // whose root stands for <body>, and lists the nodes an agent can act on
  // (targets) in document order.
  function walk(opts) {
    const st = { visited: 0, kept: 0, frames: 0 };
    const ctx = Object.assign(frameCtx(document, { st: st, scope: '', layout: !!opts.layout }), { targets: [] });
    ctx.st = st;
    const root = { t: 'body', el: document.body, a: [], c: [], kind: null, click: false, hover: false };
    if (document.body) walkChildren(document.body, ctx, root.c, true);
    return { root: root, targets: ctx.targets, stats: st };
  }

  Object.defineProperty(W, 'parserKit', {
    value: { slug, clip, textOf, labelledBy, labelText, BUTTON_INPUT, MAX_HREF, walk },
  });
})();

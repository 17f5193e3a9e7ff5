// preview.js: the action preview (make's preview_ms). It is not part of the
// injected bundle: the server evaluates this function expression only for
// environments that ask for a preview, so pages of the others never see it.
//
// preview('measure', id) answers the element's box as the page is now,
// without scrolling or drawing: {shown: false} when it is not wholly in
// the viewport (a recorded screenshot would not show it).
//
// preview('show', id, label) outlines the element whose data-semantic-id is
// id (in the page or a same-origin frame), after scrolling it into view,
// with a label naming the action; preview('hide') removes the outlines.
// preview('add', id, label) outlines one more element, keeping the outlines
// already shown (the actions of a multi-action step). An outline is one
// fixed-position element on <html>, outside <body>, that
// takes no pointer input, and 'hide' runs before the action, so neither the
// action nor the next observation meets it. Answers {shown, x, y, width,
// height} in viewport pixels, or {shown: false} when there is no such
// element.
(function preview(op, id, label) {
  'use strict';
  const MARK = 'data-webserv-preview';

  function hide() {
    for (const el of document.querySelectorAll('[' + MARK + ']')) el.remove();
  }

  // find looks for the target in the page, then in same-origin frames,
  // adding each frame's offset.
  function find(doc, dx, dy) {
    const el = doc.querySelector('[data-semantic-id="' + CSS.escape(id) + '"]');
    if (el) return { el, dx, dy };
    for (const f of doc.querySelectorAll('iframe, frame')) {
      let inner = null;
      try { inner = f.contentDocument; } catch (e) { inner = null; }
      if (!inner) continue;
      const r = f.getBoundingClientRect();
      const hit = find(inner, dx + r.left + f.clientLeft, dy + r.top + f.clientTop);
      if (hit) return hit;
    }
    return null;
  }

  if (op !== 'add') hide();
  if (op !== 'show' && op !== 'add' && op !== 'measure') return { shown: false };
  const hit = find(document, 0, 0);
  if (!hit) return { shown: false };
  const el = hit.el;
  if (op === 'measure') {
    const m = el.getBoundingClientRect();
    const x = m.left + hit.dx, y = m.top + hit.dy;
    const inView = m.width > 0 && m.height > 0 && x >= 0 && y >= 0 && x + m.width <= innerWidth && y + m.height <= innerHeight;
    return inView ? { shown: true, x: x, y: y, width: m.width, height: m.height } : { shown: false };
  }
  if (el.scrollIntoViewIfNeeded) el.scrollIntoViewIfNeeded(true); else el.scrollIntoView({ block: 'center' });
  const r = el.getBoundingClientRect();
  const box = { x: r.left + hit.dx, y: r.top + hit.dy, width: r.width, height: r.height };
  const o = document.createElement('div');
  o.setAttribute(MARK, '');
  o.style.cssText = 'position:fixed;z-index:2147483647;pointer-events:none;box-sizing:border-box;margin:0;' +
    'border:3px solid #f59e0b;border-radius:3px;box-shadow:0 0 0 3px rgba(245,158,11,.35);' +
    'left:' + (box.x - 4) + 'px;top:' + (box.y - 4) + 'px;width:' + (box.width + 8) + 'px;height:' + (box.height + 8) + 'px;';
  const tag = document.createElement('div');
  tag.textContent = label;
  tag.style.cssText = 'position:absolute;left:-3px;bottom:100%;background:#f59e0b;color:#111;font:12px/1.4 sans-serif;' +
    'padding:1px 6px;white-space:nowrap;border-radius:3px 3px 0 0;';
  if (box.y < 24) { tag.style.bottom = ''; tag.style.top = '100%'; }
  o.append(tag);
  document.documentElement.append(o);
  return { shown: true, x: box.x, y: box.y, width: box.width, height: box.height };
})

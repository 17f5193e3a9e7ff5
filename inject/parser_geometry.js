// parser_geometry.js — where each target is and how much of it a person
// sees, for vision agents (the observation's geometry). It reads the
// rendered boxes and changes nothing in the page.
(function () {
  'use strict';
  const W = window.__webserv;
  if (!W || W.parser || !W.parserKit) return;
  const K = W.parserKit;
  const frameOffset = W.elements.frameOffset;

  // Sample points per axis of the covered test: a 3x3 grid of cell centres
  // over the part of the box inside the viewport.
  const SAMPLES = 3;

  function round2(x) { return Math.round(x * 100) / 100; }

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

  Object.assign(K, { geometry, round2 });
})();

// The replayer: the list of recorded episodes (filterable), and one episode
// stepped through: each step's screenshot, action, observation with what
// changed since the step before (jsdiff's line diff), timings, settle
// state, reward, errors and a person's verdict. Every step has its own
// link: replay.html?ep=PATH#step=N.
'use strict';

(() => {
  const { el, api, url, num } = ui;
  const $ = (id) => document.getElementById(id);
  let episodes = [];
  let ep = null; // the episode shown: {summary, head, reset, steps, shots}
  let view = 'diff';

  $('nav-live').href = ui.pageLink('live.html');
  $('nav-replay').href = ui.pageLink('replay.html');
  $('back').href = ui.pageLink('replay.html');

  // A filter is words (all must appear) and comparisons on numbers:
  // reward<1, errors>0, rejected>0, steps>=10.
  function matcher(q) {
    const tests = [];
    for (const w of q.toLowerCase().split(/\s+/).filter(Boolean)) {
      const m = w.match(/^(reward|steps|errors|rejected|seconds|length)(<=|>=|=|<|>)(-?[\d.]+)$/);
      if (m) {
        const key = m[1] === 'length' ? 'seconds' : m[1];
        const v = parseFloat(m[3]);
        const ops = { '<': (a) => a < v, '>': (a) => a > v, '<=': (a) => a <= v, '>=': (a) => a >= v, '=': (a) => a === v };
        tests.push((e) => ops[m[2]](e[key]));
      } else {
        tests.push((e) => [e.site, e.task_id, e.goal, e.env, e.path, e.cause].join(' ').toLowerCase().includes(w));
      }
    }
    return (e) => tests.every((t) => t(e));
  }

  function renderList() {
    const q = $('filter').value;
    const body = $('episodes').tBodies[0];
    body.replaceChildren();
    const shown = episodes.filter(matcher(q));
    $('count').textContent = shown.length === episodes.length ? `(${episodes.length})` : `(${shown.length} of ${episodes.length})`;
    for (const e of shown) {
      const cls = e.reward > 0 ? 'good' : 'bad';
      body.append(el('tr', { class: 'row', 'data-path': e.path, onclick: () => open(e.path, 0) },
        el('td', {}, new Date(e.time).toLocaleString()), el('td', {}, e.site), el('td', {}, e.task_id || ''),
        el('td', {}, e.goal || el('span', { class: 'muted' }, e.path)), el('td', { class: 'num ' + cls }, num(e.reward, 2)),
        el('td', { class: 'num' }, e.steps), el('td', { class: 'num' }, num(e.seconds, 1)),
        el('td', { class: 'num' + (e.errors ? ' bad' : '') }, e.errors), el('td', { class: 'num' + (e.rejected ? ' bad' : '') }, e.rejected)));
    }
  }

  async function loadList() {
    try {
      const r = await api('api/episodes');
      episodes = r.episodes;
      $('status').textContent = r.dir;
      renderList();
    } catch (err) {
      $('status').textContent = 'cannot list episodes: ' + err.message;
    }
  }

  function stepLink(i) { return ui.pageLink('replay.html', { ep: ep.summary.path }) + '#step=' + i; }

  // obsAt(i) is the observation after step i (0: the first observation).
  function obsAt(i) {
    const l = i === 0 ? ep.reset : ep.steps[i - 1];
    return (l && l.obs) || {};
  }

  async function open(path, step) {
    try {
      ep = await api('api/episode', { path });
    } catch (err) {
      $('status').textContent = 'cannot open episode: ' + err.message;
      return;
    }
    history.pushState(null, '', ui.pageLink('replay.html', { ep: path }) + '#step=' + step);
    $('list-view').hidden = true;
    $('episode-view').hidden = false;
    const h = ep.head;
    const head = $('head');
    head.replaceChildren();
    const kv = (k, v, cls) => head.append(el('dt', {}, k), el('dd', { class: cls || '' }, v));
    kv('episode', `${h.env} #${h.episode}`);
    kv('site', h.site || '–');
    kv('task', h.task_id || '–');
    kv('goal', h.goal || '–');
    kv('began by', h.cause || '–');
    kv('reward', num(ep.summary.reward, 2), ep.summary.reward > 0 ? 'good' : 'bad');
    kv('steps', `${ep.summary.steps} in ${num(ep.summary.seconds, 1)} s`);
    if (ep.summary.partial) kv('file', 'cut short (the server stopped while recording)', 'bad');
    const body = $('steps').tBodies[0];
    body.replaceChildren();
    body.append(el('tr', { class: 'row', 'data-step': 0 }, el('td', {}, el('a', { href: stepLink(0) }, '0 · start'))));
    ep.steps.forEach((s, k) => {
      const bad = (s.obs && s.obs.last_action_error) || (s.review && s.review.verdict === 'rejected');
      body.append(el('tr', { class: 'row', 'data-step': k + 1 },
        el('td', { class: bad ? 'bad' : '' }, el('a', { href: stepLink(k + 1) }, `${s.step} · `, el('code', {}, s.action)))));
    });
    $('rerun-report').hidden = true;
    show(step);
  }

  function stepInHash() {
    const m = location.hash.match(/step=(\d+)/);
    return m ? parseInt(m[1], 10) : 0;
  }

  function current() {
    const m = location.hash.match(/step=(\d+)/);
    return m ? Math.min(parseInt(m[1], 10), ep ? ep.steps.length : 0) : 0;
  }

  function show(i) {
    if (!ep) return;
    i = Math.max(0, Math.min(i, ep.steps.length));
    if (current() !== i || !location.hash) history.replaceState(null, '', stepLink(i));
    for (const tr of $('steps').tBodies[0].rows) tr.classList.toggle('sel', tr.dataset.step === String(i));
    const l = i === 0 ? ep.reset : ep.steps[i - 1];
    const o = obsAt(i);
    $('step-title').replaceChildren(i === 0 ? 'First observation' : el('span', {}, `Step ${i}: `, el('code', { id: 'step-action' }, l.action)));
    const info = (l && l.info) || {};
    const box = $('step-info');
    box.replaceChildren();
    const kv = (k, v, cls) => box.append(el('dt', {}, k), el('dd', { class: cls || '' }, v));
    kv('url', o.url || '–');
    if (i > 0) kv('reward', l.reward === undefined || l.reward === null ? (info.eval_error ? 'not graded: ' + info.eval_error : '0') : num(l.reward, 2));
    kv('timings', `action ${num(info.action_ms)} ms · settle ${num(info.settle_ms)} ms · extract ${num(info.extract_ms)} ms`);
    kv('settle', info.settled ? 'settled' : 'not settled' + (info.settle_error ? ': ' + info.settle_error : ''), info.settled ? '' : 'bad');
    if (o.last_action_error) kv('error', o.last_action_error, 'bad');
    if (l && l.review) kv('verdict', `${l.review.verdict} by ${l.review.by || 'person'}${l.review.comment ? ': ' + l.review.comment : ''} (waited ${num(l.review.wait_ms / 1000, 1)} s)`, l.review.verdict === 'rejected' ? 'bad' : 'good');
    if (l && (l.terminated || l.truncated)) kv('end', l.terminated ? 'terminated' + (info.answer ? ': ' + info.answer : '') : 'truncated');
    // After the step, and before it (the last observation's picture) with
    // the action's target outlined where the page had it.
    const img = $('shot');
    $('fig-after').hidden = !ep.shots[i];
    $('after-caption').textContent = i === 0 ? 'the first observation' : 'after';
    if (ep.shots[i]) img.src = url('api/shot', { path: ep.summary.path, step: i });
    const before = $('shot-before');
    const hasBefore = i > 0 && ep.shots[i - 1];
    $('fig-before').hidden = !hasBefore;
    targetBox = (hasBefore && info.target_box) || null;
    $('target').hidden = true;
    if (hasBefore) before.src = url('api/shot', { path: ep.summary.path, step: i - 1 });
    placeTarget();
    renderNetwork(i);
    renderObs(i);
  }

  // renderNetwork draws step i's requests (from the episode's network
  // trace) on one timeline with the step's phases: the action, settling
  // and reading the observation. Offsets are from the action's start; a
  // request the page began after the step replied (while the agent chose
  // its next action) is grey.
  function renderNetwork(i) {
    const box = $('timeline');
    box.replaceChildren();
    $('net').hidden = !ep.network;
    if (!ep.network) return;
    const reqs = ep.network[i] || [];
    const info = (i > 0 && ep.steps[i - 1].info) || {};
    const phases = [];
    if (i > 0) {
      let t = 0;
      for (const [name, key] of [['action', 'action_ms'], ['settle', 'settle_ms'], ['extract', 'extract_ms']]) {
        const d = info[key] || 0;
        phases.push({ name, from: t, to: t + d });
        t += d;
      }
    }
    let span = 1;
    for (const p of phases) span = Math.max(span, p.to);
    for (const r of reqs) span = Math.max(span, r.start_ms + r.ms);
    const pct = (ms) => (100 * ms / span).toFixed(3) + '%';
    const bar = (cls, from, to, title) => el('div', { class: 'tl-bar ' + cls, style: `left:${pct(from)};width:${pct(Math.max(0, to - from))}`, title });
    const late = reqs.filter((r) => r.after_reply).length;
    $('net-count').textContent = `${reqs.length} request${reqs.length === 1 ? '' : 's'}` +
      (late ? `, ${late} after the reply` : '') + ` · ${num(span)} ms shown`;
    if (phases.length) {
      box.append(el('div', { class: 'tl-row tl-phases' },
        el('div', { class: 'tl-label muted' }, phases.map((p) => `${p.name} ${num(p.to - p.from)}`).join(' · ') + ' ms'),
        el('div', { class: 'tl-track' }, ...phases.map((p) => bar('ph-' + p.name, p.from, p.to, `${p.name}: ${num(p.to - p.from)} ms`)))));
    }
    const max = 300;
    for (const r of reqs.slice(0, max)) {
      let path = r.url;
      try { const u = new URL(r.url); path = u.pathname + u.search; } catch (e) { /* keep the URL as recorded */ }
      const status = r.status || 'failed';
      const title = `${r.method} ${r.url}\n${status} · ${num(r.ms)} ms, began at ${num(r.start_ms)} ms` +
        (r.size ? ` · ${r.size} bytes` : '') + (r.after_reply ? '\nbegan after the step replied' : '') + (r.comment ? '\n' + r.comment : '');
      const cls = !r.status || r.status >= 400 ? 'failed' : r.after_reply ? 'late' : '';
      box.append(el('div', { class: 'tl-row tl-req', title },
        el('div', { class: 'tl-label' + (cls === 'failed' ? ' bad' : '') }, `${r.method} ${path} `, el('span', { class: 'muted' }, `${status} · ${num(r.ms)} ms`)),
        el('div', { class: 'tl-track' }, bar(cls, r.start_ms, r.start_ms + r.ms, title))));
    }
    if (reqs.length > max) box.append(el('div', { class: 'muted' }, `… ${reqs.length - max} more requests in the trace`));
    if (!reqs.length) box.append(el('div', { class: 'muted' }, 'no requests in this step'));
  }

  let targetBox = null; // the shown step's target, in the page's CSS pixels

  // placeTarget draws targetBox over the "before" picture at its shown scale.
  function placeTarget() {
    const img = $('shot-before');
    const t = $('target');
    const b = targetBox;
    if (!b || !img.complete || !img.naturalWidth) { t.hidden = true; return; }
    const k = img.clientWidth / img.naturalWidth;
    t.style.left = (b.x * k - 3) + 'px';
    t.style.top = (b.y * k - 3) + 'px';
    t.style.width = (b.width * k + 6) + 'px';
    t.style.height = (b.height * k + 6) + 'px';
    t.hidden = false;
  }

  function renderObs(i) {
    const pre = $('obs');
    pre.replaceChildren();
    const key = $('use-axtree').checked ? 'axtree' : 'html';
    for (const b of ['diff', 'html', 'axtree']) $('view-' + b).classList.toggle('on', view === b);
    if (view !== 'diff') {
      pre.textContent = obsAt(i)[view] || '(not recorded)';
      return;
    }
    const before = i === 0 ? '' : obsAt(i - 1)[key] || '';
    const after = obsAt(i)[key] || '';
    const parts = Diff.diffLines(before, after);
    let changed = 0;
    for (const p of parts) {
      if (p.added || p.removed) changed++;
      const cls = p.added ? 'add' : p.removed ? 'del' : 'ctx';
      let text = p.value;
      if (!p.added && !p.removed) {
        // Unchanged runs are shortened to their first and last two lines.
        const lines = text.replace(/\n$/, '').split('\n');
        if (lines.length > 5) text = [...lines.slice(0, 2), `… ${lines.length - 4} unchanged lines …`, ...lines.slice(-2)].join('\n') + '\n';
      }
      pre.append(el('span', { class: cls }, text));
    }
    if (i > 0 && changed === 0) pre.prepend(el('div', { class: 'muted', id: 'no-change' }, 'no change since the step before\n'));
  }

  async function rerun() {
    const out = $('rerun-report');
    out.hidden = false;
    out.textContent = 're-running…';
    try {
      const r = await api('api/rerun', { path: ep.summary.path }, { method: 'POST' });
      out.textContent = r.diverged
        ? `diverged at step ${r.step}${r.action ? ' (' + r.action + ')' : ''} in ${r.field}\nrecorded: ${r.recorded}\nre-run:   ${r.rerun}`
        : `no divergence: ${r.steps} steps re-run, every observation as recorded`;
      out.className = r.diverged ? 'bad' : 'good';
      if (r.diverged) show(r.step);
    } catch (err) {
      out.textContent = err.message;
    }
  }

  function route() {
    const p = new URLSearchParams(location.search).get('ep');
    if (p) {
      if (!ep || ep.summary.path !== p) open(p, stepInHash()); else show(current());
    } else {
      ep = null;
      $('list-view').hidden = false;
      $('episode-view').hidden = true;
      loadList();
    }
  }

  $('filter').addEventListener('input', renderList);
  for (const b of ['diff', 'html', 'axtree']) $('view-' + b).addEventListener('click', () => { view = b; renderObs(current()); });
  $('use-axtree').addEventListener('change', () => renderObs(current()));
  $('rerun').addEventListener('click', rerun);
  $('shot-before').addEventListener('load', placeTarget);
  window.addEventListener('resize', placeTarget);
  window.addEventListener('hashchange', () => show(current()));
  window.addEventListener('popstate', route);
  document.addEventListener('keydown', (e) => {
    if (!ep || e.target.tagName === 'INPUT' || e.target.tagName === 'TEXTAREA') return;
    if (e.key === 'ArrowRight' || e.key === 'j') show(current() + 1);
    if (e.key === 'ArrowLeft' || e.key === 'k') show(current() - 1);
  });
  api('api/config').then((c) => { $('rerun').hidden = !c.rerun; }).catch(() => {});
  route();
})();

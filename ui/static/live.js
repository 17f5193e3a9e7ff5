// The live view: the server's open environments, updated from a
// server-sent event stream (/api/events), and one environment's live
// picture, history, last observation and pending verdict.
'use strict';

(() => {
  const { el, api, url, age, num } = ui;
  const $ = (id) => document.getElementById(id);
  let selected = new URLSearchParams(location.search).get('env') || '';
  let envs = [];
  let detail = null;
  let source = null;
  let screenFor = '';

  $('nav-live').href = ui.pageLink('live.html');
  $('nav-replay').href = ui.pageLink('replay.html');

  function matches(e, q) {
    if (!q) return true;
    return [e.id, e.site, e.task_id, e.goal, e.last_action].join(' ').toLowerCase().includes(q);
  }

  function renderList() {
    const q = $('filter').value.trim().toLowerCase();
    const body = $('envs').tBodies[0];
    body.replaceChildren();
    const shown = envs.filter((e) => matches(e, q));
    $('count').textContent = shown.length === envs.length ? `(${envs.length})` : `(${shown.length} of ${envs.length})`;
    for (const e of shown) {
      const settle = e.settled ? num(e.settle_ms) + ' ms' : 'busy';
      body.append(el('tr', { class: 'row' + (e.id === selected ? ' sel' : ''), 'data-env': e.id, onclick: () => select(e.id) },
        el('td', {}, el('code', {}, e.id), e.pending ? el('span', { class: 'bad' }, ' ● waiting') : null),
        el('td', {}, e.site), el('td', {}, e.task_id || ''), el('td', { class: 'goal' }, e.goal || ''),
        el('td', { class: 'num' }, e.step), el('td', {}, el('code', {}, e.last_action || ''), e.last_error ? el('div', { class: 'bad' }, e.last_error) : null),
        el('td', { class: 'num' }, num(e.reward, 2)), el('td', { class: e.settled ? '' : 'bad' }, settle),
        el('td', { class: 'num' }, age(e.created))));
    }
  }

  function renderDetail() {
    $('detail').hidden = !selected;
    if (!selected) return;
    if (!detail) {
      $('detail-title').textContent = selected + ' (closed)';
      $('pending').hidden = true;
      setScreen('');
      return;
    }
    const d = detail;
    $('detail-title').replaceChildren(el('code', {}, d.id), ` · ${d.site}${d.task_id ? ' · ' + d.task_id : ''} · episode ${d.episode}, step ${d.step}`);
    const p = d.pending;
    $('pending').hidden = !p;
    if (p) {
      $('pending-step').textContent = p.step;
      $('pending-action').textContent = p.action;
      $('pending-left').textContent = Math.max(0, Math.round((new Date(p.deadline) - Date.now()) / 1000)) + ' s';
    }
    const state = $('state');
    state.replaceChildren();
    const kv = (k, v, cls) => state.append(el('dt', {}, k), el('dd', { class: cls || '' }, v));
    kv('goal', d.goal || '–');
    kv('url', d.url || '–');
    kv('reward so far', num(d.reward, 2));
    kv('settle', d.settled ? `settled in ${num(d.settle_ms)} ms` : 'not settled', d.settled ? '' : 'bad');
    if (d.last_error) kv('last error', d.last_error, 'bad');
    if (d.approve) kv('approval', 'every action waits for a verdict');
    if (d.preview_ms) kv('preview', `targets outlined for ${d.preview_ms} ms`);
    const body = $('history').tBodies[0];
    body.replaceChildren();
    for (const s of (d.history || []).slice().reverse()) {
      const v = s.review ? `${s.review.verdict}${s.review.comment ? ': ' + s.review.comment : ''}` : '';
      body.append(el('tr', {}, el('td', { class: 'num' }, s.step), el('td', {}, el('code', {}, s.action)),
        el('td', { class: 'bad' }, s.error || ''), el('td', { class: 'num' }, s.reward === null ? 'n/a' : num(s.reward, 2)),
        el('td', { class: 'num' }, num(s.action_ms)), el('td', { class: 'num' + (s.settled ? '' : ' bad') }, num(s.settle_ms)),
        el('td', { class: s.review && s.review.verdict === 'rejected' ? 'bad' : '' }, v)));
    }
    const o = d.obs || {};
    $('obs').textContent = (o.last_action_error ? '! ' + o.last_action_error + '\n\n' : '') + (o.axtree || o.html || '');
    setScreen($('watch').checked ? d.id : '');
  }

  // setScreen shows env's live picture; '' stops it (closing the stream
  // stops the screencast on the server).
  let frames = null;
  function setScreen(id) {
    if (id === screenFor) return;
    screenFor = id;
    if (frames) frames.close();
    frames = null;
    const img = $('screen');
    img.hidden = !id;
    if (!id) return;
    frames = new EventSource(url(`api/envs/${encodeURIComponent(id)}/screen`));
    frames.onmessage = (m) => { img.src = 'data:image/jpeg;base64,' + m.data; };
  }

  function connect() {
    if (source) source.close();
    const params = selected ? { env: selected } : {};
    source = new EventSource(url('api/events', params));
    source.onopen = () => { $('status').textContent = 'live'; };
    source.onerror = () => { $('status').textContent = 'reconnecting…'; };
    source.onmessage = (m) => {
      const msg = JSON.parse(m.data);
      envs = msg.envs || [];
      detail = msg.env || null;
      renderList();
      renderDetail();
    };
  }

  function select(id) {
    selected = id;
    detail = null;
    const u = new URL(location.href);
    if (id) u.searchParams.set('env', id); else u.searchParams.delete('env');
    history.replaceState(null, '', u);
    connect();
  }

  async function decide(approve) {
    const comment = $('comment').value;
    try {
      await api(`api/envs/${encodeURIComponent(selected)}/review`, {}, {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ approve, comment }),
      });
      $('comment').value = '';
      $('status').textContent = approve ? 'approved' : 'rejected';
    } catch (err) {
      $('status').textContent = 'verdict not taken: ' + err.message;
    }
  }

  $('filter').addEventListener('input', renderList);
  $('approve').addEventListener('click', () => decide(true));
  $('reject').addEventListener('click', () => decide(false));
  $('watch').addEventListener('change', renderDetail);
  connect();
})();

// Starts a MiniWoB episode in a loaded task page, the way BrowserGym's
// MiniWoB tasks do (browsergym/miniwob/base.py, AbstractMiniwobTask.setup):
// the human display (the goal text, the timer, the reward board, the click
// canvas and the START cover) is taken out of the page, the page's random
// generator is seeded, the episode time limit set, and the page's own
// episode start (core.startEpisodeReal) run. The display is put back only
// while MiniWoB's own code reads or writes it (reading the goal, ending an
// episode), as BrowserGym does, so the agent sees the task alone. The
// value is the episode's goal (core.getUtterance).
//
// With inPlace, it starts the next episode in a page whose last episode it
// started, as a fresh load of the page would start it: the timers set since
// the page's first start are cleared, the episode counter and reward board
// set back to their values at load, focus, selection and scroll reset. It
// does so only when nothing but the task's area changed since the last
// start (the rest of the document, the history), the page is the one it
// started and has stored nothing (storage, cookies: a fresh context has
// none); else it changes nothing and its value is null (load the page
// again). The mouse is moved out by the caller (envcore.Env.RestartInPlace).
//
// Called as an expression: (START)(seed, maxTimeMs, inPlace).
(async function (seed, maxTimeMs, inPlace) {
  // The document as the task's episodes leave it, but for the task's area
  // (#area, which each episode's genProblem builds anew) and the marks the
  // observation writes.
  function outside() {
    const doc = document.documentElement.cloneNode(true);
    const area = doc.querySelector('#area');
    if (area) area.replaceChildren();
    for (const el of doc.querySelectorAll('[data-semantic-id],[data-clickable],[data-maybe-hoverable]')) {
      el.removeAttribute('data-semantic-id');
      el.removeAttribute('data-clickable');
      el.removeAttribute('data-maybe-hoverable');
    }
    return doc.outerHTML;
  }
  const last = window.__webservMiniwob;
  if (inPlace) {
    if (!last || last.url !== location.href || document.readyState !== 'complete' ||
        history.length !== last.history || outside() !== last.outside || !WOB_TASK_READY ||
        localStorage.length || sessionStorage.length || document.cookie) {
      return null;
    }
    const top = setTimeout(function () {}, 0);
    for (let id = last.timers + 1; id <= top; id++) { clearTimeout(id); clearInterval(id); }
    WOB_EPISODE_ID = 0;
    core.wob_latest = undefined;
    core.wob_scores = undefined;
    if (document.activeElement && document.activeElement !== document.body) document.activeElement.blur();
    for (const el of document.querySelectorAll('*')) {
      if (el.scrollTop || el.scrollLeft) { el.scrollTop = 0; el.scrollLeft = 0; }
    }
  }
  if (document.readyState !== 'complete') {
    await new Promise(function (resolve) { window.addEventListener('load', resolve, { once: true }); });
  }
  if (typeof core !== 'object' || typeof core.startEpisodeReal !== 'function' || typeof Math.seedrandom !== 'function') {
    throw new Error('not a MiniWoB task page: ' + location.href + ' has no MiniWoB core (core.js)');
  }
  const display = ['reward-display', 'click-canvas', 'sync-task-cover'];
  const kept = {};
  let query = null;
  function hide() {
    core.clearTimer();
    document.body.removeEventListener('click', core.canvasDrawClick);
    const q = document.getElementById('query');
    query = q.innerHTML;
    q.innerHTML = '';
    for (const id of display) {
      const el = document.getElementById(id);
      if (el) { kept[id] = el; el.remove(); }
    }
  }
  function show() {
    if (query !== null) document.getElementById('query').innerHTML = query;
    for (const id of display) {
      if (kept[id] && !kept[id].isConnected) document.body.appendChild(kept[id]);
    }
    core.createDisplay();
  }
  function shown(f) {
    return function () {
      show();
      try { return f.apply(this, arguments); } finally { hide(); }
    };
  }
  // Timers with ids above this one were set by episodes, not at load.
  const timers = last ? last.timers : setTimeout(function () {}, 0);
  if (!last) {
    core.getUtterance = shown(core.getUtterance);
    core.endEpisode = shown(core.endEpisode);
    core.startEpisodeReal = shown(core.startEpisodeReal);
    hide();
  }
  // The episode's virtual clock (inject/clock.js), where the environment
  // gave the page one, starts again with the episode, as in a fresh load.
  if (window.__webserv && window.__webserv.clock) window.__webserv.clock.reset(seed);
  Math.seedrandom(seed);
  core.EPISODE_MAX_TIME = maxTimeMs;
  core.startEpisodeReal();
  while (!WOB_TASK_READY) {
    await new Promise(function (resolve) { setTimeout(resolve, 20); });
  }
  const u = core.getUtterance();
  const goal = (u && typeof u === 'object') ? u.utterance : u;
  window.__webservMiniwob = {
    seed: seed, goal: goal, url: location.href, history: history.length,
    timers: timers, outside: outside(),
  };
  return goal;
})

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
// Called as an expression: (START)(seed, maxTimeMs).
(async function (seed, maxTimeMs) {
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
  if (!window.__webservMiniwob) {
    core.getUtterance = shown(core.getUtterance);
    core.endEpisode = shown(core.endEpisode);
    core.startEpisodeReal = shown(core.startEpisodeReal);
    hide();
  }
  Math.seedrandom(seed);
  core.EPISODE_MAX_TIME = maxTimeMs;
  core.startEpisodeReal();
  while (!WOB_TASK_READY) {
    await new Promise(function (resolve) { setTimeout(resolve, 20); });
  }
  const u = core.getUtterance();
  const goal = (u && typeof u === 'object') ? u.utterance : u;
  window.__webservMiniwob = { seed: seed, goal: goal, url: location.href };
  return goal;
})

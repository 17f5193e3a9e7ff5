// The episode's state as MiniWoB's core keeps it (core/core.js): done, the
// reward (scaled by time where the task says so), the raw reward and its
// reason; BrowserGym's MiniWoB tasks read the same globals
// (AbstractMiniwobTask._get_info). A page that is not the task's (the
// agent navigated away) has none of them.
(function () {
  if (typeof WOB_DONE_GLOBAL === 'undefined' || !window.__webservMiniwob) {
    return { url: location.href, task: false };
  }
  return {
    url: location.href, task: true, done: !!WOB_DONE_GLOBAL,
    reward: WOB_REWARD_GLOBAL, raw_reward: WOB_RAW_REWARD_GLOBAL,
    reason: WOB_REWARD_REASON === undefined ? null : WOB_REWARD_REASON,
    episode_id: WOB_EPISODE_ID,
  };
})()

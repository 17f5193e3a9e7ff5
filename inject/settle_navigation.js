// settle_navigation.js — makes a navigation or a new tab that the page
// asks for pending from that moment, until the browser has reported it to
// the Go side (the rule: settle.js).
(function () {
  'use strict';
  const K = window.__webserv && window.__webserv.settleKit;
  if (!K || !K.claim('navigation')) return;
  const { now, current, track, untrack } = K;

  // The original, before any page script can replace it.
  const origAdd = EventTarget.prototype.addEventListener;

  // Between a form submission or a link click and the browser reporting the
  // navigation (Page.frameStartedLoading, which the Go side waits on) lies
  // an IPC hop, long on a loaded machine. The Navigation API's `navigate`
  // event fires synchronously in the document that starts the navigation,
  // so a navigation the action caused is pending from that moment: until a
  // same-document navigation (an SPA route, a fragment) finishes or fails,
  // until the document is replaced, until the Go side has seen the browser
  // start and stop loading since the action (state(k, longMs, loaded): a
  // navigation answered 204 never replaces the document), or at most
  // NAV_BRIDGE ms.
  const NAV_BRIDGE = 1000;
  if (window.navigation && typeof window.navigation.addEventListener === 'function') {
    let navItem = 0;
    const navDone = function () { if (navItem) { untrack(navItem); navItem = 0; } };
    origAdd.call(window.navigation, 'navigate', function (ev) {
      // Same-document navigations (pushState, fragments) are done when the
      // event is; downloads replace nothing.
      if (ev.destination && ev.destination.sameDocument) return;
      if (ev.downloadRequest !== null && ev.downloadRequest !== undefined) return;
      navDone();
      navItem = track(current(), {
        kind: 'navigation', what: 'navigation to ' + String(ev.destination && ev.destination.url).slice(0, 120),
        expires: now() + NAV_BRIDGE,
      });
    });
    origAdd.call(window.navigation, 'navigatesuccess', navDone);
    origAdd.call(window.navigation, 'navigateerror', navDone);
  }

  // New tabs.
  // A link or form aimed at a new browsing context, or window.open, makes
  // the browser create a tab. The tab reaches the Go side after an IPC hop,
  // as a navigation does, and until then the opener looks done: on a loaded
  // machine a step could return before its popup exists. So a tab the action
  // asks for is pending from the moment it is asked for: until the Go side
  // sees the new tab (from then on it waits on that tab and no longer asks
  // this document), until the click or submission turns out cancelled (a
  // later listener called preventDefault), until window.open's window is
  // closed (the environment closes a tab past its tab limit as it appears),
  // or at most TAB_BRIDGE ms (a tab the browser refuses never comes, nor
  // does a link's tab past the limit).
  const TAB_BRIDGE = 3000;
  const named = new Set(); // window names this document has opened
  // newContext reports whether target (a link's, form's or window.open's)
  // names a browsing context that does not exist yet, and remembers it.
  function newContext(target) {
    const t = String(target || '').toLowerCase();
    if (t === '' || t === '_self' || t === '_parent' || t === '_top') return false;
    if (t === '_blank') return true;
    if (named.has(t)) return false; // reused, not opened
    named.add(t);
    return true;
  }
  function baseTarget() {
    const b = document.querySelector('base[target]');
    return b ? b.target : '';
  }
  // win is window.open's result, when there is one: a tab the environment
  // refuses (past its tab limit) is closed at once, and then win.closed.
  function wantTab(what, ev, win) {
    track(current(), { kind: 'tab', what: 'new tab for ' + String(what).slice(0, 120), expires: now() + TAB_BRIDGE, ev: ev, win: win });
  }
  // Links: a plain click follows the link's target; ctrl, meta or shift
  // (and the middle button, auxclick) open any link in a new tab.
  const onLinkClick = function (ev) {
    if (ev.button !== 0 && !(ev.type === 'auxclick' && ev.button === 1)) return;
    const path = ev.composedPath();
    for (let i = 0; i < path.length; i++) {
      const el = path[i];
      if (!(el instanceof HTMLAnchorElement || el instanceof HTMLAreaElement)) continue;
      if (!el.hasAttribute('href') || el.hasAttribute('download')) return;
      const modified = ev.type === 'auxclick' || ev.ctrlKey || ev.metaKey || ev.shiftKey;
      if (modified || newContext(el.target || baseTarget())) wantTab(el.href, ev);
      return;
    }
  };
  origAdd.call(window, 'click', onLinkClick, { capture: true, passive: true });
  origAdd.call(window, 'auxclick', onLinkClick, { capture: true, passive: true });
  origAdd.call(window, 'submit', function (ev) {
    const form = ev.target;
    if (!(form instanceof HTMLFormElement)) return;
    const sub = ev.submitter;
    const target = (sub && sub.hasAttribute('formtarget') ? sub.formTarget : form.target) || baseTarget();
    if (newContext(target)) wantTab(form.action, ev);
  }, { capture: true, passive: true });
  // window.open: a null result is a refused popup, unless noopener or
  // noreferrer asked for the null.
  const oOpen = window.open;
  if (typeof oOpen === 'function') {
    // Declared without parameters, as the original is (open.length is 0).
    window.open = function open() {
      const w = oOpen.apply(this === undefined ? window : this, arguments);
      const url = arguments[0], target = arguments[1], features = arguments[2];
      const opened = w !== null || /noopener|noreferrer/i.test(String(features || ''));
      if (opened && newContext(target === undefined ? '_blank' : target)) wantTab(url || 'about:blank', null, w);
      return w;
    };
  }
})();

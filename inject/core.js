// core.js — creates the one global namespace that every injected file shares.
//
// The bundle is installed with Page.addScriptToEvaluateOnNewDocument, so it runs
// in every document (top frame, same-process iframes, popups) before any page
// script. Everything WebServ keeps in the page hangs off window.__webserv,
// defined non-enumerable and read-only so page code that walks `window` or
// reassigns globals does not see or break it. Running the bundle twice in one
// document (two sessions installed it, say) is harmless: each file returns
// early when its part is already there.
(function () {
  'use strict';
  if (Object.prototype.hasOwnProperty.call(window, '__webserv')) return;
  Object.defineProperty(window, '__webserv', {
    value: {
      version: 1,
      // Originals captured before any page script can replace them.
      stringify: JSON.stringify,
      now: performance.now.bind(performance),
    },
    enumerable: false,
    configurable: false,
    writable: false,
  });
})();

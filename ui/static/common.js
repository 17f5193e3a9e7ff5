// Shared helpers of the WebServ UI pages: API calls that carry the page's
// own ?token= on, and small DOM builders.
'use strict';

const ui = (() => {
  const token = new URLSearchParams(location.search).get('token');

  // url adds the page's token (when it has one) to an API path.
  function url(path, params) {
    const u = new URL(path, location.href);
    for (const [k, v] of Object.entries(params || {})) u.searchParams.set(k, v);
    if (token) u.searchParams.set('token', token);
    return u.pathname + u.search;
  }

  // api fetches JSON; a reply with {error} throws it as an Error.
  async function api(path, params, init) {
    const r = await fetch(url(path, params), init);
    const body = await r.json().catch(() => ({ error: r.status + ' ' + r.statusText }));
    if (!r.ok) throw new Error(body.error || r.statusText);
    return body;
  }

  // el builds an element: el('td', {class: 'num'}, 'text', child, ...).
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith('on')) e.addEventListener(k.slice(2), v); else e.setAttribute(k, v === true ? '' : v);
    }
    for (const k of kids) if (k !== undefined && k !== null) e.append(k instanceof Node ? k : String(k));
    return e;
  }

  function age(t) {
    const s = Math.max(0, (Date.now() - new Date(t).getTime()) / 1000);
    if (s < 90) return Math.round(s) + ' s';
    if (s < 5400) return Math.round(s / 60) + ' min';
    return (s / 3600).toFixed(1) + ' h';
  }

  function num(x, digits) { return typeof x === 'number' ? x.toFixed(digits === undefined ? 0 : digits) : '–'; }

  // pageLink keeps the token on links between pages.
  function pageLink(page, params) { return url(page, params); }

  return { url, api, el, age, num, pageLink, token };
})();

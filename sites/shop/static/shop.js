// Storefront behaviour. Everything here is what makes the shop a hard,
// realistic page for a web agent: content that appears only on hover, and
// content that arrives by fetch after the page has loaded.
(function () {
  'use strict';

  // Category menus open on hover only (mouseenter), like most shop mega
  // menus; the links inside are invisible until then.
  for (const menu of document.querySelectorAll('[data-menu]')) {
    menu.addEventListener('mouseenter', () => menu.classList.add('open'));
    menu.addEventListener('mouseleave', () => menu.classList.remove('open'));
  }

  // Tooltips, also hover-only.
  for (const tip of document.querySelectorAll('[data-tip]')) {
    tip.addEventListener('mouseenter', () => tip.classList.add('open'));
    tip.addEventListener('mouseleave', () => tip.classList.remove('open'));
  }

  // As-you-type search suggestions: debounced 250 ms, then fetched from
  // /api/suggest (which itself takes a moment, like a search backend).
  // A late answer for an older query is dropped.
  for (const input of document.querySelectorAll('[data-suggest]')) {
    const list = input.form.querySelector('.suggestions');
    let timer = 0;
    let latest = '';
    input.addEventListener('input', () => {
      clearTimeout(timer);
      const q = input.value.trim();
      latest = q;
      if (q.length < 2) {
        list.hidden = true;
        list.replaceChildren();
        return;
      }
      timer = setTimeout(async () => {
        const res = await fetch('/api/suggest?q=' + encodeURIComponent(q));
        const body = await res.json();
        if (q !== latest) return;
        list.replaceChildren(...body.suggestions.map((s) => {
          const li = document.createElement('li');
          const a = document.createElement('a');
          a.href = s.url;
          a.textContent = s.name;
          li.append(a, ' ' + s.price);
          return li;
        }));
        list.hidden = body.suggestions.length === 0;
      }, 250);
    });
  }

  // Add to cart without a reload: the form posts JSON to /api/cart and the
  // mini-cart count and a message update in place. Without JavaScript the
  // form still works (POST /cart/add).
  for (const form of document.querySelectorAll('[data-add-to-cart]')) {
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const data = new FormData(form);
      const msg = form.querySelector('[data-cart-message]');
      const res = await fetch('/api/cart', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({
          product_id: Number(data.get('product_id')),
          size: data.get('size') || '',
          colour: data.get('colour') || '',
          qty: Number(data.get('qty') || 1),
        }),
      });
      const body = await res.json();
      if (!res.ok) {
        msg.textContent = 'Could not add to cart: ' + body.error + '.';
        msg.className = 'form-message error';
        return;
      }
      msg.textContent = body.message;
      msg.className = 'form-message ok';
      for (const c of document.querySelectorAll('[data-cart-count]')) c.textContent = body.count;
    });
  }
})();

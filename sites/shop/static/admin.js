// Admin dashboard: each report widget loads its numbers by fetch after the
// page has rendered (the reports take a moment, as real ones do).
(function () {
  'use strict';

  function table(rows, cols) {
    const t = document.createElement('table');
    t.className = 'table';
    for (const r of rows) {
      const tr = t.insertRow();
      for (const c of cols) tr.insertCell().textContent = r[c];
    }
    return t;
  }

  const render = {
    sales: (d) => {
      const p = document.createElement('p');
      p.textContent = d.orders + ' orders, revenue ' + d.revenue + ', ' + d.pending + ' pending';
      return p;
    },
    bestsellers: (d) => table(d.products, ['name', 'qty']),
    recent: (d) => table(d.orders, ['Number', 'Customer', 'Status', 'Total']),
  };

  for (const w of document.querySelectorAll('[data-report]')) {
    const name = w.dataset.report;
    const body = w.querySelector('.widget-body');
    fetch('/admin/api/report/' + name)
      .then((r) => r.json())
      .then((d) => body.replaceChildren(render[name](d)))
      .catch((e) => { body.textContent = 'Could not load this report: ' + e; });
  }
})();

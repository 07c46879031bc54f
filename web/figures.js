// figures.js -- the figures page: docs/figures/index.md as attn embedded it (sections in the
// write-up's order, captions, charts, the tables it links), then the claims' table and charts
// of docs/claims.md. A small Markdown reader for what those files use: headings, paragraphs,
// images, links, `code`, **bold**, pipe tables, fenced code. Text goes in as textContent.
'use strict';

async function text(path) {
  try {
    const r = await fetch(path);
    return r.ok ? await r.text() : null;
  } catch (e) {
    return null;
  }
}

// Inline Markdown into nodes: `code`, **bold**, [text](target). dir: where relative links
// point ("/figures/"); links to files that are not embedded stay text.
function inline(s, dir, includes) {
  const out = [];
  const re = /`([^`]+)`|\*\*([^*]+)\*\*|!?\[((?:[^\]]|\[[^\]]*\])*)\]\(([^)\s]+)\)/g;
  let at = 0, m;
  while ((m = re.exec(s))) {
    if (m.index > at) out.push(document.createTextNode(s.slice(at, m.index)));
    if (m[1] !== undefined) out.push(el('code', { text: m[1] }));
    else if (m[2] !== undefined) out.push(el('strong', { text: m[2] }));
    else {
      const target = m[4];
      if (/\.md$/.test(target) && includes) includes.push(target);
      if (/\.png$/.test(target)) out.push(el('a', { href: dir + target, text: m[3] }));
      else out.push(document.createTextNode(m[3]));
    }
    at = re.lastIndex;
  }
  if (at < s.length) out.push(document.createTextNode(s.slice(at)));
  return out;
}

function table(lines, dir) {
  const rows = lines.map((l) => l.replace(/^\||\|$/g, '').split('|').map((c) => c.trim()));
  const t = el('table', { class: 'md-table' });
  const head = el('tr');
  for (const c of rows[0]) head.append(el('th', {}, ...inline(c, dir)));
  t.append(el('thead', {}, head));
  const body = el('tbody');
  for (const r of rows.slice(1)) {
    if (r.every((c) => /^:?-+:?$/.test(c))) continue;
    const tr = el('tr');
    for (const c of r) tr.append(el('td', {}, ...inline(c, dir)));
    body.append(tr);
  }
  t.append(body);
  return el('div', { class: 'table-wrap' }, t);
}

// Renders md into box; headings shift by `shift` levels; linked .md files are read and shown
// after the paragraph that names them.
async function render(md, box, dir, shift) {
  const lines = md.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (!line.trim()) continue;
    if (line.startsWith('```')) {
      const code = [];
      for (i++; i < lines.length && !lines[i].startsWith('```'); i++) code.push(lines[i]);
      box.append(el('pre', { class: 'md-code', text: code.join('\n') }));
      continue;
    }
    const h = line.match(/^(#{1,4}) (.*)$/);
    if (h) {
      const level = Math.min(6, h[1].length + shift);
      if (h[1].length === 1 && shift === 0) continue; // the page has its own title
      box.append(el(`h${level}`, {}, ...inline(h[2], dir)));
      continue;
    }
    const img = line.match(/^!\[(.*)\]\(([^)\s]+)\)\s*$/); // alt texts hold [CLS]
    if (img) {
      box.append(el('figure', {}, el('a', { href: dir + img[2] }, el('img', { src: dir + img[2], alt: img[1], loading: 'lazy' }))));
      continue;
    }
    if (line.startsWith('|') && /^\|\s*:?-+/.test(lines[i + 1] || '')) {
      const rows = [];
      for (; i < lines.length && lines[i].startsWith('|'); i++) rows.push(lines[i]);
      i--;
      box.append(table(rows, dir));
      continue;
    }
    const para = [line];
    for (; i + 1 < lines.length && lines[i + 1].trim() && !/^(#|!\[|```)/.test(lines[i + 1]); i++)
      para.push(lines[i + 1]);
    const includes = [];
    // the SVG twins are not embedded: their links go
    const prose = para.join(' ').replace(/\s*\(\[SVG\]\([^)]*\)\)/g, '');
    const p = el('p', {}, ...inline(prose, dir, includes));
    const prev = box.lastElementChild;
    box.append(prev && prev.tagName === 'FIGURE' && !prev.querySelector('figcaption')
      ? (prev.append(el('figcaption', {}, ...p.childNodes)), el('span')) : p);
    for (const inc of includes) {
      const sub = await text(dir + inc);
      if (sub === null) continue;
      const div = el('div', { class: 'md-include', 'data-file': inc });
      await render(sub, div, dir, 3);
      box.append(div);
    }
  }
}

// docs/claims.md's table: each claim, its verdict and its chart.
async function claims(box) {
  const md = await text('/claims/claims.md');
  if (md === null) return;
  box.append(el('h2', { text: '\u00a710 Claims, checked' }));
  box.append(el('p', { text: 'attn experiment turns each claim into a measurement on the course-review task and ' +
    'reaches a verdict by a rule written before the runs (docs/claims.md has the details).' }));
  const lines = md.split('\n');
  const first = lines.findIndex((l) => l.startsWith('|'));
  const rows = [];
  for (let i = first; i >= 0 && i < lines.length && lines[i].startsWith('|'); i++) rows.push(lines[i]);
  const grid = el('div', { class: 'claims' });
  for (const line of rows.slice(2)) {
    const c = line.replace(/^\||\|$/g, '').split('|').map((x) => x.trim());
    if (c.length < 5) continue;
    const chart = (c[4].match(/\(claims\/([^)]+\.png)\)/) || [])[1];
    const fig = el('figure', { class: 'claim' });
    if (chart) fig.append(el('a', { href: `/claims/${chart}` }, el('img', { src: `/claims/${chart}`, alt: c[0], loading: 'lazy' })));
    fig.append(el('figcaption', {}, el('span', {}, ...inline(c[0], '/claims/')), ' (', ...inline(c[1], '/claims/'),
      '): ', ...inline(c[2], '/claims/'), ' \u2014 ', ...inline(c[3], '/claims/')));
    grid.append(fig);
  }
  box.append(grid);
}

(async function () {
  const box = document.getElementById('figures');
  const index = await text('/figures/index.md');
  if (index === null) {
    box.append(el('p', { class: 'hint', text: 'No figures were built into this attn. Run "attn figures" (it writes ' +
      'docs/figures/) and build attn again to see them here.' }));
  } else {
    await render(index, box, '/figures/', 0);
  }
  await claims(box);
  // wait for the images so that a reader (or a test) sees the page whole
  await Promise.all(Array.from(box.querySelectorAll('img')).map((i) => (i.complete ? null :
    new Promise((res) => { i.loading = 'eager'; i.addEventListener('load', res); i.addEventListener('error', res); }))));
  document.body.dataset.ready = 'true';
})();

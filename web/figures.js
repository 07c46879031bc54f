// figures.js -- the figures page: every PNG attn was built with (/api/figures), or a note.
'use strict';

(async function () {
  const box = document.getElementById('figures');
  let list = [];
  try {
    const r = await fetch('/api/figures');
    list = (await r.json()).figures || [];
  } catch (e) {
    list = [];
  }
  if (list.length === 0) {
    const p = document.createElement('p');
    p.className = 'hint';
    p.textContent = 'No figures were built into this attn. Run "attn figures" (it writes ' +
      'docs/figures/) and build attn again to see them here.';
    box.append(p);
    return;
  }
  for (const path of list) {
    const fig = document.createElement('figure');
    const img = document.createElement('img');
    img.src = path;
    const name = path.replace(/^\/figures\//, '').replace(/\.png$/, '');
    img.alt = name;
    const cap = document.createElement('figcaption');
    cap.textContent = name;
    fig.append(img, cap);
    box.append(fig);
  }
})();

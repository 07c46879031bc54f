// app.js -- the explorer page of attn serve: plain JavaScript, no libraries. Everything the
// user typed is put into the page as text (textContent), never as HTML.
'use strict';

const EXAMPLES = [
  'the lecture was not very helpful',
  'the professor was great although the coffee was terrible',
  'the exam was never boring but the wifi was awful',
  'honestly in my opinion the seminar seemed quite confusing while the library was excellent',
  'the textbook was extremely poor while the weather felt useless',
  'in the end in my opinion if you ask my friends honestly the tutorial is not terrible but the wifi seemed quite helpful',
];
const ATTN_RGB = [255, 140, 0];
const POS_RGB = [40, 160, 70];
const NEG_RGB = [215, 50, 50];

const state = {
  models: [], sets: [], vocab: [], words: new Map(), byCategory: new Map(),
  data: null, ids: [], swapAt: -1, seq: 0, igSteps: 0,
};

const $ = (id) => document.getElementById(id);

function el(tag, props, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === 'text') e.textContent = v;
    else if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}

function svg(tag, attrs) {
  const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}

function rgba(rgb, a) {
  const alpha = Math.max(0, Math.min(1, a));
  return `rgba(${rgb[0]}, ${rgb[1]}, ${rgb[2]}, ${alpha.toFixed(3)})`;
}

async function api(path, body) {
  const init = body === undefined ? {} : {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
  };
  const r = await fetch(path, init);
  const j = await r.json();
  if (!r.ok) {
    const err = new Error(j.error ? j.error.message : r.statusText);
    err.info = j.error || {};
    throw err;
  }
  return j;
}

// ---- the tokenizer, as attn's (src/data/vocab.c): lower case, punctuation, quotes and brackets
// removed, split on white space.
function tokenize(text) {
  return text.toLowerCase().replace(/[.,!?;:"'`()[\]{}\u201c\u201d\u2018\u2019\u201e\u00ab\u00bb]/g, '')
    .split(/\s+/).filter((w) => w.length > 0);
}

function editDistance(a, b) {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++)
      next[j] = Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length];
}

function nearest(word) {
  let best = null, bestD = Infinity;
  for (const v of state.vocab) {
    const d = editDistance(word, v.word);
    if (d < bestD) { bestD = d; best = v.word; }
  }
  return best;
}

// ---- the sentence box: completion, unknown words, examples --------------------------------------

function currentPrefix() {
  const box = $('sentence');
  const before = box.value.slice(0, box.selectionStart);
  const m = before.match(/([A-Za-z]+)$/);
  return m ? m[1].toLowerCase() : '';
}

function complete(word) {
  const box = $('sentence');
  const pos = box.selectionStart;
  const before = box.value.slice(0, pos).replace(/[A-Za-z]+$/, '');
  const after = box.value.slice(pos);
  box.value = before + word + (after.startsWith(' ') ? '' : ' ') + after;
  const at = before.length + word.length + 1;
  box.setSelectionRange(at, at);
  box.focus();
  onInput();
}

function showCompletions() {
  const box = $('suggest');
  box.replaceChildren();
  const p = currentPrefix();
  if (!p) return;
  const hits = state.vocab.filter((v) => v.word.startsWith(p) && v.word !== p).slice(0, 12);
  for (const v of hits)
    box.append(el('button', { class: 'chip', type: 'button', text: v.word, onclick: () => complete(v.word) }));
}

function replaceWord(i, word) {
  const words = tokenize($('sentence').value);
  words[i] = word;
  $('sentence').value = words.join(' ');
  onInput(true);
}

// Marks unknown words with the nearest vocabulary word; true when every word is known.
function checkWords(words) {
  const box = $('unknown');
  box.replaceChildren();
  let ok = true;
  words.forEach((w, i) => {
    if (state.words.has(w)) return;
    ok = false;
    const near = nearest(w);
    box.append(el('span', { class: 'bad', text: w }), ` (word ${i + 1}) is not in the vocabulary; did you mean `,
      el('button', { class: 'chip', type: 'button', text: near, onclick: () => replaceWord(i, near) }), '? ');
  });
  return ok;
}

let timer = 0;
function onInput(now) {
  showCompletions();
  clearTimeout(timer);
  timer = setTimeout(() => {
    const words = tokenize($('sentence').value);
    if (words.length > 0 && checkWords(words)) explain();
  }, now === true ? 0 : 300);
}

// ---- explaining ----------------------------------------------------------------------------------

async function explain() {
  const sentence = $('sentence').value.trim();
  $('error').textContent = '';
  if (!sentence) return;
  const seq = ++state.seq;
  try {
    const body = state.igSteps ? { sentence, ig_steps: state.igSteps } : { sentence };
    const data = await api('/api/explain', body);
    if (seq !== state.seq) return; // a later request is on its way
    state.data = data;
    state.ids = tokenize(sentence);
    render();
    document.body.dataset.explained = String(seq);
  } catch (e) {
    if (seq !== state.seq) return;
    $('error').textContent = e.message;
    if (e.info && e.info.code === 'unknown_word') checkWords(tokenize(sentence));
  }
}

function render() {
  renderCards();
  renderSwap();
  renderAttentionControls();
  renderAttention();
  renderCurves();
  renderSaliency();
}

function renderCards() {
  $('verdict-section').hidden = false;
  const box = $('cards');
  box.replaceChildren();
  for (const x of state.data.explanations) {
    const p = x.explain.probability;
    const pos = p > 0.5;
    const bar = el('div', { class: 'bar' }, el('div'));
    bar.firstChild.style.width = `${(100 * p).toFixed(1)}%`;
    box.append(el('div', { class: 'card', 'data-model': x.model },
      el('div', { class: 'name', text: `${x.model} (seed ${x.seed})` }),
      el('div', { class: `label ${pos ? 'pos' : 'neg'}`, text: pos ? 'positive' : 'negative' }),
      el('div', { text: `p(positive) = ${p.toFixed(4)}` }), bar));
  }
}

function renderSwap() {
  const box = $('swap-words');
  box.replaceChildren();
  $('swap-choices').replaceChildren();
  state.ids.forEach((w, i) => {
    const b = el('button', { class: 'tok', type: 'button', text: w, onclick: () => showSwaps(i) });
    if (i === state.swapAt) b.classList.add('selected');
    box.append(b);
  });
  if (state.swapAt >= 0 && state.swapAt < state.ids.length) showSwaps(state.swapAt);
}

function showSwaps(i) {
  state.swapAt = i;
  for (const [k, b] of Array.from($('swap-words').children).entries()) b.classList.toggle('selected', k === i);
  const box = $('swap-choices');
  box.replaceChildren();
  const w = state.ids[i];
  const cat = state.words.get(w).category;
  box.append(el('span', { class: 'label', text: `${cat} words:` }));
  for (const v of state.byCategory.get(cat) || []) {
    if (v.word === w) continue;
    box.append(el('button', { class: 'chip', type: 'button', text: v.word, onclick: () => replaceWord(i, v.word) }));
  }
}

function transformer() {
  return state.data && state.data.explanations.find((x) => x.explain.attention);
}

function renderAttentionControls() {
  const t = transformer();
  $('attention-section').hidden = !t;
  if (!t) return;
  const L = t.explain.attention.length, NH = t.explain.attention[0].length;
  const layer = $('layer'), head = $('head');
  if (layer.options.length !== L) {
    layer.replaceChildren(...Array.from({ length: L }, (_, l) => el('option', { value: l, text: String(l) })));
    layer.value = String(L - 1);
  }
  if (head.options.length !== NH + 1) {
    head.replaceChildren(el('option', { value: 'mean', text: 'mean of the heads' }),
      ...Array.from({ length: NH }, (_, h) => el('option', { value: h, text: String(h) })));
    head.value = 'mean';
  }
}

// The [S][S] attention map of the chosen layer and head (or the heads' mean).
function chosenMap(t) {
  const A = t.explain.attention[Number($('layer').value)];
  const h = $('head').value;
  if (h !== 'mean') return A[Number(h)];
  const S = A[0].length;
  return Array.from({ length: S }, (_, q) => Array.from({ length: S }, (_, k) =>
    A.reduce((s, head) => s + head[q][k], 0) / A.length));
}

function renderAttention() {
  const t = transformer();
  if (!t) return;
  const P = chosenMap(t);
  const tokens = t.explain.tokens;
  const cls = P[0];
  const max = Math.max(...cls);
  const row = $('attn-words');
  row.replaceChildren();
  cls.forEach((w, k) => {
    const span = el('span', { class: 'tok', 'data-key': k, 'data-weight': w.toFixed(6),
      title: `${(100 * w).toFixed(1)} % of [CLS]'s attention` },
    el('span', { class: 'w', text: tokens[k] }), el('span', { class: 'v', text: `${(100 * w).toFixed(0)}%` }));
    span.style.backgroundColor = rgba(ATTN_RGB, max > 0 ? w / max : 0);
    row.append(span);
  });
  const table = el('table');
  const head = el('tr', {}, el('th', { text: 'query \\ key' }));
  for (const tok of tokens) head.append(el('th', { text: tok }));
  table.append(el('thead', {}, head));
  const body = el('tbody');
  P.forEach((r, q) => {
    const tr = el('tr', {}, el('th', { text: tokens[q] }));
    r.forEach((p, k) => {
      const td = el('td', { title: `${tokens[q]} \u2192 ${tokens[k]}: ${p.toFixed(3)}` });
      td.style.backgroundColor = rgba(ATTN_RGB, p);
      tr.append(td);
    });
    body.append(tr);
  });
  table.append(body);
  $('heatmap').replaceChildren(table);
}

function renderCurves() {
  const rec = state.data.explanations.filter((x) => x.explain.prefix_probability);
  $('prefix-section').hidden = rec.length === 0;
  const box = $('curves');
  box.replaceChildren();
  for (const x of rec) {
    const p = x.explain.prefix_probability, words = x.explain.tokens;
    const n = p.length, W = Math.max(360, 48 * n + 60), H = 190, left = 40, top = 10, h = 120;
    const X = (i) => left + (n === 1 ? 0 : (i * (W - left - 50)) / (n - 1));
    const Y = (v) => top + (1 - v) * h;
    const g = svg('svg', { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img',
      'aria-label': `${x.model}: probability after each word` });
    for (const v of [0, 0.5, 1]) {
      g.append(svg('line', { x1: left, x2: W - 10, y1: Y(v), y2: Y(v), stroke: v === 0.5 ? '#999' : '#ddd',
        'stroke-dasharray': v === 0.5 ? '4 3' : '' }));
      const lab = svg('text', { x: left - 6, y: Y(v) + 4, 'text-anchor': 'end', 'font-size': 11, fill: '#666' });
      lab.textContent = String(v);
      g.append(lab);
    }
    g.append(svg('polyline', { points: p.map((v, i) => `${X(i)},${Y(v)}`).join(' '), fill: 'none',
      stroke: '#2f7ad1', 'stroke-width': 2 }));
    p.forEach((v, i) => {
      const c = svg('circle', { cx: X(i), cy: Y(v), r: 3.5, fill: v > 0.5 ? '#1c7a33' : '#b3261e' });
      const tip = svg('title', {});
      tip.textContent = `after "${words[i]}": ${v.toFixed(3)}`;
      c.append(tip);
      g.append(c);
      const t = svg('text', { x: X(i), y: top + h + 14, 'font-size': 11, fill: '#333',
        transform: `rotate(40 ${X(i)} ${top + h + 14})` });
      t.textContent = words[i];
      g.append(t);
    });
    box.append(el('div', { class: 'curve' }, el('div', { class: 'title', text: `${x.model} (seed ${x.seed})` }), g));
  }
}

function renderSaliency() {
  $('saliency-section').hidden = false;
  const box = $('saliency');
  box.replaceChildren();
  for (const x of state.data.explanations) {
    const ig = x.explain.saliency.integrated_gradients;
    const s = ig || x.explain.saliency.grad_x_input;
    const what = ig ? 'integrated gradients' : 'gradient \u00d7 input';
    const words = x.explain.attention ? x.explain.tokens.slice(1) : x.explain.tokens;
    const scale = Math.max(...s.map(Math.abs));
    const row = el('div', { class: 'words' });
    s.forEach((v, i) => {
      const span = el('span', { class: 'tok', title: `${what} ${v.toFixed(4)}` },
        el('span', { class: 'w', text: words[i] }), el('span', { class: 'v', text: v.toFixed(2) }));
      span.style.backgroundColor = rgba(v >= 0 ? POS_RGB : NEG_RGB, scale > 0 ? Math.abs(v) / scale : 0);
      row.append(span);
    });
    let title = `${x.model}: ${what}`;
    if (ig) {
      const sum = ig.reduce((a, b) => a + b, 0);
      const want = x.explain.logit - x.explain.ig_baseline_logit;
      title += ` (sum ${sum.toFixed(3)}; logit \u2212 baseline ${want.toFixed(3)}; ${x.explain.ig_steps} steps)`;
    }
    box.append(el('div', { class: 'sal-row', 'data-model': x.model, 'data-method': ig ? 'ig' : 'gxi' },
      el('div', { class: 'title', text: title }), row));
  }
}

// ---- test sets -------------------------------------------------------------------------------------

function fillSeeds() {
  const m = state.models.find((x) => x.name === $('set-model').value);
  $('set-seed').replaceChildren(...(m ? m.seeds : []).map((s) => el('option', { value: s, text: String(s) })));
}

async function evaluateSet() {
  const box = $('set-result');
  box.replaceChildren(el('p', { class: 'hint', text: 'evaluating 1,000 sentences\u2026' }));
  const q = `model=${encodeURIComponent($('set-model').value)}&seed=${encodeURIComponent($('set-seed').value)}`;
  try {
    const r = await api(`/api/sets/${encodeURIComponent($('set-name').value)}?${q}`);
    const list = el('ul', { class: 'misses' });
    for (const m of r.misclassified) {
      list.append(el('li', {},
        el('button', { class: 'chip', type: 'button', text: 'open', onclick: () => openSentence(m.sentence) }),
        el('span', { text: m.sentence }),
        el('span', { class: 'meta', text: `label ${m.label}, p(positive) ${m.probability.toFixed(3)}` })));
    }
    const shown = r.misclassified.length < r.misclassified_total ? ` (the first ${r.misclassified.length} shown)` : '';
    box.replaceChildren(
      el('p', { text: `${r.model} seed ${r.seed} on ${r.set}: accuracy ${(100 * r.accuracy).toFixed(2)} % ` +
        `(${r.correct}/${r.n}), ${r.misclassified_total} misclassified${shown}.` }), list);
  } catch (e) {
    box.replaceChildren(el('p', { class: 'error', text: e.message }));
  }
}

function openSentence(s) {
  $('sentence').value = s;
  state.swapAt = -1;
  onInput(true);
  window.scrollTo({ top: 0 });
}

// ---- start -----------------------------------------------------------------------------------------

async function start() {
  try {
    const [models, vocab] = await Promise.all([api('/api/models'), api('/api/vocab')]);
    state.models = models.models;
    state.sets = models.sets;
    state.vocab = vocab.words;
    for (const v of state.vocab) {
      state.words.set(v.word, v);
      if (!state.byCategory.has(v.category)) state.byCategory.set(v.category, []);
      state.byCategory.get(v.category).push(v);
    }
  } catch (e) {
    $('error').textContent = `cannot reach attn serve: ${e.message}`;
    return;
  }
  for (const s of EXAMPLES)
    $('examples').append(el('button', { class: 'chip', type: 'button', text: s, onclick: () => openSentence(s) }));
  $('set-name').replaceChildren(...state.sets.map((s) => el('option', { value: s, text: s })));
  $('set-model').replaceChildren(...state.models.map((m) => el('option', { value: m.name, text: m.name })));
  fillSeeds();
  $('set-model').addEventListener('change', fillSeeds);
  $('set-go').addEventListener('click', evaluateSet);
  $('sentence').addEventListener('input', () => { state.swapAt = -1; onInput(); });
  $('sentence').addEventListener('click', showCompletions);
  $('sentence').addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') { ev.preventDefault(); explain(); }
    if (ev.key === 'Tab' && $('suggest').firstChild) { ev.preventDefault(); complete($('suggest').firstChild.textContent); }
  });
  $('go').addEventListener('click', explain);
  $('sal-method').addEventListener('change', () => { state.igSteps = Number($('sal-method').value); explain(); });
  $('layer').addEventListener('change', renderAttention);
  $('head').addEventListener('change', renderAttention);
  document.body.dataset.ready = 'true';
}

start();

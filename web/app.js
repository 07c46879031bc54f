// app.js -- the explorer page of attn serve: plain JavaScript, no libraries. Everything the
// user typed is put into the page as text (textContent), never as HTML. The words come from
// /api/vocab (each model's own vocabulary), never from this file.
'use strict';

const ATTN_RGB = [255, 140, 0];
const POS_RGB = [40, 160, 70];
const NEG_RGB = [215, 50, 50];
const SATURATED = 0.99; // p beyond this (or below 1 - this): the note on gradients
const IG_GAP = 0.05; // integrated gradients' sum this far (relative) from logit - baseline: said

const state = {
  models: [], sets: [], groups: [], group: null, vocab: [], words: new Map(), byCategory: new Map(),
  data: null, tokens: [], previous: null, occlusion: null, swapAt: -1, seq: 0,
  method: 'occlusion', obs: null, pendingView: null, headMap: null, headPin: null,
  urlView: null, view: null, unknownSeq: 0,
};

function svg(tag, attrs, text) {
  const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

const pct = (x, d = 0) => `${(100 * x).toFixed(d)} %`;

// POST /api/predict: p(positive) and logits of many sentences for the current models.
async function predict(sentences) {
  const q = `models=${encodeURIComponent(state.group.models.join(','))}`;
  return answer(await fetch(`/api/predict?${q}`, {
    method: 'POST', headers: { 'Content-Type': 'text/plain; charset=utf-8' }, body: sentences.join('\n'),
  }));
}

// One line of text for a suggestion (the comparison's error).
function suggestionText(u) {
  let t = `${u.word} (nearest: ${u.nearest}`;
  if (u.place) t += `; here ${article(u.place.class)} ${u.place.class} such as ${u.place.groups.map((g) => g.words.slice(0, 2).join(', ')).join(', ')}`;
  return `${t})`;
}

// The first of the candidates that is a word of the current vocabulary.
function pick(...candidates) {
  return candidates.find((w) => state.words.has(w)) || candidates[0];
}

// ---- the sentence box: completion, unknown words, examples --------------------------------------

function currentPrefix() {
  const box = $('sentence');
  const before = box.value.slice(0, box.selectionStart);
  const m = before.match(/(\S+)$/);
  return m ? m[1].toLowerCase() : '';
}

function complete(word) {
  const box = $('sentence');
  const pos = box.selectionStart;
  const before = box.value.slice(0, pos).replace(/\S+$/, '');
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

function setSentence(words) {
  $('sentence').value = words.join(' ');
  state.swapAt = -1;
  onInput(true);
}

function replaceWord(i, word) {
  const words = tokenize($('sentence').value);
  words[i] = word;
  setSentence(words);
}

// Marks results of an earlier sentence as stale (or not): the box no longer holds it.
function markStale(stale, why) {
  document.body.dataset.stale = stale ? 'true' : 'false';
  $('results').classList.toggle('stale', stale && state.data !== null);
  $('stale').hidden = !(stale && state.data !== null);
  if (stale && state.data) $('stale').textContent = `${why} The results below are still those of "${state.data.sentence}".`;
}

// Lists the unknown words of the server's unknown_word answer (info) as common.js's lines of
// chips, a click on one taking it into the sentence.
function showUnknown(info) {
  const box = $('unknown');
  box.replaceChildren(...unknownLines(info, replaceWord));
  box.dataset.for = info.sentence || '';
}

// Asks the server for the suggestions for the box's unknown words (the answer to explaining it).
function askUnknown() {
  const sentence = $('sentence').value;
  const seq = ++state.unknownSeq;
  api('/api/explain', { sentence, models: state.group.models }).then(() => {
    if (seq === state.unknownSeq) $('unknown').replaceChildren(); // known after all
  }, (e) => {
    if (seq !== state.unknownSeq) return;
    if (e.info && e.info.code === 'unknown_word') showUnknown({ ...e.info, sentence });
    else $('unknown').replaceChildren(el('div', { class: 'error', text: e.message }));
  });
}

// After a change in the box: a sentence of known words (the tokenizer's words against
// /api/vocab's) is explained, one with an unknown word marks the results stale and asks for
// suggestions; both after 300 ms of quiet (at once when now).
let timer = 0;
function onInput(now) {
  showCompletions();
  clearTimeout(timer);
  state.unknownSeq++; // an answer on its way is for an older box
  const words = tokenize($('sentence').value);
  const known = words.every((w) => state.words.has(w));
  if (known) $('unknown').replaceChildren();
  else markStale(true, 'The box holds a word the models do not know.');
  timer = setTimeout(() => {
    if (words.length === 0) return;
    if (known) explain();
    else askUnknown();
  }, now === true ? 0 : 300);
}

// ---- explaining ----------------------------------------------------------------------------------

async function explain() {
  const sentence = $('sentence').value.trim();
  $('error').textContent = '';
  if (!sentence) return;
  const seq = ++state.seq;
  const igSteps = /^\d+$/.test(state.method) ? Number(state.method) : 0;
  try {
    const body = { sentence, models: state.group.models, qk: true };
    if (igSteps) body.ig_steps = igSteps;
    const data = await api('/api/explain', body);
    if (seq !== state.seq) return; // a later request is on its way
    if (state.data && state.data.sentence !== data.sentence) state.previous = state.data;
    state.data = data;
    state.tokens = tokenize(sentence);
    state.occlusion = null;
    markStale(false);
    render();
    applyUrlView();
    writeFragment();
    document.body.dataset.explained = String(seq);
    if (state.method === 'occlusion') await computeOcclusion(seq);
  } catch (e) {
    if (seq !== state.seq) return;
    state.urlView = null;
    $('error').textContent = e.message;
    markStale(true, 'The models could not read this sentence.');
    if (e.info && e.info.code === 'unknown_word') showUnknown({ ...e.info, sentence });
  }
}

// Occlusion: each model's logit of the sentence without word i, subtracted from its logit.
async function computeOcclusion(seq) {
  const words = state.tokens;
  if (words.length < 2) { state.occlusion = new Map(); renderSaliency(); return; }
  const lines = words.map((_, i) => words.filter((__, k) => k !== i).join(' '));
  const r = await predict(lines);
  if (seq !== state.seq) return;
  state.occlusion = new Map();
  for (const p of r.predictions) {
    const x = state.data.explanations.find((e) => e.model === p.model);
    state.occlusion.set(p.model, p.logits.map((l) => x.explain.logit - l));
  }
  renderSaliency();
  document.body.dataset.occlusion = String(seq);
}

function render() {
  renderCards();
  renderSwap();
  renderAttentionControls();
  state.headPin = null;
  renderModelView();
  renderAttention();
  renderCurves();
  renderSaliency();
  renderObservationResults();
  renderPositions();
  runShuffle(state.seq);
  renderCompare();
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
    const card = el('div', { class: 'card', 'data-model': x.model },
      el('div', { class: 'name', text: `${x.model} (seed ${x.seed})` }),
      el('div', { class: `label ${pos ? 'pos' : 'neg'}`, text: pos ? 'positive' : 'negative' }),
      el('div', { text: `p(positive) = ${p.toFixed(4)}` }), bar);
    const before = state.previous && state.previous.explanations.find((y) => y.model === x.model);
    if (before) {
      const q = before.explain.probability;
      const flipped = (q > 0.5) !== pos;
      card.append(el('div', { class: `moved${flipped ? ' flipped' : ''}`,
        text: `was ${q.toFixed(4)} \u2192 now ${p.toFixed(4)}${flipped ? ' (answer changed)' : ''}`,
        title: `before: "${state.previous.sentence}"` }));
    }
    box.append(card);
  }
}

// ---- counterfactuals -------------------------------------------------------------------------------

const ADJECTIVE = new Set(['positive', 'negative']);

// The changes of word i: [label, words after the change].
function counterfactuals(i) {
  const words = state.tokens, w = words[i];
  const v = state.words.get(w);
  const cat = v ? v.category : 'word';
  const out = [];
  const without = words.filter((_, k) => k !== i);
  const withAt = (k, x) => [...words.slice(0, k), x, ...words.slice(k)];
  const negations = state.byCategory.get('negation') || [];
  if (ADJECTIVE.has(cat)) {
    for (const c of ['positive', 'negative'])
      for (const a of state.byCategory.get(c) || [])
        if (a.word !== w) out.push([a.word, words.map((x, k) => (k === i ? a.word : x)), c]);
  } else if (cat === 'word' || cat === 'negation') {
    const pool = cat === 'negation' ? negations : state.vocab.length <= 60 ? state.vocab : [];
    for (const a of pool)
      if (a.word !== w) out.push([a.word, words.map((x, k) => (k === i ? a.word : x)), cat]);
  } else {
    for (const a of state.byCategory.get(cat) || [])
      if (a.word !== w) out.push([a.word, words.map((x, k) => (k === i ? a.word : x)), cat]);
  }
  // a negation after a verb (or before an adjective) that has none
  const next = words[i + 1], prev = words[i - 1];
  const isNeg = (x) => x !== undefined && negations.some((n) => n.word === x);
  for (const n of negations) {
    if (cat === 'verb' && !isNeg(next)) out.push([`insert \u2018${n.word}\u2019 after it`, withAt(i + 1, n.word), 'negation']);
    if (ADJECTIVE.has(cat) && !isNeg(prev) && !isNeg(words[i - 2]))
      out.push([`insert \u2018${n.word}\u2019 before it`, withAt(i, n.word), 'negation']);
  }
  if (words.length > 1) out.push([`delete \u2018${w}\u2019`, without, 'delete']);
  return out;
}

function renderSwap() {
  const box = $('swap-words');
  box.replaceChildren();
  $('swap-choices').replaceChildren();
  state.tokens.forEach((w, i) => {
    const b = el('button', { class: 'tok', type: 'button', text: w, onclick: () => showSwaps(i) });
    if (i === state.swapAt) b.classList.add('selected');
    box.append(b);
  });
  if (state.swapAt >= 0 && state.swapAt < state.tokens.length) showSwaps(state.swapAt);
}

async function showSwaps(i) {
  state.swapAt = i;
  for (const [k, b] of Array.from($('swap-words').children).entries()) b.classList.toggle('selected', k === i);
  const box = $('swap-choices');
  const changes = counterfactuals(i);
  const models = state.data.explanations;
  const table = el('table', { class: 'swap-table' });
  const head = el('tr', {}, el('th', { text: `change \u2018${state.tokens[i]}\u2019` }));
  for (const x of models) head.append(el('th', { text: `${x.model} (now ${x.explain.probability.toFixed(3)})` }));
  table.append(el('thead', {}, head));
  const body = el('tbody');
  const cells = [];
  for (const [label, words, kind] of changes) {
    const tr = el('tr', { class: `kind-${kind}` }, el('td', {},
      el('button', { class: 'chip', type: 'button', text: label, onclick: () => setSentence(words) })));
    const row = models.map(() => el('td', { class: 'p', text: '\u2026' }));
    tr.append(...row);
    cells.push(row);
    body.append(tr);
  }
  table.append(body);
  box.replaceChildren(table);
  const seq = state.seq;
  try {
    const r = await predict(changes.map((c) => c[1].join(' ')));
    if (seq !== state.seq || state.swapAt !== i) return;
    models.forEach((x, m) => {
      const pr = r.predictions.find((p) => p.model === x.model).probabilities;
      const now = x.explain.probability;
      pr.forEach((p, k) => {
        const td = cells[k][m];
        const d = p - now;
        const flip = (p > 0.5) !== (now > 0.5);
        td.textContent = `${p.toFixed(3)} ${Math.abs(d) < 0.0005 ? '\u00b7' : d > 0 ? '\u25b2' : '\u25bc'}${flip ? ' \u21c4' : ''}`;
        td.classList.toggle('flip', flip);
        td.style.backgroundColor = rgba(p > 0.5 ? POS_RGB : NEG_RGB, Math.abs(p - 0.5) * 0.6);
      });
    });
    box.dataset.ready = String(i);
  } catch (e) {
    box.append(el('p', { class: 'error', text: e.message }));
  }
}

// ---- the Transformer's attention -------------------------------------------------------------------

function transformer() {
  return state.data && state.data.explanations.find((x) => x.explain.attention);
}

// A layer as the write-up numbers it (from 1), the one label of the page: "1 (first)", "2 (last)";
// docs/what-models-look-at.md, "Layer numbering", maps it to attn's attention[l], counted from 0.
function layerLabel(l, L) {
  return `${l + 1}${l === 0 ? ' (first)' : l === L - 1 ? ' (last)' : ''}`;
}

function renderAttentionControls() {
  const t = transformer();
  $('attention-section').hidden = !t;
  if (!t) return;
  const L = t.explain.attention.length, NH = t.explain.attention[0].length;
  const layer = $('layer'), head = $('head');
  if (layer.options.length !== L) {
    layer.replaceChildren(...Array.from({ length: L }, (_, l) => el('option', { value: l, text: layerLabel(l, L) })));
    layer.value = String(L - 1);
  }
  if (head.options.length !== NH + 1) {
    head.replaceChildren(el('option', { value: 'mean', text: 'mean of the heads' }),
      ...Array.from({ length: NH }, (_, h) => el('option', { value: h, text: String(h + 1) })));
    head.value = 'mean';
  }
  if (state.pendingView) {
    const v = state.pendingView;
    if (v.layer !== undefined) layer.value = String(Math.min(v.layer, L - 1));
    if (v.head !== undefined && v.head !== 'best') head.value = String(v.head);
  }
}

// The [S][S] attention map of a layer and head (or the heads' mean).
function attentionMap(t, l, h) {
  const A = t.explain.attention[l];
  if (h !== 'mean') return A[Number(h)];
  const S = A[0].length;
  return Array.from({ length: S }, (_, q) => Array.from({ length: S }, (_, k) =>
    A.reduce((s, hd) => s + hd[q][k], 0) / A.length));
}

function chosenMap(t) {
  return attentionMap(t, Number($('layer').value), $('head').value);
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
  // the heat map: a fixed-layout table as wide as its card, however many words
  const table = el('table');
  const cols = el('colgroup', {}, el('col', { class: 'qcol' }));
  for (let k = 0; k < tokens.length; k++) cols.append(el('col'));
  table.append(cols);
  const head = el('tr', {}, el('th', { text: 'query \\ key' }));
  for (const tok of tokens) head.append(el('th', { title: tok }, el('span', { text: tok })));
  table.append(el('thead', {}, head));
  const body = el('tbody');
  P.forEach((r, q) => {
    const tr = el('tr', {}, el('th', { text: tokens[q], title: tokens[q] }));
    r.forEach((p, k) => {
      const td = el('td', { title: `${tokens[q]} \u2192 ${tokens[k]}: ${p.toFixed(3)}` });
      td.style.backgroundColor = rgba(ATTN_RGB, p);
      tr.append(td);
    });
    body.append(tr);
  });
  table.append(body);
  table.classList.toggle('dense', tokens.length > 24);
  $('heatmap').replaceChildren(table);
  markModelView();
  renderHeadView(t, P);
  renderQkView(t);
}

// ---- the model view and the head view (as in bertviz) ----------------------------------------------

const ATTN_FILL = `rgb(${ATTN_RGB.join(', ')})`;
const shortWord = (w) => (w.length > 12 ? `${w.slice(0, 11)}\u2026` : w);

// Every layer x head at once: a grid of small query x key maps (rows = layers, columns = heads),
// each entry's opacity its weight as in the heat map; a click shows that layer and head below.
function renderModelView() {
  const t = transformer();
  if (!t) return;
  const A = t.explain.attention, L = A.length, NH = A[0].length;
  const tokens = t.explain.tokens, S = tokens.length;
  const grid = el('div', { class: 'mv-grid' });
  grid.style.gridTemplateColumns = `auto repeat(${NH}, minmax(0, 9.5em))`;
  grid.append(el('span', { class: 'mv-corner', text: 'layer \\ head' }));
  for (let h = 0; h < NH; h++) grid.append(el('span', { class: 'mv-head', text: `head ${h + 1}` }));
  A.forEach((heads, l) => {
    grid.append(el('span', { class: 'mv-layer', text: `layer ${layerLabel(l, L)}` }));
    heads.forEach((P, h) => {
      const name = `layer ${layerLabel(l, L)}, head ${h + 1} (attention[${l}][${h}] in the JSON)`;
      const map = svg('svg', { viewBox: `0 0 ${S} ${S}`, preserveAspectRatio: 'none', 'shape-rendering': 'crispEdges',
        'aria-hidden': 'true' });
      map.append(svg('rect', { x: 0, y: 0, width: S, height: S, fill: '#fff' }));
      P.forEach((row, q) => row.forEach((p, k) => {
        map.append(svg('rect', { x: k, y: q, width: 1, height: 1, fill: ATTN_FILL, 'fill-opacity': p.toFixed(3),
          'data-q': q, 'data-k': k }));
      }));
      grid.append(el('button', { class: 'mv-cell', type: 'button', 'data-layer': l, 'data-head': h, title: name,
        'aria-label': name, onclick: () => selectHead(l, h) }, map));
    });
  });
  $('model-view').replaceChildren(grid);
}

function selectHead(l, h) {
  state.view = 'model-view';
  $('layer').value = String(l);
  $('head').value = String(h);
  renderAttention();
}

// Outlines the model view's map of the chosen layer and head (every head of the layer for the mean).
function markModelView() {
  const l = $('layer').value, h = $('head').value;
  for (const c of document.querySelectorAll('#model-view .mv-cell')) {
    const on = c.dataset.layer === l && (h === 'mean' || c.dataset.head === h);
    c.classList.toggle('selected', on);
    c.setAttribute('aria-pressed', String(on));
  }
}

// The chosen layer and head as two columns of words, queries left and keys right, a line from
// each query to each key with its weight as opacity; hovering (or tapping) a query keeps only its
// lines and shades the keys by their weight.
function renderHeadView(t, P) {
  const tokens = t.explain.tokens, S = tokens.length;
  const L = t.explain.attention.length, l = Number($('layer').value), h = $('head').value;
  const which = `layer ${layerLabel(l, L)}, ${h === 'mean' ? 'the mean of the heads' : `head ${Number(h) + 1}`}`;
  $('head-view-title').textContent = `Head view: ${which}`;
  state.headMap = P;
  if (state.headPin !== null && state.headPin >= S) state.headPin = null;
  const box = $('head-view');
  const W = Math.max(240, Math.min(box.clientWidth || 560, 560));
  const dense = S > 24;
  const rowH = dense ? 15 : 20, font = dense ? 11 : 13, top = 4;
  const colW = Math.min(104, Math.floor(W * 0.32)), x1 = colW, x2 = W - colW;
  const Y = (i) => top + (i + 0.5) * rowH;
  const g = svg('svg', { width: W, height: 2 * top + S * rowH, viewBox: `0 0 ${W} ${2 * top + S * rowH}`,
    role: 'img', 'aria-label': `${which}: each word's attention to every word`, 'data-layer': l, 'data-head': h });
  const lines = svg('g', { class: 'hv-lines' });
  P.forEach((row, q) => row.forEach((p, k) => {
    lines.append(svg('line', { x1: x1 + 2, y1: Y(q), x2: x2 - 2, y2: Y(k), stroke: ATTN_FILL, 'stroke-width': 2,
      'stroke-opacity': p.toFixed(3), 'data-q': q, 'data-k': k }));
  }));
  g.append(lines);
  tokens.forEach((w, i) => {
    const q = svg('g', { class: 'hv-query', 'data-q': i });
    q.append(svg('rect', { x: 0, y: top + i * rowH, width: colW, height: rowH, fill: ATTN_FILL, 'fill-opacity': 0 }),
      svg('text', { x: colW - 6, y: Y(i), 'text-anchor': 'end', 'dominant-baseline': 'central', 'font-size': font },
        shortWord(w)),
      svg('title', {}, `${w} (query ${i + 1}): hover or tap to see only its lines`));
    q.addEventListener('mouseenter', () => focusQuery(i));
    q.addEventListener('mouseleave', () => focusQuery(state.headPin));
    q.addEventListener('click', () => { state.headPin = state.headPin === i ? null : i; focusQuery(state.headPin); });
    const k = svg('g', { class: 'hv-key', 'data-k': i });
    k.append(svg('rect', { x: x2, y: top + i * rowH, width: colW, height: rowH, fill: ATTN_FILL, 'fill-opacity': 0 }),
      svg('text', { x: x2 + 6, y: Y(i), 'dominant-baseline': 'central', 'font-size': font }, shortWord(w)),
      svg('title', {}, `${w} (key ${i + 1})`));
    g.append(q, k);
  });
  box.replaceChildren(g);
  focusQuery(state.headPin);
}

// Shows only query q's lines (all of them for null) and shades the keys by q's weights.
function focusQuery(q) {
  const g = $('head-view').querySelector('svg');
  if (!g) return;
  const P = state.headMap;
  g.classList.toggle('focus', q !== null);
  g.dataset.focus = q === null ? '' : String(q);
  for (const line of g.querySelectorAll('line')) line.classList.toggle('on', q !== null && Number(line.dataset.q) === q);
  for (const e of g.querySelectorAll('.hv-query')) {
    const on = q !== null && Number(e.dataset.q) === q;
    e.classList.toggle('on', on);
    e.firstChild.setAttribute('fill-opacity', on ? '0.25' : '0');
  }
  for (const e of g.querySelectorAll('.hv-key'))
    e.firstChild.setAttribute('fill-opacity', q === null ? '0' : P[q][Number(e.dataset.k)].toFixed(3));
}

// ---- the q.k view (as bertviz's neuron view) -------------------------------------------------------

// One head's query q (a row of "q", already divided by sqrt(head_size)), every key's k, q x k
// elementwise, the score (the sum; "scores" as the forward computed it) and the softmax of the
// scores ("attention"). A --pos alibi model's score is q.k plus its ALiBi term: the view then
// shows q.k ("dot_products", the products' sum) and the bias ("score_bias") before the score
// they add up to. The heads' mean has no q and k: the view then shows head 1.
function renderQkView(t) {
  const x = t.explain;
  const box = $('qk-view');
  if (!x.q) { box.replaceChildren(el('p', { class: 'hint', text: 'This server gave no q and k.' })); return; }
  const L = x.attention.length, l = Number($('layer').value);
  const h = $('head').value === 'mean' ? 0 : Number($('head').value);
  const tokens = x.tokens, S = tokens.length, HS = x.head_size;
  const sel = $('qk-query');
  if (sel.options.length !== S || sel.dataset.sentence !== x.sentence) {
    const keep = sel.options.length === S ? sel.value : '0';
    sel.replaceChildren(...tokens.map((w, i) => el('option', { value: i, text: `${i + 1}: ${w}` })));
    sel.value = keep;
    sel.dataset.sentence = x.sentence;
  }
  const qi = Number(sel.value);
  $('qk-view-title').textContent = `q\u00b7k view: layer ${layerLabel(l, L)}, head ${h + 1}` +
    `${$('head').value === 'mean' ? ' (the mean has no q and k: pick a head)' : ''}, query \u201c${tokens[qi]}\u201d`;
  $('qk-dk').textContent = `d_k = head size = ${HS}, \u221ad_k = ${Math.sqrt(HS).toPrecision(4)}`;
  const q = x.q[l][h][qi], K = x.k[l][h], sc = x.scores[l][h][qi], P = x.attention[l][h][qi];
  const T = temperature();
  const PT = T === 1 ? P : softmaxAt(sc, T); // at t = 1 the model's own numbers, not a recomputation
  const bias = x.score_bias ? { dot: x.dot_products[l][h][qi], b: x.score_bias[l][h][qi] } : null;
  const extra = bias ? 2 : 0; // the q.k and bias columns
  const prods = K.map((k) => k.map((v, d) => q[d] * v));
  const vmax = Math.max(...q.map(Math.abs), ...K.flat().map(Math.abs)) || 1;
  const pmax = Math.max(...prods.flat().map(Math.abs)) || 1;
  const cell = (v, m, cls) => {
    const td = el('td', { class: cls, title: v.toPrecision(6), 'data-v': String(v) });
    td.style.backgroundColor = rgba(v >= 0 ? POS_RGB : NEG_RGB, Math.abs(v) / m);
    return td;
  };
  const table = el('table', { class: 'qk' });
  const head = el('tr', {}, el('th', { text: '' }), el('th', { colspan: HS, text: `k (${HS} numbers)` }),
    el('th', { colspan: HS, text: 'q \u00d7 k' }),
    ...(bias ? [el('th', { text: 'q\u00b7k' }), el('th', { text: '+ ALiBi bias' })] : []),
    el('th', { text: bias ? 'score = q\u00b7k + bias' : 'score q\u00b7k' }), el('th', { text: 'softmax' }),
    el('th', { class: 'qk-tcol', text: `softmax(score / ${tText(T)})` }));
  const qrow = el('tr', { class: 'qk-q' }, el('th', { text: `q: ${shortWord(tokens[qi])}` }));
  q.forEach((v) => qrow.append(cell(v, vmax, 'qk-qv')));
  qrow.append(el('td', { colspan: HS + 3 + extra, class: 'qk-note', text: 'the query vector (divided by \u221ad_k)' }));
  const body = el('tbody', {}, qrow);
  K.forEach((k, j) => {
    const tr = el('tr', { 'data-k': j }, el('th', { text: shortWord(tokens[j]), title: tokens[j] }));
    k.forEach((v) => tr.append(cell(v, vmax, 'qk-kv')));
    prods[j].forEach((v) => tr.append(cell(v, pmax, 'qk-prod')));
    if (bias) {
      tr.append(el('td', { class: 'qk-dot', 'data-v': String(bias.dot[j]), text: bias.dot[j].toFixed(3) }),
        el('td', { class: 'qk-bias', 'data-v': String(bias.b[j]), text: `${bias.b[j] < 0 ? '\u2212' : '+'}${Math.abs(bias.b[j]).toFixed(3)}` }));
    }
    tr.append(el('td', { class: 'qk-score', 'data-v': String(sc[j]), text: sc[j].toFixed(3) }));
    const pt = el('td', { class: 'qk-p', 'data-v': String(P[j]), text: `${(100 * P[j]).toFixed(1)}%` });
    pt.style.backgroundColor = rgba(ATTN_RGB, P[j]);
    const ptt = el('td', { class: 'qk-pt', 'data-v': String(PT[j]), text: `${(100 * PT[j]).toFixed(1)}%` });
    ptt.style.backgroundColor = rgba(ATTN_RGB, PT[j]);
    tr.append(pt, ptt);
    body.append(tr);
  });
  const foot = el('tr', { class: 'qk-entropy' }, el('th', { text: 'entropy' }),
    el('td', { colspan: 2 * HS + 1 + extra, class: 'qk-note', text: `of each softmax row, in nats (uniform over ${S} keys: ` +
      `ln ${S} = ${Math.log(S).toFixed(2)}; one-hot: 0)` }),
    el('td', { class: 'qk-h', 'data-v': String(entropy(P)), text: entropy(P).toFixed(2) }),
    el('td', { class: 'qk-ht', 'data-v': String(entropy(PT)), text: entropy(PT).toFixed(2) }));
  table.append(el('thead', {}, head), body, el('tfoot', {}, foot));
  box.replaceChildren(table);
  box.dataset.layer = String(l);
  box.dataset.head = String(h);
  box.dataset.query = String(qi);
  box.dataset.t = String(T);
  writeFragment();
}

// The slider's temperature t = 2^value (value from -3 to 3 in quarter steps: t from 1/8 to 8).
function temperature() {
  const v = Number($('qk-t').value);
  return Number.isFinite(v) ? 2 ** v : 1;
}

function tText(T) {
  if (T === 1) return 't = 1';
  const s = T >= 1 ? T.toPrecision(3) : `1/${(1 / T).toPrecision(3)}`;
  return `t = ${s.replace(/\.?0+$/, '')}`;
}

function showTemperature() {
  const T = temperature(), t = transformer();
  const dk = t && t.explain.head_size ? Math.sqrt(t.explain.head_size) : 0;
  // with ALiBi the score is q.k + bias and t divides both: 1/sqrt(d_k) undoes the scaling of
  // q.k only, the bias then counts sqrt(d_k) times over
  const raw = t && t.explain.score_bias ? ' (no \u221ad_k on q\u00b7k; the ALiBi bias \u00d7 \u221ad_k)' : ' (no \u221ad_k: raw q\u00b7k)';
  $('qk-t-value').textContent = `${tText(T)}${T === 1 ? ' (the model)' : dk && Math.abs(T * dk - 1) < 1e-9 ? raw : ''}`;
}

// softmax(scores / t) in double precision, the largest score subtracted first.
function softmaxAt(scores, T) {
  const z = scores.map((v) => v / T), m = Math.max(...z);
  const e = z.map((v) => Math.exp(v - m)), sum = e.reduce((a, b) => a + b, 0);
  return e.map((v) => v / sum);
}

function entropy(p) {
  return -p.reduce((a, v) => a + (v > 0 ? v * Math.log(v) : 0), 0);
}

// ---- the recurrent models' curves ------------------------------------------------------------------

function renderCurves() {
  const rec = state.data.explanations.filter((x) => x.explain.prefix_probability);
  $('prefix-section').hidden = rec.length === 0;
  const box = $('curves');
  box.replaceChildren();
  const W = Math.max(280, box.clientWidth || 700);
  for (const x of rec) {
    const p = x.explain.prefix_probability, words = x.explain.tokens;
    const n = p.length, H = 200, left = 46, right = 14, top = 10, h = 120;
    const X = (i) => left + (n === 1 ? 0 : (i * (W - left - right)) / (n - 1));
    const Y = (v) => top + (1 - v) * h;
    const step = (W - left - right) / Math.max(1, n - 1);
    const every = Math.max(1, Math.ceil(13 / step)); // a label at least every 13 px
    const g = svg('svg', { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img',
      'aria-label': `${x.model}: probability after each word` });
    for (const v of [0, 0.5, 1]) {
      g.append(svg('line', { x1: left, x2: W - right, y1: Y(v), y2: Y(v), stroke: v === 0.5 ? '#999' : '#ddd',
        'stroke-dasharray': v === 0.5 ? '4 3' : '' }));
      g.append(svg('text', { x: left - 6, y: Y(v) + 4, 'text-anchor': 'end', 'font-size': 11, fill: '#666' }, String(v)));
    }
    g.append(svg('polyline', { points: p.map((v, i) => `${X(i)},${Y(v)}`).join(' '), fill: 'none',
      stroke: '#2f7ad1', 'stroke-width': 2 }));
    p.forEach((v, i) => {
      const c = svg('circle', { cx: X(i), cy: Y(v), r: n > 40 ? 2.5 : 3.5, fill: v > 0.5 ? '#1c7a33' : '#b3261e' });
      c.append(svg('title', {}, `after "${words[i]}" (word ${i + 1}): ${v.toFixed(3)}`));
      g.append(c);
      if (i % every !== 0) return;
      g.append(svg('text', { x: X(i), y: top + h + 14, 'font-size': 10.5, fill: '#333', 'text-anchor': 'end',
        transform: `rotate(-50 ${X(i)} ${top + h + 14})` }, words[i].length > 11 ? `${words[i].slice(0, 10)}\u2026` : words[i]));
    });
    const cap = every > 1 ? ` (every ${every === 2 ? 'second' : `${every}th`} word labelled; hover a dot for its word)` : '';
    box.append(el('div', { class: 'curve' }, el('div', { class: 'title', text: `${x.model} (seed ${x.seed})${cap}` }), g));
  }
}

// ---- saliency ----------------------------------------------------------------------------------------

const METHOD_HINT = {
  occlusion: 'Occlusion: how much the logit drops when the word is removed (the models run on the ' +
    'sentence without it). Green: the word pushed towards positive; red: towards negative. It measures ' +
    'what the word does, with no assumption about the model.',
  0: 'Gradient \u00d7 input: the first-order change of the logit if the word\u2019s input moved to zero. ' +
    'Cheap, and misleading where the model is saturated (its inner units do not respond to small changes).',
  64: 'Integrated gradients: gradients averaged along the straight path from a [PAD] baseline to the ' +
    'sentence. In theory they add up to the logit minus the baseline\u2019s logit; each row says how close they come.',
};

function salValues(x) {
  if (state.method === 'occlusion') return state.occlusion ? state.occlusion.get(x.model) : null;
  if (state.method === '0') return x.explain.saliency.grad_x_input;
  return x.explain.saliency.integrated_gradients || null;
}

function salNotes(x, s) {
  const notes = [];
  const e = x.explain, p = e.probability;
  if (p > SATURATED || p < 1 - SATURATED) {
    let msg = `${x.model} is saturated here (p = ${p.toFixed(5)}, logit ${e.logit.toFixed(2)}): gradients, ` +
      'which measure infinitesimal changes, can be small or spread out even for the word that decides.';
    const occ = state.occlusion && state.occlusion.get(x.model);
    if (occ) {
      const g = Math.max(...e.saliency.grad_x_input.map(Math.abs)), o = Math.max(...occ.map(Math.abs));
      msg += ` Largest |gradient \u00d7 input| ${g.toFixed(2)}; largest |occlusion| ${o.toFixed(2)}.`;
    }
    notes.push(['saturated', msg]);
  }
  const ig = e.saliency.integrated_gradients;
  if (ig && state.method !== 'occlusion') {
    const sum = ig.reduce((a, b) => a + b, 0), want = e.logit - e.ig_baseline_logit;
    const gap = Math.abs(sum - want) / Math.max(Math.abs(want), 1e-6);
    notes.push(['ig', gap > IG_GAP
      ? `The ${e.ig_steps}-step integrated gradients add up to ${sum.toFixed(3)}, but logit \u2212 baseline ` +
        `logit is ${want.toFixed(3)}: they differ by ${pct(gap)}, so these values do not account for the whole answer ` +
        '(completeness fails on this path from the [PAD] baseline; for the trained LSTM on long sentences more ' +
        'steps do not help). Occlusion does not depend on a path.'
      : `The ${e.ig_steps}-step integrated gradients add up to ${sum.toFixed(3)}; logit \u2212 baseline logit is ` +
        `${want.toFixed(3)} (within ${pct(IG_GAP)}).`]);
  }
  if (!s) notes.push(['wait', 'computing\u2026']);
  return notes;
}

function renderSaliency() {
  if (!state.data) return;
  $('saliency-section').hidden = false;
  $('sal-hint').textContent = METHOD_HINT[state.method];
  const box = $('saliency');
  box.replaceChildren();
  const method = state.method === 'occlusion' ? 'occlusion' : state.method === '0' ? 'gxi' : 'ig';
  for (const x of state.data.explanations) {
    const s = salValues(x);
    const what = { occlusion: 'occlusion', gxi: 'gradient \u00d7 input', ig: 'integrated gradients' }[method];
    const words = x.explain.attention ? x.explain.tokens.slice(1) : x.explain.tokens;
    const row = el('div', { class: 'words' });
    if (s) {
      const scale = Math.max(...s.map(Math.abs));
      s.forEach((v, i) => {
        const span = el('span', { class: 'tok', title: `${what} ${v.toFixed(4)}` },
          el('span', { class: 'w', text: words[i] }), el('span', { class: 'v', text: v.toFixed(2) }));
        span.style.backgroundColor = rgba(v >= 0 ? POS_RGB : NEG_RGB, scale > 0 ? Math.abs(v) / scale : 0);
        row.append(span);
      });
    }
    const r = el('div', { class: 'sal-row', 'data-model': x.model, 'data-method': s ? method : 'pending' },
      el('div', { class: 'title', text: `${x.model}: ${what}` }), row);
    for (const [kind, text] of salNotes(x, s)) r.append(el('p', { class: `note note-${kind}`, text }));
    box.append(r);
  }
}

// ---- the write-up's §7: things to look for -----------------------------------------------------------

// The Markdown tables of docs/figures/s7-observations.md as arrays of {header: cell}.
function parseTables(md) {
  const tables = [];
  let cur = null;
  for (const line of md.split('\n')) {
    if (!line.startsWith('|')) { cur = null; continue; }
    const cells = line.split('|').slice(1, -1).map((c) => c.trim());
    if (cells.every((c) => /^-+$/.test(c))) continue;
    if (!cur) { cur = { head: cells, rows: [] }; tables.push(cur); continue; }
    const row = Object.fromEntries(cells.map((c, i) => [cur.head[i], c]));
    row.cells = cells; // by position too: a header holding "|step|" splits into extra cells
    cur.rows.push(row);
  }
  return tables;
}

function col(row, prefix) {
  if (!row) return '?';
  const k = Object.keys(row).find((h) => h.startsWith(prefix));
  return k ? row[k] : '?';
}

function observations() {
  const seedOf = (name) => { const m = state.models.find((x) => x.name === name); return m ? String(m.explain_seed) : '1'; };
  const [att, rec] = state.obs || [{ rows: [] }, { rows: [] }];
  const tr = (set, layer) => att.rows.find((r) => r.seed === seedOf('transformer') && r.set === set && r.layer === String(layer));
  const rr = (model, set) => rec.rows.find((r) => r.model === model && r.seed === seedOf(model) && r.set === set);
  const adjN = pick('not', 'never');
  const good = pick('good', 'great', 'helpful');
  const subj = pick('food', 'lecture', 'course');
  const messy = pick('messy', 'chaotic', 'confusing');
  const dnoun = pick('food', 'coffee', 'wifi');
  return [
    {
      id: 'sharp', claim: 'Layer 1 focuses: [CLS] sends 90\u2013100 % of its attention to one word, the negation ' +
        'when the sentence has one and the adjective otherwise. The rule was never given; it comes from the data.',
      measured: () => {
        const r = tr('plain', 0);
        return r ? `attn, Transformer seed ${r.seed}, layer 1 on 300 plain test sentences: some head puts \u2265 90 % on ` +
          `the deciding word in ${col(r, 'some head')} of them; the heads' mean gives it ${col(r, 'on the deciding')} on average.` : null;
      },
      sentence: ['the', subj, 'was', adjN, good], view: { layer: 0, head: 'best' }, section: 'attention-section',
    },
    {
      id: 'distractor', claim: 'Distractors are ignored: in the write-up\u2019s mixed example the first adjective ' +
        '(messy) receives 94 % and the distractor\u2019s adjective (good) 2 %, though both carry sentiment.',
      measured: () => {
        const a = tr('distractor', 0), b = tr('distractor', 1);
        return a && b ? `attn, seed ${a.seed}, 300 distractor test sentences: the distractor's adjective gets ` +
          `${col(a, 'distractor adjective').split(',')[0]} of layer 1's mean row and ${col(b, 'distractor adjective').split(',')[0]} ` +
          `of layer 2's on average (at most ${col(a, 'distractor adjective').split(',')[1].trim()} and ` +
          `${col(b, 'distractor adjective').split(',')[1].trim()}).` : null;
      },
      sentence: ['the', pick('seminar', 'lecture'), 'was', messy, pick('although', 'but'), 'the', dnoun, 'was', good],
      view: { layer: 0, head: 'mean' }, section: 'attention-section',
    },
    {
      id: 'spread', claim: 'Layer 2 may be sharp or diffuse (in the write-up\u2019s long example [CLS] keeps 23 % for ' +
        'itself). Layer 1 has already mixed the words, so a diffuse map can still carry the answer: a map shows ' +
        'where one layer reads, not the whole computation.',
      measured: () => {
        const a = tr('plain', 0), b = tr('plain', 1);
        return a && b ? `attn, seed ${a.seed}, plain test sentences: the mean row's entropy is ${col(a, 'entropy')} nats in ` +
          `layer 1 and ${col(b, 'entropy')} in layer 2; its largest weight ${col(a, 'largest')} and ${col(b, 'largest')}.` : null;
      },
      sentence: tokenize('honestly during the winter semester last year the professor was not very clear ' +
        'according to my friends at least for me as far as i know').filter((w) => state.words.has(w)),
      view: { layer: 1, head: 'mean' }, section: 'attention-section',
    },
    {
      id: 'curves', claim: 'The LSTM\u2019s probability jumps at the deciding words and stays flat over the ' +
        'fillers; the plain RNN stays near 50 % all along.',
      measured: () => {
        const l = rr('lstm', 'fill8'), r = rr('rnn', 'fill8');
        // columns: model, seed, set, mean |step| at deciding words, at fillers after the
        // adjective, mean |p - 0.5|, prefixes with p in [0.4, 0.6]
        return l && r && l.cells.length === 7 ? `attn, 300 test sentences with 8 fillers: the LSTM (seed ${l.seed}) ` +
          `moves by ${l.cells[3]} on average at a deciding word and ${l.cells[4]} at a filler after the adjective; ` +
          `the RNN (seed ${r.seed}) keeps ${r.cells[6]} of its prefixes between 0.4 and 0.6.` : null;
      },
      sentence: tokenize('honestly the lecture was not very helpful in the winter semester according to my friends ' +
        'although the coffee was great').filter((w) => state.words.has(w)),
      view: {}, section: 'prefix-section',
    },
  ];
}

function renderObservations() {
  const task = state.group && state.group.source === 'task';
  $('look-section').hidden = !task;
  if (!task) return;
  const box = $('observations');
  box.replaceChildren();
  for (const o of observations()) {
    const m = o.measured();
    box.append(el('div', { class: 'obs', 'data-obs': o.id },
      el('p', { class: 'claim', text: o.claim }),
      el('p', { class: 'measured', text: m || 'attn\u2019s measurement: build attn after \u201cattn figures\u201d to see it here (docs/figures/s7-observations.md).' }),
      el('button', { class: 'chip', type: 'button', text: `Show: \u201c${o.sentence.join(' ')}\u201d`, onclick: () => {
        state.pendingView = { ...o.view, obs: o.id };
        setSentence(o.sentence);
        const target = $(o.section);
        setTimeout(() => target.scrollIntoView({ behavior: 'smooth', block: 'start' }), 400);
      } }),
      el('p', { class: 'here', text: '' })));
  }
}

// What this sentence shows for the observation that loaded it.
function renderObservationResults() {
  const v = state.pendingView;
  if (!v || !v.obs) return;
  const here = document.querySelector(`.obs[data-obs="${v.obs}"] .here`);
  const t = transformer();
  let text = '';
  const tokens = t ? t.explain.tokens : [];
  const cat = (w) => (state.words.get(w) || {}).category;
  const neg = tokens.findIndex((w) => cat(w) === 'negation');
  const adjs = tokens.map((w, k) => (ADJECTIVE.has(cat(w)) ? k : -1)).filter((k) => k >= 0);
  const decide = neg >= 0 ? neg : adjs[0];
  if (v.obs === 'sharp' && t && decide !== undefined) {
    const A = t.explain.attention[0];
    let best = 0;
    A.forEach((hd, h) => { if (hd[0][decide] > A[best][0][decide]) best = h; });
    $('head').value = String(best);
    renderAttention();
    text = `This sentence: head ${best + 1} of layer 1 gives \u2018${tokens[decide]}\u2019 ${pct(A[best][0][decide])} of [CLS]'s attention ` +
      `(the heads' mean: ${pct(attentionMap(t, 0, 'mean')[0][decide])}).`;
  } else if (v.obs === 'distractor' && t && adjs.length >= 2) {
    const m1 = attentionMap(t, 0, 'mean')[0], m2 = attentionMap(t, t.explain.attention.length - 1, 'mean')[0];
    const [a, b] = adjs;
    text = `This sentence, heads' mean: \u2018${tokens[a]}\u2019 gets ${pct(m1[a])} in layer 1 and ${pct(m2[a])} in layer 2; ` +
      `the distractor's \u2018${tokens[b]}\u2019 ${pct(m1[b])} and ${pct(m2[b])}.`;
  } else if (v.obs === 'spread' && t) {
    const L = t.explain.attention.length;
    const m = attentionMap(t, L - 1, 'mean')[0];
    const top = m.indexOf(Math.max(...m));
    text = `This sentence, layer 2, heads' mean: [CLS] keeps ${pct(m[0])} for itself; the largest weight is ` +
      `${pct(m[top])} on \u2018${tokens[top]}\u2019 (layer 1's largest: ${pct(Math.max(...attentionMap(t, 0, 'mean')[0]))}).`;
  } else if (v.obs === 'curves') {
    const parts = [];
    for (const x of state.data.explanations.filter((y) => y.explain.prefix_probability)) {
      const p = x.explain.prefix_probability, w = x.explain.tokens;
      let big = 0;
      for (let i = 1; i < p.length; i++) if (Math.abs(p[i] - p[i - 1]) > Math.abs(p[big] - (big ? p[big - 1] : 0.5))) big = i;
      parts.push(`${x.model}: p between ${Math.min(...p).toFixed(2)} and ${Math.max(...p).toFixed(2)}, its largest ` +
        `step ${(p[big] - (big ? p[big - 1] : 0.5)).toFixed(2)} at \u2018${w[big]}\u2019 (word ${big + 1})`);
    }
    text = parts.length ? `This sentence: ${parts.join('; ')}.` : '';
  }
  if (here) here.textContent = text;
  state.pendingView = null;
}

// ---- test sets -------------------------------------------------------------------------------------

function setModels() {
  return state.models.filter((m) => m.test_sets !== false);
}

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

async function openSentence(s) {
  const task = state.groups.find((g) => g.source === 'task');
  if (task && state.group !== task) await useGroup(task);
  $('sentence').value = s;
  state.swapAt = -1;
  onInput(true);
  window.scrollTo({ top: 0 });
}

// ---- vocabularies ----------------------------------------------------------------------------------

const TASK_EXAMPLES = [
  ['the', 'food', 'was', 'not', 'good'],
  ['the', 'lecture', 'was', 'not', 'very', 'helpful'],
  ['the', 'professor', 'was', 'great', 'although', 'the', 'coffee', 'was', 'terrible'],
  ['the', 'exam', 'was', 'never', 'boring', 'but', 'the', 'wifi', 'was', 'awful'],
  'honestly in my opinion the seminar seemed quite confusing while the library was excellent'.split(' '),
  'in the end in my opinion if you ask my friends honestly the tutorial is not terrible but the wifi seemed quite helpful'.split(' '),
];

async function useGroup(g) {
  state.group = g;
  const v = await api(`/api/vocab?model=${encodeURIComponent(g.models[0])}`);
  state.vocab = v.words;
  state.compare = null;
  state.words = new Map();
  state.byCategory = new Map();
  for (const w of state.vocab) {
    state.words.set(w.word, w);
    if (!state.byCategory.has(w.category)) state.byCategory.set(w.category, []);
    state.byCategory.get(w.category).push(w);
  }
  $('vocab-group').value = String(g.id);
  $('sentence-label').textContent = g.source === 'task'
    ? `A course review (the task's ${state.vocab.length}-word vocabulary; Tab completes a word)`
    : `A sentence in ${g.models.join(', ')}'s own ${state.vocab.length}-word vocabulary (Tab completes a word)`;
  $('vocab-note').textContent = `read by ${g.models.join(', ')}`;
  const ex = $('examples');
  ex.replaceChildren(el('span', { class: 'label', text: g.source === 'task' ? 'Examples:' : 'Its words:' }));
  if (g.source === 'task') {
    for (const words of TASK_EXAMPLES)
      if (words.every((w) => state.words.has(w)))
        ex.append(el('button', { class: 'chip', type: 'button', text: words.join(' '), onclick: () => openSentence(words.join(' ')) }));
  } else {
    for (const w of state.vocab.slice(0, 60))
      ex.append(el('button', { class: 'chip', type: 'button', text: w.word, onclick: () => complete(w.word) }));
  }
  state.data = null;
  state.previous = null;
  for (const id of ['verdict-section', 'attention-section', 'prefix-section', 'saliency-section']) $(id).hidden = true;
  markStale(false);
  renderObservations();
}

async function loadObservations() {
  try {
    const r = await fetch('/figures/s7-observations.md');
    if (r.ok) state.obs = parseTables(await r.text());
  } catch (e) {
    state.obs = null;
  }
}

// ---- a URL per view: the page's state in the fragment -------------------------------------------
// #s=SENTENCE&model=NAME[-seedN]&layer=L&head=H|mean&q=Q&t=T&view=V, layer, head and q counted
// from 1 as the page shows them; a value that is missing, malformed or out of range is ignored
// and the default used (docs/serve.md, "A URL per view").

const VIEWS = {
  verdict: 'verdict-section', counterfactuals: 'swap-words', attention: 'attention-section',
  'model-view': 'model-view-title', 'head-view': 'head-view-title', qk: 'qk-view-title', heatmap: 'heatmap',
  prefix: 'prefix-section', saliency: 'saliency-section', sets: 'sets-section',
  shuffle: 'shuffle-title', positions: 'positions-title', compare: 'compare-title',
};

function readFragment() {
  const r = fragmentReader();
  if (!r) return {};
  const { get, count } = r;
  const f = { layer: count('layer'), query: count('q') };
  const s = get('s');
  if (s && s.length <= 2000) f.sentence = s;
  const m = get('model');
  if (m) {
    const name = m.replace(/-seed\d+$/, '');
    if (state.models.some((x) => x.name === name)) f.model = name;
  }
  const h = get('head');
  f.head = h === 'mean' ? 'mean' : count('head');
  const t = get('t');
  if (t !== null && /^\d*\.?\d+(e-?\d+)?$/i.test(t)) {
    const v = Math.round(4 * Math.log2(Number(t))) / 4;
    if (Number.isFinite(v) && v >= -3 && v <= 3) f.t = v;
  }
  const c = get('c');
  if (c && c.length <= 2000) f.compare = c;
  const v = get('view');
  if (v && Object.prototype.hasOwnProperty.call(VIEWS, v)) f.view = v;
  return f;
}

// Opens the fragment's view: its model's vocabulary, its sentence (explained; the rest applied
// by applyUrlView once the answer is there).
async function applyFragment() {
  const f = readFragment();
  if (f.model) {
    const g = state.groups.find((x) => x.models.includes(f.model));
    if (g && g !== state.group) await useGroup(g);
  }
  if (f.t !== undefined) { $('qk-t').value = String(f.t); showTemperature(); }
  if (!f.sentence) return;
  state.urlView = f;
  $('sentence').value = f.sentence;
  state.swapAt = -1;
  onInput(true);
  if (!tokenize(f.sentence).every((w) => state.words.has(w))) state.urlView = null; // not explained: the box says why
}

function applyUrlView() {
  const v = state.urlView;
  state.urlView = null;
  if (!v) return;
  const t = transformer();
  if (t) {
    const L = t.explain.attention.length, NH = t.explain.attention[0].length;
    if (v.layer !== undefined && v.layer < L) $('layer').value = String(v.layer);
    if (v.head === 'mean' || (v.head !== undefined && v.head < NH)) $('head').value = String(v.head);
    if (v.t !== undefined) $('qk-t').value = String(v.t);
    showTemperature();
    renderAttention();
    if (v.query !== undefined && v.query < t.explain.tokens.length) {
      $('qk-query').value = String(v.query);
      renderQkView(t);
    }
  }
  if (v.compare) { $('compare-sentence').value = v.compare; compare(); }
  if (v.view) {
    state.view = v.view;
    const target = $(VIEWS[v.view]);
    if (target && target.offsetParent !== null) window.scrollTo(0, target.getBoundingClientRect().top + window.scrollY - 8);
  }
}

// The state shown, into the fragment (replaceState: no history entry per click).
function writeFragment() {
  if (!state.data || state.urlView) return;
  const p = new URLSearchParams();
  p.set('s', state.data.sentence);
  const t = transformer();
  const x = t || state.data.explanations[0];
  if (x) p.set('model', `${x.model}-seed${x.seed}`);
  if (t) {
    const h = $('head').value;
    p.set('layer', String(Number($('layer').value) + 1));
    p.set('head', h === 'mean' ? 'mean' : String(Number(h) + 1));
    p.set('q', String(Number($('qk-query').value) + 1));
    const T = temperature();
    if (T !== 1) p.set('t', String(Number(T.toPrecision(4))));
  }
  if (state.compare) p.set('c', state.compare.sentence);
  if (state.view) p.set('view', state.view);
  const hash = `#${p.toString()}`;
  if (hash !== window.location.hash) window.history.replaceState(null, '', hash);
}

// ---- two sentences side by side ------------------------------------------------------------------

async function compare() {
  const sentence = $('compare-sentence').value.trim();
  $('compare-error').textContent = '';
  if (!sentence) { $('compare-error').textContent = 'Type a second sentence to compare.'; return; }
  try {
    state.compare = await api('/api/explain', { sentence, models: state.group.models });
  } catch (e) {
    const un = e.info && e.info.code === 'unknown_word' ? e.info.unknown_words || [] : [];
    $('compare-error').textContent = un.length ? `not in the vocabulary: ${un.map(suggestionText).join(', ')}` : e.message;
    return;
  }
  state.view = 'compare';
  renderCompare();
  writeFragment();
}

function compareColumn(data, which) {
  const col = el('div', { class: 'compare-col', 'data-which': which });
  col.append(el('div', { class: 'compare-sentence', text: data.sentence }));
  const verdicts = el('div', { class: 'compare-verdicts' });
  for (const x of data.explanations) {
    const p = x.explain.probability;
    verdicts.append(el('span', { class: 'compare-verdict', 'data-model': x.model,
      style: `background: ${rgba(p > 0.5 ? POS_RGB : NEG_RGB, 0.15 + 0.5 * Math.abs(p - 0.5))}` },
    `${x.model}: ${p > 0.5 ? 'positive' : 'negative'}, p(positive) ${pct(p, 1)}`));
  }
  col.append(verdicts);
  const t = data.explanations.find((x) => x.explain.attention);
  if (t) {
    const cls = attentionMap(t, Number($('layer').value), $('head').value)[0];
    const max = Math.max(...cls);
    const row = el('div', { class: 'words compare-words' });
    cls.forEach((w, k) => {
      const span = el('span', { class: 'tok', 'data-key': k, 'data-weight': w.toFixed(6), title: `${(100 * w).toFixed(1)} % of [CLS]'s attention` },
        el('span', { class: 'w', text: t.explain.tokens[k] }), el('span', { class: 'v', text: `${(100 * w).toFixed(0)}%` }));
      span.style.backgroundColor = rgba(ATTN_RGB, max > 0 ? w / max : 0);
      row.append(span);
    });
    col.append(row);
  }
  return col;
}

function renderCompare() {
  $('compare-section').hidden = !state.data;
  if (!state.data) return;
  const box = $('compare');
  if (!state.compare) { box.replaceChildren(); return; }
  const h = $('head').value, l = Number($('layer').value);
  box.replaceChildren(el('p', { class: 'hint', text: transformer()
    ? `Transformer: layer ${layerLabel(l, state.data.explanations.find((x) => x.explain.attention).explain.attention.length)}, ${h === 'mean' ? 'the mean of the heads' : `head ${Number(h) + 1}`}.` : '' }),
  el('div', { class: 'compare-cols' }, compareColumn(state.data, 'a'), compareColumn(state.compare, 'b')));
  box.dataset.ready = String(Date.now());
}

// ---- section 4: the shuffle test and the position vectors ------------------------------------------

// Fixed orders of words: reversed, then three shuffles (Fisher-Yates on a seeded
// xorshift, so a URL shows the same orders every time).
function shuffles(words) {
  const out = [{ name: 'as typed', words }, { name: 'reversed', words: [...words].reverse() }];
  for (let seed = 1; seed <= 3; seed++) {
    let x = 2463534242 ^ (seed * 2654435761);
    const rand = () => { x ^= x << 13; x ^= x >>> 17; x ^= x << 5; return (x >>> 0) / 4294967296; };
    const w = [...words];
    for (let i = w.length - 1; i > 0; i--) { const j = Math.floor(rand() * (i + 1)); [w[i], w[j]] = [w[j], w[i]]; }
    out.push({ name: `shuffle ${seed}`, words: w });
  }
  return out;
}

async function runShuffle(seq) {
  const box = $('shuffle');
  const words = state.tokens.length ? state.tokens : tokenize(state.data.sentence);
  if (words.length < 2) { box.replaceChildren(el('p', { class: 'hint', text: 'One word has one order.' })); return; }
  const orders = shuffles(words);
  const lines = orders.map((o) => o.words.join(' '));
  const hasT = state.group.models.includes('transformer');
  let plain, zero = null;
  try {
    plain = await predict(lines);
    if (hasT) {
      zero = await answer(await fetch('/api/predict?models=transformer&positions=zero', {
        method: 'POST', headers: { 'Content-Type': 'text/plain; charset=utf-8' }, body: lines.join('\n'),
      }));
    }
  } catch (e) {
    if (seq === state.seq) box.replaceChildren(el('p', { class: 'error', text: `shuffle test: ${e.message}` }));
    return;
  }
  if (seq !== state.seq) return;
  const cols = plain.predictions.map((p) => ({ name: p.model, p: p.probabilities }));
  if (zero) {
    const learned = !state.positions || state.positions.data.scheme === 'learned';
    cols.push({ name: learned ? 'transformer, positions zeroed' : 'transformer, no positions', p: zero.predictions[0].probabilities, zero: true });
  }
  // two significant digits near 0 and 1, where one decimal of a percent would read 0.0 % for all
  const fine = (p) => (p < 0.01 ? `${(100 * p).toPrecision(2)} %` : p > 0.99 ? `${(100 * p).toFixed(3)} %` : pct(p, 1));
  const cell = (p, ref, zeroCol) => {
    const changed = (p >= 0.5) !== (ref >= 0.5);
    return el('td', { class: `num${zeroCol ? ' zero' : ''}`, style: `background: ${rgba(p >= 0.5 ? POS_RGB : NEG_RGB, 0.12 + 0.5 * Math.abs(p - 0.5))}`,
      title: `p(positive) = ${p.toFixed(6)}` }, `${fine(p)}${changed ? ' \u21c4' : ''}`);
  };
  const head = el('tr', {}, el('th', { text: 'order' }), el('th', { text: 'words' }),
    ...cols.map((c) => el('th', { class: c.zero ? 'zero' : '', text: c.name })));
  const rows = orders.map((o, i) => el('tr', {}, el('th', { text: o.name }),
    el('td', { class: 'words-cell', text: o.words.join(' ') }),
    ...cols.map((c) => cell(c.p[i], c.p[0], c.zero))));
  const spread = (c) => Math.max(...c.p) - Math.min(...c.p);
  const notes = cols.map((c) => `${c.name}: ${spread(c) < 1e-6 ? 'the same p for every order' : `p moves by ${pct(spread(c), 1)}`}`);
  const table = el('table', { class: 'shuffle-table' }, el('thead', {}, head), el('tbody', {}, ...rows));
  table.style.setProperty('--cols', String(cols.length)); // the narrow layout's grid (style.css)
  box.replaceChildren(table,
    el('p', { class: 'hint', id: 'shuffle-note' }, `${notes.join('; ')}. (\u21c4: a verdict other than the typed order's.)`));
  box.dataset.ready = 'true';
}

function heatCanvas(rows, cols, value, px, label) {
  const c = el('canvas', { width: cols, height: rows, role: 'img', 'aria-label': label });
  c.style.width = `${cols * px}px`;
  c.style.height = `${rows * px}px`;
  const ctx = c.getContext('2d');
  const img = ctx.createImageData(cols, rows);
  for (let r = 0; r < rows; r++) {
    for (let k = 0; k < cols; k++) {
      const v = Math.max(-1, Math.min(1, value(r, k)));
      const rgb = v >= 0 ? POS_RGB : NEG_RGB, a = Math.abs(v), o = 4 * (r * cols + k);
      for (let j = 0; j < 3; j++) img.data[o + j] = Math.round(255 + a * (rgb[j] - 255));
      img.data[o + 3] = 255;
    }
  }
  ctx.putImageData(img, 0, 0);
  return c;
}

async function renderPositions() {
  const sec = $('positions-section');
  sec.hidden = !state.data;
  if (!state.data) return;
  const box = $('positions');
  if (!state.group.models.includes('transformer')) { $('positions-title').hidden = true; box.replaceChildren(); return; }
  $('positions-title').hidden = false;
  if (!state.positions || state.positions.group !== state.group) {
    try {
      state.positions = { group: state.group, data: await api('/api/positions?model=transformer') };
    } catch (e) {
      box.replaceChildren(el('p', { class: 'hint', text: `No position table to show: ${e.message}` }));
      return;
    }
  }
  const pos = state.positions.data, learned = pos.scheme === 'learned';
  $('positions-title').textContent = learned ? "The Transformer's position vectors (learned)"
    : "The Transformer's position vectors (the fixed sinusoidal table)";
  const P = pos.table, D = pos.dim, N = P.length;
  const max = Math.max(...P.flat().map(Math.abs)) || 1;
  const norm = P.map((v) => Math.hypot(...v) || 1);
  const cos = (a, b) => P[a].reduce((s, x, j) => s + x * P[b][j], 0) / (norm[a] * norm[b]);
  const used = Math.min(N, (state.tokens.length || tokenize(state.data.sentence).length) + 1);
  const table = heatCanvas(D, N, (r, k) => P[k][r] / max, 6, `position vectors: ${D} dimensions x ${N} positions`);
  const sim = heatCanvas(N, N, cos, 4, `cosine similarity of ${N} x ${N} positions`);
  const mark = el('div', { class: 'pos-mark' });
  mark.style.width = mark.style.height = `${used * 4}px`;
  const near = [1, 2, 5, 10, 20].filter((d) => d < N).map((d) => {
    let s = 0;
    for (let p = 1; p + d < N; p++) s += cos(p, p + d);
    return `${d}: ${(s / (N - 1 - d)).toFixed(2)}`;
  });
  box.replaceChildren(
    el('figure', {}, table, el('figcaption', { text: `${D} dimensions \u00d7 ${N} positions (0 = [CLS]); colour scale \u00b1${max.toFixed(2)}` })),
    el('figure', {}, el('div', { class: 'pos-sim' }, sim, mark),
      el('figcaption', { text: `cosine similarity, positions 0\u2013${N - 1}; this sentence: 0\u2013${used - 1}` })),
    el('p', { class: 'hint', id: 'positions-note' }, `Mean similarity of positions d apart (1 and up): ${near.join(', ')}. ${learned
      ? 'Neighbouring positions are alike; this trained table (pos_embedding, a tensor of the weights file) is the only place the Transformer learns where a word stands.'
      : 'This table is not trained and not in the weights file: PE[p][2i] = sin(p / 10000^(2i/D)), PE[p][2i+1] = cos(the same), the write-up\u2019s \u00a74 formula; the similarity of two positions depends only on how far apart they are, and the Transformer learns to read it.'}`));
  box.dataset.ready = 'true';
}

// ---- start -----------------------------------------------------------------------------------------

async function start() {
  try {
    const models = await api('/api/models');
    state.models = models.models;
    state.sets = models.sets;
    for (const m of state.models) {
      const id = m.vocab_group || 0;
      let g = state.groups.find((x) => x.id === id);
      if (!g) { g = { id, source: m.vocab || 'task', size: m.vocab_size, models: [] }; state.groups.push(g); }
      g.models.push(m.name);
    }
    await loadObservations();
    const sel = $('vocab-group');
    sel.replaceChildren(...state.groups.map((g) => el('option', { value: g.id,
      text: g.source === 'task' ? `the task's words (${g.models.join(', ')})` : `${g.models.join(', ')}: its own ${g.size} tokens` })));
    $('vocab-choice').hidden = state.groups.length < 2;
    await useGroup(state.groups.find((g) => g.source === 'task') || state.groups[0]);
  } catch (e) {
    $('error').textContent = `cannot reach attn serve: ${e.message}`;
    return;
  }
  const sm = setModels();
  $('sets-section').hidden = sm.length === 0;
  $('set-name').replaceChildren(...state.sets.map((s) => el('option', { value: s, text: s })));
  $('set-model').replaceChildren(...sm.map((m) => el('option', { value: m.name, text: m.name })));
  fillSeeds();
  $('vocab-group').addEventListener('change', () => useGroup(state.groups.find((g) => String(g.id) === $('vocab-group').value)));
  $('set-model').addEventListener('change', fillSeeds);
  $('set-go').addEventListener('click', evaluateSet);
  $('sentence').addEventListener('input', () => { state.swapAt = -1; onInput(); });
  $('sentence').addEventListener('click', showCompletions);
  $('sentence').addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') { ev.preventDefault(); explain(); }
    if (ev.key === 'Tab' && $('suggest').firstChild) { ev.preventDefault(); complete($('suggest').firstChild.textContent); }
  });
  $('go').addEventListener('click', explain);
  $('sal-method').addEventListener('change', () => {
    state.method = $('sal-method').value;
    if (state.method === 'occlusion' && state.data && !state.occlusion) computeOcclusion(state.seq);
    const needsIg = state.method !== 'occlusion' && state.method !== '0' && state.data &&
      !state.data.explanations[0].explain.saliency.integrated_gradients;
    if (needsIg) explain();
    else renderSaliency();
  });
  $('layer').addEventListener('change', () => { state.view = 'attention'; renderAttention(); renderCompare(); });
  $('head').addEventListener('change', () => { state.view = 'attention'; renderAttention(); renderCompare(); });
  $('compare-go').addEventListener('click', compare);
  $('compare-sentence').addEventListener('keydown', (ev) => { if (ev.key === 'Enter') { ev.preventDefault(); compare(); } });
  $('qk-query').addEventListener('change', () => { state.view = 'qk'; const t = transformer(); if (t) renderQkView(t); });
  $('qk-t').addEventListener('input', () => {
    state.view = 'qk';
    showTemperature();
    const t = transformer();
    if (t) renderQkView(t);
  });
  window.addEventListener('hashchange', () => applyFragment());
  let width = window.innerWidth;
  window.addEventListener('resize', () => {
    if (state.data && window.innerWidth !== width) { width = window.innerWidth; renderCurves(); renderAttention(); }
  });
  await applyFragment();
  document.body.dataset.ready = 'true';
}

start();

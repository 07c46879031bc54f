// decoder.js -- the decoder page of attn serve: a review rewritten as its verdict word by word
// (POST /api/generate), the cross-attention of each output word over the source words for any
// layer and head or the mean, the top 5 of every step (click one: the decoder continues from
// it), saliency per source word; and the compose panel (POST /api/compose). Plain JavaScript,
// no libraries; everything typed goes into the page as text, never as HTML.
'use strict';

const ATTN_RGB = [255, 140, 0];
const POS_RGB = [40, 160, 70];
const NEG_RGB = [215, 50, 50];
const REVEAL_MS = 180; // between two output words as they appear

const dec = { models: [], data: null, step: 0, layer: -1, head: -1, prefix: [], seq: 0, text: '', view: null, urlView: null, composed: null };
// ---- the verdict --------------------------------------------------------------------------

function model() {
  return dec.models.find((m) => m.name === $('dec-model').value);
}

function fillViews(m) {
  for (const [id, n, what] of [['dec-layer', m.n_layers, 'layer'], ['dec-head', m.n_heads, 'head']]) {
    const s = $(id);
    s.replaceChildren(el('option', { value: '-1', text: `mean of every ${what}` }));
    for (let i = 0; i < n; i++) s.append(el('option', { value: String(i), text: String(i + 1) }));
    s.disabled = !m.maps;
  }
}

// Asks /api/generate for the text (with a forced prefix, or the current one when keep: a new
// layer or head), then shows it: word by word unless keep.
async function write(prefix, keep) {
  const m = model();
  if (!m) return;
  const seq = ++dec.seq;
  $('dec-error').textContent = '';
  $('dec-unknown').replaceChildren();
  markStale(false);
  if (!keep) dec.prefix = prefix || [];
  const body = { model: m.name, text: $('dec-text').value, layer: dec.layer, head: dec.head, maps: !!m.maps };
  if (dec.prefix.length) body.prefix = dec.prefix;
  try {
    const j = await api('/api/generate', body);
    if (seq !== dec.seq) return;
    dec.data = j.explain;
    dec.text = body.text;
    showNote(j.on_task, j.note);
    if (!keep) dec.step = Math.max(0, dec.prefix.length - 1);
    const v = dec.urlView;
    dec.urlView = null;
    if (v && v.step !== undefined) dec.step = v.step;
    dec.step = Math.min(dec.step, dec.data.steps.length - 1);
    render(!keep && !v);
    if (v && v.view) showView(v.view);
    writeFragment();
  } catch (e) {
    if (seq !== dec.seq) return;
    if (e.info && e.info.code === 'unknown_word') $('dec-unknown').replaceChildren(...unknownLines(e.info, replaceWord));
    else $('dec-error').textContent = e.message;
    markStale(true);
  }
}

// An answer that failed leaves the output of an earlier text on the page: dimmed, and a note
// says whose it is (as the explorer does).
function markStale(stale) {
  const shown = stale && dec.data !== null && dec.data !== undefined;
  $('dec-output').classList.toggle('stale', shown);
  $('dec-stale').hidden = !shown;
  if (shown) $('dec-stale').textContent = `The output below is still that of "${dec.text}".`;
}

// A chip of an unknown word's suggestions: the word takes the place of the unknown one (the
// tokenizer's words joined by spaces) and the decoder writes again.
function replaceWord(i, word) {
  const words = tokenize($('dec-text').value);
  words[i] = word;
  $('dec-text').value = words.join(' ');
  write();
}

// The model saw sentences of the task's grammar only: say so when the text is not one.
function showNote(onTask, note) {
  const p = $('dec-note');
  p.hidden = onTask !== false;
  p.textContent = onTask === false
    ? `The model was trained on the task's sentences only, and this text is ${note.replace(/^not a sentence of the grammar: /, 'not one: ')}. Its output says little here.`
    : '';
}

function render(reveal) {
  $('dec-output').hidden = false;
  const d = dec.data;
  const words = $('dec-words');
  words.replaceChildren();
  d.steps.forEach((s, t) => {
    const b = el('button', {
      type: 'button', class: 'tok' + (t === dec.step ? ' selected' : '') + (s.forced ? ' forced' : ''),
      'data-step': String(t), title: `p = ${s.probability.toFixed(4)}${s.forced ? ' (chosen by you)' : ''}`,
      onclick: () => { dec.step = t; dec.view = 'verdict'; render(false); writeFragment(); },
    }, el('span', { text: s.token }), el('span', { class: 'v', text: s.probability.toFixed(2) }));
    if (reveal && t > dec.prefix.length) { // written word by word (a CSS animation's delay)
      b.classList.add('reveal');
      b.style.animationDelay = `${REVEAL_MS * (t - dec.prefix.length)}ms`;
    }
    words.append(b);
  });
  renderSource();
  renderTop();
  renderHeatmap();
  renderCrossModelView();
  renderCrossHeadView();
  document.body.dataset.generated = String(dec.seq); // for tests: this answer is on the page
}

function renderSource() {
  const d = dec.data;
  const row = d.alignment ? d.alignment[dec.step] : null;
  const which = [d.alignment_layer < 0 ? 'the mean of every layer' : `layer ${d.alignment_layer + 1}`,
    d.alignment_head < 0 ? 'the mean of every head' : `head ${d.alignment_head + 1}`].join(', ');
  $('dec-src-title').textContent = row
    ? `Source words, shaded by the cross-attention of "${d.steps[dec.step].token}" (${which})`
    : `This model has no attention: source words for "${d.steps[dec.step].token}"`;
  const src = $('dec-src');
  src.replaceChildren();
  const max = row ? Math.max(...row) : 0;
  d.tokens.forEach((w, i) => {
    const v = row ? row[i] : 0;
    const t = el('span', { class: 'tok', 'data-weight': String(v), title: `attention ${v.toFixed(4)}` },
      el('span', { text: w }), el('span', { class: 'v', text: row ? `${(100 * v).toFixed(0)}%` : '' }));
    t.style.background = rgba(ATTN_RGB, max > 0 ? v / max : 0);
    src.append(t);
  });
  const sal = $('dec-sal');
  sal.replaceChildren();
  if (!d.saliency) return;
  const g = d.saliency.grad_x_input[dec.step];
  const gmax = Math.max(...g.map(Math.abs));
  d.tokens.forEach((w, i) => {
    const t = el('span', { class: 'tok', 'data-saliency': String(g[i]) },
      el('span', { text: w }), el('span', { class: 'v', text: (g[i] >= 0 ? '+' : '') + g[i].toFixed(2) }));
    t.style.background = rgba(g[i] >= 0 ? POS_RGB : NEG_RGB, gmax > 0 ? Math.abs(g[i]) / gmax : 0);
    sal.append(t);
  });
}

function renderTop() {
  const d = dec.data;
  const box = $('dec-top');
  box.replaceChildren();
  d.steps.forEach((s, t) => {
    const row = el('div', { class: 'dec-step', 'data-step': String(t) },
      el('span', { class: 'n', text: `${t + 1}. ${s.token}` }));
    for (const alt of s.top) {
      const special = alt.token.startsWith('['); // [EOS], [BOS], [PAD]: not a word to write
      const chip = el('button', {
        type: 'button', class: 'chip' + (alt.id === s.id ? ' chosen' : ''),
        title: alt.id === s.id ? 'what the decoder wrote' : special ? 'not a word to write'
          : `write "${alt.token}" here and continue`,
        text: `${alt.token} ${(100 * alt.probability).toFixed(1)}%`,
      });
      chip.disabled = alt.id === s.id || special;
      chip.addEventListener('click', () => { dec.view = 'top'; write(d.words.slice(0, t).concat([alt.token])); });
      row.append(chip);
    }
    box.append(row);
  });
}

function svgEl(tag, attrs) {
  const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}

// Every layer x head of the cross-attention at once (bertviz's model view, as the explorer's).
function renderCrossModelView() {
  const d = dec.data, box = $('dec-model-view');
  const A = d.cross_attention;
  $('dec-mv-title').hidden = !A;
  box.hidden = !A;
  if (!A) { box.replaceChildren(); return; }
  const T = d.steps.length, S = d.tokens.length, NH = A[0].length;
  const grid = el('div', { class: 'mv-grid' });
  grid.style.gridTemplateColumns = `auto repeat(${NH}, minmax(0, 11em))`;
  grid.append(el('span', { class: 'mv-corner', text: 'layer \\ head' }));
  for (let h = 0; h < NH; h++) grid.append(el('span', { class: 'mv-head', text: `head ${h + 1}` }));
  A.forEach((heads, l) => {
    grid.append(el('span', { class: 'mv-layer', text: `layer ${l + 1}` }));
    heads.forEach((P, h) => {
      const name = `layer ${l + 1}, head ${h + 1} (cross_attention[${l}][${h}] in the JSON)`;
      const map = svgEl('svg', { viewBox: `0 0 ${S} ${T}`, preserveAspectRatio: 'none', 'shape-rendering': 'crispEdges',
        'aria-hidden': 'true' });
      map.style.aspectRatio = `${S} / ${T}`;
      map.append(svgEl('rect', { x: 0, y: 0, width: S, height: T, fill: '#fff' }));
      P.forEach((row, q) => row.forEach((p, k) => {
        map.append(svgEl('rect', { x: k, y: q, width: 1, height: 1, fill: `rgb(${ATTN_RGB.join(', ')})`,
          'fill-opacity': p.toFixed(3), 'data-q': q, 'data-k': k }));
      }));
      const selected = (dec.layer === l || dec.layer < 0) && (dec.head === h || dec.head < 0);
      grid.append(el('button', { class: `mv-cell${selected ? ' selected' : ''}`, type: 'button', 'data-layer': l,
        'data-head': h, title: name, 'aria-label': name, onclick: () => {
          dec.layer = l; dec.head = h; $('dec-layer').value = String(l); $('dec-head').value = String(h);
          dec.view = 'model-view'; write(null, true);
        } }, map));
    });
  });
  box.replaceChildren(grid);
}

// Lines from each output word (left) to each source word (right), opacity the alignment's weight.
function renderCrossHeadView() {
  const d = dec.data, box = $('dec-head-view');
  $('dec-hv-title').hidden = !d.alignment;
  box.hidden = !d.alignment;
  if (!d.alignment) { box.replaceChildren(); return; }
  const T = d.steps.length, S = d.tokens.length, rowH = S > 24 ? 15 : 20, top = 4;
  const W = Math.max(240, Math.min(box.clientWidth || 560, 560)), colW = Math.min(104, Math.floor(W * 0.32));
  const H = 2 * top + Math.max(T, S) * rowH, Y = (i) => top + (i + 0.5) * rowH;
  const fill = `rgb(${ATTN_RGB.join(', ')})`;
  const g = svgEl('svg', { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img',
    'aria-label': 'each output word\'s cross-attention to every source word' });
  d.alignment.forEach((row, t) => row.forEach((p, k) => {
    g.append(svgEl('line', { x1: colW + 2, y1: Y(t), x2: W - colW - 2, y2: Y(k), stroke: fill,
      'stroke-width': t === dec.step ? 3 : 1.5, 'stroke-opacity': p.toFixed(3), 'data-q': t, 'data-k': k }));
  }));
  const text = (x, y, anchor, w, bold) => {
    const e = svgEl('text', { x, y, 'text-anchor': anchor, 'dominant-baseline': 'central', 'font-size': 13,
      'font-weight': bold ? 'bold' : 'normal' });
    e.textContent = w.length > 12 ? `${w.slice(0, 11)}\u2026` : w;
    return e;
  };
  d.steps.forEach((s, t) => g.append(text(colW - 6, Y(t), 'end', s.token, t === dec.step)));
  d.tokens.forEach((w, k) => g.append(text(W - colW + 6, Y(k), 'start', w, false)));
  box.replaceChildren(g);
}

function renderHeatmap() {
  const d = dec.data;
  const box = $('dec-heatmap');
  box.replaceChildren();
  if (!d.alignment) return;
  const table = el('table', { class: d.tokens.length > 30 ? 'dense' : '' });
  const cols = el('colgroup', {}, el('col', { class: 'qcol' }));
  d.tokens.forEach(() => cols.append(el('col', {})));
  table.append(cols);
  const head = el('tr', {}, el('th', {}));
  d.tokens.forEach((w) => head.append(el('th', {}, el('span', { text: w }))));
  table.append(el('thead', {}, head));
  const body = el('tbody', {});
  d.alignment.forEach((row, t) => {
    const tr = el('tr', {}, el('th', { text: d.steps[t].token }));
    const max = Math.max(...row);
    row.forEach((v, i) => {
      const td = el('td', { title: `${d.steps[t].token} <- ${d.tokens[i]}: ${v.toFixed(4)}` });
      td.style.background = rgba(ATTN_RGB, max > 0 ? v / max : 0);
      tr.append(td);
    });
    tr.addEventListener('click', () => { dec.step = t; dec.view = 'alignment'; render(false); writeFragment(); });
    body.append(tr);
  });
  table.append(body);
  box.append(table);
}

// ---- compose ------------------------------------------------------------------------------

async function compose() {
  $('cmp-error').textContent = '';
  const body = {
    polarity: $('cmp-polarity').value, subject: $('cmp-subject').value,
    temperature: Number($('cmp-temp').value), top_p: Number($('cmp-top-p').value),
    n: Number($('cmp-n').value), seed: Number($('cmp-seed').value),
  };
  const list = $('cmp-samples');
  try {
    const j = await api('/api/compose', body);
    list.replaceChildren();
    for (const s of j.samples) {
      const judges = s.judges.map((x) => (x.probability === null ? `${x.model}: -`
        : `${x.model}: p(positive) ${x.probability.toFixed(3)}${x.agrees ? '' : ' (disagrees)'}`));
      const g = s.grammar;
      const asked = g.polarity_ok && g.subject_ok ? ', as asked' : `, not as asked (${j.source})`;
      const gram = g.grammatical
        ? el('span', { class: g.polarity_ok && g.subject_ok ? 'ok' : 'bad',
          text: `grammatical: ${g.label} about the ${g.subject}${asked}` })
        : el('span', { class: 'bad', text: `not grammatical (${g.why})` });
      list.append(el('li', { 'data-seed': String(s.seed) }, el('div', { class: 'text', text: s.text || '(empty)' }),
        el('div', { class: 'judges' }, gram, ' · ' + judges.join(' · '))));
    }
    dec.composed = body;
    writeFragment();
    document.body.dataset.composed = String(Number(document.body.dataset.composed || 0) + 1);
  } catch (e) {
    $('cmp-error').textContent = e.message;
  }
}

// ---- a URL per view: the page's state in the fragment ----------------------------------------
// #model=NAME&s=TEXT&layer=L|mean&head=H|mean&prefix=WORDS&step=N&view=V, and after a compose
// polarity=&subject=&temperature=&top_p=&samples=&seed= (composed again on load); layer, head
// and step counted from 1 as the page shows them. A value that is missing, malformed or out of
// range is ignored and the default used (docs/serve.md, "The decoder page's URL").

const DEC_VIEWS = {
  verdict: 'dec-output', 'model-view': 'dec-mv-title', 'head-view': 'dec-hv-title', source: 'dec-src-title',
  saliency: 'dec-sal-title', top: 'dec-top-title', alignment: 'dec-heatmap-title', compose: 'compose-section',
};

function readFragment() {
  const r = fragmentReader();
  if (!r) return {};
  const { get, count } = r;
  const meanOr = (k) => (get(k) === 'mean' ? -1 : count(k));
  const f = { layer: meanOr('layer'), head: meanOr('head'), step: count('step') };
  const m = get('model');
  if (m && dec.models.some((x) => x.name === m.replace(/-seed\d+$/, '') && x.task === 'rewrite')) f.model = m.replace(/-seed\d+$/, '');
  const s = get('s');
  if (s && s.length <= 2000) f.text = s;
  const pre = get('prefix');
  if (pre && pre.length <= 2000) f.prefix = pre.split(/\s+/).filter((w) => w.length > 0).slice(0, 60);
  const v = get('view');
  if (v && Object.prototype.hasOwnProperty.call(DEC_VIEWS, v)) f.view = v;
  const pol = get('polarity');
  if (pol === 'positive' || pol === 'negative') {
    const num = (k, lo, hi, int) => {
      const x = get(k);
      if (x === null || !/^\d*\.?\d+$/.test(x)) return undefined;
      const n = Number(x);
      return n >= lo && n <= hi && (!int || Number.isInteger(n)) ? n : undefined;
    };
    f.compose = { polarity: pol, subject: get('subject'), temperature: num('temperature', 0.05, 5),
      top_p: num('top_p', 0, 1), n: num('samples', 1, 16, true), seed: num('seed', 0, 2 ** 31, true) };
  }
  return f;
}

function writeFragment() {
  const p = new URLSearchParams();
  const m = model();
  if (m && dec.data) {
    p.set('model', m.name);
    p.set('s', dec.text.trim());
    if (dec.layer >= 0) p.set('layer', String(dec.layer + 1));
    if (dec.head >= 0) p.set('head', String(dec.head + 1));
    if (dec.prefix.length) p.set('prefix', dec.prefix.join(' '));
    p.set('step', String(dec.step + 1));
  }
  const c = dec.composed;
  if (c) {
    p.set('polarity', c.polarity);
    p.set('subject', c.subject);
    p.set('temperature', String(c.temperature));
    p.set('top_p', String(c.top_p));
    p.set('samples', String(c.n));
    p.set('seed', String(c.seed));
  }
  if (dec.view) p.set('view', dec.view);
  const hash = `#${p.toString()}`;
  if (hash !== window.location.hash) window.history.replaceState(null, '', hash);
}

function showView(view) {
  dec.view = view;
  const target = $(DEC_VIEWS[view]);
  if (target && target.offsetParent !== null) window.scrollTo(0, target.getBoundingClientRect().top + window.scrollY - 8);
}

// Opens the fragment's view: its model, text, layer, head and forced prefix (written, then the
// step and the view applied by write), and its compose settings (composed again).
function applyFragment(f) {
  if (f.model) $('dec-model').value = f.model;
  const m = model();
  if (m) {
    fillViews(m);
    if (f.layer !== undefined && f.layer < m.n_layers && m.maps) dec.layer = f.layer;
    if (f.head !== undefined && f.head < m.n_heads && m.maps) dec.head = f.head;
    $('dec-layer').value = String(dec.layer);
    $('dec-head').value = String(dec.head);
  }
  if (f.text) $('dec-text').value = f.text;
  if (f.step !== undefined || f.view) dec.urlView = { step: f.step, view: f.view };
  const c = f.compose;
  if (c) {
    $('cmp-polarity').value = c.polarity;
    if (c.subject && Array.from($('cmp-subject').options).some((o) => o.text === c.subject)) $('cmp-subject').value = c.subject;
    for (const [id, v] of [['cmp-temp', c.temperature], ['cmp-top-p', c.top_p], ['cmp-n', c.n], ['cmp-seed', c.seed]])
      if (v !== undefined) $(id).value = String(v);
  }
  return f.prefix || [];
}

// ---- start --------------------------------------------------------------------------------

async function start() {
  const [d, vocab] = await Promise.all([api('/api/decoders'), api('/api/vocab').catch(() => null)]);
  dec.models = d.decoders;
  const rewrite = dec.models.filter((m) => m.task === 'rewrite');
  const sel = $('dec-model');
  for (const m of rewrite) sel.append(el('option', { value: m.name, text: `${m.name} (seed ${m.seed})` }));
  const preferred = rewrite.find((m) => m.arch === 'seq2seq-transformer');
  if (preferred) sel.value = preferred.name; // the write-up's model first
  if (!rewrite.length) {
    $('dec-none').textContent = 'No rewrite model is loaded (weights/seq2seq-*-seed<S>.json).';
    $('dec-go').disabled = true;
  } else {
    fillViews(model());
  }
  const subjects = vocab ? vocab.words.filter((w) => w.category === 'subject').map((w) => w.word)
    : ['lecture', 'course', 'teacher', 'professor', 'seminar', 'exam', 'tutorial', 'textbook'];
  for (const s of subjects) $('cmp-subject').append(el('option', { text: s }));
  if (!dec.models.some((m) => m.task === 'compose')) {
    $('cmp-none').textContent = 'No compose model is loaded (weights/compose-*-seed<S>.json).';
    $('cmp-go').disabled = true;
  }
  sel.addEventListener('change', () => { fillViews(model()); dec.layer = dec.head = -1; write(); });
  $('dec-layer').addEventListener('change', (e) => { dec.layer = Number(e.target.value); dec.view = 'source'; write(null, true); });
  $('dec-head').addEventListener('change', (e) => { dec.head = Number(e.target.value); dec.view = 'source'; write(null, true); });
  $('dec-go').addEventListener('click', () => write());
  $('dec-text').addEventListener('keydown', (e) => { if (e.key === 'Enter') write(); });
  $('cmp-go').addEventListener('click', () => { dec.view = 'compose'; compose(); });
  const f = readFragment();
  const prefix = applyFragment(f);
  if (f.compose && !$('cmp-go').disabled) {
    await compose();
    if (f.view === 'compose' && !rewrite.length) showView('compose');
  }
  if (rewrite.length) await write(prefix);
  else writeFragment();
  document.body.dataset.ready = 'true';
}

start().catch((e) => { $('dec-error').textContent = e.message; });

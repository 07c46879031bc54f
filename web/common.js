// common.js -- what the three pages of attn serve share (loaded before each page's script):
// element lookup and creation, a colour with an alpha, and the JSON API's calls, whose error
// answers {"error": {"status", "code", "message"}} become thrown Errors (info: the error object);
// attn's tokenizer, and an unknown_word answer's words as lines of clickable chips.
'use strict';

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

function rgba(rgb, a) {
  const alpha = Math.max(0, Math.min(1, a));
  return `rgba(${rgb[0]}, ${rgb[1]}, ${rgb[2]}, ${alpha.toFixed(3)})`;
}

async function answer(r) {
  const j = await r.json();
  if (!r.ok) {
    const err = new Error(j.error ? j.error.message : r.statusText);
    err.info = j.error || {};
    throw err;
  }
  return j;
}

async function api(path, body) {
  const init = body === undefined ? {} : {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
  };
  return answer(await fetch(path, init));
}

// ---- the tokenizer, as attn's (src/data/vocab.c): lower case, punctuation, quotes and brackets
// removed, split on white space.
function tokenize(text) {
  return text.toLowerCase().replace(/[.,!?;:"'`()[\]{}\u201c\u201d\u2018\u2019\u201e\u00ab\u00bb]/g, '')
    .split(/\s+/).filter((w) => w.length > 0);
}

// ---- unknown words ---------------------------------------------------------------------------
// Unknown words are the server's to suggest for: its unknown_word answer lists each with the
// nearest word by spelling and, where the task's grammar places it, the words of the class its
// place takes (src/data/suggest.c; the same as attn predict's message).
const SUGGEST_SHOWN = 4; // words of each category offered as chips (the tooltip lists them all)
const article = (w) => (/^[aeiou]/.test(w) ? 'an' : 'a');

// The lines for an unknown_word answer (info): each unknown word with its nearest word by
// spelling and its place's class, every suggested word a chip whose click calls take(i, word)
// (i: the word's 0-based position in the tokenizer's words); a last line counts those the answer
// leaves out.
function unknownLines(info, take) {
  const lines = [];
  const chip = (word, i, cls, extra) => el('button', { class: cls, type: 'button', text: word, ...extra,
    onclick: () => take(i, word) });
  for (const u of info.unknown_words || []) {
    const i = u.position - 1;
    const line = el('div', { class: 'unknown-word', 'data-word': u.word, 'data-position': String(u.position) });
    line.append(el('span', { class: 'bad', text: u.word }), ` (word ${u.position}) is not in the vocabulary; by spelling the nearest is `);
    if (u.nearest) line.append(chip(u.nearest, i, 'chip'));
    if (u.place) {
      line.append(`; its place (${u.place.rule}) takes ${article(u.place.class)} ${u.place.class}: `);
      u.place.groups.forEach((g, k) => {
        if (k > 0) line.append(' or ');
        if (u.place.groups.length > 1) line.append(el('span', { class: 'cat-name', text: `${g.category} ` }));
        for (const w of g.words.slice(0, SUGGEST_SHOWN))
          line.append(chip(w, i, 'chip cat-suggest', { 'data-category': g.category, title: `${g.category}: ${g.words.join(', ')}` }), ' ');
      });
    }
    lines.push(line);
  }
  const more = (info.unknown_count || 0) - (info.unknown_words || []).length;
  if (more > 0) lines.push(el('div', { class: 'hint', text: `and ${more} more unknown words` }));
  return lines;
}

// The page's fragment (#k=v&..., a URL per view) read: get(k), the value trimmed (null when
// absent), and count(k), a 1-based number up to 9999 as 0-based (else undefined); null when the
// fragment does not parse. Each page checks the values it takes against what it has.
function fragmentReader() {
  let p;
  try {
    p = new URLSearchParams(window.location.hash.replace(/^#/, ''));
  } catch (e) {
    return null;
  }
  const get = (k) => { const v = p.get(k); return v === null ? null : v.trim(); };
  const count = (k) => { const v = get(k); return v !== null && /^[1-9]\d{0,3}$/.test(v) ? Number(v) - 1 : undefined; };
  return { get, count };
}

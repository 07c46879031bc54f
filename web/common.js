// common.js -- what the three pages of attn serve share (loaded before each page's script):
// element lookup and creation, a colour with an alpha, and the JSON API's calls, whose error
// answers {"error": {"status", "code", "message"}} become thrown Errors (info: the error object).
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

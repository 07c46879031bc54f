// peers_ort_seq2seq.js -- ONNX Runtime's side of bench/peers.sh for the seq2seq models: greedy
// decoding at batch 1 over the exported encoder and decoder step (tools/bench_peers_seq2seq.py
// export: PREFIX.enc.onnx, PREFIX.step.onnx).
//
// Sessions as bench/peers_ort.js (CPU, intra- and inter-op threads 1, sequential, all graph
// optimisations). Each source of IDS alone: the encoder once, then steps from [BOS] (the
// transformer's step takes the prefix and its causal -inf mask, the RNNs' the last token and the
// state it returned), argmax (ties: the lower id) until [EOS] or MAX_OUT words. REPS timed passes
// after one untimed one; prints one line for bench/peers_table.py:
//   peer name=ort sources=100 tokens=458 reps=2 median_s=0.05 cpu_median_s=0.05
// and writes the last pass's words to TOKENS (ids per line) and step logits to LOGITS (float32).
// Usage: node bench/peers_ort_seq2seq.js PREFIX IDS TOKENS LOGITS BOS EOS MAX_OUT [REPS]
// Exit codes: 0 ok, 1 runtime error, 2 usage.
'use strict';
const fs = require('fs');
const path = require('path');

const {median} = require('./peers_ort.js'); // one median for both ORT scripts

async function main() {
  const argv = process.argv.slice(2);
  if (argv.length < 7 || argv.length > 8) {
    console.error('usage: node bench/peers_ort_seq2seq.js PREFIX IDS TOKENS LOGITS BOS EOS MAX_OUT [REPS]');
    return 2;
  }
  const [prefix, idsPath, tokensPath, logitsPath] = argv;
  const [bos, eos, maxOut] = argv.slice(4, 7).map(Number);
  const reps = argv.length > 7 ? Number(argv[7]) : 2;
  if (![bos, eos, maxOut, reps].every(Number.isInteger) || reps < 1 || maxOut < 1) {
    console.error('peers_ort_seq2seq: BOS, EOS, MAX_OUT and REPS must be integers (REPS, MAX_OUT >= 1)');
    return 2;
  }
  const ort = require(path.join(__dirname, 'peers-node', 'node_modules', 'onnxruntime-node'));
  const sources = fs.readFileSync(idsPath, 'utf8').split('\n').filter((l) => l.trim() !== '')
    .map((l, i) => l.trim().split(/\s+/).map((w) => {
      if (!/^\d+$/.test(w)) throw new Error(`${idsPath}:${i + 1}: expected token ids`);
      return BigInt(w);
    }));
  if (sources.length === 0) throw new Error(`${idsPath}: no sources`);
  const opts = {
    executionProviders: ['cpu'], intraOpNumThreads: 1, interOpNumThreads: 1,
    executionMode: 'sequential', graphOptimizationLevel: 'all',
  };
  const enc = await ort.InferenceSession.create(prefix + '.enc.onnx', opts);
  const step = await ort.InferenceSession.create(prefix + '.step.onnx', opts);
  const transformer = step.inputNames.includes('prefix');
  const i64 = (a, dims) => new ort.Tensor('int64', BigInt64Array.from(a), dims);

  async function decode(src) {
    const env = await enc.run({ src: i64(src, [1, src.length]) });
    const words = [], rows = [];
    let last = bos;
    while (words.length < maxOut) {
      const feeds = {};
      if (transformer) {
        const T = words.length + 1, mask = new Float32Array(T * T);
        for (let r = 0; r < T; r++) for (let c = r + 1; c < T; c++) mask[r * T + c] = -Infinity;
        env.prefix = i64([bos, ...words].map(BigInt), [1, T]);
        env.mask = new ort.Tensor('float32', mask, [T, T]);
      } else {
        env.token = i64([BigInt(last)], [1]);
      }
      for (const name of step.inputNames) feeds[name] = env[name];
      const out = await step.run(feeds);
      if (!transformer) env.state = out.state_out;
      const logits = out.logits.data;
      rows.push(Float32Array.from(logits));
      let best = 0;
      for (let k = 1; k < logits.length; k++) if (logits[k] > logits[best]) best = k;
      if (best === eos) break;
      words.push(best);
      last = best;
    }
    return { words, rows };
  }

  const times = [], cpu = [];
  let results = [];
  for (let r = 0; r < reps + 1; r++) {
    const t0 = process.hrtime.bigint(), c0 = process.cpuUsage();
    results = [];
    for (const s of sources) results.push(await decode(s));
    const t1 = process.hrtime.bigint(), c1 = process.cpuUsage(c0);
    if (r > 0) {
      times.push(Number(t1 - t0) * 1e-9);
      cpu.push((c1.user + c1.system) * 1e-6);
    }
  }
  let tokens = 0;
  const parts = [];
  for (const { rows } of results) {
    tokens += rows.length;
    for (const row of rows) {
      if (!row.every(Number.isFinite)) throw new Error('non-finite logits');
      parts.push(Buffer.from(row.buffer));
    }
  }
  fs.writeFileSync(tokensPath + '.tmp', results.map(({ words }) => words.join(' ') + '\n').join(''));
  fs.renameSync(tokensPath + '.tmp', tokensPath);
  fs.writeFileSync(logitsPath + '.tmp', Buffer.concat(parts));
  fs.renameSync(logitsPath + '.tmp', logitsPath);
  console.log(`peer name=ort sources=${sources.length} tokens=${tokens} reps=${reps} ` +
              `median_s=${median(times).toFixed(6)} cpu_median_s=${median(cpu).toFixed(6)}`);
  return 0;
}

main().then((code) => process.exit(code), (e) => {
  console.error(`peers_ort_seq2seq: ${e.message}`);
  process.exit(1);
});

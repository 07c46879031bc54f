// peers_ort.js -- ONNX Runtime's side of bench/peers.sh: batch-1 latency of an exported classifier.
//
// Loads MODEL.onnx (tools/bench_peers.py export) with onnxruntime-node (bench/peers-node, CPU
// execution provider, intra- and inter-op threads 1, sequential execution, all graph
// optimisations), runs every sentence of IDS alone (ids int64 [1, T], lengths int64 [1]), REPS
// timed passes after WARMUP untimed ones, and prints one line parsed by bench/peers.sh:
//   peer name=ort sentences=1000 reps=5 median_s=0.05 cpu_median_s=0.05
// (CPU time: process.cpuUsage of the whole process, user + system). The last pass's logits go
// to LOGITS as float32 in sentence order.
// Usage: node bench/peers_ort.js MODEL.onnx IDS LOGITS [REPS [WARMUP]]
// Exit codes: 0 ok, 1 runtime error, 2 usage.
'use strict';
const fs = require('fs');
const path = require('path');

function median(v) {
  const s = [...v].sort((a, b) => a - b), n = s.length;
  return n % 2 ? s[(n - 1) / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

async function main() {
  const argv = process.argv.slice(2);
  if (argv.length < 3 || argv.length > 5) {
    console.error('usage: node bench/peers_ort.js MODEL.onnx IDS LOGITS [REPS [WARMUP]]');
    return 2;
  }
  const [model, idsPath, logitsPath] = argv;
  const reps = argv.length > 3 ? Number(argv[3]) : 5, warmup = argv.length > 4 ? Number(argv[4]) : 1;
  if (!Number.isInteger(reps) || reps < 1 || !Number.isInteger(warmup) || warmup < 0) {
    console.error('peers_ort: REPS must be an integer >= 1, WARMUP >= 0');
    return 2;
  }
  const ort = require(path.join(__dirname, 'peers-node', 'node_modules', 'onnxruntime-node'));
  const lines = fs.readFileSync(idsPath, 'utf8').split('\n').filter((l) => l.trim() !== '');
  const inputs = lines.map((l, i) => {
    const ids = l.trim().split(/\s+/).map((w) => {
      if (!/^\d+$/.test(w)) throw new Error(`${idsPath}:${i + 1}: expected token ids`);
      return BigInt(w);
    });
    return {
      ids: new ort.Tensor('int64', BigInt64Array.from(ids), [1, ids.length]),
      lengths: new ort.Tensor('int64', BigInt64Array.from([BigInt(ids.length)]), [1]),
    };
  });
  if (inputs.length === 0) throw new Error(`${idsPath}: no sentences`);
  const session = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'],
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const logits = new Float32Array(inputs.length);
  const times = [], cpu = [];
  for (let r = 0; r < warmup + reps; r++) {
    const t0 = process.hrtime.bigint(), c0 = process.cpuUsage();
    for (let i = 0; i < inputs.length; i++) {
      const out = await session.run(inputs[i]);
      logits[i] = out.logits.data[0];
    }
    const t1 = process.hrtime.bigint(), c1 = process.cpuUsage(c0);
    if (r >= warmup) {
      times.push(Number(t1 - t0) * 1e-9);
      cpu.push((c1.user + c1.system) * 1e-6);
    }
  }
  if (!logits.every(Number.isFinite)) throw new Error('non-finite logits');
  fs.writeFileSync(logitsPath + '.tmp', Buffer.from(logits.buffer));
  fs.renameSync(logitsPath + '.tmp', logitsPath);
  console.log(`peer name=ort sentences=${inputs.length} reps=${reps} ` +
              `median_s=${median(times).toFixed(6)} cpu_median_s=${median(cpu).toFixed(6)}`);
  return 0;
}

module.exports = {median}; // peers_ort_seq2seq.js takes its median from here

if (require.main === module) {
  main().then((code) => process.exit(code), (e) => {
    console.error(`peers_ort: ${e.message}`);
    process.exit(1);
  });
}

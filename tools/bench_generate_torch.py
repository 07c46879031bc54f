#!/usr/bin/python3
"""bench_generate_torch.py -- PyTorch's side of bench/seq2seq's KV-cache generation rows: greedy
decoding at a fixed length, batch 1 and batch B, in PyTorch eager and TorchScript.

The weights --weights (attn-seq2seq-weights-v1 JSON, what bench/seq2seq wrote) and the sources
of --sources-file (ids per line) are decoded greedily with [EOS] out of the argmax at the first
--min-len steps (seq2seq_models.choose: `attn generate --min-len N`), up to --max-len words:
  eager        batch 1: seq2seq_models.greedy_cached (the hand-written incremental decoder,
               CachedDecoder) per source; batch B: seq2seq_models.greedy_batch on the sources
               taken B at a time (BatchCachedDecoder: the rows' products together, per row
               attention over its own cache);
  torchscript  the same loops with the decoder step compiled by torch.jit.script (ScriptStep:
               BatchCachedDecoder's operations, caches passed in and out as lists of tensors;
               the learned or sinusoidal positions and no others: rope and alibi are not
               scripted). If scripting fails the line says why and the run goes on.
One BLAS thread, attn's OpenBLAS kernels (tools/blas_core.py); --reps timed passes after one
untimed one, medians of wall and process CPU time. Tokens = steps taken ([EOS] included).
Prints, per mode and batch:
  torch MODE batch=B tokens=N seconds=WALL cpu=CPU
or
  torch torchscript unavailable: WHY
and writes each mode's words per source (ids per line) to OUT.MODE.bB.txt (--out OUT).

Usage: /usr/bin/python3 tools/bench_generate_torch.py --weights W --sources-file S --out OUT
       [--min-len N] [--max-len N] [--batch B] [--reps R] [--vocab-size V]
"""
import os

os.environ["OPENBLAS_NUM_THREADS"] = "1"

import argparse  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from typing import List, Tuple  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import blas_core  # noqa: E402,F401 -- before torch: attn's OpenBLAS kernels
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from bench_infer_torch import read_ids  # noqa: E402
import seq2seq_models as sm  # noqa: E402


class ScriptStep(torch.nn.Module):
    """One step of BatchCachedDecoder for n live rows, scriptable: the same operations in the
    same order (F.linear on [n, D] rows, per row head split, q / sqrt(HS), bmm, softmax, bmm;
    out_proj, LayerNorms, feed-forward, head on the n rows). Caches are lists indexed
    layer * n + row: self keys and values [NH, t, HS] (returned with the new row appended) and
    the memory's keys and values [NH, S_row, HS]."""

    def __init__(self, model):
        super().__init__()
        c = model.config
        if c["pos"] not in ("learned", "sinusoidal", "none"):
            raise ValueError("pos %r is not scripted here" % c["pos"])
        self.layers = model.transformer.decoder.layers
        self.norm = model.transformer.decoder.norm
        self.head = model.head
        self.emb = model.tgt_embedding
        self.D, self.NH = c["d_model"], c["n_heads"]
        self.root = math.sqrt(self.D // self.NH)
        self.pre = c["norm"] == "pre"
        self.gelu = c["activation"] == "gelu"

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        return x.view(n, self.NH, self.D // self.NH).transpose(0, 1).contiguous()

    def _attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        p = torch.softmax(torch.bmm(q, k.transpose(1, 2)), dim=-1)
        o = torch.bmm(p, v)
        return o.transpose(0, 1).reshape(q.shape[1], -1)

    def forward(self, tokens: torch.Tensor, prow: torch.Tensor, ks: List[torch.Tensor],
                vs: List[torch.Tensor], cks: List[torch.Tensor], cvs: List[torch.Tensor]
                ) -> Tuple[torch.Tensor, List[torch.Tensor], List[torch.Tensor]]:
        D = self.D
        n = tokens.shape[0]
        x = self.emb(tokens) + prow
        nk: List[torch.Tensor] = []
        nv: List[torch.Tensor] = []
        li = 0
        for layer in self.layers:  # (script: no module in a variable, each block written out)
            h = layer.norm1(x) if self.pre else x
            qkv = F.linear(h, layer.self_attn.in_proj_weight, layer.self_attn.in_proj_bias)
            outs: List[torch.Tensor] = []
            for r in range(n):
                q = self._split(qkv[r:r + 1, :D]) / self.root
                k = torch.cat([ks[li * n + r], self._split(qkv[r:r + 1, D:2 * D])], 1)
                v = torch.cat([vs[li * n + r], self._split(qkv[r:r + 1, 2 * D:])], 1)
                nk.append(k)
                nv.append(v)
                outs.append(self._attend(q, k, v))
            f = layer.self_attn.out_proj(torch.cat(outs, 0))
            x = x + f if self.pre else layer.norm1(x + f)
            h = layer.norm2(x) if self.pre else x
            w, bias = layer.multihead_attn.in_proj_weight, layer.multihead_attn.in_proj_bias
            q = F.linear(h, w[:D], bias[:D])
            outs = [self._attend(self._split(q[r:r + 1]) / self.root, cks[li * n + r],
                                 cvs[li * n + r]) for r in range(n)]
            f = layer.multihead_attn.out_proj(torch.cat(outs, 0))
            x = x + f if self.pre else layer.norm2(x + f)
            h = layer.norm3(x) if self.pre else x
            u = layer.linear1(h)
            f = layer.linear2(F.gelu(u) if self.gelu else F.relu(u))
            x = x + f if self.pre else layer.norm3(x + f)
            li += 1
        return self.head(self.norm(x)), nk, nv


def script_loop(step, model, sources, max_out, min_out):
    """greedy_batch's loop over the scripted step (one batch): [(tokens, n_steps)]."""
    c = model.config
    D, NH = c["d_model"], c["n_heads"]
    HS = D // NH
    memories = [model.encode(torch.tensor([s]))[0] for s in sources]
    cks, cvs = [], []
    for layer in model.transformer.decoder.layers:
        w, b = layer.multihead_attn.in_proj_weight, layer.multihead_attn.in_proj_bias
        for memory in memories:
            kv = F.linear(memory, w[D:], b[D:])
            cks.append(sm._split(kv[:, :D], NH))
            cvs.append(sm._split(kv[:, D:], NH))
    L = len(model.transformer.decoder.layers)
    live = list(range(len(sources))) if max_out > 0 else []
    ks = [torch.zeros(NH, 0, HS) for _ in range(L * len(live))]
    vs = list(ks)
    res = [([], 0) for _ in sources]
    tokens, pos = [sm.BOS] * len(live), 0
    while live:
        p = model._positions("tgt", pos + 1)
        prow = p[pos:pos + 1] if p is not None else torch.zeros(1, D)
        logits, ks, vs = step(torch.tensor(tokens), prow, ks, vs, cks, cvs)
        n, keep, nxt = len(live), [], []
        for r, i in enumerate(live):
            words, steps = res[i]
            res[i] = (words, steps + 1)
            token = sm.choose(logits[r], pos, min_out)
            if token == sm.EOS:
                continue
            words.append(token)
            if len(words) < max_out:
                keep.append(r)
                nxt.append(token)
        pick = [li * n + r for li in range(L) for r in keep]
        ks, vs = [ks[j] for j in pick], [vs[j] for j in pick]
        cks, cvs = [cks[j] for j in pick], [cvs[j] for j in pick]
        live, tokens, pos = [live[r] for r in keep], nxt, pos + 1
    return res


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else 0.5 * (v[len(v) // 2 - 1] + v[len(v) // 2])


def timed(decode, reps):
    """(results of the last pass, median wall, median CPU) over reps passes after an untimed
    one."""
    walls, cpus = [], []
    for r in range(reps + 1):
        t0, c0 = time.perf_counter(), time.process_time()
        res = decode()
        if r > 0:
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
    return res, median(walls), median(cpus)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--weights", required=True)
    ap.add_argument("--sources-file", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--min-len", type=int, default=0)
    ap.add_argument("--max-len", type=int, default=0, help="0: max_tgt_len - 1")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--vocab-size", type=int, default=sm.N_WORDS_VOCAB)
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.set_grad_enabled(False)
    sm.set_vocab_size(a.vocab_size)
    sources = read_ids(a.sources_file)
    model = sm.load(a.weights)
    max_out = a.max_len or model.config["max_tgt_len"] - 1
    N, B = a.min_len, a.batch

    def eager(batch):
        if batch == 1:
            return [(w, len(st)) for w, st in
                    (sm.greedy_cached(model, s, max_out, min_out=N) for s in sources)]
        out = []
        for i in range(0, len(sources), batch):
            out += [(w, len(st)) for w, st in
                    sm.greedy_batch(model, sources[i:i + batch], max_out, min_out=N)]
        return out

    def script(step, batch):
        out = []
        for i in range(0, len(sources), batch):
            out += script_loop(step, model, sources[i:i + batch], max_out, N)
        return out

    def report(mode, batch, res, wall, cpu):
        with open("%s.%s.b%d.txt" % (a.out, mode, batch), "w") as f:
            for words, _ in res:
                f.write(" ".join(str(w) for w in words) + "\n")
        print("torch %s batch=%d tokens=%d seconds=%.6f cpu=%.6f"
              % (mode, batch, sum(n for _, n in res), wall, cpu), flush=True)

    for batch in (1, B):
        res, wall, cpu = timed(lambda: eager(batch), a.reps)
        report("eager", batch, res, wall, cpu)
    try:
        with warnings.catch_warnings():  # nn.TransformerDecoderLayer's constants note
            warnings.simplefilter("ignore")
            step = torch.jit.script(ScriptStep(model).eval())
    except Exception as e:  # noqa: BLE001 -- the reason goes into the output
        why = " ".join(str(e).split())[:300]
        print("torch torchscript unavailable: torch.jit.script of the cached step failed: %s"
              % why, flush=True)
        return 0
    for batch in (1, B):
        res, wall, cpu = timed(lambda: script(step, batch), a.reps)
        report("torchscript", batch, res, wall, cpu)
    return 0


if __name__ == "__main__":
    sys.exit(main())

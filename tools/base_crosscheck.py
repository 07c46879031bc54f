#!/usr/bin/python3
"""base_crosscheck.py -- attn against PyTorch 1.13 at the write-up's own sizes.

1. Section 6's base nn.Transformer (d_model 512, 8 heads, FFN 2048, 6 encoder + 6 decoder
   layers; --norm post, the write-up's, and/or pre): fresh PyTorch weights (perturbed, so that no
   bias is zero) written as safetensors by tools/safetensors_io.py (JSON would be ~600 MB) ->
   `attn generate --teacher --format json` on --pairs random pairs -> every logit compared bit
   for bit with PyTorch's batch-1 eval forward of the pair alone; `attn generate --no-cache
   --format json` on --sources random sources against PyTorch's greedy loop over
   nn.Transformer (tokens and every step's logits, bit for bit); the KV-cached decoding against
   the hand-written incremental reference (seq2seq_models.CachedDecoder) and against --no-cache,
   measured in ULPs (reported, not required: docs/decoder.md).
2. A ViT-Base-size encoder: attn's classifier Transformer at d 768, 12 heads, MLP 3072,
   12 layers, pre-norm, GELU (`attn train --model transformer --embed-dim 768 --heads 12
   --ffn-dim 3072 --layers 12 --norm pre --activation gelu`, as attn_models.Transformer builds
   it), safetensors -> `attn predict --format json` on --sentences random sentences -> every
   logit bit-identical to PyTorch's batch-1 eval logit.

Kernels as tools/blas_core.py sets them (ATTN_KERNELS unset or pinned: attn pinned against
PyTorch pinned to OpenBLAS's Haswell kernels on one BLAS thread; native: attn --kernels native
against PyTorch with OpenBLAS's own choice). Lengths: --max-src / --max-tgt / --max-words bound
the random lengths (default: short, the CI size); --full uses the models' maximum lengths.

Prints `identical: N/N, max ULP: K` per check and exits 1 unless every teacher-forced,
--no-cache and classifier logit is identical and every greedy output equals PyTorch's.

Usage: /usr/bin/python3 tools/base_crosscheck.py --attn build/attn [--norm post,pre]
       [--pairs N] [--sources N] [--sentences N] [--full] [--only seq2seq|vit]
"""
import argparse
import os
import random
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import blas_core  # noqa: E402 -- before torch: the kernels attn runs on
import torch  # noqa: E402

import attn_models  # noqa: E402
import make_golden  # noqa: E402
import safetensors_io  # noqa: E402

_threads = os.environ.get("OPENBLAS_NUM_THREADS")
import seq2seq_crosscheck as sc  # noqa: E402 -- it sets OPENBLAS_NUM_THREADS=1: undone below
if _threads is None:  # the attn commands run with what blas_core.py left (native: nothing)
    os.environ.pop("OPENBLAS_NUM_THREADS")
else:
    os.environ["OPENBLAS_NUM_THREADS"] = _threads
import seq2seq_models as sm  # noqa: E402

BASE = {"d_model": 512, "n_heads": 8, "ffn_dim": 2048, "enc_layers": 6, "dec_layers": 6,
        "activation": "relu", "pos": "learned"}
VIT = {"arch": "transformer", "embed_dim": 768, "n_heads": 12, "ffn_dim": 3072, "n_layers": 12,
       "norm": "pre", "activation": "gelu", "pos": "learned"}


def seq2seq_check(a, words, norm, tmp, rng):
    cfg = dict(BASE, norm=norm)
    torch.manual_seed(33 + (norm == "pre"))
    t0 = time.time()
    model = sm.build(cfg)
    sm.perturb(model, torch.Generator().manual_seed(34 + (norm == "pre")))
    model.eval()
    path = os.path.join(tmp, "base-%s.safetensors" % norm)
    safetensors_io.save_state_dict(model.state_dict(), path, model.config, safetensors_io.SEQ2SEQ_FORMAT)
    c = model.config
    n_params = sum(p.numel() for p in model.parameters())
    max_src = c["max_src_len"] if a.full else min(a.max_src, c["max_src_len"])
    max_tgt = c["max_tgt_len"] if a.full else min(a.max_tgt, c["max_tgt_len"])
    pairs = []
    for k in range(a.pairs):  # the longest lengths first when --full
        S = max_src if a.full and k == 0 else rng.randint(1, max_src)
        T = max_tgt if a.full and k == 0 else rng.randint(1, max_tgt)
        pairs.append(([rng.choice(sc.WORDS) for _ in range(S)],
                      [rng.choice(range(2, c["tgt_vocab"])) for _ in range(T - 1)]))
    lines = ["%s\t%s" % (" ".join(words[i] for i in s), " ".join(sc.tgt_token(words, i) for i in t))
             for s, t in pairs]
    rows = sc.run_attn(a.attn, ["--weights", path, "--teacher", "--format", "json"], lines)
    same = count = worst = 0
    with torch.no_grad():
        for (s, t), row in zip(pairs, rows):
            want = model(torch.tensor([s]), torch.tensor([[sm.BOS] + t]))[0].reshape(-1).tolist()
            got = [x for r in row["logits"] for x in r]
            x, n, u = sc.compare(got, want)
            same, count, worst = same + x, count + n, max(worst, u)
    print("base %s (%d parameters, safetensors): teacher-forced %d pairs (sources 1-%d, "
          "targets 1-%d words) identical: %d/%d, max ULP: %s"
          % (norm, n_params, len(pairs), max_src, max_tgt - 1, same, count, worst), flush=True)
    ok = same == count
    # greedy_check draws its own sources up to max_src_len: hand it a model whose config bounds
    # them to this run's length
    full_len = c["max_src_len"]
    c["max_src_len"] = max_src
    sc.CACHE_ABS[0] = 0.0
    try:
        (gs, gn, gw, gt, gsrc), (cs, cn, cw, ct), (ks, kn, kw, kt) = sc.greedy_check(
            a.attn, model, path, words, rng, a.sources)
    finally:
        c["max_src_len"] = full_len
    print("base %s: greedy --no-cache vs nn.Transformer loop (%d sources, up to %d words): "
          "tokens %d/%d, logits identical: %d/%d, max ULP: %s; KV cache vs incremental "
          "reference: tokens %d/%d, logits identical: %d/%d, max ULP: %s; KV cache vs --no-cache: "
          "tokens %d/%d, logits identical %d/%d, max ULP %s, max |difference| %.3g (%.1f s)"
          % (norm, gsrc, max_src, gt, gsrc, gs, gn, gw, kt, gsrc, ks, kn, kw, ct, gsrc, cs, cn, cw,
             sc.CACHE_ABS[0], time.time() - t0), flush=True)
    return ok and gs == gn and gt == gsrc


def vit_check(a, tmp, rng):
    t0 = time.time()
    torch.manual_seed(35)
    model = attn_models.build(VIT)
    make_golden.perturb(model, torch.Generator().manual_seed(36))
    model.eval()
    path = os.path.join(tmp, "vit-base.safetensors")
    safetensors_io.save_state_dict(model.state_dict(), path, attn_models.full_config(VIT))
    vocab = {}
    r = subprocess.run([a.attn, "vocab"], capture_output=True, text=True, check=True)
    for line in r.stdout.splitlines():
        p = line.split()
        if len(p) >= 2 and p[0].isdigit() and int(p[0]) >= 2:
            vocab[int(p[0])] = p[1]
    max_words = model.config["max_len"] - 1 if a.full else a.max_words
    items = []
    for k in range(a.sentences):
        n = max_words if a.full and k == 0 else rng.randint(1, max_words)
        ids = [rng.choice(sorted(vocab)) for _ in range(n)]
        items.append((" ".join(vocab[i] for i in ids), ids))
    want = [make_golden.batch1_logit(model, ids) for _, ids in items]
    got = make_golden_attn_logits(a.attn, path, [t for t, _ in items])
    same, n, worst = sc.compare(got, want)
    print("ViT-Base-size encoder (%d parameters, safetensors): %d sentences (1-%d words) "
          "identical: %d/%d, max ULP: %s (%.1f s)"
          % (attn_models.n_params(model), len(items), max_words, same, n, worst, time.time() - t0),
          flush=True)
    return same == n


def make_golden_attn_logits(attn, path, texts):
    import crosscheck
    return crosscheck.attn_logits(attn, path, texts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--attn", required=True)
    ap.add_argument("--norm", default="post,pre", help="comma-separated: post, pre")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--sources", type=int, default=2)
    ap.add_argument("--sentences", type=int, default=3)
    ap.add_argument("--max-src", type=int, default=8)
    ap.add_argument("--max-tgt", type=int, default=6)
    ap.add_argument("--max-words", type=int, default=10)
    ap.add_argument("--full", action="store_true", help="the models' maximum lengths")
    ap.add_argument("--only", choices=["seq2seq", "vit"])
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    print(blas_core.both_sides(a.attn), flush=True)
    torch.set_grad_enabled(False)
    words = sc.vocab_words(a.attn)
    rng = random.Random(a.seed)
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        if a.only != "vit":
            for norm in a.norm.split(","):
                try:
                    ok = seq2seq_check(a, words, norm, tmp, rng) and ok
                except RuntimeError as e:
                    print("base %s: %s" % (norm, e))
                    ok = False
        if a.only != "seq2seq":
            try:
                ok = vit_check(a, tmp, rng) and ok
            except RuntimeError as e:
                print("ViT-Base-size encoder: %s" % e)
                ok = False
    print("PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

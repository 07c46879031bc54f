#!/usr/bin/python3
"""explain_qk_torch.py -- live check of `attn explain --format json --qk` against PyTorch 1.13.

For every layer and head of the Transformers tools/explain_torch.py checks (fresh PyTorch weights
with perturbed biases: transformer, transformer_gelu, transformer_post; and the trained
weights/transformer-seed1.json), on sentences of all four test sets from `attn data`:

  q, k     PyTorch's own tensors: the layer's self_attn on the layer's attention input
           (need_weights=True, average_attn_weights=False, eval) with grad enabled, so it runs
           F.multi_head_attention_forward (no grad takes the native fused path, which keeps
           q and k to itself), with torch.bmm wrapped: its first product bmm(q_scaled, k^T)
           hands over q_scaled (q after the bias and the division by sqrt(head_dim)) and k,
           [NH, S, HS] per layer.
  scores   that bmm's result, the numbers softmax is taken of.
  paths    the maps of that Python path must equal the fused path's (explain_torch.py's
           reference, no grad) bit for bit: with head_dim 16 the scale 1/4 is exact, so
           dividing (Python path) and multiplying (fused) round alike.

And a Transformer with --pos alibi (attn_models.PosEncoderLayer, fresh weights): q, k, its
q.k^T product ("dot_products"), the ALiBi term -slope_h * |i - j| ("score_bias") and their sum
("scores", what the softmax is taken of) from inside its forward.

Every q, k and score must equal attn's bit for bit ("q", "k", "scores"), "head_size" must be
embed_dim / n_heads, and torch.softmax of attn's scores must equal attn's "attention" bit for bit
(which explain_torch.py checks against PyTorch's maps).

Usage: /usr/bin/python3 tools/explain_qk_torch.py --attn build/attn [--n N]
"""
import os

os.environ["OPENBLAS_NUM_THREADS"] = "1"  # before torch loads OpenBLAS

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

import blas_core  # noqa: E402,F401 -- before torch: attn's OpenBLAS kernels
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attn_models  # noqa: E402
import explain_torch  # noqa: E402
import make_golden  # noqa: E402
import weights_json  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RANDOM = explain_torch.RANDOM[:3] + [  # the Transformers, and one with ALiBi (its own layer)
    ("transformer_alibi", {"arch": "transformer", "pos": "alibi"})]


def attn_qk(attn, weights, texts):
    r = subprocess.run([attn, "explain", "--format", "json", "--qk", "--ig-steps", "0",
                        "--weights", weights], input="\n".join(texts) + "\n",
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("attn explain --qk failed (exit %d): %s" % (r.returncode,
                                                                       r.stderr.strip()))
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    if [row["sentence"] for row in rows] != texts:
        raise RuntimeError("attn explain --qk: %d rows for %d sentences" % (len(rows), len(texts)))
    return rows


def torch_qk(model, ids):
    """[L] of (q_scaled, k, scores), each [NH, S, HS] / [NH, S, S], from inside self_attn."""
    out = []
    real_bmm = torch.bmm

    def bmm(a, b):
        r = real_bmm(a, b)
        if capture is not None and not capture:
            capture.extend([a.clone(), b.transpose(-2, -1).clone(), r.clone()])
        return r

    capture = None
    with torch.no_grad():
        t = torch.tensor([[attn_models.CLS_ID] + ids])
        x = model.embedding(t) + model.pos_embedding[:len(ids) + 1]
    paths_same = True
    for layer in model.layers:
        a_in = layer.norm1(x) if layer.norm_first else x
        with torch.no_grad():
            _, fused = layer.self_attn(a_in, a_in, a_in, need_weights=True,
                                       average_attn_weights=False)
        capture = []
        torch.bmm = bmm
        try:
            with torch.enable_grad():
                _, maps = layer.self_attn(a_in, a_in, a_in, need_weights=True,
                                          average_attn_weights=False)
        finally:
            torch.bmm = real_bmm
        if len(capture) != 3:
            raise RuntimeError("self_attn made no q.k^T bmm (the fused path was taken)")
        paths_same = paths_same and torch.equal(maps.detach(), fused)
        out.append(tuple(capture))
        capture = None
        with torch.no_grad():
            x = layer(x)
    return out, paths_same


def torch_qk_alibi(model, ids):
    """[L] of (q_scaled, k, q.k^T, the ALiBi term), each [NH, S, HS] / [NH, S, S], from inside
    attn_models.PosEncoderLayer's forward: its two products per layer are torch.matmul(q, k^T)
    (captured) and torch.matmul(softmax, v)."""
    real = torch.matmul
    calls = []

    def matmul(a, b):
        r = real(a, b)
        if a.dim() == 4:
            calls.append((a.clone(), b.transpose(-2, -1).clone(), r.clone()))
        return r

    torch.matmul = matmul
    try:
        with torch.no_grad():
            model(torch.tensor([ids]), torch.tensor([len(ids)]))
    finally:
        torch.matmul = real
    out = []
    for layer, (q, k, r) in zip(model.layers, calls[0::2]):
        S, NH = q.shape[2], q.shape[1]
        p = torch.arange(S)
        dist = (p.view(-1, 1) - p.view(1, -1)).abs().to(torch.float32)
        out.append((q[0], k[0], r[0], (-(layer.slopes.view(NH, 1, 1) * dist)).expand(NH, S, S)))
    if len(calls) != 2 * len(model.layers):
        raise RuntimeError("%d 4-D products for %d layers" % (len(calls), len(model.layers)))
    return out


def check_alibi(attn, name, model, path, items):
    """pos alibi: attn's q, k, dot_products, score_bias and scores (= q.k + the term) against
    PyTorch's, bit for bit, and softmax(scores) against attn's attention."""
    rows = attn_qk(attn, path, [it[1] for it in items])
    counts = {key: [0, 0] for key in ("q", "k", "dot_products", "score_bias", "scores",
                                      "softmax")}
    for it, row in zip(items, rows):
        for layer, (q, k, dot, bias) in enumerate(torch_qk_alibi(model, it[2])):
            for key, want in (("q", q), ("k", k), ("dot_products", dot), ("score_bias", bias),
                              ("scores", dot + bias)):
                tally(counts, key, row[key][layer], want)
            sm = torch.softmax(torch.tensor(row["scores"][layer], dtype=torch.float32), dim=-1)
            tally(counts, "softmax", row["attention"][layer], sm)
    print("%s: identical: %s" % (name, ", ".join("%s %d/%d" % (key, *c)
                                                 for key, c in counts.items())))
    return all(c[0] == c[1] > 0 for c in counts.values())


def same(got, want):
    """(equal elements, elements) of a nested list against a tensor of the same shape."""
    g = torch.tensor(got, dtype=torch.float32)
    if g.shape != want.shape:
        raise RuntimeError("shape %s, PyTorch %s" % (tuple(g.shape), tuple(want.shape)))
    return int((g == want).sum()) + int((torch.isnan(g) & torch.isnan(want)).sum()), g.numel()


def tally(counts, key, got, want):
    """counts[key] += (equal elements, elements) of got against want (same)."""
    n_eq, n = same(got, want)
    counts[key][0] += n_eq
    counts[key][1] += n


def check_model(attn, name, model, path, items):
    model.eval()
    if model.config.get("pos") == "alibi":
        return check_alibi(attn, name, model, path, items)
    rows = attn_qk(attn, path, [it[1] for it in items])
    hs = model.config["embed_dim"] // model.config["n_heads"]
    counts = {key: [0, 0] for key in ("q", "k", "scores", "softmax")}
    ok, n_paths = True, 0
    for it, row in zip(items, rows):
        ok = ok and row["head_size"] == hs
        per_layer, paths_same = torch_qk(model, it[2])
        n_paths += paths_same
        for layer, (q, k, s) in enumerate(per_layer):
            for key, want in (("q", q), ("k", k), ("scores", s)):
                want = want.detach()
                tally(counts, key, row[key][layer], want)
            sm = torch.softmax(torch.tensor(row["scores"][layer], dtype=torch.float32), dim=-1)
            tally(counts, "softmax", row["attention"][layer], sm)
    ok = ok and n_paths == len(items) and all(c[0] == c[1] > 0 for c in counts.values())
    print("%s: head_size %d, identical: q %d/%d, k %d/%d, scores %d/%d, softmax(scores) = "
          "attention %d/%d; Python path's maps = fused path's in %d/%d sentences"
          % (name, hs, *counts["q"], *counts["k"], *counts["scores"], *counts["softmax"],
             n_paths, len(items)))
    return ok


def main():
    explain_torch.run_checks(check_model, RANDOM, ["transformer"])


if __name__ == "__main__":
    main()

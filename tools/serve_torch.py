#!/usr/bin/python3
"""serve_torch.py -- the yardstick of bench/serve: the computation of one /api/explain request
(the explain of one sentence by each model, as `attn explain` does it) done in PyTorch 1.13,
request after request, for a given time; prints requests/s and the latency percentiles.

Per request and model, as src/explain/explain.c computes it (batch 1, eval mode, one thread):
the forward with the attention maps (Transformer: each layer's self_attn with
need_weights=True); for RNN/LSTM a forward per prefix; d logit / d x at the first-layer input
(gradient norm, gradient x input); with --ig-steps N (as the request's "ig_steps"; default 0,
none) integrated gradients, N midpoint steps from the [PAD] baseline, one forward and backward
each; then the answer as JSON (json.dumps).

Usage: /usr/bin/python3 tools/serve_torch.py --attn build/attn --weights weights --sentence "..." [--seconds 10] [--ig-steps N]
Output: one line "torch N requests in S s: R req/s, p50 X ms, p99 Y ms; CPU Z ms per request"
(or --json)."""
import os

os.environ["OPENBLAS_NUM_THREADS"] = "1"  # before torch loads OpenBLAS

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import blas_core  # noqa: E402,F401 -- before torch: attn's OpenBLAS kernels
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attn_models  # noqa: E402
import weights_json  # noqa: E402


def first_input(model, ids):
    """x: the rows entering the first layer ([CLS] row first for the Transformer), baseline x'."""
    if model.config["arch"] == "transformer":
        t = torch.tensor([[attn_models.CLS_ID] + ids])
        pad = torch.tensor([[attn_models.CLS_ID] + [0] * len(ids)])
        pos = model.pos_embedding[:len(ids) + 1]
        return (model.embedding(t) + pos).detach(), (model.embedding(pad) + pos).detach()
    x = model.embedding(torch.tensor([ids])).detach()
    return x, model.embedding(torch.zeros(1, len(ids), dtype=torch.long)).detach()


def logit_from(model, x, maps=None):
    if model.config["arch"] == "transformer":
        h = x
        for layer in model.layers:
            if maps is not None:  # the maps of this forward (need_weights=True)
                a_in = layer.norm1(h) if layer.norm_first else h
                maps.append(layer.self_attn(a_in, a_in, a_in, need_weights=True,
                                            average_attn_weights=False)[1][0].tolist())
            h = layer(h)
        if model.norm is not None:
            h = model.norm(h)
        return model.head(h[:, 0])[0, 0]
    out, _ = getattr(model, model.config["arch"])(x)
    return model.head(out[:, -1])[0, 0]


def grad_at(model, x, maps=None):
    x = x.clone().requires_grad_()
    logit = logit_from(model, x, maps)
    logit.backward()
    return logit.detach(), x.grad[0]


def explain(model, ids, sentence, words, ig_steps):
    tf = model.config["arch"] == "transformer"
    x, base = first_input(model, ids)
    maps = [] if tf else None
    logit, g = grad_at(model, x, maps)
    r = {"sentence": sentence, "tokens": (["[CLS]"] if tf else []) + words,
         "logit": float(logit), "probability": float(torch.sigmoid(logit.double()))}
    if tf:
        r["attention"] = maps
    else:
        with torch.no_grad():
            r["prefix_probability"] = [
                float(torch.sigmoid(model(torch.tensor([ids[:i]]), torch.tensor([i]))[0].double()))
                for i in range(1, len(ids) + 1)]
    skip = 1 if tf else 0
    xs, gs = x[0][skip:], g[skip:]
    r["saliency"] = {"grad_norm": gs.norm(dim=1).tolist(),
                     "grad_x_input": (gs * xs).sum(dim=1).tolist()}
    if ig_steps:
        acc = torch.zeros_like(x[0])
        for k in range(1, ig_steps + 1):
            acc += grad_at(model, base + (k - 0.5) / ig_steps * (x - base))[1]
        with torch.no_grad():
            base_logit = logit_from(model, base)
        r["saliency"]["integrated_gradients"] = (
            (xs - base[0][skip:]) * acc[skip:] / ig_steps).sum(dim=1).tolist()
        r["ig_steps"] = ig_steps
        r["ig_baseline_logit"] = float(base_logit)
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--attn", default="build/attn", help="the attn binary (for its vocabulary)")
    ap.add_argument("--weights", default="weights")
    ap.add_argument("--sentence", required=True)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--ig-steps", type=int, default=0,
                    help="integrated-gradient steps, as the request's \"ig_steps\" (0: none)")
    ap.add_argument("--json", action="store_true", help="print the numbers as one JSON line")
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    models = []
    for name in ("rnn", "lstm", "transformer"):
        m = weights_json.load(os.path.join(a.weights, name + "-seed1.json"))
        m.eval()
        models.append((name, m))
    vocab = {t["word"]: t["id"] for t in json.loads(subprocess.run(
        [a.attn, "vocab", "--json"], capture_output=True, text=True, check=True).stdout)["words"]}
    words = a.sentence.lower().split()
    ids = [vocab[w] for w in words]
    lat = []
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < a.seconds:
        t = time.perf_counter()
        out = {"sentence": a.sentence, "explanations": [
            {"model": n, "seed": 1, "explain": explain(m, ids, a.sentence, words, a.ig_steps)}
            for n, m in models]}
        json.dumps(out)
        lat.append(time.perf_counter() - t)
    total = time.perf_counter() - t0
    cpu_ms = 1e3 * (time.process_time() - cpu0) / len(lat)
    lat.sort()
    p50 = lat[len(lat) // 2] * 1e3
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1e3
    if a.json:
        print(json.dumps({"requests": len(lat), "seconds": total, "rps": len(lat) / total,
                          "p50_ms": p50, "p99_ms": p99, "cpu_ms_per_request": cpu_ms}))
    else:
        print("torch    %d requests in %.1f s: %.1f req/s, p50 %.2f ms, p99 %.2f ms (1 process, "
              "1 thread); CPU %.2f ms per request" % (len(lat), total, len(lat) / total, p50, p99,
                                                      cpu_ms))


if __name__ == "__main__":
    main()

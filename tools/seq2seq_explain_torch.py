#!/usr/bin/python3
"""seq2seq_explain_torch.py -- live check of `attn explain --format json` on seq2seq weights
against PyTorch 1.13 (tools/seq2seq_models.py's reference module).

Models: the default configuration and --random N random ones (fresh nn.Transformer weights,
perturbed), and a trained model (weights/seq2seq-transformer-seed1.json when committed, else
one trained here with `attn reproduce --task rewrite --seeds 1 --epochs 2`). Random sources of
every length up to 24 (and the four test sets' sentences for the trained model). Per source:

  generation   PyTorch's greedy loop over nn.Transformer (the decoder recomputed over [BOS] +
               the words so far): the same tokens; per step torch.softmax of the step's logits:
               the five most probable (ties: lower id) must have attn's ids and probabilities
               bit for bit, and so must the chosen token's probability. Sources with a forced
               prefix (the top-2 token of the first step) too.
  maps         every decoder layer's self_attn and multihead_attn called with need_weights=True,
               average_attn_weights=False inside the model's own forward of [BOS] + the output
               (the logits must equal those of the unpatched forward bit for bit, so these are
               the probabilities the forward used): every cross- and self-attention probability
               must equal attn's bit for bit.
  saliency     autograd of the chosen token's logit at each step w.r.t. the source's first-layer
               input (embedding + positions): |g_i|_2 and sum_j g_ij x_ij per step, each step's
               vector within 1e-5 relative (|got - want|_2 / |want|_2) of float64 autograd (a
               double copy of the module), or, where float32 cannot get that close, within
               twice PyTorch's own float32 autograd error (tools/explain_torch.py's rule).

Prints per model the counts and `max ULP 0`; exits 1 if any check fails.

Usage: /usr/bin/python3 tools/seq2seq_explain_torch.py --attn build/attn [--random N]
"""
import os
import sys

os.environ["OPENBLAS_NUM_THREADS"] = "1"  # before torch loads OpenBLAS

import argparse  # noqa: E402
import copy  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import struct  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import blas_core  # noqa: E402,F401
import torch  # noqa: E402

import seq2seq_crosscheck as cc  # noqa: E402
import seq2seq_models as sm  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAL_TOL = 1e-5


def bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def attn_explain(attn, path, sources, prefix=None):
    args = [attn, "explain", "--weights", path, "--format", "json"]
    if prefix:
        args += ["--prefix", prefix]
    r = subprocess.run(args, input="".join(s + "\n" for s in sources), capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise RuntimeError("attn explain failed (exit %d): %s" % (r.returncode, r.stderr.strip()))
    return [json.loads(line) for line in r.stdout.splitlines()]


def patched_maps(model, src, dec):
    """(logits, cross [L][NH,T,S], self [L][NH,T,T]) of the model's own forward with every decoder
    attention called with need_weights=True, average_attn_weights=False."""
    store = {"self": [], "cross": []}
    saved = []
    for layer in model.transformer.decoder.layers:
        for mha, key in ((layer.self_attn, "self"), (layer.multihead_attn, "cross")):
            orig = mha.forward

            def fwd(*a, _orig=orig, _key=key, **kw):
                kw["need_weights"] = True
                kw["average_attn_weights"] = False
                out, w = _orig(*a, **kw)
                store[_key].append(w[0].clone())
                return out, w
            mha.forward = fwd
            saved.append(mha)
    try:
        with torch.no_grad():
            logits = model(torch.tensor([src]), torch.tensor([dec]))[0]
    finally:
        for mha in saved:
            del mha.forward  # back to the class's method
    return logits, store["cross"], store["self"]


def torch_steps(model, src, max_out, prefix):
    """PyTorch's greedy loop (forced prefix first): [(chosen, logits)]."""
    with torch.no_grad():
        memory = model.encode(torch.tensor([src]))
        dec, steps = [sm.BOS], []
        while len(dec) - 1 < max_out:
            logits = model.decode(memory, torch.tensor([dec]))[0, -1]
            n = len(dec) - 1
            nxt = prefix[n] if n < len(prefix) else int(torch.argmax(logits))
            steps.append((nxt, logits.clone()))
            if nxt == sm.EOS:
                break
            dec.append(nxt)
        return steps


def saliency(model, src, dec, chosen):
    """Per step t: (|g_i|, sum_j g_ij x_ij) for d logit_t[chosen_t] / d x, in the module's dtype."""
    x = model.embed("src", torch.tensor([src])).detach().requires_grad_()
    memory = model.transformer.encoder(x)
    logits = model.decode(memory, torch.tensor([dec]))[0]
    out = []
    for t, tok in enumerate(chosen):
        g, = torch.autograd.grad(logits[t, tok], x, retain_graph=True)
        g, xs = g[0].double(), x.detach()[0].double()
        out.append((g.norm(dim=1).tolist(), (g * xs).sum(dim=1).tolist()))
    return out


def vec_rel(got, want):
    num = sum((a - b) ** 2 for a, b in zip(got, want)) ** 0.5
    den = sum(b * b for b in want) ** 0.5
    return num / den if den > 0 else num


def check_model(attn, name, model, path, words, sources, prefix_word=None):
    model.eval()
    c = model.config
    texts = [" ".join(words[i] for i in s) for s in sources]
    prefix = [sm.BOS + 2] if prefix_word == "positive" else []
    rows = attn_explain(attn, path, texts, prefix_word)
    model64 = copy.deepcopy(model).double()
    n = {"tok": 0, "top": 0, "top_same": 0, "cross": 0, "cross_same": 0, "self": 0,
         "self_same": 0, "logits_same": 0, "logits": 0}
    worst = {"attn64": 0.0, "torch64": 0.0}
    for s, row in zip(sources, rows):
        steps = torch_steps(model, s, c["max_tgt_len"] - 1, prefix)
        chosen = [tok for tok, _ in steps]
        n["tok"] += [st["id"] for st in row["steps"]] == chosen
        for (tok, logits), st in zip(steps, row["steps"]):
            p = torch.softmax(logits, dim=-1)
            order = sorted(range(len(p)), key=lambda j: (-p[j].item(), j))[:5]
            want = [(j, p[j].item()) for j in order] + [(tok, p[tok].item())]
            got = [(t["id"], t["probability"]) for t in st["top"]] + [(st["id"], st["probability"])]
            n["top"] += len(want)
            n["top_same"] += sum(a[0] == b[0] and bits(a[1]) == bits(b[1])
                                 for a, b in zip(got, want))
        dec = [sm.BOS] + chosen[:-1] if chosen else [sm.BOS]
        logits, cross, selfm = patched_maps(model, s, dec)
        with torch.no_grad():
            plain = model(torch.tensor([s]), torch.tensor([dec]))[0]
        n["logits"] += plain.numel()
        n["logits_same"] += int((plain.view(torch.int32) == logits.view(torch.int32)).sum())
        for key, want_maps, got_maps in (("cross", cross, row["cross_attention"]),
                                         ("self", selfm, row["self_attention"])):
            for w, g in zip(want_maps, got_maps):
                want = w.flatten().tolist()
                flat = [v for head in g for q in head for v in q]
                n[key] += len(want)
                n[key + "_same"] += sum(1 for a, b in zip(flat, want)
                                        if len(flat) == len(want) and bits(a) == bits(b))
        sal32 = saliency(model, s, dec, chosen)
        sal64 = saliency(model64, s, dec, chosen)
        got = row["saliency"]
        for t in range(len(chosen)):
            for k, key in ((0, "grad_norm"), (1, "grad_x_input")):
                worst["attn64"] = max(worst["attn64"], vec_rel(got[key][t], sal64[t][k]))
                worst["torch64"] = max(worst["torch64"], vec_rel(sal32[t][k], sal64[t][k]))
    tol = max(SAL_TOL, 2 * worst["torch64"])
    ok = (n["tok"] == len(sources) and n["top_same"] == n["top"] and n["cross_same"] == n["cross"]
          and n["self_same"] == n["self"] and n["logits_same"] == n["logits"]
          and worst["attn64"] <= tol)
    print("%s%s: outputs identical to PyTorch's loop %d/%d; top-5 and chosen probabilities "
          "identical %d/%d; cross-attention identical %d/%d, self-attention %d/%d (max ULP %s); "
          "patched forward's logits identical %d/%d; saliency vs float64 autograd: attn %.2g, "
          "PyTorch float32 %.2g (tol %.2g)%s"
          % (name, " (prefix '%s')" % prefix_word if prefix_word else "", n["tok"], len(sources),
             n["top_same"], n["top"], n["cross_same"], n["cross"], n["self_same"], n["self"],
             0 if n["cross_same"] == n["cross"] and n["self_same"] == n["self"] else ">0",
             n["logits_same"], n["logits"], worst["attn64"], worst["torch64"], tol,
             "" if ok else "  FAILED"))
    return ok, n


def trained_weights(attn, tmp):
    path = os.path.join(ROOT, "weights", "seq2seq-transformer-seed1.json")
    if os.path.exists(path):
        return path, "committed"
    out = os.path.join(tmp, "trained")
    subprocess.run([attn, "reproduce", "--task", "rewrite", "--seeds", "1", "--epochs", "2",
                    "--out", out], check=True, capture_output=True)
    return os.path.join(out, "seq2seq-transformer-seed1.json"), "2 epochs"


def test_sentences(attn, words):
    ids = {w: i for i, w in words.items()}
    out = []
    for name in ("plain", "distractor", "fill4", "fill8"):
        r = subprocess.run([attn, "data", "--set", name, "--n", "4", "--seed", "7"],
                           capture_output=True, text=True, check=True)
        for line in r.stdout.splitlines():
            text = line.split("\t")[-1] if "\t" in line else line
            toks = text.split()
            if toks and all(t in ids for t in toks):
                out.append([ids[t] for t in toks])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--attn", required=True)
    ap.add_argument("--random", type=int, default=6)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--n", type=int, default=6, help="sources per model")
    a = ap.parse_args()
    torch.set_num_threads(1)
    words = cc.vocab_words(a.attn)
    rng = random.Random(a.seed)
    configs = [{}] + [cc.random_config(rng) for _ in range(a.random)]
    ok = True
    tot = {"cross": 0, "cross_same": 0, "self": 0, "self_same": 0, "top": 0, "top_same": 0}
    with tempfile.TemporaryDirectory() as tmp:
        for i, cfg in enumerate(configs):
            torch.manual_seed(a.seed * 1000 + i)
            model = sm.build(cfg)
            sm.perturb(model, torch.Generator().manual_seed(a.seed * 1000 + i + 1))
            model.eval()
            path = os.path.join(tmp, "s2s-%d.json" % i)
            sm.export(model, path)
            c = model.config
            name = "random D%d h%d L%d/%d %s %s %s" % (c["d_model"], c["n_heads"], c["enc_layers"],
                                                       c["dec_layers"], c["norm"], c["activation"],
                                                       c["pos"])
            sources = [[rng.choice(cc.WORDS) for _ in range(rng.randint(1, min(24, c["max_src_len"])))]
                       for _ in range(a.n)]
            for pw in (None, "positive"):
                good, n = check_model(a.attn, name, model, path, words, sources, pw)
                ok = ok and good
                for k in tot:
                    tot[k] += n[k]
        path, how = trained_weights(a.attn, tmp)
        model = sm.load(path)
        sources = test_sentences(a.attn, words)
        for pw in (None, "positive"):
            good, n = check_model(a.attn, "trained (%s)" % how, model, path, words, sources, pw)
            ok = ok and good
            for k in tot:
                tot[k] += n[k]
    print("total: cross-attention identical %d/%d, self-attention identical %d/%d, max ULP %s; "
          "top-5 probabilities identical %d/%d"
          % (tot["cross_same"], tot["cross"], tot["self_same"], tot["self"],
             0 if tot["cross_same"] == tot["cross"] and tot["self_same"] == tot["self"] else ">0",
             tot["top_same"], tot["top"]))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""seq2seq_crosscheck.py -- live cross-check of attn's seq2seq-transformer against PyTorch 1.13.

For each of --random N configurations drawn from --seed (d_model 8-48, any head count that
divides it, ffn_dim 8-96, 1-3 encoder and 1-3 decoder layers, pre/post norm, relu/gelu,
positions learned, sinusoidal, none, rope, alibi in turn (rope: an even head size),
max_src_len 4-80, max_tgt_len 2-24), the default configuration and the default with rope and
with alibi first (their reference: tools/seq2seq_pos.py): fresh nn.Transformer weights (perturbed, so that no bias is zero) ->
attn-seq2seq-weights-v1 JSON -> `attn generate --teacher --format json` on random pairs of
every source length (--stride K: every K-th) and every decoder length -> each logit compared bit
for bit with PyTorch's eval forward of the pair alone (batch 1, no_grad, one BLAS thread). The
float -inf causal mask and the bool mask must give the same bits in PyTorch. Then greedy
decoding: `attn generate --no-cache --format json` against a PyTorch loop over nn.Transformer
(tokens and every step's logits), and the KV-cached decoding's agreement with it (measured,
reported). Then the other direction for rope and alibi: attn's own weights file of a fresh
default model loaded with load_state_dict(strict=True), its teacher-forced logits identical.

Prints per configuration and in total `identical: N/N, max ULP: K`; exits 1 unless every
teacher-forced and --no-cache logit is identical and every mask pair agrees.

--models rnn checks seq2seq-gru and seq2seq-attn instead (tools/seq2seq_models.Seq2SeqRNN): the
default configuration of each, then --random N drawn from --seed (either arch, d_model 2-48,
hidden_size 1-64, bidirectional 0/1 for seq2seq-attn, max_src_len 1-80, max_tgt_len 2-24);
the same checks (no mask: no self-attention), where the incremental reference is the GRUCell
stepped with its state.

--scalar runs both sides on their plain kernels: attn with ATTN_CPU=scalar, PyTorch with
ATEN_CPU_CAPABILITY=default.

Usage: /usr/bin/python3 tools/seq2seq_crosscheck.py --attn build/attn [--random N] [--seed S]
       [--stride K] [--scalar] [--models transformer|rnn]
"""
import os
import sys

os.environ["OPENBLAS_NUM_THREADS"] = "1"  # before torch loads OpenBLAS
if "--scalar" in sys.argv:  # both sides on their plain kernels, before torch loads
    os.environ["ATEN_CPU_CAPABILITY"] = "default"
    os.environ["ATTN_CPU"] = "scalar"

import argparse  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import struct  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import blas_core  # noqa: E402,F401
import torch  # noqa: E402

import seq2seq_models as sm  # noqa: E402

WORDS = list(range(2, sm.N_WORDS_VOCAB))  # the source words (ids of the built-in vocabulary)


def vocab_words(attn):
    """attn's built-in vocabulary {id: word}; sets the reference's vocabulary size from it."""
    r = subprocess.run([attn, "vocab"], capture_output=True, text=True, check=True)
    words = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].isdigit():
            words[int(parts[0])] = parts[1]
    sm.set_vocab_size(len(words))
    WORDS[:] = range(2, len(words))
    return words


def ordered(x):
    b = struct.unpack("<i", struct.pack("<f", x))[0]
    return b if b >= 0 else -(b & 0x7fffffff)


def ulp(a, b):
    if a != a or b != b:
        return float("inf")
    return abs(ordered(a) - ordered(b))


def compare(got, want):
    """(identical, count, max ULP) of two float lists."""
    same = sum(struct.pack("<f", g) == struct.pack("<f", w) for g, w in zip(got, want))
    worst = max((ulp(g, w) for g, w in zip(got, want)), default=0)
    return same, len(want), worst


POS = ("learned", "sinusoidal", "none", "rope", "alibi")


def random_config(rng, pos=None):
    """A random configuration with positions pos (None: learned, sinusoidal or none at random,
    the draw tools/seq2seq_explain_torch.py makes)."""
    D = rng.choice([8, 12, 16, 20, 24, 32, 40, 48])
    heads = [h for h in range(1, D + 1) if D % h == 0 and D // h >= 2]
    c = {"d_model": D, "n_heads": rng.choice(heads), "ffn_dim": rng.randint(8, 96),
         "enc_layers": rng.randint(1, 3), "dec_layers": rng.randint(1, 3),
         "norm": rng.choice(["pre", "post"]), "activation": rng.choice(["relu", "gelu"]),
         "pos": pos or rng.choice(["learned", "sinusoidal", "none"]),
         "max_src_len": rng.randint(4, 80), "max_tgt_len": rng.randint(2, 24)}
    if c["pos"] == "rope" and (D // c["n_heads"]) % 2:  # rope rotates pairs: an even head size
        c["n_heads"] = rng.choice([h for h in heads if (D // h) % 2 == 0])
    return c


def random_rnn_config(rng):
    arch = rng.choice(sm.RNN_ARCHS)
    return {"arch": arch, "d_model": rng.randint(2, 48), "hidden_size": rng.randint(1, 64),
            "bidirectional": rng.randint(0, 1) if arch == "seq2seq-attn" else 0,
            "max_src_len": rng.randint(1, 80), "max_tgt_len": rng.randint(2, 24)}


def config_name(c):
    if c["arch"] in sm.RNN_ARCHS:
        return "%s E%d H%d bi%d S%d T%d" % (c["arch"], c["d_model"], c["hidden_size"],
                                             c["bidirectional"], c["max_src_len"], c["max_tgt_len"])
    return "D%d h%d F%d L%d/%d %s %s %s S%d T%d" % (
        c["d_model"], c["n_heads"], c["ffn_dim"], c["enc_layers"], c["dec_layers"],
        c["norm"], c["activation"], c["pos"], c["max_src_len"], c["max_tgt_len"])


def tgt_token(words, i):
    extra = {sm.BOS: "[BOS]", sm.EOS: "[EOS]", sm.BOS + 2: "positive", sm.BOS + 3: "negative"}
    return extra.get(i, words.get(i))


def run_attn(attn, args, lines):
    r = subprocess.run([attn, "generate"] + args, input="".join(x + "\n" for x in lines),
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("attn generate %s failed (exit %d): %s"
                           % (" ".join(args), r.returncode, r.stderr.strip()))
    return [json.loads(x) for x in r.stdout.splitlines()]


def teacher_check(attn, model, path, words, rng, stride):
    """Every source length (stride) x a decoder length: attn vs PyTorch, and float vs bool."""
    c = model.config
    pairs = []
    for S in list(range(1, c["max_src_len"] + 1, stride)) + [c["max_src_len"]]:
        T = rng.randint(1, c["max_tgt_len"])
        src = [rng.choice(WORDS) for _ in range(S)]
        tgt = [rng.choice(range(2, c["tgt_vocab"])) for _ in range(T - 1)]
        pairs.append((src, tgt))
    # every decoder length once more with one source
    src = [rng.choice(WORDS) for _ in range(min(7, c["max_src_len"]))]
    for T in range(1, c["max_tgt_len"] + 1):
        pairs.append((src, [rng.choice(range(2, c["tgt_vocab"])) for _ in range(T - 1)]))
    lines = ["%s\t%s" % (" ".join(words[i] for i in s), " ".join(tgt_token(words, i) for i in t))
             for s, t in pairs]
    rows = run_attn(attn, ["--weights", path, "--teacher", "--format", "json"], lines)
    same = count = worst = mask_same = mask_count = 0
    with torch.no_grad():
        for (s, t), row in zip(pairs, rows):
            st, tt = torch.tensor([s]), torch.tensor([[sm.BOS] + t])
            want = model(st, tt, "float")[0]
            if isinstance(model, sm.Seq2SeqRNN) and model.attn:
                align = []
                model.decode(model.encode(st), tt, alignment=align)
                a, n, u = compare(row["alignment"] and [x for r in row["alignment"] for x in r],
                                  torch.cat(align, 0).reshape(-1).tolist())
                ALIGN[0], ALIGN[1], ALIGN[2] = ALIGN[0] + a, ALIGN[1] + n, max(ALIGN[2], u)
            if not isinstance(model, sm.Seq2SeqRNN):
                wbool = model(st, tt, "bool")[0]
                mask_same += int((want.view(torch.int32) == wbool.view(torch.int32)).sum())
                mask_count += want.numel()
            got = [x for r in row["logits"] for x in r]
            a, n, u = compare([struct.unpack("<f", struct.pack("<f", g))[0] for g in got],
                              want.reshape(-1).tolist())
            same, count, worst = same + a, count + n, max(worst, u)
    return same, count, worst, mask_same, mask_count, len(pairs)


CACHE_ABS = [0.0]
ALIGN = [0, 0, 0]  # seq2seq-attn: alignment values identical, compared, max ULP  # largest |cached - recomputed| logit difference seen


def attn_export_check(attn, words, rng, tmp, pos):
    """attn's own weights file of a fresh default model with positions pos (`attn train --epochs
    0`) -> load_state_dict(strict=True) in PyTorch (its config's "pos" builds the reference) ->
    teacher-forced logits identical: (identical, compared, max ULP)."""
    path = os.path.join(tmp, "attn-%s.json" % pos)
    r = subprocess.run([attn, "train", "--model", "seq2seq-transformer", "--pos", pos, "--epochs",
                        "0", "--train-size", "1", "--holdout", "0", "--quiet", "--out", path],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("attn train --epochs 0 --pos %s failed: %s" % (pos, r.stderr.strip()))
    model = sm.load(path)  # strict
    if model.config["pos"] != pos:
        raise RuntimeError("%s: config pos %r, expected %r" % (path, model.config["pos"], pos))
    same, n, worst, _, _, _ = teacher_check(attn, model, path, words, rng, 20)
    return same, n, worst


def greedy_check(attn, model, path, words, rng, n):
    c = model.config
    sources = [[rng.choice(WORDS) for _ in range(rng.randint(1, c["max_src_len"]))]
               for _ in range(n)]
    lines = [" ".join(words[i] for i in s) for s in sources]
    rec = run_attn(attn, ["--weights", path, "--no-cache", "--format", "json"], lines)
    cached = run_attn(attn, ["--weights", path, "--format", "json"], lines)
    same = count = worst = tok_same = 0
    c_same = c_count = c_worst = c_tok = 0
    k_same = k_count = k_worst = k_tok = 0
    for s, r, k in zip(sources, rec, cached):
        ktoks, ksteps = sm.greedy_cached(model, s, c["max_tgt_len"] - 1)
        k_tok += k["output"] == " ".join(tgt_token(words, i) for i in ktoks)
        kwant = [x for st in ksteps for x in st.tolist()]
        kgot = [x for st in k["steps"] for x in st["logits"]]
        if len(kgot) == len(kwant):
            a, m, u = compare(kgot, kwant)
        else:
            a, m, u = 0, len(kwant), float("inf")
        k_same, k_count, k_worst = k_same + a, k_count + m, max(k_worst, u)
        toks, steps = sm.greedy(model, s, c["max_tgt_len"] - 1)
        want_out = " ".join(tgt_token(words, i) for i in toks)
        tok_same += r["output"] == want_out
        c_tok += k["output"] == r["output"]
        want = [x for st in steps for x in st.tolist()]
        got = [x for st in r["steps"] for x in st["logits"]]
        if len(got) == len(want):
            a, m, u = compare(got, want)
        else:
            a, m, u = 0, len(want), float("inf")
        same, count, worst = same + a, count + m, max(worst, u)
        if len(k["steps"]) == len(r["steps"]):
            kl = [x for st in k["steps"] for x in st["logits"]]
            a, m, u = compare(kl, got)
            c_same, c_count, c_worst = c_same + a, c_count + m, max(c_worst, u)
            CACHE_ABS[0] = max([CACHE_ABS[0]] + [abs(x - y) for x, y in zip(kl, got)])
    return ((same, count, worst, tok_same, len(sources)), (c_same, c_count, c_worst, c_tok),
            (k_same, k_count, k_worst, k_tok))


def beam_check(attn, model, path, words, rng, n, k):
    """attn generate --beam k against seq2seq_models.beam: (same output and score, sources)."""
    c = model.config
    sources = [[rng.choice(WORDS) for _ in range(rng.randint(1, c["max_src_len"]))]
               for _ in range(n)]
    lines = [" ".join(words[i] for i in s) for s in sources]
    rows = run_attn(attn, ["--weights", path, "--beam", str(k), "--format", "json"], lines)
    same = 0
    for s, row in zip(sources, rows):
        toks, score = sm.beam(model, s, c["max_tgt_len"] - 1, k)
        same += (row["output"] == " ".join(tgt_token(words, i) for i in toks)
                 and row["score"] == score)
    return same, len(sources)


SAMPLING = [("1.0", "0", "1.0"), ("2.5", "5", "1.0"), ("0.7", "0", "0.9"), ("1.5", "20", "0.8")]


def sample_check(attn, model, path, words, rng, n):
    """attn generate --temperature/--top-k/--top-p/--seed (cached and --no-cache) against
    seq2seq_models.sample: (identical samples, samples)."""
    c = model.config
    sources = [[rng.choice(WORDS) for _ in range(rng.randint(1, c["max_src_len"]))]
               for _ in range(n)]
    lines = [" ".join(words[i] for i in s) for s in sources]
    same = total = 0
    for k, (t, top_k, top_p) in enumerate(SAMPLING):
        seed = 1000 + k
        for cache in (True, False):
            args = ["--weights", path, "--format", "json", "--temperature", t, "--seed", str(seed),
                    "--top-p", top_p] + (["--top-k", top_k] if top_k != "0" else [])
            rows = run_attn(attn, args + ([] if cache else ["--no-cache"]), lines)
            for s, row in zip(sources, rows):
                want = sm.sample(model, s, c["max_tgt_len"] - 1, float(t), int(top_k),
                                 float(top_p), seed, cache)
                same += row["output"] == " ".join(tgt_token(words, i) for i in want)
                total += 1
    return same, total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--attn", required=True)
    ap.add_argument("--random", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--stride", type=int, default=3)
    ap.add_argument("--greedy", type=int, default=6, help="sources per configuration")
    ap.add_argument("--scalar", action="store_true",
                    help="attn's scalar kernels (ATTN_CPU=scalar) against PyTorch's default ones "
                         "(ATEN_CPU_CAPABILITY=default)")
    ap.add_argument("--models", choices=["transformer", "rnn"], default="transformer",
                    help="seq2seq-transformer, or seq2seq-gru and seq2seq-attn")
    a = ap.parse_args()
    print(blas_core.both_sides(a.attn))
    torch.set_grad_enabled(False)
    words = vocab_words(a.attn)
    rng = random.Random(a.seed)
    if a.models == "rnn":
        configs = ([{"arch": x} for x in sm.RNN_ARCHS]
                   + [random_rnn_config(rng) for _ in range(a.random)])
    else:
        # the default, the default with rope and with alibi, then every scheme in turn
        configs = ([{}, {"pos": "rope"}, {"pos": "alibi"}]
                   + [random_config(rng, POS[i % len(POS)]) for i in range(a.random)])
    ok = True
    tot = [0, 0, 0]
    gtot = [0, 0, 0]
    ktot = [0, 0, 0]
    btot = [0, 0]
    stot = [0, 0]
    ctot = [0, 0, 0, 0, 0]
    with tempfile.TemporaryDirectory() as tmp:
        for i, cfg in enumerate(configs):
            torch.manual_seed(a.seed * 1000 + i)
            model = sm.build(cfg)
            sm.perturb(model, torch.Generator().manual_seed(a.seed * 1000 + i + 1))
            model.eval()
            path = os.path.join(tmp, "s2s-%d.json" % i)
            sm.export(model, path)
            name = config_name(model.config)
            try:
                same, n, worst, ms, mn, n_pairs = teacher_check(a.attn, model, path, words, rng,
                                                                a.stride)
                (gs, gn, gw, gt, gsrc), (cs, cn, cw, ct), (ks, kn, kw, kt) = greedy_check(
                    a.attn, model, path, words, rng, a.greedy)
                beam = [beam_check(a.attn, model, path, words, rng, 3, k) for k in (1, 3)]
                samp = sample_check(a.attn, model, path, words, rng, 3)
            except RuntimeError as e:
                print("%s: %s" % (name, e))
                ok = False
                continue
            print("%s: teacher-forced %d pairs identical: %d/%d, max ULP: %s; float vs bool "
                  "mask identical: %d/%d; greedy --no-cache vs %s: tokens %d/%d, "
                  "logits identical: %d/%d, max ULP: %s; KV cache vs incremental reference: "
                  "tokens %d/%d, logits identical: %d/%d, max ULP: %s; KV cache vs --no-cache: "
                  "tokens %d/%d, logits identical %d/%d, max ULP %s"
                  % (name, n_pairs, same, n, worst, ms, mn,
                     "the PyTorch GRU loop" if isinstance(model, sm.Seq2SeqRNN)
                     else "nn.Transformer loop", gt, gsrc, gs, gn, gw, kt, gsrc, ks, kn,
                     kw, ct, gsrc, cs, cn, cw))
            print("%s: beam search (width 1, 3) output and score identical to the PyTorch "
                  "beam: %d/%d, %d/%d" % (name, beam[0][0], beam[0][1], beam[1][0], beam[1][1]))
            print("%s: sampling (4 settings of temperature, top-k, top-p; cached and --no-cache) "
                  "identical to the Python sampler: %d/%d" % (name, samp[0], samp[1]))
            ok = (ok and same == n and ms == mn and gs == gn and gt == gsrc and ks == kn
                  and kt == gsrc and all(b[0] == b[1] for b in beam) and samp[0] == samp[1])
            stot[0], stot[1] = stot[0] + samp[0], stot[1] + samp[1]
            for k, b in enumerate(beam):
                btot[0], btot[1] = btot[0] + b[0], btot[1] + b[1]
            for k, v in enumerate((ks, kn, kw)):
                ktot[k] = ktot[k] + v if k < 2 else max(ktot[k], v)
            for k, v in enumerate((cs, cn, cw, ct, gsrc)):
                ctot[k] = ctot[k] + v if k != 2 else max(ctot[k], v)
            for k, v in enumerate((same, n, worst)):
                tot[k] = tot[k] + v if k < 2 else max(tot[k], v)
            for k, v in enumerate((gs, gn, gw)):
                gtot[k] = gtot[k] + v if k < 2 else max(gtot[k], v)
        if a.models == "transformer":  # the other direction: attn writes, PyTorch loads
            for pos in ("rope", "alibi"):
                try:
                    es, en, ew = attn_export_check(a.attn, words, rng, tmp, pos)
                except RuntimeError as e:
                    print(e)
                    ok = False
                    continue
                print("attn's own %s weights (attn train --epochs 0): strict load_state_dict ok, "
                      "teacher-forced identical: %d/%d, max ULP: %s" % (pos, es, en, ew))
                ok = ok and es == en
    print("total teacher-forced identical: %d/%d, max ULP: %s; greedy --no-cache logits "
          "identical: %d/%d, max ULP: %s; KV cache vs incremental reference identical: %d/%d, "
          "max ULP: %s; KV cache vs --no-cache: tokens %d/%d, logits identical %d/%d, max ULP %s, "
          "max |difference| %.3g; beam search identical: %d/%d; samples identical: %d/%d"
          % (tot[0], tot[1], tot[2], gtot[0], gtot[1], gtot[2], ktot[0], ktot[1], ktot[2],
             ctot[3], ctot[4], ctot[0], ctot[1], ctot[2], CACHE_ABS[0], btot[0], btot[1], stot[0], stot[1]))
    if ALIGN[1]:
        print("seq2seq-attn alignment (attn generate --teacher) vs the reference's softmax: "
              "identical %d/%d, max ULP: %s" % (ALIGN[0], ALIGN[1], ALIGN[2]))
        ok = ok and ALIGN[0] == ALIGN[1]
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

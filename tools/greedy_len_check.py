#!/usr/bin/python3
"""greedy_len_check.py -- `attn generate --min-len N` and `--batch B` against PyTorch at the base
width: a real multi-token greedy decode of a model that would stop at once.

The model: section 6's base width (d_model 512, 8 heads, FFN 2048; --layers encoder and decoder
layers, 2 + 2 by default to stay CI-fast, 6 for the full base), post-norm, fresh PyTorch weights
perturbed (no bias zero) and the head's [EOS] bias raised by --eos-bias, so that greedy decoding
ends at the first step -- as an untrained or barely trained base model does -- written as
safetensors (tools/safetensors_io.py). On --sources random sources:

1. without --min-len: attn's cached outputs equal seq2seq_models.greedy_cached's, and (the
   premise) every output is empty: [EOS] at once;
2. --min-len N (N = --min-len, default 10): `--no-cache --format json` against
   seq2seq_models.greedy(min_out=N) over nn.Transformer, tokens and every step's logits bit
   for bit; the KV cache against greedy_cached(min_out=N) (the incremental reference), tokens
   and logits; every output has at least N words (the option honoured);
3. `--batch B --min-len N --format json` (B = --batch, default 8): every source's tokens and step
   logits against seq2seq_models.greedy_batch(min_out=N) on the same batches (the sources taken
   B at a time in input order);
4. bad values are clear errors (exit 2, the message naming the option): --min-len -1,
   --min-len above the model's max_tgt_len - 1, --min-len above --max-len, --max-len above
   max_tgt_len - 1, --batch 0.

Kernels as tools/blas_core.py sets them (pinned against pinned by default). Prints one line per
check and PASS, or FAIL and exit 1.

Usage: /usr/bin/python3 tools/greedy_len_check.py --attn build/attn [--layers L] [--sources N]
       [--min-len N] [--batch B] [--eos-bias X] [--seed S]
"""
import argparse
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import blas_core  # noqa: E402,F401 -- before torch: the kernels attn runs on
import torch  # noqa: E402

import safetensors_io  # noqa: E402
import seq2seq_crosscheck as sc  # noqa: E402 -- sets OPENBLAS_NUM_THREADS=1
import seq2seq_models as sm  # noqa: E402


def words_of(words, toks):
    return " ".join(sc.tgt_token(words, i) for i in toks)


def logits_of(rows):
    return [x for st in rows for x in st["logits"]]


def flat(steps):
    return [x for st in steps for x in st.tolist()]


def same_logits(got, want):
    if len(got) != len(want):
        return 0, len(want), float("inf")
    return sc.compare(got, want)


def refused(attn, args, what):
    """(ok, line): attn generate with args exits 2 and names `what` on stderr."""
    r = subprocess.run([attn, "generate"] + args + ["the exam was clear"], capture_output=True,
                       text=True)
    msg = r.stderr.strip().splitlines()[0] if r.stderr.strip() else ""
    return r.returncode == 2 and what in msg, "%s -> exit %d: %s" % (" ".join(args[2:]),
                                                                      r.returncode, msg)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--attn", required=True)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--sources", type=int, default=12)
    ap.add_argument("--min-len", type=int, default=10)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--eos-bias", type=float, default=30.0)
    ap.add_argument("--max-src", type=int, default=12)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    print(blas_core.both_sides(a.attn), flush=True)
    torch.set_grad_enabled(False)
    words = sc.vocab_words(a.attn)
    rng = random.Random(a.seed)
    cfg = {"d_model": 512, "n_heads": 8, "ffn_dim": 2048, "enc_layers": a.layers,
           "dec_layers": a.layers, "norm": "post"}
    torch.manual_seed(40 + a.seed)
    model = sm.build(cfg)
    sm.perturb(model, torch.Generator().manual_seed(41 + a.seed))
    model.head.bias[sm.EOS] += a.eos_bias
    model.eval()
    c = model.config
    max_out, N, B = c["max_tgt_len"] - 1, a.min_len, a.batch
    sources = [[rng.choice(sc.WORDS) for _ in range(rng.randint(1, a.max_src))]
               for _ in range(a.sources)]
    lines = [" ".join(words[i] for i in s) for s in sources]
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "w.safetensors")
        safetensors_io.save_state_dict(model.state_dict(), path, c, safetensors_io.SEQ2SEQ_FORMAT)
        base = ["--weights", path, "--format", "json"]
        name = "base width, %d+%d layers, [EOS] bias +%g" % (a.layers, a.layers, a.eos_bias)

        # 1. the premise: [EOS] at once, attn and PyTorch alike
        rows = sc.run_attn(a.attn, base, lines)
        want = [sm.greedy_cached(model, s, max_out)[0] for s in sources]
        same = sum(r["output"] == words_of(words, w) for r, w in zip(rows, want))
        empty = sum(r["output"] == "" for r in rows)
        print("%s: without --min-len, cached vs incremental reference: tokens %d/%d; empty "
              "outputs ([EOS] first) %d/%d" % (name, same, len(rows), empty, len(rows)))
        ok = ok and same == len(rows) and empty == len(rows)

        # 2. --min-len N, recomputing and cached
        rec = sc.run_attn(a.attn, base + ["--no-cache", "--min-len", str(N)], lines)
        cac = sc.run_attn(a.attn, base + ["--min-len", str(N)], lines)
        tok = tok_c = long_enough = 0
        lg = lg_c = [0, 0, 0]
        for s, r, k in zip(sources, rec, cac):
            toks, steps = sm.greedy(model, s, max_out, min_out=N)
            tok += r["output"] == words_of(words, toks)
            x = same_logits(logits_of(r["steps"]), flat(steps))
            lg = [lg[0] + x[0], lg[1] + x[1], max(lg[2], x[2])]
            ktoks, ksteps = sm.greedy_cached(model, s, max_out, min_out=N)
            tok_c += k["output"] == words_of(words, ktoks)
            x = same_logits(logits_of(k["steps"]), flat(ksteps))
            lg_c = [lg_c[0] + x[0], lg_c[1] + x[1], max(lg_c[2], x[2])]
            long_enough += (len(r["output"].split()) >= N and len(k["output"].split()) >= N)
        n = len(sources)
        print("%s: --min-len %d --no-cache vs nn.Transformer loop: tokens %d/%d, logits "
              "identical %d/%d (max ULP %s); cached vs incremental reference: tokens %d/%d, "
              "logits identical %d/%d (max ULP %s); outputs of >= %d words %d/%d"
              % (name, N, tok, n, lg[0], lg[1], lg[2], tok_c, n, lg_c[0], lg_c[1], lg_c[2], N,
                 long_enough, n))
        ok = (ok and tok == n and lg[0] == lg[1] and tok_c == n and lg_c[0] == lg_c[1]
              and long_enough == n)

        # 3. --batch B
        bat = sc.run_attn(a.attn, base + ["--batch", str(B), "--min-len", str(N)], lines)
        want = []
        for i in range(0, n, B):
            want += sm.greedy_batch(model, sources[i:i + B], max_out, min_out=N)
        tok_b = lg_b = count_b = worst_b = 0
        for r, (toks, steps) in zip(bat, want):
            tok_b += r["output"] == words_of(words, toks)
            x = same_logits(logits_of(r["steps"]), flat(steps))
            lg_b, count_b, worst_b = lg_b + x[0], count_b + x[1], max(worst_b, x[2])
        alone = sum(b["output"] == k["output"] for b, k in zip(bat, cac))
        print("%s: --batch %d --min-len %d vs greedy_batch (batched incremental reference): "
              "tokens %d/%d, logits identical %d/%d (max ULP %s); the same words as decoded "
              "alone: %d/%d" % (name, B, N, tok_b, len(bat), lg_b, count_b, worst_b, alone, n))
        ok = ok and len(bat) == n and tok_b == n and lg_b == count_b

        # 4. bad values
        for args, what in ((["--min-len", "-1"], "--min-len"),
                           (["--min-len", str(max_out + 1)], "--min-len"),
                           (["--min-len", "5", "--max-len", "3"], "--min-len"),
                           (["--max-len", str(max_out + 1)], "--max-len"),
                           (["--batch", "0"], "--batch")):
            good, line = refused(a.attn, ["--weights", path] + args, what)
            print("refused: %s" % line)
            ok = ok and good
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

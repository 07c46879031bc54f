#!/usr/bin/python3
"""crosscheck.py -- live cross-check of attn against PyTorch 1.13.

For each model (rnn, lstm, transformer, and transformer_gelu, which is reported but need not be
identical): fresh PyTorch weights with perturbed biases -> attn-weights-v1 JSON ->
`attn predict --format json` on ~100 sentences from `attn data` (all four test sets) ->
each logit compared bit for bit with PyTorch's eval logit for the sentence alone (batch 1, no
padding, one BLAS thread). Prints `rnn: identical: N/N, max ULP: K` per model and exits 1 when
a ReLU model is not identical on every sentence.

Usage: /usr/bin/python3 tools/crosscheck.py --attn build/attn [--seed S] [--n N]
"""
import os

os.environ["OPENBLAS_NUM_THREADS"] = "1"  # before torch loads OpenBLAS

import argparse  # noqa: E402
import json  # noqa: E402
import struct  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attn_models  # noqa: E402
import make_golden  # noqa: E402
import weights_json  # noqa: E402

MODELS = [  # (name, config, must be identical)
    ("rnn", {"arch": "rnn"}, True),
    ("lstm", {"arch": "lstm"}, True),
    ("transformer", {"arch": "transformer"}, True),
    ("transformer_gelu", {"arch": "transformer", "activation": "gelu"}, False),
]


def ordered_bits(x):
    """float32 bits mapped to a monotone integer line (for ULP distances)."""
    b = struct.unpack("<i", struct.pack("<f", x))[0]
    return b if b >= 0 else -(b & 0x7fffffff)


def ulp(a, b):
    if a != a or b != b:
        return float("inf")
    return abs(ordered_bits(a) - ordered_bits(b))


def attn_logits(attn, weights, texts):
    r = subprocess.run([attn, "predict", "--format", "json", "--weights", weights],
                       input="\n".join(texts) + "\n", capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("attn predict failed (exit %d): %s" % (r.returncode, r.stderr.strip()))
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    if [row["sentence"] for row in rows] != texts:
        raise RuntimeError("attn predict returned %d rows for %d sentences"
                           % (len(rows), len(texts)))
    return [struct.unpack("<f", struct.pack("<f", row["logit"]))[0] for row in rows]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--attn", required=True, help="path of the built attn binary")
    ap.add_argument("--seed", type=int, default=1, help="PyTorch init seed")
    ap.add_argument("--n", type=int, default=25, help="sentences per test set")
    args = ap.parse_args()
    vocab = make_golden.vocabulary(args.attn)
    items = make_golden.sentences(args.attn, vocab, args.n, 1000 + args.seed)
    texts = [it[1] for it in items]
    failed = False
    with tempfile.TemporaryDirectory(prefix="attn_crosscheck_") as tmp:
        for index, (name, config, required) in enumerate(MODELS):
            torch.manual_seed(args.seed * 100 + index)
            model = attn_models.build(config)
            make_golden.perturb(model, torch.Generator().manual_seed(args.seed * 100 + 50 + index))
            model.eval()
            path = os.path.join(tmp, name + ".json")
            weights_json.export(model, config, path)
            want = [make_golden.batch1_logit(model, it[2]) for it in items]
            try:
                got = attn_logits(args.attn, path, texts)
            except RuntimeError as e:
                print("%s: %s" % (name, e))
                failed = failed or required
                continue
            same = sum(struct.pack("<f", g) == struct.pack("<f", w) for g, w in zip(got, want))
            worst = max(ulp(g, w) for g, w in zip(got, want))
            print("%s: identical: %d/%d, max ULP: %s%s" % (name, same, len(want), worst,
                                                          "" if required else " (reported only)"))
            if required and same != len(want):
                failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

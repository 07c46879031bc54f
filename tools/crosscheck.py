#!/usr/bin/python3
"""crosscheck.py -- live cross-check of attn against PyTorch 1.13.

For each model (rnn, lstm, transformer, transformer_gelu, transformer_post, gru): fresh PyTorch
weights with perturbed biases -> attn-weights-v1 JSON -> `attn predict --format json` on ~100
sentences from `attn data` (all four test sets) -> each logit compared bit for bit with
PyTorch's eval logit for the sentence alone (batch 1, no padding, one BLAS thread). Prints
`rnn: identical: N/N, max ULP: K` per model.

Fine-tuning round trip, for rnn, lstm, transformer and gru: fresh PyTorch weights -> `attn train
--init W.json --epochs 1 --train-size 200 --holdout 20 --out T.json` -> T.json loaded back into
the PyTorch module with load_state_dict(strict=True) (tools/weights_json.load) -> every tensor
must have changed, and PyTorch's batch-1 logits of the loaded module must equal `attn predict`
on 20 sentences bit for bit. Prints `finetune rnn: strict load ok, identical: N/N`.

--roundtrip runs only that round trip, for non-default configurations (ROUNDTRIP: stacked
recurrent layers, 1-3 layer Transformers with odd head counts, post-norm, GELU, sinusoidal or no
positions, another vocab_size; --warmup in some), attn taking the configuration from the file.

Initial weights, for rnn, lstm, transformer and gru: `attn train --epochs 0` (attn's fresh model of a
seed) loaded into the PyTorch module with strict=True; the Transformer's pos_embedding must equal
attn_models.sinusoid_table bit for bit. Prints `init transformer: strict load ok, ...`.

Length sweep: every sentence length from 1 word to max_len - 1 (random words, --per-length
each) for every model above and Transformers of other head sizes and counts (SWEEP_EXTRA).
Prints `lengths 1-80 rnn: identical: N/N, max ULP: K`.

Random configurations (--random N, instead of the checks above): N models drawn from --seed --
Transformers with embed_dim 8-64, heads any divisor of it (odd counts included), ffn_dim 16-128,
1-4 layers, max_len 2-256, pre/post norm, relu/gelu, positions learned/sinusoidal/none/rope/alibi
(rope with an odd head size takes the largest head count with an even one, else alibi), and
RNN/LSTM/GRU with 1-3 layers, embed and hidden sizes 4-64; vocab_size 91-400 (the sentences use
the task's words, ids 2-90); random perturbed weights -- each run on one random sentence of every
length from 1 word to max_len - 1 (recurrent: to a random 1-256), or with --stride K on every
K-th length (plus the longest) for the recurrent models after the first three. Prints per model and in total
`identical: N/N, max ULP: K`; exits 1 unless every logit is identical.

Exits 1 when any model is not identical on every sentence or a fine-tune or init check fails.

Usage: /usr/bin/python3 tools/crosscheck.py --attn build/attn [--seed S] [--n N]
       [--per-length P]
       /usr/bin/python3 tools/crosscheck.py --attn build/attn --random N [--seed S] [--stride K]
"""
import os

os.environ["OPENBLAS_NUM_THREADS"] = "1"  # before torch loads OpenBLAS

import argparse  # noqa: E402
import json  # noqa: E402
import struct  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

import blas_core  # noqa: E402,F401 -- before torch: attn's OpenBLAS kernels
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attn_models  # noqa: E402
import make_golden  # noqa: E402
import weights_json  # noqa: E402

MODELS = [  # (name, config, must be identical)
    ("rnn", {"arch": "rnn"}, True),
    ("lstm", {"arch": "lstm"}, True),
    ("transformer", {"arch": "transformer"}, True),
    ("transformer_gelu", {"arch": "transformer", "activation": "gelu"}, True),
    ("transformer_post", {"arch": "transformer", "norm": "post"}, True),
    ("gru", {"arch": "gru"}, True),  # last: the others keep their seeds (index)
]
FINETUNE = ["rnn", "lstm", "transformer", "gru"]  # the archs `attn train --model` accepts
FINETUNE_ARGS = ["--epochs", "1", "--train-size", "200", "--holdout", "20"]
FINETUNE_SENTENCES = 20
FINETUNE_MAX_MOVE = 0.05  # largest |tuned - init| allowed after the short run
# --roundtrip: non-default configurations through the same round trip (attn takes the
# configuration from the --init file), with a learning-rate warm-up in some
ROUNDTRIP = [  # (name, config, extra attn train options)
    ("transformer_d24h3_L3_post_gelu_sinusoidal",
     {"arch": "transformer", "embed_dim": 24, "n_heads": 3, "ffn_dim": 40, "n_layers": 3,
      "norm": "post", "activation": "gelu", "pos": "sinusoidal", "max_len": 100}, ["--warmup", "4"]),
    ("transformer_d16h4_L1_pre_relu_nopos",
     {"arch": "transformer", "embed_dim": 16, "n_heads": 4, "ffn_dim": 20, "n_layers": 1,
      "pos": "none", "vocab_size": 120}, []),
    ("lstm_E12_H20_L2", {"arch": "lstm", "embed_dim": 12, "hidden_size": 20, "n_layers": 2},
     ["--warmup", "3"]),
    ("gru_E8_H10_L3", {"arch": "gru", "embed_dim": 8, "hidden_size": 10, "n_layers": 3}, []),
    ("rnn_E20_H6_L2", {"arch": "rnn", "embed_dim": 20, "hidden_size": 6, "n_layers": 2}, []),
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


def finetune(attn, arch, seed, items, tmp, config=None, extra=()):
    """PyTorch weights -> attn train --init -> strict load in PyTorch -> same logits as attn.
    config (default: arch's defaults) is any configuration; `arch` then names the run. With a
    config, attn takes it from the file (--init without --model). Prints one line; returns True
    when every check passed."""
    torch.manual_seed(seed)
    given = config is not None
    config = config if given else {"arch": arch}
    start = attn_models.build(config)
    make_golden.perturb(start, torch.Generator().manual_seed(seed + 1))
    init_path = os.path.join(tmp, "finetune-%s-init.json" % arch)
    out_path = os.path.join(tmp, "finetune-%s-out.json" % arch)
    weights_json.export(start, config, init_path)
    cmd = [attn, "train"] + ([] if given else ["--model", arch]) + [
        "--init", init_path, "--out", out_path] + FINETUNE_ARGS + list(extra)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print("finetune %s: `%s` failed (exit %d): %s"
              % (arch, " ".join(cmd[1:]), r.returncode, r.stderr.strip()))
        return False
    try:
        tuned = weights_json.load(out_path).eval()  # load_state_dict(strict=True)
    except (ValueError, KeyError, RuntimeError, OSError) as e:
        print("finetune %s: strict load of attn's output failed: %s" % (arch, e))
        return False
    before = start.state_dict()
    unchanged = [k for k, v in tuned.state_dict().items() if torch.equal(v, before[k])]
    if unchanged:
        print("finetune %s: strict load ok, but training left %d tensor(s) unchanged: %s"
              % (arch, len(unchanged), ", ".join(unchanged)))
        return False
    # Started from init_path, not a fresh init: one epoch of ~6 Adam steps at lr 1e-3 moves no
    # parameter by more than a few 1e-3 (a fresh init differs by O(0.1..1) in the biases).
    moved = max(float((v - before[k]).abs().max()) for k, v in tuned.state_dict().items())
    if moved > FINETUNE_MAX_MOVE:
        print("finetune %s: strict load ok, but a parameter moved by %g (> %g): --init ignored?"
              % (arch, moved, FINETUNE_MAX_MOVE))
        return False
    step = max(1, len(items) // FINETUNE_SENTENCES)
    chosen = items[::step][:FINETUNE_SENTENCES]
    want = [make_golden.batch1_logit(tuned, it[2]) for it in chosen]
    try:
        got = attn_logits(attn, out_path, [it[1] for it in chosen])
    except RuntimeError as e:
        print("finetune %s: strict load ok, %s" % (arch, e))
        return False
    same = sum(struct.pack("<f", g) == struct.pack("<f", w) for g, w in zip(got, want))
    worst = max(ulp(g, w) for g, w in zip(got, want))
    print("finetune %s: strict load ok, identical: %d/%d%s (largest parameter change %.3g)"
          % (arch, same, len(want), "" if same == len(want) else ", max ULP: %s" % worst, moved))
    return same == len(want)


def initial_weights(attn, arch, seed, tmp):
    """attn's fresh model -> strict load in PyTorch; the position table equals PyTorch's."""
    path = os.path.join(tmp, "init-%s.json" % arch)
    r = subprocess.run([attn, "train", "--model", arch, "--seed", str(seed), "--epochs", "0",
                        "--out", path], capture_output=True, text=True)
    if r.returncode != 0:
        print("init %s: attn train --epochs 0 failed (exit %d): %s"
              % (arch, r.returncode, r.stderr.strip()))
        return False
    try:
        model = weights_json.load(path)
    except (RuntimeError, ValueError, KeyError) as e:
        print("init %s: strict load failed: %s" % (arch, e))
        return False
    if arch != "transformer":
        print("init %s: strict load ok" % arch)
        return True
    c = model.config
    want = attn_models.sinusoid_table(c["max_len"], c["embed_dim"],
                                      attn_models.POS_EMBEDDING_AMPLITUDE)
    got = model.pos_embedding.detach()
    same = int((got.view(torch.int32) == want.view(torch.int32)).sum())
    print("init %s: strict load ok, pos_embedding identical to PyTorch's table: %d/%d"
          % (arch, same, want.numel()))
    return same == want.numel()


# Length sweep: the models of MODELS plus Transformers of other head sizes and counts (the head
# size moves the boundary of ATen's small-bmm rule; an odd head count sends PyTorch down its
# Python attention path, which attn follows), all required to be identical.
SWEEP_EXTRA = [
    ("transformer_d64h4", {"arch": "transformer", "embed_dim": 64, "n_heads": 4}),   # HS 16
    ("transformer_d32h4", {"arch": "transformer", "embed_dim": 32, "n_heads": 4}),   # HS 8
    ("transformer_d24h3", {"arch": "transformer", "embed_dim": 24, "n_heads": 3}),   # HS 8
    ("transformer_d16h1", {"arch": "transformer", "embed_dim": 16, "n_heads": 1}),   # HS 16
    ("transformer_d15h5", {"arch": "transformer", "embed_dim": 15, "n_heads": 5,      # HS 3
                           "norm": "post", "activation": "gelu", "pos": "sinusoidal"}),
    ("transformer_rope", {"arch": "transformer", "pos": "rope"}),                     # HS 16
    ("transformer_d24h3_alibi", {"arch": "transformer", "embed_dim": 24, "n_heads": 3,  # HS 8
                                 "norm": "post", "pos": "alibi"}),
]


def length_sweep(attn, vocab, seed, per_length, tmp):
    """Every sentence length from 1 word to the Transformer's max_len - 1 (the [CLS] token takes
    a position), per_length random word sequences each, for every model of MODELS (must be
    identical) and of SWEEP_EXTRA (reported). Short sentences are where torch.bmm leaves BLAS
    for ATen's plain loop (contraction * rows * cols < 400). Prints one line per model, with
    the lengths that differ; returns True when every required model is identical."""
    max_words = attn_models.DEFAULTS["transformer"]["max_len"] - 1
    words = sorted(w for w, i in vocab.items() if i >= 2)  # no [PAD], no [CLS]
    gen = torch.Generator().manual_seed(seed)
    items = []  # (text, ids)
    for length in range(1, max_words + 1):
        for _ in range(per_length):
            pick = torch.randint(len(words), (length,), generator=gen).tolist()
            text = " ".join(words[j] for j in pick)
            items.append((text, [vocab[words[j]] for j in pick]))
    ok = True
    models = [(n, c, r) for n, c, r in MODELS] + [(n, c, True) for n, c in SWEEP_EXTRA]
    for index, (name, config, required) in enumerate(models):
        torch.manual_seed(seed * 100 + 30 + index)
        model = attn_models.build(config)
        make_golden.perturb(model, torch.Generator().manual_seed(seed * 100 + 80 + index))
        model.eval()
        path = os.path.join(tmp, "sweep-%s.json" % name)
        weights_json.export(model, config, path)
        want = [make_golden.batch1_logit(model, ids) for _, ids in items]
        try:
            got = attn_logits(attn, path, [text for text, _ in items])
        except RuntimeError as e:
            print("lengths %s: %s" % (name, e))
            ok = ok and not required
            continue
        bad = {}  # words -> worst ULP
        for (text, ids), g, w in zip(items, got, want):
            if struct.pack("<f", g) != struct.pack("<f", w):
                bad[len(ids)] = max(bad.get(len(ids), 0), ulp(g, w))
        same = sum(struct.pack("<f", g) == struct.pack("<f", w) for g, w in zip(got, want))
        worst = max(ulp(g, w) for g, w in zip(got, want))
        where = "" if not bad else ", differ at words " + ",".join(
            "%d(%s)" % (n, u) for n, u in sorted(bad.items()))
        print("lengths 1-%d %s: identical: %d/%d, max ULP: %s%s%s"
              % (max_words, name, same, len(want), worst, where,
                 "" if required else " (reported only)"))
        if required and same != len(want):
            ok = False
    return ok


def divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def random_config(rng, index):
    """The index-th random configuration: every other one a Transformer, the others cycle through
    rnn, lstm and gru. Returns (config, longest sentence in words)."""
    if index % 2 == 0:
        D = rng.randint(8, 64)
        c = {"arch": "transformer", "vocab_size": rng.randint(91, 400), "embed_dim": D,
             "n_heads": rng.choice(divisors(D)), "ffn_dim": rng.randint(16, 128),
             "n_layers": rng.randint(1, 4), "max_len": rng.randint(2, 256),
             "norm": rng.choice(["pre", "post"]), "activation": rng.choice(["relu", "gelu"]),
             "pos": rng.choice(list(attn_models.POS_SCHEMES))}
        if c["pos"] == "rope" and (D // c["n_heads"]) % 2:  # rotary halves need an even HS
            even = [h for h in divisors(D) if (D // h) % 2 == 0]
            if even:
                c["n_heads"] = even[-1]
            else:
                c["pos"] = "alibi"
        return c, c["max_len"] - 1
    arch = ("rnn", "lstm", "gru")[(index // 2) % 3]
    c = {"arch": arch, "vocab_size": rng.randint(91, 400), "embed_dim": rng.randint(4, 64),
         "hidden_size": rng.randint(4, 64), "n_layers": rng.randint(1, 3)}
    return c, rng.randint(1, 256)


def describe(c):
    if c["arch"] == "transformer":
        return ("transformer D%d h%d F%d L%d P%d %s %s %s" % (
            c["embed_dim"], c["n_heads"], c["ffn_dim"], c["n_layers"], c["max_len"], c["norm"],
            c["activation"], c["pos"]))
    return "%s E%d H%d L%d" % (c["arch"], c["embed_dim"], c["hidden_size"], c["n_layers"])


def random_sweep(attn, vocab, n_models, seed, stride, tmp):
    """--random: n_models random configurations, every sentence length (see the docstring).
    Returns True when every logit is identical."""
    import random
    rng = random.Random(seed)
    words = sorted(w for w, i in vocab.items() if i >= 2)
    total = same_total = 0
    worst_total = 0
    for index in range(n_models):
        config, longest = random_config(rng, index)
        lengths = list(range(1, longest + 1))
        if stride > 1 and index % 2 == 1 and index >= 6:  # rnn, lstm, gru 1, 3, 5: all lengths
            lengths = lengths[::stride] + ([longest] if (longest - 1) % stride else [])
        items = []
        for length in lengths:
            pick = [rng.randrange(len(words)) for _ in range(length)]
            items.append((" ".join(words[j] for j in pick), [vocab[words[j]] for j in pick]))
        torch.manual_seed(seed * 1000 + index)
        model = attn_models.build(config)
        make_golden.perturb(model, torch.Generator().manual_seed(seed * 1000 + 500 + index))
        model.eval()
        path = os.path.join(tmp, "random-%d.json" % index)
        weights_json.export(model, config, path)
        want = [make_golden.batch1_logit(model, ids) for _, ids in items]
        try:
            got = attn_logits(attn, path, [text for text, _ in items])
        except RuntimeError as e:
            print("random %d (%s): %s" % (index, describe(config), e))
            return False
        same = sum(struct.pack("<f", g) == struct.pack("<f", w) for g, w in zip(got, want))
        worst = max(ulp(g, w) for g, w in zip(got, want))
        bad = sorted({len(ids) for (_, ids), g, w in zip(items, got, want)
                      if struct.pack("<f", g) != struct.pack("<f", w)})
        print("random %2d %-52s lengths 1-%d%s: identical: %d/%d, max ULP: %s%s"
              % (index, describe(config), longest, "" if len(lengths) == longest
                 else " step %d" % stride, same, len(want), worst,
                 "" if not bad else " (differ at words %s)" % ",".join(map(str, bad[:20]))))
        total += len(want)
        same_total += same
        worst_total = max(worst_total, worst)
    print("random configurations: %d models, identical: %d/%d, max ULP: %s"
          % (n_models, same_total, total, worst_total))
    return same_total == total


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Exit codes: 0 every check passed, 1 a logit or tensor differs from PyTorch or an\n"
               "attn command failed, 2 usage error.")
    ap.add_argument("--attn", required=True, help="path of the built attn binary")
    ap.add_argument("--seed", type=int, default=1, help="PyTorch init seed (default 1)")
    ap.add_argument("--n", type=int, default=25, help="sentences per test set (default 25)")
    ap.add_argument("--per-length", type=int, default=2,
                    help="random sentences per length in the length sweep (default 2; 0 skips)")
    ap.add_argument("--random", type=int, default=0, metavar="N",
                    help="check N random configurations on every sentence length instead")
    ap.add_argument("--stride", type=int, default=1, metavar="K",
                    help="with --random: every K-th length for the recurrent models after the "
                    "first three (default 1: every length)")
    ap.add_argument("--roundtrip", action="store_true",
                    help="only the training round trip of non-default configurations")
    args = ap.parse_args()
    print(blas_core.both_sides(args.attn))
    vocab = make_golden.vocabulary(args.attn)
    if args.roundtrip:
        items = make_golden.sentences(args.attn, vocab, args.n, 1000 + args.seed)
        with tempfile.TemporaryDirectory(prefix="attn_crosscheck_") as tmp:
            ok = True
            for index, (name, config, extra) in enumerate(ROUNDTRIP):
                ok = finetune(args.attn, name, args.seed * 100 + 90 + index, items, tmp, config,
                              extra) and ok
        return 0 if ok else 1
    if args.random > 0:
        with tempfile.TemporaryDirectory(prefix="attn_crosscheck_") as tmp:
            return 0 if random_sweep(args.attn, vocab, args.random, args.seed, args.stride,
                                     tmp) else 1
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
        for index, arch in enumerate(FINETUNE):
            ok = finetune(args.attn, arch, args.seed * 100 + 70 + index, items, tmp)
            failed = failed or not ok
        for arch in FINETUNE:
            failed = not initial_weights(args.attn, arch, args.seed, tmp) or failed
        if args.per_length > 0:
            failed = not length_sweep(args.attn, vocab, args.seed, args.per_length, tmp) or failed
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""make_golden.py -- writes the PyTorch golden files of weights/golden/ (see tools/README or
the golden format note): for each model <name> in rnn, lstm, transformer, transformer_gelu,
transformer_post, gru (`--only NAME,...` writes only those):
  <name>.weights.json     attn-weights-v1, PyTorch init with every bias and LayerNorm
                          weight/bias perturbed to non-zero random values
  <name>.logits.json      {"name", "items": [{"set", "text", "ids", "label", "logit"}]}: eval
                          mode, batch 1, no padding, one BLAS thread; sentences from `attn data`
  <name>.grad_batch.json  {"name", "B", "T", "ids" [B*T, 0-padded], "lengths", "labels", "loss"}
  <name>.grads.json       attn-weights-v1 holding d(mean BCEWithLogits loss)/d(parameter)
The logits and grad_batch files (and kernels.json of golden_kernels.py) start with
"machine": {"blas_core", "torch", "cpu_capability"}: where they were made. Bit-identity holds
only on the same CPU class; the C tests check a tolerance elsewhere (tests/test_util.h).

Usage: /usr/bin/python3 tools/make_golden.py --attn build/attn [--out weights/golden]
       /usr/bin/python3 tools/make_golden.py --attn build/attn --trained weights/rnn-seed1.json \
           weights/lstm-seed1.json weights/transformer-seed1.json
         (trained_<arch>.weights.json + .logits.json: weights attn trained, PyTorch's logits)
"""
import os

os.environ["OPENBLAS_NUM_THREADS"] = "1"  # before torch loads OpenBLAS

import argparse  # noqa: E402
import ctypes  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

import blas_core as blas_core_rule  # noqa: E402 -- before torch: attn's OpenBLAS kernels
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attn_models  # noqa: E402
import weights_json  # noqa: E402

TEST_SETS = ("plain", "distractor", "fill4", "fill8")
MODELS = [
    ("rnn", {"arch": "rnn"}),
    ("lstm", {"arch": "lstm"}),
    ("transformer", {"arch": "transformer"}),
    ("transformer_gelu", {"arch": "transformer", "activation": "gelu"}),
    ("transformer_post", {"arch": "transformer", "norm": "post"}),
    ("gru", {"arch": "gru"}),  # last: the others keep their seeds (SEED + index)
]
SEED = 20240607


def blas_core():
    """openblas_get_corename() of the OpenBLAS that torch runs (the one mapped into this
    process once torch has done a matmul), e.g. "SkylakeX", "Haswell", "Zen"."""
    torch.ones(2, 2) @ torch.ones(2, 2)
    names = ["libopenblas.so.0"]
    with open("/proc/self/maps") as f:
        names = [line.split()[-1] for line in f if "libopenblas" in line] + names
    for name in names:
        try:
            get = ctypes.CDLL(name).openblas_get_corename
        except (OSError, AttributeError):
            continue
        get.restype = ctypes.c_char_p
        return get().decode().strip()
    return "unknown"


def machine():
    """The "machine" object every golden with top-level metadata records."""
    m = re.search(r"CPU capability usage: (\S+)", torch.__config__.show())
    return {"blas_core": blas_core(), "torch": torch.__version__,
            "cpu_capability": m.group(1) if m else "unknown",
            "kernels": blas_core_rule.record()}


def run_attn(attn, *args):
    r = subprocess.run([attn] + list(args), capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("make_golden.py: `attn %s` failed (exit %d): %s"
                 % (" ".join(args), r.returncode, r.stderr.strip()))
    return r.stdout


def vocabulary(attn):
    doc = json.loads(run_attn(attn, "vocab", "--json"))
    return {t["word"]: t["id"] for t in doc["words"]}


def sentences(attn, vocab, n, seed):
    """[(set, text, ids, label)] from `attn data` for each test set."""
    items = []
    for s in TEST_SETS:
        for line in run_attn(attn, "data", "--set", s, "--n", str(n), "--seed", str(seed)) \
                .splitlines():
            label, text = line.split("\t")
            ids = [vocab[w] for w in text.split()]
            items.append((s, text, ids, int(label)))
    return items


def perturb(model, gen):
    """Every bias -> U(-0.5, 0.5); every LayerNorm weight -> U(0.5, 1.5) (all non-zero)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            is_norm = ".norm" in "." + name and name.endswith("weight")
            if name.endswith("bias"):
                p.copy_(torch.rand(p.shape, generator=gen) - 0.5)
            elif is_norm:
                p.copy_(torch.rand(p.shape, generator=gen) + 0.5)
            if (name.endswith("bias") or is_norm) and bool((p == 0).any()):
                p.add_(0.125)


def make_model(config, index):
    torch.manual_seed(SEED + index)
    model = attn_models.build(config)
    perturb(model, torch.Generator().manual_seed(SEED + 100 + index))
    return model.eval()


def batch1_logit(model, ids):
    with torch.no_grad():
        return float(model(torch.tensor([ids]), torch.tensor([len(ids)]))[0])


def grad_batch(items):
    """~8 sentences of mixed lengths: two of each test set."""
    chosen = []
    for s in TEST_SETS:
        of_set = [it for it in items if it[0] == s]
        chosen += [of_set[0], of_set[len(of_set) // 2]]
    lengths = [len(it[2]) for it in chosen]
    assert len(set(lengths)) > 1, lengths
    T = max(lengths)
    ids = []
    for it in chosen:
        ids += it[2] + [attn_models.PAD_ID] * (T - len(it[2]))
    return {"B": len(chosen), "T": T, "ids": ids, "lengths": lengths,
            "labels": [float(it[3]) for it in chosen]}


def write_json(path, obj):
    weights_json.write_atomic(path, json.dumps(obj, separators=(",", ":")) + "\n")


def write_logits(model, items, where, name, path):
    out = [{"set": s, "text": text, "ids": ids, "label": label,
            "logit": batch1_logit(model, ids)} for s, text, ids, label in items]
    write_json(path, {"machine": where, "name": name, "items": out})
    return out


def write_trained(args, items, where):
    """Goldens for weights that attn trained: PyTorch's logits for the same items."""
    for path in args.trained:
        config, _ = weights_json.read(path)
        model = weights_json.load(path).eval()
        name = "trained_" + config["arch"]
        base = os.path.join(args.out, name)
        weights_json.export(model, config, base + ".weights.json")
        out = write_logits(model, items, where, name, base + ".logits.json")
        correct = sum((it["logit"] > 0) == (it["label"] == 1) for it in out)
        print("%s (from %s): %d items, %d correct" % (name, path, len(out), correct))
    return 0


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Exit codes: 0 success, 1 an attn command failed (named on stderr), 2 usage error.")
    ap.add_argument("--attn", required=True, help="path of the built attn binary")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "..", "weights", "golden"),
                    help="output directory (default weights/golden)")
    ap.add_argument("--n", type=int, default=60, help="sentences per test set (default 60)")
    ap.add_argument("--seed", type=int, default=7, help="attn data seed (default 7)")
    ap.add_argument("--trained", nargs="*", default=[], metavar="W.json",
                    help="trained weights (e.g. weights/lstm-seed1.json): write only "
                         "trained_<arch>.weights.json and .logits.json for each")
    ap.add_argument("--only", default=None, metavar="NAME,...",
                    help="write only these models' goldens (e.g. gru); default all")
    args = ap.parse_args()
    only = None if args.only is None else set(args.only.split(","))
    if only is not None and not only <= {name for name, _ in MODELS}:
        ap.error("--only: unknown model in %r" % (args.only,))
    os.makedirs(args.out, exist_ok=True)
    vocab = vocabulary(args.attn)
    items = sentences(args.attn, vocab, args.n, args.seed)
    where = machine()
    if args.trained:
        return write_trained(args, items, where)
    gb = grad_batch(items)
    for index, (name, config) in enumerate(MODELS):
        if only is not None and name not in only:
            continue
        model = make_model(config, index)
        base = os.path.join(args.out, name)
        weights_json.export(model, config, base + ".weights.json")

        out = write_logits(model, items, where, name, base + ".logits.json")

        model.zero_grad()
        B, T = gb["B"], gb["T"]
        logits = model(torch.tensor(gb["ids"]).view(B, T), torch.tensor(gb["lengths"]))
        loss = torch.nn.functional.binary_cross_entropy_with_logits(
            logits, torch.tensor(gb["labels"]))
        loss.backward()
        write_json(base + ".grad_batch.json",
                   dict(machine=where, name=name, loss=float(loss), **gb))
        params = dict(model.named_parameters())
        grads = [(k, params[k].grad) for k in model.state_dict()]
        weights_json.export_tensors(grads, config, base + ".grads.json")
        print("%s: %d items, grad batch B=%d T=%d loss %.6f" % (name, len(out), B, T,
                                                                 float(loss)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

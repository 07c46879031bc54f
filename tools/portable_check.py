#!/usr/bin/python3
"""portable_check.py -- the kernel paths of attn against PyTorch 1.13 run with the matching
ATen CPU capability, live, over every sentence length.

attn has three kernel paths (src/kernels/cpu.c, `ATTN_CPU=scalar|avx2|avx512`); ATen has one
kernel set per CPU capability (`ATEN_CPU_CAPABILITY=default|avx2|avx512`, read once when torch
loads). The pairs checked:

  scalar  vs  ATEN_CPU_CAPABILITY=default   (must be bit-identical)
  avx2    vs  ATEN_CPU_CAPABILITY=avx2      (must be bit-identical)
  avx512  vs  ATEN_CPU_CAPABILITY=avx512    (must be bit-identical; only where the CPU has
                                             AVX-512, which PyTorch's kernels need)
  avx2    vs  ATEN_CPU_CAPABILITY=avx512    (reported only; with --avx512)

For each model (rnn, lstm, gru, transformer, transformer_gelu, transformer_post, and other sizes:
see MODELS): fresh PyTorch weights with perturbed biases -> attn-weights-v1 JSON; random word
sequences of every length from 1 to 80 words (--per-length each); PyTorch's batch-1 eval
logits, under default in this process and under each other capability in a child process
(the capability cannot change once torch is loaded); `attn predict`
with ATTN_CPU set per path; every logit compared bit for bit. Prints per pair and model
`scalar/default rnn: identical: N/N, max ULP: K` and a summary line per pair.

Exits 1 when a required pair differs anywhere (or an attn or PyTorch run fails), 2 on usage.

Usage: /usr/bin/python3 tools/portable_check.py --attn build/attn [--seed S]
       [--per-length P] [--max-words W] [--avx512] [--no-avx512]
"""
import os
import sys

os.environ["OPENBLAS_NUM_THREADS"] = "1"  # before torch loads OpenBLAS (also in the children)
# This process runs PyTorch's default (non-AVX) kernels itself; a child process runs each other
# capability (ATen reads the variable once, when torch loads).
if "--torch-child" not in sys.argv:
    os.environ["ATEN_CPU_CAPABILITY"] = "default"

import argparse  # noqa: E402
import json  # noqa: E402
import struct  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

MODELS = [  # (name, config)
    ("rnn", {"arch": "rnn"}),
    ("lstm", {"arch": "lstm"}),
    ("gru", {"arch": "gru"}),
    ("transformer", {"arch": "transformer"}),
    ("transformer_gelu", {"arch": "transformer", "activation": "gelu"}),
    ("transformer_post", {"arch": "transformer", "norm": "post"}),
    # gate chunks that are not a multiple of 16 or 32 (sigmoid's vector blocks; the rest of a
    # chunk takes glibc's expf)
    ("lstm_h24", {"arch": "lstm", "hidden_size": 24}),
    ("gru_h40", {"arch": "gru", "hidden_size": 40}),
    # other widths: LayerNorm rows with a scalar tail (20 = 2 vectors + 4) and with two Welford
    # chunks (264 = 33 vectors: a cascade of depth 2); 10-wide heads (scale 1/sqrt(10))
    ("transformer_d20h2", {"arch": "transformer", "embed_dim": 20, "n_heads": 2, "ffn_dim": 36}),
    ("transformer_d264h4_post_gelu", {"arch": "transformer", "embed_dim": 264, "n_heads": 4,
                                      "ffn_dim": 96, "norm": "post", "activation": "gelu"}),
]
# what torch.__config__.show() says under "CPU capability usage" for each capability
CAPABILITY_USAGE = {"default": "NO AVX", "avx2": "AVX2", "avx512": "AVX512"}
PAIRS = [  # (attn path, ATen capability, required)
    ("scalar", "default", True),
    ("avx2", "avx2", True),
]
AVX512_PAIR = ("avx512", "avx512", True)
AVX2_AVX512_PAIR = ("avx2", "avx512", False)


def ordered_bits(x):
    """float32 bits mapped to a monotone integer line (ULP distance = difference)."""
    b = struct.unpack("<i", struct.pack("<f", x))[0]
    return b if b >= 0 else -(b & 0x7fffffff)


def ulp(a, b):
    if a != a or b != b:
        return float("inf")
    return abs(ordered_bits(a) - ordered_bits(b))


def same_bits(a, b):
    return struct.pack("<f", a) == struct.pack("<f", b)


def cpu_has_avx512():
    try:
        with open("/proc/cpuinfo") as f:
            return " avx512f" in f.read()
    except OSError:
        return False


# ---- the PyTorch child: logits of every model under one capability ---------------------------

def torch_logits(spec):
    """{"capability": what this process's torch runs, "logits": {name: [float]}}: batch-1 eval
    logits of every model of spec {"models": [[name, weights path]], "items": [ids]}."""
    import blas_core  # noqa: E402,F401 -- before torch: attn's OpenBLAS kernels
    import torch
    import make_golden
    import weights_json
    logits = {}
    for name, path in spec["models"]:
        model = weights_json.load(path).eval()
        logits[name] = [make_golden.batch1_logit(model, ids) for ids in spec["items"]]
    usage = [line.split(":", 1)[1].strip() for line in torch.__config__.show().splitlines()
             if "CPU capability usage" in line]
    return {"capability": usage[0] if usage else "?", "logits": logits}


def torch_child(spec_path, out_path):
    with open(spec_path) as f:
        spec = json.load(f)
    with open(out_path, "w") as f:
        json.dump(torch_logits(spec), f)


def run_torch(capability, spec_path, tmp):
    """PyTorch's logits under one capability: this process for default, else a child."""
    if capability == os.environ["ATEN_CPU_CAPABILITY"]:
        with open(spec_path) as f:
            return torch_logits(json.load(f))
    out = os.path.join(tmp, "torch-%s.json" % capability)
    env = dict(os.environ, ATEN_CPU_CAPABILITY=capability)
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--torch-child", spec_path,
                        out], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("PyTorch with ATEN_CPU_CAPABILITY=%s failed (exit %d): %s"
                           % (capability, r.returncode, r.stderr.strip()[-2000:]))
    with open(out) as f:
        return json.load(f)


# ---- attn ----------------------------------------------------------------------------------

def attn_logits(attn, path_name, weights, texts):
    env = dict(os.environ, ATTN_CPU=path_name)
    r = subprocess.run([attn, "predict", "--format", "json", "--weights", weights],
                       input="\n".join(texts) + "\n", capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError("ATTN_CPU=%s attn predict failed (exit %d): %s"
                           % (path_name, r.returncode, r.stderr.strip()))
    if "warn" in r.stderr.lower():
        raise RuntimeError("ATTN_CPU=%s: attn warned: %s" % (path_name, r.stderr.strip()))
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    if [row["sentence"] for row in rows] != texts:
        raise RuntimeError("attn predict returned %d rows for %d sentences"
                           % (len(rows), len(texts)))
    return [struct.unpack("<f", struct.pack("<f", row["logit"]))[0] for row in rows]


def make_inputs(attn, seed, per_length, max_words, tmp):
    """Weights files of fresh perturbed models and (text, ids) of every length."""
    import blas_core  # noqa: F401 -- before torch: attn's OpenBLAS kernels
    import torch
    import attn_models
    import make_golden
    import weights_json
    vocab = make_golden.vocabulary(attn)
    words = sorted(w for w, i in vocab.items() if i >= 2)  # no [PAD], no [CLS]
    gen = torch.Generator().manual_seed(seed)
    items = []
    for length in range(1, max_words + 1):
        for _ in range(per_length):
            pick = torch.randint(len(words), (length,), generator=gen).tolist()
            items.append((" ".join(words[j] for j in pick), [vocab[words[j]] for j in pick]))
    models = []
    for index, (name, config) in enumerate(MODELS):
        torch.manual_seed(seed * 100 + 40 + index)
        model = attn_models.build(config)
        make_golden.perturb(model, torch.Generator().manual_seed(seed * 100 + 90 + index))
        path = os.path.join(tmp, "%s.json" % name)
        weights_json.export(model, config, path)
        models.append((name, path))
    return models, items


def compare(label, got, want, items):
    """-> (identical, total, max ULP, {words: worst ULP}) and prints one line."""
    bad = {}
    for (_, ids), g, w in zip(items, got, want):
        if not same_bits(g, w):
            bad[len(ids)] = max(bad.get(len(ids), 0), ulp(g, w))
    same = sum(same_bits(g, w) for g, w in zip(got, want))
    worst = max(ulp(g, w) for g, w in zip(got, want))
    where = ""
    if bad:
        shown = sorted(bad.items())[:12]
        where = ", differ at words " + ",".join("%d(%s)" % kv for kv in shown)
        where += ",..." if len(bad) > len(shown) else ""
    print("%s: identical: %d/%d, max ULP: %s%s" % (label, same, len(want), worst, where))
    return same, len(want), worst


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--torch-child":
        torch_child(sys.argv[2], sys.argv[3])
        return 0
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Exit codes: 0 every required pair identical, 1 a difference or a failed run,\n"
               "2 usage error.")
    ap.add_argument("--attn", required=True, help="path of the built attn binary")
    ap.add_argument("--seed", type=int, default=1, help="weights and sentence seed (default 1)")
    ap.add_argument("--per-length", type=int, default=1,
                    help="random sentences per length (default 1)")
    ap.add_argument("--max-words", type=int, default=80,
                    help="longest sentence in words, 1..80 (default 80)")
    ap.add_argument("--avx512", action="store_true",
                    help="also report attn's avx2 path against ATEN_CPU_CAPABILITY=avx512")
    ap.add_argument("--no-avx512", action="store_true",
                    help="skip the avx512 pair (checked by default where the CPU has AVX-512)")
    args = ap.parse_args()
    if not 1 <= args.max_words <= 80 or args.per_length < 1:
        ap.error("--max-words must be in 1..80 and --per-length at least 1")
    pairs = list(PAIRS)
    if not cpu_has_avx512():
        print("avx512/avx512: not checked, this CPU has no AVX-512 (PyTorch's avx512 kernels "
              "need it)")
    elif not args.no_avx512:
        pairs += [AVX512_PAIR] + ([AVX2_AVX512_PAIR] if args.avx512 else [])
    failed = False
    with tempfile.TemporaryDirectory(prefix="attn_portable_") as tmp:
        models, items = make_inputs(args.attn, args.seed, args.per_length, args.max_words, tmp)
        spec = os.path.join(tmp, "spec.json")
        with open(spec, "w") as f:
            json.dump({"models": models, "items": [ids for _, ids in items]}, f)
        texts = [text for text, _ in items]
        for path_name, cap, required in pairs:
            try:
                want = run_torch(cap, spec, tmp)
                got = {name: attn_logits(args.attn, path_name, w, texts) for name, w in models}
            except RuntimeError as e:
                print("%s/%s: %s" % (path_name, cap, e))
                failed = failed or required
                continue
            if want["capability"] != CAPABILITY_USAGE[cap]:
                print("%s/%s: PyTorch runs capability %s, not %s"
                      % (path_name, cap, want["capability"], cap))
                failed = failed or required
                continue
            same = total = 0
            worst = 0
            for name, _ in models:
                s, t, w = compare("%s/%s %s" % (path_name, cap, name), got[name],
                                  want["logits"][name], items)
                same, total, worst = same + s, total + t, max(worst, w)
            print("%s vs ATEN_CPU_CAPABILITY=%s, lengths 1-%d, %d models: identical: %d/%d, "
                  "max ULP: %s%s" % (path_name, cap, args.max_words, len(models), same, total,
                                     worst, "" if required else " (reported only)"))
            if required and same != total:
                failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

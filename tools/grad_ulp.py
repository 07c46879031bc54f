#!/usr/bin/python3
"""grad_ulp.py -- how far `attn grad` is from PyTorch autograd, per tensor, in ULP.

For each model (rnn, lstm, gru, transformer, transformer_gelu, transformer_post): fresh PyTorch
weights with perturbed biases -> attn-weights-v1 JSON; sentences from `attn data --set train`;
the gradient of the mean BCE-with-logits loss with respect to every parameter, once by
`attn grad --weights W --data F.tsv --batch B --out G.json` and once by autograd on the same
module (train mode, dropout 0, one BLAS thread):

  batch 1:  --sentences single-sentence files, one forward/backward each (no accumulation
            across sentences on either side); the distribution pools the runs;
  batch 32: one file of 32 sentences of mixed lengths, one padded batch.

Per tensor: the elements compared (those where either side is non-zero: the embedding rows of
words a batch does not use are 0 on both sides and are left out), the share bit-identical, the
median and largest ULP distance, and the largest absolute difference divided by the tensor's
largest |gradient| (a ULP count is large where a gradient is near 0). The attention's packed
in_proj_bias is reported as its q, k and v parts (the key bias's gradient is 0 analytically).
With --summary one line per model and batch over all its tensors instead; with --markdown one
table per family (recurrent, transformer), a row per tensor and a column per model and batch,
cells "identical % · median ULP · max ULP".

Usage: /usr/bin/python3 tools/grad_ulp.py --attn build/attn [--seed S] [--sentences N]
       [--models rnn,lstm,...] [--summary] [--markdown]
"""
import os

os.environ["OPENBLAS_NUM_THREADS"] = "1"  # before torch loads OpenBLAS

import argparse  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

import blas_core  # noqa: E402,F401 -- before torch: attn's OpenBLAS kernels
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attn_models  # noqa: E402
import make_golden  # noqa: E402
import weights_json  # noqa: E402

MODELS = {
    "rnn": {"arch": "rnn"},
    "lstm": {"arch": "lstm"},
    "gru": {"arch": "gru"},
    "transformer": {"arch": "transformer"},
    "transformer_gelu": {"arch": "transformer", "activation": "gelu"},
    "transformer_post": {"arch": "transformer", "norm": "post"},
}
BIG_BATCH = 32


def ordered(t):
    """float32 tensor -> int64 tensor on a monotone line (ULP distance = difference)."""
    b = t.contiguous().view(torch.int32).to(torch.int64)
    return torch.where(b >= 0, b, -(b & 0x7fffffff))


def run_attn(attn, *args):
    r = subprocess.run([attn] + list(args), capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("`attn %s` failed (exit %d): %s"
                           % (" ".join(args), r.returncode, r.stderr.strip()))
    return r.stdout


def attn_grads(attn, weights, lines, batch, tmp, tag):
    data = os.path.join(tmp, "data-%s.tsv" % tag)
    out = os.path.join(tmp, "grad-%s.json" % tag)
    with open(data, "w") as f:
        f.write("".join(line + "\n" for line in lines))
    run_attn(attn, "grad", "--weights", weights, "--data", data, "--batch", str(batch),
             "--out", out)
    return weights_json.read(out)[1]


def torch_grads(model, items):
    """Autograd's gradient of the mean BCE loss over items [(ids, label)], one padded batch."""
    T = max(len(ids) for ids, _ in items)
    ids = torch.tensor([ids + [attn_models.PAD_ID] * (T - len(ids)) for ids, _ in items])
    lengths = torch.tensor([len(ids) for ids, _ in items])
    labels = torch.tensor([float(y) for _, y in items])
    model.train()
    model.zero_grad()
    F.binary_cross_entropy_with_logits(model(ids, lengths), labels).backward()
    return {name: p.grad.detach().clone() for name, p in model.named_parameters()}


class Stats:
    """ULP distances and relative errors of one tensor, pooled over runs."""

    def __init__(self):
        self.ulps = []
        self.rel = 0.0

    def add(self, got, want):
        keep = (got != 0) | (want != 0)
        d = (ordered(got) - ordered(want)).abs()[keep]
        self.ulps += d.tolist()
        scale = float(want.abs().max())
        if scale > 0:
            self.rel = max(self.rel, float((got - want).abs().max()) / scale)

    def row(self):
        n = len(self.ulps)
        same = sum(1 for u in self.ulps if u == 0)
        return (n, same, statistics.median(self.ulps) if n else 0, max(self.ulps, default=0),
                self.rel)


def split(tensor, got, want):
    """[(name, got, want)]: the attention's packed in-projection bias as its q, k and v parts,
    because the gradient of the key bias is 0 analytically (softmax ignores a shift shared by
    a row's scores): both sides return rounding noise there, often of opposite signs, whose ULP
    distance says nothing. Other tensors whole."""
    if not tensor.endswith("in_proj_bias"):
        return [(tensor, got, want)]
    D = got.numel() // 3
    return [("%s[%s]" % (tensor, part), got[i * D:(i + 1) * D], want[i * D:(i + 1) * D])
            for i, part in enumerate("qkv")]


def measure(attn, name, config, lines, items, seed, n_single, tmp):
    """{batch: {tensor: Stats}} for batch 1 and BIG_BATCH."""
    torch.manual_seed(seed)
    model = attn_models.build(config)
    make_golden.perturb(model, torch.Generator().manual_seed(seed + 1))
    weights = os.path.join(tmp, "%s.json" % name)
    weights_json.export(model, config, weights)
    result = {}
    for batch, runs in ((1, [[i] for i in range(n_single)]),
                        (BIG_BATCH, [list(range(BIG_BATCH))])):
        stats = {}
        for r, chosen in enumerate(runs):
            got = attn_grads(attn, weights, [lines[i] for i in chosen], batch, tmp,
                             "%s-%d-%d" % (name, batch, r))
            want = torch_grads(model, [items[i] for i in chosen])
            if set(got) != set(want):
                raise RuntimeError("%s: attn grad tensors %s, autograd %s"
                                   % (name, sorted(got), sorted(want)))
            for tensor in want:
                for part, g, w in split(tensor, got[tensor], want[tensor]):
                    stats.setdefault(part, Stats()).add(g, w)
        result[batch] = stats
    return result


def fmt_row(cells, markdown):
    return ("| " + " | ".join(cells) + " |") if markdown else "\t".join(cells)


def pooled_row(stats):
    """Over every tensor except the key bias (see split)."""
    pooled = Stats()
    for t, s in stats.items():
        if t.endswith("[k]"):
            continue
        pooled.ulps += s.ulps
        pooled.rel = max(pooled.rel, s.rel)
    return pooled.row()


def cell_text(row):
    n, same, med, worst, _ = row
    big = "%.1e" if max(med, worst) >= 1e6 else "%g"
    return ("%.0f %% · " + big + " · " + big) % (100.0 * same / n if n else 100.0, med, worst)


def print_wide(results):
    """Markdown: one table per family (recurrent, transformer), a row per tensor (recurrent
    tensors as cell.*), a column per model and batch; cells "identical % · median · max ULP"."""
    for family in ("recurrent", "transformer"):
        chosen = [(n, r) for n, r in results if (MODELS[n]["arch"] == "transformer")
                  == (family == "transformer")]
        if not chosen:
            continue
        columns, rows = [], {}
        for name, by_batch in chosen:
            for batch, stats in by_batch.items():
                columns.append("%s, batch %d" % (name, batch))
                for tensor, st in stats.items():
                    key = tensor.split(".", 1)[1] if tensor.startswith(
                        ("rnn.", "lstm.", "gru.")) else tensor
                    key = "cell." + key if key != tensor else key
                    rows.setdefault(key, {})[columns[-1]] = cell_text(st.row())
                total = "all tensors" if family == "recurrent" else "all but in_proj_bias[k]"
                rows.setdefault(total, {})[columns[-1]] = cell_text(pooled_row(stats))
        print("| tensor | " + " | ".join(columns) + " |")
        print("|---|" + "---|" * len(columns))
        for key, cells in rows.items():
            print("| %s | %s |" % (key, " | ".join(cells.get(c, "—") for c in columns)))
        print()


def print_tables(results, summary, markdown):
    if markdown:
        print_wide(results)
        return
    head = ["model", "batch", "tensor", "elements", "identical", "median ULP", "max ULP",
            "max |diff| / max |g|"]
    if summary:
        head[2] = "tensors"
    print(fmt_row(head, False))
    for name, by_batch in results:
        for batch, stats in by_batch.items():
            rows = [(t, s.row()) for t, s in stats.items()]
            if summary:  # every tensor but the key bias
                rows = [(str(sum(1 for t in stats if not t.endswith("[k]"))),
                         pooled_row(stats))]
            for tensor, (n, same, med, worst, rel) in rows:
                print(fmt_row([name, str(batch), tensor, str(n),
                               "%d (%.0f %%)" % (same, 100.0 * same / n if n else 100.0),
                               "%g" % med, str(worst), "%.1e" % rel], False))


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Exit codes: 0 measured, 1 an attn run failed, 2 usage error.")
    ap.add_argument("--attn", required=True, help="path of the built attn binary")
    ap.add_argument("--seed", type=int, default=1, help="weights and data seed (default 1)")
    ap.add_argument("--sentences", type=int, default=8,
                    help="single-sentence runs at batch 1 (default 8)")
    ap.add_argument("--models", default=",".join(MODELS),
                    help="comma-separated subset of %s" % ",".join(MODELS))
    ap.add_argument("--summary", action="store_true", help="one line per model and batch")
    ap.add_argument("--markdown", action="store_true",
                    help="print Markdown tables, a column per model and batch")
    args = ap.parse_args()
    names = args.models.split(",")
    unknown = [n for n in names if n not in MODELS]
    if unknown or not 1 <= args.sentences <= BIG_BATCH:
        ap.error("unknown model(s) %s or --sentences not in 1..%d" % (unknown, BIG_BATCH))
    torch.set_num_threads(1)
    vocab = make_golden.vocabulary(args.attn)
    lines = run_attn(args.attn, "data", "--set", "train", "--n", str(BIG_BATCH), "--seed",
                     str(args.seed)).splitlines()[:BIG_BATCH]
    items = [([vocab[w] for w in line.split("\t")[1].split()], int(line.split("\t")[0]))
             for line in lines]
    results = []
    try:
        with tempfile.TemporaryDirectory(prefix="attn_grad_ulp_") as tmp:
            for index, name in enumerate(names):
                results.append((name, measure(args.attn, name, MODELS[name], lines, items,
                                              args.seed * 100 + 60 + index, args.sentences,
                                              tmp)))
    except RuntimeError as e:
        print("grad_ulp.py: %s" % e, file=sys.stderr)
        return 1
    print_tables(results, args.summary, args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())

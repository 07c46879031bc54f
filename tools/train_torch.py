#!/usr/bin/python3
"""train_torch.py -- trains the three reference models in PyTorch the way `attn reproduce`
trains them in C, and prints the same table (or, with --bench, training throughput).

Same data (the TSV of `attn data`, tokenised with `attn vocab --json`), same held-out slice
(all training sentences trained on; the 500 sentences of `attn data --set holdout` held out),
same batches (the project PRNG, splitmix64, reimplemented
in attn_rng.py: shuffle, sort chunks of 8 batches by length, shuffle the batch order), same
hyperparameters (Adam defaults, lr 1e-3, batch 32, 20 epochs, mean BCEWithLogitsLoss), same
model selection (the parameters of the epoch with the best held-out accuracy, ties: the later
epoch, are the ones evaluated; --keep-best 0 keeps the last epoch's).
Only the initialisation differs: PyTorch's own, seeded with torch.manual_seed(seed).

  /usr/bin/python3 tools/train_torch.py [--attn build/attn] [--seeds 3] [--epochs 20] [-j 2]
  /usr/bin/python3 tools/train_torch.py --bench      # one epoch per model, sentences/s

Run with Debian's torch (/usr/bin/python3).
"""
import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from attn_rng import Rng  # noqa: E402

ARCHS = ["rnn", "gru", "lstm", "transformer"]  # the table's column order
DEFAULT_ARCHS = ["rnn", "lstm", "transformer"]  # the write-up's three (--models adds gru)
TITLES = {"rnn": "RNN", "gru": "GRU", "lstm": "LSTM", "transformer": "Transformer"}
TEST_SETS = ["plain", "distractor", "fill4", "fill8"]


# ---- the project batcher (src/train/batch.c), on its PRNG (attn_rng.py) ---------------------

def epoch_batches(rng, n, lengths, batch_size, bucket):
    """Lists of sentence indices, in run order, exactly as attn_batcher_shuffle."""
    order = list(range(n))
    rng.shuffle(order)
    if bucket > 1:
        chunk = bucket * batch_size
        for s in range(0, n, chunk):
            order[s:s + chunk] = sorted(order[s:s + chunk], key=lambda i: lengths[i])  # stable
    starts = list(range(0, n, batch_size))
    rng.shuffle(starts)
    return [order[s:s + batch_size] for s in starts]


# ---- data through the attn binary -----------------------------------------------------------

def find_attn(path):
    for p in ([path] if path else []) + [os.path.join(HERE, "..", "build", "attn"), "attn"]:
        if p and (os.path.sep not in p or os.path.exists(p)):
            return p
    return "attn"


def load_set(attn, set_name, seed, n=None):
    vocab = json.loads(subprocess.run([attn, "vocab", "--json"], check=True,
                                      capture_output=True, text=True).stdout)
    word_id = {t["word"]: t["id"] for t in vocab["words"]}
    cmd = [attn, "data", "--set", set_name, "--seed", str(seed)]
    if n is not None:
        cmd += ["--n", str(n)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    sents, labels = [], []
    for line in out.splitlines():
        label, text = line.split("\t", 1)
        sents.append([word_id[w] for w in text.split()])
        labels.append(int(label))
    return sents, labels


def pad(torch, sents, idx):
    T = max(len(sents[i]) for i in idx)
    ids = torch.zeros((len(idx), T), dtype=torch.long)
    for r, i in enumerate(idx):
        ids[r, :len(sents[i])] = torch.tensor(sents[i])
    lengths = torch.tensor([len(sents[i]) for i in idx], dtype=torch.long)
    return ids, lengths


# ---- training ---------------------------------------------------------------------------------

def accuracy(torch, model, sents, labels, idx, batch=256):
    model.eval()
    correct = 0
    with torch.no_grad():
        for s in range(0, len(idx), batch):
            part = idx[s:s + batch]
            ids, lengths = pad(torch, sents, part)
            pred = (model(ids, lengths) > 0).long()
            correct += int((pred == torch.tensor([labels[i] for i in part])).sum())
    model.train()
    return correct / len(idx)


def train_run(args_tuple):
    """One (arch, seed) run; returns a result dict. Runs in a worker process."""
    arch, seed, opts = args_tuple
    import blas_core  # noqa: E402,F401 -- before torch: attn's OpenBLAS kernels
    import torch
    import attn_models
    torch.set_num_threads(opts["threads"])
    sents, labels = load_set(opts["attn"], "train", seed, opts["train_size"])
    n_train = len(sents)  # all of it; the held-out slice is the separate holdout set
    ho_idx = []
    if opts["holdout"] > 0:
        hs, hl = load_set(opts["attn"], "holdout", seed, opts["holdout"])
        ho_idx = list(range(len(sents), len(sents) + len(hs)))
        sents, labels = sents + hs, labels + hl
    lengths = [len(s) for s in sents]
    torch.manual_seed(seed)
    model = attn_models.build({"arch": arch})
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=opts["lr"])
    loss_fn = torch.nn.BCEWithLogitsLoss()
    rng = Rng(seed)
    # pre-pad every batch of every epoch outside the timed loop would change nothing here:
    # padding is part of a training step in both implementations, so it stays inside.
    keep_best = opts["keep_best"] and opts["holdout"] > 0 and not opts["bench"]
    best_acc, best_state = -1.0, None
    t0 = time.perf_counter()
    epoch_times = []
    for epoch in range(opts["epochs"]):
        te = time.perf_counter()
        total, correct = 0.0, 0
        for idx in epoch_batches(rng, n_train, lengths, opts["batch_size"], opts["bucket"]):
            ids, lens = pad(torch, sents, idx)
            y = torch.tensor([float(labels[i]) for i in idx])
            opt.zero_grad()
            logits = model(ids, lens)
            loss = loss_fn(logits, y)
            loss.backward()
            opt.step()
            total += float(loss) * len(idx)
            correct += int(((logits > 0).float() == y).sum())
        epoch_times.append(time.perf_counter() - te)
        if opts["verbose"] or keep_best:
            ho = accuracy(torch, model, sents, labels, ho_idx)
        if keep_best and ho >= best_acc:  # ties: the later epoch, as attn's trainer
            best_acc = ho
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        if opts["verbose"]:
            print("  %s seed %d epoch %d loss %.4f train %.1f%% held-out %.1f%%" % (
                arch, seed, epoch + 1, total / n_train, 100 * correct / n_train, 100 * ho),
                file=sys.stderr)
    if keep_best:
        model.load_state_dict(best_state)
    train_s = time.perf_counter() - t0
    result = {"model": arch, "seed": seed, "params": attn_models.n_params(model),
              "train_seconds": train_s, "epoch_seconds": epoch_times,
              "sentences_per_s": n_train / min(epoch_times), "accuracy": {}}
    if not opts["bench"]:
        for s in TEST_SETS:
            ts, tl = load_set(opts["attn"], s, seed)
            result["accuracy"][s] = accuracy(torch, model, ts, tl, list(range(len(ts))))
        print("  %-11s seed %d: %s (train %.1fs)" % (arch, seed, ", ".join(
            "%s %.1f%%" % (s, 100 * result["accuracy"][s]) for s in TEST_SETS), train_s),
            file=sys.stderr)
    return result


def fmt_pct(x):
    p = 100 * x
    return "%.0f" % p if abs(p - round(p)) < 1e-9 else "%.1f" % p


def print_table(results, wall):
    archs = [a for a in ARCHS if any(r["model"] == a for r in results)]
    print("| test set   |" + "".join(" %-13s |" % TITLES[a] for a in archs))
    print("|------------|" + "---------------|" * len(archs))
    for s in TEST_SETS:
        cells = []
        for a in archs:
            v = [r["accuracy"][s] for r in results if r["model"] == a]
            lo, hi = fmt_pct(min(v)), fmt_pct(max(v))
            cells.append(lo + "%" if lo == hi else lo + "\u2013" + hi + "%")
        print("| %-10s |" % s + "".join(" %-13s |" % c for c in cells))
    params = {r["model"]: r["params"] for r in results}
    print("| parameters |" + "".join(" %-13s |" % format(params[a], ",") for a in archs))
    print("\nTotal wall time: %.1f s" % wall)


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Exit codes: 0 success, 1 failure (an attn command or a run; traceback), 2 usage error.")
    ap.add_argument("--attn", help="the attn binary (data and vocabulary); default build/attn")
    ap.add_argument("--seeds", type=int, default=3, help="seeds 1..N (default 3)")
    ap.add_argument("--epochs", type=int, default=20, help="epochs per run (default 20)")
    ap.add_argument("--train-size", type=int, default=8000,
                    help="training sentences per seed (default 8000)")
    ap.add_argument("--holdout", type=int, default=500, help="held-out sentences (default 500)")
    ap.add_argument("--keep-best", type=int, default=1, choices=(0, 1),
                    help="1: evaluate the best held-out epoch's parameters (default)")
    ap.add_argument("--batch", type=int, default=32, help="sentences per Adam step (default 32)")
    ap.add_argument("--bucket", type=int, default=8,
                    help="sort chunks of K batches by length, 1 = off (default 8)")
    ap.add_argument("--lr", type=float, default=1e-3, help="Adam learning rate (default 1e-3)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads per run (default 1)")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1,
                    help="runs in parallel (default: the number of cores)")
    ap.add_argument("--models", default=",".join(DEFAULT_ARCHS),
                    help="comma-separated subset of rnn,gru,lstm,transformer "
                         "(default rnn,lstm,transformer)")
    ap.add_argument("--bench", action="store_true",
                    help="train one epoch per model (seed 1) and print sentences/s")
    ap.add_argument("--out", help="write all results as JSON here")
    ap.add_argument("-v", "--verbose", action="store_true", help="per-epoch progress")
    args = ap.parse_args()
    opts = {"attn": find_attn(args.attn), "epochs": 1 if args.bench else args.epochs,
            "train_size": args.train_size, "holdout": args.holdout,
            "keep_best": args.keep_best,
            "batch_size": args.batch, "bucket": args.bucket, "lr": args.lr,
            "threads": args.threads, "bench": args.bench, "verbose": args.verbose}
    archs = [a for a in ARCHS if a in args.models.split(",")]
    t0 = time.perf_counter()
    if args.bench:
        results = [train_run((a, 1, opts)) for a in archs]  # sequential: clean timings
        for r in results:
            print("BENCH %s %.1f" % (r["model"], r["sentences_per_s"]))
    else:
        jobs = [(a, s, opts) for a in reversed(archs) for s in range(1, args.seeds + 1)]
        if args.jobs > 1:
            with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
                results = pool.map(train_run, jobs, chunksize=1)
        else:
            results = [train_run(j) for j in jobs]
        print_table(results, time.perf_counter() - t0)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"wall_seconds": time.perf_counter() - t0, "runs": results}, f, indent=1)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""bench_infer_torch.py -- PyTorch's side of bench/infer_speed: batched eval of a recurrent model.

Loads an attn-weights-v1 file into the reference module (tools/attn_models.py, strict), reads
sentences as token ids (one sentence per line, ids separated by spaces, no [CLS]), cuts them
into consecutive batches of --batch sentences, pads each batch with [PAD] = 0 to its longest
sentence (as attn's evaluation batcher does) and times full passes over all sentences in eval
mode under torch.no_grad(), after --warmup untimed passes. The thread count is set with
torch.set_num_threads and OPENBLAS_NUM_THREADS / OMP_NUM_THREADS before torch loads.

Prints one line, parsed by bench/infer_speed.c:
  torch arch=rnn sentences=4000 batch=256 threads=1 reps=9 median_s=0.0123 min_s=0.0120 cpu_median_s=0.0119
(wall-clock median and min of the passes, and the median of the thread's CPU time per pass,
which other processes on a busy machine disturb less).
--logits FILE also writes the logits of one pass, one per line ("%.9g"), in sentence order.

Exit codes: 0 ok, 1 runtime error (unreadable files, non-finite logits), 2 usage.
Run with Debian's interpreter (torch 1.13 lives there): /usr/bin/python3 tools/bench_infer_torch.py
"""
import argparse
import os
import sys
import time


def timed_passes(torch, model, batches, warmup, reps):
    """-> (wall seconds, thread CPU seconds) of each of reps passes of model over batches, after
    warmup untimed ones, and the last pass's logits concatenated."""
    times, cpu = [], []
    for i in range(warmup + reps):
        t0, c0 = time.perf_counter(), time.thread_time()
        logits = [model(ids, lengths) for ids, lengths in batches]
        t1, c1 = time.perf_counter(), time.thread_time()
        if i >= warmup:
            times.append(t1 - t0)
            cpu.append(c1 - c0)
    return times, cpu, torch.cat(logits)


def openblas_core():
    """The kernel table of the OpenBLAS loaded in this process (torch's), or "?"."""
    import ctypes
    for name in ("libopenblas.so.0", "libblas.so.3"):
        try:
            f = ctypes.CDLL(name).openblas_get_corename
        except (OSError, AttributeError):
            continue
        f.restype = ctypes.c_char_p
        return f().decode().strip() or "?"
    return "?"


def read_ids(path):
    """-> list of lists of int, one per non-empty line."""
    sentences = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            words = line.split()
            if not words:
                continue
            try:
                sentences.append([int(w) for w in words])
            except ValueError:
                raise ValueError("%s:%d: expected token ids separated by spaces" % (path, number))
    if not sentences:
        raise ValueError("%s: no sentences" % path)
    return sentences


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else 0.5 * (v[len(v) // 2 - 1] + v[len(v) // 2])


def make_batches(torch, sentences, batch):
    """Consecutive chunks of `batch` sentences, each padded to its longest: (ids, lengths)."""
    out = []
    for start in range(0, len(sentences), batch):
        chunk = sentences[start:start + batch]
        T = max(len(s) for s in chunk)
        ids = torch.zeros(len(chunk), T, dtype=torch.long)
        for i, s in enumerate(chunk):
            ids[i, :len(s)] = torch.tensor(s, dtype=torch.long)
        lengths = torch.tensor([len(s) for s in chunk], dtype=torch.long)
        out.append((ids, lengths))
    return out


def run(args):
    os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)  # before torch loads OpenBLAS
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    import blas_core  # noqa: E402,F401 -- before torch: attn's OpenBLAS kernels
    import torch

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import weights_json

    torch.set_num_threads(args.threads)
    model = weights_json.load(args.weights).eval()
    arch = model.config["arch"]
    batches = make_batches(torch, read_ids(args.ids), args.batch)
    n = sum(int(b[1].numel()) for b in batches)
    with torch.no_grad():
        times, cpu, logits = timed_passes(torch, model, batches, args.warmup, args.reps)
    if not bool(torch.isfinite(logits).all()):
        print("bench_infer_torch: non-finite logits", file=sys.stderr)
        return 1
    if args.logits:
        with open(args.logits, "w") as f:
            for v in logits.tolist():
                f.write("%.9g\n" % v)
    print("torch arch=%s sentences=%d batch=%d threads=%d reps=%d median_s=%.6f min_s=%.6f "
          "cpu_median_s=%.6f" % (arch, n, args.batch, args.threads, args.reps, median(times),
                                 min(times), median(cpu)), flush=True)
    return 0


def main():
    ap = argparse.ArgumentParser(
        description="PyTorch batched eval speed of an attn recurrent model (bench/infer_speed).")
    ap.add_argument("--weights", required=True, help="attn-weights-v1 JSON (rnn or lstm)")
    ap.add_argument("--ids", required=True, help="token ids, one sentence per line")
    ap.add_argument("--batch", type=int, default=256, help="sentences per forward (256)")
    ap.add_argument("--threads", type=int, default=1, help="torch/OpenBLAS threads (1)")
    ap.add_argument("--reps", type=int, default=9, help="timed passes (9)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed passes first (2)")
    ap.add_argument("--logits", help="write one pass's logits here, one per line")
    args = ap.parse_args()  # exits 2 on a usage error, 0 on -h
    if args.batch < 1 or args.threads < 1 or args.reps < 1 or args.warmup < 0:
        ap.error("--batch, --threads and --reps must be >= 1, --warmup >= 0")
    try:
        return run(args)
    except (OSError, ValueError, KeyError, RuntimeError) as e:
        print("bench_infer_torch: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""bench_seq2seq.py -- seq2seq-transformer speed, attn against PyTorch, in one run.

Training: one epoch over the same rewrite pairs (`attn data --task rewrite`, --train-size), the
same batches of 32, Adam, on one thread each: attn's `attn train` (its own tokens/s line) and a
PyTorch loop (nn.Transformer with key-padding masks, CrossEntropyLoss(ignore_index=0)); target
tokens ([EOS] included) per second.
Generation at batch 1 over --sources sources of the test sets: `attn generate` with the KV
cache, with --no-cache, and PyTorch's greedy loop over nn.Transformer (tools/seq2seq_models.
greedy); generated tokens ([EOS] included) per second, attn's process start included.
Timings on a shared machine move with its load: compare the ratios of one run.

Usage: /usr/bin/python3 tools/bench_seq2seq.py --attn build/attn [--train-size N] [--sources N]

PyTorch's side of bench/seq2seq (which runs attn in-process and this script on the same files):
  /usr/bin/python3 tools/bench_seq2seq.py --pairs P --sources-file S --weights W --gen-out G
      [--reps R] [--vocab-size V]
trains one epoch on P ("source ids<TAB>target ids" per line, target vocabulary ids, no [BOS] or
[EOS]), batch 32, in file order, from torch.manual_seed(1), and runs the greedy loop over the
sources of S (ids per line) with the weights W (--reps passes, median); prints
  torch train seconds=WALL cpu=CPU
  torch greedy tokens=N seconds=WALL cpu=CPU
(N: steps taken, [EOS] included; CPU: this process's CPU time) and writes the generated words of
each source, ids per line, to G.
"""
import os

os.environ["OPENBLAS_NUM_THREADS"] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import blas_core  # noqa: E402,F401
import torch  # noqa: E402

import seq2seq_crosscheck as cc  # noqa: E402
import seq2seq_models as sm  # noqa: E402


def pairs_of(attn, words_to_id, n, set_name):
    r = subprocess.run([attn, "data", "--task", "rewrite", "--set", set_name, "--n", str(n)],
                       capture_output=True, text=True, check=True)
    out = []
    for line in r.stdout.splitlines():
        s, t = line.split("\t")
        out.append(([words_to_id[w] for w in s.split()], [words_to_id[w] for w in t.split()]))
    return out


def torch_train_epoch(model, pairs, batch):
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=0)
    model.train()
    tokens = 0
    t0 = time.perf_counter()
    for i in range(0, len(pairs), batch):
        chunk = pairs[i:i + batch]
        S = max(len(s) for s, _ in chunk)
        T = max(len(t) for _, t in chunk) + 1
        src = torch.zeros(len(chunk), S, dtype=torch.long)
        tin = torch.zeros(len(chunk), T, dtype=torch.long)
        lab = torch.zeros(len(chunk), T, dtype=torch.long)
        for k, (s, t) in enumerate(chunk):
            src[k, :len(s)] = torch.tensor(s)
            tin[k, :len(t) + 1] = torch.tensor([sm.BOS] + t)
            lab[k, :len(t) + 1] = torch.tensor(t + [sm.EOS])
            tokens += len(t) + 1
        mask = torch.nn.Transformer.generate_square_subsequent_mask(T)
        y = model.transformer(model.embed("src", src), model.embed("tgt", tin), tgt_mask=mask,
                              src_key_padding_mask=src == 0, tgt_key_padding_mask=tin == 0,
                              memory_key_padding_mask=src == 0)
        loss = loss_fn(model.head(y).reshape(-1, model.config["tgt_vocab"]), lab.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return tokens / (time.perf_counter() - t0)


def timed(cmd, stdin):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, input=stdin, capture_output=True, text=True, check=True)
    return r, time.perf_counter() - t0


def read_id_lines(path):
    with open(path) as f:
        return [[[int(w) for w in part.split()] for part in line.rstrip("\n").split("\t")]
                for line in f if line.strip()]


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else 0.5 * (v[len(v) // 2 - 1] + v[len(v) // 2])


def child(a):
    """bench/seq2seq's PyTorch side: same pairs, sources and weights as attn's run."""
    sm.set_vocab_size(a.vocab_size)
    pairs = [(p[0], p[1]) for p in read_id_lines(a.pairs)]
    sources = [p[0] for p in read_id_lines(a.sources_file)]
    torch.manual_seed(1)
    model = sm.build(json.loads(a.config))
    walls, cpus = [], []
    for _ in range(a.train_reps):  # the same work each epoch: the median
        t0, c0 = time.perf_counter(), time.process_time()
        torch_train_epoch(model, pairs, 32)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    print("torch train seconds=%.6f cpu=%.6f" % (median(walls), median(cpus)), flush=True)
    model = sm.load(a.weights)
    max_out = model.config["max_tgt_len"] - 1
    walls, cpus = [], []
    for _ in range(a.reps):
        t0, c0 = time.perf_counter(), time.process_time()
        outs, tokens = [], 0
        for s in sources:
            words, steps = sm.greedy(model, s, max_out)
            outs.append(words)
            tokens += len(steps)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    with open(a.gen_out, "w") as f:
        for words in outs:
            f.write(" ".join(str(w) for w in words) + "\n")
    print("torch greedy tokens=%d seconds=%.6f cpu=%.6f" % (tokens, median(walls), median(cpus)),
          flush=True)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--attn")
    ap.add_argument("--train-size", type=int, default=2000)
    ap.add_argument("--sources", type=int, default=200)
    ap.add_argument("--pairs", help="bench/seq2seq's training pairs (its PyTorch side)")
    ap.add_argument("--sources-file", help="bench/seq2seq's sources")
    ap.add_argument("--weights", help="bench/seq2seq's trained weights")
    ap.add_argument("--gen-out", help="where the generated ids go")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--train-reps", type=int, default=1, help="timed training epochs (median)")
    ap.add_argument("--vocab-size", type=int, default=sm.N_WORDS_VOCAB)
    ap.add_argument("--config", default="{}",
                    help="the model's config as JSON, over the default (bench/seq2seq --size)")
    a = ap.parse_args()
    torch.set_num_threads(1)
    if a.pairs:
        if not (a.sources_file and a.weights and a.gen_out):
            ap.error("--pairs needs --sources-file, --weights and --gen-out")
        return child(a)
    if not a.attn:
        ap.error("--attn is required (or --pairs ...)")
    words = cc.vocab_words(a.attn)
    to_id = {w: i for i, w in words.items()}
    to_id.update({"positive": sm.BOS + 2, "negative": sm.BOS + 3})
    train = pairs_of(a.attn, to_id, a.train_size, "train")
    # training: attn
    with tempfile.TemporaryDirectory() as tmp:  # the weights are not needed
        r = subprocess.run([a.attn, "train", "--model", "seq2seq-transformer", "--task",
                            "rewrite", "--train-size", str(a.train_size), "--epochs", "1",
                            "--holdout", "0", "--out", os.path.join(tmp, "w.json")],
                           capture_output=True, text=True, check=True)
    attn_train = float(re.search(r"([0-9.]+) target tokens/s", r.stderr).group(1))
    torch.manual_seed(1)
    torch_train = torch_train_epoch(sm.build({}), train, 32)
    print("training, target tokens/s: attn %.0f, PyTorch %.0f, ratio %.2fx"
          % (attn_train, torch_train, attn_train / torch_train))
    # generation: a trained model (2 epochs of attn) so that outputs have their real length
    with tempfile.TemporaryDirectory() as tmp:
        w = os.path.join(tmp, "w.json")
        subprocess.run([a.attn, "train", "--model", "seq2seq-transformer", "--task", "rewrite",
                        "--epochs", "2", "--holdout", "0", "--quiet", "--out", w],
                       capture_output=True, check=True)
        tests = pairs_of(a.attn, to_id, a.sources // 4 + 1, "all")[:a.sources]
        text = "".join(" ".join(words[i] for i in s) + "\n" for s, _ in tests)
        r, t_cache = timed([a.attn, "generate", "--weights", w], text)
        n_tokens = sum(len(line.split()) + 1 for line in r.stdout.splitlines())
        _, t_rec = timed([a.attn, "generate", "--weights", w, "--no-cache"], text)
        model = sm.load(w)
        t0 = time.perf_counter()
        for s, _ in tests:
            sm.greedy(model, s, model.config["max_tgt_len"] - 1)
        t_torch = time.perf_counter() - t0
    print("generation at batch 1, %d sources, %d tokens, tokens/s: attn cached %.0f, attn "
          "recomputing %.0f, PyTorch loop %.0f; cached/PyTorch %.1fx, recomputing/PyTorch %.1fx"
          % (len(tests), n_tokens, n_tokens / t_cache, n_tokens / t_rec, n_tokens / t_torch,
             t_torch / t_cache, t_torch / t_rec))


if __name__ == "__main__":
    sys.exit(main())

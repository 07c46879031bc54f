#!/usr/bin/python3
"""vocab_crosscheck.py -- a user's own PyTorch classifier with a vocabulary of its own runs in attn
bit for bit (CTest io/vocab_torch, label torch).

For rnn, lstm, gru and transformer (pre-norm gelu, and post-norm relu): a classifier written as a user would write it (its own class,
attribute names and sizes, not tools/attn_models.py) over a vocabulary of 200 random words (plus
[PAD], [CLS] and a few tokens the tokenizer cannot produce), random weights -> tools/
export_classifier.py -> W.json with its "vocab". Then, on random sentences of those words:
  - `attn predict --format json` on the words and `attn predict --ids --format json` on their ids
    must both give PyTorch's batch-1 eval logit of the sentence bit for bit;
  - `attn vocab --weights W.json --json` lists the same tokens, `attn info` says "its own";
  - weights_json.read_with_vocab(W.json) gives back the vocabulary and every tensor.
Prints `vocab rnn (V 203): words identical: N/N, ids identical: N/N, max ULP: 0` per model and
exits 1 on any difference.

Usage: /usr/bin/python3 tools/vocab_crosscheck.py --attn build/attn [--seed S] [--n N]
"""
import os

os.environ["OPENBLAS_NUM_THREADS"] = "1"  # before torch loads OpenBLAS

import argparse  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import struct  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

import blas_core  # noqa: E402,F401 -- before torch: attn's OpenBLAS kernels
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_classifier  # noqa: E402
import weights_json  # noqa: E402

N_WORDS = 200
IDS_ONLY = ["Paris", "don't", "U.S."]  # upper case / removed punctuation: reached by id only


class UserRecurrent(nn.Module):
    """What a user writes: their own names (emb, encoder, fc), batch_first, last hidden state."""

    def __init__(self, cell, n_tokens, emb_dim, hidden):
        super().__init__()
        self.emb = nn.Embedding(n_tokens, emb_dim, padding_idx=0)
        kinds = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}
        self.encoder = kinds[cell](emb_dim, hidden, batch_first=True)
        self.fc = nn.Linear(hidden, 1)

    def forward(self, ids):                       # ids [1, T] -> logit [1]
        out, _ = self.encoder(self.emb(ids))
        return self.fc(out[:, -1]).squeeze(1)


class UserTransformer(nn.Module):
    """[CLS] + tokens, learned positions, an nn.TransformerEncoder with a final norm, head on
    position 0."""

    def __init__(self, n_tokens, d_model, heads, ffn, layers, max_len, norm_first, activation):
        super().__init__()
        self.tok = nn.Embedding(n_tokens, d_model)
        self.positions = nn.Parameter(torch.randn(max_len, d_model) * 0.5)
        layer = nn.TransformerEncoderLayer(d_model, heads, ffn, dropout=0.0, batch_first=True,
                                           norm_first=norm_first, activation=activation)
        self.encoder = nn.TransformerEncoder(layer, layers,
                                             norm=nn.LayerNorm(d_model) if norm_first else None,
                                             enable_nested_tensor=False)
        self.classifier = nn.Linear(d_model, 1)

    def forward(self, ids):                       # ids [1, T] -> logit [1]
        cls = torch.ones(ids.shape[0], 1, dtype=ids.dtype)
        x = self.tok(torch.cat([cls, ids], 1)) + self.positions[:ids.shape[1] + 1]
        return self.classifier(self.encoder(x)[:, 0]).squeeze(1)


def random_words(rng, n):
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = set()
    while len(words) < n:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(2, 9))))
    return sorted(words, key=lambda w: rng.random())


def perturb(model, gen):
    """Biases and norms away from their 0/1 initial values, so that every tensor matters."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "norm" in name:
                p.add_(torch.randn(p.shape, generator=gen) * 0.3)


def bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def ulp(a, b):
    def ordered(x):
        v = struct.unpack("<i", struct.pack("<f", x))[0]
        return v if v >= 0 else -(v & 0x7fffffff)
    return abs(ordered(a) - ordered(b))


def run(attn, args, stdin_text=""):
    r = subprocess.run([attn] + args, input=stdin_text, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("attn %s failed (exit %d): %s"
                           % (" ".join(args[:1]), r.returncode, r.stderr.strip()))
    return r.stdout


def predict(attn, path, lines, by_ids):
    args = ["predict", "--format", "json", "--weights", path] + (["--ids"] if by_ids else [])
    rows = [json.loads(line) for line in run(attn, args, "\n".join(lines) + "\n").splitlines()]
    if len(rows) != len(lines):
        raise RuntimeError("attn predict gave %d rows for %d lines" % (len(rows), len(lines)))
    return [struct.unpack("<f", struct.pack("<f", row["logit"]))[0] for row in rows]


def check_model(attn, name, model, words, rng, n, min_words, max_words, tmp):
    model.eval()
    path = os.path.join(tmp, "%s-own-vocab.json" % name)
    first_word = 2  # ids 0, 1: [PAD], [CLS] or [UNK]
    config = export_classifier.export(model, words, path)
    ok = True
    # the file keeps the vocabulary and every tensor (python side of the round trip)
    _, tensors, vocab = weights_json.read_with_vocab(path)
    if vocab != words or len(tensors) != len(export_classifier.convert(model, words)[1]):
        print("vocab %s: the file does not hold the vocabulary and tensors given" % name)
        ok = False
    listed = json.loads(run(attn, ["vocab", "--json", "--weights", path]))
    if [t["word"] for t in listed["words"]] != words or listed.get("source") != "file":
        print("vocab %s: attn vocab --weights lists other tokens" % name)
        ok = False
    info = run(attn, ["info", "--weights", path])
    if "vocabulary   its own, %d tokens" % len(words) not in info:
        print("vocab %s: attn info does not show the file's vocabulary" % name)
        ok = False
    last_word = first_word + N_WORDS  # exclusive; the ids-only tokens follow
    sentences, id_lines, want = [], [], []
    for _ in range(n):
        T = rng.randint(min_words, max_words)
        ids = [rng.randrange(first_word, last_word) for _ in range(T)]
        # ids-only tokens and [PAD] appear in the --ids lines only
        extra = [rng.randrange(last_word, len(words)), 0]
        id_seq = ids[:-1] + [rng.choice(extra)] + ids[-1:] if T > 2 else ids
        sentences.append(" ".join(words[i] for i in ids))
        id_lines.append(" ".join(str(i) for i in id_seq))
        with torch.no_grad():
            want.append((float(model(torch.tensor([ids]))[0]),
                         float(model(torch.tensor([id_seq]))[0])))
    got_words = predict(attn, path, sentences, False)
    got_ids = predict(attn, path, id_lines, True)
    same_w = sum(bits(g) == bits(w[0]) for g, w in zip(got_words, want))
    same_i = sum(bits(g) == bits(w[1]) for g, w in zip(got_ids, want))
    worst = max([ulp(g, w[0]) for g, w in zip(got_words, want)]
                + [ulp(g, w[1]) for g, w in zip(got_ids, want)])
    print("vocab %s (V %d, %s): words identical: %d/%d, ids identical: %d/%d, max ULP: %d"
          % (name, len(words), ", ".join("%s %s" % (k, v) for k, v in config.items()
                                         if k not in ("arch", "vocab_size")),
             same_w, n, same_i, n, worst))
    return ok and same_w == n and same_i == n


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--attn", required=True, help="the attn binary")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--n", type=int, default=60, help="sentences per model")
    args = ap.parse_args()
    torch.set_num_threads(1)
    rng = random.Random(args.seed)
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    all_ok = True
    with tempfile.TemporaryDirectory(prefix="attn-vocab-") as tmp:
        for name in ("rnn", "lstm", "gru"):
            words = ["[PAD]", "[UNK]"] + random_words(rng, N_WORDS) + IDS_ONLY
            model = UserRecurrent(name, len(words), rng.choice([8, 12, 24]),
                                  rng.choice([10, 20, 40]))
            perturb(model, gen)
            all_ok &= check_model(args.attn, name, model, words, rng, args.n, 1, 60, tmp)
        for name, norm_first, act in (("transformer", True, "gelu"),
                                      ("transformer_post", False, "relu")):
            words = ["[PAD]", "[CLS]"] + random_words(rng, N_WORDS) + IDS_ONLY
            # 16-wide heads and 4+ words: the sizes where attn follows PyTorch's batched products
            model = UserTransformer(len(words), 48, 3, 96, 2, 41, norm_first, act)
            perturb(model, gen)
            all_ok &= check_model(args.attn, name, model, words, rng, args.n, 4, 39, tmp)
    print("vocab crosscheck: %s" % ("ok" if all_ok else "FAILED"))
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())

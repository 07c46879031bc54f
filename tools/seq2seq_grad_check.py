#!/usr/bin/python3
"""seq2seq_grad_check.py -- attn's seq2seq gradients against PyTorch's autograd.

For a few configurations (pre/post norm, relu/gelu, every position scheme), fresh perturbed nn.Transformer
weights and random 'source<TAB>target' pairs: `attn grad` (the mean cross-entropy over every
target token, [EOS] included, pairs packed in one batch) against autograd on the same loss (each
pair alone, batch 1, CrossEntropyLoss(reduction="sum") summed and divided by the token count;
train mode, dropout 0). Gradients are not bit-identical (other summation orders); this prints,
per configuration and tensor group, the elements compared, the share within 0, 1 and 16 ULP,
the largest |difference| relative to the tensor's largest gradient, and fails when that exceeds
--tol (default 1e-4).

--models rnn: seq2seq-gru and seq2seq-attn (uni- and bidirectional) instead, pairs of up to 40
source words packed in one batch of attn (the slots sorted by source length).

Usage: /usr/bin/python3 tools/seq2seq_grad_check.py --attn build/attn [--markdown]
       [--models transformer|rnn]
"""
import os

os.environ["OPENBLAS_NUM_THREADS"] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import blas_core  # noqa: E402,F401
import torch  # noqa: E402

import seq2seq_models as sm  # noqa: E402
import seq2seq_crosscheck as cc  # noqa: E402

CONFIGS = [
    {},
    {"norm": "post", "activation": "gelu", "pos": "sinusoidal", "d_model": 24, "n_heads": 3,
     "ffn_dim": 40, "enc_layers": 1, "dec_layers": 3},
    {"pos": "none", "d_model": 16, "n_heads": 4, "ffn_dim": 20, "enc_layers": 3, "dec_layers": 1},
    {"pos": "rope", "norm": "post", "d_model": 24, "n_heads": 2, "ffn_dim": 30, "enc_layers": 2,
     "dec_layers": 2},
    {"pos": "alibi", "activation": "gelu", "d_model": 20, "n_heads": 5, "ffn_dim": 24,
     "enc_layers": 1, "dec_layers": 2},
]
RNN_CONFIGS = [
    {"arch": "seq2seq-gru"},
    {"arch": "seq2seq-attn"},
    {"arch": "seq2seq-attn", "bidirectional": 0, "d_model": 12, "hidden_size": 20},
]
RNN_GROUPS = [("embeddings", ("embedding",)),
              ("encoder GRU", ("encoder.",)),
              ("attention", ("attention.",)),
              ("decoder GRUCell", ("decoder.",)),
              ("head", ("head.",))]
GROUPS = [("embeddings", ("embedding", "pos_embedding")),
          ("encoder layers", ("transformer.encoder.layers",)),
          ("encoder.norm", ("transformer.encoder.norm",)),
          ("decoder self-attention", ("self_attn",)),
          ("decoder cross-attention", ("multihead_attn",)),
          ("decoder feed-forward and norms", ("linear", "norm1", "norm2", "norm3")),
          ("decoder.norm", ("transformer.decoder.norm",)),
          ("head", ("head.",))]


def group_of(name, groups):
    if groups is RNN_GROUPS:
        return next((g for g, keys in groups if any(name.startswith(k) or k in name
                                                    for k in keys)), "other")
    if name.startswith("transformer.encoder.layers"):
        return "encoder layers"
    for g, keys in GROUPS:
        if any(k in name for k in keys):
            return g
    return "other"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--attn", required=True)
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--models", choices=["transformer", "rnn"], default="transformer")
    a = ap.parse_args()
    rnn = a.models == "rnn"
    configs, groups = (RNN_CONFIGS, RNN_GROUPS) if rnn else (CONFIGS, GROUPS)
    words = cc.vocab_words(a.attn)
    rng = random.Random(7)
    ok = True
    if a.markdown:
        print("| configuration | tensors | elements | 0 ULP | <= 1 ULP | <= 16 ULP | "
              "max rel. diff |\n|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for i, cfg in enumerate(configs):
            torch.manual_seed(100 + i)
            model = sm.build(cfg)
            sm.perturb(model, torch.Generator().manual_seed(200 + i))
            c = model.config
            path, data, out = (os.path.join(tmp, n) for n in ("w.json", "p.tsv", "g.json"))
            sm.export(model, path)
            pairs = []
            for _ in range(a.pairs):
                S = rng.randint(1, min(40 if rnn else 30, c["max_src_len"]))
                T = rng.randint(1, c["max_tgt_len"] - 1)
                pairs.append(([rng.choice(cc.WORDS) for _ in range(S)],
                              [rng.randint(2, c["tgt_vocab"] - 1) for _ in range(T - 1)]))
            with open(data, "w") as f:
                for s, t in pairs:
                    f.write("%s\t%s\n" % (" ".join(words[x] for x in s),
                                          " ".join(cc.tgt_token(words, x) for x in t)))
            r = subprocess.run([a.attn, "grad", "--weights", path, "--data", data, "--out", out],
                               capture_output=True, text=True)
            if r.returncode != 0:
                print("attn grad failed: %s" % r.stderr.strip())
                sys.exit(1)
            with open(out) as f:
                got = {k: torch.tensor(v["data"]).view(v["shape"])
                       for k, v in json.load(f)["tensors"].items()}
            model.train()
            model.zero_grad()
            total = sum(len(t) + 1 for _, t in pairs)
            loss = 0.0
            for s, t in pairs:
                logits = model(torch.tensor([s]), torch.tensor([[sm.BOS] + t]))[0]
                labels = torch.tensor(t + [sm.EOS])
                loss = loss + torch.nn.functional.cross_entropy(logits, labels, reduction="sum")
            (loss / total).backward()
            stats = {}
            for k, p in model.named_parameters():
                g, w = got[k].reshape(-1), p.grad.reshape(-1)
                d = (g.view(torch.int32).long() - w.view(torch.int32).long()).abs()
                same_sign = (g.view(torch.int32) >= 0) == (w.view(torch.int32) >= 0)
                ulps = torch.where(same_sign, d, torch.full_like(d, 1 << 30))
                rel = float((g - w).abs().max() / max(float(w.abs().max()), 1e-30))
                s = stats.setdefault(group_of(k, groups), [0, 0, 0, 0, 0.0])
                s[0] += g.numel()
                s[1] += int((ulps == 0).sum())
                s[2] += int((ulps <= 1).sum())
                s[3] += int((ulps <= 16).sum())
                s[4] = max(s[4], rel)
            name = ("%s E%d H%d bi%d" % (c["arch"], c["d_model"], c["hidden_size"],
                                         c["bidirectional"]) if rnn else
                    "D%d h%d L%d/%d %s %s %s" % (c["d_model"], c["n_heads"], c["enc_layers"],
                                                 c["dec_layers"], c["norm"], c["activation"],
                                                 c["pos"]))
            for g, _ in groups:
                if g not in stats:
                    continue
                n, z, o, s16, rel = stats[g]
                ok = ok and rel <= a.tol
                if a.markdown:
                    print("| %s | %s | %d | %.1f%% | %.1f%% | %.1f%% | %.1e |"
                          % (name, g, n, 100.0 * z / n, 100.0 * o / n, 100.0 * s16 / n, rel))
                else:
                    print("%s %-32s %6d elements: 0 ULP %.1f%%, <=1 ULP %.1f%%, <=16 ULP %.1f%%, "
                          "max rel. diff %.1e" % (name, g, n, 100.0 * z / n, 100.0 * o / n,
                                                  100.0 * s16 / n, rel))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

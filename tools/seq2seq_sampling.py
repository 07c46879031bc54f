#!/usr/bin/python3
"""seq2seq_sampling.py -- attn's sampling in Python, for the seq2seq reference (seq2seq_models.sample):
one sampling step (src/models/seq2seq_sample.c), drawing from attn's generator (attn_rng.py),
so that a seeded sample of attn and of the reference pick the same tokens."""
import math


def sample_step(x, temperature, top_k, top_p, rng):
    """attn's sampling step (src/models/seq2seq_sample.c) on logits x (a list of floats)."""
    V = len(x)
    z = [v / temperature for v in x]
    order = sorted(range(V), key=lambda j: (-z[j], j))
    n = top_k if 0 < top_k < V else V
    top = z[order[0]]
    p = [math.exp(z[order[r]] - top) for r in range(n)]
    total = 0.0
    for v in p:
        total += v
    p = [v / total for v in p]
    if 0.0 < top_p < 1.0:
        run, keep = 0.0, 0
        while keep < n and run < top_p:
            run += p[keep]
            keep += 1
        n = keep
    kept = 0.0
    for r in range(n):
        kept += p[r]
    u = rng.uniform() * kept
    run = 0.0
    for r in range(n):
        run += p[r]
        if u < run:
            return order[r]
    return order[n - 1]

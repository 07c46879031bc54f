#!/usr/bin/python3
"""seq2seq_sampling.py -- attn's sampling in Python, for the seq2seq reference (seq2seq_models.sample):
its generator (SplitMix64, src/util/rng.c) and one sampling step (src/models/seq2seq_sample.c),
so that a seeded sample of attn and of the reference pick the same tokens."""
import math


MASK64 = (1 << 64) - 1


class SplitMix64:
    """attn's PRNG (src/util/rng.c) in Python integers: the same seed, the same stream."""

    def __init__(self, seed):
        self.state = seed & MASK64

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def uniform(self):
        return (self.next() >> 11) * 2.0 ** -53


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

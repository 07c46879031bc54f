#!/usr/bin/python3
"""attn_rng.py -- attn's generator (SplitMix64, src/util/rng.c) in Python integers, for the
PyTorch side: the same seed gives the same stream, so the references draw what attn draws
(train_torch.py: the batch order; seq2seq_sampling.py: the sampled tokens)."""

MASK64 = (1 << 64) - 1


class Rng:
    def __init__(self, seed):
        self.state = seed & MASK64

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def below(self, n):  # Lemire's multiply-shift with rejection
        m = (self.next() >> 32) * n
        low = m & 0xFFFFFFFF
        if low < n:
            threshold = ((1 << 32) - n) % n
            while low < threshold:
                m = (self.next() >> 32) * n
                low = m & 0xFFFFFFFF
        return m >> 32

    def shuffle(self, a):
        for i in range(len(a) - 1, 0, -1):
            j = self.below(i + 1)
            a[i], a[j] = a[j], a[i]

    def uniform(self):  # [0, 1) from the top 53 bits
        return (self.next() >> 11) * 2.0 ** -53

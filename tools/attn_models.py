#!/usr/bin/python3
"""attn_models.py -- the PyTorch reference modules of attn (the source of truth for goldens).

rnn:         Embedding(V,E) -> nn.RNN(E,H,tanh) -> h after each sentence's last word -> Linear(H,1)
lstm:        Embedding(V,E) -> nn.LSTM(E,H)     -> same                               -> Linear(H,1)
gru:         Embedding(V,E) -> nn.GRU(E,H)      -> same                               -> Linear(H,1)
transformer: [CLS]=1 + ids -> Embedding(V,D) + positions[:T+1] -> L x TransformerEncoderLayer
             (NH heads, F, dropout 0, relu|gelu, norm_first for "pre") -> LayerNorm "norm" (pre
             only) -> Linear(D,1) on position 0. Positions ("pos"): "learned" = the parameter
             pos_embedding; "sinusoidal" = the fixed unscaled table, a non-persistent buffer
             (not in the state_dict); "none" = nothing added; "rope" and "alibi" act inside
             the attention (PosEncoderLayer, written out with plain tensor ops: PyTorch 1.13
             has neither): rotary q, k (GPT-NeoX halves, base 10000) or the ALiBi score bias
             -slope_h * |i - j| (Press et al. 2022 slopes). docs/transformer-positions.md.
forward(ids [B,T] long, lengths [B] long) -> logits [B]. Padded positions hold 0 ([PAD]).
Run with /usr/bin/python3 (Debian torch 1.13). `attn_models.py` alone runs a self-test.
"""
import math

import blas_core  # noqa: E402,F401 -- before torch: attn's OpenBLAS kernels
import torch
import torch.nn as nn

PAD_ID = 0
CLS_ID = 1
# pos_embedding starts as the sinusoidal table of Vaswani et al. (2017) times 2 and is then trained
# (attn's documented choice; src/models/transformer.c says why).
POS_EMBEDDING_AMPLITUDE = 2.0

DEFAULTS = {
    "rnn": {"arch": "rnn", "vocab_size": 91, "embed_dim": 16, "hidden_size": 32, "n_layers": 1},
    "lstm": {"arch": "lstm", "vocab_size": 91, "embed_dim": 16, "hidden_size": 32, "n_layers": 1},
    "gru": {"arch": "gru", "vocab_size": 91, "embed_dim": 16, "hidden_size": 32, "n_layers": 1},
    "transformer": {"arch": "transformer", "vocab_size": 91, "embed_dim": 32, "n_heads": 2,
                    "ffn_dim": 64, "n_layers": 2, "max_len": 81, "norm": "pre",
                    "activation": "relu", "pos": "learned"},
}
POS_SCHEMES = ("learned", "sinusoidal", "none", "rope", "alibi")


def full_config(config):
    """The config with every field of its arch filled in from the defaults."""
    arch = config["arch"]
    if arch not in DEFAULTS:
        raise ValueError("unknown arch %r (expected rnn, lstm, gru or transformer)" % (arch,))
    c = dict(DEFAULTS[arch])
    for k, v in config.items():
        if k not in c:
            if k in ("hidden_size", "n_heads", "ffn_dim", "max_len", "norm", "activation", "pos"):
                continue  # fields of another arch are ignored, as in the C loader
            raise ValueError("unknown config key %r" % (k,))
        c[k] = v
    return c


class Recurrent(nn.Module):
    """Embedding -> nn.RNN (tanh), nn.LSTM or nn.GRU (num_layers = n_layers, the top layer's
    output is read) -> hidden state after word lengths[b] ->
    head. The recurrent module's attribute is the arch name (rnn, lstm, gru): state_dict keys
    "gru.weight_ih_l0" etc."""

    def __init__(self, config):
        super().__init__()
        self.config = full_config(config)
        c = self.config
        self.embedding = nn.Embedding(c["vocab_size"], c["embed_dim"])
        L = c["n_layers"]  # num_layers: layer l > 0 reads layer l-1's outputs ("rnn.weight_ih_l1")
        if c["arch"] == "rnn":
            self.rnn = nn.RNN(c["embed_dim"], c["hidden_size"], num_layers=L,
                              nonlinearity="tanh", batch_first=True)
        elif c["arch"] == "gru":
            self.gru = nn.GRU(c["embed_dim"], c["hidden_size"], num_layers=L, batch_first=True)
        else:
            self.lstm = nn.LSTM(c["embed_dim"], c["hidden_size"], num_layers=L, batch_first=True)
        self.head = nn.Linear(c["hidden_size"], 1)

    def forward(self, ids, lengths):
        x = self.embedding(ids)                                   # [B, T, E]
        cell = getattr(self, self.config["arch"])                 # rnn, lstm or gru
        out, _ = cell(x)                                          # [B, T, H]
        idx = (lengths.long() - 1).view(-1, 1, 1).expand(-1, 1, out.shape[2])
        last = out.gather(1, idx).squeeze(1)                      # [B, H]
        return self.head(last).squeeze(1)                         # [B]


def sinusoid_table(n_pos, dim, amplitude):
    """[n_pos, dim] float32: amplitude * sin(p / 10000^(2i/dim)) in column 2i, cos in 2i+1; each
    value computed in double and rounded once, in the same order as attn's C (src/models/model.c);
    tools/crosscheck.py checks that the two are bit-identical."""
    rows = []
    for p in range(n_pos):
        row = []
        for col in range(dim):
            angle = p / math.pow(10000.0, (col - col % 2) / dim)
            row.append(amplitude * (math.cos(angle) if col % 2 else math.sin(angle)))
        rows.append(row)
    return torch.tensor(rows, dtype=torch.float64).to(torch.float32)


def rope_table(n_pos, head_size):
    """(cos, sin), each [n_pos, head_size] float32: column i and HS/2 + i hold the cos (sin) of
    p / 10000^(2i/HS), computed in double and rounded once, as attn's C (transformer.c)."""
    h2 = head_size // 2
    cos, sin = [], []
    for p in range(n_pos):
        angles = [p / math.pow(10000.0, (2 * i) / head_size) for i in range(h2)]
        cos.append([math.cos(a) for a in angles] * 2)
        sin.append([math.sin(a) for a in angles] * 2)
    return (torch.tensor(cos, dtype=torch.float64).to(torch.float32),
            torch.tensor(sin, dtype=torch.float64).to(torch.float32))


def alibi_slopes(n_heads):
    """Press et al. 2022: 2^(-8(h+1)/NH) for NH a power of two; otherwise the n = 2^floor(log2 NH)
    slopes of n heads, then every other slope of 2n heads (2^(-8(2j+1)/2n)). Double, rounded."""
    n = 1
    while 2 * n <= n_heads:
        n *= 2
    e = [8.0 * (h + 1) / n if h < n else 8.0 * (2 * (h - n) + 1) / (2.0 * n)
         for h in range(n_heads)]
    return torch.tensor([math.pow(2.0, -x) for x in e], dtype=torch.float64).to(torch.float32)


def rotate_half(x):
    h2 = x.shape[-1] // 2
    return torch.cat([-x[..., h2:], x[..., :h2]], dim=-1)


class PosEncoderLayer(nn.TransformerEncoderLayer):
    """nn.TransformerEncoderLayer's parameters (same state_dict) with its forward written out, for
    positions inside the attention: "rope" rotates each head's q (after the bias and 1/sqrt(HS))
    and k at position p, "alibi" adds -slope_h * |i - j| to the scores ([CLS] is position 0).
    The steps follow attn's C order (the fused path's: in_proj GEMM without bias, then
    (q + b) * scale for an even head count; the Python path's addmm and q / sqrt(HS) for an odd
    one)."""

    def __init__(self, pos, max_len, **kw):
        super().__init__(**kw)
        self.pos = pos
        NH = kw["nhead"]
        HS = kw["d_model"] // NH
        if pos == "rope":
            cos, sin = rope_table(max_len, HS)
            self.register_buffer("rope_cos", cos, persistent=False)
            self.register_buffer("rope_sin", sin, persistent=False)
        else:
            self.register_buffer("slopes", alibi_slopes(NH), persistent=False)

    def _sa_block(self, x, attn_mask, key_padding_mask):
        B, S, D = x.shape
        NH = self.self_attn.num_heads
        HS = D // NH
        W, b = self.self_attn.in_proj_weight, self.self_attn.in_proj_bias
        root = torch.tensor(math.sqrt(HS), dtype=torch.float32)
        if NH % 2 == 0:
            qkv = torch.matmul(x, W.t())
            scale = (1.0 / root).item()
            q = (qkv[..., :D] + b[:D]) * scale
            k = qkv[..., D:2 * D] + b[D:2 * D]
            v = qkv[..., 2 * D:] + b[2 * D:]
        else:
            qkv = nn.functional.linear(x, W, b)
            q, k, v = qkv[..., :D] / root.item(), qkv[..., D:2 * D], qkv[..., 2 * D:]

        def heads(t):
            return t.reshape(B, S, NH, HS).transpose(1, 2).contiguous()  # [B, NH, S, HS]
        q, k, v = heads(q), heads(k), heads(v)
        if self.pos == "rope":
            cos, sin = self.rope_cos[:S], self.rope_sin[:S]
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
        scores = torch.matmul(q, k.transpose(-1, -2))                # [B, NH, S, S]
        if self.pos == "alibi":
            p = torch.arange(S)
            dist = (p.view(-1, 1) - p.view(1, -1)).abs().to(torch.float32)
            scores = scores + -(self.slopes.view(NH, 1, 1) * dist)
        if key_padding_mask is not None:
            scores = scores.masked_fill(key_padding_mask.view(B, 1, 1, S), float("-inf"))
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v)         # [B, NH, S, HS]
        # contiguous, as nn.MultiheadAttention makes it: with a head width of 1 the reshape
        # alone is a strided view, which F.linear computes as matmul + bias instead of addmm
        ctx = ctx.transpose(1, 2).contiguous().reshape(B, S, D)
        return self.self_attn.out_proj(ctx)

    def forward(self, src, src_mask=None, src_key_padding_mask=None):
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), None, src_key_padding_mask)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, None, src_key_padding_mask))
            x = self.norm2(x + self._ff_block(x))
        return x


class Transformer(nn.Module):
    """[CLS] + learned positions -> encoder layers -> (final norm) -> head on [CLS]."""

    def __init__(self, config):
        super().__init__()
        self.config = full_config(config)
        c = self.config
        D = c["embed_dim"]
        if c["pos"] not in POS_SCHEMES:
            raise ValueError("unknown pos %r (expected learned, sinusoidal, none, rope or alibi)"
                             % (c["pos"],))
        if c["pos"] == "learned":
            self.pos_embedding = nn.Parameter(
                sinusoid_table(c["max_len"], D, POS_EMBEDDING_AMPLITUDE))
        elif c["pos"] == "sinusoidal":
            self.register_buffer("pos_table", sinusoid_table(c["max_len"], D, 1.0),
                                 persistent=False)
        self.embedding = nn.Embedding(c["vocab_size"], D)
        kw = dict(d_model=D, nhead=c["n_heads"], dim_feedforward=c["ffn_dim"], dropout=0.0,
                  activation=c["activation"], batch_first=True, norm_first=(c["norm"] == "pre"))
        if c["pos"] in ("rope", "alibi"):
            self.layers = nn.ModuleList([PosEncoderLayer(c["pos"], c["max_len"], **kw)
                                         for _ in range(c["n_layers"])])
        else:
            self.layers = nn.ModuleList([nn.TransformerEncoderLayer(**kw)
                                         for _ in range(c["n_layers"])])
        self.norm = nn.LayerNorm(D) if c["norm"] == "pre" else None
        self.head = nn.Linear(D, 1)

    def forward(self, ids, lengths):
        B, T = ids.shape
        cls = torch.full((B, 1), CLS_ID, dtype=ids.dtype, device=ids.device)
        x = self.add_positions(self.embedding(torch.cat([cls, ids], dim=1)))
        lengths = lengths.long()
        mask = None  # no mask at all when nothing is padded (the exact batch-1 protocol)
        if bool((lengths < T).any()):
            pos = torch.arange(T + 1, device=ids.device).view(1, -1)
            mask = pos > lengths.view(-1, 1)                      # [B, T+1], True = padded
        for layer in self.layers:
            x = layer(x, src_key_padding_mask=mask)
        if self.norm is not None:
            x = self.norm(x)
        return self.head(x[:, 0]).squeeze(1)                      # [B]


    def add_positions(self, x):
        """x [B, S, D] + the position rows of the scheme (one float add), or x itself."""
        S = x.shape[1]
        if self.config["pos"] == "learned":
            return x + self.pos_embedding[:S]
        if self.config["pos"] == "sinusoidal":
            return x + self.pos_table[:S]
        return x


def build(config):
    """The reference module for a config dict (keys as in attn-weights-v1 "config")."""
    c = full_config(config)
    return Transformer(c) if c["arch"] == "transformer" else Recurrent(c)


def n_params(model):
    return sum(p.numel() for p in model.parameters())


def _self_test():
    torch.manual_seed(0)
    want = {"rnn": 3089, "lstm": 7889, "gru": 6289, "transformer": 22689}
    for arch, n in want.items():
        m = build({"arch": arch}).eval()
        assert n_params(m) == n, (arch, n_params(m), n)
        ids = torch.tensor([[5, 9, 12, 0], [7, 8, 3, 4]])
        lengths = torch.tensor([3, 4])
        with torch.no_grad():
            both = m(ids, lengths)
            one = m(ids[:1, :3], lengths[:1])
        assert both.shape == (2,)
        assert torch.allclose(both[0], one[0], atol=1e-5), (arch, both, one)
        print("%s: %d parameters, padding-invariant: ok" % (arch, n))
    m = build({"arch": "transformer", "norm": "post"})
    assert n_params(m) == 22689 - 64 and "norm.weight" not in m.state_dict()
    keys = list(build({"arch": "transformer"}).state_dict())
    assert keys[0] == "pos_embedding" and keys[1] == "embedding.weight", keys[:2]
    assert keys[-4:] == ["norm.weight", "norm.bias", "head.weight", "head.bias"], keys[-4:]
    print("state_dict order: ok")
    for pos in ("rope", "alibi"):
        for NH in (2, 3):
            m = build({"arch": "transformer", "pos": pos, "n_heads": NH, "embed_dim": 12 * NH // 2 * 2}).eval()
            assert set(m.state_dict()) == set(build({"arch": "transformer", "pos": "none", "n_heads": NH, "embed_dim": 12 * NH // 2 * 2}).state_dict())
            ids = torch.tensor([[5, 9, 12, 0], [7, 8, 3, 4]])
            with torch.no_grad():
                both = m(ids, torch.tensor([3, 4]))
                one = m(ids[:1, :3], torch.tensor([3]))
            assert torch.allclose(both[0], one[0], atol=1e-5), (pos, both, one)
    assert torch.allclose(alibi_slopes(8), torch.tensor([2.0 ** -(h + 1) for h in range(8)]))
    print("rope, alibi: state_dict as none, padding-invariant: ok")


if __name__ == "__main__":
    import argparse
    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Run alone, it self-tests the modules (state_dict names and order, shapes).\n"
               "Exit codes: 0 self-test passed, 1 it failed (AssertionError), 2 usage error."
    ).parse_args()
    _self_test()

#!/usr/bin/python3
"""attn_models.py -- the PyTorch reference modules of attn (the source of truth for goldens).

rnn:         Embedding(V,E) -> nn.RNN(E,H,tanh) -> h after each sentence's last word -> Linear(H,1)
lstm:        Embedding(V,E) -> nn.LSTM(E,H)     -> same                               -> Linear(H,1)
gru:         Embedding(V,E) -> nn.GRU(E,H)      -> same                               -> Linear(H,1)
transformer: [CLS]=1 + ids -> Embedding(V,D) + positions[:T+1] -> L x TransformerEncoderLayer
             (NH heads, F, dropout 0, relu|gelu, norm_first for "pre") -> LayerNorm "norm" (pre
             only) -> Linear(D,1) on position 0. Positions ("pos"): "learned" = the parameter
             pos_embedding; "sinusoidal" = the fixed unscaled table, a non-persistent buffer
             (not in the state_dict); "none" = nothing added.
forward(ids [B,T] long, lengths [B] long) -> logits [B]. Padded positions hold 0 ([PAD]).
Run with /usr/bin/python3 (Debian torch 1.13). `attn_models.py` alone runs a self-test.
"""
import math

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
POS_SCHEMES = ("learned", "sinusoidal", "none")


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


class Transformer(nn.Module):
    """[CLS] + learned positions -> encoder layers -> (final norm) -> head on [CLS]."""

    def __init__(self, config):
        super().__init__()
        self.config = full_config(config)
        c = self.config
        D = c["embed_dim"]
        if c["pos"] not in POS_SCHEMES:
            raise ValueError("unknown pos %r (expected learned, sinusoidal or none)" % (c["pos"],))
        if c["pos"] == "learned":
            self.pos_embedding = nn.Parameter(
                sinusoid_table(c["max_len"], D, POS_EMBEDDING_AMPLITUDE))
        elif c["pos"] == "sinusoidal":
            self.register_buffer("pos_table", sinusoid_table(c["max_len"], D, 1.0),
                                 persistent=False)
        self.embedding = nn.Embedding(c["vocab_size"], D)
        self.layers = nn.ModuleList([
            nn.TransformerEncoderLayer(d_model=D, nhead=c["n_heads"],
                                       dim_feedforward=c["ffn_dim"], dropout=0.0,
                                       activation=c["activation"], batch_first=True,
                                       norm_first=(c["norm"] == "pre"))
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


if __name__ == "__main__":
    import argparse
    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Run alone, it self-tests the modules (state_dict names and order, shapes).\n"
               "Exit codes: 0 self-test passed, 1 it failed (AssertionError), 2 usage error."
    ).parse_args()
    _self_test()

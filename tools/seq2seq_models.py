#!/usr/bin/python3
"""seq2seq_models.py -- the PyTorch reference of attn's seq2seq models, and their weights files.

seq2seq-transformer: src_embedding(src) + src positions -> nn.Transformer (encoder layers,
encoder.norm, decoder layers with the causal tgt_mask, decoder.norm; dropout 0, batch_first,
norm_first for "pre") <- tgt_embedding([BOS] + target) + tgt positions -> head Linear(D, Vt).
Positions ("pos"): "learned" = parameters src_pos_embedding [max_src_len, D] and
tgt_pos_embedding [max_tgt_len, D] (initialised with the sinusoid table times 2, as attn does);
"sinusoidal" = the fixed unscaled table, a non-persistent buffer; "none" = nothing added;
"rope" and "alibi" act inside the self-attentions (tools/seq2seq_pos.py: the classifier's
PosEncoderLayer, PosDecoderLayer; no tensor of their own). Run it in eval mode under torch.no_grad() (the encoder layers then take PyTorch's fast path,
which attn follows; the decoder layers have none).

seq2seq-gru / seq2seq-attn (Seq2SeqRNN, hand-written from nn.GRU, nn.GRUCell and nn.Linear):
the source embedding -> nn.GRU encoder (one layer; bidirectional for seq2seq-attn unless
"bidirectional" is 0) over the source as one [S, 1, E] sequence; the decoder state starts as
the forward direction's state after the last word; then per target token an nn.GRUCell step:
  seq2seq-gru:  s_t = decoder(tgt_embedding(y_t), s_{t-1});  logits_t = head(s_t)
  seq2seq-attn: q = attention.query(s_{t-1}); e = tanh(keys + q), keys = attention.key(enc)
                computed once; alpha = softmax(attention.energy(e) viewed [1, S]);
                c_t = mm(alpha, enc); s_t = decoder(cat(emb, c_t), s_{t-1});
                logits_t = head(cat(s_t, c_t))
The decoder is stepped one token at a time (batch 1, [1, .] rows) in teacher forcing too, so the
teacher-forced logits, the recomputing loop and the incremental one are the same computation.

Weights: {"format": "attn-seq2seq-weights-v1", "config": {...}, "tensors": {key: {"shape",
"data"}}} -- export() writes one, load() reads one into a fresh module with
load_state_dict(strict=True).

    seq2seq_models.py export PATH [--seed S] [--perturb] [--arch A]   fresh weights -> PATH
    seq2seq_models.py check PATH                           strict load, print a summary
"""
import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import blas_core  # noqa: E402,F401 -- before torch: attn's OpenBLAS kernels
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

import attn_models  # noqa: E402
import seq2seq_pos  # noqa: E402
from attn_rng import Rng  # noqa: E402
from seq2seq_sampling import sample_step  # noqa: E402
import weights_json  # noqa: E402

FORMAT = "attn-seq2seq-weights-v1"
N_WORDS_VOCAB = 91                # attn's built-in vocabulary (ATTN_VOCAB_SIZE)
BOS, EOS = N_WORDS_VOCAB, N_WORDS_VOCAB + 1
DEFAULT = {"arch": "seq2seq-transformer", "src_vocab": N_WORDS_VOCAB,
           "tgt_vocab": N_WORDS_VOCAB + 4, "d_model": 32, "n_heads": 2, "ffn_dim": 64,
           "enc_layers": 2, "dec_layers": 2, "max_src_len": 80, "max_tgt_len": 16,
           "norm": "pre", "activation": "relu", "pos": "learned"}
RNN_DEFAULT = {"arch": "seq2seq-gru", "src_vocab": N_WORDS_VOCAB, "tgt_vocab": N_WORDS_VOCAB + 4,
               "d_model": 32, "hidden_size": 64, "bidirectional": 0, "max_src_len": 80,
               "max_tgt_len": 16}
RNN_ARCHS = ("seq2seq-gru", "seq2seq-attn")


def set_vocab_size(n):
    """attn's built-in vocabulary size (`attn vocab`), when it is not 91: the target tokens
    [BOS], [EOS], positive, negative follow it."""
    global N_WORDS_VOCAB, BOS, EOS
    N_WORDS_VOCAB, BOS, EOS = n, n, n + 1
    DEFAULT["src_vocab"], DEFAULT["tgt_vocab"] = n, n + 4
    RNN_DEFAULT["src_vocab"], RNN_DEFAULT["tgt_vocab"] = n, n + 4


def full_config(config):
    if config.get("arch") in RNN_ARCHS:
        c = dict(RNN_DEFAULT, bidirectional=int(config["arch"] == "seq2seq-attn"))
    else:
        c = dict(DEFAULT)
    for k, v in config.items():
        if k not in c and k != "task":  # "task": what attn trained it on (absent: rewrite)
            raise ValueError("unknown config key %r" % (k,))
        c[k] = v
    return c


class Seq2SeqTransformer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = c = full_config(config)
        D = c["d_model"]
        if c["pos"] == "learned":
            self.src_pos_embedding = nn.Parameter(
                attn_models.sinusoid_table(c["max_src_len"], D, 2.0))
            self.tgt_pos_embedding = nn.Parameter(
                attn_models.sinusoid_table(c["max_tgt_len"], D, 2.0))
        elif c["pos"] == "sinusoidal":
            self.register_buffer("src_table", attn_models.sinusoid_table(c["max_src_len"], D, 1.0),
                                 persistent=False)
            self.register_buffer("tgt_table", attn_models.sinusoid_table(c["max_tgt_len"], D, 1.0),
                                 persistent=False)
        elif c["pos"] not in attn_models.POS_SCHEMES:
            raise ValueError("unknown pos %r" % c["pos"])
        self.src_embedding = nn.Embedding(c["src_vocab"], D)
        self.tgt_embedding = nn.Embedding(c["tgt_vocab"], D)
        if c["pos"] in ("rope", "alibi"):
            self.transformer = seq2seq_pos.transformer(c)
        else:
            self.transformer = nn.Transformer(
                d_model=D, nhead=c["n_heads"], num_encoder_layers=c["enc_layers"],
                num_decoder_layers=c["dec_layers"], dim_feedforward=c["ffn_dim"], dropout=0.0,
                activation=c["activation"], batch_first=True, norm_first=c["norm"] == "pre")
        self.head = nn.Linear(D, c["tgt_vocab"])

    def _positions(self, side, n):
        if self.config["pos"] == "learned":
            return getattr(self, side + "_pos_embedding")[:n]
        if self.config["pos"] == "sinusoidal":
            return getattr(self, side + "_table")[:n]
        return None

    def embed(self, side, ids):
        """ids [B, n] -> embedding + positions (one float add, as attn)."""
        x = getattr(self, side + "_embedding")(ids)
        p = self._positions(side, ids.shape[1])
        return x if p is None else x + p

    def encode(self, src):
        return self.transformer.encoder(self.embed("src", src))

    def decode(self, memory, tgt, mask="float"):
        """Logits [B, T, Vt] of decoder input tgt [B, T] with the causal mask as a float -inf
        mask (nn.Transformer.generate_square_subsequent_mask) or a bool mask (True = hidden)."""
        T = tgt.shape[1]
        if mask == "float":
            m = nn.Transformer.generate_square_subsequent_mask(T)
        else:
            m = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        y = self.transformer.decoder(self.embed("tgt", tgt), memory, tgt_mask=m)
        return self.head(y)

    def forward(self, src, tgt, mask="float"):
        """nn.Transformer.forward itself (encoder, decoder, both norms) between the embeddings
        and the head."""
        T = tgt.shape[1]
        m = (nn.Transformer.generate_square_subsequent_mask(T) if mask == "float"
             else torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1))
        y = self.transformer(self.embed("src", src), self.embed("tgt", tgt), tgt_mask=m)
        return self.head(y)


class AdditiveAttention(nn.Module):
    """Bahdanau et al. 2015: score_j = energy . tanh(query(s) + key(h_j))."""

    def __init__(self, H, He):
        super().__init__()
        self.query = nn.Linear(H, H, bias=False)
        self.key = nn.Linear(He, H)
        self.energy = nn.Linear(H, 1, bias=False)

    def forward(self, s, enc, keys):
        """s [1, H], enc [S, He], keys [S, A] -> (context [1, He], alpha [1, S])."""
        e = torch.tanh(keys + self.query(s))
        alpha = torch.softmax(self.energy(e).view(1, -1), dim=1)
        return torch.mm(alpha, enc), alpha


class Seq2SeqRNN(nn.Module):
    """seq2seq-gru and seq2seq-attn (the module docstring)."""

    def __init__(self, config):
        super().__init__()
        self.config = c = full_config(config)
        self.attn = c["arch"] == "seq2seq-attn"
        if not self.attn and c["bidirectional"]:
            raise ValueError("seq2seq-gru has a unidirectional encoder")
        E, H, bi = c["d_model"], c["hidden_size"], bool(c["bidirectional"])
        He = H * (2 if bi else 1)
        self.src_embedding = nn.Embedding(c["src_vocab"], E)
        self.encoder = nn.GRU(E, H, bidirectional=bi)
        self.tgt_embedding = nn.Embedding(c["tgt_vocab"], E)
        if self.attn:
            self.attention = AdditiveAttention(H, He)
        self.decoder = nn.GRUCell(E + (He if self.attn else 0), H)
        self.head = nn.Linear(H + (He if self.attn else 0), c["tgt_vocab"])

    def encode(self, src):
        """src [1, S] -> (encoder states [S, He], keys [S, A] or None, s_0 [1, H])."""
        out, h_n = self.encoder(self.src_embedding(src[0]).unsqueeze(1))
        enc = out[:, 0]
        return enc, self.attention.key(enc) if self.attn else None, h_n[0]

    def step(self, memory, s, token):
        """One decoder step: (logits [1, Vt], s_t [1, H], alpha [1, S] or None)."""
        enc, keys, _ = memory
        x = self.tgt_embedding(torch.tensor([token]))
        alpha = None
        if self.attn:
            ctx, alpha = self.attention(s, enc, keys)
            x = torch.cat([x, ctx], 1)
        s = self.decoder(x, s)
        o = torch.cat([s, ctx], 1) if self.attn else s
        return self.head(o), s, alpha

    def decode(self, memory, tgt, mask=None, alignment=None):
        """Logits [1, T, Vt] of decoder input tgt [1, T] (mask: unused, no self-attention);
        alignment, a list, receives each step's alpha."""
        s, rows = memory[2], []
        for token in tgt[0].tolist():
            logits, s, alpha = self.step(memory, s, token)
            rows.append(logits)
            if alignment is not None and alpha is not None:
                alignment.append(alpha)
        return torch.cat(rows, 0).unsqueeze(0)

    def forward(self, src, tgt, mask=None):
        return self.decode(self.encode(src), tgt)


class RNNStepper:
    """The incremental decoder of Seq2SeqRNN: the state is the cache."""

    def __init__(self, model, memory):
        self.m, self.memory, self.s = model, memory, memory[2]

    def step(self, token, pos):
        logits, self.s, _ = self.m.step(self.memory, self.s, token)
        return logits[0]


def build(config):
    if config.get("arch") in RNN_ARCHS:
        return Seq2SeqRNN(config)
    return Seq2SeqTransformer(config)


def incremental(model, src):
    """The cached decoder of model for source src (a list): step(token, pos) -> logits [Vt]."""
    memory = model.encode(torch.tensor([src]))
    if isinstance(model, Seq2SeqRNN):
        return RNNStepper(model, memory)
    return CachedDecoder(model, memory[0])


def perturb(model, gen, scale=0.1):
    """Adds N(0, scale^2) noise to every parameter: zero-initialised biases and unit norms
    would leave paths of the arithmetic unexercised."""
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * scale)


def export(model, path):
    parts = ['{"format": "%s",\n"config": %s,\n"tensors": {\n' % (FORMAT, json.dumps(model.config))]
    items = list(model.state_dict().items())
    parts.append(",\n".join(weights_json.tensor_text(k, v) for k, v in items))
    parts.append("}}\n")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("".join(parts))
    os.replace(tmp, path)


def load(path):
    with open(path) as f:
        doc = json.load(f)
    if doc.get("format") != FORMAT:
        raise ValueError("%s: format %r, expected %r" % (path, doc.get("format"), FORMAT))
    model = build(doc["config"])
    state = {}
    for k, t in doc["tensors"].items():
        if "data_b64" in t:
            import base64
            import numpy as np
            a = np.frombuffer(base64.b64decode(t["data_b64"]), dtype="<f4").copy()
            state[k] = torch.from_numpy(a).view(t["shape"])
        else:
            state[k] = torch.tensor(t["data"], dtype=torch.float32).view(t["shape"])
    model.load_state_dict(state, strict=True)
    return model.eval()


def choose(logits, step, min_out=0):
    """The greedy choice of attn_seq2seq_greedy_min: torch.argmax, with [EOS]'s logit set to
    -inf (on a copy) at the first min_out steps (`attn generate --min-len N`)."""
    if step < min_out:
        logits = logits.clone()
        logits[EOS] = -math.inf
    return int(torch.argmax(logits))


def greedy(model, src, max_out, mask="float", min_out=0):
    """PyTorch's greedy loop: the decoder recomputed over [BOS] + the words so far at every step
    (the encoder once); [EOS] out of the argmax at the first min_out steps (choose). Returns
    (tokens, per-step logits [float32 tensors])."""
    with torch.no_grad():
        memory = model.encode(torch.tensor([src]))
        prefix, steps = [BOS], []
        while len(prefix) - 1 < max_out:
            logits = model.decode(memory, torch.tensor([prefix]), mask)[0, -1]
            steps.append(logits.clone())
            nxt = choose(logits, len(steps) - 1, min_out)
            if nxt == EOS:
                break
            prefix.append(nxt)
        return prefix[1:], steps


def _split(x, NH):
    """[n, D] -> [NH, n, HS] (contiguous), as attn's head-major layout."""
    n, D = x.shape
    return x.view(n, NH, D // NH).transpose(0, 1).contiguous()


def _attend(q, k, v, bias=None):
    """q [NH, nq, HS] (already divided), k, v [NH, nk, HS] -> [nq, D]: bmm, (+ bias), softmax,
    bmm."""
    s = torch.bmm(q, k.transpose(1, 2))
    p = torch.softmax(s if bias is None else s + bias, dim=-1)
    o = torch.bmm(p, v)
    return o.transpose(0, 1).reshape(q.shape[1], -1)


def _ff(layer, x):
    return layer.linear2(layer.activation(layer.linear1(x)))


class BatchCachedDecoder:
    """A hand-written incremental decoder with attn's KV-cache shapes (not nn.Transformer's
    code, which has no cache) for n sequences stepped together, each with its own memory
    [S_i, D] (attn_seq2seq_greedy_batch): per layer and step one new row per live sequence,
    x [n, D]; the self-attention q, k, v from one [n, 3D] Linear, row r's k and v appended to
    its layer cache [NH, t+1, HS]; each memory's k, v from one [S_i, 2D] Linear computed once;
    q / sqrt(HS) as a true division; per row bmm, softmax, bmm over its own cache and memory;
    out_proj, LayerNorms, the feed-forward and the head on the n rows together, in
    nn.TransformerDecoderLayer's order (pre or post). pos rope: the new rows' q and k rotated at
    their position before k is cached; alibi: the bias row of the position added to the scores
    (seq2seq_pos). keep(rows) drops the other sequences (finished ones) from the next steps.
    n = 1 (CachedDecoder) is attn's one-source cached decoder."""

    def __init__(self, model, memories):
        self.m, self.c = model, model.config
        D, NH = self.c["d_model"], self.c["n_heads"]
        self.root = math.sqrt(D // NH)
        self.cross, self.k, self.v = [], [], []  # [layer][row]
        for layer in model.transformer.decoder.layers:
            w, b = layer.multihead_attn.in_proj_weight, layer.multihead_attn.in_proj_bias
            rows = []
            for memory in memories:
                kv = torch.nn.functional.linear(memory, w[D:], b[D:])
                rows.append((_split(kv[:, :D], NH), _split(kv[:, D:], NH)))
            self.cross.append(rows)
            self.k.append([None] * len(memories))
            self.v.append([None] * len(memories))

    def keep(self, rows):
        """Only the sequences at these row indices (in this order) step from now on."""
        for i in range(len(self.cross)):
            self.cross[i] = [self.cross[i][r] for r in rows]
            self.k[i] = [self.k[i][r] for r in rows]
            self.v[i] = [self.v[i][r] for r in rows]

    def _sa(self, i, layer, x):
        D, NH = self.c["d_model"], self.c["n_heads"]
        a = layer.self_attn
        qkv = torch.nn.functional.linear(x, a.in_proj_weight, a.in_proj_bias)
        t, pos, bias, out = self.t, self.c["pos"], None, []
        if pos == "alibi":
            bias = seq2seq_pos.alibi(layer.slopes, t, 1, t + 1)
        for r in range(x.shape[0]):
            q = _split(qkv[r:r + 1, :D], NH) / self.root
            k, v = _split(qkv[r:r + 1, D:2 * D], NH), _split(qkv[r:r + 1, 2 * D:], NH)
            if pos == "rope":
                cos, sin = layer.rope_cos[t:t + 1], layer.rope_sin[t:t + 1]
                q, k = seq2seq_pos.rotate(q, cos, sin), seq2seq_pos.rotate(k, cos, sin)
            ck, cv = self.k[i][r], self.v[i][r]
            self.k[i][r] = k if ck is None else torch.cat([ck, k], dim=1)
            self.v[i][r] = v if cv is None else torch.cat([cv, v], dim=1)
            out.append(_attend(q, self.k[i][r], self.v[i][r], bias))
        return a.out_proj(torch.cat(out, 0))

    def _ca(self, i, layer, x):
        D, NH = self.c["d_model"], self.c["n_heads"]
        a = layer.multihead_attn
        q = torch.nn.functional.linear(x, a.in_proj_weight[:D], a.in_proj_bias[:D])
        out = [_attend(_split(q[r:r + 1], NH) / self.root, *self.cross[i][r])
               for r in range(x.shape[0])]
        return a.out_proj(torch.cat(out, 0))

    def step_rows(self, tokens, pos):
        """Logits [n, Vt] of the next word after tokens[r] at decoder position pos, per live
        sequence r."""
        self.t = pos
        x = self.m.tgt_embedding(torch.tensor(tokens))  # [n, D], then the row of position pos
        p = self.m._positions("tgt", pos + 1)
        if p is not None:
            x = x + p[pos:pos + 1]
        pre = self.c["norm"] == "pre"
        for i, layer in enumerate(self.m.transformer.decoder.layers):
            blocks = ((layer.norm1, lambda h: self._sa(i, layer, h)),
                      (layer.norm2, lambda h: self._ca(i, layer, h)),
                      (layer.norm3, lambda h: _ff(layer, h)))
            for norm, f in blocks:
                x = x + f(norm(x)) if pre else norm(x + f(x))
        x = self.m.transformer.decoder.norm(x)
        return self.m.head(x)


class CachedDecoder(BatchCachedDecoder):
    """BatchCachedDecoder of one sequence: step(token, pos) -> logits [Vt]."""

    def __init__(self, model, memory):
        super().__init__(model, [memory])

    def step(self, token, pos):
        """Logits [Vt] of the next word after `token` at decoder position pos."""
        return self.step_rows([token], pos)[0]


def greedy_cached(model, src, max_out, min_out=0):
    """Greedy decoding with CachedDecoder (choose's rule): (tokens, per-step logits)."""
    with torch.no_grad():
        dec = incremental(model, src)
        out, steps, token = [], [], BOS
        while len(out) < max_out:
            logits = dec.step(token, len(out))
            steps.append(logits.clone())
            token = choose(logits, len(steps) - 1, min_out)
            if token == EOS:
                break
            out.append(token)
        return out, steps


def greedy_batch(model, sources, max_out, min_out=0):
    """attn_seq2seq_greedy_batch: the sources (lists of ids) encoded one by one, then decoded
    together on a BatchCachedDecoder, a sequence that chose [EOS] or has max_out words leaving
    the step. Returns [(tokens, per-step logits)] per source, in order."""
    with torch.no_grad():
        memories = [model.encode(torch.tensor([s]))[0] for s in sources]
        dec = BatchCachedDecoder(model, memories)
        res = [([], []) for _ in sources]
        live = list(range(len(sources))) if max_out > 0 else []
        tokens, pos = [BOS] * len(sources), 0
        while live:
            logits = dec.step_rows(tokens, pos)
            keep, nxt = [], []
            for r, i in enumerate(live):
                res[i][1].append(logits[r].clone())
                token = choose(logits[r], pos, min_out)
                if token == EOS:
                    continue
                res[i][0].append(token)
                if len(res[i][0]) < max_out:
                    keep.append(r)
                    nxt.append(token)
            dec.keep(keep)
            live, tokens, pos = [live[r] for r in keep], nxt, pos + 1
        return res


def beam(model, src, max_out, k):
    """attn's beam search (src/models/seq2seq_beam.c), step for step: returns (words, normalised
    score). Every hypothesis's distribution is the last row of nn.Transformer's forward of its
    prefix; log_softmax in Python floats (double) in attn's order."""
    V = model.config["tgt_vocab"]
    with torch.no_grad():
        memory = model.encode(torch.tensor([src]))
        live, best, best_words = [([BOS], 0.0)], -math.inf, None
        while live:
            cands = []
            for h, (prefix, score) in enumerate(live):
                x = model.decode(memory, torch.tensor([prefix]))[0, -1].tolist()
                m = x[0]
                for v in x[1:]:
                    m = v if v > m else m
                z = 0.0
                for v in x:
                    z += math.exp(v - m)
                lz = math.log(z)
                for v in range(V):
                    if len(prefix) - 1 < max_out or v == EOS:
                        cands.append((score + ((x[v] - m) - lz), h, v))
            cands.sort(key=lambda c: (-c[0], c[1], c[2]))
            nxt = []
            for s, h, v in cands[:k]:
                prefix = live[h][0]
                if v == EOS:
                    norm = s / (len(prefix) - 1 + 1)
                    if norm > best:
                        best, best_words = norm, prefix[1:]
                    continue
                nxt.append((prefix + [v], s))
            live = nxt
        return best_words, best


def sample(model, src, max_out, temperature=1.0, top_k=0, top_p=1.0, seed=1, cache=True):
    """Sampled decoding as `attn generate --temperature T --top-k K --top-p P --seed S`: on the
    incremental decoder (cache) or nn.Transformer's recomputing loop. Returns the words."""
    rng = Rng(seed)
    with torch.no_grad():
        memory = model.encode(torch.tensor([src]))
        dec = incremental(model, src) if cache else None
        out, token = [], BOS
        while len(out) < max_out:
            if cache:
                logits = dec.step(token, len(out))
            else:
                logits = model.decode(memory, torch.tensor([[BOS] + out]))[0, -1]
            token = sample_step(logits.tolist(), temperature, top_k, top_p, rng)
            if token == EOS:
                break
            out.append(token)
        return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export")
    e.add_argument("path")
    e.add_argument("--seed", type=int, default=1)
    e.add_argument("--perturb", action="store_true")
    e.add_argument("--arch", default="seq2seq-transformer",
                   choices=["seq2seq-transformer"] + list(RNN_ARCHS))
    c = sub.add_parser("check")
    c.add_argument("path")
    a = ap.parse_args()
    if a.cmd == "export":
        torch.manual_seed(a.seed)
        m = build({} if a.arch == "seq2seq-transformer" else {"arch": a.arch})
        if a.perturb:
            perturb(m, torch.Generator().manual_seed(a.seed + 1))
        export(m, a.path)
    else:
        m = load(a.path)
        n = sum(p.numel() for p in m.parameters())
        print("%s: %s, %d parameters, strict load ok" % (a.path, m.config["arch"], n))


if __name__ == "__main__":
    main()

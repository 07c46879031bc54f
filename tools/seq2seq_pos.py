#!/usr/bin/python3
"""seq2seq_pos.py -- rope and alibi for the seq2seq-transformer reference (seq2seq_models.py).

nn.Transformer has neither scheme, so a "rope" or "alibi" model's layers are written out:
  encoder layers: attn_models.PosEncoderLayer, the classifier's own reference layer (the same
      state_dict as nn.TransformerEncoderLayer; rope rotates q and k at positions 0..S-1 of the
      source, alibi adds -slope_h * |i - j|), used as is;
  decoder layers: PosDecoderLayer below, nn.TransformerDecoderLayer's parameters and forward
      with the masked self-attention written out as F.multi_head_attention_forward computes it
      (one packed [3D, D] Linear with bias, q / sqrt(HS), baddbmm(mask, q, k^T), softmax over
      the full row, bmm, out_proj), plus the classifier's position steps: rope rotates q (after
      the division) and k of target row t at position t with attn_models.rope_table and
      rotate_half; alibi adds attn_models.alibi_slopes' bias -(slope_h * |i - j|) to the masked
      scores, as PosEncoderLayer adds it (the mask leaves j <= i: -slope_h * (i - j)).
      Cross-attention is nn.TransformerDecoderLayer's own, untouched: its queries and keys come
      from two different sequences, so no position term is added there.
The incremental decoder (seq2seq_models.CachedDecoder) uses rotate() and alibi() for its one
new row at position t: its key rotated at t before it is cached, the bias row of position t.
"""
import math

import torch
import torch.nn as nn

import attn_models


def rotate(x, cos, sin):
    """x [..., n, HS] rotated by the rows cos, sin [n, HS] (GPT-NeoX halves, as the classifier)."""
    return x * cos + attn_models.rotate_half(x) * sin


def alibi(slopes, q_pos, n_q, n_k):
    """[NH, n_q, n_k] = -(slope_h * |i - j|), query row r at position q_pos + r, key j at j."""
    i = torch.arange(q_pos, q_pos + n_q).view(-1, 1)
    dist = (i - torch.arange(n_k).view(1, -1)).abs().to(torch.float32)
    return -(slopes.view(-1, 1, 1) * dist)


def add_tables(module, pos, max_len, n_heads, head_size):
    """The non-persistent buffers of a scheme: rope's cos and sin [max_len, HS], alibi's slopes."""
    if pos == "rope":
        cos, sin = attn_models.rope_table(max_len, head_size)
        module.register_buffer("rope_cos", cos, persistent=False)
        module.register_buffer("rope_sin", sin, persistent=False)
    else:
        module.register_buffer("slopes", attn_models.alibi_slopes(n_heads), persistent=False)


class PosDecoderLayer(nn.TransformerDecoderLayer):
    """nn.TransformerDecoderLayer (same state_dict) whose masked self-attention applies rope or
    alibi (the module docstring)."""

    def __init__(self, pos, max_len, **kw):
        super().__init__(**kw)
        self.pos = pos
        add_tables(self, pos, max_len, kw["nhead"], kw["d_model"] // kw["nhead"])

    def _sa_block(self, x, attn_mask, key_padding_mask):
        B, T, D = x.shape
        a = self.self_attn
        NH = a.num_heads
        HS = D // NH
        qkv = nn.functional.linear(x.reshape(B * T, D), a.in_proj_weight, a.in_proj_bias)

        def heads(t):  # [B*T, D] -> [B*NH, T, HS]
            return t.reshape(B, T, NH, HS).transpose(1, 2).reshape(B * NH, T, HS)
        q = heads(qkv[:, :D]) / math.sqrt(HS)
        k, v = heads(qkv[:, D:2 * D]), heads(qkv[:, 2 * D:])
        if self.pos == "rope":
            q = rotate(q, self.rope_cos[:T], self.rope_sin[:T])
            k = rotate(k, self.rope_cos[:T], self.rope_sin[:T])
        if attn_mask is not None and attn_mask.dtype == torch.bool:  # as F.multi_head_attention_forward
            m = torch.zeros_like(attn_mask, dtype=q.dtype)
            attn_mask = m.masked_fill_(attn_mask, float("-inf"))
        if attn_mask is not None:
            scores = torch.baddbmm(attn_mask.unsqueeze(0), q, k.transpose(1, 2))
        else:
            scores = torch.bmm(q, k.transpose(1, 2))
        if self.pos == "alibi":
            scores = (scores.view(B, NH, T, T) + alibi(self.slopes, 0, T, T)).view(B * NH, T, T)
        ctx = torch.bmm(torch.softmax(scores, dim=-1), v)                 # [B*NH, T, HS]
        ctx = ctx.view(B, NH, T, HS).transpose(1, 2).contiguous().view(B * T, D)
        return nn.functional.linear(ctx, a.out_proj.weight, a.out_proj.bias).view(B, T, D)


def transformer(c):
    """nn.Transformer for config c whose layers are PosEncoderLayer and PosDecoderLayer (pos rope
    or alibi); the state_dict keys are nn.Transformer's."""
    D = c["d_model"]
    kw = dict(d_model=D, nhead=c["n_heads"], dim_feedforward=c["ffn_dim"], dropout=0.0,
              activation=c["activation"], batch_first=True, norm_first=c["norm"] == "pre")
    enc = nn.TransformerEncoder(attn_models.PosEncoderLayer(c["pos"], c["max_src_len"], **kw),
                                c["enc_layers"], norm=nn.LayerNorm(D))
    dec = nn.TransformerDecoder(PosDecoderLayer(c["pos"], c["max_tgt_len"], **kw),
                                c["dec_layers"], norm=nn.LayerNorm(D))
    return nn.Transformer(d_model=D, nhead=c["n_heads"], dim_feedforward=c["ffn_dim"],
                          dropout=0.0, activation=c["activation"], batch_first=True,
                          norm_first=c["norm"] == "pre", custom_encoder=enc, custom_decoder=dec)

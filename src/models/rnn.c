/* rnn.c -- Elman RNN cell, nn.RNN(E, H, nonlinearity="tanh"): h' = tanh((h.W_hh^T + b_hh) +
 * (x.W_ih^T + b_ih)). The sequence loop, padding, embedding, input projection and head are
 * the recurrent core's (recurrent.c); this file holds the spec name and one step.
 *
 * Numerics (docs/numerics.md): one float add of the precomputed input term to the hh GEMM
 * (b_hh pre-filled), then Sleef tanh on every element, so batch-1 logits match PyTorch. */
#include "model_internal.h"

#include "attn_kernels.h"

#include <string.h>

/* h[n, H] = tanh((hw + b_hh) + (xw + b_ih)) in one pass per row (attn_rnn_cell_forward); hw is
 * scratch. Saves nothing: the backward reads h. */
static void rnn_step_forward(const attn_recurrent_step *s) {
    attn_rnn_cell_forward(s->h, s->hw, s->xw, s->b_hh, s->b_ih, s->n, s->H);
}

/* h = tanh(pre), so d_pre = d_h * (1 - h^2); pre = xw + hw, so d_xw = d_hw = d_pre (written). */
static void rnn_step_backward(const attn_recurrent_step *s) {
    const size_t nH = (size_t)s->n * s->H;
    memset(s->d_xw, 0, nH * sizeof(float));
    attn_tanh_backward(s->d_xw, s->d_h, s->h, nH);
}

static const attn_recurrent_cell rnn_cell = {
    .name = "rnn",
    .G = 1, /* one gate block: W_ih [H, E], W_hh [H, H] */
    .S = 0, /* state: h only */
    .A = 0,
    .split_hh = false,
    .packed = false, /* unpacked: the bits of batched RNN results predate packing */
    .step_forward = rnn_step_forward,
    .step_backward = rnn_step_backward,
};

/* embedding.weight [V, E], rnn.{weight_ih [H, E], weight_hh [H, H], bias_ih, bias_hh [H]}_l0,
 * head.weight [1, H], head.bias [1]; all U(-1/sqrt(H), 1/sqrt(H)) but the N(0, 1) embedding */
ATTN_RECURRENT_MODEL(rnn, rnn_cell);

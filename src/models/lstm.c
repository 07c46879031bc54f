/* lstm.c -- LSTM cell, nn.LSTM(E, H): gates i, f, g, o (PyTorch's packed order),
 * c' = f*c + i*g, h' = o*tanh(c'). The sequence loop, padding, embedding, input projection and
 * head are the recurrent core's (recurrent.c); this file holds the spec name and one step.
 *
 * Numerics (docs/numerics.md): gates = (h.W_hh^T + b_hh) + xw[t]; sigmoid on the i, f, o
 * chunks and tanh on g, each chunk of H by itself; c = (f*c) + (i*g) with two rounded products
 * and no FMA; h = o*tanh(c). Batch-1 logits match PyTorch bit for bit.
 * Saved per row (A = 5): [4H] activated gates i, f, g, o, then [H] tanh(c'). */
#include "model_internal.h"

#include "attn_kernels.h"

/* ---- one row of H ------------------------------------------------------------------------ */

/* One row's step backward. In: d_h = d loss / d h', d_c = d loss / d c' from the later steps.
 * Out: d_pre[4H] = d loss / d gate pre-activations (written), d_c = d loss / d c. With
 * h' = o*tanh(c'), c' = f*c + i*g: d_o = d_h*tanh(c'), dc = d_c + d_h*o*(1 - tanh^2(c')),
 * d_i = dc*g, d_f = dc*c, d_g = dc*i, d c = dc*f; then sigmoid' = y(1-y), tanh' = 1 - y^2. */
static void cell_backward(float *restrict d_pre, float *restrict d_c, const float *restrict d_h,
                          const float *restrict a, const float *restrict tc,
                          const float *restrict c_prev, int H) {
    for (int j = 0; j < H; j++) {
        const float dh = d_h[j];
        const float ai = a[j], af = a[H + j], ag = a[2 * H + j], ao = a[3 * H + j];
        float d_o = dh * tc[j];
        float dc = d_c[j] + (dh * ao) * (1.0f - tc[j] * tc[j]);
        d_pre[j] = (dc * ag) * ai * (1.0f - ai);
        d_pre[H + j] = (dc * c_prev[j]) * af * (1.0f - af);
        d_pre[2 * H + j] = (dc * ai) * (1.0f - ag * ag);
        d_pre[3 * H + j] = d_o * ao * (1.0f - ao);
        d_c[j] = dc * af;
    }
}

/* ---- the step over n rows ------------------------------------------------------------------ */

/* gates = act((hw + b_hh) + (xw + b_ih)) and the new c, h: one kernel (attn_lstm_cell_forward,
 * a pass per row on the vector paths); hw is scratch; state = c [n, H]. */
static void lstm_step_forward(const attn_recurrent_step *s) {
    const size_t A = 5 * (size_t)s->H;
    attn_lstm_cell_forward(&(attn_lstm_cell_args){
        .n = s->n,
        .H = s->H,
        .hw = s->hw,
        .xw = s->xw,
        .b_hh = s->b_hh,
        .b_ih = s->b_ih,
        .c_prev = s->state_prev,
        .gates = s->saved,
        .tc = s->saved + 4 * (size_t)s->H,
        .gates_stride = A,
        .c = s->state,
        .h = s->h,
    });
}

/* d_xw = d_hw = d gate pre-activations (written); d_state = d_c, updated in place. */
static void lstm_step_backward(const attn_recurrent_step *s) {
    const int H = s->H;
    const size_t G = 4 * (size_t)H, A = 5 * (size_t)H;
    for (int r = 0; r < s->n; r++) {
        const float *a = s->saved + (size_t)r * A;
        cell_backward(s->d_xw + (size_t)r * G, s->d_state + (size_t)r * H, s->d_h + (size_t)r * H,
                      a, a + G, s->state_prev + (size_t)r * H, H);
    }
}

static const attn_recurrent_cell lstm_cell = {
    .name = "lstm",
    .G = 4, /* gate blocks i, f, g, o: W_ih [4H, E], W_hh [4H, H] */
    .S = 1, /* state besides h: c */
    .A = 5, /* saved: gates [4H], tanh(c) [H] */
    .split_hh = false,
    .packed = true, /* packed: padding steps are never computed */
    .step_forward = lstm_step_forward,
    .step_backward = lstm_step_backward,
};

/* embedding.weight [V, E], lstm.{weight_ih [4H, E], weight_hh [4H, H], bias_ih, bias_hh [4H]}_l0,
 * head.weight [1, H], head.bias [1]; all U(-1/sqrt(H), 1/sqrt(H)) but the N(0, 1) embedding */
ATTN_RECURRENT_MODEL(lstm, lstm_cell);

/* gru.c -- GRU cell, nn.GRU(E, H): gates r, z, n (PyTorch's packed order),
 * r = sigmoid(xw_r + hw_r), z = sigmoid(xw_z + hw_z), n = tanh(xw_n + r*hw_n),
 * h' = (1 - z)*n + z*h, where xw = x.W_ih^T + b_ih and hw = h.W_hh^T + b_hh (so b_hn sits inside
 * the product with r). The sequence loop, padding, embedding, input projection and head are the
 * recurrent core's (recurrent.c); this file holds the spec name and one step.
 *
 * Numerics (ATen RNN.cpp, GRUCell on CPU): r = sigmoid(hw_r + xw_r) and z = sigmoid(hw_z + xw_z),
 * each H-float chunk by itself; n = tanh(xw_n + (hw_n*r)) with a rounded product; then
 * h' = ((h - n)*z) + n, three rounded operations, the form ATen evaluates (measured: the
 * textbook (1-z)*n + z*h gives 83 of 100 live logits, the others 1 ULP off). Batch-1 logits
 * match PyTorch bit for bit.
 * Saved per row (A = 4): [3H] activated gates r, z, n, then [H] hw_n (h.W_hn^T + b_hn). */
#include "model_internal.h"

#include "attn_kernels.h"

#include <string.h>

/* ---- one row of H ------------------------------------------------------------------------ */

/* pre[H] = xw_n + hw_n*r (rounded product, then the add); the argument of tanh for n. b_in:
 * NULL, or the bias left out of xw_n (xw_n + b_in first, one rounding). */
static void new_gate_pre(float *restrict pre, const float *restrict xw_n,
                         const float *restrict b_in, const float *restrict hw_n,
                         const float *restrict r, int H) {
    for (int j = 0; j < H; j++) {
        float rh = hw_n[j] * r[j];
        float x = b_in ? xw_n[j] + b_in[j] : xw_n[j];
        pre[j] = x + rh;
    }
}

/* h[H] = ((h_prev - n)*z) + n */
static void blend_forward(float *restrict h, const float *restrict h_prev, const float *restrict z,
                          const float *restrict n, int H) {
    for (int j = 0; j < H; j++) {
        float d = h_prev[j] - n[j];
        float dz = d * z[j];
        h[j] = dz + n[j];
    }
}

/* One row's step backward. In: d_h = d loss / d h'. Out: d_xw[3H], d_hw[3H] (written),
 * d_h_prev += z*d_h (the path that bypasses W_hh). With h' = z*h + (1-z)*n:
 * d_z = d_h*(h - n), d_n = d_h*(1 - z); n = tanh(pre_n), pre_n = xw_n + r*hw_n:
 * d_pre_n = d_n*(1 - n^2) = d_xw_n, d_hw_n = d_pre_n*r, d_r = d_pre_n*hw_n;
 * sigmoid' = y(1-y) for r and z, whose xw and hw terms get the same gradient. */
static void cell_backward(float *restrict d_xw, float *restrict d_hw, float *restrict d_h_prev,
                          const float *restrict d_h, const float *restrict a,
                          const float *restrict h_prev, int H) {
    const float *hn = a + 3 * H;
    for (int j = 0; j < H; j++) {
        const float dh = d_h[j];
        const float ar = a[j], az = a[H + j], an = a[2 * H + j];
        float d_z = dh * (h_prev[j] - an);
        float d_pre_n = (dh * (1.0f - az)) * (1.0f - an * an);
        float d_r = d_pre_n * hn[j];
        float d_pre_r = d_r * ar * (1.0f - ar);
        float d_pre_z = d_z * az * (1.0f - az);
        d_xw[j] = d_pre_r;
        d_xw[H + j] = d_pre_z;
        d_xw[2 * H + j] = d_pre_n;
        d_hw[j] = d_pre_r;
        d_hw[H + j] = d_pre_z;
        d_hw[2 * H + j] = d_pre_n * ar;
        d_h_prev[j] += dh * az;
    }
}

/* ---- the step over n rows ------------------------------------------------------------------ */

/* gates r, z, n and h' from hw (scratch: its r and z chunks become the pre-activations). */
static void gru_step_forward(const attn_recurrent_step *s) {
    const int H = s->H;
    const size_t G = 3 * (size_t)H, A = 4 * (size_t)H;
    /* one vector pass per row where the kernels have one (the same bits as below) */
    if (attn_gru_cell_forward_fused(&(attn_gru_cell_args){.n = s->n,
                                                          .H = H,
                                                          .hw = s->hw,
                                                          .xw = s->xw,
                                                          .b_hh = s->b_hh,
                                                          .b_ih = s->b_ih,
                                                          .h_prev = s->h_prev,
                                                          .saved = s->saved,
                                                          .saved_stride = A,
                                                          .h = s->h}))
        return;
    for (int r = 0; r < s->n; r++) {
        float *hw = s->hw + (size_t)r * G;
        const float *xw = s->xw + (size_t)r * G;
        float *a = s->saved + (size_t)r * A, *hn = a + G;
        float *h = s->h + (size_t)r * H;
        /* the biases the products left out (s->b_hh, s->b_ih, NULL if none): hw + b_hh and
         * xw + b_ih, one rounding each, before anything reads them */
        if (s->b_hh)
            for (size_t j = 0; j < G; j++) hw[j] = hw[j] + s->b_hh[j];
        /* r, z = sigmoid(hw + xw), each on its own H-float chunk (ATen's sigmoid_ per chunk) */
        for (size_t j = 0; j < 2 * (size_t)H; j++)
            hw[j] = hw[j] + (s->b_ih ? xw[j] + s->b_ih[j] : xw[j]);
        attn_sigmoid_forward(a, hw, (size_t)H);
        attn_sigmoid_forward(a + H, hw + H, (size_t)H);
        /* n = tanh(xw_n + hw_n*r); hw_n is kept for the backward of r */
        memcpy(hn, hw + 2 * H, (size_t)H * sizeof(float));
        new_gate_pre(hw + 2 * H, xw + 2 * H, s->b_ih ? s->b_ih + 2 * H : NULL, hn, a, H);
        attn_tanh_forward(a + 2 * H, hw + 2 * H, (size_t)H);
        blend_forward(h, s->h_prev + (size_t)r * H, a + H, a + 2 * H, H);
    }
}

/* d_xw, d_hw written (they differ in the n block: split_hh); d_h_prev += z*d_h. */
static void gru_step_backward(const attn_recurrent_step *s) {
    const int H = s->H;
    const size_t G = 3 * (size_t)H, A = 4 * (size_t)H;
    for (int r = 0; r < s->n; r++)
        cell_backward(s->d_xw + (size_t)r * G, s->d_hw + (size_t)r * G, s->d_h_prev + (size_t)r * H,
                      s->d_h + (size_t)r * H, s->saved + (size_t)r * A, s->h_prev + (size_t)r * H,
                      H);
}

/* Also the cell of the seq2seq GRU models (seq2seq_rnn.c). */
const attn_recurrent_cell attn_gru_cell = {
    .name = "gru",
    .G = 3,           /* gate blocks r, z, n: W_ih [3H, E], W_hh [3H, H] */
    .S = 0,           /* state: h only */
    .A = 4,           /* saved: gates [3H], hw_n [H] */
    .split_hh = true, /* d hw_n = r * d xw_n */
    .packed = true,   /* packed: padding steps are never computed */
    .step_forward = gru_step_forward,
    .step_backward = gru_step_backward,
};

/* embedding.weight [V, E], gru.{weight_ih [3H, E], weight_hh [3H, H], bias_ih, bias_hh [3H]}_l0,
 * head.weight [1, H], head.bias [1]; all U(-1/sqrt(H), 1/sqrt(H)) but the N(0, 1) embedding */
ATTN_RECURRENT_MODEL(gru, attn_gru_cell);

/* attention_masked.c -- the decoder's two attentions (write-up §6), forward and backward:
 * causal (masked) self-attention and cross-attention, as PyTorch 1.13's
 * F.multi_head_attention_forward computes them for nn.TransformerDecoderLayer.
 *
 *   scores_h[n_q,n_k] = q_h . k_h^T (+ mask),  P_h = softmax(scores_h) over the FULL row,
 *   out_h[n_q,HS] = P_h . v_h.
 *
 * q is already divided by sqrt(HS) (the caller's true division, as PyTorch's q / sqrt(E)).
 * Causal: query i sits at position q_pos + i and sees keys 0 .. q_pos + i; the others get the
 * mask's -inf, added to the score as baddbmm(mask, q, k^T) adds it (a score + 0 is the score,
 * a score + -inf is -inf, so the product is PyTorch's bmm either way), and the softmax runs over
 * all n_k columns with those -inf entries in them (exp gives exact zeros, but the reductions'
 * lane structure is that of an n_k row: a softmax over only the valid keys rounds differently
 * when the row has 8 or more columns). A float -inf mask and a bool mask are the same -inf here.
 * Teacher forcing: q_pos = 0, n_k = n_q. A KV-cached step: n_q = 1, q_pos = n_k - 1.
 * Products go through attn_bmm_* under ATen's size rule for the shape PyTorch computes
 * (n_q x n_k x HS, the caller's actual shape). Heads: head h of q and out starts at h * q_stride,
 * of k and v at h * kv_stride (head-major layouts of different row counts); probs [NH, n_q, n_k]
 * contiguous, kept for backward. Backward ACCUMULATES into d_q, d_k, d_v (any may be NULL);
 * work: attn_attention_backward_work_size(n_q, n_k) floats. */
#include "attn_seq2seq_ops.h"
#include "kernels_internal.h"

#include <math.h>

/* One head; q_pos < 0: no mask (cross-attention). bias: NULL or [n_q, n_k], added to each
 * rounded score in float before the mask (score + bias + -inf is -inf, so either order gives
 * the same bits). Rows of out, q, k, v ld_o, ld_q, ld_k, ld_v floats apart. beta 1: the
 * products add to probs and out, zeroed by the caller (the same bits as beta 0). */
static void head_forward(float *out, int ld_o, float *probs, const float *q, int ld_q,
                         const float *k, int ld_k, const float *v, int ld_v, const float *bias,
                         int n_q, int n_k, int HS, int q_pos, float beta) {
    const bool loop = attn_bmm_is_loop(n_q, n_k, HS);
    attn_bmm_ld(probs, n_k, q, ld_q, k, ld_k, n_q, n_k, HS, false, true, beta, loop, ATTN_OP_QK,
                ATTN_PASS_FORWARD);
    if (bias)
        for (size_t i = 0; i < (size_t)n_q * (size_t)n_k; i++) probs[i] += bias[i];
    if (q_pos >= 0)
        for (int i = 0; i < n_q; i++)
            for (int j = q_pos + i + 1; j < n_k; j++) probs[(size_t)i * n_k + j] += -INFINITY;
    attn_softmax_forward(probs, probs, n_q, n_k, n_k);
    attn_bmm_ld(out, ld_o, probs, n_k, v, ld_v, n_q, HS, n_k, false, false, beta, loop, ATTN_OP_AV,
                ATTN_PASS_FORWARD);
}

void attn_masked_attention_forward_rows(float *out, int ld_out, float *probs, const float *q,
                                        int ld_q, const float *k, int ld_k, const float *v,
                                        int ld_v, const float *bias, int NH, int n_q, int n_k,
                                        int HS, int q_pos) {
    ATTN_ASSERT(NH >= 1 && n_q >= 1 && n_k >= 1 && probs);
    ATTN_ASSERT(q_pos < 0 || q_pos + n_q <= n_k);
    ATTN_ASSERT(HS > 1 || ld_out == 1);
    const size_t pn = (size_t)n_q * (size_t)n_k;
    for (int h = 0; h < NH; h++) {
        const size_t o = (size_t)h * HS;
        head_forward(out + o, ld_out, probs + h * pn, q + o, ld_q, k + o, ld_k, v + o, ld_v,
                     bias ? bias + h * pn : NULL, n_q, n_k, HS, q_pos, 1.0f);
    }
}

void attn_masked_attention_backward_rows(float *d_q, float *d_k, float *d_v, const float *d_out,
                                         int ld_out, const float *probs, const float *q, int ld_q,
                                         const float *k, int ld_k, const float *v, int ld_v, int NH,
                                         int n_q, int n_k, int HS, float *work) {
    ATTN_ASSERT(NH >= 1 && probs && work);
    ATTN_ASSERT(HS > 1 || ld_q == 1);
    for (int h = 0; h < NH; h++) {
        const size_t o = (size_t)h * HS;
        attn_attention_head_backward_ld(
            d_q ? d_q + o : NULL, d_k ? d_k + o : NULL, d_v ? d_v + o : NULL, d_out + o, ld_out,
            probs + (size_t)h * n_q * n_k, q + o, ld_q, k + o, ld_k, v + o, ld_v, n_q, n_k, HS, n_k,
            attn_bmm_is_loop(n_q, n_k, HS), work);
    }
}

void attn_masked_attention_forward(float *out, float *probs, const float *q, const float *k,
                                   const float *v, const float *bias, int NH, int n_q, int n_k,
                                   int HS, int q_pos, size_t q_stride, size_t kv_stride) {
    ATTN_ASSERT(NH >= 1 && n_q >= 1 && n_k >= 1 && probs);
    ATTN_ASSERT(q_pos < 0 || q_pos + n_q <= n_k);
    const size_t pn = (size_t)n_q * (size_t)n_k;
    for (int h = 0; h < NH; h++)
        head_forward(out + h * q_stride, HS, probs + h * pn, q + h * q_stride, HS,
                     k + h * kv_stride, HS, v + h * kv_stride, HS, bias ? bias + h * pn : NULL, n_q,
                     n_k, HS, q_pos, 0.0f);
}

void attn_causal_attention_forward(float *out, float *probs, const float *q, const float *k,
                                   const float *v, int NH, int n_q, int n_k, int HS, int q_pos,
                                   size_t q_stride, size_t kv_stride) {
    ATTN_ASSERT(q_pos >= 0);
    attn_masked_attention_forward(out, probs, q, k, v, NULL, NH, n_q, n_k, HS, q_pos, q_stride,
                                  kv_stride);
}

void attn_cross_attention_forward(float *out, float *probs, const float *q, const float *k,
                                  const float *v, int NH, int n_q, int n_k, int HS, size_t q_stride,
                                  size_t kv_stride) {
    attn_masked_attention_forward(out, probs, q, k, v, NULL, NH, n_q, n_k, HS, -1, q_stride,
                                  kv_stride);
}

static void heads_backward(float *d_q, float *d_k, float *d_v, const float *d_out,
                           const float *probs, const float *q, const float *k, const float *v,
                           int NH, int n_q, int n_k, int HS, size_t q_stride, size_t kv_stride,
                           float *work) {
    ATTN_ASSERT(NH >= 1 && probs && work);
    for (int h = 0; h < NH; h++) {
        const size_t oq = (size_t)h * q_stride, okv = (size_t)h * kv_stride;
        /* the full row (masked entries have P = 0 and get nothing) */
        attn_attention_head_backward(d_q ? d_q + oq : NULL, d_k ? d_k + okv : NULL,
                                     d_v ? d_v + okv : NULL, d_out + oq,
                                     probs + (size_t)h * n_q * n_k, q + oq, k + okv, v + okv, n_q,
                                     n_k, HS, n_k, attn_bmm_is_loop(n_q, n_k, HS), work);
    }
}

void attn_causal_attention_backward(float *d_q, float *d_k, float *d_v, const float *d_out,
                                    const float *probs, const float *q, const float *k,
                                    const float *v, int NH, int n_q, int n_k, int HS,
                                    size_t q_stride, size_t kv_stride, float *work) {
    heads_backward(d_q, d_k, d_v, d_out, probs, q, k, v, NH, n_q, n_k, HS, q_stride, kv_stride,
                   work);
}

void attn_cross_attention_backward(float *d_q, float *d_k, float *d_v, const float *d_out,
                                   const float *probs, const float *q, const float *k,
                                   const float *v, int NH, int n_q, int n_k, int HS,
                                   size_t q_stride, size_t kv_stride, float *work) {
    heads_backward(d_q, d_k, d_v, d_out, probs, q, k, v, NH, n_q, n_k, HS, q_stride, kv_stride,
                   work);
}

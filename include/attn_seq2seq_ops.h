/* attn_seq2seq_ops.h -- the ops the seq2seq models add to attn_kernels.h (src/kernels/): the
 * decoder's masked, causal and cross attentions, in head-major and in row layout, and the
 * seq2seq loss. Forward/backward pairs with attn_kernels.h's conventions (backward ACCUMULATES;
 * any d_ may be NULL). attn_seq2seq.h includes this header. */
#ifndef ATTN_SEQ2SEQ_OPS_H
#define ATTN_SEQ2SEQ_OPS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the decoder's attentions (src/kernels/attention_masked.c), ops as in attn_kernels.h ----
 * out_h[n_q,HS] = softmax(q_h.k_h^T + mask) . v_h for h < NH, as PyTorch 1.13's
 * F.multi_head_attention_forward (baddbmm with the mask, softmax over the full row, bmm).
 * q is already divided by sqrt(HS). Head h of q/out (and d_q/d_out) starts at h * q_stride, of
 * k/v (and d_k/d_v) at h * kv_stride. probs [NH, n_q, n_k]: kept for backward (required).
 * Causal: query i is at position q_pos + i and sees keys 0..q_pos+i (q_pos + n_q <= n_k); the
 * rest get -inf and probability 0 (teacher forcing: q_pos 0, n_k = n_q; a cached step: n_q 1,
 * q_pos n_k - 1). Cross: every key. Backward ACCUMULATES (any d_ may be NULL); work:
 * attn_attention_backward_work_size(n_q, n_k) floats. */
void attn_causal_attention_forward(float *out, float *probs, const float *q, const float *k,
                                   const float *v, int NH, int n_q, int n_k, int HS, int q_pos,
                                   size_t q_stride, size_t kv_stride);
void attn_causal_attention_backward(float *d_q, float *d_k, float *d_v, const float *d_out,
                                    const float *probs, const float *q, const float *k,
                                    const float *v, int NH, int n_q, int n_k, int HS,
                                    size_t q_stride, size_t kv_stride, float *work);
void attn_cross_attention_forward(float *out, float *probs, const float *q, const float *k,
                                  const float *v, int NH, int n_q, int n_k, int HS, size_t q_stride,
                                  size_t kv_stride);
/* Both in one, with an optional additive score bias (ALiBi in the decoder's self-attention):
 * softmax(q_h.k_h^T + bias_h + mask); bias NULL or [NH, n_q, n_k] contiguous, added to each
 * rounded score in float; q_pos >= 0 causal as above, q_pos < 0 no mask (cross). The bias is a
 * constant: the backward above is unchanged. */
void attn_masked_attention_forward(float *out, float *probs, const float *q, const float *k,
                                   const float *v, const float *bias, int NH, int n_q, int n_k,
                                   int HS, int q_pos, size_t q_stride, size_t kv_stride);
void attn_cross_attention_backward(float *d_q, float *d_k, float *d_v, const float *d_out,
                                   const float *probs, const float *q, const float *k,
                                   const float *v, int NH, int n_q, int n_k, int HS,
                                   size_t q_stride, size_t kv_stride, float *work);

/* The same on operands whose heads sit side by side in each row (the in-projections' outputs
 * and the concatenated heads): head h, row r of x at x + h*HS + r*ld_x (d_ shares its tensor's
 * ld; ld >= NH*HS); the same products with the same shapes, so the same bits. HS == 1 needs
 * ld_out == 1 (forward) and ld_q == 1 (backward). Forward with the mask of q_pos (< 0: none);
 * it ACCUMULATES the scores into probs and the heads into out, which the caller zeroes. */
void attn_masked_attention_forward_rows(float *out, int ld_out, float *probs, const float *q,
                                        int ld_q, const float *k, int ld_k, const float *v,
                                        int ld_v, const float *bias, int NH, int n_q, int n_k,
                                        int HS, int q_pos);
void attn_masked_attention_backward_rows(float *d_q, float *d_k, float *d_v, const float *d_out,
                                         int ld_out, const float *probs, const float *q, int ld_q,
                                         const float *k, int ld_k, const float *v, int ld_v, int NH,
                                         int n_q, int n_k, int HS, float *work);

/* ---- the seq2seq loss (src/kernels/cross_entropy.c) ---------------------------------------- *
 * nn.CrossEntropyLoss(ignore_index=ignore), reduction mean: logits [rows, V], labels [rows];
 * rows labelled `ignore` count for nothing (NaN when every row is ignored, as PyTorch). In
 * double. Backward: d_logits += d_loss * (softmax - onehot) / (rows not ignored). */
double attn_cross_entropy_forward(const float *logits, const int *labels, int rows, int V,
                                  int ignore);
void attn_cross_entropy_backward(float *d_logits, float d_loss, const float *logits,
                                 const int *labels, int rows, int V, int ignore);
/* Both in one pass over the logits (each row's log-sum-exp computed once): returns the loss and
 * adds the gradient, the same bits as forward then backward. */
double attn_cross_entropy_forward_backward(float *d_logits, float d_loss, const float *logits,
                                           const int *labels, int rows, int V, int ignore);
/* The same over rows that are one part of a larger batch's mean (a training micro-batch):
 * d_logits += d_loss * (softmax - onehot) / n_mean, n_mean >= 1 the WHOLE batch's counted rows,
 * and returns the SUM of these rows' losses (double, not divided), so that the batch's mean is
 * (sum_0 + sum_1 + ...) / n_mean. With n_mean = this call's counted rows: the gradient of
 * attn_cross_entropy_forward_backward bit for bit, and its loss is this sum / n_mean. */
double attn_cross_entropy_sum_forward_backward(float *d_logits, float d_loss, const float *logits,
                                               const int *labels, int rows, int V, int ignore,
                                               int n_mean);

#ifdef __cplusplus
}
#endif
#endif /* ATTN_SEQ2SEQ_OPS_H */

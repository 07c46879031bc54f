/* attention.c -- scaled dot-product attention of NH heads, forward and backward.
 *
 *   out_h[n_q,HS] = P_h . v_h,  P_h = softmax(q_h . k_h^T) over the first n_valid keys,
 *   q_h [n_q,HS] already scaled by 1/sqrt(HS) (PyTorch scales q, not the scores), k_h, v_h
 *   [n_k,HS]; keys n_valid..n_k-1 are masked (probability 0).
 *
 * Layout: head h of q, k, v and out (and of their gradients) starts h * head_stride floats
 * after head 0, its rows contiguous. head_stride = n * HS is a plain head-major [NH, n, HS]
 * tensor; a packed batch of sentences ([NH, N, HS], sentence i at rows[i]) passes the
 * sentence's first row and N * HS. Probabilities are [NH, n_q, n_k], contiguous.
 *
 * One entry point, two paths (chosen in attention_path below):
 * An optional additive score bias [NH, n_q, n_k] (attn_attention_forward_bias; ALiBi) is
 * added to q.k^T before the softmax, naive path only; backward needs nothing more (d_S passes
 * through an added constant).
 *   naive:   P materialised (in the caller's probs, or per head in work), then P.v; what a
 *            training forward saves for backward and what an attention map shows.
 *   blocked: online softmax over key tiles (attention_blocked.c), no n_q x n_k matrix; taken
 *            when the caller keeps no probabilities and n_k > ATTN_ATTENTION_BLOCKED_ABOVE.
 * Every product goes through attn_bmm_* (tags QK and AV), which follow ATen's bmm size rule:
 * a plain float loop below 400 multiply-adds per head, as torch.bmm does (with 16-wide heads
 * every sentence of at most 4 positions), one sgemm from there on. Backward accumulates. */
#include "kernels_internal.h"

/* True when the forward takes the blocked (online softmax) path. */
static bool attention_blocked(const float *probs, int n_k) {
    return probs == NULL && n_k > ATTN_ATTENTION_BLOCKED_ABOVE;
}

size_t attn_attention_forward_work_size(int n_q, int n_k) {
    if (attention_blocked(NULL, n_k)) /* one score tile */
        return attn_attention_blocked_work_size(ATTN_ATTENTION_TILE);
    return (size_t)n_q * (size_t)n_k; /* one head's probabilities when the caller keeps none */
}

size_t attn_attention_backward_work_size(int n_q, int n_k) {
    return 2 * (size_t)n_q * (size_t)n_k; /* d_probs and d_scores of one head */
}

/* ---- forward -------------------------------------------------------------------------- */

/* Whether PyTorch's products of one head take ATen's small-bmm loop. Its self-attention
 * computes all n_k query rows, so every product of a head, forward (q.k^T, P.v) and backward
 * (autograd's bmm: d_out.v^T, P^T.d_out, d_S.k, q^T.d_S), has n_k * n_k * HS multiply-adds,
 * however few query rows (n_q, the [CLS] query alone) are computed here. */
static bool head_loops(int n_q, int n_k, int HS) {
    const int rows = n_q > n_k ? n_q : n_k;
    return attn_bmm_is_loop(rows, n_k, HS);
}

/* One head, naive: probs[n_q,n_k] = softmax(q.k^T) (scores written into probs, softmax in
 * place), out[n_q,HS] = probs.v, both products PyTorch's per-head bmm; the rows of out, q, k, v
 * ld_o, ld_q, ld_k, ld_v floats apart. beta 1: both products add to probs and out, which the
 * caller zeroed (the same bits as beta 0: the sums start at +0 and are never -0). */
static void head_naive_forward(float *out, int ld_o, float *probs, const float *q, int ld_q,
                               const float *k, int ld_k, const float *v, int ld_v,
                               const float *bias, int n_q, int n_k, int HS, int n_valid,
                               float beta) {
    const bool loop = head_loops(n_q, n_k, HS);
    attn_bmm_ld(probs, n_k, q, ld_q, k, ld_k, n_q, n_k, HS, false, true, beta, loop, ATTN_OP_QK,
                ATTN_PASS_FORWARD);
    if (bias) /* scores + bias, one float add each (a separate `scores + bias` in PyTorch) */
        for (size_t i = 0; i < (size_t)n_q * (size_t)n_k; i++) probs[i] += bias[i];
    attn_softmax_forward(probs, probs, n_q, n_k, n_valid);
    attn_bmm_ld(out, ld_o, probs, n_k, v, ld_v, n_q, HS, n_k, false, false, beta, loop, ATTN_OP_AV,
                ATTN_PASS_FORWARD);
}

void attn_attention_forward_rows(float *out, int ld_out, float *probs, const float *q, int ld_q,
                                 const float *k, int ld_k, const float *v, int ld_v,
                                 const float *bias, int NH, int n_q, int n_k, int HS, int n_valid) {
    ATTN_ASSERT(NH >= 1 && n_valid >= 0 && n_valid <= n_k && probs);
    ATTN_ASSERT(HS > 1 || ld_out == 1);
    const size_t pn = (size_t)n_q * (size_t)n_k; /* one head's probabilities */
    for (int h = 0; h < NH; h++) {
        const size_t o = (size_t)h * HS;
        head_naive_forward(out + o, ld_out, probs + h * pn, q + o, ld_q, k + o, ld_k, v + o, ld_v,
                           bias ? bias + h * pn : NULL, n_q, n_k, HS, n_valid, 1.0f);
    }
}

void attn_attention_forward(float *out, float *probs, const float *q, const float *k,
                            const float *v, int NH, int n_q, int n_k, int HS, int n_valid,
                            size_t head_stride, float *work) {
    attn_attention_forward_bias(out, probs, q, k, v, NULL, NH, n_q, n_k, HS, n_valid, head_stride,
                                work);
}

void attn_attention_forward_bias(float *out, float *probs, const float *q, const float *k,
                                 const float *v, const float *bias, int NH, int n_q, int n_k,
                                 int HS, int n_valid, size_t head_stride, float *work) {
    ATTN_ASSERT(NH >= 1 && n_valid >= 0 && n_valid <= n_k);
    ATTN_ASSERT(probs || work);
    ATTN_ASSERT(!bias || !attention_blocked(probs, n_k)); /* the blocked path takes no bias */
    const bool blocked = attention_blocked(probs, n_k);
    const size_t pn = (size_t)n_q * (size_t)n_k; /* one head's probabilities */
    for (int h = 0; h < NH; h++) {
        const size_t o = (size_t)h * head_stride;
        if (blocked)
            attn_attention_blocked_forward(out + o, q + o, k + o, v + o, n_q, n_k, HS, n_valid,
                                           work, ATTN_ATTENTION_TILE);
        else
            head_naive_forward(out + o, HS, probs ? probs + h * pn : work, q + o, HS, k + o, HS,
                               v + o, HS, bias ? bias + h * pn : NULL, n_q, n_k, HS, n_valid, 0.0f);
    }
}

/* ---- backward ------------------------------------------------------------------------- */

/* One head. In the forward pass out = P.v with P = softmax(S), S = q.k^T, so
 *   d_P = d_out.v^T, d_v += P^T.d_out, d_S = P * (d_P - rowsum(P * d_P)),
 *   d_q += d_S.k, d_k += d_S^T.q.
 * work: [n_q,n_k] d_probs | [n_q,n_k] d_scores. */
void attn_attention_head_backward(float *d_q, float *d_k, float *d_v, const float *d_out,
                                  const float *probs, const float *q, const float *k,
                                  const float *v, int n_q, int n_k, int HS, int n_valid, bool loop,
                                  float *work) {
    attn_attention_head_backward_ld(d_q, d_k, d_v, d_out, HS, probs, q, HS, k, HS, v, HS, n_q, n_k,
                                    HS, n_valid, loop, work);
}

void attn_attention_head_backward_ld(float *d_q, float *d_k, float *d_v, const float *d_out,
                                     int ldo, const float *probs, const float *q, int ldq,
                                     const float *k, int ldk, const float *v, int ldv, int n_q,
                                     int n_k, int HS, int n_valid, bool loop, float *work) {
    const size_t pn = (size_t)n_q * (size_t)n_k;
    float *d_probs = work, *d_scores = work + pn;
    const attn_pass bw = ATTN_PASS_BACKWARD;
    attn_bmm_ld(d_probs, n_k, d_out, ldo, v, ldv, n_q, n_k, HS, false, true, 0.0f, loop, ATTN_OP_AV,
                bw);
    if (d_v)
        attn_bmm_ld(d_v, ldv, probs, n_k, d_out, ldo, n_k, HS, n_q, true, false, 1.0f, loop,
                    ATTN_OP_AV, bw);
    attn_softmax_backward_set(d_scores, d_probs, probs, n_q, n_k, n_valid);
    if (d_q)
        attn_bmm_ld(d_q, ldq, d_scores, n_k, k, ldk, n_q, HS, n_k, false, false, 1.0f, loop,
                    ATTN_OP_QK, bw);
    if (d_k)
        attn_bmm_ld(d_k, ldk, d_scores, n_k, q, ldq, n_k, HS, n_q, true, false, 1.0f, loop,
                    ATTN_OP_QK, bw);
}

void attn_attention_backward_rows(float *d_q, float *d_k, float *d_v, const float *d_out,
                                  int ld_out, const float *probs, const float *q, int ld_q,
                                  const float *k, int ld_k, const float *v, int ld_v, int NH,
                                  int n_q, int n_k, int HS, int n_valid, float *work) {
    ATTN_ASSERT(NH >= 1 && n_valid >= 0 && n_valid <= n_k && probs && work);
    ATTN_ASSERT(HS > 1 || ld_q == 1);
    const size_t pn = (size_t)n_q * (size_t)n_k;
    for (int h = 0; h < NH; h++) {
        const size_t o = (size_t)h * HS;
        attn_attention_head_backward_ld(d_q ? d_q + o : NULL, d_k ? d_k + o : NULL,
                                        d_v ? d_v + o : NULL, d_out + o, ld_out, probs + h * pn,
                                        q + o, ld_q, k + o, ld_k, v + o, ld_v, n_q, n_k, HS,
                                        n_valid, head_loops(n_q, n_k, HS), work);
    }
}

void attn_attention_backward(float *d_q, float *d_k, float *d_v, const float *d_out,
                             const float *probs, const float *q, const float *k, const float *v,
                             int NH, int n_q, int n_k, int HS, int n_valid, size_t head_stride,
                             float *work) {
    ATTN_ASSERT(NH >= 1 && n_valid >= 0 && n_valid <= n_k && probs && work);
    const size_t pn = (size_t)n_q * (size_t)n_k;
    for (int h = 0; h < NH; h++) {
        const size_t o = (size_t)h * head_stride;
        attn_attention_head_backward(d_q ? d_q + o : NULL, d_k ? d_k + o : NULL,
                                     d_v ? d_v + o : NULL, d_out + o, probs + h * pn, q + o, k + o,
                                     v + o, n_q, n_k, HS, n_valid, head_loops(n_q, n_k, HS), work);
    }
}

/* attention_blocked.c -- scaled dot-product attention of one head, two ways.
 *
 *   out[n_q,hs] = softmax(q . k^T) . v,  q [n_q,hs] pre-scaled by 1/sqrt(hs), k, v [n_k,hs],
 *   keys n_valid..n_k-1 masked (probability 0).
 *
 * naive:   materialises scores and probs [n_q,n_k] (what transformer.c does, and what a
 *          training forward must save for backward).
 * blocked: online softmax over key tiles (Milakov & Gimelshein 2018, "Online normalizer
 *          calculation for softmax"; Dao et al. 2022's schedule). Extra memory is one
 *          tile x tile score block plus a running max and sum per query of the tile, so
 *          long sequences (the write-up's 1024 px ViT, n = 4097) never allocate n^2 floats.
 *          Forward only (inference); the exact-mode model keeps the naive path.
 * Both route their products through attn_sgemm (tags QK and AV), so the FLOP accountant sees
 * n_q*n_valid*hs multiply-adds per tag from the blocked path (n_q*n_k*hs from the naive one).
 */
#include "kernels_internal.h"

#include <math.h>
#include <sleef.h>

/* ---- naive ------------------------------------------------------------------------------ */

/* scores = q.k^T [n_q,n_k]; probs = masked row softmax(scores); out = probs.v [n_q,hs]. */
void attn_attention_naive_forward(float *out, float *probs, float *scores, const float *q,
                                  const float *k, const float *v, int n_q, int n_k, int hs,
                                  int n_valid) {
    ATTN_ASSERT(n_valid >= 0 && n_valid <= n_k);
    attn_sgemm(ATTN_OP_QK, false, false, true, n_q, n_k, hs, 1.0f, q, k, 0.0f, scores);
    attn_softmax_forward(probs, scores, n_q, n_k, n_valid);
    attn_sgemm(ATTN_OP_AV, false, false, false, n_q, hs, n_k, 1.0f, probs, v, 0.0f, out);
}

/* ---- blocked (online softmax) ----------------------------------------------------------- */

size_t attn_attention_blocked_work_size(int tile) {
    return (size_t)tile * (size_t)tile + 2 * (size_t)tile;
}

/* Largest element of row[0..n). */
static float row_max(const float *row, int n) {
    __m256 m8 = _mm256_set1_ps(-INFINITY);
    int j = 0;
    for (; j + 8 <= n; j += 8) m8 = _mm256_max_ps(m8, _mm256_loadu_ps(row + j));
    float lanes[8];
    _mm256_storeu_ps(lanes, m8);
    float m = -INFINITY;
    for (int i = 0; i < 8; i++) m = lanes[i] > m ? lanes[i] : m;
    for (; j < n; j++) m = row[j] > m ? row[j] : m;
    return m;
}

/* row[j] = exp(row[j] - m) in place; returns the sum of the new values. */
static float row_exp_sum(float *row, int n, float m) {
    const __m256 m8 = _mm256_set1_ps(m);
    __m256 s8 = _mm256_setzero_ps();
    int j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256 e = Sleef_expf8_u10(_mm256_sub_ps(_mm256_loadu_ps(row + j), m8));
        _mm256_storeu_ps(row + j, e);
        s8 = _mm256_add_ps(s8, e);
    }
    if (j < n) {
        size_t tail = (size_t)(n - j);
        /* padding lanes hold -inf - m, whose exp is 0: they add nothing to the sum */
        float buf[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY,
                        -INFINITY, -INFINITY, -INFINITY, -INFINITY};
        memcpy(buf, row + j, tail * sizeof *buf);
        __m256 e = Sleef_expf8_u10(_mm256_sub_ps(_mm256_loadu_ps(buf), m8));
        attn_store_partial8(row + j, e, tail);
        s8 = _mm256_add_ps(s8, e);
    }
    float lanes[8];
    _mm256_storeu_ps(lanes, s8);
    float s = 0.0f;
    for (int i = 0; i < 8; i++) s += lanes[i];
    return s;
}

/* out = softmax(q.k^T).v without the n_q x n_k matrix. work: attn_attention_blocked_work_size
 * (tile) floats = score tile [tile,tile] | running max m [tile] | running sum l [tile]. */
void attn_attention_blocked_forward(float *out, const float *q, const float *k, const float *v,
                                    int n_q, int n_k, int hs, int n_valid, float *work, int tile) {
    ATTN_ASSERT(tile >= 1 && n_valid >= 0 && n_valid <= n_k);
    (void)n_k;                                     /* masked keys are simply never visited */
    float *s = work;                               /* [tq, tk] scores, then exp'd scores */
    float *m = work + (size_t)tile * (size_t)tile; /* [tq] running row max */
    float *l = m + tile;                           /* [tq] running sum of exp(s - m) */
    memset(out, 0, (size_t)n_q * (size_t)hs * sizeof *out);
    if (n_valid == 0) return; /* fully masked rows attend to nothing: zeros, as the softmax */

    for (int i0 = 0; i0 < n_q; i0 += tile) {
        const int tq = n_q - i0 < tile ? n_q - i0 : tile;
        float *o = out + (size_t)i0 * hs; /* [tq, hs] the tile's (unnormalised) output */
        for (int r = 0; r < tq; r++) {
            m[r] = -INFINITY;
            l[r] = 0.0f;
        }
        for (int j0 = 0; j0 < n_valid; j0 += tile) {
            const int tk = n_valid - j0 < tile ? n_valid - j0 : tile;
            /* s[tq,tk] = q_t . k_t^T: rows i0.. of q against keys j0.. */
            attn_sgemm(ATTN_OP_QK, false, false, true, tq, tk, hs, 1.0f, q + (size_t)i0 * hs,
                       k + (size_t)j0 * hs, 0.0f, s);
            for (int r = 0; r < tq; r++) {
                float *row = s + (size_t)r * tk;
                /* new max m' = max(m, max_j s_rj); the old partial sums and output were taken
                 * relative to m, so they are rescaled by exp(m - m') (0 on the first tile) */
                float m_new = row_max(row, tk);
                m_new = m[r] > m_new ? m[r] : m_new;
                const float scale = m[r] == -INFINITY ? 0.0f : expf(m[r] - m_new);
                l[r] = l[r] * scale + row_exp_sum(row, tk, m_new);
                m[r] = m_new;
                if (scale != 1.0f) {
                    float *orow = o + (size_t)r * hs;
                    for (int c = 0; c < hs; c++) orow[c] *= scale;
                }
            }
            /* o += exp(s - m') . v_t  [tq,tk].[tk,hs] */
            attn_sgemm(ATTN_OP_AV, false, false, false, tq, hs, tk, 1.0f, s, v + (size_t)j0 * hs,
                       1.0f, o);
        }
        /* out = o / l: the softmax's normaliser, applied once at the end */
        for (int r = 0; r < tq; r++) {
            const float inv = 1.0f / l[r];
            float *orow = o + (size_t)r * hs;
            for (int c = 0; c < hs; c++) orow[c] *= inv;
        }
    }
}

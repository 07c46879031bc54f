/* attention_blocked.c -- the memory-frugal path of the attention kernel (attention.c), one head.
 *
 *   out[n_q,hs] = softmax(q . k^T) . v,  q [n_q,hs] pre-scaled by 1/sqrt(hs), k, v [n_k,hs],
 *   keys n_valid..n_k-1 masked (probability 0).
 *
 * The naive path (attention.c) materialises scores and probs [n_q,n_k], what a training
 * forward saves for backward and an attention map shows.
 * blocked: online softmax over key tiles (Milakov & Gimelshein 2018, "Online normalizer
 *          calculation for softmax"; Dao et al. 2022's schedule). Extra memory is one
 *          tile x tile score block plus a running max and sum per query of the tile, so
 *          long sequences (the write-up's 1024 px ViT, n = 4097) never allocate n^2 floats.
 *          Forward only (inference); the exact-mode model keeps the naive path.
 * Its products go through attn_sgemm (tags QK and AV), so the FLOP accountant sees
 * n_q*n_valid*hs multiply-adds per tag from the blocked path (n_q*n_k*hs from the naive one).
 *
 * Where the blocked path's time goes (ViT-Base head, n = 4097, tile 256, one Zen 3 core): the
 * two tile products run at the sgemm ceiling (OpenBLAS packs its operands per call, which at
 * these shapes costs little), so the rest is the softmax: one max pass and one exp pass per
 * score row, both over a row that stays in L1 between them. The exp is a short polynomial for
 * x <= 0 (the only range the online softmax feeds it): ~2 ulp, and in a loop of its own about
 * 1.7x faster than SLEEF's general expf8_u10, which also handles overflow and subnormals.
 * Query tiles are independent: attn_attention_blocked_forward_part computes every parts-th one,
 * so a caller with threads of its own runs one part on each (the result does not depend on how
 * many). The kernel starts no threads and changes no process-wide setting. The three row
 * helpers exist twice, here in plain C and in attention_blocked_avx2.c, with the same bits;
 * the CPU path (cpu.c) chooses, so this file builds for baseline x86-64 or any architecture.
 */
#include "attn.h"
#include "kernels_internal.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* ---- blocked (online softmax) ----------------------------------------------------------- */

size_t attn_attention_blocked_work_size(int tile) {
    return (size_t)tile * (size_t)tile + 2 * (size_t)tile;
}

/* Scores are at most the running max, so exp only ever sees x <= 0; below this x the result
 * would leave the normal range and is pinned at exp(-86) = 4.5e-38 instead, which is nothing
 * next to the row's sum (>= 1, the max contributes exp(0)). Keeps 2^n normal in exp8. */
#define EXP_LOWEST ATTN_BLOCKED_EXP_LOWEST /* -86 (kernels_internal.h) */

/* The row helpers, plain C: each the exact twin of its AVX2 version in attention_blocked_avx2.c
 * (the same operations in the same order, lane by lane), so both paths give the same bits. */

/* exp(x) for x <= 0 (NaN stays NaN): x = n ln2 + r, |r| <= ln2/2, with ln2 split in two so r is
 * exact to float precision; exp(r) = 1 + r + r^2 P(r), P the degree-5 minimax polynomial of the
 * Cephes expf; 2^n built in the exponent field. Measured over [-86, 0]: at most 1.2e-7 relative
 * error (2 ulp); the AVX2 version is ~1.7x the throughput of SLEEF's u10 exp. */
static float exp_nonpos(float x) {
    x = EXP_LOWEST > x ? EXP_LOWEST : x; /* _mm256_max_ps: x wins on NaN */
    const float n = nearbyintf(x * 1.44269504088896341f);
    float r = fmaf(-n, 0.693359375f, x);
    r = fmaf(-n, -2.12194440e-4f, r);
    float p = 1.9875691500e-4f;
    p = fmaf(p, r, 1.3981999507e-3f);
    p = fmaf(p, r, 8.3334519073e-3f);
    p = fmaf(p, r, 4.1665795894e-2f);
    p = fmaf(p, r, 1.6666665459e-1f);
    p = fmaf(p, r, 5.0000001201e-1f);
    p = fmaf(p, r * r, r + 1.0f);
    const uint32_t e = (uint32_t)((int32_t)n + 127) << 23; /* n in [-125, 0]: a normal 2^n */
    return p * attn_f32_from_bits(e);
}

/* max as _mm256_max_ps takes it: a unless b is larger or either is NaN */
static float max_ps(float a, float b) {
    return a > b ? a : b;
}

/* Largest element of row[0..n): two 8-lane running maxima over blocks of 16, as the AVX2 one. */
static float row_max(const float *row, int n) {
    float m0[8], m1[8];
    for (int i = 0; i < 8; i++) m0[i] = m1[i] = -INFINITY;
    int j = 0;
    for (; j + 16 <= n; j += 16)
        for (int i = 0; i < 8; i++) {
            m0[i] = max_ps(m0[i], row[j + i]);
            m1[i] = max_ps(m1[i], row[j + 8 + i]);
        }
    float m = -INFINITY;
    for (int i = 0; i < 8; i++) {
        const float lane = max_ps(m0[i], m1[i]);
        m = lane > m ? lane : m;
    }
    for (; j < n; j++) m = row[j] > m ? row[j] : m;
    return m;
}

/* row[j] = exp(row[j] - m) in place; returns the sum of the new values, added as the AVX2 one
 * adds them: two 8-lane sums over blocks of 16, the 1..15 left in blocks of 8 into the first
 * (missing lanes add exp(-inf) = 0), then lane by lane. */
static float row_exp_sum(float *row, int n, float m) {
    float s0[8] = {0}, s1[8] = {0};
    int j = 0;
    for (; j + 16 <= n; j += 16)
        for (int i = 0; i < 8; i++) {
            s0[i] += (row[j + i] = exp_nonpos(row[j + i] - m));
            s1[i] += (row[j + 8 + i] = exp_nonpos(row[j + 8 + i] - m));
        }
    for (; j < n; j += 8)
        for (int i = 0; i < 8; i++)
            s0[i] +=
                j + i < n ? (row[j + i] = exp_nonpos(row[j + i] - m)) : exp_nonpos(-INFINITY - m);
    float s = 0.0f;
    for (int i = 0; i < 8; i++) s += s0[i] + s1[i];
    return s;
}

/* row[0..n) *= a */
static void row_scale(float *row, int n, float a) {
    for (int j = 0; j < n; j++) row[j] *= a;
}

/* The helpers a call runs: the AVX2 ones when the CPU path says so (cpu.c), else the above. */
typedef struct row_ops {
    float (*max)(const float *row, int n);
    float (*exp_sum)(float *row, int n, float m);
    void (*scale)(float *row, int n, float a);
} row_ops;

static row_ops choose_row_ops(void) {
#if ATTN_HAVE_AVX2_KERNELS
    if (attn_cpu_use_avx2())
        return (row_ops){attn_blocked_row_max_avx2, attn_blocked_row_exp_sum_avx2,
                         attn_blocked_row_scale_avx2};
#endif
    return (row_ops){row_max, row_exp_sum, row_scale};
}

/* One query tile: o[tq,hs] = softmax(q_t.k^T).v over keys 0..n_valid, walking them in tiles
 * of `tile`. work = score tile [tile,tile] | running max m [tile] | running sum l [tile]. */
static void query_tile(const row_ops *ops, float *o, const float *q_t, const float *k,
                       const float *v, int tq, int hs, int n_valid, float *work, int tile) {
    float *s = work;                               /* [tq, tk] scores, then exp'd scores */
    float *m = work + (size_t)tile * (size_t)tile; /* [tq] running row max */
    float *l = m + tile;                           /* [tq] running sum of exp(s - m) */
    for (int j0 = 0; j0 < n_valid; j0 += tile) {
        const int tk = n_valid - j0 < tile ? n_valid - j0 : tile;
        /* s[tq,tk] = q_t . k_t^T: the tile's queries against keys j0.. (beta 0 on the first
         * key tile below also overwrites o, so o needs no clearing) */
        attn_sgemm(s, q_t, k + (size_t)j0 * hs, tq, tk, hs, false, true, 1.0f, 0.0f, ATTN_OP_QK,
                   ATTN_PASS_FORWARD);
        for (int r = 0; r < tq; r++) {
            float *row = s + (size_t)r * tk;
            /* new max m' = max(m, max_j s_rj); the old partial sums and output were taken
             * relative to m, so they are rescaled by exp(m - m') (nothing on the first tile) */
            const float m_tile = ops->max(row, tk);
            if (j0 == 0) {
                m[r] = m_tile;
                l[r] = ops->exp_sum(row, tk, m_tile);
            } else if (m_tile <= m[r]) {
                l[r] += ops->exp_sum(row, tk, m[r]);
            } else {
                const float scale = expf(m[r] - m_tile);
                m[r] = m_tile;
                l[r] = l[r] * scale + ops->exp_sum(row, tk, m_tile);
                ops->scale(o + (size_t)r * hs, hs, scale);
            }
        }
        /* o (+)= exp(s - m') . v_t  [tq,tk].[tk,hs] */
        attn_sgemm(o, s, v + (size_t)j0 * hs, tq, hs, tk, false, false, 1.0f, j0 == 0 ? 0.0f : 1.0f,
                   ATTN_OP_AV, ATTN_PASS_FORWARD);
    }
    /* out = o / l: the softmax's normaliser, applied once at the end */
    for (int r = 0; r < tq; r++) ops->scale(o + (size_t)r * hs, hs, 1.0f / l[r]);
}

void attn_attention_blocked_forward_part(float *out, const float *q, const float *k, const float *v,
                                         int n_q, int n_k, int hs, int n_valid, float *work,
                                         int tile, int part, int parts) {
    ATTN_ASSERT(tile >= 1 && parts >= 1 && part >= 0 && part < parts);
    ATTN_ASSERT(n_valid >= 0 && n_valid <= n_k);
    (void)n_k; /* masked keys are simply never visited */
    const row_ops ops = choose_row_ops();
    for (int i0 = part * tile; i0 < n_q; i0 += parts * tile) {
        const int tq = n_q - i0 < tile ? n_q - i0 : tile;
        if (n_valid == 0) /* fully masked rows attend to nothing: zeros, as the softmax */
            memset(out + (size_t)i0 * hs, 0, (size_t)tq * (size_t)hs * sizeof *out);
        else
            query_tile(&ops, out + (size_t)i0 * hs, q + (size_t)i0 * hs, k, v, tq, hs, n_valid,
                       work, tile);
    }
}

void attn_attention_blocked_forward(float *out, const float *q, const float *k, const float *v,
                                    int n_q, int n_k, int hs, int n_valid, float *work, int tile) {
    attn_attention_blocked_forward_part(out, q, k, v, n_q, n_k, hs, n_valid, work, tile, 0, 1);
}

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
 * The _mt variant deals query tiles to threads (tiles are independent: the result does not
 * depend on the thread count). AVX2 code sits behind __AVX2__ && __FMA__ with scalar twins.
 */
#include "attn.h"
#include "kernels_internal.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

/* ---- blocked (online softmax) ----------------------------------------------------------- */

size_t attn_attention_blocked_work_size(int tile) {
    return (size_t)tile * (size_t)tile + 2 * (size_t)tile;
}

/* Scores are at most the running max, so exp only ever sees x <= 0; below this x the result
 * would leave the normal range and is pinned at exp(-86) = 4.5e-38 instead, which is nothing
 * next to the row's sum (>= 1, the max contributes exp(0)). Keeps 2^n normal in exp8. */
#define EXP_LOWEST -86.0f

#if defined(__AVX2__) && defined(__FMA__)
/* exp(x) on 8 lanes for x <= 0 (NaN stays NaN): x = n ln2 + r, |r| <= ln2/2, with ln2 split in
 * two so r is exact to float precision; exp(r) = 1 + r + r^2 P(r), P the degree-5 minimax
 * polynomial of the Cephes expf; 2^n built in the exponent field. Measured over [-86, 0]: at
 * most 1.2e-7 relative error (2 ulp), ~1.7x the throughput of SLEEF's u10 exp, which also
 * covers overflow and subnormal results that cannot occur here. */
static inline __m256 exp8_nonpos(__m256 x) {
    x = _mm256_max_ps(_mm256_set1_ps(EXP_LOWEST), x); /* second operand wins on NaN */
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    const __m256i e =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

/* Largest element of row[0..n). */
static float row_max(const float *row, int n) {
    __m256 m0 = _mm256_set1_ps(-INFINITY), m1 = m0;
    int j = 0;
    for (; j + 16 <= n; j += 16) {
        m0 = _mm256_max_ps(m0, _mm256_loadu_ps(row + j));
        m1 = _mm256_max_ps(m1, _mm256_loadu_ps(row + j + 8));
    }
    m0 = _mm256_max_ps(m0, m1);
    float lanes[8];
    _mm256_storeu_ps(lanes, m0);
    float m = -INFINITY;
    for (int i = 0; i < 8; i++) m = lanes[i] > m ? lanes[i] : m;
    for (; j < n; j++) m = row[j] > m ? row[j] : m;
    return m;
}

/* row[j] = exp(row[j] - m) in place; returns the sum of the new values. */
static float row_exp_sum(float *row, int n, float m) {
    const __m256 m8 = _mm256_set1_ps(m);
    __m256 s0 = _mm256_setzero_ps(), s1 = s0;
    int j = 0;
    for (; j + 16 <= n; j += 16) {
        const __m256 e0 = exp8_nonpos(_mm256_sub_ps(_mm256_loadu_ps(row + j), m8));
        const __m256 e1 = exp8_nonpos(_mm256_sub_ps(_mm256_loadu_ps(row + j + 8), m8));
        _mm256_storeu_ps(row + j, e0);
        _mm256_storeu_ps(row + j + 8, e1);
        s0 = _mm256_add_ps(s0, e0);
        s1 = _mm256_add_ps(s1, e1);
    }
    for (; j < n; j += 8) { /* 1..15 left: whole or partial vectors */
        const size_t cnt = (size_t)(n - j < 8 ? n - j : 8);
        /* padding lanes hold -inf - m, whose exp is 0: they add nothing to the sum */
        float buf[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY,
                        -INFINITY, -INFINITY, -INFINITY, -INFINITY};
        memcpy(buf, row + j, cnt * sizeof *buf);
        const __m256 e = exp8_nonpos(_mm256_sub_ps(_mm256_loadu_ps(buf), m8));
        attn_store_partial8(row + j, e, cnt);
        s0 = _mm256_add_ps(s0, e);
    }
    s0 = _mm256_add_ps(s0, s1);
    float lanes[8];
    _mm256_storeu_ps(lanes, s0);
    float s = 0.0f;
    for (int i = 0; i < 8; i++) s += lanes[i];
    return s;
}

/* row[0..n) *= a */
static void row_scale(float *row, int n, float a) {
    const __m256 a8 = _mm256_set1_ps(a);
    int j = 0;
    for (; j + 8 <= n; j += 8)
        _mm256_storeu_ps(row + j, _mm256_mul_ps(a8, _mm256_loadu_ps(row + j)));
    for (; j < n; j++) row[j] *= a;
}
#else
/* Scalar twins of the three row helpers above, for builds without AVX2 + FMA. */
static float exp1_nonpos(float x) {
    return expf(x < EXP_LOWEST ? EXP_LOWEST : x);
}

static float row_max(const float *row, int n) {
    float m = -INFINITY;
    for (int j = 0; j < n; j++) m = row[j] > m ? row[j] : m;
    return m;
}

static float row_exp_sum(float *row, int n, float m) {
    float s = 0.0f;
    for (int j = 0; j < n; j++) s += (row[j] = exp1_nonpos(row[j] - m));
    return s;
}

static void row_scale(float *row, int n, float a) {
    for (int j = 0; j < n; j++) row[j] *= a;
}
#endif

/* One query tile: o[tq,hs] = softmax(q_t.k^T).v over keys 0..n_valid, walking them in tiles
 * of `tile`. work = score tile [tile,tile] | running max m [tile] | running sum l [tile]. */
static void query_tile(float *o, const float *q_t, const float *k, const float *v, int tq, int hs,
                       int n_valid, float *work, int tile) {
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
            const float m_tile = row_max(row, tk);
            if (j0 == 0) {
                m[r] = m_tile;
                l[r] = row_exp_sum(row, tk, m_tile);
            } else if (m_tile <= m[r]) {
                l[r] += row_exp_sum(row, tk, m[r]);
            } else {
                const float scale = expf(m[r] - m_tile);
                m[r] = m_tile;
                l[r] = l[r] * scale + row_exp_sum(row, tk, m_tile);
                row_scale(o + (size_t)r * hs, hs, scale);
            }
        }
        /* o (+)= exp(s - m') . v_t  [tq,tk].[tk,hs] */
        attn_sgemm(o, s, v + (size_t)j0 * hs, tq, hs, tk, false, false, 1.0f, j0 == 0 ? 0.0f : 1.0f,
                   ATTN_OP_AV, ATTN_PASS_FORWARD);
    }
    /* out = o / l: the softmax's normaliser, applied once at the end */
    for (int r = 0; r < tq; r++) row_scale(o + (size_t)r * hs, hs, 1.0f / l[r]);
}

typedef struct blocked_job {
    float *out, *work;
    const float *q, *k, *v;
    int n_q, hs, n_valid, tile, first, step; /* query tiles first, first + step, ... */
    attn_flop_counts counts; /* a started thread's multiply-adds, added to the caller's after */
} blocked_job;

static void *blocked_worker(void *arg) {
    blocked_job *j = arg;
    for (int i0 = j->first * j->tile; i0 < j->n_q; i0 += j->step * j->tile) {
        const int tq = j->n_q - i0 < j->tile ? j->n_q - i0 : j->tile;
        query_tile(j->out + (size_t)i0 * j->hs, j->q + (size_t)i0 * j->hs, j->k, j->v, tq, j->hs,
                   j->n_valid, j->work, j->tile);
    }
    return NULL;
}

/* A started thread: counts its products into its job (the FLOP counter is per thread). */
static void *blocked_thread(void *arg) {
    blocked_job *j = arg;
    attn_flops_set_counter(&j->counts);
    return blocked_worker(j);
}

/* out = softmax(q.k^T).v without the n_q x n_k matrix; query tiles dealt round-robin to
 * `threads` threads (the calling thread is one of them). work: threads *
 * attn_attention_blocked_work_size(tile) floats, one slice per thread. */
void attn_attention_blocked_forward_mt(float *out, const float *q, const float *k, const float *v,
                                       int n_q, int n_k, int hs, int n_valid, float *work, int tile,
                                       int threads) {
    enum { MAX_THREADS = 64 };
    ATTN_ASSERT(tile >= 1 && threads >= 1 && n_valid >= 0 && n_valid <= n_k);
    (void)n_k;          /* masked keys are simply never visited */
    if (n_valid == 0) { /* fully masked rows attend to nothing: zeros, as the softmax */
        memset(out, 0, (size_t)n_q * (size_t)hs * sizeof *out);
        return;
    }
    const int n_tiles = (n_q + tile - 1) / tile;
    int T = threads < MAX_THREADS ? threads : MAX_THREADS;
    T = T < n_tiles ? T : n_tiles;
    blocked_job jobs[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    bool started[MAX_THREADS] = {false};
    const size_t per = attn_attention_blocked_work_size(tile);
    /* the tile products are small: OpenBLAS's own threads would only contend with ours, and
     * one BLAS thread per tile product makes the result independent of the thread counts */
    const int blas_threads = attn_num_threads();
    if (blas_threads > 1) attn_set_num_threads(1);
    for (int t = 0; t < T; t++) {
        jobs[t] = (blocked_job){out, work + (size_t)t * per, q, k, v, n_q, hs, n_valid, tile, t,
                                T,   {{0}, {0}, {0}}};
        if (t > 0) started[t] = pthread_create(&tid[t], NULL, blocked_thread, &jobs[t]) == 0;
    }
    blocked_worker(&jobs[0]);
    attn_flop_counts *caller = attn_flops_get_counter();
    for (int t = 1; t < T; t++) {
        if (started[t]) {
            pthread_join(tid[t], NULL);
            if (caller) attn_flops_add(caller, &jobs[t].counts);
        } else {
            blocked_worker(&jobs[t]); /* could not start a thread: do its tiles here */
        }
    }
    if (blas_threads > 1) attn_set_num_threads(blas_threads);
}

void attn_attention_blocked_forward(float *out, const float *q, const float *k, const float *v,
                                    int n_q, int n_k, int hs, int n_valid, float *work, int tile) {
    attn_attention_blocked_forward_mt(out, q, k, v, n_q, n_k, hs, n_valid, work, tile, 1);
}

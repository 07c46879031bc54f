/* layernorm_avx2.c -- the AVX2 version of LayerNorm forward and backward (compiled with
 * -mavx2 -mfma; chosen at run time by layernorm.c, see cpu.c; the plain math is in layernorm.c).
 *
 * Forward reproduces ATen 1.13 on AVX2 bit for bit: mean and variance by RowwiseMoments
 * (ATen/native/cpu/moments_utils.h: Welford over 8 lanes in chunks of 16 vectors with float
 * weights 1/(j+1), chunk results merged on a cascade stack, then the 8 lanes and the scalar
 * tail merged with the moment-merge rule), rstd = 1/sqrtf(var + eps) in float and
 * y = fma(fma(x, rstd, -rstd*mean), gamma, beta). No other FMAs anywhere.
 * Backward: the scalar formulas in double, 4 lanes at a time.
 */
#include "kernels_internal.h"

#if ATTN_HAVE_AVX2_KERNELS

#include <math.h>

#define LN_EPS       1e-5f
#define LN_CHUNK     16 /* ATen's kChunkSize: vectors per Welford chunk */
#define LN_MAX_DEPTH 64

/* One set of 8-lane moments: count m0 (per lane), mean m1, sum of squared deviations m2. */
typedef struct moments8 {
    int64_t m0;
    __m256 m1, m2;
} moments8;

/* AddMomentsVec: merge (m0_add, m1_add, m2_add) into *acc (Chan et al. pairwise update). */
static void moments8_add(moments8 *acc, int64_t m0_add, __m256 m1_add, __m256 m2_add) {
    int64_t n = acc->m0 + m0_add;
    float c = n == 0 ? 0.0f : (float)m0_add / (float)n;
    __m256 cv = _mm256_set1_ps(c);
    __m256 delta = _mm256_sub_ps(m1_add, acc->m1);
    acc->m1 = _mm256_add_ps(acc->m1, _mm256_mul_ps(cv, delta));
    /* m2 += m2_add + delta * delta * c * m0 (left to right) */
    __m256 t = _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(delta, delta), cv),
                             _mm256_set1_ps((float)acc->m0));
    acc->m2 = _mm256_add_ps(acc->m2, _mm256_add_ps(m2_add, t));
    acc->m0 = n;
}

static int ceil_log2(int64_t x) { /* ATen's CeilLog2: 1 for x <= 2 */
    if (x <= 2) return 1;
    int r = 0;
    for (uint64_t v = (uint64_t)(x - 1); v; v >>= 1) r++;
    return r;
}

/* The data-independent weights of RowwiseMoments(x, N), computed once per call instead of once
 * per row (the same float divisions, so the same values). */
typedef struct ln_plan {
    float c[8];   /* lane merge l: n / (tail + (l+1) n), 0 if that is 0 */
    float m0f[8]; /* count merged before lane l: tail + l n */
} ln_plan;

static ln_plan ln_plan_make(int N) {
    ln_plan p;
    const int64_t n = N / 8;
    int64_t m0 = N - n * 8;
    for (int l = 0; l < 8; l++) {
        int64_t nn = m0 + n;
        p.c[l] = nn == 0 ? 0.0f : (float)n / (float)nn;
        p.m0f[l] = (float)m0;
        m0 = nn;
    }
    return p;
}

/* Welford weights 1/(j+1) of a chunk step (exact constants: the compiler rounds as the CPU). */
static const float inv_count[LN_CHUNK] = {1.0f / 1.0f,  1.0f / 2.0f,  1.0f / 3.0f,  1.0f / 4.0f,
                                          1.0f / 5.0f,  1.0f / 6.0f,  1.0f / 7.0f,  1.0f / 8.0f,
                                          1.0f / 9.0f,  1.0f / 10.0f, 1.0f / 11.0f, 1.0f / 12.0f,
                                          1.0f / 13.0f, 1.0f / 14.0f, 1.0f / 15.0f, 1.0f / 16.0f};

/* The 8-lane part of RowwiseMoments(x, N): the lanes' means and squared-deviation sums into
 * *l1, *l2 (lane l in lane l), and the scalar Welford over the N mod 8 tail into *t1, *t2. */
static inline void row_lanes(const float *x, int N, __m256 *l1, __m256 *l2, float *t1, float *t2) {
    const int64_t n = N / 8, m = (n + LN_CHUNK - 1) / LN_CHUNK;
    const int depth = ceil_log2(m);
    moments8 stk[LN_MAX_DEPTH];
    for (int d = 0; d < depth; d++)
        stk[d] = (moments8){0, _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t i = 0; i < m; i++) {
        const float *xp = x + i * LN_CHUNK * 8;
        const int64_t m0 = n - i * LN_CHUNK < LN_CHUNK ? n - i * LN_CHUNK : LN_CHUNK;
        __m256 m1 = _mm256_setzero_ps(), m2 = _mm256_setzero_ps();
        for (int64_t j = 0; j < m0; j++) { /* Welford step with weight 1/(j+1) in float */
            __m256 xv = _mm256_loadu_ps(xp + j * 8);
            __m256 delta = _mm256_sub_ps(xv, m1);
            m1 = _mm256_add_ps(m1, _mm256_mul_ps(delta, _mm256_set1_ps(inv_count[j])));
            m2 = _mm256_add_ps(m2, _mm256_mul_ps(delta, _mm256_sub_ps(xv, m1)));
        }
        moments8_add(&stk[0], m0, m1, m2);
        /* cascade: carry full levels upwards like a binary counter (pairwise summation) */
        int64_t mask = i + 1;
        for (int j = 1; j < depth && (mask & 1) == 0; j++) {
            moments8_add(&stk[j], stk[j - 1].m0, stk[j - 1].m1, stk[j - 1].m2);
            stk[j - 1] = (moments8){0, _mm256_setzero_ps(), _mm256_setzero_ps()};
            mask >>= 1;
        }
    }
    for (int d = 1; d < depth; d++) moments8_add(&stk[0], stk[d].m0, stk[d].m1, stk[d].m2);
    *l1 = stk[0].m1;
    *l2 = stk[0].m2;
    /* scalar Welford over the N mod 8 tail */
    int64_t m0 = 0;
    float m1 = 0.0f, m2 = 0.0f;
    for (int64_t i = n * 8; i < N; i++) {
        float delta = x[i] - m1;
        m0++;
        m1 += delta / (float)m0;
        m2 += delta * (x[i] - m1);
    }
    *t1 = m1;
    *t2 = m2;
}

/* RowwiseMoments(x, N): *mean = mean of x[N], *var = biased variance; plan = ln_plan_make(N). */
static void rowwise_moments(const float *x, int N, const ln_plan *plan, float *mean, float *var) {
    float m1_arr[8], m2_arr[8], m1, m2;
    __m256 l1, l2;
    row_lanes(x, N, &l1, &l2, &m1, &m2);
    _mm256_storeu_ps(m1_arr, l1);
    _mm256_storeu_ps(m2_arr, l2);
    /* merge the 8 lanes (n values each) into the tail's moments */
    for (int l = 0; l < 8; l++) {
        const float c = plan->c[l];
        float delta = m1_arr[l] - m1;
        m1 += c * delta;
        m2 += m2_arr[l] + delta * delta * c * plan->m0f[l];
    }
    *mean = m1;
    *var = m2 / (float)N;
}

/* v[r] (row r, lane l) -> v[l] (lane l, row r): an 8 x 8 transpose in registers (moves only). */
static inline void transpose8(__m256 v[8]) {
    __m256 t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(v[2 * i], v[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(v[2 * i], v[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) {
        u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int i = 0; i < 4; i++) {
        v[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        v[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
}

/* rowwise_moments of 8 rows x + r * N (r < 8) at once: the lane merge, a chain of dependent
 * scalar steps per row, runs with the 8 rows in the 8 lanes of a vector -- the same float
 * operations in the same order for every row, so the same bits. The rows' lane vectors are
 * turned into per-lane vectors of the 8 rows by a transpose in registers. */
static void rowwise_moments8(const float *x, int N, const ln_plan *plan, float *mean, float *var) {
    __m256 l1[8], l2[8]; /* [row] (lanes), then [lane] (rows) */
    float t1[8], t2[8];  /* [row] */
    for (int r = 0; r < 8; r++) row_lanes(x + (size_t)r * N, N, &l1[r], &l2[r], &t1[r], &t2[r]);
    transpose8(l1);
    transpose8(l2);
    __m256 m1 = _mm256_loadu_ps(t1), m2 = _mm256_loadu_ps(t2);
    for (int l = 0; l < 8; l++) {
        const __m256 c = _mm256_set1_ps(plan->c[l]), m0f = _mm256_set1_ps(plan->m0f[l]);
        const __m256 delta = _mm256_sub_ps(l1[l], m1);
        m1 = _mm256_add_ps(m1, _mm256_mul_ps(c, delta));
        /* m2 += m2_l + delta * delta * c * m0f (left to right) */
        const __m256 t = _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(delta, delta), c), m0f);
        m2 = _mm256_add_ps(m2, _mm256_add_ps(l2[l], t));
    }
    _mm256_storeu_ps(mean, m1);
    _mm256_storeu_ps(var, _mm256_div_ps(m2, _mm256_set1_ps((float)N)));
}

/* y[n,D] = (x - mean) * rstd * gamma[D] + beta[D]; saves mean[n], rstd[n]. */
void attn_layernorm_forward_avx2(float *y, float *mean, float *rstd, const float *x,
                                 const float *gamma, const float *beta, int n, int D) {
    const ln_plan plan = ln_plan_make(D);
    float mu8[8], var8[8];
    for (int i = 0; i < n; i++) {
        const float *xr = x + (size_t)i * D;
        float *yr = y + (size_t)i * D;
        float mu, var;
        if (i % 8 == 0 && i + 8 <= n) rowwise_moments8(xr, D, &plan, mu8, var8);
        if (i - i % 8 + 8 <= n) {
            mu = mu8[i % 8];
            var = var8[i % 8];
        } else {
            rowwise_moments(xr, D, &plan, &mu, &var);
        }
        float rs = 1.0f / sqrtf(fmaxf(var, 0.0f) + LN_EPS);
        float scale = rs, bias = -rs * mu;
        for (int j = 0; j < D; j++) yr[j] = fmaf(fmaf(xr[j], scale, bias), gamma[j], beta[j]);
        mean[i] = mu;
        rstd[i] = rs;
    }
}

/* With xhat = (x - mean) * rstd and g = d_y * gamma (the gradient w.r.t. xhat):
 *   d_gamma += sum_rows d_y * xhat,  d_beta += sum_rows d_y,
 *   d_x += rstd * (g - mean_j(g) - xhat * mean_j(g * xhat)). Per row in double, 4 lanes at a
 * time (the two row sums are 4 lane-wise partial sums, then added). */
void attn_layernorm_backward_avx2(float *d_x, float *d_gamma, float *d_beta, const float *d_y,
                                  const float *x, const float *mean, const float *rstd,
                                  const float *gamma, int n, int D) {
    const int D4 = D - D % 4;
    for (int i = 0; i < n; i++) {
        const float *xr = x + (size_t)i * D, *dyr = d_y + (size_t)i * D;
        const double mu = mean[i], rs = rstd[i];
        const __m256d vmu = _mm256_set1_pd(mu), vrs = _mm256_set1_pd(rs);
        __m256d acc_g = _mm256_setzero_pd(), acc_gx = _mm256_setzero_pd();
        int j = 0;
        for (; j < D4; j += 4) {
            __m256d dy = _mm256_cvtps_pd(_mm_loadu_ps(dyr + j));
            __m256d xhat =
                _mm256_mul_pd(_mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(xr + j)), vmu), vrs);
            __m256d g = _mm256_mul_pd(dy, _mm256_cvtps_pd(_mm_loadu_ps(gamma + j)));
            acc_g = _mm256_add_pd(acc_g, g);
            acc_gx = _mm256_add_pd(acc_gx, _mm256_mul_pd(g, xhat));
            if (d_gamma)
                _mm_storeu_ps(d_gamma + j, _mm_add_ps(_mm_loadu_ps(d_gamma + j),
                                                      _mm256_cvtpd_ps(_mm256_mul_pd(dy, xhat))));
            if (d_beta)
                _mm_storeu_ps(d_beta + j,
                              _mm_add_ps(_mm_loadu_ps(d_beta + j), _mm_loadu_ps(dyr + j)));
        }
        double sg[4], sgx[4];
        _mm256_storeu_pd(sg, acc_g);
        _mm256_storeu_pd(sgx, acc_gx);
        double g_mean = (sg[0] + sg[1]) + (sg[2] + sg[3]);
        double gx_mean = (sgx[0] + sgx[1]) + (sgx[2] + sgx[3]);
        for (; j < D; j++) {
            double xhat = ((double)xr[j] - mu) * rs;
            double g = (double)dyr[j] * gamma[j];
            g_mean += g;
            gx_mean += g * xhat;
            if (d_gamma) d_gamma[j] += (float)((double)dyr[j] * xhat);
            if (d_beta) d_beta[j] += dyr[j];
        }
        g_mean /= D;
        gx_mean /= D;
        if (!d_x) continue;
        float *dxr = d_x + (size_t)i * D;
        const __m256d vgm = _mm256_set1_pd(g_mean), vgxm = _mm256_set1_pd(gx_mean);
        for (j = 0; j < D4; j += 4) {
            __m256d xhat =
                _mm256_mul_pd(_mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(xr + j)), vmu), vrs);
            __m256d g = _mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(dyr + j)),
                                      _mm256_cvtps_pd(_mm_loadu_ps(gamma + j)));
            __m256d t = _mm256_sub_pd(_mm256_sub_pd(g, vgm), _mm256_mul_pd(xhat, vgxm));
            _mm_storeu_ps(
                dxr + j, _mm_add_ps(_mm_loadu_ps(dxr + j), _mm256_cvtpd_ps(_mm256_mul_pd(vrs, t))));
        }
        for (; j < D; j++) {
            double xhat = ((double)xr[j] - mu) * rs;
            double g = (double)dyr[j] * gamma[j];
            dxr[j] += (float)(rs * (g - g_mean - xhat * gx_mean));
        }
    }
}

#endif /* ATTN_HAVE_AVX2_KERNELS */

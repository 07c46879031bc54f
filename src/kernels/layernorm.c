/* layernorm.c -- LayerNorm over the last dimension D of x[n,D], eps = 1e-5, biased variance.
 *
 * Forward reproduces ATen 1.13 on AVX2 bit for bit: mean and variance by RowwiseMoments
 * (ATen/native/cpu/moments_utils.h: Welford over 8 lanes in chunks of 16 vectors with float
 * weights 1/(j+1), chunk results merged on a cascade stack, then the 8 lanes and the scalar
 * tail merged with the moment-merge rule), rstd = 1/sqrtf(var + eps) in float and
 * y = fma(fma(x, rstd, -rstd*mean), gamma, beta). No other FMAs anywhere.
 * Saves mean[n] and rstd[n] for backward; backward ACCUMULATES into d_x, d_gamma, d_beta.
 */
#include "kernels_internal.h"

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

/* RowwiseMoments(x, N): *mean = mean of x[N], *var = biased variance. */
static void rowwise_moments(const float *x, int N, float *mean, float *var) {
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
            m1 = _mm256_add_ps(m1, _mm256_mul_ps(delta, _mm256_set1_ps(1.0f / (float)(j + 1))));
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
    float m1_arr[8], m2_arr[8];
    _mm256_storeu_ps(m1_arr, stk[0].m1);
    _mm256_storeu_ps(m2_arr, stk[0].m2);
    /* scalar Welford over the N mod 8 tail, then merge the 8 lanes (n values each) into it */
    int64_t m0 = 0;
    float m1 = 0.0f, m2 = 0.0f;
    for (int64_t i = n * 8; i < N; i++) {
        float delta = x[i] - m1;
        m0++;
        m1 += delta / (float)m0;
        m2 += delta * (x[i] - m1);
    }
    for (int l = 0; l < 8; l++) {
        int64_t nn = m0 + n;
        float c = nn == 0 ? 0.0f : (float)n / (float)nn;
        float delta = m1_arr[l] - m1;
        m1 += c * delta;
        m2 += m2_arr[l] + delta * delta * c * (float)m0;
        m0 = nn;
    }
    *mean = m1;
    *var = m2 / (float)N;
}

/* y[n,D] = (x - mean) * rstd * gamma[D] + beta[D]; saves mean[n], rstd[n]. */
void attn_layernorm_forward(float *y, float *mean, float *rstd, const float *x, const float *gamma,
                            const float *beta, int n, int D) {
    for (int i = 0; i < n; i++) {
        const float *xr = x + (size_t)i * D;
        float *yr = y + (size_t)i * D;
        float mu, var;
        rowwise_moments(xr, D, &mu, &var);
        float rs = 1.0f / sqrtf(fmaxf(var, 0.0f) + LN_EPS);
        float scale = rs, bias = -rs * mu;
        for (int j = 0; j < D; j++) yr[j] = fmaf(fmaf(xr[j], scale, bias), gamma[j], beta[j]);
        mean[i] = mu;
        rstd[i] = rs;
    }
}

/* With xhat = (x - mean) * rstd and g = d_y * gamma (the gradient w.r.t. xhat):
 *   d_gamma += sum_rows d_y * xhat,  d_beta += sum_rows d_y,
 *   d_x += rstd * (g - mean_j(g) - xhat * mean_j(g * xhat)). Accumulated in double per row. */
void attn_layernorm_backward(float *d_x, float *d_gamma, float *d_beta, const float *d_y,
                             const float *x, const float *mean, const float *rstd,
                             const float *gamma, int n, int D) {
    for (int i = 0; i < n; i++) {
        const float *xr = x + (size_t)i * D, *dyr = d_y + (size_t)i * D;
        const double mu = mean[i], rs = rstd[i];
        double g_mean = 0.0, gx_mean = 0.0;
        for (int j = 0; j < D; j++) {
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
        for (int j = 0; j < D; j++) {
            double xhat = ((double)xr[j] - mu) * rs;
            double g = (double)dyr[j] * gamma[j];
            dxr[j] += (float)(rs * (g - g_mean - xhat * gx_mean));
        }
    }
}

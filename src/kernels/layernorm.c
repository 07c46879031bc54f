/* layernorm.c -- LayerNorm over the last dimension D of x[n,D], eps = 1e-5, biased variance.
 *
 * Two paths (cpu.c chooses): the functions below (the "scalar" path, plain C, any CPU) and
 * layernorm_avx2.c on a CPU with AVX2 and FMA. Each forward reproduces ATen 1.13's
 * LayerNormKernelImplInternal for one CPU capability bit for bit; the scalar one is PyTorch run
 * with ATEN_CPU_CAPABILITY=default, whose Vectorized<float> is the generic 8-lane class of
 * vec_base.h. The same steps as the AVX2 path:
 *   mean and variance by RowwiseMoments (ATen/native/cpu/moments_utils.h): Welford over 8
 *   lanes in chunks of 16 vectors with the float weights 1/(j+1), chunk results merged on a
 *   cascade stack, then the scalar tail (D mod 8) and the 8 lanes merged with the moment-merge
 *   rule; rstd = 1/sqrtf(max(var, 0) + eps) in float; y = (x * rstd + (-rstd * mean)) * gamma
 *   + beta.
 * The difference is only the rounding of that last line: the default build is compiled for
 * baseline x86-64 (no FMA), so every multiply and add rounds on its own here, where the AVX2
 * build fuses the two multiply-adds.
 * Saves mean[n] and rstd[n] for backward; backward ACCUMULATES into d_x, d_gamma, d_beta.
 */
#include "kernels_internal.h"

#include <math.h>

#define LN_EPS 1e-5f

#define LN_LANES     8  /* the generic Vectorized<float>: 32 bytes */
#define LN_CHUNK     16 /* ATen's kChunkSize: vectors per Welford chunk */
#define LN_MAX_DEPTH 64

/* One set of 8-lane moments: count m0 (per lane), mean m1, sum of squared deviations m2. */
typedef struct lanes_moments {
    int64_t m0;
    float m1[LN_LANES], m2[LN_LANES];
} lanes_moments;

/* AddMomentsVec: merge (m0_add, m1_add, m2_add) into *acc (Chan et al. pairwise update):
 * c = m0_add / n, m1 += c delta, m2 += m2_add + delta delta c m0 (left to right). */
static void moments_add(lanes_moments *acc, int64_t m0_add, const float *m1_add,
                        const float *m2_add) {
    const int64_t n = acc->m0 + m0_add;
    const float c = n == 0 ? 0.0f : (float)m0_add / (float)n, m0 = (float)acc->m0;
    for (int l = 0; l < LN_LANES; l++) {
        const float delta = m1_add[l] - acc->m1[l];
        acc->m1[l] += c * delta;
        acc->m2[l] += m2_add[l] + delta * delta * c * m0;
    }
    acc->m0 = n;
}

static int ceil_log2(int64_t x) { /* ATen's CeilLog2: 1 for x <= 2 */
    if (x <= 2) return 1;
    int r = 0;
    for (uint64_t v = (uint64_t)(x - 1); v; v >>= 1) r++;
    return r;
}

/* Welford over the vectors xp[0..m0) of one chunk with weights 1/(j+1), merged into *acc. */
static void chunk_moments(lanes_moments *acc, const float *xp, int64_t m0) {
    float m1[LN_LANES] = {0}, m2[LN_LANES] = {0};
    for (int64_t j = 0; j < m0; j++) {
        const float w = 1.0f / (float)(j + 1);
        for (int l = 0; l < LN_LANES; l++) {
            const float xv = xp[j * LN_LANES + l], delta = xv - m1[l];
            m1[l] += delta * w;
            m2[l] += delta * (xv - m1[l]);
        }
    }
    moments_add(acc, m0, m1, m2);
}

/* RowwiseMoments(x, N): *mean = mean of x[N], *var = biased variance. */
static void rowwise_moments(const float *x, int N, float *mean, float *var) {
    const int64_t n = N / LN_LANES, m = (n + LN_CHUNK - 1) / LN_CHUNK;
    const int depth = ceil_log2(m);
    lanes_moments stk[LN_MAX_DEPTH];
    memset(stk, 0, sizeof(lanes_moments) * (size_t)depth);
    for (int64_t i = 0; i < m; i++) {
        const int64_t left = n - i * LN_CHUNK;
        chunk_moments(&stk[0], x + i * LN_CHUNK * LN_LANES, left < LN_CHUNK ? left : LN_CHUNK);
        /* cascade: carry full levels upwards like a binary counter (pairwise summation) */
        int64_t mask = i + 1;
        for (int j = 1; j < depth && (mask & 1) == 0; j++) {
            moments_add(&stk[j], stk[j - 1].m0, stk[j - 1].m1, stk[j - 1].m2);
            memset(&stk[j - 1], 0, sizeof stk[j - 1]);
            mask >>= 1;
        }
    }
    for (int d = 1; d < depth; d++) moments_add(&stk[0], stk[d].m0, stk[d].m1, stk[d].m2);
    /* scalar Welford over the N mod 8 tail, then merge the 8 lanes (n values each) into it */
    int64_t m0 = 0;
    float m1 = 0.0f, m2 = 0.0f;
    for (int64_t i = n * LN_LANES; i < N; i++) {
        const float delta = x[i] - m1;
        m0++;
        m1 += delta / (float)m0;
        m2 += delta * (x[i] - m1);
    }
    for (int l = 0; l < LN_LANES; l++) { /* AddMoments(n, m1_arr[l], m2_arr[l], m0, m1, m2) */
        const int64_t nn = m0 + n;
        const float c = nn == 0 ? 0.0f : (float)n / (float)nn;
        const float delta = stk[0].m1[l] - m1;
        m1 += c * delta;
        m2 += stk[0].m2[l] + delta * delta * c * (float)m0;
        m0 = nn;
    }
    *mean = m1;
    *var = m2 / (float)N;
}

/* y[n,D] = (x - mean) * rstd * gamma[D] + beta[D]; saves mean[n], rstd[n]. */
void attn_layernorm_forward(float *y, float *mean, float *rstd, const float *x, const float *gamma,
                            const float *beta, int n, int D) {
#if ATTN_HAVE_AVX2_KERNELS
    if (attn_cpu_use_avx2()) {
        attn_layernorm_forward_avx2(y, mean, rstd, x, gamma, beta, n, D);
        return;
    }
#endif
    for (int i = 0; i < n; i++) {
        const float *xr = x + (size_t)i * D;
        float *yr = y + (size_t)i * D;
        float mu, var;
        rowwise_moments(xr, D, &mu, &var);
        const float rs = 1.0f / sqrtf(fmaxf(var, 0.0f) + LN_EPS);
        const float scale = rs, bias = -rs * mu;
        for (int j = 0; j < D; j++) yr[j] = (xr[j] * scale + bias) * gamma[j] + beta[j];
        mean[i] = mu;
        rstd[i] = rs;
    }
}

/* With xhat = (x - mean) * rstd and g = d_y * gamma (the gradient w.r.t. xhat):
 *   d_gamma += sum_rows d_y * xhat,  d_beta += sum_rows d_y,
 *   d_x += rstd * (g - mean_j(g) - xhat * mean_j(g * xhat)). Per row in double. */
void attn_layernorm_backward(float *d_x, float *d_gamma, float *d_beta, const float *d_y,
                             const float *x, const float *mean, const float *rstd,
                             const float *gamma, int n, int D) {
#if ATTN_HAVE_AVX2_KERNELS
    if (attn_cpu_use_avx2()) {
        attn_layernorm_backward_avx2(d_x, d_gamma, d_beta, d_y, x, mean, rstd, gamma, n, D);
        return;
    }
#endif
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

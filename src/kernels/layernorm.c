/* layernorm.c -- LayerNorm over the last dimension D of x[n,D], eps = 1e-5, biased variance.
 *
 * The functions below state the math in plain C (the "scalar" path, any CPU). On a CPU with
 * AVX2 and FMA both run layernorm_avx2.c instead (cpu.c chooses), which reproduces ATen 1.13's
 * AVX2 LayerNorm bit for bit.
 * The scalar forward follows ATen's default (non-vectorised) build in its last steps:
 * rstd = 1/sqrtf(max(var, 0) + eps) in float and y = (x * rstd + (-rstd * mean)) * gamma + beta
 * with separate roundings (no FMA contraction in that build). It does not follow ATen for the
 * moments: mean and variance come from a two-pass sum in double, rounded once to float, where
 * ATen runs an 8-lane float Welford (RowwiseMoments), so mean/rstd can differ in the last bits
 * (measured against torch 1.13 with ATEN_CPU_CAPABILITY=default on 24 rows of 96: 1893/2304
 * identical, max error 2.4e-7 relative, absolute below |y| = 1).
 * Saves mean[n] and rstd[n] for backward; backward ACCUMULATES into d_x, d_gamma, d_beta.
 */
#include "kernels_internal.h"

#include <math.h>

#define LN_EPS 1e-5f

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
        double sum = 0.0, sq = 0.0;
        for (int j = 0; j < D; j++) sum += xr[j];
        const double mu = sum / D;
        for (int j = 0; j < D; j++) sq += (xr[j] - mu) * (xr[j] - mu);
        const float mu_f = (float)mu, var = (float)(sq / D);
        const float rs = 1.0f / sqrtf(fmaxf(var, 0.0f) + LN_EPS);
        const float scale = rs, bias = -rs * mu_f;
        for (int j = 0; j < D; j++) yr[j] = (xr[j] * scale + bias) * gamma[j] + beta[j];
        mean[i] = mu_f;
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

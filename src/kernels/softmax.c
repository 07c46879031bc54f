/* softmax.c -- row softmax over the first n_valid of cols columns (masked keys get 0).
 *
 * The functions below state the math in plain C (the "scalar" path, any CPU). On a CPU with
 * AVX2 and FMA both run softmax_avx2.c instead (cpu.c chooses), which reproduces ATen 1.13's
 * vectorised softmax bit for bit.
 * The scalar forward follows ATen's _vec_softmax_lastdim in its steps (max, exp(x - max), sum,
 * multiply by 1/sum) with glibc expf as ATen's default (non-vectorised) build; it does not follow
 * the order of vec::reduce_all's 8-lane sum for rows of 8 or more (a plain left-to-right sum
 * here), so it can differ from PyTorch in the last bits (measured against torch 1.13 with
 * ATEN_CPU_CAPABILITY=default on 37 rows of 100: 1487/3700 identical, max 10 ULP).
 * Backward uses only the saved probs and ACCUMULATES into d_x. The forward may run in place
 * (probs == x).
 */
#include "kernels_internal.h"

#include <math.h>

/* probs[rows,cols]: p_j = exp(x_j - max) / sum_k exp(x_k - max) for j < n_valid, else 0.
 * A row with n_valid == 0 (every key masked) is all zeros by definition. probs may alias x. */
void attn_softmax_forward(float *probs, const float *x, int rows, int cols, int n_valid) {
    ATTN_ASSERT(n_valid >= 0 && n_valid <= cols);
#if ATTN_HAVE_AVX2_KERNELS
    if (attn_cpu_use_avx2()) {
        attn_softmax_forward_avx2(probs, x, rows, cols, n_valid);
        return;
    }
#endif
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *pr = probs + (size_t)r * cols;
        for (int j = n_valid; j < cols; j++) pr[j] = 0.0f;
        if (n_valid == 0) continue;
        float m = xr[0]; /* the max, NaN-propagating like ATen's vec::maximum */
        for (int j = 1; j < n_valid; j++) m = (xr[j] > m || isnan(xr[j])) ? xr[j] : m;
        float sum = 0.0f;
        for (int j = 0; j < n_valid; j++) {
            pr[j] = expf(xr[j] - m);
            sum += pr[j];
        }
        const float inv = 1.0f / sum; /* ATen multiplies by the reciprocal, as here */
        for (int j = 0; j < n_valid; j++) pr[j] *= inv;
    }
}

/* d_x[rows,cols] += p * (d_p - sum_j p_j d_p_j) (the softmax Jacobian diag(p) - p p^T applied
 * to d_p); masked columns have p = 0 and get nothing. In double. */
void attn_softmax_backward(float *d_x, const float *d_probs, const float *probs, int rows, int cols,
                           int n_valid) {
    if (!d_x) return;
#if ATTN_HAVE_AVX2_KERNELS
    if (attn_cpu_use_avx2()) {
        attn_softmax_backward_avx2(d_x, d_probs, probs, rows, cols, n_valid);
        return;
    }
#endif
    for (int r = 0; r < rows; r++) {
        const float *pr = probs + (size_t)r * cols, *dpr = d_probs + (size_t)r * cols;
        float *dxr = d_x + (size_t)r * cols;
        double dot = 0.0;
        for (int j = 0; j < n_valid; j++) dot += (double)pr[j] * dpr[j];
        for (int j = 0; j < n_valid; j++) dxr[j] += (float)(pr[j] * (dpr[j] - dot));
    }
}

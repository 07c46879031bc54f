/* softmax.c -- row softmax over the first n_valid of cols columns (masked keys get 0).
 *
 * Forward reproduces ATen 1.13's _vec_softmax_lastdim on AVX2 bit for bit:
 *   m = reduce_all(max, x); y = Sleef_expf8_u10(x - m); s = reduce_all(+, y); y *= 1/s,
 * where reduce_all is ATen's vec::reduce_all (functional_base.h): a sequential fold for rows
 * shorter than 8; otherwise 8 lane-wise accumulators (the partial last vector updates only its
 * valid lanes), combined as ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)).
 * Backward uses only the saved probs and ACCUMULATES into d_x.
 */
#include "kernels_internal.h"

#include <sleef.h>

/* ATen's vec::maximum: max that propagates NaN from either side. */
static inline __m256 vmax(__m256 a, __m256 b) {
    return _mm256_or_ps(_mm256_max_ps(a, b), _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
}
static inline float smax(float a, float b) {
    return (a != a || b != b) ? a + b : (a > b ? a : b); /* lane 0 of vmax */
}

/* Horizontal reduction in ATen's shuffle order: 128-bit swap, 64-bit swap, 32-bit swap. */
static inline float hreduce(__m256 v, bool is_max) {
    __m256 t = _mm256_permute2f128_ps(v, v, 0x1);
    v = is_max ? vmax(v, t) : _mm256_add_ps(v, t);
    t = _mm256_shuffle_ps(v, v, 0x4E);
    v = is_max ? vmax(v, t) : _mm256_add_ps(v, t);
    t = _mm256_shuffle_ps(v, v, 0xB1);
    v = is_max ? vmax(v, t) : _mm256_add_ps(v, t);
    return _mm256_cvtss_f32(v);
}

/* vec::reduce_all(max or +, p, n) for n >= 1. */
static float reduce_all(const float *p, int n, bool is_max) {
    if (n < 8) { /* slow path: lane 0 folds the elements in order */
        float acc = p[0];
        for (int i = 1; i < n; i++) acc = is_max ? smax(acc, p[i]) : acc + p[i];
        return acc;
    }
    __m256 acc = _mm256_loadu_ps(p);
    int d = 8;
    for (; d < n - n % 8; d += 8) {
        __m256 v = _mm256_loadu_ps(p + d);
        acc = is_max ? vmax(acc, v) : _mm256_add_ps(acc, v);
    }
    if (n - d > 0) { /* Vec::set(acc, f(acc, partial), n - d): only the valid lanes change */
        float a[8], b[8];
        _mm256_storeu_ps(a, acc);
        _mm256_storeu_ps(b, attn_load_partial8(p + d, (size_t)(n - d)));
        for (int j = 0; j < n - d; j++) a[j] = is_max ? smax(a[j], b[j]) : a[j] + b[j];
        acc = _mm256_loadu_ps(a);
    }
    return hreduce(acc, is_max);
}

/* probs[rows,cols]: p_j = exp(x_j - max) / sum_k exp(x_k - max) for j < n_valid, else 0.
 * A row with n_valid == 0 (every key masked) is all zeros by definition. */
void attn_softmax_forward(float *probs, const float *x, int rows, int cols, int n_valid) {
    ATTN_ASSERT(n_valid >= 0 && n_valid <= cols);
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *pr = probs + (size_t)r * cols;
        for (int j = n_valid; j < cols; j++) pr[j] = 0.0f;
        if (n_valid == 0) continue;
        __m256 m = _mm256_set1_ps(reduce_all(xr, n_valid, true));
        int j = 0;
        for (; j + 8 <= n_valid; j += 8)
            _mm256_storeu_ps(pr + j, Sleef_expf8_u10(_mm256_sub_ps(_mm256_loadu_ps(xr + j), m)));
        if (j < n_valid) {
            size_t tail = (size_t)(n_valid - j);
            __m256 v = _mm256_sub_ps(attn_load_partial8(xr + j, tail), m);
            attn_store_partial8(pr + j, Sleef_expf8_u10(v), tail);
        }
        float inv = 1.0f / reduce_all(pr, n_valid, false);
        for (j = 0; j < n_valid; j++) pr[j] *= inv;
    }
}

/* d_x[rows,cols] += p * (d_p - sum_j p_j d_p_j) (the softmax Jacobian diag(p) - p p^T applied
 * to d_p); masked columns have p = 0 and get nothing. */
void attn_softmax_backward(float *d_x, const float *d_probs, const float *probs, int rows, int cols,
                           int n_valid) {
    if (!d_x) return;
    for (int r = 0; r < rows; r++) {
        const float *pr = probs + (size_t)r * cols, *dpr = d_probs + (size_t)r * cols;
        float *dxr = d_x + (size_t)r * cols;
        double dot = 0.0;
        for (int j = 0; j < n_valid; j++) dot += (double)pr[j] * dpr[j];
        for (int j = 0; j < n_valid; j++) dxr[j] += (float)(pr[j] * (dpr[j] - dot));
    }
}

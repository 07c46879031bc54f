/* softmax_avx2.c -- the AVX2 version of the row softmax, forward and backward (compiled with
 * -mavx2 -mfma; chosen at run time by softmax.c, see cpu.c; the plain math is in softmax.c).
 *
 * Forward reproduces ATen 1.13's _vec_softmax_lastdim on AVX2 bit for bit:
 *   m = reduce_all(max, x); y = Sleef_expf8_u10(x - m); s = reduce_all(+, y); y *= 1/s,
 * where reduce_all is ATen's vec::reduce_all (functional_base.h): a sequential fold for rows
 * shorter than 8; otherwise 8 lane-wise accumulators (the partial last vector updates only its
 * valid lanes), combined as ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)).
 * Backward: the scalar formula in double, 4 lanes at a time.
 */
#include "kernels_internal.h"

#if ATTN_HAVE_AVX2_KERNELS

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

/* Lanes 0..r-1 set (0 <= r <= 8). */
static inline __m256i lane_mask(int r) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(r), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* vec::reduce_all(maximum, p, n) for n >= 1. */
static float reduce_max(const float *p, int n) {
    if (n < 8) { /* slow path: lane 0 folds the elements in order */
        float acc = p[0];
        for (int i = 1; i < n; i++) acc = smax(acc, p[i]);
        return acc;
    }
    __m256 acc = _mm256_loadu_ps(p);
    int d = 8;
    for (; d + 8 <= n; d += 8) acc = vmax(acc, _mm256_loadu_ps(p + d));
    if (d < n) { /* Vec::set(acc, maximum(acc, partial), n - d): only the valid lanes change */
        __m256i mask = lane_mask(n - d);
        __m256 m = vmax(acc, _mm256_maskload_ps(p + d, mask));
        acc = _mm256_blendv_ps(acc, m, _mm256_castsi256_ps(mask));
    }
    return hreduce(acc, true);
}

/* probs[rows,cols]: p_j = exp(x_j - max) / sum_k exp(x_k - max) for j < n_valid, else 0.
 * A row with n_valid == 0 (every key masked) is all zeros by definition. probs may alias x.
 * The exponentials are summed as they are made, in vec::reduce_all's order. */
void attn_softmax_forward_avx2(float *probs, const float *x, int rows, int cols, int n_valid) {
    ATTN_ASSERT(n_valid >= 0 && n_valid <= cols);
    const int full = n_valid - n_valid % 8, tail = n_valid - full;
    const __m256i tmask = lane_mask(tail);
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *pr = probs + (size_t)r * cols;
        for (int j = n_valid; j < cols; j++) pr[j] = 0.0f;
        if (n_valid == 0) continue;
        const __m256 m = _mm256_set1_ps(reduce_max(xr, n_valid));
        float sum;
        if (n_valid < 8) { /* one partial vector; reduce_all's slow path folds it in order */
            __m256 e = Sleef_expf8_u10(_mm256_sub_ps(_mm256_maskload_ps(xr, tmask), m));
            _mm256_maskstore_ps(pr, tmask, e);
            sum = pr[0];
            for (int j = 1; j < n_valid; j++) sum += pr[j];
        } else {
            __m256 acc = Sleef_expf8_u10(_mm256_sub_ps(_mm256_loadu_ps(xr), m));
            _mm256_storeu_ps(pr, acc);
            for (int j = 8; j < full; j += 8) {
                __m256 e = Sleef_expf8_u10(_mm256_sub_ps(_mm256_loadu_ps(xr + j), m));
                _mm256_storeu_ps(pr + j, e);
                acc = _mm256_add_ps(acc, e);
            }
            if (tail) {
                __m256 e = Sleef_expf8_u10(_mm256_sub_ps(_mm256_maskload_ps(xr + full, tmask), m));
                _mm256_maskstore_ps(pr + full, tmask, e);
                acc = _mm256_blendv_ps(acc, _mm256_add_ps(acc, e), _mm256_castsi256_ps(tmask));
            }
            sum = hreduce(acc, false);
        }
        const __m256 inv = _mm256_set1_ps(1.0f / sum);
        int j = 0;
        for (; j < full; j += 8)
            _mm256_storeu_ps(pr + j, _mm256_mul_ps(_mm256_loadu_ps(pr + j), inv));
        if (tail)
            _mm256_maskstore_ps(pr + j, tmask,
                                _mm256_mul_ps(_mm256_maskload_ps(pr + j, tmask), inv));
    }
}

/* ---- ATen's avx512 softmax (ATTN_CPU=avx512), on AVX2 instructions ------------------------
 * The same steps with Vectorized<float> of 16 lanes: reduce_all folds rows shorter than 16 in
 * order; longer ones keep 16 lane-wise accumulators (here two 8-lane halves; a partial last
 * vector updates only its valid lanes) folded by AVX-512 shuffles: lane i with lane i+8 (the
 * 256-bit swap), then i^4, i^2, i^1, which is hreduce of op(low half, high half). The
 * exponentials are Sleef's u10 expf, the same bits per element at 8 or 16 lanes. */

/* vec::reduce_all(op, p, n) on 16 lanes, n >= 1; op is maximum (is_max) or +. */
static float reduce16(const float *p, int n, bool is_max) {
    if (n < 16) {
        float acc = p[0];
        for (int i = 1; i < n; i++) acc = is_max ? smax(acc, p[i]) : acc + p[i];
        return acc;
    }
    __m256 lo = _mm256_loadu_ps(p), hi = _mm256_loadu_ps(p + 8);
    int d = 16;
    for (; d + 16 <= n; d += 16) {
        __m256 a = _mm256_loadu_ps(p + d), b = _mm256_loadu_ps(p + d + 8);
        lo = is_max ? vmax(lo, a) : _mm256_add_ps(lo, a);
        hi = is_max ? vmax(hi, b) : _mm256_add_ps(hi, b);
    }
    if (d < n) { /* Vec::set(acc, op(acc, partial), n - d) on both halves */
        const int r = n - d;
        __m256i mlo = lane_mask(r < 8 ? r : 8), mhi = lane_mask(r > 8 ? r - 8 : 0);
        __m256 a = _mm256_maskload_ps(p + d, mlo), b = _mm256_maskload_ps(p + d + 8, mhi);
        a = is_max ? vmax(lo, a) : _mm256_add_ps(lo, a);
        b = is_max ? vmax(hi, b) : _mm256_add_ps(hi, b);
        lo = _mm256_blendv_ps(lo, a, _mm256_castsi256_ps(mlo));
        hi = _mm256_blendv_ps(hi, b, _mm256_castsi256_ps(mhi));
    }
    return hreduce(is_max ? vmax(lo, hi) : _mm256_add_ps(lo, hi), is_max);
}

/* probs[rows,cols] as attn_softmax_forward_avx2, with ATen's 16-lane reductions. */
void attn_softmax_forward_avx512(float *probs, const float *x, int rows, int cols, int n_valid) {
    ATTN_ASSERT(n_valid >= 0 && n_valid <= cols);
    const int full = n_valid - n_valid % 8, tail = n_valid - full;
    const __m256i tmask = lane_mask(tail);
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *pr = probs + (size_t)r * cols;
        for (int j = n_valid; j < cols; j++) pr[j] = 0.0f;
        if (n_valid == 0) continue;
        const __m256 m = _mm256_set1_ps(reduce16(xr, n_valid, true));
        int j = 0;
        for (; j < full; j += 8)
            _mm256_storeu_ps(pr + j, Sleef_expf8_u10(_mm256_sub_ps(_mm256_loadu_ps(xr + j), m)));
        if (tail)
            _mm256_maskstore_ps(
                pr + j, tmask,
                Sleef_expf8_u10(_mm256_sub_ps(_mm256_maskload_ps(xr + j, tmask), m)));
        const __m256 inv = _mm256_set1_ps(1.0f / reduce16(pr, n_valid, false));
        for (j = 0; j < full; j += 8)
            _mm256_storeu_ps(pr + j, _mm256_mul_ps(_mm256_loadu_ps(pr + j), inv));
        if (tail)
            _mm256_maskstore_ps(pr + j, tmask,
                                _mm256_mul_ps(_mm256_maskload_ps(pr + j, tmask), inv));
    }
}

/* d_x[rows,cols] += p * (d_p - sum_j p_j d_p_j) (the softmax Jacobian diag(p) - p p^T applied
 * to d_p); masked columns have p = 0 and get nothing. In double, 4 lanes at a time. set: d_x =
 * +0 + that instead (masked columns +0), the bits of adding it to a zeroed d_x. */
static void softmax_backward(float *d_x, const float *d_probs, const float *probs, int rows,
                             int cols, int n_valid, bool set) {
    const int n4 = n_valid - n_valid % 4;
    for (int r = 0; r < rows; r++) {
        const float *pr = probs + (size_t)r * cols, *dpr = d_probs + (size_t)r * cols;
        float *dxr = d_x + (size_t)r * cols;
        __m256d acc = _mm256_setzero_pd();
        int j = 0;
        for (; j < n4; j += 4)
            acc = _mm256_add_pd(acc, _mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(pr + j)),
                                                   _mm256_cvtps_pd(_mm_loadu_ps(dpr + j))));
        double part[4];
        _mm256_storeu_pd(part, acc);
        double dot = (part[0] + part[1]) + (part[2] + part[3]);
        for (; j < n_valid; j++) dot += (double)pr[j] * dpr[j];
        const __m256d vdot = _mm256_set1_pd(dot);
        for (j = 0; j < n4; j += 4) {
            __m256d t = _mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(pr + j)),
                                      _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(dpr + j)), vdot));
            const __m128 old = set ? _mm_setzero_ps() : _mm_loadu_ps(dxr + j);
            _mm_storeu_ps(dxr + j, _mm_add_ps(old, _mm256_cvtpd_ps(t)));
        }
        for (; j < n_valid; j++) dxr[j] = (set ? 0.0f : dxr[j]) + (float)(pr[j] * (dpr[j] - dot));
        if (set)
            for (; j < cols; j++) dxr[j] = 0.0f;
    }
}

void attn_softmax_backward_avx2(float *d_x, const float *d_probs, const float *probs, int rows,
                                int cols, int n_valid) {
    if (!d_x) return;
    softmax_backward(d_x, d_probs, probs, rows, cols, n_valid, false);
}

void attn_softmax_backward_set_avx2(float *d_x, const float *d_probs, const float *probs, int rows,
                                    int cols, int n_valid) {
    softmax_backward(d_x, d_probs, probs, rows, cols, n_valid, true);
}

#endif /* ATTN_HAVE_AVX2_KERNELS */

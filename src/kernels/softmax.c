/* softmax.c -- row softmax over the first n_valid of cols columns (masked keys get 0).
 *
 * Two paths (cpu.c chooses): the functions below (the "scalar" path, plain C, any CPU) and
 * softmax_avx2.c on a CPU with AVX2 and FMA. Each reproduces ATen 1.13's _vec_softmax_lastdim
 * for one CPU capability bit for bit:
 *   m = reduce_all(maximum, x); y = exp(x - m); s = reduce_all(+, y); y *= 1/s.
 * The scalar path is PyTorch run with ATEN_CPU_CAPABILITY=default. That build still goes
 * through Vectorized<float>, the generic 8-lane (32-byte) class of vec_base.h, whose exp maps
 * std::exp (glibc expf) over the lanes; vec::reduce_all (functional_base.h) then keeps 8
 * lane-wise accumulators for rows of 8 or more (a partial last vector updates only its valid
 * lanes) and folds them with the generic vec_reduce_all: lane 0, then + lane 1, ..., + lane 7
 * in order (the AVX2 build folds by shuffles instead: softmax_avx2.c). Rows shorter than 8 are
 * one partial vector folded in order, i.e. a plain left-to-right sum on both paths.
 * Backward uses only the saved probs and ACCUMULATES into d_x. The forward may run in place
 * (probs == x).
 */
#include "kernels_internal.h"

#include <math.h>

/* The generic vec::maximum on one lane, a the accumulator: a > b ? a : b, then a if a is NaN
 * (a NaN b wins through the comparison). */
static inline float max_nan(float a, float b) {
    return isnan(a) ? a : (a > b ? a : b);
}

/* vec::reduce_all(op, p, n) with the generic 8-lane Vectorized<float> (n >= 1): op is the
 * maximum (is_max) or +. Rows shorter than 8 fold in order; longer ones accumulate lane l
 * over p[l], p[l+8], ... (the partial last vector only in its valid lanes) and then fold the
 * lanes in order 0..7. */
static float reduce_all8(const float *p, int n, bool is_max) {
    if (n < 8) {
        float acc = p[0];
        for (int j = 1; j < n; j++) acc = is_max ? max_nan(acc, p[j]) : acc + p[j];
        return acc;
    }
    float lane[8];
    for (int l = 0; l < 8; l++) lane[l] = p[l];
    for (int j = 8; j < n; j++)
        lane[j % 8] = is_max ? max_nan(lane[j % 8], p[j]) : lane[j % 8] + p[j];
    float acc = lane[0];
    for (int l = 1; l < 8; l++) acc = is_max ? max_nan(acc, lane[l]) : acc + lane[l];
    return acc;
}

/* probs[rows,cols]: p_j = exp(x_j - max) / sum_k exp(x_k - max) for j < n_valid, else 0.
 * A row with n_valid == 0 (every key masked) is all zeros by definition. probs may alias x. */
void attn_softmax_forward(float *probs, const float *x, int rows, int cols, int n_valid) {
    ATTN_ASSERT(n_valid >= 0 && n_valid <= cols);
#if ATTN_HAVE_AVX2_KERNELS
    if (attn_cpu_use_avx2()) {
        if (attn_cpu_aten_avx512())
            attn_softmax_forward_avx512(probs, x, rows, cols, n_valid);
        else
            attn_softmax_forward_avx2(probs, x, rows, cols, n_valid);
        return;
    }
#endif
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *pr = probs + (size_t)r * cols;
        for (int j = n_valid; j < cols; j++) pr[j] = 0.0f;
        if (n_valid == 0) continue;
        const float m = reduce_all8(xr, n_valid, true);
        for (int j = 0; j < n_valid; j++) pr[j] = expf(xr[j] - m);
        const float inv = 1.0f / reduce_all8(pr, n_valid, false); /* times 1/sum, as ATen */
        for (int j = 0; j < n_valid; j++) pr[j] *= inv;
    }
}

/* d_x[rows,cols] += p * (d_p - sum_j p_j d_p_j) (the softmax Jacobian diag(p) - p p^T applied
 * to d_p); masked columns have p = 0 and get nothing. In double. set: d_x = +0 + that instead
 * (masked columns +0), the bits of adding it to a zeroed d_x (softmax_avx2.c has the twin). */
static void softmax_backward_scalar(float *d_x, const float *d_probs, const float *probs, int rows,
                                    int cols, int n_valid, bool set) {
    for (int r = 0; r < rows; r++) {
        const float *pr = probs + (size_t)r * cols, *dpr = d_probs + (size_t)r * cols;
        float *dxr = d_x + (size_t)r * cols;
        double dot = 0.0;
        for (int j = 0; j < n_valid; j++) dot += (double)pr[j] * dpr[j];
        for (int j = 0; j < n_valid; j++)
            dxr[j] = (set ? 0.0f : dxr[j]) + (float)(pr[j] * (dpr[j] - dot));
        if (set)
            for (int j = n_valid; j < cols; j++) dxr[j] = 0.0f;
    }
}

void attn_softmax_backward(float *d_x, const float *d_probs, const float *probs, int rows, int cols,
                           int n_valid) {
    if (!d_x) return;
#if ATTN_HAVE_AVX2_KERNELS
    if (attn_cpu_use_avx2()) {
        attn_softmax_backward_avx2(d_x, d_probs, probs, rows, cols, n_valid);
        return;
    }
#endif
    softmax_backward_scalar(d_x, d_probs, probs, rows, cols, n_valid, false);
}

/* The same written instead of added: d_x = +0 + the gradient (the masked columns +0): the bits
 * of zeroing d_x and calling attn_softmax_backward, without the zeroing pass. */
void attn_softmax_backward_set(float *d_x, const float *d_probs, const float *probs, int rows,
                               int cols, int n_valid) {
#if ATTN_HAVE_AVX2_KERNELS
    if (attn_cpu_use_avx2()) {
        attn_softmax_backward_set_avx2(d_x, d_probs, probs, rows, cols, n_valid);
        return;
    }
#endif
    softmax_backward_scalar(d_x, d_probs, probs, rows, cols, n_valid, true);
}

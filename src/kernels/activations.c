/* activations.c -- elementwise tanh, sigmoid, relu, gelu, forward/backward pairs over x[n].
 *
 * Forward kernels reproduce PyTorch 1.13's CPU arithmetic on an AVX2 machine bit for bit
 * (../shared/PYTORCH_NUMERICS.md): tanh and sigmoid use Sleef's 8-lane u10 functions the way
 * ATen's Vectorized<float> does, GELU follows oneDNN's JIT eltwise_gelu_erf (which PyTorch calls
 * for contiguous fp32 tensors). Backward kernels ACCUMULATE (+=) into d_x; d_x may be NULL.
 * tanh and sigmoid save their output y for backward; relu and gelu read their input x.
 */
#include "kernels_internal.h"

#include <math.h>
#include <sleef.h>
#include <stdint.h>
#include <string.h>

/* ---- tanh ------------------------------------------------------------------------------- */

/* y[n] = tanh(x[n]): Sleef_tanhf8_u10 on every block of 8, the last partial block zero-padded
 * (ATen's vml::vtanh = vec::map over the whole array). */
void attn_tanh_forward(float *y, const float *x, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, Sleef_tanhf8_u10(_mm256_loadu_ps(x + i)));
    if (i < n)
        attn_store_partial8(y + i, Sleef_tanhf8_u10(attn_load_partial8(x + i, n - i)), n - i);
}

/* d_x[n] += d_y * (1 - y^2), y the saved output (d tanh/dx = 1 - tanh^2). */
void attn_tanh_backward(float *d_x, const float *d_y, const float *y, size_t n) {
    if (!d_x) return;
    for (size_t i = 0; i < n; i++) d_x[i] += d_y[i] * (1.0f - y[i] * y[i]);
}

/* ---- sigmoid ---------------------------------------------------------------------------- */

/* 1 / (1 + exp(0 - x)) on 8 lanes: ATen's vectorised sigmoid (Sleef exp, AVX division). */
static inline __m256 sigmoid8(__m256 x) {
    __m256 e = Sleef_expf8_u10(_mm256_sub_ps(_mm256_setzero_ps(), x));
    return _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_add_ps(e, _mm256_set1_ps(1.0f)));
}

/* y[n] = 1 / (1 + exp(-x)). ATen's cpu_kernel_vec runs the vector op on blocks of 16 (two
 * vectors) and the scalar op (glibc expf) on the last n mod 16 elements. */
void attn_sigmoid_forward(float *y, const float *x, size_t n) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm256_storeu_ps(y + i, sigmoid8(_mm256_loadu_ps(x + i)));
        _mm256_storeu_ps(y + i + 8, sigmoid8(_mm256_loadu_ps(x + i + 8)));
    }
    for (; i < n; i++) y[i] = 1.0f / (1.0f + expf(-x[i]));
}

/* d_x[n] += d_y * y * (1 - y), y the saved output. */
void attn_sigmoid_backward(float *d_x, const float *d_y, const float *y, size_t n) {
    if (!d_x) return;
    for (size_t i = 0; i < n; i++) d_x[i] += d_y[i] * y[i] * (1.0f - y[i]);
}

/* ---- relu ------------------------------------------------------------------------------- */

/* y[n] = x < 0 ? 0 : x (keeps -0 and NaN, as PyTorch's clamp_min does; fmaxf would not). */
void attn_relu_forward(float *y, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}

/* d_x[n] += x > 0 ? d_y : 0 (the subgradient at 0 is 0, as in PyTorch's threshold_backward). */
void attn_relu_backward(float *d_x, const float *d_y, const float *x, size_t n) {
    if (!d_x) return;
    for (size_t i = 0; i < n; i++) d_x[i] += x[i] > 0.0f ? d_y[i] : 0.0f;
}

/* ---- gelu (oneDNN 2.6 JIT eltwise_gelu_erf, AVX2, emulated lane by lane) ---------------- */

static float f32(uint32_t bits) {
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* oneDNN's exp(x) for its JIT injector: clamp, n = floor(x log2e + 1/2), r = x - n ln2 (one
 * fnmadd), degree-5 polynomial by FMAs, times 2^(n-1) times 2; zero below ln(FLT_MIN). */
static float onednn_expf(float x) {
    const float ln_flt_min = f32(0xc2aeac50u), ln_flt_max = f32(0x42b17218u);
    const float log2e = f32(0x3fb8aa3bu), ln2 = f32(0x3f317218u);
    const float p1 = f32(0x3f7ffffbu), p2 = f32(0x3efffee3u), p3 = f32(0x3e2aad40u),
                p4 = f32(0x3d2b9d0du), p5 = f32(0x3c07cfceu);
    bool underflow = x < ln_flt_min;
    x = fminf(x, ln_flt_max);
    x = fmaxf(x, ln_flt_min);
    float fx = floorf(x * log2e + 0.5f); /* vmulps, vaddps, vroundps(floor): two roundings */
    float r = fmaf(-fx, ln2, x);         /* vfnmadd231ps */
    int32_t e = (int32_t)lrintf(fx - 1.0f) + 127; /* vcvtps2dq (round to nearest) */
    uint32_t bits = underflow ? 0u : (uint32_t)e << 23;
    float two_n1 = f32(bits); /* 2^(n-1); never overflows, unlike 2^n at n = 128 */
    float p = fmaf(p5, r, p4);
    p = fmaf(p, r, p3);
    p = fmaf(p, r, p2);
    p = fmaf(p, r, p1);
    p = fmaf(p, r, 1.0f);
    return p * two_n1 * 2.0f;
}

/* GELU(s) = 0.5 s (1 + erf(s / sqrt 2)), erf by Abramowitz & Stegun 7.1.26:
 * erf(x) = sign(x) (1 - t (a1 + t (a2 + ... a5 t)) exp(-x^2)), t = 1 / (1 + p |x|). */
static float onednn_gelu_erf(float s) {
    const float one_over_sqrt2 = f32(0x3f3504f3u), p = f32(0x3ea7ba05u);
    const float a1 = f32(0x3e827906u), a2 = f32(0xbe91a98eu), a3 = f32(0x3fb5f0e3u),
                a4 = f32(0xbfba00e3u), a5 = f32(0x3f87dc22u);
    float x = s * one_over_sqrt2;
    float neg_exp = -onednn_expf(-(x * x)); /* -exp(-x^2) */
    float t = 1.0f / fmaf(p, fabsf(x), 1.0f);
    neg_exp = neg_exp * t; /* -exp(-x^2) t */
    float r = fmaf(a5, t, a4);
    r = fmaf(r, t, a3);
    r = fmaf(r, t, a2);
    r = fmaf(r, t, a1);
    float erf_abs = fmaf(neg_exp, r, 1.0f); /* 1 - r t exp(-x^2) */
    float erf = signbit(x) ? -erf_abs : erf_abs;
    float half_s = 0.5f * s;
    return fmaf(erf, half_s, half_s); /* S + S erf */
}

/* y[n] = GELU(x[n]) one element at a time: the reference the 8-lane path is tested against. */
void attn_gelu_forward_scalar(float *y, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] = onednn_gelu_erf(x[i]);
}

/* onednn_gelu_erf on 8 lanes: the same IEEE operations in the same order, lane by lane.
 * Correspondences that keep every bit: fminf/fmaxf(x, c) with c a number = vminps/vmaxps(x, c)
 * (both give c for NaN x); fmaf(-a, b, c) = fnmadd(a, b, c); unary minus, fabsf and the
 * signbit select = xor/andnot with the sign bit; the int32 conversion sees only integers. */
static inline __m256 gelu_erf8(__m256 s) {
    const __m256 sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f);
    const __m256 ln_flt_min = _mm256_set1_ps(f32(0xc2aeac50u));
    const __m256 ln_flt_max = _mm256_set1_ps(f32(0x42b17218u));
    /* x = s / sqrt 2; a = -(x^2) */
    __m256 x = _mm256_mul_ps(s, _mm256_set1_ps(f32(0x3f3504f3u)));
    __m256 a = _mm256_xor_ps(_mm256_mul_ps(x, x), sign);
    /* exp(a), as onednn_expf */
    __m256 underflow = _mm256_cmp_ps(a, ln_flt_min, _CMP_LT_OQ);
    a = _mm256_min_ps(a, ln_flt_max);
    a = _mm256_max_ps(a, ln_flt_min);
    __m256 fx = _mm256_mul_ps(a, _mm256_set1_ps(f32(0x3fb8aa3bu)));
    fx = _mm256_floor_ps(_mm256_add_ps(fx, _mm256_set1_ps(0.5f)));
    __m256 r = _mm256_fnmadd_ps(fx, _mm256_set1_ps(f32(0x3f317218u)), a);
    __m256i e = _mm256_cvtps_epi32(_mm256_sub_ps(fx, one));
    e = _mm256_slli_epi32(_mm256_add_epi32(e, _mm256_set1_epi32(127)), 23);
    __m256 two_n1 = _mm256_andnot_ps(underflow, _mm256_castsi256_ps(e));
    __m256 p =
        _mm256_fmadd_ps(_mm256_set1_ps(f32(0x3c07cfceu)), r, _mm256_set1_ps(f32(0x3d2b9d0du)));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(f32(0x3e2aad40u)));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(f32(0x3efffee3u)));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(f32(0x3f7ffffbu)));
    p = _mm256_fmadd_ps(p, r, one);
    __m256 ex = _mm256_mul_ps(_mm256_mul_ps(p, two_n1), _mm256_set1_ps(2.0f));
    /* erf(|x|) = 1 - t r(t) exp(-x^2), t = 1 / (1 + p |x|) */
    __m256 neg_exp = _mm256_xor_ps(ex, sign);
    __m256 t = _mm256_fmadd_ps(_mm256_set1_ps(f32(0x3ea7ba05u)), _mm256_andnot_ps(sign, x), one);
    t = _mm256_div_ps(one, t);
    neg_exp = _mm256_mul_ps(neg_exp, t);
    __m256 q =
        _mm256_fmadd_ps(_mm256_set1_ps(f32(0x3f87dc22u)), t, _mm256_set1_ps(f32(0xbfba00e3u)));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(f32(0x3fb5f0e3u)));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(f32(0xbe91a98eu)));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(f32(0x3e827906u)));
    __m256 erf = _mm256_fmadd_ps(neg_exp, q, one);
    erf = _mm256_xor_ps(erf, _mm256_and_ps(x, sign)); /* sign of x */
    __m256 half_s = _mm256_mul_ps(_mm256_set1_ps(0.5f), s);
    return _mm256_fmadd_ps(erf, half_s, half_s);
}

/* y[n] = 0.5 x (1 + erf(x / sqrt 2)), oneDNN's arithmetic (within ~1e-6 of the exact erf).
 * 8 lanes at a time; the last partial block is zero-padded (lanes are independent). */
void attn_gelu_forward(float *y, const float *x, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, gelu_erf8(_mm256_loadu_ps(x + i)));
    if (i < n) attn_store_partial8(y + i, gelu_erf8(attn_load_partial8(x + i, n - i)), n - i);
}

/* d_x[n] += d_y * (Phi(x) + x phi(x)), Phi the standard normal CDF and phi its density
 * (d/dx of x Phi(x)); evaluated in double with the exact erf. */
void attn_gelu_backward(float *d_x, const float *d_y, const float *x, size_t n) {
    if (!d_x) return;
    const double inv_sqrt2 = 0.70710678118654752440, inv_sqrt_2pi = 0.39894228040143267794;
    for (size_t i = 0; i < n; i++) {
        double xi = x[i];
        double cdf = 0.5 * (1.0 + erf(xi * inv_sqrt2));
        double pdf = inv_sqrt_2pi * exp(-0.5 * xi * xi);
        d_x[i] += (float)((double)d_y[i] * (cdf + xi * pdf));
    }
}

/* activations.c -- elementwise tanh, sigmoid, relu, gelu, forward/backward pairs over x[n].
 *
 * Each forward below is the plain C statement of the math (the "scalar" path, any CPU). On a
 * CPU with AVX2 and FMA the forwards of tanh, sigmoid and gelu run activations_avx2.c instead
 * (cpu.c chooses), which reproduces PyTorch 1.13's AVX2 arithmetic bit for bit.
 * The scalar path follows PyTorch run with ATEN_CPU_CAPABILITY=default (ATen's non-vectorised
 * kernels): tanh and sigmoid by glibc tanhf/expf per element as there, GELU by oneDNN's
 * arithmetic (see attn_gelu_forward). Measured on this machine against torch 1.13 with
 * ATEN_CPU_CAPABILITY=default on 4099 values in [-10, 10]: all three bit-identical.
 * relu and every backward are plain C on both paths. Backward kernels ACCUMULATE (+=) into d_x;
 * d_x may be NULL. tanh and sigmoid save their output y for backward; relu and gelu read their
 * input x.
 */
#include "kernels_internal.h"

#include <math.h>
#include <stdint.h>

/* ---- tanh ------------------------------------------------------------------------------- */

/* y[n] = tanh(x[n]). Scalar: glibc tanhf (ATen's default Vectorized<float>::tanh maps
 * std::tanh); AVX2: Sleef_tanhf8_u10. */
void attn_tanh_forward(float *y, const float *x, size_t n) {
#if ATTN_HAVE_AVX2_KERNELS
    if (attn_cpu_use_avx2()) {
        if (attn_cpu_use_avx512f())
            attn_tanh_forward_avx512f(y, x, n);
        else
            attn_tanh_forward_avx2(y, x, n);
        return;
    }
#endif
    for (size_t i = 0; i < n; i++) y[i] = tanhf(x[i]);
}

/* d_x[n] += d_y * (1 - y^2), y the saved output (d tanh/dx = 1 - tanh^2). */
void attn_tanh_backward(float *d_x, const float *d_y, const float *y, size_t n) {
    if (!d_x) return;
    for (size_t i = 0; i < n; i++) d_x[i] += d_y[i] * (1.0f - y[i] * y[i]);
}

/* ---- sigmoid ---------------------------------------------------------------------------- */

/* y[n] = 1 / (1 + exp(-x)). Scalar: glibc expf, as ATen's scalar sigmoid and its default
 * Vectorized path; AVX2: Sleef exp on blocks of 16, glibc on the tail. */
void attn_sigmoid_forward(float *y, const float *x, size_t n) {
#if ATTN_HAVE_AVX2_KERNELS
    if (attn_cpu_use_avx2()) {
        if (attn_cpu_use_avx512f())
            attn_sigmoid_forward_avx512f(y, x, n, attn_cpu_aten_avx512() ? 32 : 16);
        else if (attn_cpu_aten_avx512())
            attn_sigmoid_forward_avx512(y, x, n);
        else
            attn_sigmoid_forward_avx2(y, x, n);
        return;
    }
#endif
    for (size_t i = 0; i < n; i++) y[i] = 1.0f / (1.0f + expf(-x[i]));
}

/* d_x[n] += d_y * y * (1 - y), y the saved output. */
void attn_sigmoid_backward(float *d_x, const float *d_y, const float *y, size_t n) {
    if (!d_x) return;
    for (size_t i = 0; i < n; i++) d_x[i] += d_y[i] * y[i] * (1.0f - y[i]);
}

/* ---- the LSTM cell ------------------------------------------------------------------------ */

/* The separate kernels, one chunk at a time: the reference the fused paths equal. */
static void lstm_cell_separate(const attn_lstm_cell_args *a) {
    const size_t H = (size_t)a->H, G = 4 * H;
    for (int r = 0; r < a->n; r++) {
        float *p = a->hw + (size_t)r * G;
        const float *xw = a->xw + (size_t)r * G, *c_prev = a->c_prev + (size_t)r * H;
        float *g = a->gates + (size_t)r * a->gates_stride;
        float *tc = a->tc + (size_t)r * a->gates_stride;
        float *c = a->c + (size_t)r * H, *h = a->h + (size_t)r * H;
        for (size_t k = 0; k < G; k++) {
            const float u = a->b_hh ? p[k] + a->b_hh[k] : p[k];
            const float v = a->b_ih ? xw[k] + a->b_ih[k] : xw[k];
            p[k] = u + v;
        }
        /* PyTorch applies sigmoid_ to each chunk view: its 16-wide blocks restart at every chunk */
        attn_sigmoid_forward(g, p, H);
        attn_sigmoid_forward(g + H, p + H, H);
        attn_tanh_forward(g + 2 * H, p + 2 * H, H);
        attn_sigmoid_forward(g + 3 * H, p + 3 * H, H);
        for (size_t j = 0; j < H; j++) {
            const float fc = g[H + j] * c_prev[j];
            const float ig = g[j] * g[2 * H + j];
            c[j] = fc + ig;
        }
        attn_tanh_forward(tc, c, H);
        for (size_t j = 0; j < H; j++) h[j] = g[3 * H + j] * tc[j];
    }
}

void attn_lstm_cell_forward(const attn_lstm_cell_args *a) {
#if ATTN_HAVE_AVX2_KERNELS
    /* fused: every sigmoid element in a whole block of Sleef exp (no glibc tail) */
    if (attn_cpu_use_avx2() && a->H % (attn_cpu_aten_avx512() ? 32 : 16) == 0) {
        if (attn_cpu_use_avx512f())
            attn_lstm_cell_forward_avx512f(a);
        else
            attn_lstm_cell_forward_avx2(a);
        return;
    }
#endif
    lstm_cell_separate(a);
}

bool attn_gru_cell_forward_fused(const attn_gru_cell_args *a) {
#if ATTN_HAVE_AVX2_KERNELS
    if (attn_cpu_use_avx2() && a->H % (attn_cpu_aten_avx512() ? 32 : 16) == 0) {
        if (attn_cpu_use_avx512f())
            attn_gru_cell_forward_avx512f(a);
        else
            attn_gru_cell_forward_avx2(a);
        return true;
    }
#endif
    (void)a;
    return false;
}

void attn_rnn_cell_forward(float *h, float *hw, const float *xw, const float *b_hh,
                           const float *b_ih, int n, int H) {
#if ATTN_HAVE_AVX2_KERNELS
    if (attn_cpu_use_avx2()) { /* tanh is Sleef on every element: rows may be cut anywhere */
        if (attn_cpu_use_avx512f())
            attn_rnn_cell_forward_avx512f(h, hw, xw, b_hh, b_ih, n, H);
        else
            attn_rnn_cell_forward_avx2(h, hw, xw, b_hh, b_ih, n, H);
        return;
    }
#endif
    const size_t nH = (size_t)n * (size_t)H;
    for (size_t r = 0; r < nH; r += (size_t)H)
        for (size_t j = 0; j < (size_t)H; j++) {
            const float u = b_hh ? hw[r + j] + b_hh[j] : hw[r + j];
            const float v = b_ih ? xw[r + j] + b_ih[j] : xw[r + j];
            hw[r + j] = u + v;
        }
    attn_tanh_forward(h, hw, nH);
}

/* ---- relu ------------------------------------------------------------------------------- */

/* y[n] = x < 0 ? 0 : x (keeps -0 and NaN, as PyTorch's clamp_min does; fmaxf would not). */
void attn_relu_forward(float *y, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}

/* d_x[n] += x > 0 ? d_y : 0 (the subgradient at 0 is 0, as in PyTorch's threshold_backward).
 * d_y[i] is read unconditionally so that the compiler can make the select branch-free and
 * vectorise it with baseline SSE2 (a branch on the sign of x mispredicts half the time). */
void attn_relu_backward(float *d_x, const float *d_y, const float *x, size_t n) {
    if (!d_x) return;
    for (size_t i = 0; i < n; i++) {
        const float g = d_y[i];
        d_x[i] += x[i] > 0.0f ? g : 0.0f;
    }
}

/* The select as a mask on the bits (x > 0: all ones, else 0), so that the compiler vectorises it
 * without a branch (a `?:` whose other arm folds `0 + 0` compiles to a branch per element that
 * mispredicts on every other one), then + 0.0f: -0 becomes +0 as in `0 + select`. */
void attn_relu_backward_set(float *d_x, const float *d_y, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t g;
        float f;
        memcpy(&g, &d_y[i], sizeof g);
        g &= x[i] > 0.0f ? 0xffffffffu : 0u;
        memcpy(&f, &g, sizeof f);
        d_x[i] = 0.0f + f;
    }
}

/* ---- gelu (oneDNN 2.6 JIT eltwise_gelu_erf, one element at a time) ----------------------- */

/* oneDNN's exp(x) for its JIT injector: clamp, n = floor(x log2e + 1/2), r = x - n ln2 (one
 * fnmadd), degree-5 polynomial by FMAs, times 2^(n-1) times 2; zero below ln(FLT_MIN). */
static float onednn_expf(float x) {
    const float ln_flt_min = attn_f32_from_bits(0xc2aeac50u);
    const float ln_flt_max = attn_f32_from_bits(0x42b17218u);
    const float log2e = attn_f32_from_bits(0x3fb8aa3bu), ln2 = attn_f32_from_bits(0x3f317218u);
    const float p1 = attn_f32_from_bits(0x3f7ffffbu), p2 = attn_f32_from_bits(0x3efffee3u),
                p3 = attn_f32_from_bits(0x3e2aad40u), p4 = attn_f32_from_bits(0x3d2b9d0du),
                p5 = attn_f32_from_bits(0x3c07cfceu);
    bool underflow = x < ln_flt_min;
    x = fminf(x, ln_flt_max);
    x = fmaxf(x, ln_flt_min);
    float fx = floorf(x * log2e + 0.5f); /* vmulps, vaddps, vroundps(floor): two roundings */
    float r = fmaf(-fx, ln2, x);         /* vfnmadd231ps */
    int32_t e = (int32_t)lrintf(fx - 1.0f) + 127; /* vcvtps2dq (round to nearest) */
    uint32_t bits = underflow ? 0u : (uint32_t)e << 23;
    float two_n1 = attn_f32_from_bits(bits); /* 2^(n-1); never overflows, unlike 2^n at 128 */
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
    const float one_over_sqrt2 = attn_f32_from_bits(0x3f3504f3u);
    const float p = attn_f32_from_bits(0x3ea7ba05u);
    const float a1 = attn_f32_from_bits(0x3e827906u), a2 = attn_f32_from_bits(0xbe91a98eu),
                a3 = attn_f32_from_bits(0x3fb5f0e3u), a4 = attn_f32_from_bits(0xbfba00e3u),
                a5 = attn_f32_from_bits(0x3f87dc22u);
    float x = s * one_over_sqrt2;
    float neg_exp = -onednn_expf(-(x * x)); /* -exp(-x^2) */
    float t = 1.0f / fmaf(p, fabsf(x), 1.0f);
    neg_exp = neg_exp * t; /* -exp(-x^2) t */
    float r = fmaf(a5, t, a4);
    r = fmaf(r, t, a3);
    r = fmaf(r, t, a2);
    r = fmaf(r, t, a1);
    float erf = fmaf(neg_exp, r, 1.0f); /* 1 - r t exp(-x^2) = erf(|x|) */
    erf = signbit(x) ? -erf : erf;
    float half_s = 0.5f * s;
    return fmaf(erf, half_s, half_s); /* S + S erf */
}

/* y[n] = 0.5 x (1 + erf(x / sqrt 2)) with erf by oneDNN's approximation (within ~1e-6 of the
 * exact erf). Both paths compute exactly this: the scalar path element by element above, the
 * AVX2 path 8 lanes at a time. Not ATen's own GELU kernel (x * 0.5 * (1 + erff(x / sqrt 2))):
 * PyTorch hands contiguous fp32 GELU to oneDNN whatever ATEN_CPU_CAPABILITY says, and oneDNN
 * picks its JIT by the CPU. On an AVX2 CPU that is this arithmetic (fmaf keeps it exact without
 * FMA hardware too); on a CPU without AVX2 oneDNN's SSE4.1 JIT would round its multiply-adds
 * separately, which this path does not follow (not checked: no such machine here). */
void attn_gelu_forward(float *y, const float *x, size_t n) {
#if ATTN_HAVE_AVX2_KERNELS
    if (attn_cpu_use_avx2()) {
        attn_gelu_forward_avx2(y, x, n);
        return;
    }
#endif
    for (size_t i = 0; i < n; i++) y[i] = onednn_gelu_erf(x[i]);
}

/* d GELU(s) / ds = Phi(s) + s phi(s) by oneDNN 2.6's eltwise_gelu_erf backward (which PyTorch
 * calls for contiguous fp32 tensors, as for the forward): with R = s / sqrt 2,
 * Q = exp(-R^2) (onednn_expf), T = (R / sqrt(pi)) Q, erf(R) as in onednn_gelu_erf,
 * result = (T + 1/2) + erf / 2 (one FMA). oneDNN's 1/sqrt(pi) is 0x3f106eba, one ulp below the
 * float nearest to it; with it the result equals F.gelu's autograd bit for bit (27,051 values
 * in [-10, 10], this machine). */
static float onednn_gelu_erf_grad(float s) {
    const float one_over_sqrt2 = attn_f32_from_bits(0x3f3504f3u);
    const float one_over_sqrt_pi = attn_f32_from_bits(0x3f106ebau);
    const float p = attn_f32_from_bits(0x3ea7ba05u);
    const float a1 = attn_f32_from_bits(0x3e827906u), a2 = attn_f32_from_bits(0xbe91a98eu),
                a3 = attn_f32_from_bits(0x3fb5f0e3u), a4 = attn_f32_from_bits(0xbfba00e3u),
                a5 = attn_f32_from_bits(0x3f87dc22u);
    const float R = s * one_over_sqrt2;
    const float Q = onednn_expf(-(R * R));
    const float T = R * one_over_sqrt_pi * Q;
    const float w = 1.0f / fmaf(p, fabsf(R), 1.0f);
    const float neg_qw = -Q * w;
    float r = fmaf(a5, w, a4);
    r = fmaf(r, w, a3);
    r = fmaf(r, w, a2);
    r = fmaf(r, w, a1);
    float erf = fmaf(neg_qw, r, 1.0f);
    erf = signbit(R) ? -erf : erf;
    return fmaf(erf, 0.5f, T + 0.5f);
}

/* d_x[n] += d_y * GELU'(x), both paths with oneDNN's float arithmetic (onednn_gelu_erf_grad),
 * bit-identical to PyTorch's autograd of F.gelu. */
void attn_gelu_backward(float *d_x, const float *d_y, const float *x, size_t n) {
    if (!d_x) return;
#if ATTN_HAVE_AVX2_KERNELS
    if (attn_cpu_use_avx2()) {
        attn_gelu_backward_avx2(d_x, d_y, x, n);
        return;
    }
#endif
    for (size_t i = 0; i < n; i++) d_x[i] += d_y[i] * onednn_gelu_erf_grad(x[i]);
}

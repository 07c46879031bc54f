/* activations_avx2.c -- the AVX2+FMA versions of tanh, sigmoid and gelu forward (compiled with
 * -mavx2 -mfma; chosen at run time by activations.c, see cpu.c).
 *
 * They reproduce PyTorch 1.13's CPU arithmetic on an AVX2 machine bit for bit
 * (docs/numerics.md): tanh and sigmoid use Sleef's 8-lane u10 functions the way
 * ATen's Vectorized<float> does, GELU follows oneDNN's JIT eltwise_gelu_erf (which PyTorch calls
 * for contiguous fp32 tensors). The plain math is in activations.c.
 */
#include "kernels_internal.h"

#if ATTN_HAVE_AVX2_KERNELS

#include <math.h>
#include <sleef.h>

/* ---- tanh ------------------------------------------------------------------------------- */

/* y[n] = tanh(x[n]): Sleef_tanhf8_u10 on every block of 8, the last partial block zero-padded
 * (ATen's vml::vtanh = vec::map over the whole array). */
void attn_tanh_forward_avx2(float *y, const float *x, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, Sleef_tanhf8_u10(_mm256_loadu_ps(x + i)));
    if (i < n)
        attn_store_partial8(y + i, Sleef_tanhf8_u10(attn_load_partial8(x + i, n - i)), n - i);
}

/* ---- sigmoid ---------------------------------------------------------------------------- */

/* 1 / (1 + exp(0 - x)) on 8 lanes: ATen's vectorised sigmoid (Sleef exp, AVX division). */
static inline __m256 sigmoid8(__m256 x) {
    __m256 e = Sleef_expf8_u10(_mm256_sub_ps(_mm256_setzero_ps(), x));
    return _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_add_ps(e, _mm256_set1_ps(1.0f)));
}

/* y[n] = 1 / (1 + exp(-x)). ATen's cpu_kernel_vec runs the vector op on blocks of 16 (two
 * vectors) and the scalar op (glibc expf) on the last n mod 16 elements. */
void attn_sigmoid_forward_avx2(float *y, const float *x, size_t n) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm256_storeu_ps(y + i, sigmoid8(_mm256_loadu_ps(x + i)));
        _mm256_storeu_ps(y + i + 8, sigmoid8(_mm256_loadu_ps(x + i + 8)));
    }
    for (; i < n; i++) y[i] = 1.0f / (1.0f + expf(-x[i]));
}

/* The same for ATen's avx512 kernels (ATTN_CPU=avx512): blocks of 32 (two 16-lane vectors,
 * the same bits per element as 8 lanes), glibc expf on the last n mod 32 elements. */
void attn_sigmoid_forward_avx512(float *y, const float *x, size_t n) {
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (size_t k = 0; k < 32; k += 8)
            _mm256_storeu_ps(y + i + k, sigmoid8(_mm256_loadu_ps(x + i + k)));
    for (; i < n; i++) y[i] = 1.0f / (1.0f + expf(-x[i]));
}

/* ---- the LSTM cell ------------------------------------------------------------------------ */

/* attn_lstm_cell_forward in one pass per row, 8 units at a time (the caller checked that H is
 * a multiple of the sigmoid's block, so each sigmoid element is sigmoid8's, each tanh
 * Sleef's: the separate kernels' bits). */
void attn_lstm_cell_forward_avx2(const attn_lstm_cell_args *a) {
    const size_t H = (size_t)a->H, G = 4 * H;
    for (int r = 0; r < a->n; r++) {
        const float *hw = a->hw + (size_t)r * G, *xw = a->xw + (size_t)r * G;
        const float *c_prev = a->c_prev + (size_t)r * H;
        float *gates = a->gates + (size_t)r * a->gates_stride;
        float *tc = a->tc + (size_t)r * a->gates_stride;
        float *c = a->c + (size_t)r * H, *h = a->h + (size_t)r * H;
        for (size_t j = 0; j < H; j += 8) {
            __m256 p[4];
            for (size_t q = 0; q < 4; q++) {
                const size_t k = q * H + j;
                __m256 u = _mm256_loadu_ps(hw + k), v = _mm256_loadu_ps(xw + k);
                if (a->b_hh) u = _mm256_add_ps(u, _mm256_loadu_ps(a->b_hh + k));
                if (a->b_ih) v = _mm256_add_ps(v, _mm256_loadu_ps(a->b_ih + k));
                p[q] = _mm256_add_ps(u, v);
            }
            const __m256 gi = sigmoid8(p[0]), gf = sigmoid8(p[1]);
            const __m256 gg = Sleef_tanhf8_u10(p[2]), go = sigmoid8(p[3]);
            const __m256 fc = _mm256_mul_ps(gf, _mm256_loadu_ps(c_prev + j));
            const __m256 cn = _mm256_add_ps(fc, _mm256_mul_ps(gi, gg));
            const __m256 t = Sleef_tanhf8_u10(cn);
            _mm256_storeu_ps(gates + j, gi);
            _mm256_storeu_ps(gates + H + j, gf);
            _mm256_storeu_ps(gates + 2 * H + j, gg);
            _mm256_storeu_ps(gates + 3 * H + j, go);
            _mm256_storeu_ps(c + j, cn);
            _mm256_storeu_ps(tc + j, t);
            _mm256_storeu_ps(h + j, _mm256_mul_ps(go, t));
        }
    }
}

/* attn_gru_cell_forward_fused, 8 units at a time (the caller checked H against the sigmoid's
 * block): gru.c's operations in its order, lane by lane. */
void attn_gru_cell_forward_avx2(const attn_gru_cell_args *a) {
    const size_t H = (size_t)a->H, G = 3 * H;
    for (int r = 0; r < a->n; r++) {
        const float *hw = a->hw + (size_t)r * G, *xw = a->xw + (size_t)r * G;
        const float *hp = a->h_prev + (size_t)r * H;
        float *sv = a->saved + (size_t)r * a->saved_stride, *h = a->h + (size_t)r * H;
        for (size_t j = 0; j < H; j += 8) {
            __m256 u[3], v[3];
            for (size_t q = 0; q < 3; q++) {
                const size_t k = q * H + j;
                u[q] = _mm256_loadu_ps(hw + k);
                v[q] = _mm256_loadu_ps(xw + k);
                if (a->b_hh) u[q] = _mm256_add_ps(u[q], _mm256_loadu_ps(a->b_hh + k));
                if (a->b_ih) v[q] = _mm256_add_ps(v[q], _mm256_loadu_ps(a->b_ih + k));
            }
            const __m256 gr = sigmoid8(_mm256_add_ps(u[0], v[0])),
                         gz = sigmoid8(_mm256_add_ps(u[1], v[1]));
            const __m256 gn = Sleef_tanhf8_u10(_mm256_add_ps(v[2], _mm256_mul_ps(u[2], gr)));
            const __m256 d = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(hp + j), gn), gz);
            _mm256_storeu_ps(sv + j, gr);
            _mm256_storeu_ps(sv + H + j, gz);
            _mm256_storeu_ps(sv + 2 * H + j, gn);
            _mm256_storeu_ps(sv + 3 * H + j, u[2]);
            _mm256_storeu_ps(h + j, _mm256_add_ps(d, gn));
        }
    }
}

/* attn_rnn_cell_forward, 8 units at a time; a row's last partial block zero-padded (lanes are
 * independent: the bits of one tanh call over all rows). */
void attn_rnn_cell_forward_avx2(float *h, const float *hw, const float *xw, const float *b_hh,
                                const float *b_ih, int n, int H) {
    for (int r = 0; r < n; r++) {
        const size_t o = (size_t)r * (size_t)H;
        size_t j = 0;
        for (; j + 8 <= (size_t)H; j += 8) {
            __m256 u = _mm256_loadu_ps(hw + o + j), v = _mm256_loadu_ps(xw + o + j);
            if (b_hh) u = _mm256_add_ps(u, _mm256_loadu_ps(b_hh + j));
            if (b_ih) v = _mm256_add_ps(v, _mm256_loadu_ps(b_ih + j));
            _mm256_storeu_ps(h + o + j, Sleef_tanhf8_u10(_mm256_add_ps(u, v)));
        }
        if (j < (size_t)H) {
            const size_t k = (size_t)H - j;
            __m256 u = attn_load_partial8(hw + o + j, k), v = attn_load_partial8(xw + o + j, k);
            if (b_hh) u = _mm256_add_ps(u, attn_load_partial8(b_hh + j, k));
            if (b_ih) v = _mm256_add_ps(v, attn_load_partial8(b_ih + j, k));
            attn_store_partial8(h + o + j, Sleef_tanhf8_u10(_mm256_add_ps(u, v)), k);
        }
    }
}

/* ---- gelu (oneDNN 2.6 JIT eltwise_gelu_erf, AVX2) ---------------------------------------- */

#define C(bits) _mm256_set1_ps(attn_f32_from_bits(bits))

/* onednn_expf of activations.c on 8 lanes. */
static inline __m256 onednn_exp8(__m256 a) {
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 ln_flt_min = C(0xc2aeac50u), ln_flt_max = C(0x42b17218u);
    __m256 underflow = _mm256_cmp_ps(a, ln_flt_min, _CMP_LT_OQ);
    a = _mm256_min_ps(a, ln_flt_max);
    a = _mm256_max_ps(a, ln_flt_min);
    __m256 fx = _mm256_mul_ps(a, C(0x3fb8aa3bu));
    fx = _mm256_floor_ps(_mm256_add_ps(fx, _mm256_set1_ps(0.5f)));
    __m256 r = _mm256_fnmadd_ps(fx, C(0x3f317218u), a);
    __m256i e = _mm256_cvtps_epi32(_mm256_sub_ps(fx, one));
    e = _mm256_slli_epi32(_mm256_add_epi32(e, _mm256_set1_epi32(127)), 23);
    __m256 two_n1 = _mm256_andnot_ps(underflow, _mm256_castsi256_ps(e));
    __m256 p = _mm256_fmadd_ps(C(0x3c07cfceu), r, C(0x3d2b9d0du));
    p = _mm256_fmadd_ps(p, r, C(0x3e2aad40u));
    p = _mm256_fmadd_ps(p, r, C(0x3efffee3u));
    p = _mm256_fmadd_ps(p, r, C(0x3f7ffffbu));
    p = _mm256_fmadd_ps(p, r, one);
    __m256 ex = _mm256_mul_ps(_mm256_mul_ps(p, two_n1), _mm256_set1_ps(2.0f));
    return ex;
}

/* onednn_gelu_erf of activations.c on 8 lanes: the same IEEE operations in the same order,
 * lane by lane. Correspondences that keep every bit: fminf/fmaxf(x, c) with c a number =
 * vminps/vmaxps(x, c) (both give c for NaN x); fmaf(-a, b, c) = fnmadd(a, b, c); unary minus,
 * fabsf and the signbit select = xor/andnot with the sign bit; the int32 conversion sees only
 * integers. */
static inline __m256 gelu_erf8(__m256 s) {
    const __m256 sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f);
    /* x = s / sqrt 2; a = -(x^2) */
    __m256 x = _mm256_mul_ps(s, C(0x3f3504f3u));
    __m256 a = _mm256_xor_ps(_mm256_mul_ps(x, x), sign);
    __m256 ex = onednn_exp8(a);
    /* erf(|x|) = 1 - t r(t) exp(-x^2), t = 1 / (1 + p |x|) */
    __m256 neg_exp = _mm256_xor_ps(ex, sign);
    __m256 t = _mm256_fmadd_ps(C(0x3ea7ba05u), _mm256_andnot_ps(sign, x), one);
    t = _mm256_div_ps(one, t);
    neg_exp = _mm256_mul_ps(neg_exp, t);
    __m256 q = _mm256_fmadd_ps(C(0x3f87dc22u), t, C(0xbfba00e3u));
    q = _mm256_fmadd_ps(q, t, C(0x3fb5f0e3u));
    q = _mm256_fmadd_ps(q, t, C(0xbe91a98eu));
    q = _mm256_fmadd_ps(q, t, C(0x3e827906u));
    __m256 erf = _mm256_fmadd_ps(neg_exp, q, one);
    erf = _mm256_xor_ps(erf, _mm256_and_ps(x, sign)); /* sign of x */
    __m256 half_s = _mm256_mul_ps(_mm256_set1_ps(0.5f), s);
    return _mm256_fmadd_ps(erf, half_s, half_s);
}

/* onednn_gelu_erf_grad of activations.c on 8 lanes (oneDNN's gelu_erf backward). */
static inline __m256 gelu_erf_grad8(__m256 s) {
    const __m256 sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f);
    const __m256 half = _mm256_set1_ps(0.5f);
    __m256 R = _mm256_mul_ps(s, C(0x3f3504f3u));
    __m256 Q = onednn_exp8(_mm256_xor_ps(_mm256_mul_ps(R, R), sign));
    __m256 T = _mm256_mul_ps(_mm256_mul_ps(R, C(0x3f106ebau)), Q);
    __m256 w = _mm256_fmadd_ps(C(0x3ea7ba05u), _mm256_andnot_ps(sign, R), one);
    w = _mm256_div_ps(one, w);
    __m256 neg_qw = _mm256_mul_ps(_mm256_xor_ps(Q, sign), w);
    __m256 r = _mm256_fmadd_ps(C(0x3f87dc22u), w, C(0xbfba00e3u));
    r = _mm256_fmadd_ps(r, w, C(0x3fb5f0e3u));
    r = _mm256_fmadd_ps(r, w, C(0xbe91a98eu));
    r = _mm256_fmadd_ps(r, w, C(0x3e827906u));
    __m256 erf = _mm256_fmadd_ps(neg_qw, r, one);
    erf = _mm256_xor_ps(erf, _mm256_and_ps(R, sign));
    return _mm256_fmadd_ps(erf, half, _mm256_add_ps(T, half));
}

#undef C

/* d_x[n] += d_y * GELU'(x) by oneDNN's backward arithmetic, 8 lanes at a time. */
void attn_gelu_backward_avx2(float *d_x, const float *d_y, const float *x, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 g = _mm256_mul_ps(_mm256_loadu_ps(d_y + i), gelu_erf_grad8(_mm256_loadu_ps(x + i)));
        _mm256_storeu_ps(d_x + i, _mm256_add_ps(_mm256_loadu_ps(d_x + i), g));
    }
    if (i < n) {
        __m256 g = _mm256_mul_ps(attn_load_partial8(d_y + i, n - i),
                                 gelu_erf_grad8(attn_load_partial8(x + i, n - i)));
        attn_store_partial8(d_x + i, _mm256_add_ps(attn_load_partial8(d_x + i, n - i), g), n - i);
    }
}

/* y[n] = GELU(x[n]) by oneDNN's arithmetic, 8 lanes at a time; the last partial block is
 * zero-padded (lanes are independent). */
void attn_gelu_forward_avx2(float *y, const float *x, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, gelu_erf8(_mm256_loadu_ps(x + i)));
    if (i < n) attn_store_partial8(y + i, gelu_erf8(attn_load_partial8(x + i, n - i)), n - i);
}

#endif /* ATTN_HAVE_AVX2_KERNELS */

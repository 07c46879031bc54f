/* activations_avx512.c -- tanh, sigmoid and the LSTM cell with SLEEF's 16-lane AVX-512F
 * functions (compiled with -mavx2 -mfma -mavx512f; run only on a CPU with AVX-512F, see
 * attn_cpu_use_avx512f in cpu.c).
 *
 * Not another arithmetic: Sleef_tanhf16_u10avx512f and Sleef_expf16_u10avx512f give the bits of
 * the Sleef_tanhf8_u10 and Sleef_expf8_u10 that PyTorch 1.13 and the avx2 kernels call on every
 * one of the 2^32 float inputs (checked exhaustively by bench/sleef_check.c on this machine's
 * libsleef 3.5.1; tests/kernels/test_activations.c checks a sample at every run), and the
 * division, subtraction and addition around them are the same correctly rounded IEEE
 * operations on 16 lanes as on 8. So each function here equals its avx2 twin element by
 * element, including where that twin hands a tail to glibc (kept here too). They exist for
 * speed: half the calls and instructions per element. */
#include "kernels_internal.h"

#if ATTN_HAVE_AVX2_KERNELS && defined(__AVX512F__)

#include <math.h>
#include <sleef.h>

/* The mask of the first n (< 16) lanes. */
static inline __mmask16 first_lanes(size_t n) {
    return (__mmask16)((1u << n) - 1u);
}

/* 1 / (1 + exp(0 - x)) on 16 lanes: sigmoid8 of activations_avx2.c lane by lane. */
static inline __m512 sigmoid16(__m512 x) {
    __m512 e = Sleef_expf16_u10avx512f(_mm512_sub_ps(_mm512_setzero_ps(), x));
    return _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_add_ps(e, _mm512_set1_ps(1.0f)));
}

/* attn_tanh_forward_avx2: Sleef tanh on every element (lanes are independent, so the masked
 * tail gives the zero-padded block's bits). */
void attn_tanh_forward_avx512f(float *y, const float *x, size_t n) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, Sleef_tanhf16_u10avx512f(_mm512_loadu_ps(x + i)));
    if (i < n) {
        const __mmask16 m = first_lanes(n - i);
        _mm512_mask_storeu_ps(y + i, m, Sleef_tanhf16_u10avx512f(_mm512_maskz_loadu_ps(m, x + i)));
    }
}

/* attn_sigmoid_forward_avx2 (block 16) or _avx512 (block 32): Sleef exp on whole blocks, glibc
 * expf on the last n mod block elements, as ATen's cpu_kernel_vec. */
void attn_sigmoid_forward_avx512f(float *y, const float *x, size_t n, size_t block) {
    size_t i = 0;
    for (; i + block <= n; i += block)
        for (size_t k = 0; k < block; k += 16)
            _mm512_storeu_ps(y + i + k, sigmoid16(_mm512_loadu_ps(x + i + k)));
    for (; i < n; i++) y[i] = 1.0f / (1.0f + expf(-x[i]));
}

/* attn_lstm_cell_forward's row loop on 16 lanes (the caller checked H % 16 == 0 and the
 * sigmoid block). */
void attn_lstm_cell_forward_avx512f(const attn_lstm_cell_args *a) {
    const size_t H = (size_t)a->H, G = 4 * H;
    for (int r = 0; r < a->n; r++) {
        const float *hw = a->hw + (size_t)r * G, *xw = a->xw + (size_t)r * G;
        const float *c_prev = a->c_prev + (size_t)r * H;
        float *gates = a->gates + (size_t)r * a->gates_stride;
        float *tc = a->tc + (size_t)r * a->gates_stride;
        float *c = a->c + (size_t)r * H, *h = a->h + (size_t)r * H;
        for (size_t j = 0; j < H; j += 16) {
            __m512 p[4];
            for (size_t q = 0; q < 4; q++) {
                const size_t k = q * H + j;
                __m512 u = _mm512_loadu_ps(hw + k), v = _mm512_loadu_ps(xw + k);
                if (a->b_hh) u = _mm512_add_ps(u, _mm512_loadu_ps(a->b_hh + k));
                if (a->b_ih) v = _mm512_add_ps(v, _mm512_loadu_ps(a->b_ih + k));
                p[q] = _mm512_add_ps(u, v);
            }
            const __m512 gi = sigmoid16(p[0]), gf = sigmoid16(p[1]);
            const __m512 gg = Sleef_tanhf16_u10avx512f(p[2]), go = sigmoid16(p[3]);
            const __m512 fc = _mm512_mul_ps(gf, _mm512_loadu_ps(c_prev + j));
            const __m512 cn = _mm512_add_ps(fc, _mm512_mul_ps(gi, gg));
            const __m512 t = Sleef_tanhf16_u10avx512f(cn);
            _mm512_storeu_ps(gates + j, gi);
            _mm512_storeu_ps(gates + H + j, gf);
            _mm512_storeu_ps(gates + 2 * H + j, gg);
            _mm512_storeu_ps(gates + 3 * H + j, go);
            _mm512_storeu_ps(c + j, cn);
            _mm512_storeu_ps(tc + j, t);
            _mm512_storeu_ps(h + j, _mm512_mul_ps(go, t));
        }
    }
}

/* attn_gru_cell_forward_avx2 on 16 lanes. */
void attn_gru_cell_forward_avx512f(const attn_gru_cell_args *a) {
    const size_t H = (size_t)a->H, G = 3 * H;
    for (int r = 0; r < a->n; r++) {
        const float *hw = a->hw + (size_t)r * G, *xw = a->xw + (size_t)r * G;
        const float *hp = a->h_prev + (size_t)r * H;
        float *sv = a->saved + (size_t)r * a->saved_stride, *h = a->h + (size_t)r * H;
        for (size_t j = 0; j < H; j += 16) {
            __m512 u[3], v[3];
            for (size_t q = 0; q < 3; q++) {
                const size_t k = q * H + j;
                u[q] = _mm512_loadu_ps(hw + k);
                v[q] = _mm512_loadu_ps(xw + k);
                if (a->b_hh) u[q] = _mm512_add_ps(u[q], _mm512_loadu_ps(a->b_hh + k));
                if (a->b_ih) v[q] = _mm512_add_ps(v[q], _mm512_loadu_ps(a->b_ih + k));
            }
            const __m512 gr = sigmoid16(_mm512_add_ps(u[0], v[0])),
                         gz = sigmoid16(_mm512_add_ps(u[1], v[1]));
            const __m512 gn =
                Sleef_tanhf16_u10avx512f(_mm512_add_ps(v[2], _mm512_mul_ps(u[2], gr)));
            const __m512 d = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(hp + j), gn), gz);
            _mm512_storeu_ps(sv + j, gr);
            _mm512_storeu_ps(sv + H + j, gz);
            _mm512_storeu_ps(sv + 2 * H + j, gn);
            _mm512_storeu_ps(sv + 3 * H + j, u[2]);
            _mm512_storeu_ps(h + j, _mm512_add_ps(d, gn));
        }
    }
}

static inline __m512 load_first(const float *p, size_t k) {
    return _mm512_maskz_loadu_ps(first_lanes(k), p);
}

static inline void store_first(float *p, __m512 v, size_t k) {
    _mm512_mask_storeu_ps(p, first_lanes(k), v);
}

/* attn_rnn_cell_forward_avx2 on 16 lanes (masked tail). */
void attn_rnn_cell_forward_avx512f(float *h, const float *hw, const float *xw, const float *b_hh,
                                   const float *b_ih, int n, int H) {
    for (int r = 0; r < n; r++) {
        const size_t o = (size_t)r * (size_t)H;
        size_t j = 0;
        for (; j + 16 <= (size_t)H; j += 16) {
            __m512 u = _mm512_loadu_ps(hw + o + j), v = _mm512_loadu_ps(xw + o + j);
            if (b_hh) u = _mm512_add_ps(u, _mm512_loadu_ps(b_hh + j));
            if (b_ih) v = _mm512_add_ps(v, _mm512_loadu_ps(b_ih + j));
            _mm512_storeu_ps(h + o + j, Sleef_tanhf16_u10avx512f(_mm512_add_ps(u, v)));
        }
        if (j < (size_t)H) {
            const size_t k = (size_t)H - j;
            __m512 u = load_first(hw + o + j, k), v = load_first(xw + o + j, k);
            if (b_hh) u = _mm512_add_ps(u, load_first(b_hh + j, k));
            if (b_ih) v = _mm512_add_ps(v, load_first(b_ih + j, k));
            store_first(h + o + j, Sleef_tanhf16_u10avx512f(_mm512_add_ps(u, v)), k);
        }
    }
}

#endif /* ATTN_HAVE_AVX2_KERNELS && __AVX512F__ */

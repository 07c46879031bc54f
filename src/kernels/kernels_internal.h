/* kernels_internal.h -- helpers shared by the kernel files (src/kernels/): ATTN_ASSERT, the
 * CPU dispatch between the plain C kernels and their AVX2 versions (cpu.c), and the 8-lane AVX2
 * helpers that reproduce ATen's Vectorized<float> partial loads/stores.
 * Not part of the public API; tests may include it. */
#ifndef ATTN_KERNELS_INTERNAL_H
#define ATTN_KERNELS_INTERNAL_H

#include "attn_kernels.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Programmer-error check for debug builds; compiled out with NDEBUG (Release). Kernels never
 * validate user input: that happens at the model/API boundary. */
#ifdef NDEBUG
#define ATTN_ASSERT(cond) ((void)0)
#else
#include <assert.h>
#define ATTN_ASSERT(cond) assert(cond)
#endif

/* True when sgemm.c was built with ATTN_NAIVE_GEMM (a triple loop instead of OpenBLAS): then
 * matrix products are correct but not bit-identical to PyTorch, and tests say so. */
extern const bool attn_sgemm_naive;

/* Books one product of m*n*k multiply-adds under `tag` into the calling thread's counter, if it
 * set one (src/kernels/flops.c); every product sgemm.c issues calls it. */
void attn_flops_count(attn_op tag, bool backward, int m, int n, int k);

/* The float with the given IEEE-754 bit pattern (constants copied from other libraries' hex). */
static inline float attn_f32_from_bits(uint32_t bits) {
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* ---- CPU dispatch (cpu.c) -----------------------------------------------------------------
 * Each vectorised kernel exists twice: the plain C version in <op>.c (the reference, any CPU)
 * and an AVX2+FMA version in <op>_avx2.c, the only files compiled with -mavx2 -mfma. The public
 * attn_<op>_forward/backward in <op>.c asks attn_cpu_use_avx2() (one relaxed atomic load once
 * the path is chosen) and calls one or the other. ATTN_HAVE_AVX2_KERNELS says whether this
 * build contains the AVX2 versions at all (x86-64 only). */
#if defined(__x86_64__) || defined(_M_X64)
#define ATTN_HAVE_AVX2_KERNELS 1
#else
#define ATTN_HAVE_AVX2_KERNELS 0
#endif

/* True iff the active path is "avx2" or "avx512" (chosen on first use: ATTN_CPU, else the
 * CPU's features); both run the AVX2 kernels. */
bool attn_cpu_use_avx2(void);
/* True iff the AVX2 kernels run (attn_cpu_use_avx2) and the CPU has AVX-512F (checked once;
 * ATTN_AVX512F=0 in the environment turns it off): tanh, sigmoid and the LSTM cell then call
 * SLEEF's 16-lane functions, which give the same bits (activations_avx512.c). */
bool attn_cpu_use_avx512f(void);
/* Tests: false turns the AVX-512F functions off, true back on where the CPU has them. */
void attn_cpu_allow_avx512f(bool allow);
/* True iff the active path is "avx512": softmax and sigmoid follow ATen's avx512 kernels. */
bool attn_cpu_aten_avx512(void);
/* Forgets the choice, so the next kernel call chooses again from $ATTN_CPU (tests only). */
void attn_cpu_reset(void);
/* True iff this build and CPU can run the AVX2 kernels (AVX2 and FMA, saved by the OS). */
bool attn_cpu_has_avx2_fma(void);

/* OpenBLAS's side of the pinned kernels (sgemm.c): its version ("0.3.21"), and a switch of its
 * kernel table in-process to `core` ("Haswell"; NULL: OpenBLAS's own choice from
 * OPENBLAS_CORETYPE or the CPU). False when the BLAS cannot switch or did not take `core`. */
const char *attn_blas_version(void);
bool attn_blas_use_core(const char *core);

#if ATTN_HAVE_AVX2_KERNELS
/* The AVX2 versions (src/kernels/<op>_avx2.c): same contracts as the public kernels. */
void attn_tanh_forward_avx2(float *y, const float *x, size_t n);
void attn_sigmoid_forward_avx2(float *y, const float *x, size_t n);
void attn_sigmoid_forward_avx512(float *y, const float *x, size_t n);
void attn_lstm_cell_forward_avx2(const attn_lstm_cell_args *a);
void attn_gru_cell_forward_avx2(const attn_gru_cell_args *a);
void attn_rnn_cell_forward_avx2(float *h, const float *hw, const float *xw, const float *b_hh,
                                const float *b_ih, int n, int H);
/* The same with SLEEF's 16-lane AVX-512F functions (activations_avx512.c; the same bits as the
 * avx2 versions on every input), run only where attn_cpu_use_avx512f() says so. block: the
 * sigmoid's block, 16 (avx2) or 32 (ATen's avx512 kernels). */
void attn_tanh_forward_avx512f(float *y, const float *x, size_t n);
void attn_sigmoid_forward_avx512f(float *y, const float *x, size_t n, size_t block);
void attn_lstm_cell_forward_avx512f(const attn_lstm_cell_args *a);
void attn_gru_cell_forward_avx512f(const attn_gru_cell_args *a);
void attn_rnn_cell_forward_avx512f(float *h, const float *hw, const float *xw, const float *b_hh,
                                   const float *b_ih, int n, int H);
void attn_gelu_forward_avx2(float *y, const float *x, size_t n);
void attn_gelu_backward_avx2(float *d_x, const float *d_y, const float *x, size_t n);
void attn_softmax_forward_avx2(float *probs, const float *x, int rows, int cols, int n_valid);
void attn_softmax_forward_avx512(float *probs, const float *x, int rows, int cols, int n_valid);
void attn_softmax_backward_avx2(float *d_x, const float *d_probs, const float *probs, int rows,
                                int cols, int n_valid);
void attn_softmax_backward_set_avx2(float *d_x, const float *d_probs, const float *probs, int rows,
                                    int cols, int n_valid);
void attn_layernorm_forward_avx2(float *y, float *mean, float *rstd, const float *x,
                                 const float *gamma, const float *beta, int n, int D);
void attn_layernorm_backward_avx2(float *d_x, float *d_gamma, float *d_beta, const float *d_y,
                                  const float *x, const float *mean, const float *rstd,
                                  const float *gamma, int n, int D);
/* The blocked attention's row helpers (attention_blocked_avx2.c; their scalar twins, with the
 * same bits, are in attention_blocked.c): the row's largest element; row[j] = exp(row[j] - m)
 * for scores <= m, returning their sum; row *= a. */
float attn_blocked_row_max_avx2(const float *row, int n);
float attn_blocked_row_exp_sum_avx2(float *row, int n, float m);
void attn_blocked_row_scale_avx2(float *row, int n, float a);
/* zero: NULL, or grads, set to +0 once read (attn_adam_update_zero_grads) */
void attn_adam_update_avx2(float *params, float *m, float *v, const float *grads, float *zero,
                           size_t n, const attn_adam_scalars *s);
#endif
/* The plain Adam update of elements [i, n) (adam_update.c; the AVX2 version's tail). */
void attn_adam_update_scalar(float *params, float *m, float *v, const float *grads, float *zero,
                             size_t i, size_t n, const attn_adam_scalars *s);
/* Below this the blocked attention's exp pins its argument (exp(-86) = 4.5e-38, still normal). */
#define ATTN_BLOCKED_EXP_LOWEST -86.0f

/* One head of the naive attention's backward (attention.c), shared with the masked attentions
 * (attention_masked.c): from out = P.v, P = softmax(q.k^T) over the first n_valid keys,
 * d_v += P^T.d_out, d_q += d_S.k, d_k += d_S^T.q (any d_ may be NULL); `loop` is the caller's
 * bmm rule (attn_bmm_is_loop of the shape PyTorch computes). work: [2, n_q, n_k]. */
void attn_attention_head_backward(float *d_q, float *d_k, float *d_v, const float *d_out,
                                  const float *probs, const float *q, const float *k,
                                  const float *v, int n_q, int n_k, int HS, int n_valid, bool loop,
                                  float *work);

/* attn_softmax_backward written instead of added (softmax.c): d_x[rows, cols] = +0 + the
 * gradient, the masked columns +0 -- the bits of zeroing d_x first, in one pass. */
void attn_softmax_backward_set(float *d_x, const float *d_probs, const float *probs, int rows,
                               int cols, int n_valid);

/* The same head with its operands' rows ld floats apart (row-major, ld >= HS; d_x shares x's
 * stride; probs and work contiguous): the same products with the same shapes, so the same bits as
 * copying the rows together first. HS == 1 needs ldq == 1 (a column result is contiguous). */
void attn_attention_head_backward_ld(float *d_q, float *d_k, float *d_v, const float *d_out,
                                     int ldo, const float *probs, const float *q, int ldq,
                                     const float *k, int ldk, const float *v, int ldv, int n_q,
                                     int n_k, int HS, int n_valid, bool loop, float *work);

/* c = op(a).op(b) (+ beta c) with explicit row strides (attn_sgemm's contract otherwise) and
 * one batch entry of a bmm (attn_bmm_nn/nt/tn's contract: `loop` is ATen's small-bmm loop) with
 * them: the same OpenBLAS call with the same shape as the contiguous one, only its leading
 * dimensions differ, so the same bits (OpenBLAS packs both operands before its kernel reads
 * them). A column result (n == 1, no transposes, not the loop) needs ldc == 1. */
void attn_sgemm_ld(float *c, int ldc, const float *a, int lda, const float *b, int ldb, int m,
                   int n, int k, bool trans_a, bool trans_b, float alpha, float beta, attn_op tag,
                   attn_pass pass);
void attn_bmm_ld(float *c, int ldc, const float *a, int lda, const float *b, int ldb, int m, int n,
                 int k, bool trans_a, bool trans_b, float beta, bool loop, attn_op tag,
                 attn_pass pass);

/* ---- 8-lane helpers, only in files compiled with -mavx2 ------------------------------------ */
#ifdef __AVX2__
#include <immintrin.h>

/* ATen's Vec::loadu(p, count): the first count (< 8) lanes from p, the rest +0.0f. */
static inline __m256 attn_load_partial8(const float *p, size_t count) {
    float buf[8] = {0};
    memcpy(buf, p, count * sizeof *buf);
    return _mm256_loadu_ps(buf);
}

/* ATen's Vec::store(p, count): writes only the first count (< 8) lanes. */
static inline void attn_store_partial8(float *p, __m256 v, size_t count) {
    float buf[8];
    _mm256_storeu_ps(buf, v);
    memcpy(p, buf, count * sizeof *buf);
}
#endif

#endif /* ATTN_KERNELS_INTERNAL_H */

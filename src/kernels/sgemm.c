/* sgemm.c -- the one wrapper every matrix product goes through (the ONLY file that includes
 * <cblas.h>), OpenBLAS's kernel table and thread count, and the linear layer built on it (the
 * FLOP accountant every product books into: flops.c).
 *
 *   attn_sgemm:  c[m,n] = alpha * op(a)[m,k] . op(b)[k,n] + beta * c, row-major, contiguous.
 *   Leading dimensions are derived here and nowhere else. With -DATTN_NAIVE_GEMM=ON a plain
 *   triple loop replaces OpenBLAS, so tests can tell a BLAS call from a logic bug (not
 *   bit-identical to PyTorch; exactness needs OpenBLAS, see docs/numerics.md).
 *
 *   Linear (nn.Linear, W is [out,in]): y[n,out] = x[n,in] . W^T + b. The bias is PRE-FILLED
 *   into y and then added by sgemm with beta = 1: this is PyTorch's addmm call bit for bit.
 */
#include "kernels_internal.h"

#include "attn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#ifndef ATTN_NAIVE_GEMM
#include <cblas.h>
#include <dlfcn.h>
#include <stdatomic.h>
#endif

#ifdef ATTN_NAIVE_GEMM
const bool attn_sgemm_naive = true;
#else
const bool attn_sgemm_naive = false;
#endif

/* ---- BLAS threads ------------------------------------------------------------------------ */

#ifndef ATTN_NAIVE_GEMM
/* Debian builds OpenBLAS for pthreads and for OpenMP (openblas_get_parallel() 1 and 2);
 * CMakeLists.txt links the OpenMP build when it is installed, because it hands out its per-call
 * buffers without the process-wide mutex the pthread build takes around them, on which two
 * threads issuing products at once queue. Under OpenMP the BLAS thread count is OpenMP's, and
 * that is per thread: openblas_set_num_threads(n) sets it for the calling thread only, and a
 * product issued on another thread (a pool worker, a server thread) would run on that thread's
 * own count -- the cores -- split differently, and round differently. So the count set here is
 * published with a generation number, and each thread applies it before its next product. */
static _Atomic int blas_threads_wanted;          /* the last count set; 0 before the first */
static _Atomic unsigned blas_threads_generation; /* bumped by each set under OpenMP; 0: never */
static _Thread_local unsigned blas_threads_seen; /* the generation this thread has applied */
/* openblas_set_num_threads also resizes a table of OpenBLAS's thread buffers without a lock: one
 * caller at a time (rare: once per thread and count). */
static atomic_flag blas_threads_busy = ATOMIC_FLAG_INIT;

static void blas_threads_set(int n) {
    while (atomic_flag_test_and_set_explicit(&blas_threads_busy, memory_order_acquire)) {
    }
    openblas_set_num_threads(n);
    atomic_flag_clear_explicit(&blas_threads_busy, memory_order_release);
}

static void blas_threads_follow(void) {
    unsigned g = atomic_load_explicit(&blas_threads_generation, memory_order_acquire);
    if (g == blas_threads_seen) return;
    blas_threads_seen = g;
    blas_threads_set(atomic_load_explicit(&blas_threads_wanted, memory_order_relaxed));
}
#endif

void attn_set_num_threads(int n) {
#ifndef ATTN_NAIVE_GEMM
    n = n < 1 ? 1 : n;
    blas_threads_set(n);
    if (openblas_get_parallel() == 2) {
        atomic_store_explicit(&blas_threads_wanted, n, memory_order_relaxed);
        blas_threads_seen =
            atomic_fetch_add_explicit(&blas_threads_generation, 1, memory_order_release) + 1;
    }
#else
    (void)n;
#endif
}

const char *attn_blas_threading(void) {
#ifndef ATTN_NAIVE_GEMM
    switch (openblas_get_parallel()) {
    case 0:
        return "serial";
    case 1:
        return "pthread";
    case 2:
        return "openmp";
    }
    return "unknown";
#else
    return "naive";
#endif
}

int attn_num_threads(void) {
#ifndef ATTN_NAIVE_GEMM
    return openblas_get_num_threads();
#else
    return 1;
#endif
}

const char *attn_blas_corename(void) {
#ifndef ATTN_NAIVE_GEMM
    const char *name = openblas_get_corename();
    return name ? name : "unknown";
#else
    return "naive";
#endif
}

const char *attn_blas_preferred_core(void) {
#ifndef ATTN_NAIVE_GEMM
    const char *set = getenv("OPENBLAS_CORETYPE");
    if ((set && set[0]) || strcmp(attn_blas_corename(), "Prescott") != 0) return NULL;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
    return NULL;
}

/* "0.3.21" from openblas_get_config() ("OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell
 * MAX_THREADS=64"), "naive" in the ATTN_NAIVE_GEMM build. */
const char *attn_blas_version(void) {
#ifndef ATTN_NAIVE_GEMM
    static char version[32];
    if (!version[0]) {
        const char *config = openblas_get_config();
        const char *p = config ? strchr(config, ' ') : NULL;
        size_t n = p ? strcspn(p + 1, " ") : 0;
        snprintf(version, sizeof version, "%.*s", n ? (int)n : 7, n ? p + 1 : "unknown");
    }
    return version;
#else
    return "naive";
#endif
}

#ifndef ATTN_NAIVE_GEMM
/* A product of one row, c[1,n] = a[1,k].op(b), is asked of OpenBLAS as the column-major
 * product of a 1 x k by a k x n matrix instead of the row-major call (which OpenBLAS turns into
 * the n x 1 product op(b)^T.a^T, packing all of b into its M panels at every call: at batch 1 a
 * recurrent step's whole W_hh, 30-50 % of the step on the Haswell table). On the Haswell code
 * (the Haswell and Zen tables: one FMA chain over k per element in either orientation) both calls
 * give the same bits, measured on random shapes up to 300 x 600 with alpha 0.5, 1 and beta 0,
 * 0.5, 1 (tests/kernels/test_sgemm.c keeps measuring it); on SkylakeX's and Prescott's they do
 * not always, so those keep the row-major call. 1: use it, 0: do not, -1: not yet asked. */
static _Atomic int row_as_column = -1;

static bool row_product_as_column(void) {
    int v = atomic_load_explicit(&row_as_column, memory_order_relaxed);
    if (v < 0) {
        const char *core = attn_blas_corename();
        v = strcasecmp(core, "Haswell") == 0 || strcasecmp(core, "Zen") == 0;
        atomic_store_explicit(&row_as_column, v, memory_order_relaxed);
    }
    return v == 1;
}
#endif

/* OpenBLAS built with DYNAMIC_ARCH (Debian's) picks its kernel table once, when it is loaded,
 * in gotoblas_dynamic_init(): OPENBLAS_CORETYPE if set, else the detected CPU. That function
 * and gotoblas_dynamic_quit() (which forgets the table) are exported, so the table can be
 * chosen again in-process: set the variable, quit, init, restore the variable. Looked up with
 * dlsym so that attn still links and runs against an OpenBLAS built for one target (then the
 * kernels cannot be switched and this returns false). */
bool attn_blas_use_core(const char *core) {
#ifndef ATTN_NAIVE_GEMM
    void *self = dlopen(NULL, RTLD_NOW);
    if (!self) return false;
    void (*quit)(void), (*init)(void);
    *(void **)&quit = dlsym(self, "gotoblas_dynamic_quit");
    *(void **)&init = dlsym(self, "gotoblas_dynamic_init");
    dlclose(self);
    if (!quit || !init) return false;
    const char *env = getenv("OPENBLAS_CORETYPE");
    char saved[64] = "";
    bool had = env != NULL;
    if (had) snprintf(saved, sizeof saved, "%s", env);
    if (core ? setenv("OPENBLAS_CORETYPE", core, 1) != 0 : false) return false;
    quit();
    init();
    if (had)
        setenv("OPENBLAS_CORETYPE", saved, 1);
    else
        unsetenv("OPENBLAS_CORETYPE");
    row_as_column = -1; /* another table: ask again (row_product_as_column) */
    return !core || strcasecmp(attn_blas_corename(), core) == 0;
#else
    (void)core;
    return false;
#endif
}

/* ---- sgemm ------------------------------------------------------------------------------ */

/* C[m,n] = alpha * op(A) . op(B) + beta * C. A: [m,k] or [k,m] (trans_a); B: [k,n] or [n,k]
 * (trans_b); C: [m,n]. Counts m*n*k multiply-adds under `tag`. */
void attn_sgemm(float *c, const float *a, const float *b, int m, int n, int k, bool trans_a,
                bool trans_b, float alpha, float beta, attn_op tag, attn_pass pass) {
    /* Row-major leading dimensions: the stored row length of each operand. */
    attn_sgemm_ld(c, n, a, trans_a ? m : k, b, trans_b ? k : n, m, n, k, trans_a, trans_b, alpha,
                  beta, tag, pass);
}

void attn_sgemm_ld(float *c, int ldc, const float *a, int lda, const float *b, int ldb, int m,
                   int n, int k, bool trans_a, bool trans_b, float alpha, float beta, attn_op tag,
                   attn_pass pass) {
    attn_flops_count(tag, pass == ATTN_PASS_BACKWARD, m, n, k);
    if (m == 0 || n == 0) return;
#ifndef ATTN_NAIVE_GEMM
    if (k == 0) { /* OpenBLAS rejects lda = 0; the product is empty, only beta applies */
        for (size_t i = 0; i < (size_t)m; i++)
            for (size_t j = 0; j < (size_t)n; j++) {
                float *cij = c + i * (size_t)ldc + j;
                *cij = beta == 0.0f ? 0.0f : beta * *cij;
            }
        return;
    }
    if (beta == 0.0f && alpha == 1.0f) {
        /* OpenBLAS zeroes C for beta 0 one row at a time (a memset call per row of `n` floats,
         * 1.6 % of a small Transformer's training step) and then adds its accumulator to it like
         * for beta 1; one memset here and beta 1 give the same bits (the accumulator starts at
         * +0, so it is never -0, and acc + 0 = acc) in fewer calls. */
        if (ldc == n)
            memset(c, 0, (size_t)m * (size_t)n * sizeof *c);
        else
            for (size_t i = 0; i < (size_t)m; i++)
                memset(c + i * (size_t)ldc, 0, (size_t)n * sizeof *c);
        beta = 1.0f;
    }
    blas_threads_follow();
    if (m == 1 && !trans_a && row_product_as_column()) {
        /* c (1 x n, column-major ldc 1) = a (1 x k, lda 1) . op(b): b row-major [k,n] is the
         * column-major n x k matrix with its ldb, so op flips */
        cblas_sgemm(CblasColMajor, CblasNoTrans, trans_b ? CblasNoTrans : CblasTrans, 1, n, k,
                    alpha, a, 1, b, ldb, beta, c, 1);
        return;
    }
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#else
    /* Reference triple loop, float accumulation in k order; beta == 0 ignores old C (BLAS). */
    for (int i = 0; i < m; i++) {
        for (int j = 0; j < n; j++) {
            float acc = 0.0f;
            for (int p = 0; p < k; p++) {
                float av = trans_a ? a[(size_t)p * lda + i] : a[(size_t)i * lda + p];
                float bv = trans_b ? b[(size_t)j * ldb + p] : b[(size_t)p * ldb + j];
                acc += av * bv;
            }
            float *cij = &c[(size_t)i * ldc + j];
            *cij = beta == 0.0f ? alpha * acc : alpha * acc + beta * *cij;
        }
    }
#endif
}

/* ---- named products ----------------------------------------------------------------------- */

void attn_matmul_nn(float *c, const float *a, const float *b, int m, int n, int k, float beta,
                    attn_op tag, attn_pass pass) {
    attn_sgemm(c, a, b, m, n, k, false, false, 1.0f, beta, tag, pass);
}

void attn_matmul_nt(float *c, const float *a, const float *b, int m, int n, int k, float beta,
                    attn_op tag, attn_pass pass) {
    attn_sgemm(c, a, b, m, n, k, false, true, 1.0f, beta, tag, pass);
}

void attn_matmul_tn(float *c, const float *a, const float *b, int m, int n, int k, float beta,
                    attn_op tag, attn_pass pass) {
    attn_sgemm(c, a, b, m, n, k, true, false, 1.0f, beta, tag, pass);
}

/* ---- batched products under ATen's size rule ----------------------------------------------- */

bool attn_bmm_is_loop(int rows, int cols, int contraction) {
    return (int64_t)rows * (int64_t)cols * (int64_t)contraction < ATTN_BMM_LOOP_BELOW;
}

/* c[m,n] (+)= op(a).op(b) as ATen's small bmm kernel: per element a float accumulator that
 * starts at 0 and adds the rounded products in k order (a multiply, then an add: no FMA),
 * stored as is (beta 0) or added to c (beta 1, the accumulate contract). Row strides lda, ldb,
 * ldc (the stored row lengths). A row of c at a time: for each k the row's accumulators all
 * take their next product (loop order i, p, j), so each element still sums in k order -- the
 * same roundings -- while the n independent sums overlap instead of waiting on one another
 * (and vectorise when b's rows are contiguous). */
static void bmm_loop_columns(bool trans_a, bool trans_b, int m, int n, int k, const float *a,
                             size_t lda, const float *b, size_t ldb, float beta, float *c,
                             size_t ldc) {
    ATTN_ASSERT(n <= ATTN_BMM_LOOP_BELOW);
    float acc[ATTN_BMM_LOOP_BELOW];
    for (int i = 0; i < m; i++) {
        /* the first product lands on +0 (0 + prod, as a sum from 0 does; no memset per row) */
        const float a0 = k > 0 ? (trans_a ? a[i] : a[(size_t)i * lda]) : 0.0f;
        for (int j = 0; j < n; j++)
            acc[j] = k > 0 ? 0.0f + a0 * (trans_b ? b[(size_t)j * ldb] : b[j]) : 0.0f;
        for (int p = 1; p < k; p++) {
            const float av = trans_a ? a[(size_t)p * lda + i] : a[(size_t)i * lda + p];
            if (trans_b) {
                for (int j = 0; j < n; j++) {
                    const float prod = av * b[(size_t)j * ldb + p];
                    acc[j] += prod;
                }
            } else {
                const float *restrict brow = b + (size_t)p * ldb;
                for (int j = 0; j < n; j++) {
                    const float prod = av * brow[j];
                    acc[j] += prod;
                }
            }
        }
        float *ci = c + (size_t)i * ldc;
        if (beta == 0.0f)
            for (int j = 0; j < n; j++) ci[j] = acc[j];
        else
            for (int j = 0; j < n; j++) ci[j] = beta * ci[j] + acc[j];
    }
}

/* The rule's shapes have fewer than ATTN_BMM_LOOP_BELOW columns (rows * cols * contraction below
 * it, contraction >= 1); wider ones (an empty contraction) go in blocks of columns, which does
 * not touch any element's sum. */
static void bmm_loop(bool trans_a, bool trans_b, int m, int n, int k, const float *a, size_t lda,
                     const float *b, size_t ldb, float beta, float *c, size_t ldc) {
    for (int j0 = 0; j0 < n; j0 += ATTN_BMM_LOOP_BELOW) {
        const int nb = n - j0 < ATTN_BMM_LOOP_BELOW ? n - j0 : ATTN_BMM_LOOP_BELOW;
        bmm_loop_columns(trans_a, trans_b, m, nb, k, a, lda,
                         b + (trans_b ? (size_t)j0 * ldb : (size_t)j0), ldb, beta, c + j0, ldc);
    }
}

/* c[m,1] = a[m,k].b[k] (+ beta c) as ATen's addmm hands a column result to BLAS: a contiguous
 * [m,1] tensor has strides (1, 1), which addmm_impl_cpu_ reads as column-major, so the call is
 * sgemm('T', 'T', m, 1, k) on the row-major a and b read as a 1 x k row (ldb 1), not the
 * row-major call's transposed geometry. OpenBLAS runs other kernels for it, which round
 * differently (measured: head width 1, up to 13 ULP in the logit). a's rows lda floats apart,
 * b's elements ldb apart; c contiguous. */
static void sgemm_column(attn_op tag, attn_pass pass, int m, int k, const float *a, int lda,
                         const float *b, int ldb, float beta, float *c) {
#ifndef ATTN_NAIVE_GEMM
    attn_flops_count(tag, pass == ATTN_PASS_BACKWARD, m, 1, k);
    blas_threads_follow();
    cblas_sgemm(CblasColMajor, CblasTrans, CblasTrans, m, 1, k, 1.0f, a, lda, b, ldb, beta, c, m);
#else
    attn_sgemm_ld(c, 1, a, lda, b, ldb, m, 1, k, false, false, 1.0f, beta, tag, pass);
#endif
}

void attn_bmm_ld(float *c, int ldc, const float *a, int lda, const float *b, int ldb, int m, int n,
                 int k, bool trans_a, bool trans_b, float beta, bool loop, attn_op tag,
                 attn_pass pass) {
    if (!loop && n == 1 && m > 1 && k > 0 && !trans_a && !trans_b) {
        ATTN_ASSERT(ldc == 1); /* a column result must be contiguous (column-major C) */
        sgemm_column(tag, pass, m, k, a, lda, b, ldb, beta, c);
        return;
    }
    if (!loop) {
        attn_sgemm_ld(c, ldc, a, lda, b, ldb, m, n, k, trans_a, trans_b, 1.0f, beta, tag, pass);
        return;
    }
    attn_flops_count(tag, pass == ATTN_PASS_BACKWARD, m, n, k);
    bmm_loop(trans_a, trans_b, m, n, k, a, (size_t)lda, b, (size_t)ldb, beta, c, (size_t)ldc);
}

/* One batch entry of a bmm, contiguous operands: the loop when ATen would take it, else one
 * sgemm. */
static void bmm(attn_op tag, attn_pass pass, bool trans_a, bool trans_b, int m, int n, int k,
                bool loop, const float *a, const float *b, float beta, float *c) {
    attn_bmm_ld(c, n, a, trans_a ? m : k, b, trans_b ? k : n, m, n, k, trans_a, trans_b, beta, loop,
                tag, pass);
}

void attn_bmm_nn(float *c, const float *a, const float *b, int m, int n, int k, float beta,
                 bool loop, attn_op tag, attn_pass pass) {
    bmm(tag, pass, false, false, m, n, k, loop, a, b, beta, c);
}

void attn_bmm_nt(float *c, const float *a, const float *b, int m, int n, int k, float beta,
                 bool loop, attn_op tag, attn_pass pass) {
    bmm(tag, pass, false, true, m, n, k, loop, a, b, beta, c);
}

void attn_bmm_tn(float *c, const float *a, const float *b, int m, int n, int k, float beta,
                 bool loop, attn_op tag, attn_pass pass) {
    bmm(tag, pass, true, false, m, n, k, loop, a, b, beta, c);
}

/* ---- linear ----------------------------------------------------------------------------- */

/* y[n,out] = x[n,in] . w[out,in]^T + bias[out] (bias may be NULL). */
void attn_linear_forward(float *y, const float *x, const float *w, const float *bias, int n, int in,
                         int out, attn_op tag) {
    if (bias && n > 0) {
        /* pre-fill every row with the bias, then y = x.w^T + y: PyTorch's addmm, bit for bit.
         * The rows filled so far are copied after themselves, doubling: log2(n) copies instead
         * of n short ones (the small models' rows are 32-96 floats). */
        const size_t row = (size_t)out * sizeof *y;
        memcpy(y, bias, row);
        for (size_t done = 1; done < (size_t)n;) {
            const size_t k = done < (size_t)n - done ? done : (size_t)n - done;
            memcpy(y + done * (size_t)out, y, k * row);
            done += k;
        }
    }
    attn_matmul_nt(y, x, w, n, out, in, bias ? 1.0f : 0.0f, tag, ATTN_PASS_FORWARD);
}

/* Whether the bias may meet the finished product instead of being pre-filled: the BLAS adds its
 * accumulator to the old C once per k-block (OpenBLAS: c = acc * alpha + c, one rounding), so
 * with a single k-block y = x.w^T (beta 0) followed by y + bias rounds exactly as addmm's
 * pre-filled y. 128 is below the smallest k-block of every OpenBLAS kernel set measured here
 * (Prescott 128, Haswell/Zen/Cooperlake 320, Sandybridge 384; tests/kernels/test_sgemm.c
 * checks it against the pre-filled product). */
static bool bias_after(const float *bias, int n, int in) {
    return bias && n > 0 && in <= ATTN_LINEAR_BIAS_AFTER_MAX_IN;
}

/* y[n,out] = res[n,out] + (x.w^T + bias): the linear, then the residual add, one rounding each
 * (PyTorch's addmm, then `res + y`); bias after the product when bias_after allows it, so the
 * linear's pre-fill and the separate add pass become one pass. y must not alias res or x. */
void attn_linear_residual_forward(float *y, const float *x, const float *w, const float *bias,
                                  const float *res, int n, int in, int out, attn_op tag) {
    const size_t cols = (size_t)out;
    if (!bias_after(bias, n, in)) {
        attn_linear_forward(y, x, w, bias, n, in, out, tag);
        for (size_t i = 0; i < (size_t)n * cols; i++) y[i] = res[i] + y[i];
        return;
    }
    attn_matmul_nt(y, x, w, n, out, in, 0.0f, tag, ATTN_PASS_FORWARD);
    for (size_t i = 0; i < (size_t)n; i++) {
        float *yr = y + i * cols;
        const float *rr = res + i * cols;
        for (size_t j = 0; j < cols; j++) yr[j] = rr[j] + (yr[j] + bias[j]);
    }
}

/* lin[n,out] = x.w^T + bias, act = relu(lin) (attn_relu_forward's select), in one pass after
 * the product when bias_after allows it. */
void attn_linear_relu_forward(float *lin, float *act, const float *x, const float *w,
                              const float *bias, int n, int in, int out, attn_op tag) {
    const size_t cols = (size_t)out;
    if (!bias_after(bias, n, in)) {
        attn_linear_forward(lin, x, w, bias, n, in, out, tag);
        attn_relu_forward(act, lin, (size_t)n * cols);
        return;
    }
    attn_matmul_nt(lin, x, w, n, out, in, 0.0f, tag, ATTN_PASS_FORWARD);
    for (size_t i = 0; i < (size_t)n; i++) {
        float *lr = lin + i * cols, *ar = act + i * cols;
        for (size_t j = 0; j < cols; j++) {
            const float v = lr[j] + bias[j];
            lr[j] = v;
            ar[j] = v < 0.0f ? 0.0f : v;
        }
    }
}

/* d_x[n,in] += d_y[n,out].w[out,in]; d_w[out,in] += d_y^T.x; d_bias[out] += sum_rows d_y. */
void attn_linear_backward(float *d_x, float *d_w, float *d_bias, const float *d_y, const float *x,
                          const float *w, int n, int in, int out, attn_op tag) {
    /* forward was y = x.w^T + b, so dL/dx = d_y.w and dL/dw = d_y^T.x (beta 1 accumulates) */
    if (d_x) attn_matmul_nn(d_x, d_y, w, n, in, out, 1.0f, tag, ATTN_PASS_BACKWARD);
    if (d_w) attn_matmul_tn(d_w, d_y, x, out, in, n, 1.0f, tag, ATTN_PASS_BACKWARD);
    if (d_bias) {
        /* the bias was broadcast over the n rows: its gradient is the column sum of d_y, each
         * column summed row after row onto d_bias[j]; BIAS_COLS columns at a time in a local
         * array the compiler keeps in registers (the same additions in the same order as
         * d_bias[j] += d_y[i][j] over i, without a load and store of d_bias per row) */
        enum { BIAS_COLS = 16 };
        int j0 = 0;
        for (; j0 + BIAS_COLS <= out; j0 += BIAS_COLS) {
            float acc[BIAS_COLS];
            for (int j = 0; j < BIAS_COLS; j++) acc[j] = d_bias[j0 + j];
            for (int i = 0; i < n; i++) {
                const float *row = d_y + (size_t)i * out + j0;
                for (int j = 0; j < BIAS_COLS; j++) acc[j] += row[j];
            }
            for (int j = 0; j < BIAS_COLS; j++) d_bias[j0 + j] = acc[j];
        }
        for (int i = 0; i < n; i++)
            for (int j = j0; j < out; j++) d_bias[j] += d_y[(size_t)i * out + j];
    }
}

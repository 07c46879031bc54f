/* test_sgemm.c -- attn_sgemm, the linear layer and the FLOP accountant.
 * Evidence: PyTorch goldens (weights/golden/kernels.json, bit-identical F.linear), finite
 * differences for every linear gradient, the accumulate contract, an independent double-precision
 * product for every transpose combination, and exact FLOP counts per tag. */
#include "kernels_internal.h"
#include "test_util.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FD_STEP 1e-2f
#define FD_ATOL 2e-3
#define FD_RTOL 2e-3

/* Bit-identical with the OpenBLAS core the golden was made with; another core (another CPU
 * class) or the ATTN_NAIVE_GEMM triple loop rounds differently, so there only float accuracy
 * is required: LINEAR_REL relative, absolute below |y| = 1 (tu_golden_exact decides). */
#define LINEAR_REL 1e-5
static void check_linear(const char *what, const float *got, const float *want, size_t n,
                         bool exact) {
    tu_assert_golden(what, got, want, n, exact, LINEAR_REL, 1.0);
}

START_TEST(test_linear_golden) {
    cJSON *root = tu_load_source_json(TU_KERNELS_GOLDEN);
    bool exact = tu_golden_exact(root, TU_KERNELS_GOLDEN, "1e-5 relative (absolute below 1)");
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(root, "linear"), *c;
    int count = 0;
    cJSON_ArrayForEach(c, cases) {
        int n = tu_json_int(c, "n"), in = tu_json_int(c, "in"), out = tu_json_int(c, "out");
        float *x = tu_json_floats(c, "x", NULL), *w = tu_json_floats(c, "w", NULL);
        float *b = tu_json_floats(c, "b", NULL), *want = tu_json_floats(c, "y", NULL);
        float *want0 = tu_json_floats(c, "y_nobias", NULL);
        float *y = malloc((size_t)n * out * sizeof *y);
        ck_assert_ptr_nonnull(y);
        char what[96];
        attn_linear_forward(y, x, w, b, n, in, out, ATTN_OP_OTHER);
        snprintf(what, sizeof what, "linear n=%d in=%d out=%d", n, in, out);
        check_linear(what, y, want, (size_t)n * out, exact);
        for (size_t i = 0; i < (size_t)n * out; i++) y[i] = NAN; /* beta 0 must ignore old y */
        attn_linear_forward(y, x, w, NULL, n, in, out, ATTN_OP_OTHER);
        snprintf(what, sizeof what, "linear (no bias) n=%d in=%d out=%d", n, in, out);
        check_linear(what, y, want0, (size_t)n * out, exact);
        free(x), free(w), free(b), free(want), free(want0), free(y);
        count++;
    }
    ck_assert_int_ge(count, 8);
    cJSON_Delete(root);
}
END_TEST

/* ---- sgemm against an independent double-precision product ------------------------------ */

static const int gemm_shapes[][3] = {{1, 1, 1}, {3, 5, 7}, {8, 8, 8}, {17, 33, 9}, {1, 96, 32}};

START_TEST(test_sgemm_transposes) {
    const int m = gemm_shapes[_i][0], n = gemm_shapes[_i][1], k = gemm_shapes[_i][2];
    attn_rng r = attn_rng_seed(11 + (uint64_t)_i);
    float *a = malloc((size_t)m * k * sizeof *a), *b = malloc((size_t)k * n * sizeof *b);
    float *c = malloc((size_t)m * n * sizeof *c), *c0 = malloc((size_t)m * n * sizeof *c0);
    float *want = malloc((size_t)m * n * sizeof *want);
    ck_assert(a && b && c && c0 && want);
    tu_fill_uniform(a, (size_t)m * k, -1, 1, &r);
    tu_fill_uniform(b, (size_t)k * n, -1, 1, &r);
    tu_fill_uniform(c0, (size_t)m * n, -1, 1, &r);
    for (int ta = 0; ta < 2; ta++) {
        for (int tb = 0; tb < 2; tb++) {
            /* C = 0.5 op(A) op(B) + 2 C0, with A, B read in whichever layout the flags say */
            for (int i = 0; i < m; i++)
                for (int j = 0; j < n; j++) {
                    double s = 0;
                    for (int p = 0; p < k; p++) {
                        double av = ta ? a[(size_t)p * m + i] : a[(size_t)i * k + p];
                        double bv = tb ? b[(size_t)j * k + p] : b[(size_t)p * n + j];
                        s += av * bv;
                    }
                    want[(size_t)i * n + j] = (float)(0.5 * s + 2.0 * c0[(size_t)i * n + j]);
                }
            memcpy(c, c0, (size_t)m * n * sizeof *c);
            attn_sgemm(c, a, b, m, n, k, ta, tb, 0.5f, 2.0f, ATTN_OP_OTHER, ATTN_PASS_FORWARD);
            char what[80];
            snprintf(what, sizeof what, "sgemm %dx%dx%d ta=%d tb=%d", m, n, k, ta, tb);
            tu_assert_close(what, c, want, (size_t)m * n, 1e-5, 1.0);
        }
    }
    free(a), free(b), free(c), free(c0), free(want);
}
END_TEST

/* ---- attn_bmm_*: ATen's batched-product size rule ----------------------------------------- */

/* The boundary as measured against torch.bmm (PyTorch 1.13): loop below 400, BLAS from 400. */
START_TEST(test_bmm_rule_boundary) {
    ck_assert(attn_bmm_is_loop(4, 4, 16));  /* 4 positions, 16-wide heads: 256 */
    ck_assert(!attn_bmm_is_loop(5, 5, 16)); /* 5 positions: 400 */
    ck_assert(attn_bmm_is_loop(7, 7, 8));   /* 8-wide heads: up to 7 positions (392) */
    ck_assert(!attn_bmm_is_loop(8, 8, 8));
    ck_assert(attn_bmm_is_loop(1, 1, 399));
    ck_assert(!attn_bmm_is_loop(1, 1, 400));
    ck_assert(attn_bmm_is_loop(19, 21, 1));
    ck_assert(!attn_bmm_is_loop(20, 20, 1));
    ck_assert(!attn_bmm_is_loop(1 << 16, 1 << 16, 1 << 10)); /* no int overflow */
}
END_TEST

/* Sequential float reference written out here: acc = 0, then acc = acc + rounded product in k
 * order (this file is built with -ffp-contract=off, so no FMA). */
static float seq_dot(const float *a, size_t sa, const float *b, size_t sb, int k) {
    float acc = 0.0f;
    for (int p = 0; p < k; p++) {
        float prod = a[(size_t)p * sa] * b[(size_t)p * sb];
        acc = acc + prod;
    }
    return acc;
}

/* the last is wider than any shape of the rule (forced with loop = true): columns in blocks */
static const int bmm_shapes[][3] = {{1, 1, 16}, {4, 4, 16}, {4, 16, 4},
                                    {3, 5, 7},  {7, 8, 7},  {2, 450, 3}};

/* loop = true: bit-identical to the sequential float sum (nn, nt, tn; beta 0 ignores a NaN in
 * c, beta 1 adds the sum to c), within float accuracy of a double product, and counted;
 * loop = false: bit-identical to attn_sgemm. */
START_TEST(test_bmm_loop_sequential) {
    const int m = bmm_shapes[_i][0], n = bmm_shapes[_i][1], k = bmm_shapes[_i][2];
    attn_rng r = attn_rng_seed(300 + (uint64_t)_i);
    const size_t na = (size_t)m * k, nb = (size_t)k * n, nc = (size_t)m * n;
    float *a = malloc(na * 4), *b = malloc(nb * 4), *c0 = malloc(nc * 4), *c = malloc(nc * 4);
    float *want = malloc(nc * 4), *ref = malloc(nc * 4);
    ck_assert(a && b && c0 && c && want && ref);
    tu_fill_uniform(a, na, -1, 1, &r);
    tu_fill_uniform(b, nb, -1, 1, &r);
    tu_fill_uniform(c0, nc, -1, 1, &r);
    for (int form = 0; form < 3; form++) { /* nn, nt, tn: a [m,k] or [k,m], b [k,n] or [n,k] */
        const bool ta = form == 2, tb = form == 1;
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                const float *ai = ta ? a + i : a + (size_t)i * k;
                const float *bj = tb ? b + (size_t)j * k : b + j;
                want[(size_t)i * n + j] =
                    seq_dot(ai, ta ? (size_t)m : 1, bj, tb ? 1 : (size_t)n, k);
                double s = 0;
                for (int p = 0; p < k; p++)
                    s += (double)ai[(size_t)p * (ta ? m : 1)] * bj[(size_t)p * (tb ? 1 : n)];
                ref[(size_t)i * n + j] = (float)s;
            }
        char what[96];
        for (int beta = 0; beta < 2; beta++) {
            for (size_t i = 0; i < nc; i++) c[i] = beta ? c0[i] : NAN;
            attn_flop_counts fc = {0};
            attn_flops_set_counter(&fc);
            if (form == 0)
                attn_bmm_nn(c, a, b, m, n, k, (float)beta, true, ATTN_OP_AV, ATTN_PASS_FORWARD);
            if (form == 1)
                attn_bmm_nt(c, a, b, m, n, k, (float)beta, true, ATTN_OP_AV, ATTN_PASS_FORWARD);
            if (form == 2)
                attn_bmm_tn(c, a, b, m, n, k, (float)beta, true, ATTN_OP_AV, ATTN_PASS_BACKWARD);
            attn_flops_set_counter(NULL);
            const uint64_t *madds = form == 2 ? fc.bwd_madds : fc.fwd_madds;
            ck_assert_uint_eq(madds[ATTN_OP_AV], (uint64_t)m * n * k);
            ck_assert_uint_eq(fc.calls[ATTN_OP_AV], 1);
            float *w = malloc(nc * 4);
            ck_assert_ptr_nonnull(w);
            for (size_t i = 0; i < nc; i++) w[i] = beta ? c0[i] + want[i] : want[i];
            snprintf(what, sizeof what, "bmm loop %dx%dx%d form %d beta %d", m, n, k, form, beta);
            tu_assert_identical(what, c, w, nc);
            free(w);
            /* a float sum of k products of |x| <= 1: error at most k * k * 2^-24 */
            if (!beta) tu_assert_close("bmm loop vs double", c, ref, nc, 6e-8 * k * k, 1.0);
        }
        /* loop = false is the sgemm */
        for (size_t i = 0; i < nc; i++) c[i] = want[i] = c0[i];
        if (form == 0) attn_bmm_nn(c, a, b, m, n, k, 1.0f, false, ATTN_OP_AV, ATTN_PASS_FORWARD);
        if (form == 1) attn_bmm_nt(c, a, b, m, n, k, 1.0f, false, ATTN_OP_AV, ATTN_PASS_FORWARD);
        if (form == 2) attn_bmm_tn(c, a, b, m, n, k, 1.0f, false, ATTN_OP_AV, ATTN_PASS_FORWARD);
        attn_sgemm(want, a, b, m, n, k, ta, tb, 1.0f, 1.0f, ATTN_OP_AV, ATTN_PASS_FORWARD);
        snprintf(what, sizeof what, "bmm sgemm path %dx%dx%d form %d", m, n, k, form);
        tu_assert_identical(what, c, want, nc);
    }
    free(a), free(b), free(c0), free(c), free(want), free(ref);
}
END_TEST

/* ---- linear: finite differences and the accumulate contract ------------------------------- */

typedef struct lin_ctx {
    int n, in, out;
    float *x, *w, *b, *y;
    const double *r; /* [n,out] random upstream gradient: L = sum r . y */
} lin_ctx;

static double lin_loss(void *p) {
    lin_ctx *c = p;
    attn_linear_forward(c->y, c->x, c->w, c->b, c->n, c->in, c->out, ATTN_OP_OTHER);
    double s = 0;
    for (int i = 0; i < c->n * c->out; i++) s += c->r[i] * c->y[i];
    return s;
}

static const int lin_shapes[][3] = {{1, 1, 1}, {1, 16, 32}, {3, 5, 7}, {17, 9, 8}, {2, 33, 3}};

START_TEST(test_linear_grad) {
    const int n = lin_shapes[_i][0], in = lin_shapes[_i][1], out = lin_shapes[_i][2];
    attn_rng rng = attn_rng_seed(100 + (uint64_t)_i);
    size_t nx = (size_t)n * in, nw = (size_t)out * in, ny = (size_t)n * out;
    float *x = malloc(nx * 4), *w = malloc(nw * 4), *b = malloc((size_t)out * 4);
    float *y = malloc(ny * 4), *dy = malloc(ny * 4);
    float *dx = calloc(nx, 4), *dw = calloc(nw, 4), *db = calloc((size_t)out, 4);
    double *r = malloc(ny * sizeof *r);
    ck_assert(x && w && b && y && dy && dx && dw && db && r);
    tu_fill_uniform(x, nx, -1, 1, &rng);
    tu_fill_uniform(w, nw, -1, 1, &rng);
    tu_fill_uniform(b, (size_t)out, -1, 1, &rng);
    tu_fill_uniform(dy, ny, -1, 1, &rng);
    for (size_t i = 0; i < ny; i++) r[i] = dy[i];
    attn_linear_backward(dx, dw, db, dy, x, w, n, in, out, ATTN_OP_OTHER);
    lin_ctx c = {n, in, out, x, w, b, y, r};
    tu_check_grad("linear d_x", lin_loss, &c, x, dx, nx, FD_STEP, FD_ATOL, FD_RTOL);
    tu_check_grad("linear d_w", lin_loss, &c, w, dw, nw, FD_STEP, FD_ATOL, FD_RTOL);
    tu_check_grad("linear d_bias", lin_loss, &c, b, db, (size_t)out, FD_STEP, FD_ATOL, FD_RTOL);

    /* accumulate: a second backward into the same buffers doubles them; NULL d_ are skipped */
    float *dx2 = malloc(nx * 4), *dw2 = malloc(nw * 4), *db2 = malloc((size_t)out * 4);
    ck_assert(dx2 && dw2 && db2);
    for (size_t i = 0; i < nx; i++) dx2[i] = 2 * dx[i];
    for (size_t i = 0; i < nw; i++) dw2[i] = 2 * dw[i];
    for (int i = 0; i < out; i++) db2[i] = 2 * db[i];
    attn_linear_backward(dx, NULL, NULL, dy, x, w, n, in, out, ATTN_OP_OTHER);
    attn_linear_backward(NULL, dw, db, dy, x, w, n, in, out, ATTN_OP_OTHER);
    tu_assert_close("linear d_x accumulates", dx, dx2, nx, 1e-6, 1e-3);
    tu_assert_close("linear d_w accumulates", dw, dw2, nw, 1e-6, 1e-3);
    tu_assert_close("linear d_bias accumulates", db, db2, (size_t)out, 1e-6, 1e-3);
    free(x), free(w), free(b), free(y), free(dy), free(dx), free(dw), free(db), free(r);
    free(dx2), free(dw2), free(db2);
}
END_TEST

/* ---- the fused linears: the same bits as the linear, then the add or the relu --------------- */

/* Random shapes on both sides of ATTN_LINEAR_BIAS_AFTER_MAX_IN (above it the fused calls fall
 * back to the pre-fill), values of mixed magnitudes so that the bias often decides the rounding. */
START_TEST(test_linear_fused_identical) {
    attn_rng rng = attn_rng_seed(4242);
    const int ins[] = {1, 2, 7, 16, 32, 33, 64, 96, 127, 128, 129, 200, 321};
    for (int t = 0; t < 120; t++) {
        const int n = 1 + (int)attn_rng_below(&rng, 70), out = 1 + (int)attn_rng_below(&rng, 100);
        const int in = ins[t % (int)(sizeof ins / sizeof *ins)];
        const size_t nx = (size_t)n * in, nw = (size_t)out * in, ny = (size_t)n * out;
        float *x = malloc(nx * 4), *w = malloc(nw * 4), *b = malloc((size_t)out * 4);
        float *res = malloc(ny * 4), *want = malloc(ny * 4), *want_act = malloc(ny * 4);
        float *got = malloc(ny * 4), *got_act = malloc(ny * 4);
        ck_assert(x && w && b && res && want && want_act && got && got_act);
        tu_fill_uniform(x, nx, -1, 1, &rng);
        tu_fill_uniform(w, nw, -1, 1, &rng);
        tu_fill_uniform(b, (size_t)out, -40, 40, &rng);
        tu_fill_uniform(res, ny, -3, 3, &rng);
        char what[96];
        attn_linear_forward(want, x, w, b, n, in, out, ATTN_OP_OTHER);
        attn_add_forward(want, res, want, ny);
        for (size_t i = 0; i < ny; i++) got[i] = NAN; /* the old y must not matter */
        attn_linear_residual_forward(got, x, w, b, res, n, in, out, ATTN_OP_OTHER);
        snprintf(what, sizeof what, "linear + residual n=%d in=%d out=%d", n, in, out);
        tu_assert_identical(what, got, want, ny);
        attn_linear_forward(want, x, w, b, n, in, out, ATTN_OP_OTHER);
        attn_relu_forward(want_act, want, ny);
        for (size_t i = 0; i < ny; i++) got[i] = got_act[i] = NAN;
        attn_linear_relu_forward(got, got_act, x, w, b, n, in, out, ATTN_OP_OTHER);
        snprintf(what, sizeof what, "linear + relu n=%d in=%d out=%d", n, in, out);
        tu_assert_identical(what, got, want, ny);
        tu_assert_identical(what, got_act, want_act, ny);
        free(x), free(w), free(b), free(res), free(want), free(want_act), free(got), free(got_act);
    }
}
END_TEST

/* ---- FLOP accountant --------------------------------------------------------------------- */

START_TEST(test_flop_counter) {
    attn_flop_counts fc;
    memset(&fc, 0, sizeof fc);
    float x[3 * 4] = {0}, w[5 * 4] = {0}, y[3 * 5], dy[3 * 5] = {0}, dx[3 * 4], dw[5 * 4];
    attn_flops_set_counter(&fc);
    attn_linear_forward(y, x, w, NULL, 3, 4, 5, ATTN_OP_FFN_UP);           /* 3*5*4 = 60 */
    attn_linear_backward(dx, dw, NULL, dy, x, w, 3, 4, 5, ATTN_OP_FFN_UP); /* 2 x 60 */
    attn_matmul_nt(y, x, w, 2, 2, 7, 0.0f, ATTN_OP_QK, ATTN_PASS_FORWARD); /* 28 */
    attn_flops_set_counter(NULL);
    attn_linear_forward(y, x, w, NULL, 3, 4, 5, ATTN_OP_FFN_UP); /* not counted */
    ck_assert_uint_eq(fc.fwd_madds[ATTN_OP_FFN_UP], 60);
    ck_assert_uint_eq(fc.bwd_madds[ATTN_OP_FFN_UP], 120);
    ck_assert_uint_eq(fc.calls[ATTN_OP_FFN_UP], 3);
    ck_assert_uint_eq(fc.fwd_madds[ATTN_OP_QK], 28);
    ck_assert_uint_eq(fc.bwd_madds[ATTN_OP_QK], 0);
    ck_assert_uint_eq(fc.calls[ATTN_OP_QK], 1);
    uint64_t total = 0;
    for (int t = 0; t < ATTN_OP_COUNT; t++) total += fc.fwd_madds[t] + fc.bwd_madds[t];
    ck_assert_uint_eq(total, 60 + 120 + 28);
    ck_assert_str_eq(attn_op_name(ATTN_OP_QKV), "qkv");
    ck_assert_str_eq(attn_op_name(ATTN_OP_RECURRENT), "recurrent");
    for (int t = 0; t < ATTN_OP_COUNT; t++) ck_assert_str_ne(attn_op_name((attn_op)t), "unknown");
}
END_TEST

static Suite *sgemm_suite(void) {
    Suite *s = suite_create("sgemm");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_linear_golden);
    tcase_add_loop_test(tc, test_sgemm_transposes, 0,
                        (int)(sizeof gemm_shapes / sizeof *gemm_shapes));
    tcase_add_loop_test(tc, test_linear_grad, 0, (int)(sizeof lin_shapes / sizeof *lin_shapes));
    tcase_add_test(tc, test_flop_counter);
    tcase_add_test(tc, test_linear_fused_identical);
    tcase_add_test(tc, test_bmm_rule_boundary);
    tcase_add_loop_test(tc, test_bmm_loop_sequential, 0,
                        (int)(sizeof bmm_shapes / sizeof *bmm_shapes));
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return tu_run_suite(sgemm_suite());
}

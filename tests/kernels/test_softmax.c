/* test_softmax.c -- masked row softmax, on both CPU paths (kernel_paths.h).
 * Evidence: PyTorch goldens (AVX2 path: bit-identical torch.softmax on [1,n] rows, n = 1..100,
 * also with the row placed in a wider masked row; scalar path: bit-identical to PyTorch under
 * ATEN_CPU_CAPABILITY=default, within SCALAR_MAX_ULP of the AVX2 goldens; avx512 path:
 * bit-identical to PyTorch under ATEN_CPU_CAPABILITY=avx512),
 * the two paths against each other, invariants (rows sum to 1, masked columns are 0, a
 * fully masked row is 0), finite differences for the backward with n_valid < cols, and the
 * accumulate contract. */
#include "kernel_paths.h"
#include "test_util.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FD_STEP 1e-3f
#define FD_ATOL 1e-4
#define FD_RTOL 1e-2

/* Golden made on another CPU class (tu_golden_exact): within this many ULP. */
#define OTHER_MACHINE_MAX_ULP 4u

/* The scalar path (glibc expf and the lanes folded in order, where PyTorch's AVX2 build runs
 * Sleef's expf8_u10 and folds by shuffles) against the AVX2 goldens: measured max 3 ULP on the
 * 5050 golden values (n = 1..100; 2543 identical). Its own golden is in kp_goldens. */
#define SCALAR_MAX_ULP 16u

/* loop index: the CPU path */
START_TEST(test_softmax_golden) {
    if (!kp_select(_i)) return;
    cJSON *root = tu_load_source_json(TU_KERNELS_GOLDEN);
    /* golden made on another CPU class: within OTHER_MACHINE_MAX_ULP instead of identical */
    const bool scalar = kp_scalar();
    bool exact = tu_golden_exact(root, TU_KERNELS_GOLDEN, scalar ? "the scalar bound" : "4 ULP");
    const uint32_t bound = scalar ? SCALAR_MAX_ULP : OTHER_MACHINE_MAX_ULP;
    uint32_t worst = 0;
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(root, "softmax"), *c;
    int count = 0;
    size_t total = 0, identical = 0, masked_identical = 0;
    cJSON_ArrayForEach(c, cases) {
        size_t n;
        float *x = tu_json_floats(c, "x", &n), *want = tu_json_floats(c, "y", NULL);
        int cols = (int)n + 5; /* the same row with 5 masked keys holding garbage */
        float *y = malloc(n * 4), *xw = malloc((size_t)cols * 2 * 4),
              *yw = malloc((size_t)cols * 2 * 4);
        ck_assert(y && xw && yw);
        attn_softmax_forward(y, x, 1, (int)n, (int)n);
        char what[64];
        snprintf(what, sizeof what, "softmax n=%zu", n);
        tu_assert_golden_ulp(what, y, want, n, exact, bound);
        /* two identical rows in a [2, n+5] layout; the 5 masked columns hold +1e30 */
        for (int r = 0; r < 2; r++) {
            memcpy(xw + (size_t)r * cols, x, n * 4);
            for (int j = (int)n; j < cols; j++) xw[(size_t)r * cols + j] = 1e30f;
        }
        attn_softmax_forward(yw, xw, 2, cols, (int)n);
        for (int r = 0; r < 2; r++) {
            snprintf(what, sizeof what, "softmax n_valid=%zu cols=%d row %d", n, cols, r);
            tu_assert_golden_ulp(what, yw + (size_t)r * cols, want, n, exact, bound);
            for (int j = (int)n; j < cols; j++) ck_assert(yw[(size_t)r * cols + j] == 0.0f);
        }
        tu_compare cmp = tu_compare_floats(y, want, n);
        worst = cmp.max_ulp > worst ? cmp.max_ulp : worst;
        total += n;
        identical += tu_compare_floats(y, want, n).n_equal;
        masked_identical += tu_compare_floats(yw, want, n).n_equal;
        free(x), free(want), free(y), free(xw), free(yw);
        count++;
    }
    printf("  softmax lengths 1..%d, %s path: identical %zu/%zu (masked layout %zu/%zu), max %u "
           "ULP\n",
           count, attn_cpu_path(), identical, total, masked_identical, total, worst);
    ck_assert_int_eq(count, 100);
    cJSON_Delete(root);
}
END_TEST

START_TEST(test_softmax_invariants) {
    if (!kp_select(_i)) return;
    attn_rng rng = attn_rng_seed(7);
    enum { ROWS = 5, COLS = 41 };
    float x[ROWS * COLS], p[ROWS * COLS];
    tu_fill_uniform(x, ROWS * COLS, -20, 20, &rng);
    for (int nv = 0; nv <= COLS; nv++) {
        for (int i = 0; i < ROWS * COLS; i++) p[i] = NAN;
        attn_softmax_forward(p, x, ROWS, COLS, nv);
        for (int r = 0; r < ROWS; r++) {
            double s = 0;
            for (int j = 0; j < COLS; j++) {
                float v = p[r * COLS + j];
                ck_assert_msg(j < nv ? (v >= 0 && v <= 1) : v == 0.0f, "p[%d,%d] = %g", r, j, v);
                s += v;
            }
            /* a fully masked row (nv == 0) is all zeros by definition; others sum to 1 */
            ck_assert_msg(fabs(s - (nv ? 1.0 : 0.0)) < 1e-5, "row %d sums to %.9g (nv %d)", r, s,
                          nv);
        }
    }
}
END_TEST

typedef struct sm_ctx {
    int rows, cols, n_valid;
    float *x, *p;
    const double *r;
} sm_ctx;

static double sm_loss(void *v) {
    sm_ctx *c = v;
    attn_softmax_forward(c->p, c->x, c->rows, c->cols, c->n_valid);
    double s = 0;
    for (int i = 0; i < c->rows * c->cols; i++) s += c->r[i] * c->p[i];
    return s;
}

/* rows, cols, n_valid */
static const int sm_shapes[][3] = {{1, 1, 1},   {2, 7, 7}, {3, 17, 9},
                                   {1, 33, 33}, {2, 9, 0}, {4, 8, 5}};

#define N_SM_SHAPES ((int)(sizeof sm_shapes / sizeof *sm_shapes))

/* loop index = path * N_SM_SHAPES + shape */
START_TEST(test_softmax_grad) {
    if (!kp_select(_i / N_SM_SHAPES)) return;
    const int t = _i % N_SM_SHAPES;
    const int rows = sm_shapes[t][0], cols = sm_shapes[t][1], nv = sm_shapes[t][2];
    const size_t n = (size_t)rows * cols;
    attn_rng rng = attn_rng_seed(900 + (uint64_t)t);
    float *x = malloc(n * 4), *p = malloc(n * 4), *dp = malloc(n * 4), *dx = malloc(n * 4);
    float *old = malloc(n * 4), *grad = malloc(n * 4);
    double *r = malloc(n * sizeof *r);
    ck_assert(x && p && dp && dx && old && grad && r);
    tu_fill_uniform(x, n, -2, 2, &rng);
    tu_fill_uniform(dp, n, -1, 1, &rng);
    tu_fill_uniform(dx, n, -1, 1, &rng);
    memcpy(old, dx, n * 4);
    for (size_t i = 0; i < n; i++) r[i] = dp[i];
    attn_softmax_forward(p, x, rows, cols, nv);
    attn_softmax_backward(dx, dp, p, rows, cols, nv);
    for (size_t i = 0; i < n; i++) grad[i] = dx[i] - old[i]; /* accumulated increment */
    sm_ctx c = {rows, cols, nv, x, p, r};
    char what[80];
    snprintf(what, sizeof what, "%s softmax d_x rows=%d cols=%d n_valid=%d", attn_cpu_path(), rows,
             cols, nv);
    tu_check_grad(what, sm_loss, &c, x, grad, n, FD_STEP, FD_ATOL, FD_RTOL);
    /* masked columns: pre-filled value untouched (old + 0) */
    for (int i = 0; i < rows; i++)
        for (int j = nv; j < cols; j++)
            ck_assert(dx[(size_t)i * cols + j] == old[(size_t)i * cols + j]);
    attn_softmax_backward(NULL, dp, p, rows, cols, nv);
    free(x), free(p), free(dp), free(dx), free(old), free(grad), free(r);
}
END_TEST

/* The two paths on the same rows (widths around the 8-lane blocks): forwards in place, the
 * scalar probs within PATHS_REL_TOL of the AVX2 ones; backwards from
 * the same probs, d_x within PATHS_D_REL_TOL (both sum in double; only the order differs). */
#define PATHS_REL_TOL   2e-6
#define PATHS_D_REL_TOL 1e-6
START_TEST(test_softmax_paths_agree) {
    if (!kp_wanted("avx2")) return; /* the avx2 run compares the two paths */
    if (!attn_cpu_path_supported("avx2")) {
        printf("  softmax paths: no AVX2 on this CPU or build, skipped\n");
        return;
    }
    enum { ROWS = 3, COLS = 70 };
    static const int widths[] = {1, 7, 8, 9, 16, 23, 64, 70};
    attn_rng rng = attn_rng_seed(31);
    float x[ROWS * COLS], dp[ROWS * COLS], p[KP_COUNT][ROWS * COLS], dx[KP_COUNT][ROWS * COLS];
    tu_fill_uniform(x, ROWS * COLS, -8, 8, &rng);
    tu_fill_uniform(dp, ROWS * COLS, -1, 1, &rng);
    for (size_t w = 0; w < sizeof widths / sizeof *widths; w++) {
        const int nv = widths[w];
        for (int k = 0; k < KP_COUNT; k++) {
            kp_force(k);
            memcpy(p[k], x, sizeof x);
            attn_softmax_forward(p[k], p[k], ROWS, COLS, nv);
        }
        for (int k = 0; k < KP_COUNT; k++) {
            kp_force(k);
            memset(dx[k], 0, sizeof dx[k]);
            attn_softmax_backward(dx[k], dp, p[1], ROWS, COLS, nv);
        }
        char what[64];
        snprintf(what, sizeof what, "softmax scalar vs avx2 n_valid=%d", nv);
        tu_assert_close(what, p[0], p[1], ROWS * COLS, PATHS_REL_TOL, 1e-6);
        snprintf(what, sizeof what, "softmax d_x scalar vs avx2 n_valid=%d", nv);
        tu_assert_close(what, dx[0], dx[1], ROWS * COLS, PATHS_D_REL_TOL, 1e-6);
    }
}
END_TEST

/* The scalar and avx512 paths against PyTorch under their capability (kp_goldens), rows of
 * 1..100, alone and as the valid part of a wider masked row: bit-identical where the golden
 * was made with this C library (glibc expf on the scalar path), else within
 * GOLDEN_OTHER_LIBC_MAX_ULP. loop index: kp_goldens */
#define GOLDEN_OTHER_LIBC_MAX_ULP 4u
START_TEST(test_softmax_golden_capability) {
    if (!kp_golden_select(_i)) return;
    const char *file = kp_goldens[_i].file, *cap = kp_goldens[_i].capability;
    cJSON *root = tu_load_source_json(file);
    const bool exact = kp_golden_libc_matches(root, file, "4 ULP");
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(root, "softmax"), *c;
    int count = 0;
    size_t total = 0, identical = 0;
    cJSON_ArrayForEach(c, cases) {
        size_t n;
        float *x = tu_json_floats(c, "x", &n), *want = tu_json_floats(c, "y", NULL);
        const int cols = (int)n + 3;
        float *y = malloc(n * 4), *xw = malloc((size_t)cols * 4), *yw = malloc((size_t)cols * 4);
        ck_assert(y && xw && yw);
        attn_softmax_forward(y, x, 1, (int)n, (int)n);
        memcpy(xw, x, n * 4);
        for (int j = (int)n; j < cols; j++) xw[j] = -7.0f;
        attn_softmax_forward(yw, xw, 1, cols, (int)n);
        char what[80];
        snprintf(what, sizeof what, "softmax (%s capability) n=%zu", cap, n);
        tu_assert_golden_ulp(what, y, want, n, exact, GOLDEN_OTHER_LIBC_MAX_ULP);
        snprintf(what, sizeof what, "softmax (%s capability) n_valid=%zu cols=%d", cap, n, cols);
        tu_assert_golden_ulp(what, yw, want, n, exact, GOLDEN_OTHER_LIBC_MAX_ULP);
        total += n;
        identical += tu_compare_floats(y, want, n).n_equal;
        free(x), free(want), free(y), free(xw), free(yw);
        count++;
    }
    printf("  softmax lengths 1..%d, %s path vs ATEN_CPU_CAPABILITY=%s: identical %zu/%zu\n", count,
           kp_goldens[_i].path, cap, identical, total);
    ck_assert_int_eq(count, 100);
    cJSON_Delete(root);
}
END_TEST

static Suite *softmax_suite(void) {
    Suite *s = suite_create("softmax");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_softmax_golden, 0, KP_COUNT);
    tcase_add_loop_test(tc, test_softmax_invariants, 0, KP_COUNT);
    tcase_add_loop_test(tc, test_softmax_grad, 0, KP_COUNT * N_SM_SHAPES);
    tcase_add_test(tc, test_softmax_paths_agree);
    tcase_add_loop_test(tc, test_softmax_golden_capability, 0, KP_GOLDEN_COUNT);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return tu_run_suite(softmax_suite());
}

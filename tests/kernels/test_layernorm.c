/* test_layernorm.c -- LayerNorm over the last dimension, on both CPU paths (kernel_paths.h).
 * Evidence: PyTorch goldens (AVX2 path: bit-identical F.layer_norm for D = 5, 16, 32, 100, 200,
 * 768; scalar path: bit-identical to PyTorch under ATEN_CPU_CAPABILITY=default for D = 5 ..
 * 2056, within SCALAR_REL of the AVX2 goldens), the two paths against each other (mean and
 * rstd bit-identical), the saved mean/rstd against an independent double computation, finite
 * differences for d_x, d_gamma and d_beta, and the accumulate contract. */
#include "kernel_paths.h"
#include "test_util.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FD_STEP 1e-3f
#define FD_ATOL 2e-3
#define FD_RTOL 1e-2

/* The scalar path (ATen's Welford as on AVX2, but the output's two multiply-adds rounded
 * separately, as in PyTorch's default-capability build) against the AVX2 goldens (fused there):
 * within SCALAR_REL (absolute below |y| = 1; measured up to 1494 ULP where y is near 0, from
 * the cancellation in x * rstd - rstd * mean). Its own golden is in kp_goldens. */
#define SCALAR_REL 1e-6

/* loop index: the CPU path */
START_TEST(test_layernorm_golden) {
    if (!kp_select(_i)) return;
    cJSON *root = tu_load_source_json(TU_KERNELS_GOLDEN);
    /* golden made on another CPU class: 1e-5 relative (absolute below |y| = 1) instead */
    const bool scalar = kp_scalar();
    bool exact = tu_golden_exact(root, TU_KERNELS_GOLDEN,
                                 scalar ? "the scalar bound" : "1e-5 relative (absolute below 1)");
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(root, "layernorm"), *c;
    int count = 0;
    cJSON_ArrayForEach(c, cases) {
        int n = tu_json_int(c, "n"), D = tu_json_int(c, "D");
        float *x = tu_json_floats(c, "x", NULL), *g = tu_json_floats(c, "gamma", NULL);
        float *b = tu_json_floats(c, "beta", NULL), *want = tu_json_floats(c, "y", NULL);
        float *y = malloc((size_t)n * D * 4), *mean = malloc((size_t)n * 4),
              *rstd = malloc((size_t)n * 4);
        ck_assert(y && mean && rstd);
        attn_layernorm_forward(y, mean, rstd, x, g, b, n, D);
        char what[64];
        snprintf(what, sizeof what, "layernorm n=%d D=%d", n, D);
        tu_assert_golden(what, y, want, (size_t)n * D, exact, scalar ? SCALAR_REL : 1e-5, 1.0);
        /* saved statistics against a two-pass double computation */
        for (int i = 0; i < n; i++) {
            double mu = 0, var = 0;
            for (int j = 0; j < D; j++) mu += x[(size_t)i * D + j];
            mu /= D;
            for (int j = 0; j < D; j++) var += pow(x[(size_t)i * D + j] - mu, 2);
            var /= D;
            ck_assert_msg(fabs(mean[i] - mu) <= 1e-5 * (1 + fabs(mu)), "mean[%d] %g vs %g", i,
                          mean[i], mu);
            double rs = 1 / sqrt(var + 1e-5);
            ck_assert_msg(fabs(rstd[i] - rs) <= 1e-5 * rs, "rstd[%d] %g vs %g", i, rstd[i], rs);
        }
        free(x), free(g), free(b), free(want), free(y), free(mean), free(rstd);
        count++;
    }
    ck_assert_int_ge(count, 6);
    cJSON_Delete(root);
}
END_TEST

typedef struct ln_ctx {
    int n, D;
    float *x, *g, *b, *y, *mean, *rstd;
    const double *r;
} ln_ctx;

static double ln_loss(void *v) {
    ln_ctx *c = v;
    attn_layernorm_forward(c->y, c->mean, c->rstd, c->x, c->g, c->b, c->n, c->D);
    double s = 0;
    for (int i = 0; i < c->n * c->D; i++) s += c->r[i] * c->y[i];
    return s;
}

static const int ln_shapes[][2] = {{1, 2}, {3, 5}, {2, 8}, {2, 17}, {1, 33}};

#define N_LN_SHAPES ((int)(sizeof ln_shapes / sizeof *ln_shapes))

/* loop index = path * N_LN_SHAPES + shape */
START_TEST(test_layernorm_grad) {
    if (!kp_select(_i / N_LN_SHAPES)) return;
    const int t = _i % N_LN_SHAPES;
    const int n = ln_shapes[t][0], D = ln_shapes[t][1];
    const size_t nx = (size_t)n * D;
    attn_rng rng = attn_rng_seed(300 + (uint64_t)t);
    float *x = malloc(nx * 4), *y = malloc(nx * 4), *dy = malloc(nx * 4), *dx = malloc(nx * 4);
    float *g = malloc((size_t)D * 4), *b = malloc((size_t)D * 4), *dg = malloc((size_t)D * 4);
    float *db = malloc((size_t)D * 4), *mean = malloc((size_t)n * 4), *rstd = malloc((size_t)n * 4);
    float *ox = malloc(nx * 4), *og = malloc((size_t)D * 4), *ob = malloc((size_t)D * 4);
    float *gx = malloc(nx * 4), *gg = malloc((size_t)D * 4), *gb = malloc((size_t)D * 4);
    double *r = malloc(nx * sizeof *r);
    ck_assert(x && y && dy && dx && g && b && dg && db && mean && rstd && ox && og && ob && gx &&
              gg && gb && r);
    tu_fill_uniform(x, nx, -2, 2, &rng);
    tu_fill_uniform(g, (size_t)D, 0.5f, 1.5f, &rng);
    tu_fill_uniform(b, (size_t)D, -0.5f, 0.5f, &rng);
    tu_fill_uniform(dy, nx, -1, 1, &rng);
    for (size_t i = 0; i < nx; i++) r[i] = dy[i];
    /* pre-filled gradients: the kernel must add to them */
    tu_fill_uniform(dx, nx, -1, 1, &rng);
    tu_fill_uniform(dg, (size_t)D, -1, 1, &rng);
    tu_fill_uniform(db, (size_t)D, -1, 1, &rng);
    memcpy(ox, dx, nx * 4), memcpy(og, dg, (size_t)D * 4), memcpy(ob, db, (size_t)D * 4);
    attn_layernorm_forward(y, mean, rstd, x, g, b, n, D);
    attn_layernorm_backward(dx, dg, db, dy, x, mean, rstd, g, n, D);
    for (size_t i = 0; i < nx; i++) gx[i] = dx[i] - ox[i];
    for (int j = 0; j < D; j++) gg[j] = dg[j] - og[j], gb[j] = db[j] - ob[j];
    ln_ctx c = {n, D, x, g, b, y, mean, rstd, r};
    char what[64];
    snprintf(what, sizeof what, "%s layernorm d_x n=%d D=%d", attn_cpu_path(), n, D);
    tu_check_grad(what, ln_loss, &c, x, gx, nx, FD_STEP, FD_ATOL, FD_RTOL);
    snprintf(what, sizeof what, "layernorm d_gamma n=%d D=%d", n, D);
    tu_check_grad(what, ln_loss, &c, g, gg, (size_t)D, FD_STEP, FD_ATOL, FD_RTOL);
    snprintf(what, sizeof what, "layernorm d_beta n=%d D=%d", n, D);
    tu_check_grad(what, ln_loss, &c, b, gb, (size_t)D, FD_STEP, FD_ATOL, FD_RTOL);
    /* NULL gradients are skipped; only d_x requested leaves dg/db alone */
    memcpy(og, dg, (size_t)D * 4);
    attn_layernorm_backward(dx, NULL, NULL, dy, x, mean, rstd, g, n, D);
    for (int j = 0; j < D; j++) ck_assert(dg[j] == og[j]);
    free(x), free(y), free(dy), free(dx), free(g), free(b), free(dg), free(db), free(mean);
    free(rstd), free(ox), free(og), free(ob), free(gx), free(gg), free(gb), free(r);
}
END_TEST

/* The two paths on the same rows (D around the 8-lane blocks and 16-vector chunks): mean and
 * rstd bit-identical (the same float Welford), y within PATHS_REL of each other (absolute
 * below |y| = 1; only the two fused multiply-adds differ); the backwards from the same saved
 * statistics within PATHS_D_REL (both sum in double). */
#define PATHS_REL   1e-5
#define PATHS_D_REL 1e-6
START_TEST(test_layernorm_paths_agree) {
    if (!kp_wanted("avx2")) return; /* the avx2 run compares the two paths */
    if (!attn_cpu_path_supported("avx2")) {
        printf("  layernorm paths: no AVX2 on this CPU or build, skipped\n");
        return;
    }
    enum { N = 3, DMAX = 300 };
    static const int dims[] = {1, 7, 8, 9, 64, 129, 300};
    attn_rng rng = attn_rng_seed(77);
    static float x[N * DMAX], dy[N * DMAX], g[DMAX], b[DMAX];
    static float y[KP_COUNT][N * DMAX], dx[KP_COUNT][N * DMAX], dg[KP_COUNT][DMAX],
        db[KP_COUNT][DMAX];
    float mean[KP_COUNT][N], rstd[KP_COUNT][N];
    tu_fill_uniform(x, N * DMAX, -3, 5, &rng);
    tu_fill_uniform(dy, N * DMAX, -1, 1, &rng);
    tu_fill_uniform(g, DMAX, 0.5f, 1.5f, &rng);
    tu_fill_uniform(b, DMAX, -0.5f, 0.5f, &rng);
    for (size_t k = 0; k < sizeof dims / sizeof *dims; k++) {
        const int D = dims[k];
        const size_t nx = (size_t)N * D;
        for (int p = 0; p < KP_COUNT; p++) {
            kp_force(p);
            attn_layernorm_forward(y[p], mean[p], rstd[p], x, g, b, N, D);
        }
        for (int p = 0; p < KP_COUNT; p++) {
            kp_force(p);
            memset(dx[p], 0, sizeof dx[p]), memset(dg[p], 0, sizeof dg[p]);
            memset(db[p], 0, sizeof db[p]);
            attn_layernorm_backward(dx[p], dg[p], db[p], dy, x, mean[1], rstd[1], g, N, D);
        }
        char what[64];
        snprintf(what, sizeof what, "layernorm scalar vs avx2 D=%d", D);
        tu_assert_close(what, y[0], y[1], nx, PATHS_REL, 1.0);
        /* the same Welford in float on both paths (ATen fuses nothing there) */
        snprintf(what, sizeof what, "layernorm mean scalar vs avx2 D=%d", D);
        tu_assert_identical(what, mean[0], mean[1], N);
        snprintf(what, sizeof what, "layernorm rstd scalar vs avx2 D=%d", D);
        tu_assert_identical(what, rstd[0], rstd[1], N);
        snprintf(what, sizeof what, "layernorm d_x scalar vs avx2 D=%d", D);
        tu_assert_close(what, dx[0], dx[1], nx, PATHS_D_REL, 1e-3);
        snprintf(what, sizeof what, "layernorm d_gamma scalar vs avx2 D=%d", D);
        tu_assert_close(what, dg[0], dg[1], (size_t)D, PATHS_D_REL, 1e-3);
        snprintf(what, sizeof what, "layernorm d_beta scalar vs avx2 D=%d", D);
        tu_assert_identical(what, db[0], db[1], (size_t)D);
    }
}
END_TEST

/* The scalar and avx512 paths against PyTorch under their capability (kp_goldens): bit-identical
 * y for D = 5 .. 2056 (tails of D mod 8, Welford cascades of depth 1 to 5), on every machine:
 * the op calls no libm function but sqrtf, which IEEE rounds exactly. (ATen's avx512
 * LayerNorm gives the AVX2 kernel's bits: the avx512 path runs that kernel.)
 * loop index: kp_goldens */
START_TEST(test_layernorm_golden_capability) {
    if (!kp_golden_select(_i)) return;
    cJSON *root = tu_load_source_json(kp_goldens[_i].file);
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(root, "layernorm"), *c;
    int count = 0;
    size_t total = 0;
    cJSON_ArrayForEach(c, cases) {
        int n = tu_json_int(c, "n"), D = tu_json_int(c, "D");
        float *x = tu_json_floats(c, "x", NULL), *g = tu_json_floats(c, "gamma", NULL);
        float *b = tu_json_floats(c, "beta", NULL), *want = tu_json_floats(c, "y", NULL);
        float *y = malloc((size_t)n * D * 4), *mean = malloc((size_t)n * 4),
              *rstd = malloc((size_t)n * 4);
        ck_assert(y && mean && rstd);
        attn_layernorm_forward(y, mean, rstd, x, g, b, n, D);
        char what[80];
        snprintf(what, sizeof what, "layernorm (%s capability) n=%d D=%d",
                 kp_goldens[_i].capability, n, D);
        tu_assert_identical(what, y, want, (size_t)n * D);
        total += (size_t)n * D;
        free(x), free(g), free(b), free(want), free(y), free(mean), free(rstd);
        count++;
    }
    printf("  layernorm, %s path vs ATEN_CPU_CAPABILITY=%s: identical %zu/%zu over %d shapes\n",
           kp_goldens[_i].path, kp_goldens[_i].capability, total, total, count);
    ck_assert_int_ge(count, 11);
    cJSON_Delete(root);
}
END_TEST

/* loop index: the CPU path. Many rows at once (the AVX2 path merges the lanes of 8 rows in one
 * vector) against each row alone: y, mean and rstd bit-identical, for D around the 8-lane blocks
 * and chunks and row counts around multiples of 8. */
START_TEST(test_layernorm_rows_alone) {
    if (!kp_select(_i)) return;
    enum { NMAX = 19, DMAX = 300 };
    static const int dims[] = {1, 7, 8, 9, 32, 129, 300};
    static const int rows[] = {8, 9, 16, 19};
    static float x[NMAX * DMAX], g[DMAX], b[DMAX], y[NMAX * DMAX], y1[DMAX];
    float mean[NMAX], rstd[NMAX], m1, r1;
    attn_rng rng = attn_rng_seed(78);
    tu_fill_uniform(x, NMAX * DMAX, -3, 5, &rng);
    tu_fill_uniform(g, DMAX, 0.5f, 1.5f, &rng);
    tu_fill_uniform(b, DMAX, -0.5f, 0.5f, &rng);
    int checked = 0;
    for (size_t k = 0; k < sizeof dims / sizeof dims[0]; k++)
        for (size_t q = 0; q < sizeof rows / sizeof rows[0]; q++) {
            const int D = dims[k], n = rows[q];
            attn_layernorm_forward(y, mean, rstd, x, g, b, n, D);
            for (int i = 0; i < n; i++) {
                attn_layernorm_forward(y1, &m1, &r1, x + (size_t)i * D, g, b, 1, D);
                char what[64];
                snprintf(what, sizeof what, "layernorm n=%d D=%d row %d", n, D, i);
                tu_assert_identical(what, y + (size_t)i * D, y1, (size_t)D);
                ck_assert_msg(memcmp(&mean[i], &m1, 4) == 0 && memcmp(&rstd[i], &r1, 4) == 0,
                              "%s: mean/rstd %a/%a vs %a/%a alone", what, mean[i], rstd[i], m1, r1);
                checked++;
            }
        }
    ck_assert_int_eq(checked, 7 * (8 + 9 + 16 + 19));
}
END_TEST

static Suite *layernorm_suite(void) {
    Suite *s = suite_create("layernorm");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_layernorm_golden, 0, KP_COUNT);
    tcase_add_loop_test(tc, test_layernorm_grad, 0, KP_COUNT * N_LN_SHAPES);
    tcase_add_test(tc, test_layernorm_paths_agree);
    tcase_add_loop_test(tc, test_layernorm_rows_alone, 0, KP_COUNT);
    tcase_add_loop_test(tc, test_layernorm_golden_capability, 0, KP_GOLDEN_COUNT);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return tu_run_suite(layernorm_suite());
}

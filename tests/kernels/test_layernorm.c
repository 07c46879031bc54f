/* test_layernorm.c -- LayerNorm over the last dimension.
 * Evidence: PyTorch goldens (bit-identical F.layer_norm for D = 5, 16, 32, 100, 200, 768),
 * the saved mean/rstd against an independent double computation, finite differences for
 * d_x, d_gamma and d_beta, and the accumulate contract. */
#include "test_util.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FD_STEP 1e-3f
#define FD_ATOL 2e-3
#define FD_RTOL 1e-2

START_TEST(test_layernorm_golden) {
    cJSON *root = tu_load_source_json(TU_KERNELS_GOLDEN);
    /* golden made on another CPU class: 1e-5 relative (absolute below |y| = 1) instead */
    bool exact = tu_golden_exact(root, TU_KERNELS_GOLDEN, "1e-5 relative (absolute below 1)");
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
        tu_assert_golden(what, y, want, (size_t)n * D, exact, 1e-5, 1.0);
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

START_TEST(test_layernorm_grad) {
    const int n = ln_shapes[_i][0], D = ln_shapes[_i][1];
    const size_t nx = (size_t)n * D;
    attn_rng rng = attn_rng_seed(300 + (uint64_t)_i);
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
    snprintf(what, sizeof what, "layernorm d_x n=%d D=%d", n, D);
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

static Suite *layernorm_suite(void) {
    Suite *s = suite_create("layernorm");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_layernorm_golden);
    tcase_add_loop_test(tc, test_layernorm_grad, 0, (int)(sizeof ln_shapes / sizeof *ln_shapes));
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return tu_run_suite(layernorm_suite());
}

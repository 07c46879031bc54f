/* test_adam_update.c -- Adam's elementwise update (attn_adam_update) on both CPU paths: the AVX2
 * path (8 lanes, then the plain tail) gives the same bits as the plain loop for parameters and
 * both moments, over 10 steps, n around the 8-lane blocks, with and without weight decay; and
 * one step against the update written out in double (the float roundings are the only gap);
 * attn_adam_update_zero_grads gives the same bits on each path and leaves every gradient +0.
 * PyTorch exactness of the whole step: tests/train/test_adam.c (weights/golden/adam.json). */
#include "kernel_paths.h"
#include "test_util.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const size_t SIZES[] = {1, 7, 8, 9, 31, 1003};
#define N_SIZES (sizeof SIZES / sizeof SIZES[0])

/* The scalars of step t of torch.optim.Adam(lr 1e-3, betas (0.9, 0.999), eps 1e-8, wd). */
static attn_adam_scalars scalars(int t, float wd) {
    const double bc1 = 1.0 - pow(0.9, t), bc2 = 1.0 - pow(0.999, t);
    return (attn_adam_scalars){0.9f,
                               (float)(1.0 - 0.9),
                               0.999f,
                               (float)(1.0 - 0.999),
                               (float)sqrt(bc2),
                               (float)(-(1e-3 / bc1)),
                               1e-8f,
                               wd};
}

/* loop index: size x (no weight decay, weight decay) */
START_TEST(test_adam_update_paths_agree) {
    if (!kp_wanted("avx2")) return; /* the avx2 run compares the two paths */
    if (!attn_cpu_path_supported("avx2")) {
        printf("  adam paths: no AVX2 on this CPU or build, skipped\n");
        return;
    }
    const size_t n = SIZES[_i / 2];
    const float wd = _i % 2 ? 0.01f : 0.0f;
    float *p[2], *m[2], *v[2], *g = malloc(n * sizeof(float));
    ck_assert(g != NULL);
    attn_rng rng = attn_rng_seed(7 + (uint64_t)_i);
    for (int k = 0; k < 2; k++) {
        p[k] = malloc(n * sizeof(float)), m[k] = calloc(n, sizeof(float));
        v[k] = calloc(n, sizeof(float));
        ck_assert(p[k] && m[k] && v[k]);
    }
    tu_fill_uniform(p[0], n, -1, 1, &rng);
    memcpy(p[1], p[0], n * sizeof(float));
    for (int t = 1; t <= 10; t++) {
        tu_fill_uniform(g, n, -2, 2, &rng);
        const attn_adam_scalars s = scalars(t, wd);
        for (int k = 0; k < 2; k++) {
            kp_force(k);
            attn_adam_update(p[k], m[k], v[k], g, n, &s);
        }
    }
    kp_force(1);
    char what[64];
    snprintf(what, sizeof what, "adam n=%zu wd=%g params", n, wd);
    tu_assert_identical(what, p[1], p[0], n);
    snprintf(what, sizeof what, "adam n=%zu wd=%g m", n, wd);
    tu_assert_identical(what, m[1], m[0], n);
    snprintf(what, sizeof what, "adam n=%zu wd=%g v", n, wd);
    tu_assert_identical(what, v[1], v[0], n);
    for (int k = 0; k < 2; k++) free(p[k]), free(m[k]), free(v[k]);
    free(g);
}
END_TEST

/* loop index: the CPU path. One step from zero moments against double arithmetic. */
START_TEST(test_adam_update_formula) {
    if (!kp_select(_i)) return;
    enum { N = 37 };
    float p[N], p0[N], m[N] = {0}, v[N] = {0}, g[N];
    attn_rng rng = attn_rng_seed(3);
    tu_fill_uniform(p, N, -1, 1, &rng);
    tu_fill_uniform(g, N, -1, 1, &rng);
    memcpy(p0, p, sizeof p);
    const attn_adam_scalars s = scalars(1, 0.1f);
    attn_adam_update(p, m, v, g, N, &s);
    for (int i = 0; i < N; i++) {
        const double gi = (double)g[i] + 0.1 * p0[i];
        const double mi = 0.1 * gi, vi = 0.001 * gi * gi;
        const double want = p0[i] - 1e-3 / 0.1 * mi / (sqrt(vi) / sqrt(0.001) + 1e-8);
        ck_assert_msg(fabs(m[i] - mi) <= 1e-6 * fabs(mi) + 1e-12, "m[%d] %g vs %g", i, m[i], mi);
        ck_assert_msg(fabs(v[i] - vi) <= 1e-6 * vi + 1e-12, "v[%d] %g vs %g", i, v[i], vi);
        ck_assert_msg(fabs(p[i] - want) <= 1e-6, "p[%d] %.9g vs %.9g", i, p[i], want);
    }
}
END_TEST

/* loop index: path x size. The zeroing update: the plain update's bits, then grads all +0. */
START_TEST(test_adam_update_zero_grads) {
    const int path = _i / (int)N_SIZES;
    if (!kp_select(path)) return;
    const size_t n = SIZES[_i % N_SIZES];
    float *p[2], *m[2], *v[2], *g[2];
    attn_rng rng = attn_rng_seed(11 + (uint64_t)_i);
    for (int k = 0; k < 2; k++) {
        p[k] = malloc(n * sizeof(float)), m[k] = calloc(n, sizeof(float));
        v[k] = calloc(n, sizeof(float)), g[k] = malloc(n * sizeof(float));
        ck_assert(p[k] && m[k] && v[k] && g[k]);
    }
    tu_fill_uniform(p[0], n, -1, 1, &rng);
    memcpy(p[1], p[0], n * sizeof(float));
    for (int t = 1; t <= 3; t++) {
        tu_fill_uniform(g[0], n, -2, 2, &rng);
        memcpy(g[1], g[0], n * sizeof(float));
        const attn_adam_scalars s = scalars(t, t == 2 ? 0.01f : 0.0f);
        attn_adam_update(p[0], m[0], v[0], g[0], n, &s);
        attn_adam_update_zero_grads(p[1], m[1], v[1], g[1], n, &s);
        for (size_t i = 0; i < n; i++) {
            uint32_t bits;
            memcpy(&bits, &g[1][i], sizeof bits);
            ck_assert_msg(bits == 0, "path %d n=%zu step %d: grads[%zu] = %g, not +0", path, n, t,
                          i, g[1][i]);
        }
    }
    char what[64];
    snprintf(what, sizeof what, "adam zero-grads path %d n=%zu params", path, n);
    tu_assert_identical(what, p[1], p[0], n);
    snprintf(what, sizeof what, "adam zero-grads path %d n=%zu m", path, n);
    tu_assert_identical(what, m[1], m[0], n);
    snprintf(what, sizeof what, "adam zero-grads path %d n=%zu v", path, n);
    tu_assert_identical(what, v[1], v[0], n);
    for (int k = 0; k < 2; k++) free(p[k]), free(m[k]), free(v[k]), free(g[k]);
}
END_TEST

static Suite *adam_update_suite(void) {
    Suite *s = suite_create("adam_update");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, test_adam_update_paths_agree, 0, 2 * (int)N_SIZES);
    tcase_add_loop_test(tc, test_adam_update_formula, 0, KP_COUNT);
    tcase_add_loop_test(tc, test_adam_update_zero_grads, 0, KP_COUNT * (int)N_SIZES);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return tu_run_suite(adam_update_suite());
}

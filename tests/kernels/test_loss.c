/* test_loss.c -- mean BCE-with-logits, on both CPU paths (kernel_paths.h; plain C on both).
 * Evidence: PyTorch goldens (F.binary_cross_entropy_with_logits, compared in double against
 * torch's float result), the stable form on extreme logits, finite differences for the
 * backward, and the accumulate contract. */
#include "kernel_paths.h"
#include "test_util.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FD_STEP 1e-2f
#define FD_ATOL 1e-5
#define FD_RTOL 1e-3

/* loop index: the CPU path */
START_TEST(test_bce_golden) {
    if (!kp_select(_i)) return;
    cJSON *root = tu_load_source_json(TU_KERNELS_GOLDEN);
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(root, "bce"), *c;
    int count = 0;
    cJSON_ArrayForEach(c, cases) {
        int B = tu_json_int(c, "B");
        float *z = tu_json_floats(c, "logits", NULL), *y = tu_json_floats(c, "labels", NULL);
        double want = tu_json_double(c, "loss");
        double got = attn_bce_forward(z, y, B);
        /* torch evaluates a less stable formula in float; agree to 1e-6 (abs below 1) */
        printf("  bce B=%d: got %.9g want %.9g\n", B, got, want);
        ck_assert_msg(fabs(got - want) <= 1e-6 * fmax(1.0, fabs(want)), "bce B=%d: %.9g vs %.9g", B,
                      got, want);
        free(z), free(y);
        count++;
    }
    ck_assert_int_ge(count, 4);
    cJSON_Delete(root);
}
END_TEST

START_TEST(test_bce_extremes) {
    if (!kp_select(_i)) return;
    /* stable form: no overflow at |z| = 100; loss(z, y) = softplus(z) - z y */
    float z[4] = {100.0f, -100.0f, 100.0f, -100.0f}, y[4] = {1, 0, 0, 1};
    double l = attn_bce_forward(z, y, 4);
    ck_assert(isfinite(l));
    ck_assert_msg(fabs(l - 50.0) < 1e-9, "loss %.17g", l); /* (0 + 0 + 100 + 100) / 4 */
    float d[4] = {0};
    attn_bce_backward(d, 1.0f, z, y, 4);
    ck_assert(fabs(d[0]) < 1e-30 && fabs(d[2] - 0.25) < 1e-7 && fabs(d[3] + 0.25) < 1e-7);
}
END_TEST

typedef struct bce_ctx {
    int B;
    float *z, *y;
    float d_loss;
} bce_ctx;

static double bce_loss(void *v) {
    bce_ctx *c = v;
    return c->d_loss * attn_bce_forward(c->z, c->y, c->B);
}

static const int bce_sizes[] = {1, 2, 7, 17, 33};

#define N_BCE_SIZES ((int)(sizeof bce_sizes / sizeof *bce_sizes))

/* loop index = path * N_BCE_SIZES + size */
START_TEST(test_bce_grad) {
    if (!kp_select(_i / N_BCE_SIZES)) return;
    const int t = _i % N_BCE_SIZES;
    const int B = bce_sizes[t];
    attn_rng rng = attn_rng_seed(70 + (uint64_t)t);
    float *z = malloc((size_t)B * 4), *y = malloc((size_t)B * 4), *d = malloc((size_t)B * 4);
    float *old = malloc((size_t)B * 4), *grad = malloc((size_t)B * 4);
    ck_assert(z && y && d && old && grad);
    tu_fill_uniform(z, (size_t)B, -6, 6, &rng);
    for (int b = 0; b < B; b++) y[b] = (float)attn_rng_below(&rng, 2);
    tu_fill_uniform(d, (size_t)B, -1, 1, &rng);
    memcpy(old, d, (size_t)B * 4);
    const float d_loss = 0.7f;
    attn_bce_backward(d, d_loss, z, y, B);
    for (int b = 0; b < B; b++) grad[b] = d[b] - old[b];
    bce_ctx c = {B, z, y, d_loss};
    char what[48];
    snprintf(what, sizeof what, "bce d_logits B=%d", B);
    tu_check_grad(what, bce_loss, &c, z, grad, (size_t)B, FD_STEP, FD_ATOL, FD_RTOL);
    attn_bce_backward(NULL, d_loss, z, y, B);
    free(z), free(y), free(d), free(old), free(grad);
}
END_TEST

static Suite *loss_suite(void) {
    Suite *s = suite_create("loss");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_bce_golden, 0, KP_COUNT);
    tcase_add_loop_test(tc, test_bce_extremes, 0, KP_COUNT);
    tcase_add_loop_test(tc, test_bce_grad, 0, KP_COUNT * N_BCE_SIZES);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return tu_run_suite(loss_suite());
}

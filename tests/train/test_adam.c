/* test_adam.c -- attn_adam_step against torch.optim.Adam (weights/golden/adam.json, written by
 * tools/golden_adam.py): parameters and both moments bit-identical after 1 and 10 steps. */
#include "test_util.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends the floats of JSON array `a` to out[*n ...]. */
static void append_floats(const cJSON *a, float *out, size_t *n) {
    ck_assert(cJSON_IsArray(a));
    const cJSON *x;
    cJSON_ArrayForEach(x, a) out[(*n)++] = (float)x->valuedouble;
}

#define MAX_N 512

/* Concatenates tensor `field` (or the plain array) of every name, in "names" order. */
static size_t gather(const cJSON *root, const cJSON *obj, const char *field, float *out) {
    size_t n = 0;
    const cJSON *name;
    cJSON_ArrayForEach(name, cJSON_GetObjectItem(root, "names")) {
        const cJSON *t = cJSON_GetObjectItem(obj, name->valuestring);
        ck_assert(t != NULL);
        append_floats(field ? cJSON_GetObjectItem(t, field) : t, out, &n);
    }
    return n;
}

static void run_golden(int check_step) {
    cJSON *root = tu_load_source_json("weights/golden/adam.json");
    static float params[MAX_N], grads[MAX_N], want[MAX_N];
    size_t n = gather(root, cJSON_GetObjectItem(root, "initial"), NULL, params);
    ck_assert(n > 0 && n <= MAX_N);

    attn_adam *opt = NULL;
    attn_adam_config cfg = attn_adam_config_default();
    ck_assert(attn_adam_create(n, &cfg, &opt, NULL) == ATTN_OK);
    const cJSON *steps = cJSON_GetObjectItem(root, "grads");
    for (int s = 1; s <= check_step; s++) {
        size_t ng = gather(root, cJSON_GetArrayItem(steps, s - 1), NULL, grads);
        ck_assert(ng == n);
        attn_adam_step(opt, params, grads);
    }
    ck_assert_int_eq(opt->step, check_step);
    char key[16], what[64];
    snprintf(key, sizeof key, "%d", check_step);
    const cJSON *after = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "after"), key);
    ck_assert(after != NULL);
    gather(root, after, "m", want);
    snprintf(what, sizeof what, "adam m after %d steps", check_step);
    tu_assert_identical(what, opt->m, want, n);
    gather(root, after, "v", want);
    snprintf(what, sizeof what, "adam v after %d steps", check_step);
    tu_assert_identical(what, opt->v, want, n);
    gather(root, after, "param", want);
    snprintf(what, sizeof what, "adam params after %d steps", check_step);
    tu_assert_identical(what, params, want, n);
    attn_adam_free(opt);
    cJSON_Delete(root);
}

START_TEST(test_golden_1_step) {
    run_golden(1);
}
END_TEST

START_TEST(test_golden_10_steps) {
    run_golden(10);
}
END_TEST

/* The first step of Adam moves every parameter with a non-zero gradient by about lr against
 * the gradient's sign (m/sqrt(v) = g/|g| after bias correction), independent of scale. */
START_TEST(test_first_step_is_lr_sized) {
    float p[4] = {1.0f, -2.0f, 0.5f, 3.0f};
    const float g[4] = {1e-4f, -7.0f, 300.0f, 0.0f};
    attn_adam *opt = NULL;
    ck_assert(attn_adam_create(4, NULL, &opt, NULL) == ATTN_OK);
    attn_adam_step(opt, p, g);
    ck_assert(fabsf(p[0] - (1.0f - 1e-3f)) < 1e-6f);
    ck_assert(fabsf(p[1] - (-2.0f + 1e-3f)) < 1e-6f);
    ck_assert(fabsf(p[2] - (0.5f - 1e-3f)) < 1e-6f);
    ck_assert(p[3] == 3.0f);
    attn_adam_free(opt);
}
END_TEST

START_TEST(test_bad_config) {
    attn_adam_config cfg = attn_adam_config_default();
    cfg.beta1 = 1.0;
    attn_adam *opt = NULL;
    attn_error err;
    ck_assert(attn_adam_create(3, &cfg, &opt, &err) == ATTN_ERR_VALUE);
    ck_assert(opt == NULL);
    ck_assert(strstr(err.msg, "betas") != NULL);
    attn_adam_free(NULL);
}
END_TEST

int main(void) {
    Suite *s = suite_create("adam");
    TCase *tc = tcase_create("adam");
    tcase_add_test(tc, test_golden_1_step);
    tcase_add_test(tc, test_golden_10_steps);
    tcase_add_test(tc, test_first_step_is_lr_sized);
    tcase_add_test(tc, test_bad_config);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}

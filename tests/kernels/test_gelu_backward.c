/* test_gelu_backward.c -- the GELU backward (erf form) on both CPU paths against PyTorch's
 * autograd of F.gelu (weights/golden/gelu_grad.json, tools/golden_gelu_grad.py): bit for bit,
 * since PyTorch runs oneDNN's eltwise_gelu_erf backward and both paths follow its float
 * arithmetic; and the accumulate contract. */
#include "kernel_paths.h"
#include "test_util.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#define GOLDEN "weights/golden/gelu_grad.json"

static float *floats_of(const cJSON *root, const char *key, size_t *n) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, key), *v;
    ck_assert_msg(cJSON_IsArray(a), "%s: no array \"%s\"", GOLDEN, key);
    *n = (size_t)cJSON_GetArraySize(a);
    float *out = malloc(*n * sizeof *out);
    ck_assert_ptr_nonnull(out);
    size_t i = 0;
    cJSON_ArrayForEach(v, a) out[i++] = (float)v->valuedouble;
    return out;
}

START_TEST(test_gelu_backward_golden) {
    if (!kp_select(_i)) return;
    cJSON *root = tu_load_source_json(GOLDEN);
    size_t n, n_dy, n_dx;
    float *x = floats_of(root, "x", &n), *dy = floats_of(root, "dy", &n_dy);
    float *want = floats_of(root, "dx", &n_dx);
    ck_assert(n == n_dy && n == n_dx && n > 3000 && n % 8 != 0);
    float *got = malloc(n * sizeof *got);
    ck_assert_ptr_nonnull(got);
    memset(got, 0, n * sizeof *got);
    attn_gelu_backward(got, dy, x, n);
    tu_compare c = tu_compare_floats(got, want, n);
    printf("  %s: gelu backward vs autograd: identical %zu/%zu, max ULP %u\n", kp_names[_i],
           c.n_equal, n, c.max_ulp);
    tu_assert_identical("gelu backward vs PyTorch autograd", got, want, n);
    /* accumulates: a second call adds the same values again (x + x = 2x exactly) */
    attn_gelu_backward(got, dy, x, n);
    for (size_t i = 0; i < n; i++) ck_assert(got[i] == 2.0f * want[i]);
    /* every tail length of the 8-lane path gives the same values as the whole array */
    for (size_t len = 1; len <= 17; len++) {
        float part[17] = {0};
        attn_gelu_backward(part, dy + 100, x + 100, len);
        for (size_t i = 0; i < len; i++) ck_assert(part[i] == want[100 + i]);
    }
    free(x);
    free(dy);
    free(want);
    free(got);
    cJSON_Delete(root);
}
END_TEST

int main(void) {
    Suite *s = suite_create("kernels/gelu_backward");
    TCase *tc = tcase_create("gelu_backward");
    tcase_add_loop_test(tc, test_gelu_backward_golden, 0, KP_COUNT);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}

/* test_backward_set.c -- the backward kernels that write instead of add, for a first writer,
 * against zeroing and adding, bit for bit: attn_softmax_backward_set (src/kernels/softmax.c, the
 * attention backward's d_scores) on the scalar and the AVX2 paths -- row lengths around the
 * 4-lane blocks, masked columns, rows whose gradient is -0 (a probability of exactly 0 times a
 * negative difference: the zeroed buffer turns it into +0, and so must the written one) -- and
 * attn_relu_backward_set (src/kernels/sgemm.c, the feed-forward's d_ff1, in place) with -0,
 * zero, NaN and infinite gradients and inputs; attn_add_onto_zero (src/kernels/embedding.c). */
#include "kernels_internal.h"
#include "test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const int dims[][3] = {/* rows, cols, n_valid */
                              {1, 1, 1},   {3, 4, 4},   {2, 7, 5}, {5, 9, 9},
                              {4, 17, 12}, {6, 33, 33}, {2, 8, 0}};
#define N_DIMS ((int)(sizeof dims / sizeof dims[0]))

static void check(const char *path, int rows, int cols, int n_valid, uint64_t seed) {
    ck_assert(attn_cpu_select(path));
    const size_t n = (size_t)rows * cols;
    float *x = malloc(n * sizeof(float)), *p = malloc(n * sizeof(float));
    float *dp = malloc(n * sizeof(float)), *want = calloc(n, sizeof(float));
    float *got = malloc(n * sizeof(float));
    ck_assert(x && p && dp && want && got);
    attn_rng rng = attn_rng_seed(seed);
    tu_fill_uniform(x, n, -4.0f, 4.0f, &rng);
    tu_fill_uniform(dp, n, -1.0f, 1.0f, &rng);
    attn_softmax_forward(p, x, rows, cols, n_valid);
    for (int r = 0; r < rows && n_valid > 1; r += 2) {
        /* an exact 0 probability with a large negative d_p: the gradient is -0 there */
        p[(size_t)r * cols] = 0.0f;
        dp[(size_t)r * cols] = -8.0f;
    }
    for (size_t i = 0; i < n; i++) got[i] = NAN; /* every element must be written */
    attn_softmax_backward(want, dp, p, rows, cols, n_valid);
    attn_softmax_backward_set(got, dp, p, rows, cols, n_valid);
    tu_assert_identical(path, got, want, n);
    for (size_t i = 0; i < n; i++) ck_assert(!signbit(got[i]) || got[i] != 0.0f);
    free(x);
    free(p);
    free(dp);
    free(want);
    free(got);
}

START_TEST(test_set_equals_zero_then_add) {
    const int *d = dims[_i];
    check("scalar", d[0], d[1], d[2], 100 + (uint64_t)_i);
    if (attn_cpu_path_supported("avx2")) check("avx2", d[0], d[1], d[2], 200 + (uint64_t)_i);
    attn_cpu_select("auto");
}
END_TEST

START_TEST(test_relu_set_equals_zero_then_add) {
    enum { N = 203 }; /* not a multiple of any vector width */
    float x[N], d_y[N], want[N], got[N];
    attn_rng rng = attn_rng_seed(7);
    tu_fill_uniform(x, N, -1.0f, 1.0f, &rng);
    tu_fill_uniform(d_y, N, -1.0f, 1.0f, &rng);
    const float special[] = {-0.0f, 0.0f, NAN, INFINITY, -INFINITY};
    for (int i = 0; i < N; i += 3) d_y[i] = special[(i / 3) % 5];
    for (int i = 0; i < N; i += 7) x[i] = special[(i / 7) % 5];
    memset(want, 0, sizeof want);
    attn_relu_backward(want, d_y, x, N);
    memcpy(got, d_y, sizeof got);
    attn_relu_backward_set(got, got, x, N); /* in place, as the feed-forward backward calls it */
    tu_assert_identical("relu in place", got, want, N);
    for (int i = 0; i < N; i++) got[i] = NAN;
    attn_relu_backward_set(got, d_y, x, N);
    tu_assert_identical("relu", got, want, N);
    for (int i = 0; i < N; i++) ck_assert(!signbit(got[i]) || got[i] != 0.0f);
}
END_TEST

/* attn_add_onto_zero (the encoder and decoder layers' first write of d_x) against zeroing and
 * attn_add_forward, byte for byte: -0 must come out +0 as from the add onto +0, NaN payloads and
 * infinities pass through the same add. */
START_TEST(test_add_onto_zero_equals_zero_then_add) {
    enum { N = 203 };
    float a[N], want[N], got[N];
    attn_rng rng = attn_rng_seed(9);
    tu_fill_uniform(a, N, -1.0f, 1.0f, &rng);
    const float special[] = {-0.0f, 0.0f, NAN, -NAN, INFINITY, -INFINITY, 1e-45f, -1e-45f};
    for (int i = 0; i < N; i += 5) a[i] = special[(i / 5) % 8];
    memset(want, 0, sizeof want);
    attn_add_forward(want, want, a, N);
    for (int i = 0; i < N; i++) got[i] = 7.0f; /* every element must be written */
    attn_add_onto_zero(got, a, N);
    ck_assert(memcmp(got, want, sizeof got) == 0);
    for (int i = 0; i < N; i++) ck_assert(!signbit(got[i]) || got[i] != 0.0f);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("backward_set");
    TCase *tc = tcase_create("backward_set");
    tcase_add_loop_test(tc, test_set_equals_zero_then_add, 0, N_DIMS);
    tcase_add_test(tc, test_relu_set_equals_zero_then_add);
    tcase_add_test(tc, test_add_onto_zero_equals_zero_then_add);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return tu_run_suite(suite());
}

/* test_activations.c -- tanh, sigmoid, relu, gelu, on both CPU paths (kernel_paths.h).
 * Evidence: PyTorch goldens (AVX2 path: bit-identical torch.tanh / torch.sigmoid on every
 * length 1..70, torch.relu; F.gelu measured in ULPs; scalar path: tanh and sigmoid
 * bit-identical to PyTorch under ATEN_CPU_CAPABILITY=default, within the stated ULP bounds of
 * the AVX2 goldens),
 * finite differences for every backward on odd lengths, and the accumulate contract. The AVX2
 * GELU is checked bit for bit against the scalar path (oneDNN's arithmetic one element at a
 * time) on ~1e6 values, special values and every tail length. */
#include "kernel_paths.h"
#include "kernels_internal.h"
#include "test_util.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FD_STEP 1e-3f
#define FD_ATOL 1e-3
#define FD_RTOL 1e-2

/* Elementwise goldens made on another CPU class (tu_golden_exact): within this many ULP. */
#define OTHER_MACHINE_MAX_ULP 4u

/* The scalar path (glibc tanhf / expf where PyTorch's AVX2 build runs Sleef's u10 functions)
 * against the goldens: measured max 2 ULP for both on the 2485 golden values (glibc 2.36);
 * the bound leaves room for another libm. */
#define TANH_SCALAR_MAX_ULP    4u
#define SIGMOID_SCALAR_MAX_ULP 4u

/* Runs forward `fwd` on every golden case of `key` and requires bit-identical output (within
 * OTHER_MACHINE_MAX_ULP for a golden made on another CPU class, scalar_max_ulp on the scalar
 * path). */
static void check_unary_golden(const char *key, void (*fwd)(float *, const float *, size_t),
                               int min_cases, uint32_t scalar_max_ulp) {
    cJSON *root = tu_load_source_json(TU_KERNELS_GOLDEN);
    const bool scalar = kp_scalar();
    bool exact = tu_golden_exact(root, TU_KERNELS_GOLDEN, scalar ? "the scalar bound" : "4 ULP");
    const uint32_t bound = scalar ? scalar_max_ulp : OTHER_MACHINE_MAX_ULP;
    uint32_t worst = 0;
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(root, key), *c;
    int count = 0;
    cJSON_ArrayForEach(c, cases) {
        size_t n;
        float *x = tu_json_floats(c, "x", &n), *want = tu_json_floats(c, "y", NULL);
        float *y = malloc(n * sizeof *y);
        ck_assert_ptr_nonnull(y);
        fwd(y, x, n);
        char what[64];
        snprintf(what, sizeof what, "%s n=%zu", key, n);
        tu_assert_golden_ulp(what, y, want, n, exact, bound);
        tu_compare cmp = tu_compare_floats(y, want, n);
        worst = cmp.max_ulp > worst ? cmp.max_ulp : worst;
        free(x), free(want), free(y);
        count++;
    }
    printf("  %s, %s path: max %u ULP from PyTorch over %d cases\n", key, attn_cpu_path(), worst,
           count);
    ck_assert_int_ge(count, min_cases);
    cJSON_Delete(root);
}

/* The scalar and avx512 paths against PyTorch under their capability (kp_goldens) on every
 * length 1..70: bit-identical where the golden was made with this C library (ATen's default
 * build maps glibc's tanhf / expf over the lanes, and the vectorised sigmoid leaves its last
 * n mod 16 (avx2) or n mod 32 (avx512) elements to glibc's expf), else within
 * OTHER_LIBC_MAX_ULP. */
#define OTHER_LIBC_MAX_ULP 4u
static void check_unary_capability(int g, const char *key,
                                   void (*fwd)(float *, const float *, size_t)) {
    if (!kp_golden_select(g)) return;
    const char *file = kp_goldens[g].file;
    cJSON *root = tu_load_source_json(file);
    const bool exact = kp_golden_libc_matches(root, file, "4 ULP");
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(root, key), *c;
    int count = 0;
    size_t total = 0, identical = 0;
    cJSON_ArrayForEach(c, cases) {
        size_t n;
        float *x = tu_json_floats(c, "x", &n), *want = tu_json_floats(c, "y", NULL);
        float *y = malloc(n * sizeof *y);
        ck_assert_ptr_nonnull(y);
        fwd(y, x, n);
        char what[80];
        snprintf(what, sizeof what, "%s (%s capability) n=%zu", key, kp_goldens[g].capability, n);
        tu_assert_golden_ulp(what, y, want, n, exact, OTHER_LIBC_MAX_ULP);
        total += n;
        identical += tu_compare_floats(y, want, n).n_equal;
        free(x), free(want), free(y);
        count++;
    }
    printf("  %s, %s path vs ATEN_CPU_CAPABILITY=%s: identical %zu/%zu\n", key, kp_goldens[g].path,
           kp_goldens[g].capability, identical, total);
    ck_assert_int_eq(count, 70);
    cJSON_Delete(root);
}

/* loop index: kp_goldens */
START_TEST(test_tanh_golden_capability) {
    check_unary_capability(_i, "tanh", attn_tanh_forward);
}
END_TEST

/* loop index: kp_goldens */
START_TEST(test_sigmoid_golden_capability) {
    check_unary_capability(_i, "sigmoid", attn_sigmoid_forward);
}
END_TEST

/* loop index: the CPU path */
START_TEST(test_tanh_golden) {
    if (!kp_select(_i)) return;
    check_unary_golden("tanh", attn_tanh_forward, 70, TANH_SCALAR_MAX_ULP);
}
END_TEST
START_TEST(test_sigmoid_golden) {
    if (!kp_select(_i)) return;
    check_unary_golden("sigmoid", attn_sigmoid_forward, 70, SIGMOID_SCALAR_MAX_ULP);
}
END_TEST

START_TEST(test_relu_golden) {
    if (!kp_select(_i)) return;
    cJSON *root = tu_load_source_json(TU_KERNELS_GOLDEN);
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(root, "relu");
    size_t n;
    float *x = tu_json_floats(c, "x", &n), *want = tu_json_floats(c, "y", NULL), *y = malloc(n * 4);
    ck_assert_ptr_nonnull(y);
    attn_relu_forward(y, x, n);
    tu_assert_identical("relu", y, want, n); /* no rounding: identical on any machine */
    /* -0 stays -0 (PyTorch keeps the sign; the golden holds x[1] = -0) */
    ck_assert(signbit(y[1]) && y[1] == 0.0f);
    free(x), free(want), free(y);
    cJSON_Delete(root);
}
END_TEST

/* GELU follows oneDNN's JIT erf approximation (PyTorch's path for contiguous fp32) on both
 * paths. Measured on this machine against F.gelu on 4051 values in [-10, 10]: identical
 * 4051/4051, max 0 ULP. The assertion is bit-identity (the scalar path too: the same arithmetic,
 * test_gelu_avx2_matches_scalar); GELU_MAX_ULP documents the bound if that ever has to relax. */
#define GELU_MAX_ULP 0u
START_TEST(test_gelu_golden) {
    if (!kp_select(_i)) return;
    cJSON *root = tu_load_source_json(TU_KERNELS_GOLDEN);
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(root, "gelu");
    size_t n;
    float *x = tu_json_floats(c, "x", &n), *want = tu_json_floats(c, "y", NULL), *y = malloc(n * 4);
    ck_assert_ptr_nonnull(y);
    attn_gelu_forward(y, x, n);
    /* (on the scalar path this is false: its bit-identity is test_gelu_avx2_matches_scalar's) */
    bool same_machine = tu_golden_exact(root, TU_KERNELS_GOLDEN, "4 ULP");
    uint32_t bound = same_machine ? GELU_MAX_ULP : OTHER_MACHINE_MAX_ULP;
    tu_compare cmp = tu_compare_floats(y, want, n);
    printf("  gelu vs F.gelu: identical %zu/%zu, max ULP %u\n", cmp.n_equal, n, cmp.max_ulp);
    ck_assert_msg(cmp.max_ulp <= bound, "gelu: max ULP %u > %u (identical %zu/%zu)", cmp.max_ulp,
                  bound, cmp.n_equal, n);
    /* independent check of the math: within 1e-6 absolute of the exact erf formula */
    for (size_t i = 0; i < n; i++) {
        double xi = x[i], exact = 0.5 * xi * (1.0 + erf(xi / sqrt(2.0)));
        ck_assert_msg(fabs(y[i] - exact) <= 2e-6 * fmax(1.0, fabs(exact)),
                      "gelu(%g) = %.9g vs exact %.9g", xi, y[i], exact);
    }
    free(x), free(want), free(y);
    cJSON_Delete(root);
}
END_TEST

/* ---- gelu: the AVX2 path vs the scalar path (oneDNN's arithmetic element by element) ------ */

/* y[n] = gelu(x[n]) on the CPU path `path`. */
static void gelu_on(const char *path, float *y, const float *x, size_t n) {
    ck_assert(attn_cpu_select(path));
    attn_gelu_forward(y, x, n);
}

/* Index of the first element whose bit patterns differ (NaN payloads and signs included), or n. */
static size_t first_bit_difference(const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (memcmp(a + i, b + i, sizeof *a) != 0) return i;
    return n;
}

static void assert_same_bits(const char *what, const float *x, const float *got, const float *want,
                             size_t n) {
    size_t i = first_bit_difference(got, want, n);
    ck_assert_msg(i == n, "%s: gelu(%a) at %zu: avx2 %a vs scalar %a", what, x[i], i, got[i],
                  want[i]);
}

/* Inputs where the arithmetic changes regime: signed zeros, infinities, NaNs with payloads,
 * denormals, FLT_MIN/MAX, every power of two, the exp underflow clamp (-(x/sqrt2)^2 <
 * ln FLT_MIN at |x| ~ 13.2164) and the overflow of (x/sqrt2)^2 (|x| ~ 2.6087e19), each with
 * its float neighbours. Returns the count written to v (room for 4096). */
static size_t gelu_special_values(float *v) {
    static const uint32_t bits[] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                                    0xffc00000u, 0x7fc12345u, 0xff812345u, 0x7f800001u, 0x00000001u,
                                    0x80000001u, 0x007fffffu, 0x807fffffu, 0x00400000u, 0x00800000u,
                                    0x80800000u, 0x7f7fffffu, 0xff7fffffu};
    size_t k = 0;
    for (size_t i = 0; i < sizeof bits / sizeof *bits; i++) v[k++] = attn_f32_from_bits(bits[i]);
    for (int e = -149; e <= 127; e++) {
        v[k++] = ldexpf(1.0f, e);
        v[k++] = -ldexpf(1.0f, e);
    }
    const float edges[] = {13.2164f, 2.6087e19f, 0.5f, 1.0f, 3.0f};
    for (size_t j = 0; j < sizeof edges / sizeof *edges; j++)
        for (int sgn = -1; sgn <= 1; sgn += 2) {
            float lo = sgn * edges[j], hi = lo;
            for (int step = 0; step < 128; step++) {
                v[k++] = lo = nextafterf(lo, -INFINITY);
                v[k++] = hi = nextafterf(hi, INFINITY);
            }
        }
    ck_assert_uint_le(k, 4096);
    return k;
}

START_TEST(test_gelu_avx2_matches_scalar) {
    if (!attn_cpu_path_supported("avx2")) {
        printf("  gelu avx2 vs scalar: no AVX2 on this CPU or build, skipped\n");
        return;
    }
    const size_t n_grid = 1000001, n_rand = 1u << 16, max_special = 4096;
    const size_t n_cap = n_grid + n_rand + max_special;
    float *x = malloc(n_cap * sizeof *x), *got = malloc(n_cap * sizeof *got),
          *want = malloc(n_cap * sizeof *want);
    ck_assert(x && got && want);
    /* evenly spaced over [-12, 12] (step 2.4e-5), then random bit patterns, then specials */
    size_t n = 0;
    for (size_t i = 0; i < n_grid; i++) x[n++] = (float)(-12.0 + 24.0 * (double)i / (n_grid - 1));
    attn_rng rng = attn_rng_seed(20240613);
    for (size_t i = 0; i < n_rand; i++) x[n++] = attn_f32_from_bits((uint32_t)attn_rng_next(&rng));
    float *special = x + n;
    size_t n_special = gelu_special_values(special);
    n += n_special;

    gelu_on("avx2", got, x, n);
    gelu_on("scalar", want, x, n);
    assert_same_bits("all values", x, got, want, n);
    printf("  gelu avx2 vs scalar path: %zu values (%zu special) bit-identical\n", n, n_special);
    /* sanity of the reference itself where the answer is known exactly */
    ck_assert(got[n_grid / 2] == 0.0f && x[n_grid / 2] == 0.0f); /* gelu(0) = 0 */
    ck_assert(got[n_grid - 1] == 12.0f);                         /* gelu(12) rounds to 12 */
    ck_assert(got[n - n_special + 2] == INFINITY);               /* gelu(+inf) */
    ck_assert(isnan(got[n - n_special + 4]));                    /* gelu(NaN) */

    /* every tail length 1..40, unaligned starts, specials in the tail; nothing written past n */
    const float sentinel = attn_f32_from_bits(0x7fc0deadu);
    for (size_t len = 1; len <= 40; len++)
        for (size_t off = 0; off < 4; off++) {
            float out[48], ref[48];
            for (size_t i = 0; i < 48; i++) out[i] = sentinel;
            const float *src = special + 3 * off;
            gelu_on("avx2", out + 1, src, len);
            gelu_on("scalar", ref, src, len);
            char what[64];
            snprintf(what, sizeof what, "length %zu offset %zu", len, off);
            assert_same_bits(what, src, out + 1, ref, len);
            ck_assert(first_bit_difference(out, &sentinel, 1) == 1);
            for (size_t i = len + 1; i < 48; i++)
                ck_assert_msg(first_bit_difference(out + i, &sentinel, 1) == 1,
                              "length %zu: wrote past the end at %zu", len, i - 1);
        }
    free(x), free(got), free(want);
}
END_TEST

/* ---- finite differences ------------------------------------------------------------------ */

typedef void (*unary_fwd)(float *, const float *, size_t);
typedef struct unary_ctx {
    unary_fwd fwd;
    size_t n;
    float *x, *y;
    const double *r; /* L = sum r . f(x) */
} unary_ctx;

static double unary_loss(void *p) {
    unary_ctx *c = p;
    c->fwd(c->y, c->x, c->n);
    double s = 0;
    for (size_t i = 0; i < c->n; i++) s += c->r[i] * c->y[i];
    return s;
}

enum { OP_TANH, OP_SIGMOID, OP_RELU, OP_GELU, OP_N };
static const size_t fd_lengths[] = {1, 7, 8, 17, 33};
#define N_LENGTHS (sizeof fd_lengths / sizeof *fd_lengths)

#define N_UNARY_CASES (OP_N * (int)N_LENGTHS)

/* loop index = path * N_UNARY_CASES + op * N_LENGTHS + length index */
START_TEST(test_unary_grad) {
    if (!kp_select(_i / N_UNARY_CASES)) return;
    const int t = _i % N_UNARY_CASES, op = t / (int)N_LENGTHS;
    const size_t n = fd_lengths[t % (int)N_LENGTHS];
    static const char *names[] = {"tanh", "sigmoid", "relu", "gelu"};
    static const unary_fwd fwds[] = {attn_tanh_forward, attn_sigmoid_forward, attn_relu_forward,
                                     attn_gelu_forward};
    attn_rng rng = attn_rng_seed(500 + (uint64_t)t);
    float *x = malloc(n * 4), *y = malloc(n * 4), *dy = malloc(n * 4), *dx = malloc(n * 4);
    float *want = malloc(n * 4);
    double *r = malloc(n * sizeof *r);
    ck_assert(x && y && dy && dx && want && r);
    tu_fill_uniform(x, n, -3, 3, &rng);
    if (op == OP_RELU) /* keep away from the kink at 0 */
        for (size_t i = 0; i < n; i++) x[i] = x[i] < 0 ? x[i] - 0.1f : x[i] + 0.1f;
    tu_fill_uniform(dy, n, -1, 1, &rng);
    for (size_t i = 0; i < n; i++) r[i] = dy[i];
    /* the accumulate contract: start from a non-zero d_x and subtract it afterwards */
    tu_fill_uniform(dx, n, -1, 1, &rng);
    float *old = malloc(n * 4);
    ck_assert_ptr_nonnull(old);
    memcpy(old, dx, n * 4);
    fwds[op](y, x, n);
    switch (op) {
    case OP_TANH:
        attn_tanh_backward(dx, dy, y, n);
        break;
    case OP_SIGMOID:
        attn_sigmoid_backward(dx, dy, y, n);
        break;
    case OP_RELU:
        attn_relu_backward(dx, dy, x, n);
        break;
    default:
        attn_gelu_backward(dx, dy, x, n);
        break;
    }
    float *grad = malloc(n * 4);
    ck_assert_ptr_nonnull(grad);
    for (size_t i = 0; i < n; i++) grad[i] = dx[i] - old[i];
    unary_ctx c = {fwds[op], n, x, y, r};
    char what[64];
    snprintf(what, sizeof what, "%s %s d_x n=%zu", attn_cpu_path(), names[op], n);
    tu_check_grad(what, unary_loss, &c, x, grad, n, FD_STEP, FD_ATOL, FD_RTOL);
    /* and the same backward from zero gives exactly the increment */
    memset(want, 0, n * 4);
    fwds[op](y, x, n);
    switch (op) {
    case OP_TANH:
        attn_tanh_backward(want, dy, y, n);
        break;
    case OP_SIGMOID:
        attn_sigmoid_backward(want, dy, y, n);
        break;
    case OP_RELU:
        attn_relu_backward(want, dy, x, n);
        break;
    default:
        attn_gelu_backward(want, dy, x, n);
        break;
    }
    for (size_t i = 0; i < n; i++) want[i] += old[i];
    snprintf(what, sizeof what, "%s d_x accumulates n=%zu", names[op], n);
    tu_assert_identical(what, dx, want, n);
    /* NULL d_x is allowed */
    attn_tanh_backward(NULL, dy, y, n);
    free(x), free(y), free(dy), free(dx), free(want), free(r), free(old), free(grad);
}
END_TEST

static Suite *activations_suite(void) {
    Suite *s = suite_create("activations");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_tanh_golden, 0, KP_COUNT);
    tcase_add_loop_test(tc, test_sigmoid_golden, 0, KP_COUNT);
    tcase_add_loop_test(tc, test_relu_golden, 0, KP_COUNT);
    tcase_add_loop_test(tc, test_gelu_golden, 0, KP_COUNT);
    tcase_add_test(tc, test_gelu_avx2_matches_scalar);
    tcase_add_loop_test(tc, test_tanh_golden_capability, 0, KP_GOLDEN_COUNT);
    tcase_add_loop_test(tc, test_sigmoid_golden_capability, 0, KP_GOLDEN_COUNT);
    tcase_add_loop_test(tc, test_unary_grad, 0, KP_COUNT * N_UNARY_CASES);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return tu_run_suite(activations_suite());
}

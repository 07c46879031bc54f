/* test_kernelset.c -- pinned and native kernels (src/kernels/kernelset.c, include/
 * attn_kernelset.h): the test program starts pinned (its constructor, src/cli/
 * preferred_blas.c); on an AVX2+FMA CPU that is OpenBLAS's Haswell table on one thread whatever
 * OpenBLAS detected; switching to native and back gives the pinned bytes again and leaves
 * OPENBLAS_CORETYPE as it was; the record and its JSON. */
#include "io_internal.h"
#include "kernels_internal.h"
#include "test_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

START_TEST(test_mode_names) {
    attn_kernels_mode m = ATTN_KERNELS_NATIVE;
    ck_assert(attn_kernels_mode_parse("pinned", &m) && m == ATTN_KERNELS_PINNED);
    ck_assert(attn_kernels_mode_parse("native", &m) && m == ATTN_KERNELS_NATIVE);
    ck_assert(!attn_kernels_mode_parse("Pinned", &m) && m == ATTN_KERNELS_NATIVE);
    ck_assert(!attn_kernels_mode_parse("", &m) && !attn_kernels_mode_parse(NULL, &m));
    ck_assert_str_eq(attn_kernels_mode_name(ATTN_KERNELS_PINNED), "pinned");
    ck_assert_str_eq(attn_kernels_mode_name(ATTN_KERNELS_NATIVE), "native");
}
END_TEST

/* c[M,N] = a.b^T for a product whose rounding depends on the kernel table (K long). */
enum { M = 48, N = 40, K = 700 };
static void product(float *c, const float *a, const float *b) {
    attn_matmul_nt(c, a, b, M, N, K, 0.0f, ATTN_OP_OTHER, ATTN_PASS_FORWARD);
}

START_TEST(test_pinned_then_native_then_pinned) {
    if (attn_sgemm_naive || !attn_cpu_has_avx2_fma()) {
        printf("  no OpenBLAS or no AVX2+FMA here: pinned means what OpenBLAS picks, skipped\n");
        return;
    }
    const char *env = getenv("OPENBLAS_CORETYPE");
    char *env_before = env ? strdup(env) : NULL;
    /* the default, unless the environment asked otherwise */
    if (getenv("ATTN_KERNELS")) ck_assert(attn_kernels_select(ATTN_KERNELS_PINNED));
    attn_kernels_info k;
    attn_kernels_info_get(&k);
    ck_assert_int_eq(attn_kernels_mode_active(), ATTN_KERNELS_PINNED);
    ck_assert_str_eq(k.mode, "pinned");
    ck_assert_str_eq(k.blas_core, "Haswell");
    ck_assert_int_eq(k.blas_threads, 1);
    ck_assert_msg(k.openblas[0] >= '0' && k.openblas[0] <= '9', "version '%s'", k.openblas);
    static float a[M * K], b[N * K], pinned[M * N], native[M * N], again[M * N];
    attn_rng r = attn_rng_seed(3);
    for (int i = 0; i < M * K; i++) a[i] = attn_rng_uniform_range(&r, -1, 1);
    for (int i = 0; i < N * K; i++) b[i] = attn_rng_uniform_range(&r, -1, 1);
    product(pinned, a, b);
    ck_assert(attn_kernels_select(ATTN_KERNELS_NATIVE));
    attn_kernels_info_get(&k);
    ck_assert_str_eq(k.mode, "native");
    product(native, a, b);
    int differ = 0;
    for (int i = 0; i < M * N; i++) differ += memcmp(&pinned[i], &native[i], sizeof(float)) != 0;
    printf("  native runs %s: %d of %d products differ from Haswell's\n", k.blas_core, differ,
           M * N);
    ck_assert(attn_kernels_select(ATTN_KERNELS_PINNED));
    product(again, a, b);
    ck_assert_msg(memcmp(pinned, again, sizeof pinned) == 0, "pinned bytes changed after native");
    ck_assert_str_eq(attn_blas_corename(), "Haswell");
    ck_assert_int_eq(attn_num_threads(), 1);
    env = getenv("OPENBLAS_CORETYPE");
    ck_assert_msg((!env && !env_before) || (env && env_before && !strcmp(env, env_before)),
                  "OPENBLAS_CORETYPE was '%s', is '%s'", env_before ? env_before : "(unset)",
                  env ? env : "(unset)");
    free(env_before);
}
END_TEST

/* The BLAS thread count set on one thread holds for products issued on any other. Under an
 * OpenMP build of OpenBLAS the count is per thread: without attn's hand-over a product from a
 * new thread ran on as many BLAS threads as cores and set that count for the whole process. */
enum { BIG = 256 };
static void *product_on_new_thread(void *arg) {
    float *abc = arg;
    attn_matmul_nt(abc + 2 * BIG * BIG, abc, abc + BIG * BIG, BIG, BIG, BIG, 0.0f, ATTN_OP_OTHER,
                   ATTN_PASS_FORWARD);
    int *threads = malloc(sizeof *threads);
    if (threads) *threads = attn_num_threads();
    return threads;
}

START_TEST(test_thread_count_on_every_thread) {
    printf("  OpenBLAS %s build on %d cores\n", attn_blas_threading(), attn_cores());
    if (attn_sgemm_naive || attn_cores() < 2) {
        printf("  no OpenBLAS or one core: no BLAS threads to split into, skipped\n");
        return;
    }
    float *abc = calloc(3 * BIG * BIG, sizeof *abc);
    ck_assert_ptr_nonnull(abc);
    for (int i = 0; i < 2 * BIG * BIG; i++) abc[i] = (float)(i % 7) - 3.0f;
    for (int n = 1; n <= 2; n++) {
        attn_set_num_threads(n);
        pthread_t tid;
        ck_assert_int_eq(pthread_create(&tid, NULL, product_on_new_thread, abc), 0);
        int *seen = NULL;
        ck_assert_int_eq(pthread_join(tid, (void **)&seen), 0);
        ck_assert_ptr_nonnull(seen);
        ck_assert_msg(*seen == n, "set %d BLAS threads, a product on another thread left %d", n,
                      *seen);
        free(seen);
        ck_assert_int_eq(attn_num_threads(), n);
    }
    attn_set_num_threads(1);
    free(abc);
}
END_TEST

START_TEST(test_record_same_and_json) {
    attn_kernels_info a = {"pinned", "0.3.21", "Haswell", 1, "avx2"}, b = a;
    snprintf(b.mode, sizeof b.mode, "native"); /* the mode does not decide the bytes */
    ck_assert(attn_kernels_info_same(&a, &b));
    b = a;
    snprintf(b.blas_core, sizeof b.blas_core, "SkylakeX");
    ck_assert(!attn_kernels_info_same(&a, &b));
    b = a;
    b.blas_threads = 2;
    ck_assert(!attn_kernels_info_same(&a, &b));
    b = a;
    snprintf(b.cpu_path, sizeof b.cpu_path, "scalar");
    ck_assert(!attn_kernels_info_same(&a, &b));
    b = a;
    snprintf(b.openblas, sizeof b.openblas, "0.3.26");
    ck_assert(!attn_kernels_info_same(&a, &b));
    char text[256];
    attn_kernels_info_describe(&a, text, sizeof text);
    ck_assert_str_eq(text, "OpenBLAS 0.3.21 Haswell, 1 thread, attn avx2 (pinned)");
    char *json = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&json, &len);
    ck_assert_ptr_nonnull(f);
    attn_kernels_info_write_json(f, &a);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_str_eq(json, "{\"mode\": \"pinned\", \"openblas\": \"0.3.21\", \"blas_core\": "
                           "\"Haswell\", \"blas_threads\": 1, \"cpu_path\": \"avx2\"}");
    cJSON *o = cJSON_Parse(json);
    attn_kernels_info back;
    ck_assert(attn_io_kernels_from_json(o, &back));
    ck_assert(attn_kernels_info_same(&a, &back));
    ck_assert_str_eq(back.mode, "pinned");
    cJSON_DeleteItemFromObject(o, "blas_threads"); /* a record without a key is no record */
    ck_assert(!attn_io_kernels_from_json(o, &back));
    cJSON_Delete(o);
    free(json);
}
END_TEST

/* A product of one row (asked of OpenBLAS in column-major form on the Haswell table, sgemm.c's
 * row_product_as_column) gives the bits of that row in a product of three rows (the row-major
 * call), on random shapes, both op(b), alpha 0.5 and 1, beta 0, 0.5 and 1: what batch 1 computes
 * is what a batch computes. The pinned kernels, where the rule is on. */
START_TEST(test_pinned_one_row_is_a_batch_row) {
    if (attn_sgemm_naive || !attn_cpu_has_avx2_fma()) {
        printf("  no OpenBLAS or no AVX2+FMA here: no pinned table, skipped\n");
        return;
    }
    ck_assert(attn_kernels_select(ATTN_KERNELS_PINNED));
    attn_rng r = attn_rng_seed(11);
    int differ = 0, total = 0;
    for (int trial = 0; trial < 300; trial++) {
        const int k = 1 + (int)attn_rng_below(&r, 300), n = 1 + (int)attn_rng_below(&r, 600);
        const bool trans_b = attn_rng_below(&r, 2) == 1;
        const float alpha = trial % 4 == 0 ? 0.5f : 1.0f, beta = (float)(trial % 3) * 0.5f;
        float *a = malloc(3 * (size_t)k * sizeof *a), *b = malloc((size_t)k * n * sizeof *b);
        float *one = malloc((size_t)n * sizeof *one),
              *three = malloc(3 * (size_t)n * sizeof *three);
        ck_assert(a && b && one && three);
        for (int i = 0; i < 3 * k; i++) a[i] = attn_rng_uniform_range(&r, -1, 1);
        for (int i = 0; i < k * n; i++) b[i] = attn_rng_uniform_range(&r, -1, 1);
        for (int i = 0; i < 3 * n; i++) three[i] = attn_rng_uniform_range(&r, -1, 1);
        memcpy(one, three, (size_t)n * sizeof *one);
        attn_sgemm(one, a, b, 1, n, k, false, trans_b, alpha, beta, ATTN_OP_OTHER,
                   ATTN_PASS_FORWARD);
        attn_sgemm(three, a, b, 3, n, k, false, trans_b, alpha, beta, ATTN_OP_OTHER,
                   ATTN_PASS_FORWARD);
        for (int j = 0; j < n; j++) differ += memcmp(&one[j], &three[j], sizeof(float)) != 0;
        total += n;
        free(a), free(b), free(one), free(three);
    }
    ck_assert_msg(differ == 0, "%d of %d one-row products differ from their batch row", differ,
                  total);
}
END_TEST

static Suite *kernelset_suite(void) {
    Suite *s = suite_create("kernelset");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_mode_names);
    tcase_add_test(tc, test_pinned_then_native_then_pinned);
    tcase_add_test(tc, test_pinned_one_row_is_a_batch_row);
    tcase_add_test(tc, test_record_same_and_json);
    tcase_add_test(tc, test_thread_count_on_every_thread);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return tu_run_suite(kernelset_suite());
}

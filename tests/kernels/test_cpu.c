/* test_cpu.c -- choosing the kernels' CPU path (src/kernels/cpu.c): attn_cpu_select and
 * attn_cpu_path, the ATTN_CPU environment variable, warnings through the log hook, and that
 * the active path really changes which code runs (tanh: Sleef on avx2, glibc on scalar). */
#include "kernels_internal.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Counts warnings from the log hook and keeps the last message. */
typedef struct log_capture {
    int warnings;
    char last[256];
} log_capture;

static void capture_log(attn_log_level level, const char *msg, void *user) {
    log_capture *c = user;
    if (level == ATTN_LOG_WARN) c->warnings++;
    snprintf(c->last, sizeof c->last, "%s", msg);
}

START_TEST(test_select) {
    log_capture cap = {0, ""};
    attn_set_log(capture_log, &cap);
    const bool has_avx2 = attn_cpu_path_supported("avx2");
    ck_assert(attn_cpu_path_supported("scalar"));
    ck_assert(attn_cpu_path_supported("auto"));
    ck_assert(!attn_cpu_path_supported("avx1024"));
#if !ATTN_HAVE_AVX2_KERNELS
    ck_assert(!has_avx2);
#endif
    ck_assert(attn_cpu_select("scalar"));
    ck_assert_str_eq(attn_cpu_path(), "scalar");
    ck_assert(!attn_cpu_use_avx2());
    /* an unknown name fails, leaves the path alone and says why */
    ck_assert(!attn_cpu_select("avx1024"));
    ck_assert_str_eq(attn_cpu_path(), "scalar");
    ck_assert_int_eq(cap.warnings, 1);
    ck_assert_ptr_nonnull(strstr(cap.last, "avx1024"));
    /* avx2 succeeds exactly when the CPU has it */
    ck_assert(attn_cpu_select("avx2") == has_avx2);
    ck_assert_str_eq(attn_cpu_path(), has_avx2 ? "avx2" : "scalar");
    ck_assert_int_eq(cap.warnings, has_avx2 ? 1 : 2);
    /* avx512 (the AVX2 kernels with ATen's avx512 softmax and sigmoid) needs only AVX2+FMA */
    ck_assert(attn_cpu_select("avx512") == has_avx2);
    ck_assert_str_eq(attn_cpu_path(), has_avx2 ? "avx512" : "scalar");
    ck_assert(attn_cpu_use_avx2() == has_avx2);
    ck_assert(attn_cpu_aten_avx512() == has_avx2);
    ck_assert_int_eq(cap.warnings, has_avx2 ? 1 : 3);
    /* auto (and NULL) is the best this machine can run */
    ck_assert(attn_cpu_select("scalar") && attn_cpu_select("auto"));
    ck_assert_str_eq(attn_cpu_path(), has_avx2 ? "avx2" : "scalar");
    ck_assert(attn_cpu_select("scalar") && attn_cpu_select(NULL));
    ck_assert_str_eq(attn_cpu_path(), has_avx2 ? "avx2" : "scalar");
    printf("  this machine: auto runs %s\n", attn_cpu_path());
    attn_set_log(NULL, NULL);
}
END_TEST

/* ATTN_CPU value, expected path ("best" = avx2 if supported; avx2 and avx512 fall back to
 * scalar without AVX2+FMA), warning expected. auto never chooses avx512. */
static const struct {
    const char *env, *want;
    bool warns;
} env_cases[] = {{NULL, "best", false},       {"", "best", false},     {"auto", "best", false},
                 {"scalar", "scalar", false}, {"avx2", "avx2", false}, {"avx512", "avx512", false},
                 {"sse9", "best", true}};

/* The first kernel call after attn_cpu_reset chooses from $ATTN_CPU. */
START_TEST(test_env) {
    const bool has_avx2 = attn_cpu_path_supported("avx2");
    const char *saved = getenv("ATTN_CPU");
    char *saved_copy = saved ? strdup(saved) : NULL;
    for (size_t i = 0; i < sizeof env_cases / sizeof *env_cases; i++) {
        log_capture cap = {0, ""};
        attn_set_log(capture_log, &cap);
        if (env_cases[i].env)
            setenv("ATTN_CPU", env_cases[i].env, 1);
        else
            unsetenv("ATTN_CPU");
        attn_cpu_reset();
        float x = 0.5f, y;
        attn_tanh_forward(&y, &x, 1); /* the first use chooses */
        const char *want = env_cases[i].want;
        bool warns = env_cases[i].warns;
        if (strcmp(want, "best") == 0) want = has_avx2 ? "avx2" : "scalar";
        if (strncmp(want, "avx", 3) == 0 && !has_avx2)
            want = "scalar", warns = true; /* falls back */
        ck_assert_msg(strcmp(attn_cpu_path(), want) == 0, "ATTN_CPU=%s: path %s, want %s",
                      env_cases[i].env ? env_cases[i].env : "(unset)", attn_cpu_path(), want);
        ck_assert_int_eq(cap.warnings, warns ? 1 : 0);
        if (warns) printf("  ATTN_CPU=%s warns: %s\n", env_cases[i].env, cap.last);
        attn_set_log(NULL, NULL);
    }
    if (saved_copy)
        setenv("ATTN_CPU", saved_copy, 1);
    else
        unsetenv("ATTN_CPU");
    free(saved_copy);
    attn_cpu_reset();
}
END_TEST

/* The selection reaches the kernels: on a grid of 4096 values Sleef's and glibc's tanhf round
 * some differently, and each path gives its own library's bits (scalar: glibc tanhf). */
START_TEST(test_paths_run_different_code) {
    if (!attn_cpu_path_supported("avx2")) {
        printf("  no AVX2 on this CPU or build, skipped\n");
        return;
    }
    enum { N = 4096 };
    static float x[N], y_scalar[N], y_avx2[N];
    for (int i = 0; i < N; i++) x[i] = -4.0f + 8.0f * (float)i / N;
    ck_assert(attn_cpu_select("scalar"));
    attn_tanh_forward(y_scalar, x, N);
    ck_assert(attn_cpu_select("avx2"));
    attn_tanh_forward(y_avx2, x, N);
    int differ = 0;
    for (int i = 0; i < N; i++) {
        ck_assert_msg(y_scalar[i] == tanhf(x[i]), "scalar tanh(%a) is not glibc's", x[i]);
        differ += y_scalar[i] != y_avx2[i];
    }
    printf("  tanh on %d values: scalar and avx2 paths differ on %d\n", N, differ);
    ck_assert_int_gt(differ, 0);
    tu_assert_ulp("tanh scalar vs avx2", y_scalar, y_avx2, N, 4);
}
END_TEST

static Suite *cpu_suite(void) {
    Suite *s = suite_create("cpu");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_select);
    tcase_add_test(tc, test_env);
    tcase_add_test(tc, test_paths_run_different_code);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return tu_run_suite(cpu_suite());
}

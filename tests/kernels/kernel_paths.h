/* kernel_paths.h -- the kernel tests run once per CPU path of the vectorised kernels
 * (attn_cpu_select): path 0 is "scalar" (plain C, every machine), path 1 "avx2", and the
 * goldens' "avx512". CTest runs each test program once per path (tests/kernels/extra.cmake),
 * naming it in ATTN_TEST_PATH: only that path's cases run, and a path this CPU or build cannot
 * run makes the program exit 77, which CTest reports as skipped (tu_run_suite). Without
 * ATTN_TEST_PATH every path runs, and one the machine lacks is skipped with a printed line. */
#ifndef ATTN_KERNEL_PATHS_H
#define ATTN_KERNEL_PATHS_H

#include "test_util.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__GLIBC__)
#include <gnu/libc-version.h>
#endif

#define KP_COUNT 2
static const char *const kp_names[KP_COUNT] = {"scalar", "avx2"};

/* Whether this run tests path `name` (ATTN_TEST_PATH unset: every path). */
static inline bool kp_wanted(const char *name) {
    const char *only = getenv("ATTN_TEST_PATH");
    return !only || !*only || strcmp(only, name) == 0;
}

/* Makes path p active; false when this run does not test it or this machine cannot run it
 * (the caller returns). */
static inline bool kp_select(int p) {
    ck_assert_int_ge(p, 0);
    ck_assert_int_lt(p, KP_COUNT);
    if (!kp_wanted(kp_names[p])) return false;
    if (!attn_cpu_path_supported(kp_names[p])) {
        printf("  %s kernels: not supported by this CPU or build, skipped\n", kp_names[p]);
        return false;
    }
    ck_assert(attn_cpu_select(kp_names[p]));
    ck_assert_str_eq(attn_cpu_path(), kp_names[p]);
    return true;
}

/* Makes path p active for a comparison of the paths (it must be supported). */
static inline void kp_force(int p) {
    ck_assert(attn_cpu_select(kp_names[p]));
}

/* True while the scalar kernels are active. */
static inline bool kp_scalar(void) {
    return attn_cpu_path()[0] == 's';
}

/* Goldens of PyTorch's BLAS-free vectorised ops (tanh, sigmoid, softmax, LayerNorm) under one
 * ATen CPU capability (tools/golden_kernels.py --capability C), each the reference of one attn
 * path: the scalar path reproduces ATEN_CPU_CAPABILITY=default, the avx512 path (AVX2
 * instructions) ATEN_CPU_CAPABILITY=avx512. Touching no BLAS, they hold on every x86-64
 * machine with the same C library (whose expf/tanhf the scalar code calls). */
typedef struct kp_golden {
    const char *path, *file, *capability;
} kp_golden;
static const kp_golden kp_goldens[] = {
    {"scalar", "weights/golden/kernels_default.json", "default"},
    {"avx512", "weights/golden/kernels_avx512.json", "avx512"},
};
#define KP_GOLDEN_COUNT ((int)(sizeof kp_goldens / sizeof *kp_goldens))

/* Makes the path of kp_goldens[g] active; false (skipped, with a line) when this machine
 * cannot run it. */
static inline bool kp_golden_select(int g) {
    ck_assert_int_ge(g, 0);
    ck_assert_int_lt(g, KP_GOLDEN_COUNT);
    if (!kp_wanted(kp_goldens[g].path)) return false;
    if (!attn_cpu_path_supported(kp_goldens[g].path)) {
        printf("  %s kernels: not supported by this CPU or build, skipped\n", kp_goldens[g].path);
        return false;
    }
    ck_assert(attn_cpu_select(kp_goldens[g].path));
    return true;
}

/* True when golden's ops that call libm (tanh, sigmoid, softmax) must be bit-identical here:
 * its "libc" is this process's C library. Otherwise prints the two and `tolerance`, the check
 * used instead. */
static inline bool kp_golden_libc_matches(const cJSON *golden, const char *file,
                                          const char *tolerance) {
    const cJSON *libc = cJSON_GetObjectItemCaseSensitive(golden, "libc");
    char here[64] = "unknown";
#if defined(__GLIBC__)
    snprintf(here, sizeof here, "glibc %s", gnu_get_libc_version());
#endif
    if (cJSON_IsString(libc) && strcmp(libc->valuestring, here) == 0) return true;
    printf("  %s: made with %s, this process runs %s: checking within %s instead\n", file,
           cJSON_IsString(libc) ? libc->valuestring : "(not recorded)", here, tolerance);
    return false;
}

#endif

/* sleef_check.c -- do SLEEF's 16-lane AVX-512F tanh and exp give the bits of the 8-lane AVX2
 * ones that attn and PyTorch 1.13 call, on every float?
 *
 * The recurrent cells spend most of their non-GEMM time in Sleef_tanhf8_u10 and
 * Sleef_expf8_u10 (sigmoid). On a CPU with AVX-512F the kernels call Sleef_tanhf16_u10avx512f
 * and Sleef_expf16_u10avx512f instead (src/kernels/activations_avx512.c), which is only allowed
 * if every input gives the same output bits. This tool checks all 2^32 inputs (NaNs, infinities,
 * subnormals, both zeros included), bit for bit, and prints the count of differing inputs per
 * function with the first few; tests/kernels/test_activations.c checks a sample of the same at
 * every CTest run.
 *
 * Usage: build/bench/sleef_check [--fn tanh|exp|all] [--step S]
 *   --step S  check every S-th bit pattern only (default 1: all 2^32)
 * Exit codes: 0 identical, 1 a difference (or no AVX-512F: nothing could be checked), 2 usage.
 * Compiled with -mavx2 -mfma -mavx512f (CMakeLists.txt); it checks the CPU before running. */
#include <immintrin.h>
#include <sleef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct fn {
    const char *name;
    __m256 (*f8)(__m256);
    __m512 (*f16)(__m512);
} fn;

/* Checks f16 against f8 on the bit patterns 0, step, 2*step, ... < 2^32; returns the count of
 * inputs whose output bits differ (the first 5 printed). */
static uint64_t check(const fn *f, uint64_t step) {
    enum { N = 4096 };
    static uint32_t in[N], a[N], b[N];
    uint64_t diff = 0, done = 0;
    for (uint64_t base = 0; base < (1ull << 32);) {
        int n = 0;
        for (; n < N && base < (1ull << 32); n++, base += step) in[n] = (uint32_t)base;
        for (int i = n; i < N; i++) in[i] = 0;
        for (int i = 0; i < N; i += 16) {
            __m512 x = _mm512_loadu_ps((const float *)(in + i));
            _mm512_storeu_ps((float *)(b + i), f->f16(x));
            _mm256_storeu_ps((float *)(a + i), f->f8(_mm256_loadu_ps((const float *)(in + i))));
            _mm256_storeu_ps((float *)(a + i + 8),
                             f->f8(_mm256_loadu_ps((const float *)(in + i + 8))));
        }
        for (int i = 0; i < n; i++)
            if (a[i] != b[i] && diff++ < 5) {
                float x, ya, yb;
                memcpy(&x, &in[i], 4);
                memcpy(&ya, &a[i], 4);
                memcpy(&yb, &b[i], 4);
                printf("  %s(0x%08x = %.9g): avx2 0x%08x (%.9g), avx512f 0x%08x (%.9g)\n", f->name,
                       in[i], x, a[i], ya, b[i], yb);
            }
        done += (uint64_t)n;
    }
    printf("%-5s %llu inputs checked, %llu differ\n", f->name, (unsigned long long)done,
           (unsigned long long)diff);
    return diff;
}

int main(int argc, char **argv) {
    const char *which = "all";
    uint64_t step = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            printf("usage: sleef_check [--fn tanh|exp|all] [--step S]\n\n"
                   "Compares Sleef_tanhf16_u10avx512f / Sleef_expf16_u10avx512f with the 8-lane\n"
                   "AVX2 functions attn calls, bit for bit, on every float (or every S-th bit\n"
                   "pattern). Exit 0: identical; 1: a difference or no AVX-512F; 2: usage.\n");
            return 0;
        }
        if (strcmp(argv[i], "--fn") == 0 && i + 1 < argc) {
            which = argv[++i];
            if (strcmp(which, "tanh") && strcmp(which, "exp") && strcmp(which, "all")) {
                fprintf(stderr, "sleef_check: --fn %s: expected tanh, exp or all\n", which);
                return 2;
            }
        } else if (strcmp(argv[i], "--step") == 0 && i + 1 < argc) {
            char *end;
            long long s = strtoll(argv[++i], &end, 10);
            if (*end || s < 1 || s > (1ll << 32)) {
                fprintf(stderr, "sleef_check: --step %s: expected an integer in 1..2^32\n",
                        argv[i]);
                return 2;
            }
            step = (uint64_t)s;
        } else {
            fprintf(stderr, "sleef_check: unknown option '%s' (see --help)\n", argv[i]);
            return 2;
        }
    }
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx2") ||
        !__builtin_cpu_supports("fma")) {
        fprintf(stderr,
                "sleef_check: this CPU has no AVX-512F (or no AVX2+FMA): nothing checked\n");
        return 1;
    }
    const fn fns[] = {{"tanh", Sleef_tanhf8_u10, Sleef_tanhf16_u10avx512f},
                      {"exp", Sleef_expf8_u10, Sleef_expf16_u10avx512f}};
    uint64_t diff = 0;
    for (size_t k = 0; k < sizeof fns / sizeof fns[0]; k++) {
        if (strcmp(which, "all") && strcmp(which, fns[k].name)) continue;
        clock_t c0 = clock();
        diff += check(&fns[k], step);
        printf("      (%.1f s of CPU)\n", (double)(clock() - c0) / CLOCKS_PER_SEC);
    }
    return diff ? 1 : 0;
}

/* test_sleef_avx512.c -- SLEEF's 16-lane AVX-512F tanh and exp against the 8-lane AVX2 ones
 * attn and PyTorch call, bit for bit, on a sample of the 2^32 floats (bench/sleef_check runs all
 * of them: 0 differ on this machine), and the kernels built on them (attn_tanh_forward_avx512f,
 * attn_sigmoid_forward_avx512f) against their avx2 twins on every length 1..70, tails included.
 * A CPU without AVX-512F (or AVX2+FMA) runs none of this: the program exits 77, which CTest
 * reports as skipped. Compiled with -mavx2 -mfma -mavx512f (CMakeLists.txt). */
#include "kernels_internal.h"
#include "test_util.h"

#if ATTN_HAVE_AVX2_KERNELS && defined(__AVX512F__)
#include <immintrin.h>
#include <sleef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The sampled bit patterns: every 2^32/2^17-th from a random start (all exponents, both
 * signs, NaN payloads), 2^17 random ones, and the ends of the ranges where tanh and exp
 * saturate, overflow and underflow. */
static size_t sample(uint32_t *in, size_t cap) {
    attn_rng rng = attn_rng_seed(0x51eefu);
    size_t n = 0;
    const uint32_t start = (uint32_t)attn_rng_next(&rng) & 0x7fffu;
    for (uint64_t u = start; u < (1ull << 32) && n < cap; u += 1u << 15) in[n++] = (uint32_t)u;
    for (size_t i = 0; i < (1u << 17) && n < cap; i++) in[n++] = (uint32_t)attn_rng_next(&rng);
    for (uint32_t k = 0; k < 4096 && n + 4 <= cap; k++) {
        in[n++] = 0x42b00000u + k * 64;   /* exp near overflow (88.x) */
        in[n++] = 0xc2c80000u + k * 64;   /* exp near underflow (-100.x) */
        in[n++] = 0x41000000u + k * 512;  /* tanh saturating (8..) */
        in[n++] = 0x33000000u + k * 4096; /* tiny */
    }
    while (n % 16) in[n++] = 0;
    return n;
}

START_TEST(test_sleef16_matches_sleef8) {
    const size_t cap = (1u << 17) * 2 + 4 * 4096 + 16;
    uint32_t *in = malloc(cap * sizeof *in), *a = malloc(cap * sizeof *a),
             *b = malloc(cap * sizeof *b);
    ck_assert(in && a && b);
    const size_t n = sample(in, cap);
    for (int f = 0; f < 2; f++) {
        for (size_t i = 0; i < n; i += 16) {
            __m512 x16 = _mm512_loadu_ps((const float *)(in + i));
            __m256 lo = _mm256_loadu_ps((const float *)(in + i));
            __m256 hi = _mm256_loadu_ps((const float *)(in + i + 8));
            if (f == 0) {
                _mm512_storeu_ps((float *)(b + i), Sleef_tanhf16_u10avx512f(x16));
                _mm256_storeu_ps((float *)(a + i), Sleef_tanhf8_u10(lo));
                _mm256_storeu_ps((float *)(a + i + 8), Sleef_tanhf8_u10(hi));
            } else {
                _mm512_storeu_ps((float *)(b + i), Sleef_expf16_u10avx512f(x16));
                _mm256_storeu_ps((float *)(a + i), Sleef_expf8_u10(lo));
                _mm256_storeu_ps((float *)(a + i + 8), Sleef_expf8_u10(hi));
            }
        }
        size_t differ = 0, first = n;
        for (size_t i = 0; i < n; i++)
            if (a[i] != b[i] && differ++ == 0) first = i;
        ck_assert_msg(differ == 0, "%s: %zu of %zu inputs differ, first 0x%08x: 0x%08x vs 0x%08x",
                      f ? "exp" : "tanh", differ, n, in[first], a[first], b[first]);
        printf("  %s: 16 lanes = 8 lanes on %zu sampled inputs\n", f ? "exp" : "tanh", n);
    }
    /* not vacuous: the functions compared are tanh and exp */
    float one[16];
    _mm512_storeu_ps(one, Sleef_tanhf16_u10avx512f(_mm512_set1_ps(1.0f)));
    ck_assert_float_eq_tol(one[0], 0.7615941559f, 1e-6f);
    _mm512_storeu_ps(one, Sleef_expf16_u10avx512f(_mm512_set1_ps(1.0f)));
    ck_assert_float_eq_tol(one[0], 2.7182817f, 1e-6f);
    free(in), free(a), free(b);
}
END_TEST

/* The kernels on every length 1..70 (tails: masked 16 lanes against zero-padded 8 lanes;
 * sigmoid's glibc tail with blocks of 16 and of 32), inputs in [-12, 12] and specials;
 * nothing written past the end. */
START_TEST(test_avx512f_kernels_match_avx2) {
    attn_rng rng = attn_rng_seed(77);
    float x[80], got[82], want[80];
    const float sentinel = attn_f32_from_bits(0x7fc0deadu);
    for (int len = 1; len <= 70; len++) {
        for (int i = 0; i < len; i++)
            x[i] = i % 11 == 3 ? attn_f32_from_bits(0x7f800000u ^ (uint32_t)(i & 1) << 31)
                               : attn_rng_uniform_range(&rng, -12.0f, 12.0f);
        for (int op = 0; op < 3; op++) {
            for (int i = 0; i < 82; i++) got[i] = sentinel;
            if (op == 0) {
                attn_tanh_forward_avx512f(got + 1, x, (size_t)len);
                attn_tanh_forward_avx2(want, x, (size_t)len);
            } else if (op == 1) {
                attn_sigmoid_forward_avx512f(got + 1, x, (size_t)len, 16);
                attn_sigmoid_forward_avx2(want, x, (size_t)len);
            } else {
                attn_sigmoid_forward_avx512f(got + 1, x, (size_t)len, 32);
                attn_sigmoid_forward_avx512(want, x, (size_t)len);
            }
            ck_assert_msg(memcmp(got + 1, want, (size_t)len * sizeof *x) == 0,
                          "op %d length %d: the 16-lane kernel differs", op, len);
            ck_assert(memcmp(&got[0], &sentinel, sizeof sentinel) == 0);
            for (int i = len + 1; i < 82; i++)
                ck_assert_msg(memcmp(&got[i], &sentinel, sizeof sentinel) == 0,
                              "op %d length %d: wrote past the end", op, len);
        }
    }
}
END_TEST

static Suite *sleef_suite(void) {
    Suite *s = suite_create("sleef_avx512");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_sleef16_matches_sleef8);
    tcase_add_test(tc, test_avx512f_kernels_match_avx2);
    suite_add_tcase(s, tc);
    return s;
}

#endif

int main(void) {
#if ATTN_HAVE_AVX2_KERNELS && defined(__AVX512F__)
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f") || !attn_cpu_has_avx2_fma()) {
        printf("sleef_avx512: this CPU has no AVX-512F (or no AVX2+FMA): skipped\n");
        return 77;
    }
    return tu_run_suite(sleef_suite());
#else
    printf("sleef_avx512: not an x86-64 build with AVX-512F code: skipped\n");
    return 77;
#endif
}

/* test_float_text.c -- attn_io_format_float (src/io/float_text.c) writes exactly what glibc's
 * printf("%.9g", (double)x) writes: zeros, subnormals, the largest floats, Inf/NaN, every power
 * of two and of ten and their neighbours, the %f/%e switch at 1e-5 and 1e9, every value that
 * rounds up to a power of ten, exact ties at the tenth digit, every float of [0.5, 1) whose
 * low 12 bits are zero, and random bit patterns (2 million; 200,000 under the sanitizers). */
#include "io_internal.h"
#include "test_util.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __SANITIZE_ADDRESS__
#define N_RANDOM 200000L
#else
#define N_RANDOM 2000000L
#endif

static float from_bits(uint32_t b) {
    float x;
    memcpy(&x, &b, sizeof x);
    return x;
}

static uint32_t to_bits(float x) {
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

/* 1 if the two writers disagree on x (and says so), else 0. */
static int differs(float x) {
    char want[64], got[ATTN_IO_FLOAT_TEXT_MAX];
    const int n_want = snprintf(want, sizeof want, "%.9g", (double)x);
    const int n_got = attn_io_format_float(got, x);
    if (n_want == n_got && strcmp(want, got) == 0) return 0;
    fprintf(stderr, "float 0x%08x: printf \"%s\", attn_io_format_float \"%s\" (%d)\n", to_bits(x),
            want, got, n_got);
    return 1;
}

/* x and its 8 neighbours on each side, both signs. */
static int neighbourhood(float x) {
    int bad = 0;
    const uint32_t b = to_bits(fabsf(x));
    for (int d = -8; d <= 8; d++) {
        const uint32_t nb = b + (uint32_t)d;
        if ((int32_t)nb < 0 && d < 0) continue;
        bad += differs(from_bits(nb)) + differs(-from_bits(nb));
    }
    return bad;
}

START_TEST(test_edges) {
    int bad = 0, n = 0;
    const float special[] = {0.0f,    -0.0f,           INFINITY,      -INFINITY,
                             FLT_MIN, FLT_MAX,         FLT_TRUE_MIN,  1e-23f,
                             1e-24f,  9.99999997e-24f, 1.70141183e38f};
    for (size_t i = 0; i < sizeof special / sizeof *special; i++, n++) bad += differs(special[i]);
    for (int e = -149; e <= 127; e++, n += 34) bad += neighbourhood(ldexpf(1.0f, e));
    for (int k = -45; k <= 38; k++, n += 34) bad += neighbourhood((float)pow(10.0, k));
    /* 9.99999995e(k) rounds up to 1e(k+1): the values around it */
    for (int k = -40; k <= 37; k++) {
        char text[32];
        snprintf(text, sizeof text, "9.99999995e%d", k);
        bad += neighbourhood(strtof(text, NULL));
        n += 34;
    }
    ck_assert_msg(bad == 0, "%d of %d edge values differ from printf", bad, n);
    printf("float text: %d edge values as printf writes them\n", n);
}
END_TEST

/* m * 2^-j whose decimal expansion has exactly ten significant digits ending in 5: the tie
 * cases of rounding to nine digits (printf rounds them half to even). */
START_TEST(test_ties) {
    int bad = 0, ties = 0;
    for (int j = 1; j <= 60; j++)
        for (uint32_t m = 1; m < (1u << 24); m += 1 + m / 64) {
            const float x = ldexpf((float)m, -j);
            char full[80];
            snprintf(full, sizeof full, "%.40e", (double)x);
            /* digits: full[0], full[2..]; a tie if digit 10 is 5 and the rest 0 */
            if (full[11] != '5') continue;
            bool rest_zero = true;
            for (const char *p = full + 12; *p && *p != 'e'; p++) rest_zero &= *p == '0';
            if (!rest_zero) continue;
            ties++;
            bad += differs(x) + differs(-x);
        }
    ck_assert_msg(bad == 0, "%d of %d tie values differ from printf", bad, ties);
    ck_assert_msg(ties > 100, "only %d ties found: the search is broken", ties);
    printf("float text: %d exact ties rounded as printf rounds them\n", ties);
}
END_TEST

START_TEST(test_dense_and_random) {
    int bad = 0;
    long n = 0;
    for (uint32_t b = to_bits(0.5f); b < to_bits(1.0f); b += 4096, n++)
        bad += differs(from_bits(b));
    uint64_t s = 0x9e3779b97f4a7c15u;
    for (long i = 0; i < N_RANDOM; i++, n++) {
        s ^= s << 13; /* xorshift64 */
        s ^= s >> 7;
        s ^= s << 17;
        bad += differs(from_bits((uint32_t)(s >> 32)));
        if (bad > 20) break;
    }
    ck_assert_msg(bad == 0, "%d of %ld values differ from printf", bad, n);
    printf("float text: %ld dense and random values as printf writes them\n", n);
}
END_TEST

int main(void) {
    Suite *s = suite_create("io/float_text");
    TCase *tc = tcase_create("float_text");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_edges);
    tcase_add_test(tc, test_ties);
    tcase_add_test(tc, test_dense_and_random);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}

/* test_verdict.c -- attn_accuracy_verdict_of: the Wilson 95 % interval against the published
 * values of Newcombe (1998, Stat. Med. 17:857, table II: 81/263 -> 0.2553-0.3662, 15/148 ->
 * 0.0624-0.1605, 0/20 -> 0-0.1611, 1/29 -> 0.0061-0.1718), the majority baseline and the
 * chance flag. */
#include "test_util.h"

#include <math.h>

static attn_accuracy_verdict verdict(int correct, int n, int n_positive) {
    attn_accuracy_verdict v;
    attn_error err = {0};
    ck_assert_int_eq(attn_accuracy_verdict_of(correct, n, n_positive, &v, &err), ATTN_OK);
    return v;
}

START_TEST(wilson_published) {
    static const struct {
        int x, n;
        double lo, hi;
    } cases[] = {{81, 263, 0.2553, 0.3662},
                 {15, 148, 0.0624, 0.1605},
                 {0, 20, 0.0, 0.1611},
                 {1, 29, 0.0061, 0.1718}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        attn_accuracy_verdict v = verdict(cases[i].x, cases[i].n, 0);
        ck_assert_msg(fabs(v.lo - cases[i].lo) < 6e-5 && fabs(v.hi - cases[i].hi) < 6e-5,
                      "%d/%d: %.5f-%.5f, published %.4f-%.4f", cases[i].x, cases[i].n, v.lo, v.hi,
                      cases[i].lo, cases[i].hi);
        ck_assert(v.lo <= v.accuracy && v.accuracy <= v.hi);
    }
}
END_TEST

START_TEST(baseline_and_chance) {
    /* 21 of 40 with 20 positive: 52.5 % in 37.5-67.1 %, which holds the 50 % baseline */
    attn_accuracy_verdict v = verdict(21, 40, 20);
    ck_assert_double_eq_tol(v.accuracy, 0.525, 1e-12);
    ck_assert_double_eq_tol(v.baseline, 0.5, 1e-12);
    ck_assert(v.chance);
    /* 36 of 40: the interval (76.9-96.0 %) is above the baseline */
    v = verdict(36, 40, 13);
    ck_assert_double_eq_tol(v.baseline, 27.0 / 40, 1e-12);
    ck_assert(!v.chance);
    /* 30 of 40 against a 70 % majority (28 negative): not distinguishable */
    v = verdict(30, 40, 12);
    ck_assert_double_eq_tol(v.baseline, 0.7, 1e-12);
    ck_assert(v.chance);
    /* all right on 10: the upper bound stays at 1, the lower is published 0.7225 */
    v = verdict(10, 10, 5);
    ck_assert(v.hi <= 1.0 && fabs(v.lo - 0.7225) < 6e-5);
    ck_assert(!v.chance);
    /* below the baseline is chance too */
    v = verdict(5, 100, 50);
    ck_assert(v.chance);
}
END_TEST

START_TEST(bad_counts) {
    attn_accuracy_verdict v;
    attn_error err = {0};
    ck_assert_int_eq(attn_accuracy_verdict_of(1, 0, 0, &v, &err), ATTN_ERR_VALUE);
    ck_assert_int_eq(attn_accuracy_verdict_of(5, 4, 0, &v, &err), ATTN_ERR_VALUE);
    ck_assert_int_eq(attn_accuracy_verdict_of(2, 4, 5, &v, &err), ATTN_ERR_VALUE);
    ck_assert_int_eq(attn_accuracy_verdict_of(-1, 4, 0, &v, &err), ATTN_ERR_VALUE);
}
END_TEST

int main(void) {
    Suite *s = suite_create("verdict");
    TCase *tc = tcase_create("verdict");
    tcase_add_test(tc, wilson_published);
    tcase_add_test(tc, baseline_and_chance);
    tcase_add_test(tc, bad_counts);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}

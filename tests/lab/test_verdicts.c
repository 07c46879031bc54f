/* test_verdicts.c -- the experiments' verdict rules on fixed numbers, without running an
 * experiment: each rule (exp_<name>_verdict, experiments_internal.h) gets measurements made up
 * here on either side of its thresholds and must give holds, mixed or does not hold as its
 * rule says, with the numbers in its why. Fast, so it runs in every stage (the quick runs
 * themselves are lab/test_experiments_cli, label slow). */
#include "experiments_internal.h"
#include "test_util.h"

#include <math.h>
#include <string.h>

static attn_experiment_result result(void) {
    attn_experiment_result r;
    memset(&r, 0, sizeof r);
    return r;
}

static void put(attn_experiment_result *r, const char *name, double v) {
    attn_error err;
    ck_assert_msg(exp_put(r, name, v, &err) == ATTN_OK, "%s", err.msg);
}

/* ---- convolution: bias error <= 1e-5 (with positions); equal-input gap <= 1e-6 and bound
 * > 1e-2 (without) ---- */
static attn_verdict convolution(double rel_sharpest, double rel_equal, double rel_bound, char *why,
                                size_t why_n) {
    attn_experiment_result r = result();
    attn_error err;
    const double alpha[] = {0.0, 1.0, 128.0};
    ck_assert(exp_put_array(&r, "alpha", 3, alpha, &err) == ATTN_OK);
    put(&r, "rel_error_sharpest", rel_sharpest);
    put(&r, "no_position.rel_equal_input_output_difference", rel_equal);
    put(&r, "no_position.rel_lower_bound", rel_bound);
    exp_convolution_verdict(&r);
    snprintf(why, why_n, "%s", r.why);
    const attn_verdict v = r.verdict;
    attn_experiment_result_free(&r);
    return v;
}

START_TEST(test_convolution_rule) {
    char why[1024];
    ck_assert_int_eq(convolution(1e-6, 0.0, 0.5, why, sizeof why), ATTN_VERDICT_HOLDS);
    ck_assert_msg(strstr(why, "alpha = 128") && strstr(why, "1e-06 x max|y| (<= 1e-5)"), "%s", why);
    ck_assert_int_eq(convolution(1e-5, 1e-6, 0.0101, why, sizeof why), ATTN_VERDICT_HOLDS);
    ck_assert_int_eq(convolution(2e-5, 0.0, 0.5, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_msg(strstr(why, "(> 1e-5)"), "%s", why);
    ck_assert_int_eq(convolution(1e-6, 2e-6, 0.5, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_int_eq(convolution(1e-6, 0.0, 0.01, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_msg(strstr(why, "(<= 1e-2)"), "%s", why);
    ck_assert_int_eq(convolution(1e-3, 1e-3, 0.5, why, sizeof why), ATTN_VERDICT_DOES_NOT_HOLD);
    ck_assert_int_eq(convolution(NAN, 0.0, 0.5, why, sizeof why), ATTN_VERDICT_MIXED);
}
END_TEST

/* ---- extrapolation: sinusoidal drops >= 5 points, rope and alibi both < 5 ---- */
static attn_verdict extrapolation(double sinusoidal, double rope, double alibi, char *why,
                                  size_t why_n) {
    attn_experiment_result r = result();
    put(&r, "learned.drop_points", 30.0);
    put(&r, "sinusoidal.drop_points", sinusoidal);
    put(&r, "rope.drop_points", rope);
    put(&r, "alibi.drop_points", alibi);
    put(&r, "none.drop_points", 0.5);
    exp_extrapolation_verdict(&r);
    snprintf(why, why_n, "%s", r.why);
    const attn_verdict v = r.verdict;
    attn_experiment_result_free(&r);
    return v;
}

START_TEST(test_extrapolation_rule) {
    char why[1024];
    ck_assert_int_eq(extrapolation(12.0, 1.0, 4.9, why, sizeof why), ATTN_VERDICT_HOLDS);
    ck_assert_msg(strstr(why, "sinusoidal 12.0 points (>= 5)") &&
                      strstr(why, "rope 1.0 and alibi 4.9 (both < 5)") &&
                      strstr(why, "learned 30.0, none 0.5"),
                  "%s", why);
    ck_assert_int_eq(extrapolation(5.0, 0.0, 0.0, why, sizeof why), ATTN_VERDICT_HOLDS);
    ck_assert_int_eq(extrapolation(4.9, 0.0, 0.0, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_int_eq(extrapolation(12.0, 5.0, 0.0, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_msg(strstr(why, "(not both < 5)"), "%s", why);
    ck_assert_int_eq(extrapolation(1.0, 0.0, 6.0, why, sizeof why), ATTN_VERDICT_DOES_NOT_HOLD);
}
END_TEST

int main(void) {
    Suite *s = suite_create("lab/verdicts");
    TCase *tc = tcase_create("verdicts");
    tcase_add_test(tc, test_convolution_rule);
    tcase_add_test(tc, test_extrapolation_rule);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}

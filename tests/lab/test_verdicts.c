/* test_verdicts.c -- the experiments' verdict rules on fixed numbers, without running an
 * experiment: each rule (exp_<name>_verdict, experiments_internal.h) gets measurements made up
 * here on either side of its thresholds and must give holds, mixed or does not hold as its
 * rule says, with the numbers in its why: convolution, extrapolation, scaling, norm,
 * path-length, equivariance, parallel, heads and embedding (its rule reads the per-model
 * measurements: their sums and the most uniform model's). Fast, so it runs in every stage
 * (the quick runs themselves are lab/test_experiments_cli, label slow). */
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

/* ---- scaling: unscaled stalls (loss not below scaled + 0.05, NaN = stalled, accuracy lower
 * by >= 0.02) and saturates (largest probability higher by > 0.05) ---- */
static attn_verdict scaling(double loss_unscaled, double acc_unscaled, double sat_unscaled,
                            char *why, size_t why_n) {
    attn_experiment_result r = result();
    put(&r, "scaled.final_loss", 0.30);
    put(&r, "unscaled.final_loss", loss_unscaled);
    put(&r, "scaled.final_saturation", 0.60);
    put(&r, "unscaled.final_saturation", sat_unscaled);
    put(&r, "scaled.mean_accuracy", 0.90);
    put(&r, "unscaled.mean_accuracy", acc_unscaled);
    exp_scaling_verdict(&r);
    snprintf(why, why_n, "%s", r.why);
    const attn_verdict v = r.verdict;
    attn_experiment_result_free(&r);
    return v;
}

START_TEST(test_scaling_rule) {
    char why[1024];
    ck_assert_int_eq(scaling(0.69, 0.50, 0.99, why, sizeof why), ATTN_VERDICT_HOLDS);
    ck_assert_msg(strstr(why, "0.6900 against 0.3000") && strstr(why, "0.500 against 0.900") &&
                      strstr(why, "0.990 against 0.600"),
                  "%s", why);
    ck_assert_int_eq(scaling(NAN, 0.50, 0.99, why, sizeof why), ATTN_VERDICT_HOLDS);
    ck_assert_int_eq(scaling(0.34, 0.50, 0.99, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_int_eq(scaling(0.69, 0.89, 0.99, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_int_eq(scaling(0.69, 0.50, 0.65, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_int_eq(scaling(0.31, 0.90, 0.61, why, sizeof why), ATTN_VERDICT_DOES_NOT_HOLD);
    ck_assert_msg(strstr(why, "stalls") && strstr(why, ": no)"), "%s", why);
}
END_TEST

/* ---- norm: some run learnt (>= 0.75); post-norm needs warm-up at depth (gain >= 0.05, more
 * than when shallow), pre-norm does not (< 0.05 everywhere) ---- */
static attn_verdict norm(double best, double post_shallow, double post_deep, double pre_deep,
                         char *why, size_t why_n) {
    attn_experiment_result r = result();
    attn_error err;
    const double layers[] = {2, 6}, post[] = {post_shallow, post_deep}, pre[] = {0.01, pre_deep};
    ck_assert(exp_put_array(&r, "layers", 2, layers, &err) == ATTN_OK);
    ck_assert(exp_put_array(&r, "post.warmup_gain", 2, post, &err) == ATTN_OK);
    ck_assert(exp_put_array(&r, "pre.warmup_gain", 2, pre, &err) == ATTN_OK);
    put(&r, "best_mean_accuracy", best);
    exp_norm_verdict(&r);
    snprintf(why, why_n, "%s", r.why);
    const attn_verdict v = r.verdict;
    attn_experiment_result_free(&r);
    return v;
}

START_TEST(test_norm_rule) {
    char why[1024];
    ck_assert_int_eq(norm(0.95, 0.01, 0.20, 0.02, why, sizeof why), ATTN_VERDICT_HOLDS);
    ck_assert_msg(strstr(why, "+0.010 at 2 layers and +0.200 at 6 layers") &&
                      strstr(why, "largest change is +0.020"),
                  "%s", why);
    ck_assert_int_eq(norm(0.74, 0.01, 0.20, 0.02, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_msg(strstr(why, "0.740 mean test accuracy (< 0.75)"), "%s", why);
    ck_assert_int_eq(norm(0.95, 0.30, 0.20, 0.02, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_int_eq(norm(0.95, 0.01, 0.20, 0.06, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_int_eq(norm(0.95, 0.01, 0.04, 0.02, why, sizeof why), ATTN_VERDICT_DOES_NOT_HOLD);
}
END_TEST

/* ---- path-length: the Transformer flat (>= 0.1 before and after), the LSTM's path opens
 * (after > before and > the RNN's after) ---- */
static attn_verdict path_length(double tf_before, double tf_after, double lstm_after, char *why,
                                size_t why_n) {
    attn_experiment_result r = result();
    put(&r, "T", 60);
    put(&r, "rnn.before.farthest", 1e-3);
    put(&r, "rnn.after.farthest", 2e-3);
    put(&r, "lstm.before.farthest", 1e-2);
    put(&r, "lstm.after.farthest", lstm_after);
    put(&r, "gru.before.farthest", 5e-3);
    put(&r, "gru.after.farthest", 6e-3);
    put(&r, "transformer.before.farthest", tf_before);
    put(&r, "transformer.after.farthest", tf_after);
    exp_path_length_verdict(&r);
    snprintf(why, why_n, "%s", r.why);
    const attn_verdict v = r.verdict;
    attn_experiment_result_free(&r);
    return v;
}

START_TEST(test_path_length_rule) {
    char why[1024];
    ck_assert_int_eq(path_length(0.5, 0.3, 0.05, why, sizeof why), ATTN_VERDICT_HOLDS);
    ck_assert_msg(strstr(why, "word 59 steps back") && strstr(why, "lstm 0.01 -> 0.05") &&
                      strstr(why, "transformer 0.5 -> 0.3") && strstr(why, "flat (>= 0.1"),
                  "%s", why);
    ck_assert_int_eq(path_length(0.1, 0.1, 0.05, why, sizeof why), ATTN_VERDICT_HOLDS);
    ck_assert_int_eq(path_length(0.5, 0.09, 0.05, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_int_eq(path_length(0.5, 0.3, 0.01, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_int_eq(path_length(0.5, 0.3, 1.5e-3, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_int_eq(path_length(0.05, 0.3, 0.005, why, sizeof why), ATTN_VERDICT_DOES_NOT_HOLD);
}
END_TEST

/* ---- equivariance: without positions logit <= 1e-4 and attention <= 1e-5 apart; with
 * positions every model's order matters (> 1e-2) ---- */
static attn_verdict equivariance(double none_logit, double none_attention, double pos_min,
                                 char *why, size_t why_n) {
    attn_experiment_result r = result();
    put(&r, "without_positions.max_logit_change", none_logit);
    put(&r, "without_positions.max_attention_difference", none_attention);
    put(&r, "with_positions.min_of_max_logit_change", pos_min);
    exp_equivariance_verdict(&r);
    snprintf(why, why_n, "%s", r.why);
    const attn_verdict v = r.verdict;
    attn_experiment_result_free(&r);
    return v;
}

START_TEST(test_equivariance_rule) {
    char why[1024];
    ck_assert_int_eq(equivariance(1e-4, 1e-5, 0.02, why, sizeof why), ATTN_VERDICT_HOLDS);
    ck_assert_msg(strstr(why, "at most 0.0001 (<= 1e-4)") && strstr(why, "at least 0.02"), "%s",
                  why);
    ck_assert_int_eq(equivariance(2e-4, 0.0, 0.02, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_int_eq(equivariance(0.0, 2e-5, 0.02, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_int_eq(equivariance(0.0, 0.0, 0.01, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_msg(strstr(why, "(<= 1e-2)"), "%s", why);
    ck_assert_int_eq(equivariance(1.0, 0.0, 0.0, why, sizeof why), ATTN_VERDICT_DOES_NOT_HOLD);
}
END_TEST

/* ---- parallel (a timing experiment: its numbers vary, its rule must not): recurrent slopes
 * >= 0.8 at batch 1 and 256; the Transformer's at batch 1 <= the smaller recurrent one - 0.2 ----
 */
static attn_verdict parallel(double rnn1, double lstm256, double tf1, char *why, size_t why_n) {
    attn_experiment_result r = result();
    put(&r, "rnn.batch1.slope", rnn1);
    put(&r, "rnn.batch256.slope", 1.1);
    put(&r, "lstm.batch1.slope", 0.95);
    put(&r, "lstm.batch256.slope", lstm256);
    put(&r, "transformer.batch1.slope", tf1);
    put(&r, "transformer.batch256.slope", 1.3);
    put(&r, "transformer.work_slope", 1.5);
    exp_parallel_verdict(&r);
    snprintf(why, why_n, "%s", r.why);
    const attn_verdict v = r.verdict;
    attn_experiment_result_free(&r);
    return v;
}

START_TEST(test_parallel_rule) {
    char why[1024];
    ck_assert_int_eq(parallel(0.9, 1.0, 0.5, why, sizeof why), ATTN_VERDICT_HOLDS);
    ck_assert_msg(strstr(why, "RNN 0.90 / 1.10, LSTM 0.95 / 1.00") &&
                      strstr(why, "Transformer 0.50 at batch 1 (<= the recurrent minimum 0.90") &&
                      strstr(why, "1.30 at batch 256, its work growing with slope 1.50"),
                  "%s", why);
    ck_assert_int_eq(parallel(0.9, 1.0, 0.7, why, sizeof why), ATTN_VERDICT_HOLDS);
    ck_assert_int_eq(parallel(0.79, 1.0, 0.5, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_msg(strstr(why, "(not all >= 0.8)"), "%s", why);
    ck_assert_int_eq(parallel(0.9, 1.0, 0.75, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_int_eq(parallel(0.9, 0.5, 0.9, why, sizeof why), ATTN_VERDICT_DOES_NOT_HOLD);
}
END_TEST

/* ---- heads: learnt (>= 0.75); many redundant (>= 50 % cost < 0.02 each, half removed costs
 * < 0.02); one head per layer suffices (< 0.02) ---- */
static attn_verdict heads(double full, double redundant, double half_drop, double layer_drop,
                          char *why, size_t why_n) {
    attn_experiment_result r = result();
    attn_error err;
    const double acc[] = {0.80, 0.85, 0.90, 0.91};
    const double counts[] = {1, 2, 4, 8};
    ck_assert(exp_put_array(&r, "mean_accuracy", 4, acc, &err) == ATTN_OK);
    ck_assert(exp_put_array(&r, "head_counts", 4, counts, &err) == ATTN_OK);
    if (!isnan(full)) put(&r, "pruned_model.full_accuracy", full);
    put(&r, "pruned_model.fraction_redundant", redundant);
    put(&r, "pruned_model.greedy.drop_at_half", half_drop);
    put(&r, "pruned_model.one_head_per_layer.smallest_drop", layer_drop);
    exp_heads_verdict(&r);
    snprintf(why, why_n, "%s", r.why);
    const attn_verdict v = r.verdict;
    attn_experiment_result_free(&r);
    return v;
}

START_TEST(test_heads_rule) {
    char why[1024];
    ck_assert_int_eq(heads(0.95, 0.75, 0.01, 0.015, why, sizeof why), ATTN_VERDICT_HOLDS);
    ck_assert_msg(strstr(why, "test accuracy 0.950") && strstr(why, "75% of the heads") &&
                      strstr(why, "1 heads 0.800, 2 heads 0.850, 4 heads 0.900, 8 heads 0.910"),
                  "%s", why);
    ck_assert_int_eq(heads(0.95, 0.5, 0.01, 0.015, why, sizeof why), ATTN_VERDICT_HOLDS);
    ck_assert_int_eq(heads(0.95, 0.4, 0.01, 0.015, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_int_eq(heads(0.95, 0.75, 0.02, 0.015, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_int_eq(heads(0.95, 0.75, 0.01, 0.02, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_int_eq(heads(0.95, 0.1, 0.2, 0.3, why, sizeof why), ATTN_VERDICT_DOES_NOT_HOLD);
    ck_assert_int_eq(heads(0.70, 0.75, 0.01, 0.015, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_msg(strstr(why, "reaches only 0.700 mean test accuracy (< 0.75)"), "%s", why);
    /* no pruned model (it diverged): not learnt, its accuracy 0 */
    ck_assert_int_eq(heads(NAN, 0.0, 0.0, 0.0, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_msg(strstr(why, "reaches only 0.000"), "%s", why);
}
END_TEST

/* ---- embedding: every model's one-hot product bit-identical to the lookup (sums over the
 * models) and the most uniform model's rows not normalised (dev > 0.05 and max/min > 1.1) ---- */
static attn_verdict embedding(long logits_differing, double dev_lstm, double ratio_lstm, char *why,
                              size_t why_n) {
    attn_experiment_result r = result();
    static const char *const archs[] = {"rnn", "lstm", "transformer"};
    for (int a = 0; a < 3; a++) {
        char name[64];
        const bool lstm = a == 1;
#define PUT(suffix, v) (snprintf(name, sizeof name, "%s.%s", archs[a], suffix), put(&r, name, v))
        PUT("max_abs_norm_minus_1", lstm ? dev_lstm : 2.0 + a);
        PUT("norm_max_over_min", lstm ? ratio_lstm : 5.0 + a);
        PUT("onehot_table_values_differing", 0.0);
        PUT("onehot_input_values_differing", 0.0);
        PUT("onehot_logits_differing", a == 2 ? (double)logits_differing : 0.0);
        PUT("sentences_checked", 100.0);
#undef PUT
    }
    exp_embedding_verdict(&r);
    snprintf(why, why_n, "%s", r.why);
    const attn_verdict v = r.verdict;
    attn_experiment_result_free(&r);
    return v;
}

START_TEST(test_embedding_rule) {
    char why[1024];
    ck_assert_int_eq(embedding(0, 0.5, 1.5, why, sizeof why), ATTN_VERDICT_HOLDS);
    ck_assert_msg(strstr(why, "0 table values, 0 input values and 0 of 300 logits") &&
                      strstr(why, "rows are not normalised") &&
                      strstr(why, "up to 0.5 (> 0.05) and max/min = 1.5 (> 1.1)"),
                  "%s", why);
    /* the most uniform model decides: the LSTM's rows (the others far from 1) */
    ck_assert_int_eq(embedding(0, 0.05, 1.5, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_msg(strstr(why, "rows are normalised") && strstr(why, "(<= 0.05)"), "%s", why);
    ck_assert_int_eq(embedding(0, 0.5, 1.1, why, sizeof why), ATTN_VERDICT_MIXED);
    /* one logit off in one model is no lookup */
    ck_assert_int_eq(embedding(1, 0.5, 1.5, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_msg(strstr(why, "1 of 300 logits"), "%s", why);
    ck_assert_int_eq(embedding(3, 0.01, 1.01, why, sizeof why), ATTN_VERDICT_DOES_NOT_HOLD);
}
END_TEST

int main(void) {
    Suite *s = suite_create("lab/verdicts");
    TCase *tc = tcase_create("verdicts");
    tcase_add_test(tc, test_convolution_rule);
    tcase_add_test(tc, test_extrapolation_rule);
    tcase_add_test(tc, test_scaling_rule);
    tcase_add_test(tc, test_norm_rule);
    tcase_add_test(tc, test_path_length_rule);
    tcase_add_test(tc, test_equivariance_rule);
    tcase_add_test(tc, test_parallel_rule);
    tcase_add_test(tc, test_heads_rule);
    tcase_add_test(tc, test_embedding_rule);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}

/* test_verdicts.c -- the experiments' verdict rules on fixed numbers, without running an
 * experiment: each rule (exp_<name>_verdict, experiments_internal.h) gets measurements made up
 * here on either side of its thresholds and must give holds, mixed or does not hold as its
 * rule says, with the numbers in its why: convolution, extrapolation, scaling, norm,
 * path-length, equivariance, parallel, heads, embedding (its rule reads the per-model
 * measurements: their sums and the most uniform model's) and the decoder's causal-mask,
 * kv-cache, parallel-decoder, looking-back and alignment. Fast, so it runs in every stage
 * (the quick runs themselves are lab/test_experiments_cli, label slow). */
#include "experiments_decoder.h"
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

/* ---- causal-mask: with the mask every logit at rows <= i identical and >= 90 % of the rows
 * after i changed; without it >= 90 % of the rows <= i changed (both models) ---- */
static attn_verdict causal_mask(double trained_same, double later_changed, double unmasked_changed,
                                char *why, size_t why_n) {
    attn_experiment_result r = result();
    put(&r, "trained.masked.compared_logits", 9500);
    put(&r, "trained.masked.identical_logits", trained_same);
    put(&r, "trained.masked.later_rows", 100);
    put(&r, "trained.masked.later_rows_changed", later_changed);
    put(&r, "trained.unmasked.rows", 100);
    put(&r, "trained.unmasked.rows_changed", unmasked_changed);
    put(&r, "untrained.masked.compared_logits", 1900);
    put(&r, "untrained.masked.identical_logits", 1900);
    put(&r, "untrained.masked.later_rows", 20);
    put(&r, "untrained.masked.later_rows_changed", 20);
    put(&r, "untrained.unmasked.rows", 20);
    put(&r, "untrained.unmasked.rows_changed", 20);
    exp_causal_mask_verdict(&r);
    snprintf(why, why_n, "%s", r.why);
    const attn_verdict v = r.verdict;
    attn_experiment_result_free(&r);
    return v;
}

START_TEST(test_causal_mask_rule) {
    char why[1024];
    ck_assert_int_eq(causal_mask(9500, 100, 100, why, sizeof why), ATTN_VERDICT_HOLDS);
    ck_assert_msg(strstr(why, "trained 9500 / 9500, untrained 1900 / 1900 (all)") &&
                      strstr(why, "100 / 100 and 20 / 20 (>= 90%)") &&
                      strstr(why, "changed: trained 100 / 100, untrained 20 / 20 (>= 90%)"),
                  "%s", why);
    ck_assert_int_eq(causal_mask(9500, 90, 90, why, sizeof why), ATTN_VERDICT_HOLDS);
    /* one logit of one row moved: the mask did not hold */
    ck_assert_int_eq(causal_mask(9499, 100, 100, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_msg(strstr(why, "(not all)"), "%s", why);
    /* the change did not reach the decoder: nothing shown */
    ck_assert_int_eq(causal_mask(9500, 89, 100, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_int_eq(causal_mask(9500, 100, 89, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_msg(strstr(why, "(not both >= 90%)"), "%s", why);
    ck_assert_int_eq(causal_mask(9000, 100, 10, why, sizeof why), ATTN_VERDICT_DOES_NOT_HOLD);
    /* nothing compared is no evidence */
    ck_assert_int_eq(causal_mask(NAN, 100, 100, why, sizeof why), ATTN_VERDICT_MIXED);
}
END_TEST

/* ---- kv-cache: >= 99.9 % of the outputs the same and the cache >= 1.2x as fast ---- */
static attn_verdict kv_cache(double same, double speedup, char *why, size_t why_n) {
    attn_experiment_result r = result();
    put(&r, "sources", 4000);
    put(&r, "same_output", same);
    put(&r, "step_logits", 1000);
    put(&r, "identical_logits", 770);
    put(&r, "ulp_median", 0);
    put(&r, "ulp_p99", 24);
    put(&r, "max_abs_difference", 3.8e-6);
    put(&r, "speedup", speedup);
    exp_kv_cache_verdict(&r);
    snprintf(why, why_n, "%s", r.why);
    const attn_verdict v = r.verdict;
    attn_experiment_result_free(&r);
    return v;
}

START_TEST(test_kv_cache_rule) {
    char why[1024];
    ck_assert_int_eq(kv_cache(4000, 2.2, why, sizeof why), ATTN_VERDICT_HOLDS);
    ck_assert_msg(strstr(why, "4000 / 4000 sources (>= 99.9%)") &&
                      strstr(why, "770 / 1000 (77.0%)") && strstr(why, "99th percentile 24") &&
                      strstr(why, "2.20x as fast (>= 1.2)"),
                  "%s", why);
    ck_assert_int_eq(kv_cache(3996, 1.2, why, sizeof why), ATTN_VERDICT_HOLDS);
    ck_assert_int_eq(kv_cache(3995, 2.2, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_int_eq(kv_cache(4000, 1.19, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_msg(strstr(why, "(< 1.2)"), "%s", why);
    ck_assert_int_eq(kv_cache(3000, 0.9, why, sizeof why), ATTN_VERDICT_DOES_NOT_HOLD);
}
END_TEST

/* ---- parallel-decoder: GRU decoders one step per word, the Transformer's products constant;
 * each word adds less time to the Transformer's step than to both GRU decoders' ---- */
static attn_verdict parallel_decoder(double gru_steps_last, double tf_products_last,
                                     double tf_per_word, char *why, size_t why_n) {
    attn_experiment_result r = result();
    attn_error err;
    const double L[] = {8, 16, 32}, gru[] = {8, 16, gru_steps_last};
    const double tfp[] = {47, 47, tf_products_last}, tfs[] = {2, 2, 2};
    ck_assert(exp_put_array(&r, "target_words", 3, L, &err) == ATTN_OK);
    ck_assert(exp_put_array(&r, "seq2seq-gru.sequential_steps", 3, gru, &err) == ATTN_OK);
    ck_assert(exp_put_array(&r, "seq2seq-attn.sequential_steps", 3, L, &err) == ATTN_OK);
    ck_assert(exp_put_array(&r, "seq2seq-transformer.products_per_forward", 3, tfp, &err) ==
              ATTN_OK);
    ck_assert(exp_put_array(&r, "seq2seq-transformer.sequential_steps", 3, tfs, &err) == ATTN_OK);
    put(&r, "seq2seq-gru.microseconds_per_added_word", 12.5);
    put(&r, "seq2seq-attn.microseconds_per_added_word", 30.0);
    put(&r, "seq2seq-transformer.microseconds_per_added_word", tf_per_word);
    exp_parallel_decoder_verdict(&r);
    snprintf(why, why_n, "%s", r.why);
    const attn_verdict v = r.verdict;
    attn_experiment_result_free(&r);
    return v;
}

START_TEST(test_parallel_decoder_rule) {
    char why[1024];
    ck_assert_int_eq(parallel_decoder(32, 47, 4.0, why, sizeof why), ATTN_VERDICT_HOLDS);
    ck_assert_msg(strstr(why, "at 32 target words: seq2seq-gru 32, seq2seq-attn 32 (each one") &&
                      strstr(why, "2 layers with 47 products per forward (the same") &&
                      strstr(why, "seq2seq-gru 12.5, seq2seq-attn 30.0, seq2seq-transformer 4.0 "
                                  "microseconds (the Transformer's lower than both)"),
                  "%s", why);
    /* a GRU decoder with a step fewer than the words: not one per word */
    ck_assert_int_eq(parallel_decoder(31, 47, 4.0, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_msg(strstr(why, "(not each one per word)"), "%s", why);
    /* a product per word added to the Transformer */
    ck_assert_int_eq(parallel_decoder(32, 48, 4.0, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_int_eq(parallel_decoder(32, 47, 12.5, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_msg(strstr(why, "not lower than both"), "%s", why);
    ck_assert_int_eq(parallel_decoder(64, 47, 20.0, why, sizeof why), ATTN_VERDICT_DOES_NOT_HOLD);
    ck_assert_int_eq(parallel_decoder(32, 47, NAN, why, sizeof why), ATTN_VERDICT_MIXED);
}
END_TEST

/* ---- looking-back: seq2seq-gru drops >= 10 points from short to long sources, the attention
 * models < 5 each; no verdict when a model is below 50 % on short sources ---- */
static attn_verdict looking_back(double gru_long, double attn_long, double tf_short, char *why,
                                 size_t why_n) {
    attn_experiment_result r = result();
    const double shrt[3] = {95.0, 99.0, tf_short}, lng[3] = {gru_long, attn_long, 98.0};
    static const char *const m[3] = {"seq2seq-gru", "seq2seq-attn", "seq2seq-transformer"};
    for (int a = 0; a < 3; a++) {
        char k[64];
        snprintf(k, sizeof k, "%s.short_exact_percent", m[a]);
        put(&r, k, shrt[a]);
        snprintf(k, sizeof k, "%s.long_exact_percent", m[a]);
        put(&r, k, lng[a]);
        snprintf(k, sizeof k, "%s.drop_points", m[a]);
        put(&r, k, shrt[a] - lng[a]);
    }
    exp_looking_back_verdict(&r);
    snprintf(why, why_n, "%s", r.why);
    const attn_verdict v = r.verdict;
    attn_experiment_result_free(&r);
    return v;
}

START_TEST(test_looking_back_rule) {
    char why[1024];
    ck_assert_int_eq(looking_back(60.0, 97.0, 99.0, why, sizeof why), ATTN_VERDICT_HOLDS);
    ck_assert_msg(strstr(why, "seq2seq-gru 95.0% -> 60.0% (drop 35.0 points, >= 10)") &&
                      strstr(why, "seq2seq-attn 99.0% -> 97.0% (2.0)") &&
                      strstr(why, "seq2seq-transformer 99.0% -> 98.0% (1.0) (both < 5)"),
                  "%s", why);
    ck_assert_int_eq(looking_back(85.0, 97.0, 99.0, why, sizeof why), ATTN_VERDICT_HOLDS);
    ck_assert_int_eq(looking_back(85.1, 97.0, 99.0, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_int_eq(looking_back(60.0, 94.0, 99.0, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_msg(strstr(why, "(not both < 5)"), "%s", why);
    ck_assert_int_eq(looking_back(94.0, 90.0, 99.0, why, sizeof why), ATTN_VERDICT_DOES_NOT_HOLD);
    /* a model that has not learnt: no verdict either way */
    ck_assert_int_eq(looking_back(60.0, 97.0, 40.0, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_msg(strstr(why, "no verdict: seq2seq-transformer reaches only 40.0%"), "%s", why);
}
END_TEST

/* ---- alignment: seq2seq-attn and the Transformer's best head each >= 80 % ---- */
static attn_verdict alignment(double attn, double tf, char *why, size_t why_n) {
    attn_experiment_result r = result();
    put(&r, "seq2seq-attn.best.share", attn);
    put(&r, "seq2seq-transformer.best.share", tf);
    put(&r, "seq2seq-transformer.best.layer", 0);
    put(&r, "seq2seq-transformer.best.head", 1);
    put(&r, "seq2seq-transformer.chance_share", 0.05);
    exp_alignment_verdict(&r);
    snprintf(why, why_n, "%s", r.why);
    const attn_verdict v = r.verdict;
    attn_experiment_result_free(&r);
    return v;
}

START_TEST(test_alignment_rule) {
    char why[1024];
    ck_assert_int_eq(alignment(0.95, 0.85, why, sizeof why), ATTN_VERDICT_HOLDS);
    ck_assert_msg(strstr(why, "seq2seq-attn 95.0% of the target words (>= 80%)") &&
                      strstr(why, "best head (layer 1, head 2, from 1) 85.0% (>= 80%)") &&
                      strstr(why, "chance about 5.0%"),
                  "%s", why);
    ck_assert_int_eq(alignment(0.8, 0.8, why, sizeof why), ATTN_VERDICT_HOLDS);
    ck_assert_int_eq(alignment(0.79, 0.85, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_int_eq(alignment(0.95, 0.5, why, sizeof why), ATTN_VERDICT_MIXED);
    ck_assert_msg(strstr(why, "50.0% (< 80%)"), "%s", why);
    ck_assert_int_eq(alignment(0.3, 0.5, why, sizeof why), ATTN_VERDICT_DOES_NOT_HOLD);
    ck_assert_int_eq(alignment(NAN, 0.5, why, sizeof why), ATTN_VERDICT_DOES_NOT_HOLD);
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
    tcase_add_test(tc, test_causal_mask_rule);
    tcase_add_test(tc, test_kv_cache_rule);
    tcase_add_test(tc, test_parallel_decoder_rule);
    tcase_add_test(tc, test_looking_back_rule);
    tcase_add_test(tc, test_alignment_rule);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}

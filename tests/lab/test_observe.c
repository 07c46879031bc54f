/* test_observe.c -- the write-up's s7 observations, checked on the committed weights (seeds
 * 1-3, 200 sentences of each test set of seed 1). What attn's models do (measured; README,
 * "What the models look at"):
 *   - in some layer, a single head puts >= 90 % of [CLS]'s attention on the deciding word
 *     (negation, else adjective) in most plain and distractor sentences; the heads' average
 *     rarely does (the two heads split negation and adjective between them);
 *   - the distractor's adjective gets little on average;
 *   - the LSTM's probability moves at the deciding words and stays put across fillers;
 *   - the plain RNN hovers near 50 %.
 * The roles are also checked on hand-made sentences. */
#include "attn_lab.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_SENT 200

static attn_model *load(const char *model, int seed) {
    char rel[64];
    snprintf(rel, sizeof rel, "weights/%s-seed%d.json", model, seed);
    attn_model *m = NULL;
    attn_error err;
    ck_assert_msg(attn_weights_load_json(tu_source_path(rel), &m, &err) == ATTN_OK, "%s", err.msg);
    return m;
}

static attn_dataset *set(attn_set s) {
    attn_dataset *d = NULL;
    attn_error err;
    ck_assert(attn_data_generate(s, N_SENT, 1, &d, &err) == ATTN_OK);
    return d;
}

START_TEST(test_transformer_attention) {
    attn_set_num_threads(1);
    attn_model *m = load("transformer", _i + 1);
    attn_dataset *plain = set(ATTN_SET_PLAIN), *distr = set(ATTN_SET_DISTRACTOR);
    attn_attention_obs p, d;
    attn_error err;
    ck_assert_msg(attn_observe_attention(m, plain, &p, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_msg(attn_observe_attention(m, distr, &d, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_int_eq(p.n_layers, 2);
    ck_assert_int_eq(p.n_distractor, 0);
    ck_assert_int_eq(d.n_distractor, N_SENT);
    double best_p = 0, best_d = 0;
    for (int l = 0; l < 2; l++) {
        best_p = fmax(best_p, p.deciding_head90[l]);
        best_d = fmax(best_d, d.deciding_head90[l]);
        ck_assert_msg(d.distractor_mean[l] < 0.35, "seed %d layer %d: distractor adjective %g",
                      _i + 1, l, d.distractor_mean[l]);
        ck_assert(p.deciding_avg90[l] <= p.deciding_head90[l]);
        ck_assert(p.mean_max[l] > 0 && p.mean_max[l] <= 1 && p.mean_entropy[l] >= 0);
    }
    ck_assert_msg(best_p >= 0.6 && best_d >= 0.6,
                  "seed %d: one head >= 90 %% on the deciding "
                  "word in %g (plain), %g (distractor)",
                  _i + 1, best_p, best_d);
    attn_dataset_free(plain);
    attn_dataset_free(distr);
    attn_model_free(m);
}
END_TEST

START_TEST(test_recurrent_probability) {
    attn_set_num_threads(1);
    attn_model *lstm = load("lstm", _i + 1), *rnn = load("rnn", _i + 1);
    attn_dataset *fill = set(ATTN_SET_FILL8);
    attn_prefix_obs l, r;
    attn_error err;
    ck_assert_msg(attn_observe_prefixes(lstm, fill, &l, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_msg(attn_observe_prefixes(rnn, fill, &r, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_msg(l.mean_step_deciding > 0.2 && l.mean_step_filler < 0.02,
                  "seed %d LSTM: step %g at deciding words, %g at fillers", _i + 1,
                  l.mean_step_deciding, l.mean_step_filler);
    ck_assert_msg(r.mean_dist_half < 0.1 && r.frac_within_10 > 0.7,
                  "seed %d RNN: mean |p - 0.5| %g, %g within 0.4..0.6", _i + 1, r.mean_dist_half,
                  r.frac_within_10);
    attn_dataset_free(fill);
    attn_model_free(lstm);
    attn_model_free(rnn);
}
END_TEST

/* A hand-made sentence: the deciding word is the negation, the distractor adjective the
 * second one; the steps are the prefix probabilities' differences that attn_explain gives. */
START_TEST(test_roles_on_one_sentence) {
    attn_set_num_threads(1);
    attn_model *lstm = load("lstm", 1);
    const char *text = "the course was not helpful although the coffee was great honestly";
    attn_dataset d = {0};
    int ids[ATTN_MAX_WORDS], n, label = 0;
    attn_error err;
    ck_assert(attn_tokenize(text, ids, ATTN_MAX_WORDS, &n, &err) == ATTN_OK);
    size_t offsets[2] = {0, (size_t)n};
    d = (attn_dataset){.n = 1, .labels = &label, .lengths = &n, .offsets = offsets, .ids = ids};
    attn_prefix_obs o;
    ck_assert(attn_observe_prefixes(lstm, &d, &o, &err) == ATTN_OK);
    attn_explanation *e = NULL;
    const attn_explain_opts eo = {.ig_steps = 1};
    ck_assert(attn_explain(lstm, ids, n, &eo, &e, &err) == ATTN_OK);
    const double *p = e->prefix_probability;
    /* deciding steps: "not" (3) and "helpful" (4); fillers after the adjective: "honestly" */
    const double decide = (fabs(p[3] - p[2]) + fabs(p[4] - p[3])) / 2, filler = fabs(p[10] - p[9]);
    ck_assert_msg(fabs(o.mean_step_deciding - decide) < 1e-12, "%g vs %g", o.mean_step_deciding,
                  decide);
    ck_assert_msg(fabs(o.mean_step_filler - filler) < 1e-12, "%g vs %g", o.mean_step_filler,
                  filler);
    attn_explanation_free(e);
    attn_model *tf = load("transformer", 1);
    ck_assert(attn_observe_prefixes(tf, &d, &o, &err) == ATTN_ERR_ARG);
    attn_attention_obs a;
    ck_assert(attn_observe_attention(tf, &d, &a, &err) == ATTN_OK);
    ck_assert_int_eq(a.n_distractor, 1);
    ck_assert(attn_observe_attention(lstm, &d, &a, &err) == ATTN_ERR_ARG);
    attn_model_free(tf);
    attn_model_free(lstm);
}
END_TEST

int main(void) {
    Suite *s = suite_create("lab/observe");
    TCase *tc = tcase_create("observe");
    tcase_set_timeout(tc, 120);
    /* the sanitizer build (tu_small): seed 1's weights only, the same checks */
    const int seeds = tu_small() ? 1 : 3;
    tcase_add_loop_test(tc, test_transformer_attention, 0, seeds);
    tcase_add_loop_test(tc, test_recurrent_probability, 0, seeds);
    tcase_add_test(tc, test_roles_on_one_sentence);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}

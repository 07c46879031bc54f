/* test_cli_explain_alibi.c -- `attn explain --qk` of a Transformer with --pos alibi: the ALiBi
 * term is added to q.k before each softmax, so "scores" (what the softmax was taken of) is
 * "dot_products" (q.k) plus "score_bias" (-slope_h * |i - j|, Press et al. 2022's slopes), one
 * float add each; softmax(scores) is "attention". A model without a score term has neither
 * field. (It used to refuse the sentence: "pos alibi adds a bias to q.k that q and k do not
 * hold".) */
#include "cli_harness.h"

#define TINY "--train-size", "120", "--holdout", "20", "--epochs", "1"

static const cJSON *at(const cJSON *a, int i) {
    const cJSON *x = cJSON_GetArrayItem(a, i);
    ck_assert_msg(x != NULL, "array too short (index %d)", i);
    return x;
}

static float f(const cJSON *a, int l, int h, int i, int j) {
    return (float)at(at(at(at(a, l), h), i), j)->valuedouble;
}

START_TEST(test_alibi_scores_are_q_dot_k_plus_the_bias) {
    const char *w = tmp_path("alibi.json");
    run_result r = run(NULL, "train", "--model", "transformer", "--pos", "alibi", "--heads", "4",
                       "--embed-dim", "16", "--layers", "2", TINY, "--out", w, NULL);
    expect(&r, "train --pos alibi", 0, NULL);
    run_free(&r);
    r = run(NULL, "explain", "--weights", w, "--format", "json", "--qk", "--ig-steps", "0",
            "the lecture was not boring", NULL);
    expect(&r, "explain --qk of an alibi model", 0, NULL);
    cJSON *doc = cJSON_Parse(r.out);
    ck_assert_msg(doc != NULL, "not JSON: %s", r.out);
    const cJSON *scores = cJSON_GetObjectItem(doc, "scores");
    const cJSON *dot = cJSON_GetObjectItem(doc, "dot_products");
    const cJSON *bias = cJSON_GetObjectItem(doc, "score_bias");
    const cJSON *att = cJSON_GetObjectItem(doc, "attention");
    ck_assert_msg(scores && dot && bias && att, "missing scores/dot_products/score_bias: %s",
                  r.out);
    const int L = 2, NH = 4, S = 6; /* [CLS] + 5 words */
    ck_assert_int_eq(cJSON_GetArraySize(bias), L);
    ck_assert_int_eq(cJSON_GetArraySize(at(at(bias, 0), 0)), S);
    for (int l = 0; l < L; l++)
        for (int h = 0; h < NH; h++) {
            const float slope = (float)pow(2.0, -8.0 * (h + 1) / NH); /* NH a power of two */
            for (int i = 0; i < S; i++) {
                double mx = -INFINITY, sum = 0.0;
                for (int j = 0; j < S; j++) {
                    const float b = f(bias, l, h, i, j), want = -(slope * (float)abs(i - j));
                    ck_assert_msg(b == want, "score_bias[%d][%d][%d][%d] = %.9g, not %.9g", l, h, i,
                                  j, (double)b, (double)want);
                    const float s = f(scores, l, h, i, j), d = f(dot, l, h, i, j);
                    ck_assert_msg(s == d + b, "scores[%d][%d][%d][%d] = %.9g, not %.9g + %.9g", l,
                                  h, i, j, (double)s, (double)d, (double)b);
                    if (s > mx) mx = s;
                }
                for (int j = 0; j < S; j++) sum += exp(f(scores, l, h, i, j) - mx);
                for (int j = 0; j < S; j++) {
                    const double p = exp(f(scores, l, h, i, j) - mx) / sum;
                    ck_assert_msg(fabs(p - f(att, l, h, i, j)) < 1e-6,
                                  "softmax(scores)[%d][%d][%d][%d] = %.9g, attention %.9g", l, h, i,
                                  j, p, (double)f(att, l, h, i, j));
                }
            }
        }
    /* the bias is not q.k: somewhere off the diagonal the two differ */
    ck_assert(f(scores, 0, 0, 0, S - 1) != f(dot, 0, 0, 0, S - 1));
    cJSON_Delete(doc);
    run_free(&r);
}
END_TEST

START_TEST(test_learned_positions_have_no_score_term) {
    const char *w = tmp_path("learned.json");
    run_result r =
        run(NULL, "train", "--model", "transformer", "--pos", "learned", TINY, "--out", w, NULL);
    expect(&r, "train --pos learned", 0, NULL);
    run_free(&r);
    r = run(NULL, "explain", "--weights", w, "--format", "json", "--qk", "--ig-steps", "0",
            "the lecture was not boring", NULL);
    expect(&r, "explain --qk", 0, NULL);
    ck_assert_msg(strstr(r.out, "\"scores\"") && !strstr(r.out, "\"dot_products\"") &&
                      !strstr(r.out, "\"score_bias\""),
                  "%s", r.out);
    run_free(&r);
}
END_TEST

int main(void) {
    Suite *s = suite_create("cli/explain_alibi");
    TCase *tc = tcase_create("explain_alibi");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_alibi_scores_are_q_dot_k_plus_the_bias);
    tcase_add_test(tc, test_learned_positions_have_no_score_term);
    suite_add_tcase(s, tc);
    return cli_run_suite_in_tmp(s);
}

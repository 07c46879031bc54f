/* test_experiments.c -- the experiments library (attn_experiments.h): the table is complete and
 * searchable; convolution's construction matches the directly computed convolution and its
 * position-free bound is real; embedding's row norms are those of the weights file (computed
 * here independently) and its one-hot products equal the lookup; a missing weights
 * file is an error naming it. */
#include "attn_experiments.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

START_TEST(test_table) {
    ck_assert_int_ge(attn_experiment_count(), 4);
    for (int i = 0; i < attn_experiment_count(); i++) {
        const attn_experiment *e = attn_experiment_at(i);
        ck_assert_ptr_nonnull(e);
        ck_assert_msg(e->name && e->claim && e->section && e->source && e->rule && e->run &&
                          e->plot,
                      "experiment %d has an empty field", i);
        ck_assert_ptr_eq(attn_experiment_find(e->name), e);
    }
    ck_assert_ptr_null(attn_experiment_at(attn_experiment_count()));
    ck_assert_ptr_null(attn_experiment_find("no-such-experiment"));
    ck_assert_str_eq(attn_verdict_name(ATTN_VERDICT_HOLDS), "holds");
    ck_assert_str_eq(attn_verdict_name(ATTN_VERDICT_DOES_NOT_HOLD), "does not hold");
    ck_assert_str_eq(attn_verdict_name(ATTN_VERDICT_MIXED), "mixed");
}
END_TEST

static double scalar(const attn_experiment_result *r, const char *name) {
    const attn_measure *m = attn_experiment_measure(r, name);
    ck_assert_msg(m && m->n == 1, "no scalar measurement %s", name);
    return m->values[0];
}

START_TEST(test_convolution) {
    attn_experiment_opts o = {.seeds = 3};
    attn_experiment_result r;
    attn_error err = {0};
    ck_assert_msg(attn_experiment_run(attn_experiment_find("convolution"), &o, &r, &err) == ATTN_OK,
                  "%s", err.msg);
    const attn_measure *a = attn_experiment_measure(&r, "alpha");
    const attn_measure *e = attn_experiment_measure(&r, "max_abs_error");
    ck_assert(a && e && a->n == e->n && a->n >= 5);
    /* the error falls as the bias sharpens: exp(-alpha) of the wrong keys' weight */
    for (int i = 1; i < e->n; i++)
        ck_assert_msg(e->values[i] <= e->values[i - 1] * (1 + 1e-9) + 1e-6,
                      "error rises from alpha %g to %g: %g -> %g", a->values[i - 1], a->values[i],
                      e->values[i - 1], e->values[i]);
    ck_assert_msg(e->values[0] > 0.1, "alpha = 0 (no positions) fits too well: %g", e->values[0]);
    ck_assert_msg(scalar(&r, "rel_error_sharpest") < 1e-6, "sharp bias error %g",
                  scalar(&r, "rel_error_sharpest"));
    /* position-free layers: equal inputs, equal outputs; and they all miss by the bound */
    ck_assert(scalar(&r, "no_position.rel_equal_input_output_difference") == 0.0);
    const double bound = scalar(&r, "no_position.lower_bound_abs");
    ck_assert(bound > 0.01);
    ck_assert(scalar(&r, "no_position.max_abs_error_uniform") >= bound);
    ck_assert(scalar(&r, "no_position.max_abs_error_content") >= bound);
    ck_assert_int_eq(r.verdict, ATTN_VERDICT_HOLDS);
    ck_assert(strstr(r.why, "alpha = 128") != NULL);
    attn_experiment_result_free(&r);
}
END_TEST

START_TEST(test_embedding) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", tu_source_path("weights"));
    attn_experiment_opts o = {.seeds = 1, .weights_dir = dir};
    attn_experiment_result r;
    attn_error err = {0};
    ck_assert_msg(attn_experiment_run(attn_experiment_find("embedding"), &o, &r, &err) == ATTN_OK,
                  "%s", err.msg);
    static const char *const archs[] = {"rnn", "lstm", "transformer"};
    for (int a = 0; a < 3; a++) {
        char key[96], path[1200];
        snprintf(key, sizeof key, "%s.onehot_table_values_differing", archs[a]);
        ck_assert(scalar(&r, key) == 0.0);
        snprintf(key, sizeof key, "%s.onehot_logits_differing", archs[a]);
        ck_assert(scalar(&r, key) == 0.0);
        snprintf(key, sizeof key, "%s.sentences_checked", archs[a]);
        ck_assert(scalar(&r, key) >= 20);
        /* the row norms, computed here from the file */
        snprintf(path, sizeof path, "%s/%s-seed1.json", dir, archs[a]);
        attn_model *m = NULL;
        ck_assert_msg(attn_weights_load_json(path, &m, &err) == ATTN_OK, "%s", err.msg);
        const long t = attn_model_tensor_find(m, "embedding.weight");
        int shape[4];
        attn_model_tensor_shape(m, (size_t)t, shape);
        const float *w = attn_model_params(m) + attn_model_tensor_offset(m, (size_t)t);
        snprintf(key, sizeof key, "%s.seed1.row_norms", archs[a]);
        const attn_measure *norms = attn_experiment_measure(&r, key);
        ck_assert(norms && norms->n == shape[0]);
        for (int v = 0; v < shape[0]; v++) {
            double s = 0.0;
            for (int j = 0; j < shape[1]; j++)
                s += (double)w[v * shape[1] + j] * w[v * shape[1] + j];
            ck_assert_msg(fabs(sqrt(s) - norms->values[v]) <= 1e-12 * sqrt(s),
                          "%s row %d: norm %.17g, measured %.17g", archs[a], v, sqrt(s),
                          norms->values[v]);
        }
        attn_model_free(m);
    }
    attn_experiment_result_free(&r);
}
END_TEST

START_TEST(test_errors) {
    attn_experiment_result r;
    attn_error err = {0};
    attn_experiment_opts o = {.seeds = 1, .weights_dir = "/nonexistent-attn-dir"};
    ck_assert_int_ne(attn_experiment_run(attn_experiment_find("equivariance"), &o, &r, &err),
                     ATTN_OK);
    ck_assert_msg(strstr(err.msg, "/nonexistent-attn-dir/transformer-seed1.json"), "%s", err.msg);
    attn_experiment_result_free(&r);
    ck_assert_int_eq(attn_experiment_run(NULL, &o, &r, &err), ATTN_ERR_ARG);
    /* a result without the measurements a chart needs: an error, no file */
    attn_experiment_result empty = {0};
    ck_assert_int_eq(attn_experiment_find("parallel")->plot(&empty, "/tmp/x.png", &err),
                     ATTN_ERR_ARG);
}
END_TEST

int main(void) {
    Suite *s = suite_create("lab/experiments");
    TCase *tc = tcase_create("experiments");
    tcase_add_test(tc, test_table);
    tcase_add_test(tc, test_convolution);
    tcase_add_test(tc, test_embedding);
    tcase_add_test(tc, test_errors);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}

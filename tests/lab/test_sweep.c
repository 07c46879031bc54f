/* test_sweep.c -- grids of runs (attn_sweep.h): the points of a grid (last option fastest,
 * ranges, fixed settings) and the configurations they give; every kind of bad grid is an
 * ATTN_ERR_ARG naming the option; the summary's means and standard deviations equal a direct
 * computation from the runs; a point's run is deterministic and is the run `attn train`
 * would make (same accuracies as training and evaluating it here by hand); the chart refuses
 * the seed axis and draws a PNG. */
#include "attn_plot.h"
#include "attn_sweep.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static attn_sweep *make(attn_arch arch, const char *grid, const char *set) {
    attn_sweep *s = NULL;
    attn_error err = {0};
    ck_assert_msg(attn_sweep_create(arch, grid, set, &s, &err) == ATTN_OK, "%s: %s", grid, err.msg);
    return s;
}

START_TEST(test_points) {
    attn_sweep *s = make(ATTN_ARCH_TRANSFORMER, "embed-dim=16,32 heads=1,2 seed=1..3",
                         "lr=0.003 norm=pre epochs=2");
    ck_assert_int_eq(attn_sweep_n_points(s), 12);
    char name[256];
    attn_sweep_point_name(s, 0, name, sizeof name);
    ck_assert_str_eq(name, "embed-dim=16 heads=1 seed=1");
    attn_sweep_point_name(s, 4, name, sizeof name); /* the seed varies fastest */
    ck_assert_str_eq(name, "embed-dim=16 heads=2 seed=2");
    attn_sweep_point_name(s, 11, name, sizeof name);
    ck_assert_str_eq(name, "embed-dim=32 heads=2 seed=3");
    attn_model_config mc;
    attn_train_config tc;
    int n_train;
    attn_error err = {0};
    ck_assert_int_eq(attn_sweep_point_config(s, 7, &mc, &tc, &n_train, &err), ATTN_OK);
    ck_assert_int_eq(mc.embed_dim, 32); /* point 7: embed-dim=32 heads=1 seed=2 */
    ck_assert_int_eq(mc.n_heads, 1);
    ck_assert_int_eq((int)tc.seed, 2);
    ck_assert(tc.adam.lr == 0.003);
    ck_assert_int_eq(mc.norm, ATTN_NORM_PRE);
    ck_assert_int_eq(tc.epochs, 2);
    ck_assert_int_eq(n_train, ATTN_TRAIN_DEFAULT_N); /* untouched: the default */
    const attn_model_config def = attn_model_config_default(ATTN_ARCH_TRANSFORMER);
    ck_assert_int_eq(mc.ffn_dim, def.ffn_dim);
    char v[64];
    attn_sweep_value_text(s, 3, 0, v, sizeof v); /* the fixed lr, shortest text */
    ck_assert_str_eq(v, "0.003");
    attn_sweep_value_text(s, 4, 0, v, sizeof v);
    ck_assert_str_eq(v, "pre");
    attn_sweep_free(s);
    s = make(ATTN_ARCH_LSTM, "hidden=8 layers=1..2", NULL);
    ck_assert_int_eq(attn_sweep_n_points(s), 2);
    ck_assert_int_eq(attn_sweep_point_config(s, 1, &mc, &tc, &n_train, &err), ATTN_OK);
    ck_assert_int_eq(mc.hidden_size, 8);
    ck_assert_int_eq(mc.n_layers, 2);
    ck_assert_int_eq((int)tc.seed, 1); /* not swept: seed 1 */
    attn_sweep_free(s);
}
END_TEST

START_TEST(test_bad_grids) {
    static const struct {
        attn_arch arch;
        const char *grid, *set, *needle;
    } bad[] = {
        {ATTN_ARCH_TRANSFORMER, "foo=1", NULL, "unknown option 'foo'"},
        {ATTN_ARCH_TRANSFORMER, "heads=", NULL, "heads has no values"},
        {ATTN_ARCH_TRANSFORMER, "heads=1,,2", NULL, "empty value"},
        {ATTN_ARCH_TRANSFORMER, "seed=5..1", NULL, "empty range '5..1'"},
        {ATTN_ARCH_TRANSFORMER, "seed=1..x", NULL, "bad range '1..x'"},
        {ATTN_ARCH_TRANSFORMER, "lr=0.1..0.2", NULL, "lr: a range"},
        {ATTN_ARCH_TRANSFORMER, "heads=1 heads=2", NULL, "heads given twice"},
        {ATTN_ARCH_TRANSFORMER, "heads=1,2,1", NULL, "value '1' given twice"},
        {ATTN_ARCH_TRANSFORMER, "norm=mid", NULL, "unknown value 'mid'"},
        {ATTN_ARCH_TRANSFORMER, "lr=0", NULL, "lr: '0'"},
        /* fuzz_sweep: a huge lr was cast to int for the integer options (undefined) */
        {ATTN_ARCH_TRANSFORMER, "lr=0.001,9e31", NULL, "lr: '9e31' is not a number in (0, 1000]"},
        {ATTN_ARCH_TRANSFORMER, "embed-dim=abc", NULL, "'abc' is not an integer"},
        {ATTN_ARCH_TRANSFORMER, "embed-dim=0", NULL, "outside"},
        {ATTN_ARCH_TRANSFORMER, "heads", NULL, "'heads' is not NAME=VALUES"},
        {ATTN_ARCH_TRANSFORMER, "  ", NULL, "no option given"},
        {ATTN_ARCH_TRANSFORMER, "heads=1,3", NULL, "point 2 (heads=3)"},
        {ATTN_ARCH_TRANSFORMER, "seed=1,2", "seed=3", "seed given twice"},
        {ATTN_ARCH_TRANSFORMER, "seed=1,2", "heads=1,2", "set: heads takes one value"},
        {ATTN_ARCH_TRANSFORMER, "hidden=8", NULL, "hidden does not apply"},
        {ATTN_ARCH_RNN, "heads=2", NULL, "heads does not apply"},
        {ATTN_ARCH_TRANSFORMER, "seed=1..100000 heads=1,2", NULL, "more than"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        attn_sweep *s = (attn_sweep *)1;
        attn_error err = {0};
        ck_assert_int_eq(attn_sweep_create(bad[i].arch, bad[i].grid, bad[i].set, &s, &err),
                         ATTN_ERR_ARG);
        ck_assert_ptr_null(s);
        ck_assert_msg(strstr(err.msg, bad[i].needle), "grid '%s': '%s' lacks '%s'", bad[i].grid,
                      err.msg, bad[i].needle);
    }
}
END_TEST

START_TEST(test_summary) {
    attn_sweep *s = make(ATTN_ARCH_TRANSFORMER, "heads=1,2 seed=1..3", NULL);
    attn_sweep_result res[6];
    for (int i = 0; i < 6; i++) /* made-up accuracies, different per point and set */
        for (int k = 0; k < ATTN_N_TEST_SETS; k++) res[i].acc[k] = 0.5 + 0.01 * (i * i + 3 * k);
    attn_sweep_summary sum;
    attn_error err = {0};
    ck_assert_int_eq(attn_sweep_summarise(s, res, &sum, &err), ATTN_OK);
    ck_assert_int_eq(sum.n_groups, 2);
    for (int g = 0; g < 2; g++) {
        ck_assert_int_eq(sum.groups[g].first_point, 3 * g);
        ck_assert_int_eq(sum.groups[g].n_seeds, 3);
        for (int k = 0; k <= ATTN_N_TEST_SETS; k++) {
            double x[3], mean = 0, ss = 0, lo = 1, hi = 0;
            for (int j = 0; j < 3; j++) {
                const attn_sweep_result *r = &res[3 * g + j];
                x[j] = k < ATTN_N_TEST_SETS ? r->acc[k]
                                            : (r->acc[0] + r->acc[1] + r->acc[2] + r->acc[3]) / 4;
                mean += x[j] / 3, lo = fmin(lo, x[j]), hi = fmax(hi, x[j]);
            }
            for (int j = 0; j < 3; j++) ss += (x[j] - mean) * (x[j] - mean);
            ck_assert_double_eq_tol(sum.groups[g].mean[k], mean, 1e-12);
            ck_assert_double_eq_tol(sum.groups[g].sd[k], sqrt(ss / 2), 1e-12);
            ck_assert_double_eq_tol(sum.groups[g].lo[k], lo, 1e-12);
            ck_assert_double_eq_tol(sum.groups[g].hi[k], hi, 1e-12);
        }
    }
    ck_assert(sum.groups[1].sd[0] > 0);
    /* the chart: not against the seed; against heads a PNG */
    ck_assert_int_eq(attn_sweep_plot(s, &sum, 1, "/tmp/never.png", &err), ATTN_ERR_ARG);
    if (attn_plot_available()) {
        char path[] = "/tmp/attn-sweep-test-XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(path));
        char png[64];
        snprintf(png, sizeof png, "%s/heads.png", path);
        ck_assert_msg(attn_sweep_plot(s, &sum, 0, png, &err) == ATTN_OK, "%s", err.msg);
        struct stat st;
        ck_assert_int_eq(stat(png, &st), 0);
        ck_assert_int_gt((int)st.st_size, 1000);
        unlink(png);
        rmdir(path);
    } else {
        printf("gnuplot not found: the chart is not drawn (skipped)\n");
    }
    attn_sweep_summary_free(&sum);
    attn_sweep_free(s);
}
END_TEST

/* A point's run equals training and evaluating the same configuration here. */
START_TEST(test_run_point) {
    attn_sweep *s = make(ATTN_ARCH_RNN, "seed=2,3", "train-size=120 holdout=40 epochs=2");
    s->test_size = 60;
    attn_sweep_result a, b;
    attn_error err = {0};
    ck_assert_msg(attn_sweep_run_point(s, 1, &a, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_msg(attn_sweep_run_point(s, 1, &b, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_mem_eq(a.acc, b.acc, sizeof a.acc); /* deterministic */
    attn_model_config mc = attn_model_config_default(ATTN_ARCH_RNN);
    attn_train_config tc = attn_train_config_default();
    tc.seed = 3, tc.epochs = 2, tc.holdout = 40;
    attn_dataset *train = NULL, *held = NULL;
    attn_model *m = NULL;
    attn_trainer *t = NULL;
    ck_assert_int_eq(attn_data_generate(ATTN_SET_TRAIN, 120, 3, &train, &err), ATTN_OK);
    ck_assert_int_eq(attn_data_generate(ATTN_SET_HOLDOUT, 40, 3, &held, &err), ATTN_OK);
    ck_assert_int_eq(attn_model_create(&mc, 3, &m, &err), ATTN_OK);
    ck_assert_int_eq(attn_trainer_create_heldout(m, train, held, &tc, &t, &err), ATTN_OK);
    ck_assert_int_eq(attn_trainer_run(t, NULL, &err), ATTN_OK);
    static const attn_set sets[ATTN_N_TEST_SETS] = {ATTN_SET_PLAIN, ATTN_SET_DISTRACTOR,
                                                    ATTN_SET_FILL4, ATTN_SET_FILL8};
    for (int k = 0; k < ATTN_N_TEST_SETS; k++) {
        attn_dataset *test = NULL;
        double acc;
        ck_assert_int_eq(attn_data_generate(sets[k], 60, 3, &test, &err), ATTN_OK);
        ck_assert_int_eq(attn_evaluate(m, test, 0, test->n, 1, &acc, &err), ATTN_OK);
        ck_assert_msg(acc == a.acc[k], "set %d: %.17g by hand, %.17g by the sweep", k, acc,
                      a.acc[k]);
        attn_dataset_free(test);
    }
    ck_assert_uint_eq(a.n_params, attn_model_n_params(m));
    attn_trainer_free(t);
    attn_model_free(m);
    attn_dataset_free(train);
    attn_dataset_free(held);
    attn_sweep_free(s);
}
END_TEST

int main(void) {
    Suite *s = suite_create("lab/sweep");
    TCase *tc = tcase_create("sweep");
    tcase_add_test(tc, test_points);
    tcase_add_test(tc, test_bad_grids);
    tcase_add_test(tc, test_summary);
    tcase_add_test(tc, test_run_point);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}

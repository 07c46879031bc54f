/* test_saliency.c -- the gradient-versus-distance curve (attn_saliency_*): each ratio is the
 * quotient of attn_explain's gradient norms (checked against autograd by explain_torch.py) and
 * of finite differences; the curve's percentiles are ordered and reproducible; the write-up's
 * s1 shape holds for untrained models (the plain RNN's ratio vanishes with distance, the
 * Transformer's does not); bad arguments give messages. */
#include "attn_lab.h"
#include "attn_plot.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void random_ids(int *ids, int n, uint64_t seed) {
    attn_rng r = attn_rng_seed(seed);
    for (int i = 0; i < n; i++) ids[i] = 2 + (int)attn_rng_below(&r, ATTN_N_WORDS);
}

/* ratio[k] == grad_norm[n-1-k] / grad_norm[n-1] of attn_explain, every model. */
START_TEST(test_ratios_are_gradient_norms) {
    attn_model *m = tu_model_default((attn_arch)_i, 3);
    enum { N = 12 };
    int ids[N];
    double ratio[N];
    random_ids(ids, N, 5 + (uint64_t)_i);
    attn_error err;
    ck_assert_msg(attn_saliency_ratios(m, ids, N, ratio, &err) == ATTN_OK, "%s", err.msg);
    attn_explanation *e = NULL;
    const attn_explain_opts o = {.ig_steps = 1};
    ck_assert_msg(attn_explain(m, ids, N, &o, &e, &err) == ATTN_OK, "%s", err.msg);
    ck_assert(ratio[0] == 1.0);
    for (int k = 0; k < N; k++) {
        const double want = (double)e->grad_norm[N - 1 - k] / e->grad_norm[N - 1];
        ck_assert_msg(fabs(ratio[k] - want) <= 1e-6 * want, "arch %d k %d: %g vs %g", _i, k,
                      ratio[k], want);
    }
    attn_explanation_free(e);
    attn_model_free(m);
}
END_TEST

/* The gradient of one input entry by central differences through attn_model_forward_embedded
 * (double step sizes on a float model: a loose but independent check of the norm ratio). */
START_TEST(test_ratio_finite_differences) {
    attn_model *m = tu_model_default(ATTN_ARCH_LSTM, 11);
    enum { N = 6 };
    int ids[N];
    double ratio[N];
    random_ids(ids, N, 9);
    attn_error err;
    ck_assert(attn_saliency_ratios(m, ids, N, ratio, &err) == ATTN_OK);
    int n = N;
    const attn_batch b = {.B = 1, .T = N, .ids = ids, .lengths = &n};
    float logit;
    ck_assert(attn_model_forward(m, &b, &logit, &err) == ATTN_OK);
    const float *x0;
    int rows, D;
    ck_assert(attn_model_input(m, &x0, NULL, &rows, &D, &err) == ATTN_OK);
    float *x = malloc((size_t)rows * D * sizeof *x);
    memcpy(x, x0, (size_t)rows * D * sizeof *x);
    double norm[N];
    for (int i = 0; i < N; i++) {
        double sq = 0.0;
        for (int j = 0; j < D; j++) {
            const float keep = x[i * D + j], h = 1e-2f;
            float up, down;
            x[i * D + j] = keep + h;
            ck_assert(attn_model_forward_embedded(m, x, N, &up, &err) == ATTN_OK);
            x[i * D + j] = keep - h;
            ck_assert(attn_model_forward_embedded(m, x, N, &down, &err) == ATTN_OK);
            x[i * D + j] = keep;
            const double g = ((double)up - down) / (2.0 * h);
            sq += g * g;
        }
        norm[i] = sqrt(sq);
    }
    for (int k = 0; k < 3; k++) { /* near words: gradients large enough for differences */
        const double want = norm[N - 1 - k] / norm[N - 1];
        ck_assert_msg(fabs(ratio[k] - want) <= 2e-2 * want + 1e-4, "k %d: %g vs fd %g", k, ratio[k],
                      want);
    }
    free(x);
    attn_model_free(m);
}
END_TEST

/* s1 on untrained models: the RNN's median ratio at 40 words back is below 1e-8, the
 * Transformer's stays within a factor 10 of 1 at every distance; p10 <= median <= p90. */
START_TEST(test_curve_shape) {
    attn_model *rnn = tu_model_default(ATTN_ARCH_RNN, 1);
    attn_model *tf = tu_model_default(ATTN_ARCH_TRANSFORMER, 1);
    attn_saliency_curve *a = NULL, *b = NULL, *again = NULL;
    attn_error err;
    const attn_saliency_opts o = {.T = 50, .n = 30, .seed = 4};
    ck_assert_msg(attn_saliency_curve_compute(rnn, &o, &a, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_msg(attn_saliency_curve_compute(tf, &o, &b, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_msg(a->median[40] < 1e-8, "rnn median at 40: %g", a->median[40]);
    for (int k = 0; k < 50; k++) {
        ck_assert_msg(b->median[k] > 0.1 && b->median[k] < 10.0, "transformer k %d: %g", k,
                      b->median[k]);
        ck_assert(a->p10[k] <= a->median[k] && a->median[k] <= a->p90[k]);
        ck_assert(b->p10[k] <= b->median[k] && b->median[k] <= b->p90[k]);
    }
    ck_assert(a->median[0] == 1.0 && a->p10[0] == 1.0 && a->p90[0] == 1.0);
    ck_assert(attn_saliency_curve_compute(rnn, &o, &again, &err) == ATTN_OK);
    ck_assert(memcmp(again->median, a->median, 50 * sizeof(double)) == 0);
    if (attn_plot_available()) {
        char path[64];
        snprintf(path, sizeof path, "/tmp/attn-test-saliency-%d.png", (int)getpid());
        const attn_saliency_curve *cs[2] = {a, b};
        const char *names[2] = {"rnn", "transformer"};
        ck_assert_msg(attn_saliency_plot(cs, names, 2, NULL, path, &err) == ATTN_OK, "%s", err.msg);
        ck_assert(access(path, F_OK) == 0);
        remove(path);
    }
    attn_saliency_curve_free(a);
    attn_saliency_curve_free(b);
    attn_saliency_curve_free(again);
    attn_model_free(rnn);
    attn_model_free(tf);
}
END_TEST

START_TEST(test_bad_arguments) {
    attn_model *tf = tu_model_default(ATTN_ARCH_TRANSFORMER, 1);
    attn_saliency_curve *c = (attn_saliency_curve *)1;
    attn_error err;
    attn_saliency_opts o = {.T = 81, .n = 3};
    ck_assert(attn_saliency_curve_compute(tf, &o, &c, &err) == ATTN_ERR_ARG);
    ck_assert(c == NULL);
    ck_assert_msg(strstr(err.msg, "T 81") != NULL, "%s", err.msg);
    o = (attn_saliency_opts){.T = 5, .n = -2};
    ck_assert(attn_saliency_curve_compute(tf, &o, &c, &err) == ATTN_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "n -2") != NULL, "%s", err.msg);
    attn_saliency_curve_free(NULL);
    attn_model_free(tf);
}
END_TEST

int main(void) {
    Suite *s = suite_create("lab/saliency");
    TCase *tc = tcase_create("saliency");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_ratios_are_gradient_norms, 0, 4);
    tcase_add_test(tc, test_ratio_finite_differences);
    tcase_add_test(tc, test_curve_shape);
    tcase_add_test(tc, test_bad_arguments);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}

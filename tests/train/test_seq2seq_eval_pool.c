/* test_seq2seq_eval_pool.c -- the seq2seq held-out measures on a pool of threads
 * (src/train/seq2seq_eval_pool.c) are the serial ones to the bit: attn_seq2seq_evaluate_pool's
 * exact match and token accuracy, attn_seq2seq_score_pool's per-pair scores and
 * attn_seq2seq_loss_pool's loss equal attn_seq2seq_evaluate's and attn_seq2seq_loss's for pools
 * of 1, 2 and 3 threads and no pool, on the committed weights of the three architectures (and
 * the compose Transformer for the loss), with a number of pairs that is a multiple of neither
 * the thread counts nor the loss's batch of 32; a failing pair is reported as the serial
 * evaluation reports it (the first one in pair order) for every pool. */
#include "attn_seq2seq.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static attn_seq2seq *load(const char *rel) {
    attn_seq2seq *m = NULL;
    attn_error err;
    ck_assert_msg(attn_seq2seq_load_json(tu_source_path(rel), &m, &err) == ATTN_OK, "%s", err.msg);
    return m;
}

/* The committed models are right on (nearly) every pair; each parameter scaled by 1 + u,
 * u uniform in [-spread, spread], they make mistakes, and the test shows mixed pairs. */
static void shake(attn_seq2seq *m, float spread) {
    const size_t P = attn_seq2seq_n_params(m);
    float *u = malloc(P * sizeof *u), *w = attn_seq2seq_params(m);
    ck_assert_ptr_nonnull(u);
    attn_rng r = attn_rng_seed(3);
    tu_fill_uniform(u, P, -spread, spread, &r);
    for (size_t i = 0; i < P; i++) w[i] *= 1.0f + u[i];
    free(u);
}

/* Pools of 1, 2, 3 threads; [0] is no pool. */
static void pools_make(attn_pool *pools[4]) {
    attn_error err;
    pools[0] = NULL;
    for (int n = 1; n <= 3; n++)
        ck_assert_msg(attn_pool_create(n, &pools[n], &err) == ATTN_OK, "%s", err.msg);
    attn_set_num_threads(1);
}

static void pools_free(attn_pool *pools[4]) {
    for (int n = 1; n <= 3; n++) attn_pool_free(pools[n]);
}

static bool same_double(double a, double b) {
    return memcmp(&a, &b, sizeof a) == 0;
}

static const char *const rewrite_weights[] = {"weights/seq2seq-transformer-seed1.json",
                                              "weights/seq2seq-gru-seed1.json",
                                              "weights/seq2seq-attn-seed1.json"};
/* shake's spreads: on fill8, exact match 0.23 / 0.60 / 0.75 with the weights of this commit */
static const float spreads[] = {0.5f, 0.7f, 0.9f};

START_TEST(test_evaluate_pool_is_evaluate) {
    const int n = tu_small() ? 97 : 301, first = 5;
    attn_error err;
    attn_pairs *p = NULL;
    ck_assert_int_eq(attn_pairs_generate(ATTN_TASK_REWRITE, ATTN_SET_FILL8, n + first, 7, &p, &err),
                     ATTN_OK);
    attn_pool *pools[4];
    pools_make(pools);
    for (int a = 0; a < 3; a++) {
        attn_seq2seq *m = load(rewrite_weights[a]);
        shake(m, spreads[a]);
        attn_s2s_eval want;
        ck_assert_int_eq(attn_seq2seq_evaluate(m, p, first, n, &want, &err), ATTN_OK);
        /* a test that shows something: some pairs right, some wrong */
        ck_assert_msg(want.token_acc > 0.0 && want.exact < 1.0,
                      "%s: exact match %g, token accuracy %g", rewrite_weights[a], want.exact,
                      want.token_acc);
        attn_s2s_pair_score *s = malloc((size_t)n * sizeof *s);
        ck_assert_ptr_nonnull(s);
        for (int k = 0; k < 4; k++) {
            attn_s2s_eval got;
            ck_assert_msg(attn_seq2seq_evaluate_pool(m, p, first, n, pools[k], &got, &err) ==
                              ATTN_OK,
                          "%s", err.msg);
            ck_assert_int_eq(got.n, n);
            ck_assert_msg(same_double(got.exact, want.exact) &&
                              same_double(got.token_acc, want.token_acc),
                          "%s, %d threads: exact %.17g token accuracy %.17g, serial %.17g %.17g",
                          rewrite_weights[a], attn_pool_threads(pools[k]), got.exact, got.token_acc,
                          want.exact, want.token_acc);
            ck_assert_int_eq(attn_seq2seq_score_pool(m, p, first, n, pools[k], s, &err), ATTN_OK);
            for (int i = 0; i < n; i++) { /* each pair: its own serial evaluation */
                attn_s2s_eval one;
                ck_assert_int_eq(attn_seq2seq_evaluate(m, p, first + i, 1, &one, &err), ATTN_OK);
                ck_assert_int_eq(s[i].tokens, p->tgt_lengths[first + i] + 1);
                ck_assert(same_double(s[i].exact ? 1.0 : 0.0, one.exact));
                ck_assert(same_double((double)s[i].right / s[i].tokens, one.token_acc));
            }
        }
        printf("%s: %d pairs, exact %.4f, token accuracy %.4f for 0-3 threads\n",
               rewrite_weights[a], n, want.exact, want.token_acc);
        free(s);
        attn_seq2seq_free(m);
    }
    pools_free(pools);
    attn_pairs_free(p);
}
END_TEST

START_TEST(test_loss_pool_is_loss) {
    const int n = tu_small() ? 75 : 301, first = 3;
    static const char *const files[] = {
        "weights/compose-seq2seq-transformer-seed1.json", "weights/seq2seq-transformer-seed1.json",
        "weights/seq2seq-attn-seed1.json", "weights/seq2seq-gru-seed1.json"};
    attn_pool *pools[4];
    pools_make(pools);
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        attn_error err;
        attn_seq2seq *m = load(files[f]);
        attn_pairs *p = NULL;
        ck_assert_int_eq(attn_pairs_generate(attn_seq2seq_config_of(m)->task, ATTN_SET_HOLDOUT,
                                             n + first, 11, &p, &err),
                         ATTN_OK);
        double want = NAN;
        ck_assert_int_eq(attn_seq2seq_loss(m, p, first, n, &want, &err), ATTN_OK);
        ck_assert(isfinite(want) && want > 0.0);
        for (int k = 0; k < 4; k++) {
            double got = NAN;
            ck_assert_msg(attn_seq2seq_loss_pool(m, p, first, n, pools[k], &got, &err) == ATTN_OK,
                          "%s", err.msg);
            ck_assert_msg(same_double(got, want), "%s, %d threads: loss %.17g, serial %.17g",
                          files[f], attn_pool_threads(pools[k]), got, want);
        }
        printf("%s: loss %.17g over %d pairs for 0-3 threads\n", files[f], want, n);
        attn_pairs_free(p);
        attn_seq2seq_free(m);
    }
    pools_free(pools);
}
END_TEST

/* Two pairs with a source id out of range: every pool reports the first, as the serial loop
 * (which stops there) does; the loss reports the batch holding it. */
START_TEST(test_first_failure_in_pair_order) {
    attn_error err;
    attn_pairs *p = NULL;
    ck_assert_int_eq(attn_pairs_generate(ATTN_TASK_REWRITE, ATTN_SET_PLAIN, 90, 2, &p, &err),
                     ATTN_OK);
    p->src->ids[p->src->offsets[61]] = 9061;
    p->src->ids[p->src->offsets[17]] = 9017;
    attn_seq2seq *m = load(rewrite_weights[0]);
    attn_error want, want_loss;
    attn_s2s_eval ev;
    double loss;
    ck_assert_int_ne(attn_seq2seq_evaluate(m, p, 0, 90, &ev, &want), ATTN_OK);
    ck_assert_int_ne(attn_seq2seq_loss(m, p, 0, 90, &loss, &want_loss), ATTN_OK);
    ck_assert_msg(strstr(want.msg, "9017") != NULL, "%s", want.msg);
    attn_pool *pools[4];
    pools_make(pools);
    for (int k = 0; k < 4; k++) {
        memset(&err, 0, sizeof err);
        ck_assert_int_eq(attn_seq2seq_evaluate_pool(m, p, 0, 90, pools[k], &ev, &err), want.status);
        ck_assert_str_eq(err.msg, want.msg);
        memset(&err, 0, sizeof err);
        ck_assert_int_eq(attn_seq2seq_loss_pool(m, p, 0, 90, pools[k], &loss, &err),
                         want_loss.status);
        ck_assert_str_eq(err.msg, want_loss.msg);
        ck_assert(isnan(loss));
    }
    /* and arguments out of range */
    ck_assert_int_eq(attn_seq2seq_evaluate_pool(m, p, 50, 41, pools[2], &ev, &err), ATTN_ERR_ARG);
    ck_assert_int_eq(attn_seq2seq_loss_pool(m, p, 0, 0, pools[2], &loss, &err), ATTN_ERR_ARG);
    pools_free(pools);
    attn_seq2seq_free(m);
    attn_pairs_free(p);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("train/seq2seq_eval_pool");
    TCase *tc = tcase_create("pool");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_evaluate_pool_is_evaluate);
    tcase_add_test(tc, test_loss_pool_is_loss);
    tcase_add_test(tc, test_first_failure_in_pair_order);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return tu_run_suite(suite());
}

/* test_lessons.c -- the s2 calculator, the s3 scaling lesson and the s4 position lesson:
 * the calculator's numbers against a double-precision recomputation from its documented
 * constants; permutation equivariance of the calculator and of a Transformer without
 * positions (and its absence with positions); the scaling statistics against their expected
 * values; the sinusoid table against the formula and attn's own pos_embedding initialisation;
 * the dot products' dependence on the offset only. */
#include "attn_lab.h"
#include "test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int tokenize(const char *s, int *ids) {
    int n = 0;
    attn_error err;
    ck_assert_msg(attn_tokenize(s, ids, ATTN_MAX_WORDS, &n, &err) == ATTN_OK, "%s", err.msg);
    return n;
}

/* Q, K, V, scores, softmax and outputs recomputed in double from X and the W's. */
START_TEST(test_attend_matches_double_recomputation) {
    int ids[ATTN_MAX_WORDS];
    const int n = tokenize("the teacher was not very helpful although the coffee was bad", ids);
    attn_attend_result *r = NULL;
    attn_error err;
    ck_assert_msg(attn_attend_compute(ids, n, &r, &err) == ATTN_OK, "%s", err.msg);
    enum { D = ATTN_ATTEND_D, DK = ATTN_ATTEND_DK };
    const float *w[3] = {attn_attend_weights('q'), attn_attend_weights('k'),
                         attn_attend_weights('v')};
    const float *got[3] = {r->q, r->k, r->v};
    double qkv[3][ATTN_MAX_WORDS][DK];
    for (int i = 0; i < n; i++) {
        float e[D];
        ck_assert(attn_attend_embedding(ids[i], e, &err) == ATTN_OK);
        ck_assert(memcmp(e, r->x + i * D, sizeof e) == 0);
        for (int m = 0; m < 3; m++)
            for (int c = 0; c < DK; c++) {
                double s = 0.0;
                for (int j = 0; j < D; j++) s += (double)e[j] * w[m][j * DK + c];
                qkv[m][i][c] = s;
                ck_assert_msg(fabs(got[m][i * DK + c] - s) < 1e-6, "m %d row %d", m, i);
            }
    }
    for (int i = 0; i < n; i++) {
        double s[ATTN_MAX_WORDS], max = -INFINITY, sum = 0.0;
        for (int j = 0; j < n; j++) {
            s[j] = 0.0;
            for (int c = 0; c < DK; c++) s[j] += qkv[0][i][c] * qkv[1][j][c];
            ck_assert(fabs(r->scores[i * n + j] - s[j]) < 1e-5);
            s[j] /= sqrt((double)DK);
            ck_assert(fabs(r->scaled[i * n + j] - s[j]) < 1e-5);
            max = fmax(max, s[j]);
        }
        for (int j = 0; j < n; j++) sum += exp(s[j] - max);
        for (int c = 0; c < DK; c++) {
            double o = 0.0;
            for (int j = 0; j < n; j++) {
                const double p = exp(s[j] - max) / sum;
                ck_assert_msg(fabs(r->probs[i * n + j] - p) < 1e-6, "p[%d][%d]", i, j);
                o += p * qkv[2][j][c];
            }
            ck_assert_msg(fabs(r->out[i * DK + c] - o) < 1e-5, "out[%d][%d]", i, c);
        }
    }
    /* the documented embedding: "not" is (0, 1, 0, 0.1 ((id mod 5) - 2)) */
    float e[D];
    const int id = attn_vocab_id("not");
    ck_assert(attn_attend_embedding(id, e, &err) == ATTN_OK);
    ck_assert(e[0] == 0.0f && e[1] == 1.0f && e[2] == 0.0f && e[3] == 0.1f * (float)(id % 5 - 2));
    ck_assert(attn_attend_embedding(ATTN_CLS_ID, e, &err) == ATTN_ERR_ARG);
    attn_attend_result_free(r);
}
END_TEST

START_TEST(test_attend_equivariance) {
    int ids[ATTN_MAX_WORDS];
    const int m = tokenize("honestly the food was not good", ids);
    const int perm[6] = {4, 0, 1, 2, 5, 3};
    double dev_out = 1, dev_p = 1;
    attn_error err;
    ck_assert_msg(attn_attend_equivariance(ids, m, perm, &dev_out, &dev_p, &err) == ATTN_OK, "%s",
                  err.msg);
    ck_assert_msg(dev_out < 1e-6 && dev_p < 1e-6, "out %g, p %g", dev_out, dev_p);
    const int bad[6] = {0, 1, 2, 3, 4, 6};
    ck_assert(attn_attend_equivariance(ids, m, bad, &dev_out, &dev_p, &err) == ATTN_ERR_ARG);
    const int twice[6] = {0, 1, 2, 3, 4, 4};
    ck_assert(attn_attend_equivariance(ids, m, twice, &dev_out, &dev_p, &err) == ATTN_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "not a permutation") != NULL, "%s", err.msg);
}
END_TEST

/* s3: unscaled scores spread like sqrt(d_k), scaled ones like 1 (500 x 16 draws: within 10 %);
 * unscaled, the softmax saturates as d_k grows; scaled, it does not. */
START_TEST(test_scaling_statistics) {
    attn_scaling_row rows[ATTN_SCALING_N_DK];
    attn_error err;
    ck_assert_msg(attn_lesson_scaling(16, 500, 1, rows, &err) == ATTN_OK, "%s", err.msg);
    for (int i = 0; i < ATTN_SCALING_N_DK; i++) {
        const double sd = sqrt((double)rows[i].d_k);
        ck_assert_int_eq(rows[i].d_k, 4 << i);
        ck_assert_msg(fabs(rows[i].score_std[0] / sd - 1.0) < 0.1, "d_k %d: std %g", rows[i].d_k,
                      rows[i].score_std[0]);
        ck_assert_msg(fabs(rows[i].score_std[1] - 1.0) < 0.1, "d_k %d: scaled std %g", rows[i].d_k,
                      rows[i].score_std[1]);
        ck_assert(rows[i].max_prob[1] < 0.35 && rows[i].mean_pq[1] > 0.045);
    }
    ck_assert(rows[7].max_prob[0] > 0.9 && rows[7].mean_pq[0] < 0.01);
    ck_assert(rows[7].mean_pq[0] < rows[0].mean_pq[0] / 4);
    ck_assert(attn_lesson_scaling(1, 500, 1, rows, &err) == ATTN_ERR_ARG);
}
END_TEST

/* s4: the table is the formula; attn's Transformer starts its pos_embedding at 2x this table;
 * PE(p).PE(p+d) = sum_i cos(d w_i) for every p. */
START_TEST(test_sinusoid) {
    enum { P = 81, D = 32 };
    double *pe = malloc(P * D * sizeof *pe), dots[P], dev = 1;
    attn_error err;
    ck_assert(attn_sinusoid_table(pe, P, D, &err) == ATTN_OK);
    ck_assert(pe[0] == 0.0 && pe[1] == 1.0);
    ck_assert(fabs(pe[5 * D + 2] - sin(5 / pow(10000.0, 2.0 / D))) < 1e-15);
    attn_model *m = tu_model_default(ATTN_ARCH_TRANSFORMER, 1);
    const long t = attn_model_tensor_find(m, "pos_embedding");
    ck_assert(t >= 0);
    const float *pos = attn_model_params(m) + attn_model_tensor_offset(m, (size_t)t);
    for (int i = 0; i < P * D; i++)
        ck_assert_msg(fabs(pos[i] - 2.0 * pe[i]) < 1e-6, "pos_embedding[%d] %g vs 2 PE %g", i,
                      pos[i], 2.0 * pe[i]);
    ck_assert(attn_sinusoid_dots(P, D, dots, &dev, &err) == ATTN_OK);
    ck_assert_msg(dev < 1e-12, "deviation %g", dev);
    for (int d = 0; d < P; d++) {
        double want = 0.0;
        for (int i = 0; i < D / 2; i++) want += cos(d / pow(10000.0, 2.0 * i / D));
        ck_assert_msg(fabs(dots[d] - want) < 1e-12, "d %d: %g vs %g", d, dots[d], want);
    }
    ck_assert(attn_sinusoid_table(pe, P, 7, &err) == ATTN_ERR_ARG);
    free(pe);
    attn_model_free(m);
}
END_TEST

/* s4 on the committed Transformer: with positions a permutation changes the attention and the
 * logit a lot; without them (pos_embedding zeroed), only float rounding is left. */
START_TEST(test_equivariance_without_positions) {
    attn_model *m = NULL;
    attn_error err;
    ck_assert(attn_weights_load_json(tu_source_path("weights/transformer-seed1.json"), &m, &err) ==
              ATTN_OK);
    attn_set_num_threads(1);
    int ids[ATTN_MAX_WORDS];
    const int n = tokenize("the food was not good", ids);
    const int perm[5] = {3, 0, 1, 2, 4}; /* not the food was good */
    attn_equivariance with, without;
    ck_assert_msg(attn_equivariance_measure(m, ids, n, perm, &with, &err) == ATTN_OK, "%s",
                  err.msg);
    ck_assert_msg(with.attention_dev > 0.1 && with.logit_dev > 1.0, "with positions: %g %g",
                  with.attention_dev, with.logit_dev);
    ck_assert(attn_model_remove_positions(&m, &err) == ATTN_OK);
    ck_assert(attn_model_config_of(m)->pos == ATTN_POS_NONE);
    ck_assert(attn_model_tensor_find(m, "pos_embedding") < 0);
    ck_assert(attn_equivariance_measure(m, ids, n, perm, &without, &err) == ATTN_OK);
    ck_assert_msg(
        without.attention_dev < 1e-5 && without.logit_dev < 1e-4 && without.grad_dev < 1e-3,
        "without positions: %g %g %g", without.attention_dev, without.logit_dev, without.grad_dev);
    const int not_perm[5] = {0, 0, 1, 2, 3};
    ck_assert(attn_equivariance_measure(m, ids, n, not_perm, &without, &err) == ATTN_ERR_ARG);
    attn_model *rnn = tu_model_default(ATTN_ARCH_RNN, 1);
    ck_assert(attn_model_remove_positions(&rnn, &err) == ATTN_ERR_ARG);
    attn_model_free(rnn);
    attn_model_free(m);
}
END_TEST

int main(void) {
    Suite *s = suite_create("lab/lessons");
    TCase *tc = tcase_create("lessons");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_attend_matches_double_recomputation);
    tcase_add_test(tc, test_attend_equivariance);
    tcase_add_test(tc, test_scaling_statistics);
    tcase_add_test(tc, test_sinusoid);
    tcase_add_test(tc, test_equivariance_without_positions);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}

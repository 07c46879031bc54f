/* test_attention_masked.c -- the decoder's causal and cross-attention kernels: forward against a
 * double reference (masked keys exactly 0, what they hold never seen), a cached step (one query
 * at position q_pos) against the same row of the full causal pass, and backward against finite
 * differences; an additive score bias (attn_masked_attention_forward) against the same reference.
 * Shapes cross ATen's small-bmm boundary (400 multiply-adds) and rows of 8+ keys. */
#include "attn_seq2seq.h"
#include "test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FD_STEP 1e-2f
#define FD_ATOL 2e-3
#define FD_RTOL 2e-2

typedef struct shape {
    int NH, n_q, n_k, HS;
    bool causal;
} shape;

static const shape shapes[] = {
    {1, 1, 1, 4, true},   {2, 3, 3, 4, true},    {2, 9, 9, 8, true},   {3, 17, 17, 5, true},
    {2, 4, 11, 8, false}, {1, 12, 3, 16, false}, {2, 6, 25, 4, false}, {4, 1, 40, 8, false},
};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

typedef struct case_data {
    shape sh;
    float *q, *k, *v, *out, *probs, *r, *work;
    size_t qs, kvs; /* head strides */
} case_data;

static void case_init(case_data *c, const shape *s, uint64_t seed) {
    memset(c, 0, sizeof *c);
    c->sh = *s;
    c->qs = (size_t)s->n_q * s->HS + 3; /* padded strides: heads need not be adjacent */
    c->kvs = (size_t)s->n_k * s->HS + 5;
    const size_t nq = c->qs * s->NH, nkv = c->kvs * s->NH;
    c->q = calloc(nq, sizeof(float));
    c->out = calloc(nq, sizeof(float));
    c->r = calloc(nq, sizeof(float));
    c->k = calloc(nkv, sizeof(float));
    c->v = calloc(nkv, sizeof(float));
    c->probs = calloc((size_t)s->NH * s->n_q * s->n_k, sizeof(float));
    c->work = calloc(attn_attention_backward_work_size(s->n_q, s->n_k), sizeof(float));
    ck_assert(c->q && c->out && c->r && c->k && c->v && c->probs && c->work);
    attn_rng rng = attn_rng_seed(seed);
    tu_fill_uniform(c->q, nq, -1.5f, 1.5f, &rng);
    tu_fill_uniform(c->k, nkv, -1.5f, 1.5f, &rng);
    tu_fill_uniform(c->v, nkv, -1.0f, 1.0f, &rng);
    tu_fill_uniform(c->r, nq, -1.0f, 1.0f, &rng);
}

static void case_free(case_data *c) {
    free(c->q), free(c->k), free(c->v), free(c->out), free(c->probs), free(c->r), free(c->work);
}

static void forward(case_data *c) {
    const shape *s = &c->sh;
    if (s->causal)
        attn_causal_attention_forward(c->out, c->probs, c->q, c->k, c->v, s->NH, s->n_q, s->n_k,
                                      s->HS, s->n_k - s->n_q, c->qs, c->kvs);
    else
        attn_cross_attention_forward(c->out, c->probs, c->q, c->k, c->v, s->NH, s->n_q, s->n_k,
                                     s->HS, c->qs, c->kvs);
}

static bool visible(const shape *s, int i, int j) {
    return !s->causal || j <= s->n_k - s->n_q + i;
}

/* The largest |difference| of c's probs and out from a double softmax(q.k^T + bias + mask).v;
 * bias NULL or [NH, n_q, n_k]. Masked probabilities must be exactly 0. */
static double reference_error(const case_data *c, const float *bias) {
    const shape *s = &c->sh;
    double max_err = 0.0;
    for (int h = 0; h < s->NH; h++)
        for (int i = 0; i < s->n_q; i++) {
            const float *q = c->q + h * c->qs + (size_t)i * s->HS;
            const float *b = bias ? bias + ((size_t)h * s->n_q + i) * s->n_k : NULL;
            double sc[64], m = -INFINITY, sum = 0.0;
            for (int j = 0; j < s->n_k; j++) {
                const float *k = c->k + h * c->kvs + (size_t)j * s->HS;
                double d = b ? b[j] : 0.0;
                for (int t = 0; t < s->HS; t++) d += (double)q[t] * k[t];
                sc[j] = visible(s, i, j) ? d : -INFINITY;
                if (sc[j] > m) m = sc[j];
            }
            for (int j = 0; j < s->n_k; j++) sum += sc[j] == -INFINITY ? 0.0 : exp(sc[j] - m);
            const float *p = c->probs + ((size_t)h * s->n_q + i) * s->n_k;
            for (int j = 0; j < s->n_k; j++) {
                const double want = sc[j] == -INFINITY ? 0.0 : exp(sc[j] - m) / sum;
                if (!visible(s, i, j)) ck_assert_msg(p[j] == 0.0f, "masked prob %g", p[j]);
                max_err = fmax(max_err, fabs(p[j] - want));
            }
            for (int t = 0; t < s->HS; t++) {
                double o = 0.0;
                for (int j = 0; j < s->n_k; j++)
                    if (sc[j] != -INFINITY)
                        o += exp(sc[j] - m) / sum * c->v[h * c->kvs + (size_t)j * s->HS + t];
                max_err = fmax(max_err, fabs(c->out[h * c->qs + (size_t)i * s->HS + t] - o));
            }
        }
    return max_err;
}

START_TEST(test_forward_vs_double_reference) {
    case_data c;
    case_init(&c, &shapes[_i], 10 + (uint64_t)_i);
    const shape *s = &c.sh;
    forward(&c);
    const double max_err = reference_error(&c, NULL);
    ck_assert_msg(max_err < 1e-5, "shape %d: max abs error %g", _i, max_err);
    /* what masked keys and values hold is never seen */
    if (s->causal && s->n_q > 1) {
        float *before = malloc(c.qs * s->NH * sizeof(float));
        ck_assert_ptr_nonnull(before);
        memcpy(before, c.out, c.qs * s->NH * sizeof(float));
        /* key/value n_k-1 is visible to the last query only: change it, the others stay */
        for (int h = 0; h < s->NH; h++)
            for (int t = 0; t < s->HS; t++) {
                c.k[h * c.kvs + (size_t)(s->n_k - 1) * s->HS + t] = 1e3f;
                c.v[h * c.kvs + (size_t)(s->n_k - 1) * s->HS + t] = -1e3f;
            }
        forward(&c);
        for (int h = 0; h < s->NH; h++)
            for (size_t t = 0; t < (size_t)(s->n_q - 1) * s->HS; t++)
                ck_assert_float_eq(c.out[h * c.qs + t], before[h * c.qs + t]);
        free(before);
    }
    case_free(&c);
}
END_TEST

/* attn_masked_attention_forward: NULL bias gives the causal/cross kernels' bits; a score bias
 * (ALiBi's in the decoder) is added before the mask: against the double reference, masked keys
 * still exactly 0 whatever the bias there. */
START_TEST(test_score_bias) {
    case_data c;
    case_init(&c, &shapes[_i], 30 + (uint64_t)_i);
    const shape *s = &c.sh;
    const size_t nq = c.qs * s->NH, np = (size_t)s->NH * s->n_q * s->n_k;
    const int q_pos = s->causal ? s->n_k - s->n_q : -1;
    forward(&c);
    float *out = malloc(nq * sizeof(float)), *probs = malloc(np * sizeof(float));
    float *bias = malloc(np * sizeof(float));
    ck_assert(out && probs && bias);
    memcpy(out, c.out, nq * sizeof(float));
    memcpy(probs, c.probs, np * sizeof(float));
    attn_masked_attention_forward(c.out, c.probs, c.q, c.k, c.v, NULL, s->NH, s->n_q, s->n_k, s->HS,
                                  q_pos, c.qs, c.kvs);
    tu_assert_identical("no bias: the same bits", c.out, out, nq);
    tu_assert_identical("no bias: the same probabilities", c.probs, probs, np);
    attn_rng rng = attn_rng_seed(40 + (uint64_t)_i);
    tu_fill_uniform(bias, np, -3.0f, 1.0f, &rng);
    attn_masked_attention_forward(c.out, c.probs, c.q, c.k, c.v, bias, s->NH, s->n_q, s->n_k, s->HS,
                                  q_pos, c.qs, c.kvs);
    const double max_err = reference_error(&c, bias);
    ck_assert_msg(max_err < 1e-5, "shape %d: max abs error %g with a bias", _i, max_err);
    size_t moved = 0; /* the bias did something */
    for (size_t i = 0; i < np; i++) moved += c.probs[i] != probs[i];
    ck_assert_msg(s->n_k == 1 || moved > 0, "shape %d: the bias changed nothing", _i);
    free(out), free(probs), free(bias);
    case_free(&c);
}
END_TEST

/* A cached step -- one query at position i over keys 0..i -- is the same attention as row i of
 * the full causal pass (rounding apart: other GEMM shapes and row lengths). */
START_TEST(test_cached_step_matches_full_row) {
    const int NH = 2, T = 12, HS = 8;
    const size_t qs = (size_t)T * HS;
    float *q = malloc(NH * qs * sizeof(float)), *k = malloc(NH * qs * sizeof(float)),
          *v = malloc(NH * qs * sizeof(float)), *out = malloc(NH * qs * sizeof(float)),
          *probs = malloc((size_t)NH * T * T * sizeof(float)), step[2 * 8], sp[2 * 12];
    ck_assert(q && k && v && out && probs);
    attn_rng rng = attn_rng_seed(5);
    tu_fill_uniform(q, NH * qs, -1.0f, 1.0f, &rng);
    tu_fill_uniform(k, NH * qs, -1.0f, 1.0f, &rng);
    tu_fill_uniform(v, NH * qs, -1.0f, 1.0f, &rng);
    attn_causal_attention_forward(out, probs, q, k, v, NH, T, T, HS, 0, qs, qs);
    for (int i = 0; i < T; i++) {
        float qi[2 * 8];
        for (int h = 0; h < NH; h++) memcpy(qi + h * HS, q + h * qs + (size_t)i * HS, HS * 4);
        attn_causal_attention_forward(step, sp, qi, k, v, NH, 1, i + 1, HS, i, HS, qs);
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < HS; t++) {
                const float a = step[h * HS + t], b = out[h * qs + (size_t)i * HS + t];
                ck_assert_msg(fabsf(a - b) <= 1e-6f * (1.0f + fabsf(b)), "row %d: %g vs %g", i, a,
                              b);
            }
    }
    free(q), free(k), free(v), free(out), free(probs);
}
END_TEST

static case_data *fd_case;
static double fake_loss(void *ctx) {
    (void)ctx;
    case_data *c = fd_case;
    forward(c);
    double l = 0.0;
    for (int h = 0; h < c->sh.NH; h++)
        for (size_t i = 0; i < (size_t)c->sh.n_q * c->sh.HS; i++)
            l += (double)c->out[h * c->qs + i] * c->r[h * c->qs + i];
    return l;
}

START_TEST(test_backward_finite_differences) {
    case_data c;
    case_init(&c, &shapes[_i], 30 + (uint64_t)_i);
    const shape *s = &c.sh;
    const size_t nq = c.qs * s->NH, nkv = c.kvs * s->NH;
    float *d_q = calloc(nq, 4), *d_k = calloc(nkv, 4), *d_v = calloc(nkv, 4);
    ck_assert(d_q && d_k && d_v);
    forward(&c);
    if (s->causal)
        attn_causal_attention_backward(d_q, d_k, d_v, c.r, c.probs, c.q, c.k, c.v, s->NH, s->n_q,
                                       s->n_k, s->HS, c.qs, c.kvs, c.work);
    else
        attn_cross_attention_backward(d_q, d_k, d_v, c.r, c.probs, c.q, c.k, c.v, s->NH, s->n_q,
                                      s->n_k, s->HS, c.qs, c.kvs, c.work);
    fd_case = &c;
    for (int h = 0; h < s->NH; h++) {
        tu_check_grad("d_q", fake_loss, NULL, c.q + h * c.qs, d_q + h * c.qs,
                      (size_t)s->n_q * s->HS, FD_STEP, FD_ATOL, FD_RTOL);
        tu_check_grad("d_k", fake_loss, NULL, c.k + h * c.kvs, d_k + h * c.kvs,
                      (size_t)s->n_k * s->HS, FD_STEP, FD_ATOL, FD_RTOL);
        tu_check_grad("d_v", fake_loss, NULL, c.v + h * c.kvs, d_v + h * c.kvs,
                      (size_t)s->n_k * s->HS, FD_STEP, FD_ATOL, FD_RTOL);
    }
    /* accumulates: a second backward doubles the gradients */
    float *once = malloc(nq * 4);
    ck_assert_ptr_nonnull(once);
    memcpy(once, d_q, nq * 4);
    forward(&c);
    if (s->causal)
        attn_causal_attention_backward(d_q, NULL, NULL, c.r, c.probs, c.q, c.k, c.v, s->NH, s->n_q,
                                       s->n_k, s->HS, c.qs, c.kvs, c.work);
    else
        attn_cross_attention_backward(d_q, NULL, NULL, c.r, c.probs, c.q, c.k, c.v, s->NH, s->n_q,
                                      s->n_k, s->HS, c.qs, c.kvs, c.work);
    for (size_t i = 0; i < nq; i++) ck_assert_float_eq(d_q[i], once[i] + once[i]);
    free(once), free(d_q), free(d_k), free(d_v);
    case_free(&c);
}
END_TEST

int main(void) {
    Suite *s = suite_create("attention_masked");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, test_forward_vs_double_reference, 0, N_SHAPES);
    tcase_add_loop_test(tc, test_score_bias, 0, N_SHAPES);
    tcase_add_test(tc, test_cached_step_matches_full_row);
    tcase_add_loop_test(tc, test_backward_finite_differences, 0, N_SHAPES);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

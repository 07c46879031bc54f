/* test_explain.c -- attn_explain and the batch-1 accessors it stands on: the logit is the exact
 * forward's; the forward from input vectors gives the same float as the forward from ids; the
 * prefix probabilities of RNN/LSTM are bit-identical to a forward of each prefix; the attention
 * maps are the forward's own and are distributions; the input gradient agrees with finite
 * differences and the saliency arrays follow from it; integrated gradients are complete within
 * 1 % at the default N. (Attention and saliency against PyTorch: tools/explain_torch.py.) */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const trained[] = {"weights/rnn-seed1.json", "weights/lstm-seed1.json",
                                      "weights/transformer-seed1.json"};

/* Model k of 6: the three architectures, random (k < 3) or trained weights. */
static attn_model *model_k(int k) {
    if (k < 3) return tu_model_default((attn_arch)k, 7 + (uint64_t)k);
    attn_model *m = NULL;
    attn_error err;
    ck_assert_msg(attn_weights_load_json(tu_source_path(trained[k - 3]), &m, &err) == ATTN_OK, "%s",
                  err.msg);
    return m;
}

/* A random sentence of n word ids (2 .. V-1). */
static void random_ids(int *ids, int n, attn_rng *r) {
    for (int i = 0; i < n; i++) ids[i] = 2 + (int)attn_rng_below(r, ATTN_VOCAB_SIZE - 2);
}

static float forward_ids(attn_model *m, const int *ids, int n) {
    attn_batch b = {.B = 1, .T = n, .ids = ids, .lengths = &n};
    attn_error err;
    float logit = NAN;
    ck_assert_msg(attn_model_forward(m, &b, &logit, &err) == ATTN_OK, "%s", err.msg);
    return logit;
}

static attn_explanation *explain(attn_model *m, const int *ids, int n, int steps) {
    attn_explain_opts o = {.ig_steps = steps};
    attn_explanation *e = NULL;
    attn_error err;
    ck_assert_msg(attn_explain(m, ids, n, &o, &e, &err) == ATTN_OK, "%s", err.msg);
    return e;
}

START_TEST(test_logit_and_embedded_forward) {
    attn_rng r = attn_rng_seed(11);
    for (int k = 0; k < 6; k++) {
        attn_model *m = model_k(k);
        int ids[24];
        for (int n = 1; n <= 24; n += 5) {
            random_ids(ids, n, &r);
            const float want = forward_ids(m, ids, n);
            const float *x;
            int rows, D;
            attn_error err;
            ck_assert_int_eq(attn_model_input(m, &x, NULL, &rows, &D, &err), ATTN_OK);
            const int tf = attn_model_config_of(m)->arch == ATTN_ARCH_TRANSFORMER;
            ck_assert_int_eq(rows, n + tf);
            float *copy = malloc((size_t)rows * D * sizeof *copy), got = NAN;
            ck_assert_ptr_nonnull(copy);
            memcpy(copy, x, (size_t)rows * D * sizeof *copy);
            ck_assert_int_eq(attn_model_forward_embedded(m, copy, n, &got, &err), ATTN_OK);
            tu_assert_identical("forward_embedded logit", &got, &want, 1);
            attn_explanation *e = explain(m, ids, n, 4);
            tu_assert_identical("explain logit", &e->logit, &want, 1);
            ck_assert(e->probability == 1.0 / (1.0 + exp(-(double)want)));
            attn_explanation_free(e);
            free(copy);
        }
        attn_model_free(m);
    }
}
END_TEST

START_TEST(test_prefix_probabilities) {
    attn_rng r = attn_rng_seed(12);
    int count = 0;
    for (int k = 0; k < 6; k++) {
        if (k % 3 == ATTN_ARCH_TRANSFORMER) continue;
        attn_model *m = model_k(k);
        int ids[40];
        for (int n = 1; n <= 40; n += 3) {
            random_ids(ids, n, &r);
            attn_explanation *e = explain(m, ids, n, 1);
            ck_assert_ptr_nonnull(e->prefix_logit);
            ck_assert_ptr_null(e->attention);
            for (int i = 1; i <= n; i++, count++) {
                const float want = forward_ids(m, ids, i);
                tu_assert_identical("prefix logit", &e->prefix_logit[i - 1], &want, 1);
                ck_assert(e->prefix_probability[i - 1] == 1.0 / (1.0 + exp(-(double)want)));
            }
            tu_assert_identical("last prefix = logit", &e->prefix_logit[n - 1], &e->logit, 1);
            attn_explanation_free(e);
        }
        attn_model_free(m);
    }
    printf("prefix probabilities: %d prefixes bit-identical to their own forward\n", count);
}
END_TEST

START_TEST(test_attention_maps) {
    attn_rng r = attn_rng_seed(13);
    for (int k = 2; k < 6; k += 3) {
        attn_model *m = model_k(k);
        const attn_model_config *c = attn_model_config_of(m);
        int ids[30], n = 30;
        random_ids(ids, n, &r);
        attn_explanation *e = explain(m, ids, n, 1);
        ck_assert_int_eq(e->S, n + 1);
        ck_assert_int_eq(e->n_layers, c->n_layers);
        ck_assert_int_eq(e->n_heads, c->n_heads);
        ck_assert_ptr_null(e->prefix_logit);
        /* the maps of a fresh forward of the same sentence */
        forward_ids(m, ids, n);
        const size_t per = (size_t)e->n_heads * e->S * e->S;
        for (int l = 0; l < c->n_layers; l++) {
            const float *p;
            int S;
            attn_error err;
            ck_assert_int_eq(attn_model_attention_probs(m, l, &p, &S, &err), ATTN_OK);
            ck_assert_int_eq(S, n + 1);
            tu_assert_identical("attention", e->attention + per * l, p, per);
            for (size_t row = 0; row < per / S; row++) {
                double sum = 0.0;
                for (int j = 0; j < S; j++) sum += p[row * S + j];
                ck_assert_msg(fabs(sum - 1.0) < 1e-5, "layer %d row %zu sums to %g", l, row, sum);
            }
        }
        attn_explanation_free(e);
        attn_model_free(m);
    }
    /* not at batch 1, or no attention: refused with a message */
    attn_model *m = model_k(ATTN_ARCH_RNN);
    const float *p;
    int S;
    attn_error err;
    ck_assert_int_eq(attn_model_attention_probs(m, 0, &p, &S, &err), ATTN_ERR_ARG);
    attn_model_free(m);
}
END_TEST

/* logit(x) for finite differences: x is fd_ctx.x, changed in place by tu_check_grad. */
typedef struct fd_ctx {
    attn_model *m;
    float *x;
    int n;
} fd_ctx;

static double fd_logit(void *ctx) {
    fd_ctx *f = ctx;
    float logit;
    attn_error err;
    ck_assert_int_eq(attn_model_forward_embedded(f->m, f->x, f->n, &logit, &err), ATTN_OK);
    return logit;
}

START_TEST(test_saliency_finite_differences) {
    attn_rng r = attn_rng_seed(14);
    for (int k = 0; k < 6; k++) {
        attn_model *m = model_k(k);
        int ids[7], n = 7;
        random_ids(ids, n, &r);
        attn_explanation *e = explain(m, ids, n, 1);
        /* the input gradient of a forward + backward of d logit = 1 at the sentence */
        forward_ids(m, ids, n);
        const float *x, *d_x;
        int rows, D;
        attn_error err;
        attn_batch b = {.B = 1, .T = n, .ids = ids, .lengths = &n};
        const float one = 1.0f;
        attn_model_zero_grad(m);
        ck_assert_int_eq(attn_model_backward(m, &b, &one, &err), ATTN_OK);
        ck_assert_int_eq(attn_model_input(m, &x, &d_x, &rows, &D, &err), ATTN_OK);
        const size_t nx = (size_t)rows * D;
        float *xc = malloc(nx * sizeof *xc), *g = malloc(nx * sizeof *g);
        ck_assert(xc && g);
        memcpy(xc, x, nx * sizeof *xc);
        memcpy(g, d_x, nx * sizeof *g);
        const int w0 = rows - n; /* [CLS] row first in the transformer */
        for (int i = 0; i < n; i++) {
            double sq = 0.0, gx = 0.0;
            for (int j = 0; j < D; j++) {
                sq += (double)g[(w0 + i) * D + j] * g[(w0 + i) * D + j];
                gx += (double)g[(w0 + i) * D + j] * xc[(w0 + i) * D + j];
            }
            ck_assert(e->grad_norm[i] == (float)sqrt(sq));
            ck_assert(e->grad_x_input[i] == (float)gx);
        }
        fd_ctx f = {m, xc, n};
        tu_check_grad("d logit / d x", fd_logit, &f, xc, g, nx, 1e-2f, 2e-3, 2e-2);
        free(xc);
        free(g);
        attn_explanation_free(e);
        attn_model_free(m);
    }
}
END_TEST

START_TEST(test_ig_completeness) {
    attn_rng r = attn_rng_seed(15);
    double worst = 0.0;
    int count = 0;
    for (int k = 0; k < 6; k++) {
        attn_model *m = model_k(k);
        int ids[12];
        for (int t = 0; t < 4; t++) {
            const int n = 3 + 3 * t;
            random_ids(ids, n, &r);
            attn_explanation *e = explain(m, ids, n, 0);
            ck_assert_int_eq(e->ig_steps, ATTN_EXPLAIN_IG_STEPS);
            double sum = 0.0;
            for (int i = 0; i < n; i++) sum += e->integrated_gradients[i];
            const double want = (double)e->logit - e->ig_baseline_logit;
            const double rel = fabs(sum - want) / fabs(want);
            ck_assert_msg(rel <= 0.01, "model %d, %d words: IG sum %g, logit - baseline %g", k, n,
                          sum, want);
            worst = fmax(worst, rel);
            count++;
            attn_explanation_free(e);
        }
        attn_model_free(m);
    }
    printf("integrated gradients: %d sentences complete within %.3g%% (N = %d)\n", count,
           100.0 * worst, ATTN_EXPLAIN_IG_STEPS);
}
END_TEST

int main(void) {
    Suite *s = suite_create("insight/explain");
    TCase *tc = tcase_create("explain");
    tcase_add_test(tc, test_logit_and_embedded_forward);
    tcase_add_test(tc, test_prefix_probabilities);
    tcase_add_test(tc, test_attention_maps);
    tcase_add_test(tc, test_saliency_finite_differences);
    tcase_add_test(tc, test_ig_completeness);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}

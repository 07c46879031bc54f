/* explain.c -- attn_explain: what a model did with one sentence. The logit and probability of
 * an exact-mode forward; the attention probabilities that forward used (Transformer) or the
 * head on the hidden state after each word (RNN/LSTM); saliency per word from the models' own
 * backward (d logit / d first-layer input): gradient norm, gradient x input and integrated
 * gradients from the [PAD] baseline (definitions in attn.h). Uses the public API only. */
#include "attn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void attn_explanation_free(attn_explanation *e) {
    if (!e) return;
    free(e->attention);
    free(e->prefix_logit);
    free(e->prefix_probability);
    free(e->grad_norm);
    free(e->grad_x_input);
    free(e->integrated_gradients);
    free(e);
}

static double sigmoid(float logit) {
    return 1.0 / (1.0 + exp(-(double)logit));
}

/* One forward (ids, or x when non-NULL) and a backward of d logit = 1; *d_x then points at
 * d logit / d x in the model's buffers. */
static attn_status logit_and_grad(attn_model *m, const attn_batch *b, const float *x, float *logit,
                                  const float **d_x, attn_error *err) {
    attn_status st = x ? attn_model_forward_embedded(m, x, b->T, logit, err)
                       : attn_model_forward(m, b, logit, err);
    const float one = 1.0f;
    attn_model_zero_grad(m);
    if (st == ATTN_OK) st = attn_model_backward(m, b, &one, err);
    if (st == ATTN_OK) st = attn_model_input(m, NULL, d_x, NULL, NULL, err);
    return st;
}

/* The attention maps the forward used (Transformer; call right after the forward). */
static attn_status keep_attention(attn_model *m, attn_explanation *e, attn_error *err) {
    const attn_model_config *c = attn_model_config_of(m);
    const int n = e->n_words;
    const size_t per_layer = (size_t)c->n_heads * (n + 1) * (n + 1);
    e->n_layers = c->n_layers;
    e->n_heads = c->n_heads;
    e->S = n + 1;
    e->attention = malloc(per_layer * c->n_layers * sizeof(float));
    if (!e->attention) return attn_errorf(err, ATTN_ERR_NOMEM, "explain: out of memory");
    for (int l = 0; l < c->n_layers; l++) {
        const float *p;
        int S;
        attn_status st = attn_model_attention_probs(m, l, &p, &S, err);
        if (st != ATTN_OK) return st;
        memcpy(e->attention + per_layer * l, p, per_layer * sizeof(float));
    }
    return ATTN_OK;
}

/* RNN/LSTM: the logit of each prefix ids[0..i], by a forward of the prefix. (The head on the
 * full pass's hidden state h[i+1] is the same number mathematically, but OpenBLAS rounds the
 * input-projection GEMM of T rows differently from one of i+1 rows: measured up to 9 ULP
 * apart. A forward per prefix is what `attn predict` of the prefix computes, bit for bit.) */
static attn_status keep_prefixes(attn_model *m, const attn_batch *b, attn_explanation *e,
                                 attn_error *err) {
    const int n = e->n_words;
    e->prefix_logit = malloc((size_t)n * sizeof(float));
    e->prefix_probability = malloc((size_t)n * sizeof(double));
    if (!e->prefix_logit || !e->prefix_probability)
        return attn_errorf(err, ATTN_ERR_NOMEM, "explain: out of memory");
    attn_status st = ATTN_OK;
    for (int i = 1; st == ATTN_OK && i <= n; i++) {
        const attn_batch p = {.B = 1, .T = i, .ids = b->ids, .lengths = &i};
        st = attn_model_forward(m, &p, &e->prefix_logit[i - 1], err);
        e->prefix_probability[i - 1] = sigmoid(e->prefix_logit[i - 1]);
    }
    return st;
}

/* Gradient norm and gradient x input of each word from x and d_x (rows [., D]). */
static void saliency(attn_explanation *e, const float *x, const float *d_x, int D) {
    for (int i = 0; i < e->n_words; i++) {
        double sq = 0.0, gx = 0.0;
        for (int j = 0; j < D; j++) {
            const double g = d_x[(size_t)i * D + j];
            sq += g * g;
            gx += g * x[(size_t)i * D + j];
        }
        e->grad_norm[i] = (float)sqrt(sq);
        e->grad_x_input[i] = (float)gx;
    }
}

/* Integrated gradients from the baseline xb to x0 (both [rows, D]; they differ in the word
 * rows only, from w0): N midpoint steps; the baseline's logit into e. */
static attn_status integrated_gradients(attn_model *m, const attn_batch *b, const float *x0,
                                        const float *xb, int rows, int D, int w0,
                                        attn_explanation *e, attn_error *err) {
    const size_t nx = (size_t)rows * D;
    float *x = malloc(nx * sizeof(float));
    double *sum = calloc(nx, sizeof(double));
    attn_status st =
        x && sum ? ATTN_OK : attn_errorf(err, ATTN_ERR_NOMEM, "explain: out of memory");
    const float *d_x;
    float logit;
    for (int k = 0; st == ATTN_OK && k <= e->ig_steps; k++) {
        /* k = 0: the baseline itself (its logit); k >= 1: the (k - 1/2)/N point */
        const float a = k == 0 ? 0.0f : ((float)k - 0.5f) / (float)e->ig_steps;
        for (size_t r = 0; r < nx; r++) x[r] = xb[r] + a * (x0[r] - xb[r]);
        st = logit_and_grad(m, b, x, &logit, &d_x, err);
        if (st == ATTN_OK && k == 0) e->ig_baseline_logit = logit;
        for (size_t r = 0; st == ATTN_OK && k > 0 && r < nx; r++) sum[r] += d_x[r];
    }
    for (int i = 0; st == ATTN_OK && i < e->n_words; i++) {
        double s = 0.0;
        for (int j = 0; j < D; j++) {
            const size_t r = (size_t)(w0 + i) * D + j;
            s += ((double)x0[r] - xb[r]) * (sum[r] / e->ig_steps);
        }
        e->integrated_gradients[i] = (float)s;
    }
    free(x);
    free(sum);
    return st;
}

/* The first-layer input of the sentence (after attn_model_forward of it) and of the baseline:
 * the same length of [PAD] words; into xs [2, rows, D]. */
static attn_status inputs_and_baseline(attn_model *m, const attn_batch *b, float **xs, int *rows,
                                       int *D, attn_error *err) {
    const float *x;
    attn_status st = attn_model_input(m, &x, NULL, rows, D, err);
    if (st != ATTN_OK) return st;
    const size_t nx = (size_t)*rows * *D;
    int *pad = calloc((size_t)b->T, sizeof *pad); /* ATTN_PAD_ID = 0 */
    *xs = malloc(2 * nx * sizeof(float));
    if (!pad || !*xs) st = attn_errorf(err, ATTN_ERR_NOMEM, "explain: out of memory");
    if (st == ATTN_OK) {
        memcpy(*xs, x, nx * sizeof(float));
        const attn_batch pb = {.B = 1, .T = b->T, .ids = pad, .lengths = b->lengths};
        float logit;
        st = attn_model_forward(m, &pb, &logit, err);
    }
    if (st == ATTN_OK) st = attn_model_input(m, &x, NULL, NULL, NULL, err);
    if (st == ATTN_OK) memcpy(*xs + nx, x, nx * sizeof(float));
    free(pad);
    return st;
}

/* Everything for one sentence: the exact forward (+ attention) and its input gradient, the
 * saliency, the prefixes (RNN/LSTM), integrated gradients. */
static attn_status explain_fill(attn_model *m, const attn_batch *b, attn_explanation *e,
                                attn_error *err) {
    const bool tf = e->arch == ATTN_ARCH_TRANSFORMER;
    const float *d_x;
    float *xs = NULL;
    int rows, D;
    attn_status st = logit_and_grad(m, b, NULL, &e->logit, &d_x, err);
    if (st == ATTN_OK && tf) st = keep_attention(m, e, err);
    if (st != ATTN_OK) return st;
    e->probability = sigmoid(e->logit);
    const int w0 = tf ? 1 : 0; /* the Transformer's [CLS] row comes first */
    const float *x;
    st = attn_model_input(m, &x, NULL, &rows, &D, err);
    if (st == ATTN_OK) saliency(e, x + (size_t)w0 * D, d_x + (size_t)w0 * D, D);
    if (st == ATTN_OK) st = inputs_and_baseline(m, b, &xs, &rows, &D, err);
    if (st == ATTN_OK)
        st = integrated_gradients(m, b, xs, xs + (size_t)rows * D, rows, D, w0, e, err);
    if (st == ATTN_OK && !tf) st = keep_prefixes(m, b, e, err);
    free(xs);
    return st;
}

attn_status attn_explain(attn_model *m, const int *ids, int n_words, const attn_explain_opts *opts,
                         attn_explanation **out, attn_error *err) {
    *out = NULL;
    const int steps = opts && opts->ig_steps ? opts->ig_steps : ATTN_EXPLAIN_IG_STEPS;
    if (steps < 1) return attn_errorf(err, ATTN_ERR_ARG, "explain: ig_steps %d < 1", steps);
    if (!ids || n_words < 1) return attn_errorf(err, ATTN_ERR_ARG, "explain: no words");
    attn_explanation *e = calloc(1, sizeof *e);
    if (!e) return attn_errorf(err, ATTN_ERR_NOMEM, "explain: out of memory");
    e->arch = attn_model_config_of(m)->arch;
    e->n_words = n_words;
    e->ig_steps = steps;
    e->grad_norm = malloc((size_t)n_words * sizeof(float));
    e->grad_x_input = malloc((size_t)n_words * sizeof(float));
    e->integrated_gradients = malloc((size_t)n_words * sizeof(float));
    attn_status st = e->grad_norm && e->grad_x_input && e->integrated_gradients
                         ? ATTN_OK
                         : attn_errorf(err, ATTN_ERR_NOMEM, "explain: out of memory");
    const attn_batch b = {.B = 1, .T = n_words, .ids = ids, .lengths = &n_words};
    if (st == ATTN_OK) st = explain_fill(m, &b, e, err);
    attn_model_zero_grad(m);
    if (st != ATTN_OK) {
        attn_explanation_free(e);
        return st;
    }
    *out = e;
    return ATTN_OK;
}

/* explain.c -- attn_explain: what a model did with one sentence. The logit and probability of
 * an exact-mode forward; the attention probabilities that forward used (Transformer) or the
 * head on the hidden state after each word (RNN/LSTM); saliency per word from the models' own
 * backward (d logit / d first-layer input): gradient norm, gradient x input and integrated
 * gradients from the [PAD] baseline (definitions in attn.h; computed in integrated_gradients.c).
 * Uses the public API only. */
#include "explain_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void attn_explanation_free(attn_explanation *e) {
    if (!e) return;
    free(e->attention);
    free(e->q);
    free(e->k);
    free(e->scores);
    free(e->dot_products);
    free(e->score_bias);
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

/* One forward of the sentence and a backward of d logit = 1; *d_x then points at d logit / d x
 * in the model's buffers. */
static attn_status logit_and_grad(attn_model *m, const attn_batch *b, float *logit,
                                  const float **d_x, attn_error *err) {
    attn_status st = attn_model_forward(m, b, logit, err);
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

/* pos alibi: scores = dot_products + score_bias, one float add each, as the forward adds the
 * bias (attn_attention_forward_bias); the bias the same for every layer. */
static attn_status add_score_bias(attn_model *m, attn_explanation *e, size_t heads, size_t SS,
                                  attn_error *err) {
    const int NH = attn_model_config_of(m)->n_heads;
    float *bias = malloc((size_t)NH * SS * sizeof(float));
    if (!bias) return attn_errorf(err, ATTN_ERR_NOMEM, "explain: out of memory");
    if (!attn_model_score_bias(m, e->S, bias)) { /* no term: scores are q.k^T alone */
        free(bias);
        return ATTN_OK;
    }
    e->dot_products = malloc(heads * SS * sizeof(float));
    e->score_bias = malloc(heads * SS * sizeof(float));
    if (!e->dot_products || !e->score_bias) {
        free(bias);
        return attn_errorf(err, ATTN_ERR_NOMEM, "explain: out of memory");
    }
    memcpy(e->dot_products, e->scores, heads * SS * sizeof(float));
    for (size_t o = 0; o < heads; o += NH)
        memcpy(e->score_bias + o * SS, bias, (size_t)NH * SS * sizeof(float));
    for (size_t i = 0; i < heads * SS; i++) e->scores[i] += e->score_bias[i];
    free(bias);
    return ATTN_OK;
}

/* opts.qk: each head's q and k (copied out of the layer's buffers, contiguous [S, HS]) and its
 * scores q.k^T by the product the forward used (attn_attention_forward: attn_bmm of PyTorch's
 * shape, a loop or one sgemm by ATen's size rule; call right after the forward), plus the
 * ALiBi term with pos alibi (add_score_bias). */
static attn_status keep_qk(attn_model *m, attn_explanation *e, attn_error *err) {
    const attn_model_config *c = attn_model_config_of(m);
    const int S = e->S, NH = c->n_heads, HS = c->embed_dim / c->n_heads;
    const size_t heads = (size_t)c->n_layers * NH, per_head = (size_t)S * HS;
    e->q = malloc(heads * per_head * sizeof(float));
    e->k = malloc(heads * per_head * sizeof(float));
    e->scores = malloc(heads * (size_t)S * S * sizeof(float));
    if (!e->q || !e->k || !e->scores)
        return attn_errorf(err, ATTN_ERR_NOMEM, "explain: out of memory");
    const bool loop = attn_bmm_is_loop(S, S, HS);
    for (int l = 0; l < c->n_layers; l++) {
        const float *q, *k;
        size_t hs, ld;
        int n;
        attn_status st = attn_model_attention_qk(m, l, &q, &k, &hs, &ld, &n, err);
        if (st != ATTN_OK) return st;
        for (int h = 0; h < NH; h++) {
            const size_t o = (size_t)l * NH + h;
            float *qh = e->q + o * per_head, *kh = e->k + o * per_head;
            for (int t = 0; t < S; t++) {
                memcpy(qh + (size_t)t * HS, q + h * hs + t * ld, (size_t)HS * sizeof(float));
                memcpy(kh + (size_t)t * HS, k + h * hs + t * ld, (size_t)HS * sizeof(float));
            }
            attn_bmm_nt(e->scores + o * S * S, qh, kh, S, S, HS, 0.0f, loop, ATTN_OP_QK,
                        ATTN_PASS_FORWARD);
        }
    }
    return add_score_bias(m, e, heads, (size_t)S * S, err);
}

/* RNN/LSTM: the logit of each prefix ids[0..i], the float `attn predict` of the prefix gives
 * (attn_model_prefix_logits: the head on every hidden state of one pass, steps redone only where
 * a prefix's own GEMM rounds differently). */
static attn_status keep_prefixes(attn_model *m, const attn_batch *b, attn_explanation *e,
                                 attn_error *err) {
    const int n = e->n_words;
    e->prefix_logit = malloc((size_t)n * sizeof(float));
    e->prefix_probability = malloc((size_t)n * sizeof(double));
    if (!e->prefix_logit || !e->prefix_probability)
        return attn_errorf(err, ATTN_ERR_NOMEM, "explain: out of memory");
    attn_status st = attn_model_prefix_logits(m, b->ids, n, e->prefix_logit, err);
    for (int i = 0; st == ATTN_OK && i < n; i++)
        e->prefix_probability[i] = sigmoid(e->prefix_logit[i]);
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

/* The first-layer input of the sentence (after attn_model_forward of it) and of the baseline:
 * the same length of [PAD] words; into xs [2, rows, D]; the baseline's logit (a forward of the
 * [PAD] words, the same float as a forward of its input rows). */
static attn_status inputs_and_baseline(attn_model *m, const attn_batch *b, float **xs, int *rows,
                                       int *D, float *baseline_logit, attn_error *err) {
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
        st = attn_model_forward(m, &pb, baseline_logit, err);
    }
    if (st == ATTN_OK) st = attn_model_input(m, &x, NULL, NULL, NULL, err);
    if (st == ATTN_OK) memcpy(*xs + nx, x, nx * sizeof(float));
    free(pad);
    return st;
}

/* Everything for one sentence on one thread: the exact forward (+ attention) and its input
 * gradient, the saliency, integrated gradients (models[0] is m), the prefixes (RNN/LSTM). */
static attn_status explain_serial(attn_model **models, attn_pool *pool, const attn_batch *b,
                                  attn_explanation *e, attn_error *err) {
    attn_model *m = models[0];
    const bool tf = e->arch == ATTN_ARCH_TRANSFORMER;
    const float *d_x;
    float *xs = NULL;
    int rows, D;
    attn_status st = logit_and_grad(m, b, &e->logit, &d_x, err);
    if (st == ATTN_OK && tf) st = keep_attention(m, e, err);
    if (st == ATTN_OK && tf && e->head_size > 0) st = keep_qk(m, e, err);
    if (st != ATTN_OK) return st;
    const int w0 = tf ? 1 : 0; /* the Transformer's [CLS] row comes first */
    const float *x;
    st = attn_model_input(m, &x, NULL, &rows, &D, err);
    if (st == ATTN_OK) saliency(e, x + (size_t)w0 * D, d_x + (size_t)w0 * D, D);
    const bool ig = e->ig_steps > 0;
    if (st == ATTN_OK && ig)
        st = inputs_and_baseline(m, b, &xs, &rows, &D, &e->ig_baseline_logit, err);
    if (st == ATTN_OK && ig)
        st = attn_explain_integrated_gradients(models, pool, b, xs, xs + (size_t)rows * D, rows, D,
                                               w0, NULL, NULL, e, err);
    if (st == ATTN_OK && !tf) st = keep_prefixes(m, b, e, err);
    free(xs);
    return st;
}

/* The same on several threads, in two runs of the pool: first the sentence's forward on m
 * (with the attention it used) beside the baseline's forward on a worker's replica (their
 * first-layer inputs into xs [2, rows, D]); then the integrated-gradient chunks on the workers'
 * replicas, the first wave with one more task: the sentence's backward on m, its saliency and
 * (RNN/LSTM) the prefixes. Every part is the serial path's computation on its own model, so
 * the bytes are the same. */
typedef struct par_ctx {
    attn_model *m, **models;
    const attn_batch *b;
    attn_explanation *e;
    float *xs;
    int rows[2], D[2];
    attn_error errs[2]; /* [0] the sentence's parts, [1] the baseline */
} par_ctx;

static void first_task(void *vc, int task, int worker) {
    par_ctx *c = vc;
    attn_error *err = &c->errs[task];
    const attn_batch *b = c->b;
    int *pad = NULL;
    attn_model *m = task == 0 ? c->m : c->models[worker];
    attn_status st = ATTN_OK;
    if (task == 0) {
        st = attn_model_forward(m, b, &c->e->logit, err);
        if (st == ATTN_OK && c->e->arch == ATTN_ARCH_TRANSFORMER) st = keep_attention(m, c->e, err);
        if (st == ATTN_OK && c->e->head_size > 0) st = keep_qk(m, c->e, err);
    } else {
        pad = calloc((size_t)b->T, sizeof *pad); /* ATTN_PAD_ID = 0 */
        const attn_batch pb = {.B = 1, .T = b->T, .ids = pad, .lengths = b->lengths};
        st = pad ? attn_model_forward(m, &pb, &c->e->ig_baseline_logit, err)
                 : attn_errorf(err, ATTN_ERR_NOMEM, "explain: out of memory");
    }
    const float *x;
    if (st == ATTN_OK) st = attn_model_input(m, &x, NULL, &c->rows[task], &c->D[task], err);
    const size_t nx = (size_t)c->rows[task] * c->D[task];
    if (st == ATTN_OK) memcpy(c->xs + task * nx, x, nx * sizeof(float));
    free(pad);
    err->status = st;
}

static void sentence_tail(void *vc) {
    par_ctx *c = vc;
    attn_error *err = &c->errs[0];
    const float one = 1.0f, *x, *d_x;
    const int w0 = c->e->arch == ATTN_ARCH_TRANSFORMER ? 1 : 0;
    attn_model_zero_grad(c->m);
    attn_status st = attn_model_backward(c->m, c->b, &one, err);
    if (st == ATTN_OK) st = attn_model_input(c->m, &x, &d_x, NULL, NULL, err);
    if (st == ATTN_OK)
        saliency(c->e, x + (size_t)w0 * c->D[0], d_x + (size_t)w0 * c->D[0], c->D[0]);
    if (st == ATTN_OK && !w0) st = keep_prefixes(c->m, c->b, c->e, err);
    err->status = st;
}

static attn_status explain_parallel(attn_model *m, attn_model **models, attn_pool *pool,
                                    const attn_batch *b, attn_explanation *e, attn_error *err) {
    const attn_model_config *cfg = attn_model_config_of(m);
    const size_t most = (size_t)(b->T + 1) * cfg->embed_dim; /* rows x width, at most */
    par_ctx c = {m, models, b, e, malloc(2 * most * sizeof(float)), {0, 0}, {0, 0}, {{0}}};
    if (!c.xs) return attn_errorf(err, ATTN_ERR_NOMEM, "explain: out of memory");
    attn_pool_run(pool, 2, first_task, &c);
    attn_status st = ATTN_OK;
    for (int i = 0; i < 2 && st == ATTN_OK; i++)
        if (c.errs[i].status != ATTN_OK) {
            if (err) *err = c.errs[i];
            st = c.errs[i].status;
        }
    if (st == ATTN_OK &&
        (c.rows[0] != c.rows[1] || c.D[0] != c.D[1] || (size_t)c.rows[0] * c.D[0] > most))
        st = attn_errorf(err, ATTN_ERR_VALUE, "explain: inputs of %d x %d and %d x %d floats",
                         c.rows[0], c.D[0], c.rows[1], c.D[1]);
    const int w0 = e->arch == ATTN_ARCH_TRANSFORMER ? 1 : 0;
    const size_t nx = (size_t)c.rows[0] * c.D[0];
    if (st == ATTN_OK)
        st = attn_explain_integrated_gradients(models, pool, b, c.xs, c.xs + nx, c.rows[0], c.D[0],
                                               w0, sentence_tail, &c, e, err);
    if (st == ATTN_OK && c.errs[0].status != ATTN_OK) {
        if (err) *err = c.errs[0];
        st = c.errs[0].status;
    }
    free(c.xs);
    return st;
}

/* ---- the memory bound ---------------------------------------------------------------------- */

/* Floats of a model's activations for a batch of B copies of a T-word sentence, bounded from
 * above by the models' arena layouts (src/models/recurrent.c, transformer.c): recurrent, per
 * row and word, the input and its gradient (2E) and per layer at most 20 H (LSTM: xw and its
 * gradient 8 H, h, c, the saved gates and tanh(c) 8 H); the Transformer per row and layer
 * 16 D + 2 F and the attention probabilities of every head, the backward scratch once, and
 * the whole times 1.5 (the arena grows by half at least). */
static double activation_floats(const attn_model_config *c, double B, double T) {
    const double E = c->embed_dim, H = c->hidden_size, L = c->n_layers;
    if (c->arch != ATTN_ARCH_TRANSFORMER) return B * (T + 1.0) * (2.0 * E + 20.0 * L * H + 4.0 * H);
    const double D = E, F = c->ffn_dim, NH = c->n_heads, S = T + 1.0, N = B * S;
    const double per_layer = N * (16.0 * D + 2.0 * F + 4.0) + NH * B * S * S;
    const double scratch = N * (16.0 * D + 2.0 * F) + 2.0 * S * S + NH * S * S;
    return 1.5 * (L * per_layer + scratch + (L + 2.0) * N * D + 8.0 * B * D);
}

double attn_explain_bytes(const attn_model *m, int n_words, int ig_steps, int threads) {
    const attn_model_config *c = attn_model_config_of(m);
    const bool tf = c->arch == ATTN_ARCH_TRANSFORMER;
    const double n = n_words, f = sizeof(float), chunk = ATTN_EXPLAIN_IG_CHUNK;
    const double nx = (n + (tf ? 1.0 : 0.0)) * c->embed_dim; /* first-layer input floats */
    double bytes = n * (4.0 * f + sizeof(double));           /* the explanation's per-word arrays */
    if (tf) /* attention, and q, k and scores when asked for (opts.qk; alibi: q.k and its term) */
        bytes += f * c->n_layers * c->n_heads * (n + 1.0) *
                     ((c->pos == ATTN_POS_ALIBI ? 4.0 : 2.0) * (n + 1.0) +
                      2.0 * c->embed_dim / c->n_heads) +
                 (c->pos == ATTN_POS_ALIBI ? f * c->n_heads * (n + 1.0) * (n + 1.0) : 0.0);
    else
        bytes += f * 4.0 * c->hidden_size * n; /* prefixes: one input GEMM (G <= 4 gates) */
    if (ig_steps <= 0) return bytes + f * activation_floats(c, 1.0, n);
    const double n_chunks = ceil(ig_steps / chunk);
    const double models = threads < n_chunks ? threads : n_chunks; /* models at work at once */
    const double W = attn_explain_ig_wave((int)n_chunks, threads, (size_t)nx); /* chunks per wave */
    bytes += f * 2.0 * nx + f * n; /* sentence and baseline inputs, [PAD] ids */
    bytes += f * chunk * n + 2.0 * f * W * chunk * nx + sizeof(double) * nx; /* ids, x, d_x, sum */
    bytes += models * f * activation_floats(c, chunk, n);
    /* the replicas: one per thread beside m when there are several, and m's own batch-1 pass */
    bytes += (threads > 1 ? threads : 0.0) * 2.0 * f * (double)attn_model_n_params(m);
    if (threads > 1) bytes += f * activation_floats(c, 1.0, n);
    return bytes;
}

/* Explains sentences with m on pool's threads; the replicas (one per thread, made at the first
 * explanation with integrated gradients on more than one thread) keep their buffers between
 * sentences. */
struct attn_explainer {
    attn_model *m;
    attn_pool *pool;
    attn_model **models; /* [threads] replicas of m, or NULL */
};

attn_status attn_explainer_create(attn_model *m, attn_pool *pool, attn_explainer **out,
                                  attn_error *err) {
    *out = calloc(1, sizeof **out);
    if (!*out) return attn_errorf(err, ATTN_ERR_NOMEM, "explain: out of memory");
    (*out)->m = m;
    (*out)->pool = pool;
    return ATTN_OK;
}

void attn_explainer_free(attn_explainer *x) {
    if (!x) return;
    for (int w = 0; x->models && w < attn_pool_threads(x->pool); w++) attn_model_free(x->models[w]);
    free(x->models);
    free(x);
}

/* thread w's model: a replica each; m does the sentence's own passes beside them */
static attn_status explainer_replicas(attn_explainer *x, attn_error *err) {
    const int threads = attn_pool_threads(x->pool);
    if (x->models) return ATTN_OK;
    x->models = calloc((size_t)threads, sizeof *x->models);
    if (!x->models) return attn_errorf(err, ATTN_ERR_NOMEM, "explain: out of memory");
    for (int w = 0; w < threads; w++) {
        attn_status st = attn_model_replica(x->m, &x->models[w], err);
        if (st != ATTN_OK) return st;
    }
    return ATTN_OK;
}

attn_status attn_explainer_run(attn_explainer *x, const int *ids, int n_words,
                               const attn_explain_opts *opts, attn_explanation **out,
                               attn_error *err) {
    *out = NULL;
    attn_model *m = x->m;
    const int asked = opts ? opts->ig_steps : 0;
    const int steps = asked == 0 ? ATTN_EXPLAIN_IG_STEPS : asked == ATTN_EXPLAIN_NO_IG ? 0 : asked;
    if (asked != ATTN_EXPLAIN_NO_IG && (steps < 1 || steps > ATTN_EXPLAIN_MAX_STEPS))
        return attn_errorf(err, ATTN_ERR_ARG, "explain: ig_steps %d, expected 1..%d", steps,
                           ATTN_EXPLAIN_MAX_STEPS);
    if (!ids || n_words < 1) return attn_errorf(err, ATTN_ERR_ARG, "explain: no words");
    const int threads = steps ? attn_pool_threads(x->pool) : 1;
    const size_t limit = opts && opts->max_bytes ? opts->max_bytes : ATTN_EXPLAIN_MAX_BYTES;
    const double need = attn_explain_bytes(m, n_words, steps, threads);
    if (need > (double)limit)
        return attn_errorf(err, ATTN_ERR_NOMEM,
                           "explain: %d words would need up to %.0f bytes (%.1f MiB; %d "
                           "integrated-gradient steps on %d thread%s), more than the limit of %zu "
                           "bytes (%.1f MiB); nothing was allocated",
                           n_words, need, need / (1 << 20), steps, threads, threads == 1 ? "" : "s",
                           limit, (double)limit / (1 << 20));
    attn_explanation *e = calloc(1, sizeof *e);
    if (!e) return attn_errorf(err, ATTN_ERR_NOMEM, "explain: out of memory");
    e->arch = attn_model_config_of(m)->arch;
    e->n_words = n_words;
    e->ig_steps = steps;
    const attn_model_config *mc = attn_model_config_of(m);
    e->head_size = opts && opts->qk && e->arch == ATTN_ARCH_TRANSFORMER
                       ? mc->embed_dim / mc->n_heads
                       : 0; /* keep_qk fills q, k, scores */
    e->grad_norm = malloc((size_t)n_words * sizeof(float));
    e->grad_x_input = malloc((size_t)n_words * sizeof(float));
    e->integrated_gradients = steps ? malloc((size_t)n_words * sizeof(float)) : NULL;
    attn_status st = e->grad_norm && e->grad_x_input && (e->integrated_gradients || !steps)
                         ? ATTN_OK
                         : attn_errorf(err, ATTN_ERR_NOMEM, "explain: out of memory");
    const attn_batch b = {.B = 1, .T = n_words, .ids = ids, .lengths = &n_words};
    if (st == ATTN_OK && threads > 1) st = explainer_replicas(x, err);
    if (st == ATTN_OK)
        st = threads > 1 ? explain_parallel(m, x->models, x->pool, &b, e, err)
                         : explain_serial(&m, NULL, &b, e, err);
    if (st == ATTN_OK) e->probability = sigmoid(e->logit);
    attn_model_zero_grad(m);
    if (st != ATTN_OK) {
        attn_explanation_free(e);
        return st;
    }
    *out = e;
    return ATTN_OK;
}

attn_status attn_explain(attn_model *m, const int *ids, int n_words, const attn_explain_opts *opts,
                         attn_explanation **out, attn_error *err) {
    return attn_explain_pool(m, ids, n_words, opts, NULL, out, err);
}

attn_status attn_explain_pool(attn_model *m, const int *ids, int n_words,
                              const attn_explain_opts *opts, attn_pool *pool,
                              attn_explanation **out, attn_error *err) {
    attn_explainer *x = NULL;
    *out = NULL;
    attn_status st = attn_explainer_create(m, pool, &x, err);
    if (st == ATTN_OK) st = attn_explainer_run(x, ids, n_words, opts, out, err);
    attn_explainer_free(x);
    return st;
}

/* seq2seq_explain.c -- attn_seq2seq_explain: what a seq2seq model did with one source. Greedy
 * generation by recomputing the decoder over [BOS] + the words so far (a forced prefix first),
 * the top-5 of every step's softmax, the attention maps of the teacher-forced pass over the
 * output (the architecture's maps hook) and saliency per step and source word from the
 * model's backward (d chosen logit / d first-layer input). Uses the public API only. */
#include "attn.h"
#include "attn_seq2seq.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void attn_s2s_explanation_free(attn_s2s_explanation *e) {
    if (!e) return;
    free(e->out);
    free(e->chosen);
    free(e->chosen_prob);
    free(e->top_ids);
    free(e->top_probs);
    free(e->cross);
    free(e->self);
    free(e->grad_norm);
    free(e->grad_x_input);
    free(e);
}

/* The K most probable of probs[V] (descending; equal probabilities: the lower id first). */
static void top_k(const float *probs, int V, int *ids, float *p) {
    for (int k = 0; k < ATTN_S2S_TOP_K; k++) ids[k] = -1, p[k] = -1.0f;
    for (int j = 0; j < V; j++) {
        int at = ATTN_S2S_TOP_K;
        while (at > 0 && (ids[at - 1] < 0 || probs[j] > p[at - 1])) at--;
        if (at == ATTN_S2S_TOP_K) continue;
        for (int k = ATTN_S2S_TOP_K - 1; k > at; k--) ids[k] = ids[k - 1], p[k] = p[k - 1];
        ids[at] = j, p[at] = probs[j];
    }
}

/* The argmax of x[n] (the first of equal maxima; NaN wins), as attn_seq2seq_greedy. */
static int argmax(const float *x, int n) {
    int best = 0;
    for (int j = 1; j < n; j++)
        if (!isnan(x[best]) && (x[j] > x[best] || isnan(x[j]))) best = j;
    return best;
}

static attn_status check_opts(const attn_seq2seq *m, const attn_s2s_explain_opts *o, int max_out,
                              attn_error *err) {
    const attn_seq2seq_config *c = attn_seq2seq_config_of(m);
    if (max_out < 1 || max_out + 1 > c->max_tgt_len)
        return attn_errorf(err, ATTN_ERR_ARG, "explain: at most %d output words (max_tgt_len %d)",
                           c->max_tgt_len - 1, c->max_tgt_len);
    if (c->tgt_vocab <= ATTN_TGT_EOS)
        return attn_errorf(err, ATTN_ERR_VALUE, "explain: the target vocabulary has no [BOS]");
    const int np = o ? o->n_prefix : 0;
    if (np < 0 || np > max_out || (np > 0 && !o->prefix))
        return attn_errorf(err, ATTN_ERR_ARG, "explain: a prefix of %d tokens, at most %d", np,
                           max_out);
    for (int i = 0; i < np; i++) {
        const int t = o->prefix[i];
        if (t <= ATTN_PAD_ID || t >= c->tgt_vocab || t == ATTN_TGT_BOS || t == ATTN_TGT_EOS)
            return attn_errorf(err, ATTN_ERR_VALUE,
                               "explain: prefix token %d has id %d, not a word of the target "
                               "vocabulary (1..%d without [BOS] and [EOS])",
                               i + 1, t, c->tgt_vocab - 1);
    }
    return ATTN_OK;
}

/* Generation: each step a forward over dec [BOS] + the words so far; the last row's logits
 * give the step's softmax, top-5 and (after the prefix) the argmax. */
static attn_status generate(attn_seq2seq *m, const int *src, int n_src, const int *prefix,
                            int n_prefix, int max_out, int *dec, float *logits, float *probs,
                            attn_s2s_explanation *e, attn_error *err) {
    const int Vt = attn_seq2seq_config_of(m)->tgt_vocab, K = ATTN_S2S_TOP_K;
    dec[0] = ATTN_TGT_BOS;
    e->n_out = 0;
    e->T = 0;
    e->ended = false;
    while (e->n_out < max_out) {
        const int T = e->n_out + 1;
        const attn_s2s_batch b = {1, n_src, T, src, &n_src, dec, &T};
        attn_status st = attn_seq2seq_forward(m, &b, logits, err);
        if (st != ATTN_OK) return st;
        const float *last = logits + (size_t)e->n_out * Vt;
        attn_softmax_forward(probs, last, 1, Vt, Vt);
        const int t = e->T++;
        top_k(probs, Vt, e->top_ids + (size_t)t * K, e->top_probs + (size_t)t * K);
        const int next = e->n_out < n_prefix ? prefix[e->n_out] : argmax(last, Vt);
        e->chosen[t] = next;
        e->chosen_prob[t] = probs[next];
        if (next == ATTN_TGT_EOS) {
            e->ended = true;
            break;
        }
        e->out[e->n_out++] = next;
        dec[e->n_out] = next;
    }
    return ATTN_OK;
}

/* Saliency of every step: one teacher-forced forward over dec[0..T), then per step t a
 * backward of d logit_t[chosen_t] = 1 for the gradient at the source's first-layer input. */
static attn_status saliency(attn_seq2seq *m, const int *src, int n_src, const int *dec,
                            float *logits, attn_s2s_explanation *e, attn_error *err) {
    const int Vt = attn_seq2seq_config_of(m)->tgt_vocab, E = attn_seq2seq_source_width(m);
    const int T = e->T, S = n_src;
    float *x = malloc((size_t)S * E * sizeof *x), *g = malloc((size_t)S * E * sizeof *g);
    float *d_logits = calloc((size_t)T * Vt, sizeof *d_logits);
    e->grad_norm = malloc((size_t)T * S * sizeof(float));
    e->grad_x_input = malloc((size_t)T * S * sizeof(float));
    attn_status st = x && g && d_logits && e->grad_norm && e->grad_x_input
                         ? ATTN_OK
                         : attn_errorf(err, ATTN_ERR_NOMEM, "explain: out of memory");
    if (st == ATTN_OK) st = attn_seq2seq_source_input(m, src, n_src, x, err);
    const attn_s2s_batch b = {1, n_src, T, src, &n_src, dec, &T};
    if (st == ATTN_OK) st = attn_seq2seq_forward(m, &b, logits, err);
    for (int t = 0; st == ATTN_OK && t < T; t++) {
        const size_t one = (size_t)t * Vt + e->chosen[t];
        d_logits[one] = 1.0f;
        attn_seq2seq_zero_grad(m);
        st = attn_seq2seq_backward_source(m, &b, d_logits, g, err);
        d_logits[one] = 0.0f;
        for (int i = 0; st == ATTN_OK && i < S; i++) {
            double sq = 0.0, gx = 0.0;
            for (int j = 0; j < E; j++) {
                const double gj = g[(size_t)i * E + j];
                sq += gj * gj;
                gx += gj * x[(size_t)i * E + j];
            }
            e->grad_norm[(size_t)t * S + i] = (float)sqrt(sq);
            e->grad_x_input[(size_t)t * S + i] = (float)gx;
        }
    }
    attn_seq2seq_zero_grad(m);
    free(x);
    free(g);
    free(d_logits);
    return st;
}

static attn_status maps(attn_seq2seq *m, const int *src, int n_src, const int *dec,
                        attn_s2s_explanation *e, attn_error *err) {
    bool has_self;
    if (!attn_seq2seq_map_shape(m, &e->n_layers, &e->n_heads, &has_self)) return ATTN_OK;
    const size_t LH = (size_t)e->n_layers * e->n_heads, T = (size_t)e->T;
    e->cross = malloc(LH * T * n_src * sizeof(float));
    e->self = has_self ? malloc(LH * T * T * sizeof(float)) : NULL;
    if (!e->cross || (has_self && !e->self))
        return attn_errorf(err, ATTN_ERR_NOMEM, "explain: out of memory");
    return attn_seq2seq_maps(m, src, n_src, dec, e->T, e->cross, e->self, err);
}

attn_status attn_seq2seq_explain(attn_seq2seq *m, const int *src, int n_src,
                                 const attn_s2s_explain_opts *opts, attn_s2s_explanation **out,
                                 attn_error *err) {
    if (!m || !src || !out) return attn_errorf(err, ATTN_ERR_ARG, "explain: NULL argument");
    *out = NULL;
    const attn_seq2seq_config *c = attn_seq2seq_config_of(m);
    const int max_out = opts && opts->max_out ? opts->max_out : c->max_tgt_len - 1;
    attn_status st = check_opts(m, opts, max_out, err);
    if (st != ATTN_OK) return st;
    if (n_src < 1 || n_src > c->max_src_len)
        return attn_errorf(err, ATTN_ERR_SHAPE,
                           "explain: a source of %d words, the model takes 1..%d", n_src,
                           c->max_src_len);
    const int Vt = c->tgt_vocab, K = ATTN_S2S_TOP_K, steps = max_out + 1;
    attn_s2s_explanation *e = calloc(1, sizeof *e);
    int *dec = malloc((size_t)steps * sizeof *dec);
    float *logits = malloc((size_t)steps * Vt * sizeof *logits);
    float *probs = malloc((size_t)Vt * sizeof *probs);
    if (e) {
        e->arch = c->arch;
        e->n_src = n_src;
        e->n_prefix = opts ? opts->n_prefix : 0;
        e->out = malloc((size_t)max_out * sizeof *e->out);
        e->chosen = malloc((size_t)steps * sizeof *e->chosen);
        e->chosen_prob = malloc((size_t)steps * sizeof *e->chosen_prob);
        e->top_ids = malloc((size_t)steps * K * sizeof *e->top_ids);
        e->top_probs = malloc((size_t)steps * K * sizeof *e->top_probs);
    }
    st = e && dec && logits && probs && e->out && e->chosen && e->chosen_prob && e->top_ids &&
                 e->top_probs
             ? ATTN_OK
             : attn_errorf(err, ATTN_ERR_NOMEM, "explain: out of memory");
    if (st == ATTN_OK)
        st = generate(m, src, n_src, opts ? opts->prefix : NULL, e->n_prefix, max_out, dec, logits,
                      probs, e, err);
    if (st == ATTN_OK) st = maps(m, src, n_src, dec, e, err);
    if (st == ATTN_OK && !(opts && opts->no_saliency))
        st = saliency(m, src, n_src, dec, logits, e, err);
    free(dec);
    free(logits);
    free(probs);
    if (st != ATTN_OK) {
        attn_s2s_explanation_free(e);
        return st;
    }
    *out = e;
    return ATTN_OK;
}

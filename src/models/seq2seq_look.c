/* seq2seq_look.c -- the look-inside entry points of a seq2seq model (attn_seq2seq.h): the
 * attention probabilities of a teacher-forced pair (the architecture's maps hook), the source's
 * first-layer input rows and the gradient with respect to them (d_src_x). src/explain builds
 * attn_seq2seq_explain on these. */
#include "seq2seq_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

bool attn_seq2seq_map_shape(const attn_seq2seq *m, int *n_layers, int *n_heads, bool *self) {
    const bool has = m->vt->maps != NULL, tf = m->cfg.arch == ATTN_S2S_TRANSFORMER;
    if (n_layers) *n_layers = !has ? 0 : tf ? m->cfg.dec_layers : 1;
    if (n_heads) *n_heads = !has ? 0 : tf ? m->cfg.n_heads : 1;
    if (self) *self = has && tf;
    return has;
}

/* The pair's sizes and ids against the model. */
static attn_status check_pair(const attn_seq2seq *m, const int *src, int n_src, const int *dec_in,
                              int n_dec, attn_error *err) {
    const attn_seq2seq_config *c = &m->cfg;
    if (!src || !dec_in) return attn_errorf(err, ATTN_ERR_ARG, "seq2seq maps: NULL src or dec_in");
    if (n_src < 1 || n_src > c->max_src_len)
        return attn_errorf(err, ATTN_ERR_SHAPE,
                           "seq2seq maps: a source of %d words, expected 1..%d", n_src,
                           c->max_src_len);
    if (n_dec < 1 || n_dec > c->max_tgt_len)
        return attn_errorf(err, ATTN_ERR_SHAPE,
                           "seq2seq maps: a decoder input of %d tokens, expected 1..%d", n_dec,
                           c->max_tgt_len);
    for (int i = 0; i < n_src; i++)
        if (src[i] < 0 || src[i] >= c->src_vocab)
            return attn_errorf(err, ATTN_ERR_VALUE,
                               "seq2seq maps: source id %d at %d, expected 0..%d", src[i], i,
                               c->src_vocab - 1);
    for (int i = 0; i < n_dec; i++)
        if (dec_in[i] < 0 || dec_in[i] >= c->tgt_vocab)
            return attn_errorf(err, ATTN_ERR_VALUE,
                               "seq2seq maps: decoder input id %d at %d, expected 0..%d", dec_in[i],
                               i, c->tgt_vocab - 1);
    return ATTN_OK;
}

attn_status attn_seq2seq_maps(attn_seq2seq *m, const int *src, int n_src, const int *dec_in,
                              int n_dec, float *cross, float *self, attn_error *err) {
    if (!m->vt->maps)
        return attn_errorf(err, ATTN_ERR_VALUE, "%s has no attention maps",
                           attn_s2s_arch_name(m->cfg.arch));
    attn_status st = check_pair(m, src, n_src, dec_in, n_dec, err);
    if (st != ATTN_OK) return st;
    if (!cross) return attn_errorf(err, ATTN_ERR_ARG, "seq2seq maps: NULL cross");
    bool has_self;
    attn_seq2seq_map_shape(m, NULL, NULL, &has_self);
    return m->vt->maps(m, src, n_src, dec_in, n_dec, cross, has_self ? self : NULL, err);
}

int attn_seq2seq_source_width(const attn_seq2seq *m) {
    const long t = attn_seq2seq_tensor_find(m, "src_embedding.weight");
    int shape[4];
    return t < 0 || attn_seq2seq_tensor_shape(m, (size_t)t, shape) != 2 ? 0 : shape[1];
}

attn_status attn_seq2seq_source_input(const attn_seq2seq *m, const int *src, int n_src, float *x,
                                      attn_error *err) {
    const attn_seq2seq_config *c = &m->cfg;
    const int E = attn_seq2seq_source_width(m);
    if (E < 1)
        return attn_errorf(err, ATTN_ERR_VALUE, "%s: no source embedding (src_embedding.weight)",
                           attn_s2s_arch_name(c->arch));
    if (!src || !x || n_src < 1 || n_src > c->max_src_len)
        return attn_errorf(err, ATTN_ERR_ARG, "seq2seq source input: NULL or 1..%d words",
                           c->max_src_len);
    const float *emb = m->params + m->offsets[attn_seq2seq_tensor_find(m, "src_embedding.weight")];
    const long pos_t = attn_seq2seq_tensor_find(m, "src_pos_embedding");
    const bool tf = c->arch == ATTN_S2S_TRANSFORMER;
    for (int i = 0; i < n_src; i++) {
        if (src[i] < 0 || src[i] >= c->src_vocab)
            return attn_errorf(err, ATTN_ERR_VALUE, "seq2seq source input: id %d at %d", src[i], i);
        float *row = x + (size_t)i * E;
        const float *e = emb + (size_t)src[i] * E;
        for (int j = 0; j < E; j++) { /* one float add, as the forward's embed() */
            float p = 0.0f;
            bool add = false;
            if (tf && c->pos == ATTN_POS_LEARNED && pos_t >= 0)
                p = m->params[m->offsets[pos_t] + (size_t)i * E + j], add = true;
            else if (tf && c->pos == ATTN_POS_SINUSOIDAL)
                p = attn_sinusoid_value(i, j, E, 1.0f), add = true;
            row[j] = add ? e[j] + p : e[j];
        }
    }
    return ATTN_OK;
}

attn_status attn_seq2seq_backward_source(attn_seq2seq *m, const attn_s2s_batch *b,
                                         const float *d_logits, float *d_src, attn_error *err) {
    if (!b || b->B != 1 || !d_src)
        return attn_errorf(err, ATTN_ERR_ARG, "seq2seq source gradient: B = 1 and d_src needed");
    const int E = attn_seq2seq_source_width(m), S = b->src_lengths[0];
    for (size_t i = 0; i < (size_t)S * E; i++) d_src[i] = NAN; /* what the backward leaves out */
    m->d_src_x = d_src;
    attn_status st = attn_seq2seq_backward(m, b, d_logits, err);
    m->d_src_x = NULL;
    for (size_t i = 0; st == ATTN_OK && i < (size_t)S * E; i++)
        if (isnan(d_src[i]))
            return attn_errorf(err, ATTN_ERR_VALUE,
                               "%s: the backward gives no gradient for the source embedding rows",
                               attn_s2s_arch_name(m->cfg.arch));
    return st;
}

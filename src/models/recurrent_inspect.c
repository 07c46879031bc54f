/* recurrent_inspect.c -- looking inside a recurrent classifier (attn.h): a forward from given
 * embeddings, the input gradient of one sentence, the logits of every prefix of a sentence
 * (each bit for bit what a forward of that prefix gives), the embedding slabs. */
#include "recurrent_internal.h"

#include "attn_kernels.h"

#include <stdlib.h>
#include <string.h>

/* x [B, T, E] sentence-major; every sentence has T words, so slot s holds sentence s. */
attn_status attn_recurrent_forward_embedded(attn_model *m, const float *x, const attn_batch *b,
                                            float *logits, attn_error *err) {
    rec_impl *v = m->impl;
    const int B = b->B, T = b->T;
    const size_t E = (size_t)m->cfg.embed_dim;
    attn_status st = attn_rec_begin(m, b, false, err);
    if (st != ATTN_OK) return st;
    for (int s = 0; s < B; s++) /* x[t, s, :] = sentence order[s]'s row t */
        for (int t = 0; t < T; t++)
            memcpy(v->x + ((size_t)t * B + s) * E, x + ((size_t)v->order[s] * T + t) * E,
                   E * sizeof(float));
    attn_rec_finish(m, b, logits);
    return ATTN_OK;
}

bool attn_recurrent_input_grad(const attn_model *m, int i, float *d_x) {
    const rec_impl *v = m->impl;
    const size_t E = (size_t)m->cfg.embed_dim;
    for (int s = 0; s < v->B; s++) {
        if (v->order[s] != i) continue;
        for (int t = 0; t < v->slot_len[s]; t++)
            memcpy(d_x + (size_t)t * E, v->d_x + ((size_t)t * v->B + s) * E, E * sizeof(float));
        return true;
    }
    return false;
}

/* Layer l's part of the forward of the prefix of p words (prefix_logits): xw = the p-row input
 * GEMM the prefix's own forward computes, into fresh [p, G*H]. The steps before the first row
 * that differs bit for bit from the xw of the last prefix (*done rows of it) have the same
 * inputs as then, so their h and state are still in the arena: only the later steps run. */
static void rec_prefix_layer(rec_impl *v, int l, const float *in, int I, int H, int p, int *done,
                             float *fresh) {
    rec_layer *L = &v->layer[l];
    const size_t GH = (size_t)v->cell->G * H;
    v->xw_bias[l] = attn_rec_project(fresh, in, v->w.layer[l].weight_ih, v->w.layer[l].bias_ih, p,
                                     I, (int)GH, ATTN_OP_INPUT);
    int t0 = 0;
    while (t0 < *done && memcmp(fresh + t0 * GH, L->xw + t0 * GH, GH * sizeof(float)) == 0) t0++;
    memcpy(L->xw + t0 * GH, fresh + t0 * GH, (size_t)(p - t0) * GH * sizeof(float));
    for (int t = t0; t < p; t++) attn_rec_step_forward(v, l, t, H);
    *done = p;
}

/* logits[p-1] = the logit attn_recurrent_forward gives ids[0..p) at batch 1, p = 1..n_words,
 * bit for bit: the same GEMMs and steps, with each step that a forward of the prefix would
 * repeat unchanged taken from the previous prefix (rec_prefix_layer). */
attn_status attn_recurrent_prefix_logits(attn_model *m, const int *ids, int n_words, float *logits,
                                         attn_error *err) {
    rec_impl *v = m->impl;
    const int E = m->cfg.embed_dim, H = m->cfg.hidden_size, top = m->cfg.n_layers - 1;
    const attn_batch b = {.B = 1, .T = n_words, .ids = ids, .lengths = &n_words};
    attn_status st = attn_rec_begin(m, &b, false, err);
    const size_t GH = (size_t)v->cell->G * H;
    float *fresh = st == ATTN_OK ? malloc((size_t)n_words * GH * sizeof(float)) : NULL;
    if (st == ATTN_OK && !fresh)
        st = attn_errorf(err, ATTN_ERR_NOMEM, "%s: out of memory for prefixes", v->cell->name);
    if (st != ATTN_OK) return st;
    for (int t = 0; t < n_words; t++)
        attn_embedding_forward(v->x + (size_t)t * E, &ids[t], v->w.embedding, 1, E);
    int done[ATTN_RECURRENT_MAX_LAYERS] = {0};
    for (int l = 0; l <= top; l++) {
        memset(v->layer[l].h, 0, (size_t)H * sizeof(float));
        memset(v->layer[l].state, 0, (size_t)v->cell->S * H * sizeof(float));
    }
    for (int p = 1; p <= n_words; p++) {
        for (int l = 0; l <= top; l++)
            rec_prefix_layer(v, l, l == 0 ? v->x : v->layer[l - 1].h + H, l == 0 ? E : H, H, p,
                             &done[l], fresh);
        memcpy(v->h_last, v->layer[top].h + (size_t)p * H, (size_t)H * sizeof(float));
        attn_linear_forward(&logits[p - 1], v->h_last, v->w.head_weight, v->w.head_bias, 1, H, 1,
                            ATTN_OP_HEAD);
    }
    free(fresh);
    v->B = v->T = 0; /* the arena holds no one forward to back-propagate */
    return ATTN_OK;
}

void attn_recurrent_input(const attn_model *m, const float **x, const float **d_x, int *n_rows) {
    const rec_impl *v = m->impl;
    *x = v->x;
    *d_x = v->d_x;
    *n_rows = v->B == 1 ? v->T : 0;
}

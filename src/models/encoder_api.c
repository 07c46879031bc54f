/* encoder_api.c -- attn_encoder (include/attn_encoder.h): a Transformer's encoder layers run
 * on caller-given vectors, batch 1, every layer's activations kept. The layers are the model's
 * own (encoder_layer.c, the same arithmetic as its forward); the key-padding mask enters as a
 * score bias of 0 or -inf, as PyTorch 1.13 turns src_key_padding_mask into a float mask for
 * baddbmm(mask, q, k^T) (a score plus 0 is the score, plus -inf is -inf). */
#include "attn_encoder.h"
#include "encoder_layer.h"
#include "model_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_POSITIONS 65536

struct attn_encoder {
    attn_model *m; /* borrowed */
    attn_model_config cfg;
    int max_T, T;               /* T: the last run's positions, 0 before one */
    attn_encoder_weights *w;    /* [L] views into the model's parameters */
    attn_encoder_acts *acts;    /* [L] each layer's activations for max_T positions */
    float *arena;               /* every buffer below and in acts */
    float *out;                 /* [max_T, D] the final LayerNorm's output (pre-norm) */
    float *mean_f, *rstd_f;     /* [max_T] */
    unsigned char *key_padding; /* [max_T] the run's mask (0 where none is given) */
    int rows[2];
};

static float *layer_view(attn_model *m, int l, const char *suffix) {
    char name[ATTN_NAME_MAX];
    snprintf(name, sizeof name, "layers.%d.%s", l, suffix);
    return attn_model_view(m, m->params, name);
}

static void bind_layer(attn_model *m, int l, attn_encoder_weights *w) {
    w->in_proj_weight = layer_view(m, l, "self_attn.in_proj_weight");
    w->in_proj_bias = layer_view(m, l, "self_attn.in_proj_bias");
    w->out_proj_weight = layer_view(m, l, "self_attn.out_proj.weight");
    w->out_proj_bias = layer_view(m, l, "self_attn.out_proj.bias");
    w->linear1_weight = layer_view(m, l, "linear1.weight");
    w->linear1_bias = layer_view(m, l, "linear1.bias");
    w->linear2_weight = layer_view(m, l, "linear2.weight");
    w->linear2_bias = layer_view(m, l, "linear2.bias");
    w->norm1_weight = layer_view(m, l, "norm1.weight");
    w->norm1_bias = layer_view(m, l, "norm1.bias");
    w->norm2_weight = layer_view(m, l, "norm2.weight");
    w->norm2_bias = layer_view(m, l, "norm2.bias");
}

/* Lays every buffer out over base (NULL: counts); the floats needed. */
static size_t layout(attn_encoder *e, float *base) {
    const attn_model_config *c = &e->cfg;
    const size_t T = (size_t)e->max_T, D = (size_t)c->embed_dim, NH = (size_t)c->n_heads;
    size_t u = 0;
    float *bias = NULL;
    for (int l = 0; l < c->n_layers; l++) {
        attn_encoder_acts_layout(&e->acts[l], c, base, &u, T, T, false, NH * T * T);
        if (l == 0) bias = attn_arena_carve(base, &u, NH * T * T);
        e->acts[l].score_bias = bias; /* the padding mask's, shared by the layers */
        e->acts[l].rope = NULL;
        e->acts[l].lap = NULL;
    }
    e->out = attn_arena_carve(base, &u, T * D);
    e->mean_f = attn_arena_carve(base, &u, T);
    e->rstd_f = attn_arena_carve(base, &u, T);
    return u;
}

attn_status attn_encoder_create(attn_model *m, int max_positions, attn_encoder **out,
                                attn_error *err) {
    if (!out || !m) return attn_errorf(err, ATTN_ERR_ARG, "attn_encoder_create: NULL model or out");
    *out = NULL;
    const attn_model_config *c = attn_model_config_of(m);
    if (c->arch != ATTN_ARCH_TRANSFORMER)
        return attn_errorf(err, ATTN_ERR_ARG, "attn_encoder_create: a %s model has no encoder",
                           attn_arch_name(c->arch));
    if (c->pos == ATTN_POS_ROPE || c->pos == ATTN_POS_ALIBI)
        return attn_errorf(err, ATTN_ERR_ARG,
                           "attn_encoder_create: positions inside the attention (rope, alibi) "
                           "are not supported");
    if (max_positions < 1 || max_positions > MAX_POSITIONS)
        return attn_errorf(err, ATTN_ERR_ARG, "attn_encoder_create: max_positions %d not in 1..%d",
                           max_positions, MAX_POSITIONS);
    attn_encoder *e = calloc(1, sizeof *e);
    if (!e) return attn_errorf(err, ATTN_ERR_NOMEM, "attn_encoder_create: out of memory");
    e->m = m;
    e->cfg = *c;
    e->max_T = max_positions;
    e->w = calloc((size_t)c->n_layers, sizeof *e->w);
    e->acts = calloc((size_t)c->n_layers, sizeof *e->acts);
    e->key_padding = calloc((size_t)max_positions, 1);
    const size_t n = e->w && e->acts ? layout(e, NULL) : 0;
    e->arena = n ? malloc(n * sizeof *e->arena) : NULL;
    if (!e->arena || !e->key_padding) {
        attn_encoder_free(e);
        return attn_errorf(err, ATTN_ERR_NOMEM,
                           "attn_encoder_create: out of memory for %d positions", max_positions);
    }
    layout(e, e->arena);
    for (int l = 0; l < c->n_layers; l++) bind_layer(m, l, &e->w[l]);
    *out = e;
    return ATTN_OK;
}

void attn_encoder_free(attn_encoder *e) {
    if (!e) return;
    free(e->w);
    free(e->acts);
    free(e->arena);
    free(e->key_padding);
    free(e);
}

int attn_encoder_width(const attn_encoder *e) {
    return e ? e->cfg.embed_dim : 0;
}
int attn_encoder_n_layers(const attn_encoder *e) {
    return e ? e->cfg.n_layers : 0;
}
int attn_encoder_n_heads(const attn_encoder *e) {
    return e ? e->cfg.n_heads : 0;
}

attn_status attn_encoder_run(attn_encoder *e, const float *x, const unsigned char *key_padding,
                             int T, attn_error *err) {
    if (!e || !x || T < 1 || T > (e ? e->max_T : 0))
        return attn_errorf(err, ATTN_ERR_ARG,
                           "attn_encoder_run: NULL encoder or x, or T = %d not in 1..%d", T,
                           e ? e->max_T : 0);
    const attn_model_config *c = &e->cfg;
    bool padded = false;
    for (int t = 0; t < T; t++) {
        e->key_padding[t] = key_padding && key_padding[t] ? 1 : 0;
        padded |= e->key_padding[t];
    }
    e->rows[0] = 0;
    e->rows[1] = T;
    const attn_encoder_rows r = {1, T, e->rows};
    const float *in = x;
    for (int l = 0; l < c->n_layers; l++) {
        e->acts[l].key_padding = padded ? e->key_padding : NULL;
        attn_encoder_forward(&e->acts[l], in, &e->w[l], c, &r);
        in = e->acts[l].out;
    }
    const float *norm_w = attn_model_view(e->m, e->m->params, "norm.weight");
    const float *norm_b = attn_model_view(e->m, e->m->params, "norm.bias");
    if (norm_w) /* pre-norm: nn.TransformerEncoder's final LayerNorm */
        attn_layernorm_forward(e->out, e->mean_f, e->rstd_f, in, norm_w, norm_b, T, c->embed_dim);
    else
        memcpy(e->out, in, (size_t)T * c->embed_dim * sizeof *e->out);
    e->T = T;
    return ATTN_OK;
}

const float *attn_encoder_layer_output(const attn_encoder *e, int layer) {
    return e && e->T && layer >= 0 && layer < e->cfg.n_layers ? e->acts[layer].out : NULL;
}

const float *attn_encoder_output(const attn_encoder *e) {
    return e && e->T ? e->out : NULL;
}

const float *attn_encoder_attention(const attn_encoder *e, int layer) {
    return e && e->T && layer >= 0 && layer < e->cfg.n_layers ? e->acts[layer].probs : NULL;
}

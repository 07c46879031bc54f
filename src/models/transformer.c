/* transformer.c -- [CLS] + token embedding + positions (learned, sinusoidal or none; see
 * positions_forward) -> L x nn.TransformerEncoderLayer
 * (pre-norm by default; encoder_layer.c) -> final LayerNorm (pre-norm only) -> Linear(D, 1) on
 * [CLS]. Batch-1 logits are bit-identical to PyTorch (numerics: docs/numerics.md).
 *
 * Rows are PACKED: sentence i owns rows[i] .. rows[i+1]-1 (S_i = lengths[i]+1 positions, [CLS]
 * first), N = sum S_i rows in all; padding positions are never computed. PyTorch masks padded
 * keys and computes padded queries that never reach the loss, so each sentence's attention here
 * is exactly its batch-1 attention (same GEMM shapes); the gradients are mathematically the
 * same (the padded rows' were exact zeros). Only the [CLS] rows of the last layer's output reach
 * the head, so for B > 1 the last layer is the [CLS]-only variant (attn_encoder_cls_*: q,
 * attention, out_proj, LayerNorms and feed-forward on the B [CLS] rows; keys and values on all
 * rows). At B = 1 every layer runs in full, as PyTorch does, because OpenBLAS rounds a GEMM row
 * differently in a 1-row product (the [CLS] row is then row 0 all the same). */
#include "attention_positions.h"
#include "encoder_layer.h"
#include "encoder_qkv.h"
#include "model_internal.h"

#include "attn_kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* pos_embedding init: the sinusoid table (base 10000) times 2, then trained; why, and what
 * else was measured: docs/transformer-positions.md. */
#define POS_EMBEDDING_AMPLITUDE 2.0f

static size_t transformer_specs(const attn_model_config *c, attn_param_spec *s) {
    const int V = c->vocab_size, D = c->embed_dim, F = c->ffn_dim, P = c->max_len;
    size_t n = 0;
    char name[ATTN_NAME_MAX];
    /* A module's own parameters come before its children's in state_dict order. Only learned
     * positions are a tensor (the sinusoidal table is a non-persistent buffer in PyTorch). */
    if (c->pos == ATTN_POS_LEARNED)
        attn_spec_set(&s[n++], "pos_embedding", 2, (int[]){P, D}, ATTN_INIT_SINUSOID,
                      POS_EMBEDDING_AMPLITUDE);
    attn_spec_set(&s[n++], "embedding.weight", 2, (int[]){V, D}, ATTN_INIT_NORMAL, 1.0f);
    const float xavier = sqrtf(6.0f / (float)(D + 3 * D)); /* in_proj: xavier_uniform_ */
    const float kd = 1.0f / sqrtf((float)D), kf = 1.0f / sqrtf((float)F);
    for (int l = 0; l < c->n_layers; l++) {
#define LAYER_SPEC(suffix, ndim, shape, init, a)                                                   \
    do {                                                                                           \
        snprintf(name, sizeof name, "layers.%d.%s", l, suffix);                                    \
        attn_spec_set(&s[n++], name, ndim, shape, init, a);                                        \
    } while (0)
        LAYER_SPEC("self_attn.in_proj_weight", 2, ((int[]){3 * D, D}), ATTN_INIT_UNIFORM, xavier);
        LAYER_SPEC("self_attn.in_proj_bias", 1, ((int[]){3 * D}), ATTN_INIT_ZEROS, 0.0f);
        LAYER_SPEC("self_attn.out_proj.weight", 2, ((int[]){D, D}), ATTN_INIT_UNIFORM, kd);
        LAYER_SPEC("self_attn.out_proj.bias", 1, ((int[]){D}), ATTN_INIT_ZEROS, 0.0f);
        LAYER_SPEC("linear1.weight", 2, ((int[]){F, D}), ATTN_INIT_UNIFORM, kd);
        LAYER_SPEC("linear1.bias", 1, ((int[]){F}), ATTN_INIT_UNIFORM, kd);
        LAYER_SPEC("linear2.weight", 2, ((int[]){D, F}), ATTN_INIT_UNIFORM, kf);
        LAYER_SPEC("linear2.bias", 1, ((int[]){D}), ATTN_INIT_UNIFORM, kf);
        LAYER_SPEC("norm1.weight", 1, ((int[]){D}), ATTN_INIT_ONES, 0.0f);
        LAYER_SPEC("norm1.bias", 1, ((int[]){D}), ATTN_INIT_ZEROS, 0.0f);
        LAYER_SPEC("norm2.weight", 1, ((int[]){D}), ATTN_INIT_ONES, 0.0f);
        LAYER_SPEC("norm2.bias", 1, ((int[]){D}), ATTN_INIT_ZEROS, 0.0f);
#undef LAYER_SPEC
    }
    if (c->norm == ATTN_NORM_PRE) {
        attn_spec_set(&s[n++], "norm.weight", 1, (int[]){D}, ATTN_INIT_ONES, 0.0f);
        attn_spec_set(&s[n++], "norm.bias", 1, (int[]){D}, ATTN_INIT_ZEROS, 0.0f);
    }
    attn_spec_set(&s[n++], "head.weight", 2, (int[]){1, D}, ATTN_INIT_UNIFORM, kd);
    attn_spec_set(&s[n++], "head.bias", 1, (int[]){1}, ATTN_INIT_UNIFORM, kd);
    return n;
}

/* ---- views and activation arena ------------------------------------------------------- */

#define TF_MAX_LAYERS ATTN_TRANSFORMER_MAX_LAYERS

/* The model's own tensors outside the layers; the same struct names their gradients. */
typedef struct tf_tensors {
    float *pos_embedding;           /* [P, D] learned positions only, else NULL */
    float *embedding;               /* [V, D] */
    float *norm_weight, *norm_bias; /* [D] final LayerNorm (pre-norm only, else NULL) */
    float *head_weight;             /* [1, D] */
    float *head_bias;               /* [1] */
} tf_tensors;

typedef struct tf_impl {
    tf_tensors w;     /* parameters (views into m->params) */
    tf_tensors d;     /* gradients (views into m->grads) */
    float *pos_table; /* [P, D] the fixed sinusoidal table (pos sinusoidal), or [P, HS] the
                       * rotary cos | sin table (pos rope), else NULL */
    attn_encoder_weights layer_w[TF_MAX_LAYERS]; /* per layer, views into m->params */
    attn_encoder_weights layer_d[TF_MAX_LAYERS]; /* per layer, views into m->grads */
    /* the last forward's batch: B sentences, N packed rows */
    attn_encoder_rows batch; /* B, N and rows */
    bool cls_last;           /* the last layer is [CLS]-only (B > 1) */
    int S_max;               /* longest sentence ([CLS] included) */
    int *rows;               /* [B+1] first packed row of each sentence; rows[B] = N */
    int rows_cap;            /* entries allocated in rows */
    /* activation arena, carved for the last forward's batch */
    float *arena;
    size_t cap;
    attn_encoder_acts acts[TF_MAX_LAYERS];
    attn_encoder_scratch scratch;       /* backward, shared by the layers */
    float *x0;                          /* [N, D] embedding (+ positions) */
    float *cls;                         /* [B, D] last layer's output at [CLS] */
    float *cls_norm;                    /* [B, D] final LN of cls (pre-norm) */
    float *mean_f, *rstd_f;             /* [B] */
    float *d_hidden[TF_MAX_LAYERS + 1]; /* [N, D] d loss / d input of layer l (l = L: output) */
    float *d_head_in, *d_cls;           /* [B, D] */
} tf_impl;

/* Lays the arena out for B sentences in N rows, none longer than SM, n_probs floats of
 * probabilities in a full layer (and v->cls_last); with base NULL it only counts. Returns the
 * floats needed. */
static size_t tf_layout(tf_impl *v, const attn_model_config *c, float *base, size_t B, size_t N,
                        size_t SM, size_t n_probs) {
    const size_t D = c->embed_dim, NH = c->n_heads;
    size_t u = 0;
    for (int l = 0; l < c->n_layers; l++) {
        const bool cls = v->cls_last && l == c->n_layers - 1;
        attn_encoder_acts_layout(&v->acts[l], c, base, &u, N, cls ? B : N, cls,
                                 cls ? NH * N : n_probs);
    }
    attn_encoder_scratch_layout(&v->scratch, c, base, &u, N, SM);
    /* positions inside the attention: the rotary table, one ALiBi bias scratch for all layers */
    float *bias = c->pos == ATTN_POS_ALIBI ? attn_arena_carve(base, &u, NH * SM * SM) : NULL;
    for (int l = 0; l < c->n_layers; l++) {
        v->acts[l].rope = c->pos == ATTN_POS_ROPE ? v->pos_table : NULL;
        v->acts[l].score_bias = bias;
    }
    for (int l = 0; l <= c->n_layers; l++) v->d_hidden[l] = attn_arena_carve(base, &u, N * D);
    v->x0 = attn_arena_carve(base, &u, N * D);
    v->cls = attn_arena_carve(base, &u, B * D);
    v->cls_norm = attn_arena_carve(base, &u, B * D);
    v->mean_f = attn_arena_carve(base, &u, B);
    v->rstd_f = attn_arena_carve(base, &u, B);
    v->d_head_in = attn_arena_carve(base, &u, B * D);
    v->d_cls = attn_arena_carve(base, &u, B * D);
    return u;
}

static float *layer_view(attn_model *m, float *base, int l, const char *suffix) {
    char name[ATTN_NAME_MAX];
    snprintf(name, sizeof name, "layers.%d.%s", l, suffix);
    return attn_model_view(m, base, name);
}

/* Points t and each layer's tensors (w or d, chosen by `grads`) at base. */
static void tf_bind(attn_model *m, tf_impl *v, float *base, bool grads) {
    tf_tensors *t = grads ? &v->d : &v->w;
    t->pos_embedding = attn_model_view(m, base, "pos_embedding");
    t->embedding = attn_model_view(m, base, "embedding.weight");
    t->norm_weight = attn_model_view(m, base, "norm.weight"); /* NULL for post-norm */
    t->norm_bias = attn_model_view(m, base, "norm.bias");
    t->head_weight = attn_model_view(m, base, "head.weight");
    t->head_bias = attn_model_view(m, base, "head.bias");
    for (int l = 0; l < m->cfg.n_layers; l++) {
        attn_encoder_weights *L = grads ? &v->layer_d[l] : &v->layer_w[l];
        L->in_proj_weight = layer_view(m, base, l, "self_attn.in_proj_weight");
        L->in_proj_bias = layer_view(m, base, l, "self_attn.in_proj_bias");
        L->out_proj_weight = layer_view(m, base, l, "self_attn.out_proj.weight");
        L->out_proj_bias = layer_view(m, base, l, "self_attn.out_proj.bias");
        L->linear1_weight = layer_view(m, base, l, "linear1.weight");
        L->linear1_bias = layer_view(m, base, l, "linear1.bias");
        L->linear2_weight = layer_view(m, base, l, "linear2.weight");
        L->linear2_bias = layer_view(m, base, l, "linear2.bias");
        L->norm1_weight = layer_view(m, base, l, "norm1.weight");
        L->norm1_bias = layer_view(m, base, l, "norm1.bias");
        L->norm2_weight = layer_view(m, base, l, "norm2.weight");
        L->norm2_bias = layer_view(m, base, l, "norm2.bias");
    }
}

/* ---- positions: where each scheme (attn_pos) acts -------------------------------------------
 * learned and sinusoidal add a row per position to x0 (embedding + row, one float add, as
 * PyTorch's `embedding(ids) + table[:S]`); none leaves x0 = embedding. The schemes that act
 * inside the attention (rope, alibi) add nothing here: encoder_layer.c rotates q and k with
 * the table set up here (rope) or adds the ALiBi bias to the scores (alibi). */

/* pos rope: [P, HS] per position p, cos(p / 10000^(2i/HS)) in column i < HS/2 and the sine
 * in column HS/2 + i, each computed in double and rounded once (tools/attn_models.py). */
static attn_status rope_setup(tf_impl *v, const attn_model_config *c, attn_error *err) {
    const size_t P = (size_t)c->max_len, HS = (size_t)(c->embed_dim / c->n_heads);
    v->pos_table = attn_rope_table((int)P, (int)HS);
    if (!v->pos_table)
        return attn_errorf(err, ATTN_ERR_NOMEM,
                           "transformer: out of memory for the %zux%zu rotary table", P, HS);
    return ATTN_OK;
}

/* The fixed table of the sinusoidal scheme (unscaled; docs/transformer-positions.md), or
 * rope's. */
static attn_status positions_setup(tf_impl *v, const attn_model_config *c, attn_error *err) {
    if (c->pos == ATTN_POS_ROPE) return rope_setup(v, c, err);
    if (c->pos != ATTN_POS_SINUSOIDAL) return ATTN_OK;
    const size_t P = (size_t)c->max_len, D = (size_t)c->embed_dim;
    v->pos_table = malloc(P * D * sizeof(float));
    if (!v->pos_table)
        return attn_errorf(err, ATTN_ERR_NOMEM,
                           "transformer: out of memory for the %zux%zu "
                           "sinusoidal position table",
                           P, D);
    for (size_t p = 0; p < P; p++)
        for (size_t j = 0; j < D; j++)
            v->pos_table[p * D + j] = attn_sinusoid_value((int)p, (int)j, (int)D, 1.0f);
    return ATTN_OK;
}

/* The row added at position s, or NULL when the scheme adds none. */
static const float *position_row(const tf_impl *v, const attn_model_config *c, int s) {
    switch (c->pos) {
    case ATTN_POS_LEARNED:
        return v->w.pos_embedding + (size_t)s * c->embed_dim;
    case ATTN_POS_SINUSOIDAL:
        return v->pos_table + (size_t)s * c->embed_dim;
    case ATTN_POS_NONE:
    case ATTN_POS_ROPE:  /* in the attention: encoder_layer.c */
    case ATTN_POS_ALIBI: /* in the attention: encoder_layer.c */
        break;
    }
    return NULL;
}

/* x[D] = e[D] + the row of position s. */
static void positions_forward(float *x, const float *e, const tf_impl *v,
                              const attn_model_config *c, int s) {
    const float *row = position_row(v, c, s);
    if (row)
        attn_add_forward(x, e, row, (size_t)c->embed_dim);
    else
        memcpy(x, e, (size_t)c->embed_dim * sizeof(float));
}

/* d_x[D] of position s into the trained rows (learned only; the others have no parameter). */
static void positions_backward(const tf_impl *v, const attn_model_config *c, const float *d_x,
                               int s) {
    if (c->pos != ATTN_POS_LEARNED) return;
    float *d_p = v->d.pos_embedding + (size_t)s * c->embed_dim;
    for (int j = 0; j < c->embed_dim; j++) d_p[j] += d_x[j];
}

static attn_status transformer_setup(attn_model *m, attn_error *err) {
    if (m->cfg.n_layers > TF_MAX_LAYERS)
        return attn_errorf(err, ATTN_ERR_ARG, "transformer: %d layers, at most %d supported",
                           m->cfg.n_layers, TF_MAX_LAYERS);
    tf_impl *v = calloc(1, sizeof *v);
    if (!v) return attn_errorf(err, ATTN_ERR_NOMEM, "transformer: out of memory for views");
    m->impl = v;
    tf_bind(m, v, m->params, false);
    return positions_setup(v, &m->cfg, err);
}

static void transformer_set_grads(attn_model *m) {
    tf_bind(m, m->impl, m->grads, true);
}

static void transformer_destroy(attn_model *m) {
    tf_impl *v = m->impl;
    free(v->arena);
    free(v->rows);
    free(v->pos_table);
    free(v);
    m->impl = NULL;
}

/* ---- the batch -------------------------------------------------------------------------- */

/* Token at position s (0 = [CLS]) of sentence i. */
static int token_at(const attn_batch *b, int i, int s) {
    return s == 0 ? ATTN_CLS_ID : b->ids[(size_t)i * b->T + s - 1];
}

/* rows, S_max and cls_last for batch b; grows rows as needed. */
static attn_status tf_plan(tf_impl *v, const attn_batch *b, attn_error *err) {
    if (b->B + 1 > v->rows_cap) {
        int *rows = malloc((size_t)(b->B + 1) * sizeof *rows);
        if (!rows)
            return attn_errorf(err, ATTN_ERR_NOMEM, "transformer: out of memory for a batch of %d",
                               b->B);
        free(v->rows);
        v->rows = rows;
        v->rows_cap = b->B + 1;
    }
    v->rows[0] = 0;
    v->S_max = 0;
    for (int i = 0; i < b->B; i++) {
        const int S = b->lengths[i] + 1;
        v->rows[i + 1] = v->rows[i] + S;
        if (S > v->S_max) v->S_max = S;
    }
    v->batch = (attn_encoder_rows){b->B, v->rows[b->B], v->rows};
    v->cls_last = b->B > 1;
    return ATTN_OK;
}

/* Plans the batch and carves the arena for it. */
static attn_status tf_prepare(tf_impl *v, const attn_model_config *c, const attn_batch *b,
                              attn_error *err) {
    attn_status st = tf_plan(v, b, err);
    if (st == ATTN_OK) {
        /* room for the padded (B, T+1) batch, and at least 1.5 times the old arena when it
         * grows, so that it is not regrown (its pages faulted in afresh) batch after batch */
        const size_t B = (size_t)b->B, S = (size_t)b->T + 1;
        size_t need = tf_layout(v, c, NULL, B, B * S, S, (size_t)c->n_heads * B * S * S);
        if (need > v->cap && need < v->cap + v->cap / 2) need = v->cap + v->cap / 2;
        st = attn_arena_reserve(&v->arena, &v->cap, need, err);
    }
    if (st != ATTN_OK) {
        v->batch.B = v->batch.N = 0; /* nothing to back-propagate */
        return st;
    }
    const attn_encoder_rows *r = &v->batch;
    tf_layout(v, c, v->arena, (size_t)r->B, (size_t)r->N, (size_t)v->S_max,
              attn_encoder_probs_size(c, r, false));
    return ATTN_OK;
}

/* ---- model forward / backward ------------------------------------------------------------- */

/* Row of sentence i's [CLS] in the last layer's output: row i of a [CLS]-only layer. */
static int cls_row(const tf_impl *v, int i) {
    return v->cls_last ? i : v->rows[i];
}

/* The layers, the final LayerNorm and the head on v->x0 (filled by the caller). */
static void tf_run(tf_impl *v, const attn_model_config *c, float *logits) {
    const int B = v->batch.B, D = c->embed_dim, L = c->n_layers;
    const float *x = v->x0;
    for (int l = 0; l < L; l++) {
        if (v->cls_last && l == L - 1)
            attn_encoder_cls_forward(&v->acts[l], x, &v->layer_w[l], c, &v->batch);
        else
            attn_encoder_forward(&v->acts[l], x, &v->layer_w[l], c, &v->batch);
        x = v->acts[l].out;
    }
    /* head on [CLS] (after the final LayerNorm in pre-norm; LN is row-wise) */
    for (int i = 0; i < B; i++)
        memcpy(v->cls + (size_t)i * D, x + (size_t)cls_row(v, i) * D, (size_t)D * sizeof(float));
    const float *head_in = v->cls;
    if (c->norm == ATTN_NORM_PRE) {
        attn_layernorm_forward(v->cls_norm, v->mean_f, v->rstd_f, v->cls, v->w.norm_weight,
                               v->w.norm_bias, B, D);
        head_in = v->cls_norm;
    }
    attn_linear_forward(logits, head_in, v->w.head_weight, v->w.head_bias, B, D, 1, ATTN_OP_HEAD);
}

static attn_status transformer_forward(attn_model *m, const attn_batch *b, float *logits,
                                       attn_error *err) {
    tf_impl *v = m->impl;
    const attn_model_config *c = &m->cfg;
    const int B = b->B, D = c->embed_dim;
    attn_status st = tf_prepare(v, c, b, err);
    if (st != ATTN_OK) return st;
    /* x0[rows[i] + s] = embedding[token] + position s, token 0 = [CLS] */
    for (int i = 0; i < B; i++)
        for (int s = 0; s < v->rows[i + 1] - v->rows[i]; s++) {
            const float *e = v->w.embedding + (size_t)token_at(b, i, s) * D;
            positions_forward(v->x0 + ((size_t)v->rows[i] + s) * D, e, v, c, s);
        }
    tf_run(v, c, logits);
    return ATTN_OK;
}

/* d_hidden[L] ([n_out, D], zero but at the [CLS] rows) = d loss / d cls via the head and the
 * final LayerNorm. */
static void head_backward(tf_impl *v, const attn_model_config *c, const float *d_logits) {
    const int B = v->batch.B, D = c->embed_dim;
    const bool pre = c->norm == ATTN_NORM_PRE;
    /* logits = head_in.w^T + b; head_in = LN(cls) (pre) or cls (post) */
    memset(v->d_head_in, 0, (size_t)B * D * sizeof(float));
    attn_linear_backward(v->d_head_in, v->d.head_weight, v->d.head_bias, d_logits,
                         pre ? v->cls_norm : v->cls, v->w.head_weight, B, D, 1, ATTN_OP_HEAD);
    const float *d_cls = v->d_head_in;
    if (pre) {
        memset(v->d_cls, 0, (size_t)B * D * sizeof(float));
        attn_layernorm_backward(v->d_cls, v->d.norm_weight, v->d.norm_bias, v->d_head_in, v->cls,
                                v->mean_f, v->rstd_f, v->w.norm_weight, B, D);
        d_cls = v->d_cls;
    }
    /* cls[i] is a copy of the last layer's output at [CLS] */
    float *d_out = v->d_hidden[c->n_layers];
    /* a [CLS]-only last layer reads the B rows written below; a full one reads all N */
    if (!v->cls_last) memset(d_out, 0, (size_t)v->batch.N * D * sizeof(float));
    for (int i = 0; i < B; i++)
        memcpy(d_out + (size_t)cls_row(v, i) * D, d_cls + (size_t)i * D, (size_t)D * sizeof(float));
}

static void transformer_backward(attn_model *m, const attn_batch *b, const float *d_logits) {
    tf_impl *v = m->impl;
    const attn_model_config *c = &m->cfg;
    const int D = c->embed_dim, L = c->n_layers;
    const size_t ND = (size_t)v->batch.N * D;
    head_backward(v, c, d_logits);
    for (int l = L - 1; l >= 0; l--) {
        const float *x = l == 0 ? v->x0 : v->acts[l - 1].out;
        if (v->cls_last && l == L - 1) { /* adds to the [CLS] rows only; the full layer writes */
            memset(v->d_hidden[l], 0, ND * sizeof(float));
            attn_encoder_cls_backward(v->d_hidden[l], &v->layer_d[l], v->d_hidden[l + 1],
                                      &v->acts[l], x, &v->layer_w[l], c, &v->batch, &v->scratch);
        } else {
            attn_encoder_backward(v->d_hidden[l], &v->layer_d[l], v->d_hidden[l + 1], &v->acts[l],
                                  x, &v->layer_w[l], c, &v->batch, &v->scratch);
        }
    }
    /* x0 = embedding[token] + position s */
    for (int i = 0; i < v->batch.B; i++)
        for (int s = 0; s < v->rows[i + 1] - v->rows[i]; s++) {
            const float *d_row = v->d_hidden[0] + ((size_t)v->rows[i] + s) * D;
            float *d_e = v->d.embedding + (size_t)token_at(b, i, s) * D;
            for (int j = 0; j < D; j++) d_e[j] += d_row[j];
            positions_backward(v, c, d_row, s);
        }
}

const attn_model_vt attn_transformer_vt = {"transformer",
                                           transformer_specs,
                                           transformer_setup,
                                           transformer_set_grads,
                                           transformer_forward,
                                           transformer_backward,
                                           transformer_destroy,
                                           attn_transformer_forward_embedded,
                                           attn_transformer_input,
                                           attn_transformer_input_grad,
                                           attn_transformer_probs,
                                           NULL,
                                           NULL};

/* ---- looking inside (attn.h) ------------------------------------------------------------- */

/* x [B, T+1, D]: the sentences' rows one after the other, as x0 packs them (all of length T). */
attn_status attn_transformer_forward_embedded(attn_model *m, const float *x, const attn_batch *b,
                                              float *logits, attn_error *err) {
    tf_impl *v = m->impl;
    attn_status st = tf_prepare(v, &m->cfg, b, err);
    if (st != ATTN_OK) return st;
    memcpy(v->x0, x, (size_t)b->B * (b->T + 1) * m->cfg.embed_dim * sizeof(float));
    tf_run(v, &m->cfg, logits);
    return ATTN_OK;
}

bool attn_transformer_input_grad(const attn_model *m, int i, float *d_x) {
    const tf_impl *v = m->impl;
    if (i < 0 || i >= v->batch.B) return false;
    const size_t D = (size_t)m->cfg.embed_dim;
    memcpy(d_x, v->d_hidden[0] + (size_t)v->rows[i] * D,
           (size_t)(v->rows[i + 1] - v->rows[i]) * D * sizeof(float));
    return true;
}

void attn_transformer_input(const attn_model *m, const float **x, const float **d_x, int *n_rows) {
    const tf_impl *v = m->impl;
    *x = v->x0;
    *d_x = v->d_hidden[0];
    *n_rows = v->batch.B == 1 ? v->batch.N : 0;
}

const float *attn_transformer_probs(const attn_model *m, int layer, int *S) {
    const tf_impl *v = m->impl;
    if (v->batch.B != 1 || v->cls_last) return NULL;
    *S = v->batch.N;
    return v->acts[layer].probs;
}

bool attn_transformer_qk(const attn_model *m, int layer, const float **q, const float **k,
                         size_t *head_stride, size_t *row_stride, int *S) {
    const tf_impl *v = m->impl;
    if (v->batch.B != 1 || v->cls_last) return false;
    const attn_encoder_acts *a = &v->acts[layer];
    const size_t D = (size_t)m->cfg.embed_dim, NH = (size_t)m->cfg.n_heads, N = v->batch.N;
    if (heads_in_rows(a, (int)D, (int)NH)) { /* the in-projection's rows: q | k | v */
        *q = a->qkv;
        *k = a->qkv + D;
        *head_stride = D / NH;
        *row_stride = 3 * D;
    } else { /* head-major [NH, N, HS] */
        *q = a->q;
        *k = a->k;
        *head_stride = N * (D / NH);
        *row_stride = D / NH;
    }
    *S = (int)N;
    return true;
}

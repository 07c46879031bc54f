/* transformer.c -- [CLS] + token embedding + learned positions -> L x nn.TransformerEncoderLayer
 * (pre-norm by default) -> final LayerNorm (pre-norm only) -> Linear(D, 1) on [CLS].
 *
 * Rows are batch-major [B, S, ...] with S = T+1 positions ([CLS] at 0). Numerics follow PyTorch's
 * eval-mode encoder layer (PYTORCH_NUMERICS.md): in_proj GEMM without bias, bias added and q
 * scaled in the head split, per-head Q.K^T and P.V GEMMs, ATen-style softmax and LayerNorm.
 * Padding: keys past lengths[b]+1 are masked (src_key_padding_mask); padded query rows are
 * computed (finite) but never reach the loss, so their gradients are exactly zero. */
#include "model_internal.h"

#include "attn_kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* pos_embedding init: N(0, 0.02^2), the documented choice (tools/attn_models.py does the same). */
#define POS_EMBEDDING_STD 0.02f

static size_t transformer_specs(const attn_model_config *c, attn_param_spec *s) {
    const int V = c->vocab_size, D = c->embed_dim, F = c->ffn_dim, P = c->max_len;
    size_t n = 0;
    char name[ATTN_NAME_MAX];
    /* A module's own parameters come before its children's in state_dict order. */
    attn_spec_set(&s[n++], "pos_embedding", 2, (int[]){P, D}, ATTN_INIT_NORMAL,
                  POS_EMBEDDING_STD);
    attn_spec_set(&s[n++], "embedding.weight", 2, (int[]){V, D}, ATTN_INIT_NORMAL, 1.0f);
    const float xavier = sqrtf(6.0f / (float)(D + 3 * D)); /* in_proj: xavier_uniform_ */
    const float kd = 1.0f / sqrtf((float)D), kf = 1.0f / sqrtf((float)F);
    for (int l = 0; l < c->n_layers; l++) {
#define LAYER_SPEC(suffix, ndim, shape, init, a)                                               \
    do {                                                                                       \
        snprintf(name, sizeof name, "layers.%d.%s", l, suffix);                                \
        attn_spec_set(&s[n++], name, ndim, shape, init, a);                                    \
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

/* One encoder layer: parameter views, gradient views and the activations backward needs.
 * N = B*S rows (S = T+1 positions with [CLS]), batch-major: row b*S + s. */
typedef struct tf_layer {
    float *in_proj_weight;  /* [3D, D] packed q, k, v */
    float *in_proj_bias;    /* [3D] */
    float *out_proj_weight; /* [D, D] */
    float *out_proj_bias;   /* [D] */
    float *linear1_weight;  /* [F, D] */
    float *linear1_bias;    /* [F] */
    float *linear2_weight;  /* [D, F] */
    float *linear2_bias;    /* [D] */
    float *norm1_weight, *norm1_bias, *norm2_weight, *norm2_bias; /* [D] */
    float *d_in_proj_weight, *d_in_proj_bias, *d_out_proj_weight, *d_out_proj_bias;
    float *d_linear1_weight, *d_linear1_bias, *d_linear2_weight, *d_linear2_bias;
    float *d_norm1_weight, *d_norm1_bias, *d_norm2_weight, *d_norm2_bias;
    /* activations */
    float *n1;           /* [N, D] pre: LN1(x_in); post: LN1(r1) */
    float *mean1, *rstd1; /* [N] */
    float *qkv;          /* [N, 3D] x.W_in^T without bias */
    float *q, *k, *v;    /* [B, NH, S, HS] per head; q = (q + b_q) * scale */
    float *probs;        /* [B, NH, S, S] attention probabilities */
    float *att;          /* [N, D] heads concatenated */
    float *r1;           /* [N, D] x_in + out_proj(att) */
    float *n2;           /* [N, D] pre: LN2(r1); post: LN2(r2) = layer output */
    float *mean2, *rstd2; /* [N] */
    float *ff1;          /* [N, F] linear1 output (activation input) */
    float *act;          /* [N, F] relu/gelu(ff1) */
    float *r2;           /* [N, D] pre: r1 + ff = layer output; post: n1 + ff */
    float *out;          /* [N, D] the layer output (r2 or n2) */
} tf_layer;

typedef struct tf_impl {
    float *pos_embedding;          /* [P, D] */
    float *embedding;              /* [V, D] */
    float *norm_weight, *norm_bias; /* [D] final LayerNorm (pre-norm only, else NULL) */
    float *head_weight;            /* [1, D] */
    float *head_bias;              /* [1] */
    float *d_pos_embedding, *d_embedding, *d_norm_weight, *d_norm_bias;
    float *d_head_weight, *d_head_bias;
    tf_layer layers[4];
    /* activation arena, carved for the last forward's (B, S) */
    float *arena;
    size_t cap;
    int B, S;
    float *x0;           /* [N, D] embedding + pos_embedding */
    float *cls;          /* [B, D] last layer's output at [CLS] */
    float *cls_norm;     /* [B, D] final LN of cls (pre-norm) */
    float *mean_f, *rstd_f; /* [B] */
    float *scores;       /* [S, S] one head's Q.K^T (scratch) */
    float *ctx;          /* [S, HS] one head's P.V (scratch, also its gradient) */
    /* backward scratch */
    float *d_x, *d_r, *d_n; /* [N, D] */
    float *d_qkv;        /* [N, 3D] */
    float *d_q, *d_k, *d_v; /* [B, NH, S, HS] */
    float *d_att;        /* [N, D] */
    float *d_ff1, *d_act; /* [N, F] */
    float *d_probs, *d_scores; /* [S, S] */
    float *d_head_in, *d_cls; /* [B, D] */
} tf_impl;

static float *carve(float *base, size_t *used, size_t n) {
    float *p = base ? base + *used : NULL;
    *used += n;
    return p;
}

/* Lays the arena out for (B, S); with base NULL it only counts. Returns the floats needed. */
static size_t tf_layout(tf_impl *v, const attn_model_config *c, float *base, int B, int S) {
    const size_t D = c->embed_dim, F = c->ffn_dim, N = (size_t)B * S, HS = D / c->n_heads;
    const size_t ND = N * D, NF = N * F, PS = (size_t)B * c->n_heads * S * S;
    size_t u = 0;
    for (int l = 0; l < c->n_layers; l++) {
        tf_layer *L = &v->layers[l];
        L->n1 = carve(base, &u, ND);
        L->mean1 = carve(base, &u, N);
        L->rstd1 = carve(base, &u, N);
        L->qkv = carve(base, &u, 3 * ND);
        L->q = carve(base, &u, ND);
        L->k = carve(base, &u, ND);
        L->v = carve(base, &u, ND);
        L->probs = carve(base, &u, PS);
        L->att = carve(base, &u, ND);
        L->r1 = carve(base, &u, ND);
        L->n2 = carve(base, &u, ND);
        L->mean2 = carve(base, &u, N);
        L->rstd2 = carve(base, &u, N);
        L->ff1 = carve(base, &u, NF);
        L->act = carve(base, &u, NF);
        L->r2 = carve(base, &u, ND);
        L->out = c->norm == ATTN_NORM_PRE ? L->r2 : L->n2;
    }
    v->x0 = carve(base, &u, ND);
    v->cls = carve(base, &u, (size_t)B * D);
    v->cls_norm = carve(base, &u, (size_t)B * D);
    v->mean_f = carve(base, &u, (size_t)B);
    v->rstd_f = carve(base, &u, (size_t)B);
    v->scores = carve(base, &u, (size_t)S * S);
    v->ctx = carve(base, &u, (size_t)S * HS);
    v->d_x = carve(base, &u, ND);
    v->d_r = carve(base, &u, ND);
    v->d_n = carve(base, &u, ND);
    v->d_qkv = carve(base, &u, 3 * ND);
    v->d_q = carve(base, &u, ND);
    v->d_k = carve(base, &u, ND);
    v->d_v = carve(base, &u, ND);
    v->d_att = carve(base, &u, ND);
    v->d_ff1 = carve(base, &u, NF);
    v->d_act = carve(base, &u, NF);
    v->d_probs = carve(base, &u, (size_t)S * S);
    v->d_scores = carve(base, &u, (size_t)S * S);
    v->d_head_in = carve(base, &u, (size_t)B * D);
    v->d_cls = carve(base, &u, (size_t)B * D);
    return u;
}

static float *layer_view(attn_model *m, float *base, int l, const char *suffix) {
    char name[ATTN_NAME_MAX];
    snprintf(name, sizeof name, "layers.%d.%s", l, suffix);
    return attn_model_view(m, base, name);
}

static attn_status transformer_setup(attn_model *m, attn_error *err) {
    tf_impl *v = calloc(1, sizeof *v);
    if (!v) return attn_errorf(err, ATTN_ERR_NOMEM, "transformer: out of memory for views");
    m->impl = v;
    float *p = m->params;
    v->pos_embedding = attn_model_view(m, p, "pos_embedding");
    v->embedding = attn_model_view(m, p, "embedding.weight");
    v->norm_weight = attn_model_view(m, p, "norm.weight"); /* NULL for post-norm */
    v->norm_bias = attn_model_view(m, p, "norm.bias");
    v->head_weight = attn_model_view(m, p, "head.weight");
    v->head_bias = attn_model_view(m, p, "head.bias");
    for (int l = 0; l < m->cfg.n_layers; l++) {
        tf_layer *L = &v->layers[l];
        L->in_proj_weight = layer_view(m, p, l, "self_attn.in_proj_weight");
        L->in_proj_bias = layer_view(m, p, l, "self_attn.in_proj_bias");
        L->out_proj_weight = layer_view(m, p, l, "self_attn.out_proj.weight");
        L->out_proj_bias = layer_view(m, p, l, "self_attn.out_proj.bias");
        L->linear1_weight = layer_view(m, p, l, "linear1.weight");
        L->linear1_bias = layer_view(m, p, l, "linear1.bias");
        L->linear2_weight = layer_view(m, p, l, "linear2.weight");
        L->linear2_bias = layer_view(m, p, l, "linear2.bias");
        L->norm1_weight = layer_view(m, p, l, "norm1.weight");
        L->norm1_bias = layer_view(m, p, l, "norm1.bias");
        L->norm2_weight = layer_view(m, p, l, "norm2.weight");
        L->norm2_bias = layer_view(m, p, l, "norm2.bias");
    }
    return ATTN_OK;
}

static void transformer_set_grads(attn_model *m) {
    tf_impl *v = m->impl;
    float *g = m->grads;
    v->d_pos_embedding = attn_model_view(m, g, "pos_embedding");
    v->d_embedding = attn_model_view(m, g, "embedding.weight");
    v->d_norm_weight = attn_model_view(m, g, "norm.weight");
    v->d_norm_bias = attn_model_view(m, g, "norm.bias");
    v->d_head_weight = attn_model_view(m, g, "head.weight");
    v->d_head_bias = attn_model_view(m, g, "head.bias");
    for (int l = 0; l < m->cfg.n_layers; l++) {
        tf_layer *L = &v->layers[l];
        L->d_in_proj_weight = layer_view(m, g, l, "self_attn.in_proj_weight");
        L->d_in_proj_bias = layer_view(m, g, l, "self_attn.in_proj_bias");
        L->d_out_proj_weight = layer_view(m, g, l, "self_attn.out_proj.weight");
        L->d_out_proj_bias = layer_view(m, g, l, "self_attn.out_proj.bias");
        L->d_linear1_weight = layer_view(m, g, l, "linear1.weight");
        L->d_linear1_bias = layer_view(m, g, l, "linear1.bias");
        L->d_linear2_weight = layer_view(m, g, l, "linear2.weight");
        L->d_linear2_bias = layer_view(m, g, l, "linear2.bias");
        L->d_norm1_weight = layer_view(m, g, l, "norm1.weight");
        L->d_norm1_bias = layer_view(m, g, l, "norm1.bias");
        L->d_norm2_weight = layer_view(m, g, l, "norm2.weight");
        L->d_norm2_bias = layer_view(m, g, l, "norm2.bias");
    }
}

static void transformer_destroy(attn_model *m) {
    tf_impl *v = m->impl;
    free(v->arena);
    free(v);
    m->impl = NULL;
}

/* Token at position s (0 = [CLS]) of sentence i; positions past the sentence read [PAD]. */
static int token_at(const attn_batch *b, int i, int s) {
    if (s == 0) return ATTN_CLS_ID;
    return s <= b->lengths[i] ? b->ids[(size_t)i * b->T + s - 1] : ATTN_PAD_ID;
}

/* ---- self-attention ------------------------------------------------------------------------ */

/* out[N, D] = out_proj(concat_h softmax(q_h.k_h^T, keys < lengths+1) . v_h) with
 * q, k, v = split(in.W_in^T) + b_in and q scaled by 1/sqrt(HS) before Q.K^T (PyTorch's
 * transform_bias_rescale_qkv: the in_proj GEMM has no bias; the bias is added in the split). */
static void attention_forward(tf_impl *v, tf_layer *L, const attn_model_config *c,
                              const attn_batch *b, float *out, const float *in) {
    const int B = v->B, S = v->S, D = c->embed_dim, NH = c->n_heads, HS = D / NH;
    const int N = B * S;
    const float scale = 1.0f / sqrtf((float)HS);
    attn_linear_forward(L->qkv, in, L->in_proj_weight, NULL, N, D, 3 * D, ATTN_OP_QKV);
    for (int i = 0; i < B; i++)
        for (int h = 0; h < NH; h++)
            for (int s = 0; s < S; s++) {
                const float *row = L->qkv + ((size_t)i * S + s) * 3 * D + (size_t)h * HS;
                const float *bias = L->in_proj_bias + (size_t)h * HS;
                size_t o = (((size_t)i * NH + h) * S + s) * HS;
                for (int j = 0; j < HS; j++) {
                    L->q[o + j] = (row[j] + bias[j]) * scale;
                    L->k[o + j] = row[D + j] + bias[D + j];
                    L->v[o + j] = row[2 * D + j] + bias[2 * D + j];
                }
            }
    for (int i = 0; i < B; i++) {
        const int n_valid = b->lengths[i] + 1; /* [CLS] + words; padded keys masked */
        for (int h = 0; h < NH; h++) {
            size_t o = ((size_t)i * NH + h) * S * HS;
            float *probs = L->probs + ((size_t)i * NH + h) * S * S;
            /* scores[S, S] = q.k^T; probs = masked row softmax; ctx[S, HS] = probs.v */
            attn_sgemm(ATTN_OP_QK, false, false, true, S, S, HS, 1.0f, L->q + o, L->k + o, 0.0f,
                       v->scores);
            attn_softmax_forward(probs, v->scores, S, S, n_valid);
            attn_sgemm(ATTN_OP_AV, false, false, false, S, HS, S, 1.0f, probs, L->v + o, 0.0f,
                       v->ctx);
            for (int s = 0; s < S; s++)
                memcpy(L->att + ((size_t)i * S + s) * D + (size_t)h * HS, v->ctx + (size_t)s * HS,
                       (size_t)HS * sizeof(float));
        }
    }
    attn_linear_forward(out, L->att, L->out_proj_weight, L->out_proj_bias, N, D, D,
                        ATTN_OP_OUT_PROJ);
}

/* d_in[N, D] += d(in) given d_out[N, D], the gradient of attention_forward's out. */
static void attention_backward(tf_impl *v, tf_layer *L, const attn_model_config *c,
                               const attn_batch *b, float *d_in, const float *d_out,
                               const float *in) {
    const int B = v->B, S = v->S, D = c->embed_dim, NH = c->n_heads, HS = D / NH;
    const int N = B * S;
    const size_t ND = (size_t)N * D;
    const float scale = 1.0f / sqrtf((float)HS);
    /* out = att.W_o^T + b_o */
    memset(v->d_att, 0, ND * sizeof(float));
    attn_linear_backward(v->d_att, L->d_out_proj_weight, L->d_out_proj_bias, d_out, L->att,
                         L->out_proj_weight, N, D, D, ATTN_OP_OUT_PROJ);
    memset(v->d_q, 0, ND * sizeof(float));
    memset(v->d_k, 0, ND * sizeof(float));
    memset(v->d_v, 0, ND * sizeof(float));
    for (int i = 0; i < B; i++) {
        const int n_valid = b->lengths[i] + 1;
        for (int h = 0; h < NH; h++) {
            size_t o = ((size_t)i * NH + h) * S * HS;
            const float *probs = L->probs + ((size_t)i * NH + h) * S * S;
            for (int s = 0; s < S; s++) /* d_ctx = this head's columns of d_att */
                memcpy(v->ctx + (size_t)s * HS, v->d_att + ((size_t)i * S + s) * D + (size_t)h * HS,
                       (size_t)HS * sizeof(float));
            /* ctx = P.v: d_P = d_ctx.v^T, d_v += P^T.d_ctx */
            attn_sgemm(ATTN_OP_AV, true, false, true, S, S, HS, 1.0f, v->ctx, L->v + o, 0.0f,
                       v->d_probs);
            attn_sgemm(ATTN_OP_AV, true, true, false, S, HS, S, 1.0f, probs, v->ctx, 1.0f,
                       v->d_v + o);
            /* P = softmax(scores) */
            memset(v->d_scores, 0, (size_t)S * S * sizeof(float));
            attn_softmax_backward(v->d_scores, v->d_probs, probs, S, S, n_valid);
            /* scores = q.k^T: d_q += d_scores.k, d_k += d_scores^T.q */
            attn_sgemm(ATTN_OP_QK, true, false, false, S, HS, S, 1.0f, v->d_scores, L->k + o,
                       1.0f, v->d_q + o);
            attn_sgemm(ATTN_OP_QK, true, true, false, S, HS, S, 1.0f, v->d_scores, L->q + o,
                       1.0f, v->d_k + o);
        }
    }
    /* q = (qkv_q + b_q) * scale, k = qkv_k + b_k, v = qkv_v + b_v: back to [N, 3D] */
    for (int i = 0; i < B; i++)
        for (int h = 0; h < NH; h++)
            for (int s = 0; s < S; s++) {
                float *row = v->d_qkv + ((size_t)i * S + s) * 3 * D + (size_t)h * HS;
                size_t o = (((size_t)i * NH + h) * S + s) * HS;
                for (int j = 0; j < HS; j++) {
                    row[j] = v->d_q[o + j] * scale;
                    row[D + j] = v->d_k[o + j];
                    row[2 * D + j] = v->d_v[o + j];
                }
            }
    /* qkv = in.W_in^T (+ b_in in the split): d_b_in is the column sum of d_qkv */
    attn_linear_backward(d_in, L->d_in_proj_weight, L->d_in_proj_bias, v->d_qkv, in,
                         L->in_proj_weight, N, D, 3 * D, ATTN_OP_QKV);
}

/* ---- feed-forward ------------------------------------------------------------------------- */

/* out[N, D] = act(in.W_1^T + b_1).W_2^T + b_2 (act = relu or erf-gelu). */
static void ffn_forward(tf_impl *v, tf_layer *L, const attn_model_config *c, float *out,
                        const float *in) {
    const int N = v->B * v->S, D = c->embed_dim, F = c->ffn_dim;
    attn_linear_forward(L->ff1, in, L->linear1_weight, L->linear1_bias, N, D, F,
                        ATTN_OP_FFN_UP);
    if (c->activation == ATTN_ACT_GELU)
        attn_gelu_forward(L->act, L->ff1, (size_t)N * F);
    else
        attn_relu_forward(L->act, L->ff1, (size_t)N * F);
    attn_linear_forward(out, L->act, L->linear2_weight, L->linear2_bias, N, F, D,
                        ATTN_OP_FFN_DOWN);
}

/* d_in[N, D] += d(in) given d_out[N, D]. */
static void ffn_backward(tf_impl *v, tf_layer *L, const attn_model_config *c, float *d_in,
                         const float *d_out, const float *in) {
    const int N = v->B * v->S, D = c->embed_dim, F = c->ffn_dim;
    const size_t NF = (size_t)N * F;
    memset(v->d_act, 0, NF * sizeof(float));
    attn_linear_backward(v->d_act, L->d_linear2_weight, L->d_linear2_bias, d_out, L->act,
                         L->linear2_weight, N, F, D, ATTN_OP_FFN_DOWN);
    memset(v->d_ff1, 0, NF * sizeof(float));
    if (c->activation == ATTN_ACT_GELU)
        attn_gelu_backward(v->d_ff1, v->d_act, L->ff1, NF);
    else
        attn_relu_backward(v->d_ff1, v->d_act, L->ff1, NF);
    attn_linear_backward(d_in, L->d_linear1_weight, L->d_linear1_bias, v->d_ff1, in,
                         L->linear1_weight, N, D, F, ATTN_OP_FFN_UP);
}

/* ---- encoder layer ------------------------------------------------------------------------- */

/* pre-norm:  r1 = x + SA(LN1(x));  out = r2 = r1 + FF(LN2(r1))
 * post-norm: r1 = x + SA(x); n1 = LN1(r1); r2 = n1 + FF(n1); out = n2 = LN2(r2) */
static void layer_forward(tf_impl *v, tf_layer *L, const attn_model_config *c,
                          const attn_batch *b, const float *x) {
    const int N = v->B * v->S, D = c->embed_dim;
    const size_t ND = (size_t)N * D;
    if (c->norm == ATTN_NORM_PRE) {
        attn_layernorm_forward(L->n1, L->mean1, L->rstd1, x, L->norm1_weight, L->norm1_bias, N,
                               D);
        attention_forward(v, L, c, b, L->r1, L->n1);
        attn_add_forward(L->r1, x, L->r1, ND);
        attn_layernorm_forward(L->n2, L->mean2, L->rstd2, L->r1, L->norm2_weight,
                               L->norm2_bias, N, D);
        ffn_forward(v, L, c, L->r2, L->n2);
        attn_add_forward(L->r2, L->r1, L->r2, ND);
    } else {
        attention_forward(v, L, c, b, L->r1, x);
        attn_add_forward(L->r1, x, L->r1, ND);
        attn_layernorm_forward(L->n1, L->mean1, L->rstd1, L->r1, L->norm1_weight,
                               L->norm1_bias, N, D);
        ffn_forward(v, L, c, L->r2, L->n1);
        attn_add_forward(L->r2, L->n1, L->r2, ND);
        attn_layernorm_forward(L->n2, L->mean2, L->rstd2, L->r2, L->norm2_weight,
                               L->norm2_bias, N, D);
    }
}

/* On entry v->d_x[N, D] = d loss / d layer output; on exit d loss / d x (the layer input). */
static void layer_backward(tf_impl *v, tf_layer *L, const attn_model_config *c,
                           const attn_batch *b, const float *x) {
    const int N = v->B * v->S, D = c->embed_dim;
    const size_t ND = (size_t)N * D;
    if (c->norm == ATTN_NORM_PRE) {
        /* out = r1 + FF(LN2(r1)): d_r1 = d_out + LN2'(FF'(d_out)) */
        memset(v->d_n, 0, ND * sizeof(float));
        ffn_backward(v, L, c, v->d_n, v->d_x, L->n2);
        attn_layernorm_backward(v->d_x, L->d_norm2_weight, L->d_norm2_bias, v->d_n, L->r1,
                                L->mean2, L->rstd2, L->norm2_weight, N, D);
        /* r1 = x + SA(LN1(x)): d_x = d_r1 + LN1'(SA'(d_r1)) */
        memset(v->d_n, 0, ND * sizeof(float));
        attention_backward(v, L, c, b, v->d_n, v->d_x, L->n1);
        attn_layernorm_backward(v->d_x, L->d_norm1_weight, L->d_norm1_bias, v->d_n, x,
                                L->mean1, L->rstd1, L->norm1_weight, N, D);
    } else {
        /* out = LN2(r2) */
        memset(v->d_r, 0, ND * sizeof(float));
        attn_layernorm_backward(v->d_r, L->d_norm2_weight, L->d_norm2_bias, v->d_x, L->r2,
                                L->mean2, L->rstd2, L->norm2_weight, N, D);
        /* r2 = n1 + FF(n1): d_n1 = d_r2 + FF'(d_r2) */
        memcpy(v->d_x, v->d_r, ND * sizeof(float));
        ffn_backward(v, L, c, v->d_x, v->d_r, L->n1);
        /* n1 = LN1(r1) */
        memset(v->d_r, 0, ND * sizeof(float));
        attn_layernorm_backward(v->d_r, L->d_norm1_weight, L->d_norm1_bias, v->d_x, L->r1,
                                L->mean1, L->rstd1, L->norm1_weight, N, D);
        /* r1 = x + SA(x): d_x = d_r1 + SA'(d_r1) */
        memcpy(v->d_x, v->d_r, ND * sizeof(float));
        attention_backward(v, L, c, b, v->d_x, v->d_r, x);
    }
}

/* ---- model forward / backward ------------------------------------------------------------- */

static attn_status transformer_forward(attn_model *m, const attn_batch *b, float *logits,
                                       attn_error *err) {
    tf_impl *v = m->impl;
    const attn_model_config *c = &m->cfg;
    const int B = b->B, S = b->T + 1, D = c->embed_dim;
    attn_status st = attn_arena_reserve(&v->arena, &v->cap, tf_layout(v, c, NULL, B, S), err);
    if (st != ATTN_OK) return st;
    tf_layout(v, c, v->arena, B, S);
    v->B = B;
    v->S = S;

    /* x0[b*S + s] = embedding[token] + pos_embedding[s], token 0 = [CLS] */
    for (int i = 0; i < B; i++)
        for (int s = 0; s < S; s++) {
            float *row = v->x0 + ((size_t)i * S + s) * D;
            int id = token_at(b, i, s);
            attn_embedding_forward(row, &id, v->embedding, 1, D);
            attn_add_forward(row, row, v->pos_embedding + (size_t)s * D, (size_t)D);
        }
    const float *x = v->x0;
    for (int l = 0; l < c->n_layers; l++) {
        layer_forward(v, &v->layers[l], c, b, x);
        x = v->layers[l].out;
    }
    /* head on [CLS] (after the final LayerNorm in pre-norm; LN is row-wise) */
    for (int i = 0; i < B; i++)
        memcpy(v->cls + (size_t)i * D, x + (size_t)i * S * D, (size_t)D * sizeof(float));
    const float *head_in = v->cls;
    if (c->norm == ATTN_NORM_PRE) {
        attn_layernorm_forward(v->cls_norm, v->mean_f, v->rstd_f, v->cls, v->norm_weight,
                               v->norm_bias, B, D);
        head_in = v->cls_norm;
    }
    attn_linear_forward(logits, head_in, v->head_weight, v->head_bias, B, D, 1, ATTN_OP_HEAD);
    return ATTN_OK;
}

static void transformer_backward(attn_model *m, const attn_batch *b, const float *d_logits) {
    tf_impl *v = m->impl;
    const attn_model_config *c = &m->cfg;
    const int B = v->B, S = v->S, D = c->embed_dim, N = B * S;
    const bool pre = c->norm == ATTN_NORM_PRE;

    /* logits = head_in.w^T + b; head_in = LN(cls) (pre) or cls (post) */
    memset(v->d_head_in, 0, (size_t)B * D * sizeof(float));
    attn_linear_backward(v->d_head_in, v->d_head_weight, v->d_head_bias, d_logits,
                         pre ? v->cls_norm : v->cls, v->head_weight, B, D, 1, ATTN_OP_HEAD);
    const float *d_cls = v->d_head_in;
    if (pre) {
        memset(v->d_cls, 0, (size_t)B * D * sizeof(float));
        attn_layernorm_backward(v->d_cls, v->d_norm_weight, v->d_norm_bias, v->d_head_in,
                                v->cls, v->mean_f, v->rstd_f, v->norm_weight, B, D);
        d_cls = v->d_cls;
    }
    /* only the [CLS] rows of the last layer's output reach the loss */
    memset(v->d_x, 0, (size_t)N * D * sizeof(float));
    for (int i = 0; i < B; i++)
        memcpy(v->d_x + (size_t)i * S * D, d_cls + (size_t)i * D, (size_t)D * sizeof(float));
    for (int l = c->n_layers - 1; l >= 0; l--)
        layer_backward(v, &v->layers[l], c, b, l == 0 ? v->x0 : v->layers[l - 1].out);
    /* x0 = embedding[token] + pos_embedding[s] */
    for (int i = 0; i < B; i++)
        for (int s = 0; s < S; s++) {
            const float *d_row = v->d_x + ((size_t)i * S + s) * D;
            int id = token_at(b, i, s);
            attn_embedding_backward(v->d_embedding, d_row, &id, 1, D);
            attn_embedding_backward(v->d_pos_embedding, d_row, &s, 1, D);
        }
}

const attn_model_vt attn_transformer_vt = {
    "transformer",       transformer_specs,    transformer_setup,  transformer_set_grads,
    transformer_forward, transformer_backward, transformer_destroy};

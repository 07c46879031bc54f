/* transformer.c -- [CLS] + token embedding + learned positions -> L x nn.TransformerEncoderLayer
 * (pre-norm by default) -> final LayerNorm (pre-norm only) -> Linear(D, 1) on [CLS].
 *
 * Numerics follow PyTorch's eval-mode encoder layer (PYTORCH_NUMERICS.md): in_proj GEMM without
 * bias, bias added and q scaled in the head split, per-head Q.K^T and P.V GEMMs, ATen-style
 * softmax and LayerNorm. Batch-1 logits are bit-identical to PyTorch.
 *
 * Rows are PACKED: sentence i owns rows[i] .. rows[i+1]-1 (S_i = lengths[i]+1 positions, [CLS]
 * first), N = sum S_i rows in all; padding positions are never computed. PyTorch masks padded
 * keys and computes padded queries that never reach the loss, so each sentence's attention here
 * is exactly its batch-1 attention (same GEMM shapes); the gradients are mathematically the
 * same (the padded rows' were exact zeros). Only the [CLS] rows of the last layer's output reach
 * the head. For B > 1 the last layer therefore projects q and computes attention for the [CLS]
 * queries only, and its out_proj, LayerNorm(s) and feed-forward on the B [CLS] rows only (rows
 * 0..B-1 of its buffers); its keys and values still cover every row. At B = 1 every layer runs in
 * full, as PyTorch does, because OpenBLAS rounds a GEMM row differently in a 1-row product (the
 * [CLS] row is then row 0 all the same). */
#include "model_internal.h"

#include "attn_kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* pos_embedding init, the documented choice (tools/attn_models.py does the same): the sinusoidal
 * table of "Attention Is All You Need" (base 10000) times 2, then trained like every other
 * parameter. Measured with attn reproduce --seeds 10 (mean error over the seeds): against
 * N(0, 0.02^2) it takes the Transformer from 1.88% to 0.02% on the distractor set, 1.26% to 0.12%
 * on fill4 and 2.25% to 0.76% on fill8. Amplitude 1 and 1.5 did worse (0.5-1.1% over all sets),
 * as did 3 and 4 (they delay the epoch where learning starts from ~5 to ~10), base 100 or 1000,
 * and the table centred on its mean; frozen (not trained) it did no better. */
#define POS_EMBEDDING_AMPLITUDE 2.0f

static size_t transformer_specs(const attn_model_config *c, attn_param_spec *s) {
    const int V = c->vocab_size, D = c->embed_dim, F = c->ffn_dim, P = c->max_len;
    size_t n = 0;
    char name[ATTN_NAME_MAX];
    /* A module's own parameters come before its children's in state_dict order. */
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

/* One encoder layer: parameter views, gradient views and the activations backward needs.
 * N packed rows. q, k, v are head-major [NH, N, HS]: head h of sentence i is the contiguous
 * [S_i, HS] block at (h*N + rows[i])*HS. A [CLS]-only layer (the last one when B > 1) keeps
 * attention probabilities for the [CLS] query only and B rows in att, r1, n2, ff1, act, r2 and
 * (post-norm) n1. */
/* One encoder layer's parameter tensors; the same struct names their gradients. */
typedef struct tf_layer_tensors {
    float *in_proj_weight;                                        /* [3D, D] packed q, k, v */
    float *in_proj_bias;                                          /* [3D] */
    float *out_proj_weight;                                       /* [D, D] */
    float *out_proj_bias;                                         /* [D] */
    float *linear1_weight;                                        /* [F, D] */
    float *linear1_bias;                                          /* [F] */
    float *linear2_weight;                                        /* [D, F] */
    float *linear2_bias;                                          /* [D] */
    float *norm1_weight, *norm1_bias, *norm2_weight, *norm2_bias; /* [D] */
} tf_layer_tensors;

typedef struct tf_layer {
    tf_layer_tensors w; /* parameters (views into m->params) */
    tf_layer_tensors d; /* gradients (views into m->grads) */
    /* activations */
    bool cls_only;        /* computed for the [CLS] queries only (see the file header) */
    float *n1;            /* [N, D] pre: LN1(x_in); post: LN1(r1) */
    float *mean1, *rstd1; /* [N] */
    float *qkv;           /* [N, 3D] x.W_in^T without bias ([CLS] only: kv [N, 2D], q [B, D]) */
    float *q, *k, *v;     /* [NH, N, HS]; q = (q + b_q) * scale */
    float *probs;         /* per (i, h): [S_i, S_i] (full) or [1, S_i] ([CLS] only) */
    float *att;           /* [N, D] heads concatenated */
    float *r1;            /* [N, D] x_in + out_proj(att) */
    float *n2;            /* [N, D] pre: LN2(r1); post: LN2(r2) = layer output */
    float *mean2, *rstd2; /* [N] */
    float *ff1;           /* [N, F] linear1 output (activation input) */
    float *act;           /* [N, F] relu/gelu(ff1) */
    float *r2;            /* [N, D] pre: r1 + ff = layer output; post: n1 + ff */
    float *out;           /* [N, D] the layer output (r2 or n2) */
} tf_layer;

/* The model's own tensors outside the layers; the same struct names their gradients. */
typedef struct tf_tensors {
    float *pos_embedding;           /* [P, D] */
    float *embedding;               /* [V, D] */
    float *norm_weight, *norm_bias; /* [D] final LayerNorm (pre-norm only, else NULL) */
    float *head_weight;             /* [1, D] */
    float *head_bias;               /* [1] */
} tf_tensors;

typedef struct tf_impl {
    tf_tensors w; /* parameters (views into m->params) */
    tf_tensors d; /* gradients (views into m->grads) */
    tf_layer layers[4];
    /* the last forward's batch: B sentences, N packed rows */
    int B, N, S_max;
    int *rows;    /* [B+1] first packed row of each sentence; rows[B] = N */
    size_t *poff; /* [B+1] start of sentence i's probabilities in a full layer's probs */
    int rows_cap; /* entries allocated in rows and poff */
    /* activation arena, carved for the last forward's (B, N) */
    float *arena;
    size_t cap;
    float *x0;              /* [N, D] embedding + pos_embedding */
    float *cls;             /* [B, D] last layer's output at [CLS] */
    float *cls_norm;        /* [B, D] final LN of cls (pre-norm) */
    float *mean_f, *rstd_f; /* [B] */
    float *ctx;             /* [S_max, HS] one head's P.V (scratch, also its gradient) */
    /* backward scratch */
    float *d_x, *d_r, *d_n;    /* [N, D] */
    float *d_qkv;              /* [N, 3D] */
    float *d_q, *d_k, *d_v;    /* [NH, N, HS] */
    float *d_att;              /* [N, D] */
    float *d_ff1, *d_act;      /* [N, F] */
    float *d_probs, *d_scores; /* [S_max, S_max] */
    float *d_head_in, *d_cls;  /* [B, D] */
} tf_impl;

/* Lays the arena out for v->B sentences in N rows, none longer than S_max, with n_probs floats
 * of probabilities in a full layer (and the layers' cls_only); with base NULL it only counts.
 * Returns the floats needed. */
static size_t tf_layout(tf_impl *v, const attn_model_config *c, float *base, size_t N, size_t SM,
                        size_t n_probs) {
    const size_t D = c->embed_dim, F = c->ffn_dim, B = (size_t)v->B;
    const size_t HS = D / c->n_heads;
    const size_t ND = N * D, NF = N * F;
    size_t u = 0;
    for (int l = 0; l < c->n_layers; l++) {
        tf_layer *L = &v->layers[l];
        L->n1 = attn_arena_carve(base, &u, ND);
        L->mean1 = attn_arena_carve(base, &u, N);
        L->rstd1 = attn_arena_carve(base, &u, N);
        L->qkv = attn_arena_carve(base, &u, 3 * ND);
        L->q = attn_arena_carve(base, &u, ND);
        L->k = attn_arena_carve(base, &u, ND);
        L->v = attn_arena_carve(base, &u, ND);
        L->probs = attn_arena_carve(base, &u, L->cls_only ? (size_t)c->n_heads * N : n_probs);
        L->att = attn_arena_carve(base, &u, ND);
        L->r1 = attn_arena_carve(base, &u, ND);
        L->n2 = attn_arena_carve(base, &u, ND);
        L->mean2 = attn_arena_carve(base, &u, N);
        L->rstd2 = attn_arena_carve(base, &u, N);
        L->ff1 = attn_arena_carve(base, &u, NF);
        L->act = attn_arena_carve(base, &u, NF);
        L->r2 = attn_arena_carve(base, &u, ND);
        L->out = c->norm == ATTN_NORM_PRE ? L->r2 : L->n2;
    }
    v->x0 = attn_arena_carve(base, &u, ND);
    v->cls = attn_arena_carve(base, &u, B * D);
    v->cls_norm = attn_arena_carve(base, &u, B * D);
    v->mean_f = attn_arena_carve(base, &u, B);
    v->rstd_f = attn_arena_carve(base, &u, B);
    v->ctx = attn_arena_carve(base, &u, SM * HS);
    v->d_x = attn_arena_carve(base, &u, ND);
    v->d_r = attn_arena_carve(base, &u, ND);
    v->d_n = attn_arena_carve(base, &u, ND);
    v->d_qkv = attn_arena_carve(base, &u, 3 * ND);
    v->d_q = attn_arena_carve(base, &u, ND);
    v->d_k = attn_arena_carve(base, &u, ND);
    v->d_v = attn_arena_carve(base, &u, ND);
    v->d_att = attn_arena_carve(base, &u, ND);
    v->d_ff1 = attn_arena_carve(base, &u, NF);
    v->d_act = attn_arena_carve(base, &u, NF);
    v->d_probs = attn_arena_carve(base, &u, SM * SM);
    v->d_scores = attn_arena_carve(base, &u, SM * SM);
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
        tf_layer_tensors *L = grads ? &v->layers[l].d : &v->layers[l].w;
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

static attn_status transformer_setup(attn_model *m, attn_error *err) {
    tf_impl *v = calloc(1, sizeof *v);
    if (!v) return attn_errorf(err, ATTN_ERR_NOMEM, "transformer: out of memory for views");
    m->impl = v;
    tf_bind(m, v, m->params, false);
    return ATTN_OK;
}

static void transformer_set_grads(attn_model *m) {
    tf_bind(m, m->impl, m->grads, true);
}

static void transformer_destroy(attn_model *m) {
    tf_impl *v = m->impl;
    free(v->arena);
    free(v->rows);
    free(v->poff);
    free(v);
    m->impl = NULL;
}

/* Token at position s (0 = [CLS]) of sentence i. */
static int token_at(const attn_batch *b, int i, int s) {
    return s == 0 ? ATTN_CLS_ID : b->ids[(size_t)i * b->T + s - 1];
}

/* Positions of sentence i ([CLS] + words). */
static int seq_len(const tf_impl *v, int i) {
    return v->rows[i + 1] - v->rows[i];
}

/* Row of sentence i's [CLS] in the last layer's output: row i of a [CLS]-only layer. */
static int cls_row(const tf_impl *v, const tf_layer *L, int i) {
    return L->cls_only ? i : v->rows[i];
}

/* Probabilities of head h of sentence i: [S_i, S_i] (full) or its [CLS] row [1, S_i]. */
static float *probs_at(const tf_impl *v, const tf_layer *L, int nh, int i, int h) {
    const size_t S = (size_t)seq_len(v, i);
    if (L->cls_only) return L->probs + (size_t)nh * v->rows[i] + h * S;
    return L->probs + v->poff[i] + h * S * S;
}

/* rows, poff, S_max and the layers' modes for batch b; grows rows/poff as needed. */
static attn_status tf_plan(tf_impl *v, const attn_model_config *c, const attn_batch *b,
                           attn_error *err) {
    if (b->B + 1 > v->rows_cap) {
        int *rows = malloc((size_t)(b->B + 1) * sizeof *rows);
        size_t *poff = malloc((size_t)(b->B + 1) * sizeof *poff);
        if (!rows || !poff) {
            free(rows);
            free(poff);
            return attn_errorf(err, ATTN_ERR_NOMEM, "transformer: out of memory for a batch of %d",
                               b->B);
        }
        free(v->rows);
        free(v->poff);
        v->rows = rows;
        v->poff = poff;
        v->rows_cap = b->B + 1;
    }
    v->B = b->B;
    v->rows[0] = 0;
    v->poff[0] = 0;
    v->S_max = 0;
    for (int i = 0; i < b->B; i++) {
        const int S = b->lengths[i] + 1;
        v->rows[i + 1] = v->rows[i] + S;
        v->poff[i + 1] = v->poff[i] + (size_t)c->n_heads * S * S;
        if (S > v->S_max) v->S_max = S;
    }
    v->N = v->rows[b->B];
    for (int l = 0; l < c->n_layers; l++) v->layers[l].cls_only = l == c->n_layers - 1 && b->B > 1;
    return ATTN_OK;
}

/* ---- self-attention ------------------------------------------------------------------------ */

/* One row of head h: q = (qkv_q + b_q) * scale, k = qkv_k + b_k, v = qkv_v + b_v, from the
 * row's q part `row` (its k and v parts follow at +D and +2D) and the bias at the same offset. */
static void split_head_row(float *restrict q, float *restrict k, float *restrict v,
                           const float *restrict row, const float *restrict bias, int HS, int D,
                           float scale) {
    for (int j = 0; j < HS; j++) {
        q[j] = (row[j] + bias[j]) * scale;
        k[j] = row[D + j] + bias[D + j];
        v[j] = row[2 * D + j] + bias[2 * D + j];
    }
}

/* Its backward into one row of d_qkv: d_q * scale, d_k, d_v. */
static void merge_head_row(float *restrict row, const float *restrict d_q,
                           const float *restrict d_k, const float *restrict d_v, int HS, int D,
                           float scale) {
    for (int j = 0; j < HS; j++) {
        row[j] = d_q[j] * scale;
        row[D + j] = d_k[j];
        row[2 * D + j] = d_v[j];
    }
}

/* y[n] = (x + b) * scale, or x + b when scale is 0. */
static void add_bias(float *restrict y, const float *restrict x, const float *restrict b, int n,
                     float scale) {
    if (scale != 0.0f)
        for (int j = 0; j < n; j++) y[j] = (x[j] + b[j]) * scale;
    else
        for (int j = 0; j < n; j++) y[j] = x[j] + b[j];
}

/* rows_out[B, D] = the B [CLS] rows of x[N, D]. */
static void gather_cls(const tf_impl *v, float *rows_out, const float *x, int D) {
    for (int i = 0; i < v->B; i++)
        memcpy(rows_out + (size_t)i * D, x + (size_t)v->rows[i] * D, (size_t)D * sizeof(float));
}

/* The in_proj of a [CLS]-only layer: k, v for all N rows (kv[N, 2D] = in.W_kv^T in L->qkv)
 * and q for the B [CLS] rows only (qc[B, D] = in_cls.W_q^T after it); biases and scale as in
 * the full split. L->att holds the gathered [CLS] rows of `in` until the heads overwrite it. */
static void qkv_cls_forward(tf_impl *v, tf_layer *L, const attn_model_config *c, const float *in) {
    const int B = v->B, N = v->N, D = c->embed_dim, NH = c->n_heads, HS = D / NH;
    const float scale = 1.0f / sqrtf((float)HS);
    float *kv = L->qkv, *qc = L->qkv + (size_t)N * 2 * D;
    const float *bias = L->w.in_proj_bias;
    gather_cls(v, L->att, in, D);
    attn_linear_forward(kv, in, L->w.in_proj_weight + (size_t)D * D, NULL, N, D, 2 * D,
                        ATTN_OP_QKV);
    attn_linear_forward(qc, L->att, L->w.in_proj_weight, NULL, B, D, D, ATTN_OP_QKV);
    for (int h = 0; h < NH; h++) {
        for (int r = 0; r < N; r++) {
            const size_t o = ((size_t)h * N + r) * HS;
            const float *row = kv + (size_t)r * 2 * D + (size_t)h * HS;
            add_bias(L->k + o, row, bias + D + (size_t)h * HS, HS, 0.0f);
            add_bias(L->v + o, row + D, bias + 2 * D + (size_t)h * HS, HS, 0.0f);
        }
        for (int i = 0; i < B; i++)
            add_bias(L->q + ((size_t)h * N + v->rows[i]) * HS, qc + (size_t)i * D + (size_t)h * HS,
                     bias + (size_t)h * HS, HS, scale);
    }
}

/* Its backward, from v->d_q (the [CLS] rows), v->d_k and v->d_v: d_in[N, D] = beta_in * d_in
 * + d(in); accumulates d_W_in and d_b_in. Uses d_qkv, d_att and d_ff1 as scratch. */
static void qkv_cls_backward(tf_impl *v, tf_layer *L, const attn_model_config *c, float *d_in,
                             float beta_in, const float *in) {
    const int B = v->B, N = v->N, D = c->embed_dim, NH = c->n_heads, HS = D / NH;
    const float scale = 1.0f / sqrtf((float)HS);
    float *d_kv = v->d_qkv, *d_qc = v->d_qkv + (size_t)N * 2 * D;
    float *tmp = v->d_att, *in_cls = v->d_ff1; /* [B, D] each */
    for (int h = 0; h < NH; h++) {
        for (int r = 0; r < N; r++) {
            const size_t o = ((size_t)h * N + r) * HS;
            float *row = d_kv + (size_t)r * 2 * D + (size_t)h * HS;
            memcpy(row, v->d_k + o, (size_t)HS * sizeof(float));
            memcpy(row + D, v->d_v + o, (size_t)HS * sizeof(float));
        }
        for (int i = 0; i < B; i++) {
            const float *dq = v->d_q + ((size_t)h * N + v->rows[i]) * HS;
            float *dst = d_qc + (size_t)i * D + (size_t)h * HS;
            for (int j = 0; j < HS; j++) dst[j] = dq[j] * scale;
        }
    }
    const float *w_kv = L->w.in_proj_weight + (size_t)D * D;
    /* d_in = d_kv.W_kv (+ beta_in d_in), then the [CLS] rows += d_qc.W_q */
    attn_sgemm(ATTN_OP_QKV, true, false, false, N, D, 2 * D, 1.0f, d_kv, w_kv, beta_in, d_in);
    attn_sgemm(ATTN_OP_QKV, true, false, false, B, D, D, 1.0f, d_qc, L->w.in_proj_weight, 0.0f,
               tmp);
    for (int i = 0; i < B; i++)
        attn_add_forward(d_in + (size_t)v->rows[i] * D, d_in + (size_t)v->rows[i] * D,
                         tmp + (size_t)i * D, (size_t)D);
    attn_linear_backward(NULL, L->d.in_proj_weight + (size_t)D * D, L->d.in_proj_bias + D, d_kv, in,
                         w_kv, N, D, 2 * D, ATTN_OP_QKV);
    gather_cls(v, in_cls, in, D);
    attn_linear_backward(NULL, L->d.in_proj_weight, L->d.in_proj_bias, d_qc, in_cls,
                         L->w.in_proj_weight, B, D, D, ATTN_OP_QKV);
}

/* out[n_out, D] = out_proj(concat_h softmax(q_h.k_h^T) . v_h) over each sentence's own
 * positions, q, k, v = split(in.W_in^T) + b_in and q scaled by 1/sqrt(HS) before Q.K^T
 * (PyTorch's transform_bias_rescale_qkv: the in_proj GEMM has no bias; the bias is added in
 * the split). in: [N, D]. n_out = N, or B ([CLS] queries only, row i for sentence i). */
static void attention_forward(tf_impl *v, tf_layer *L, const attn_model_config *c, float *out,
                              const float *in) {
    const int B = v->B, N = v->N, D = c->embed_dim, NH = c->n_heads, HS = D / NH;
    const float scale = 1.0f / sqrtf((float)HS);
    if (L->cls_only) {
        qkv_cls_forward(v, L, c, in);
    } else {
        attn_linear_forward(L->qkv, in, L->w.in_proj_weight, NULL, N, D, 3 * D, ATTN_OP_QKV);
        for (int h = 0; h < NH; h++)
            for (int r = 0; r < N; r++) {
                const size_t o = ((size_t)h * N + r) * HS;
                split_head_row(L->q + o, L->k + o, L->v + o,
                               L->qkv + (size_t)r * 3 * D + (size_t)h * HS,
                               L->w.in_proj_bias + (size_t)h * HS, HS, D, scale);
            }
    }
    for (int i = 0; i < B; i++) {
        const int S = seq_len(v, i), nq = L->cls_only ? 1 : S;
        float *att = L->att + (size_t)(L->cls_only ? i : v->rows[i]) * D;
        for (int h = 0; h < NH; h++) {
            const size_t o = ((size_t)h * N + v->rows[i]) * HS;
            float *probs = probs_at(v, L, NH, i, h);
            /* probs[nq, S] = softmax(q.k^T) in place; ctx[nq, HS] = probs.v */
            attn_sgemm(ATTN_OP_QK, false, false, true, nq, S, HS, 1.0f, L->q + o, L->k + o, 0.0f,
                       probs);
            attn_softmax_forward(probs, probs, nq, S, S);
            attn_sgemm(ATTN_OP_AV, false, false, false, nq, HS, S, 1.0f, probs, L->v + o, 0.0f,
                       v->ctx);
            for (int s = 0; s < nq; s++)
                memcpy(att + (size_t)s * D + (size_t)h * HS, v->ctx + (size_t)s * HS,
                       (size_t)HS * sizeof(float));
        }
    }
    attn_linear_forward(out, L->att, L->w.out_proj_weight, L->w.out_proj_bias, L->cls_only ? B : N,
                        D, D, ATTN_OP_OUT_PROJ);
}

/* d_in[N, D] = beta_in * d_in + d(in) given d_out[n_out, D], the gradient of
 * attention_forward's out (beta_in 0 overwrites, 1 accumulates). */
static void attention_backward(tf_impl *v, tf_layer *L, const attn_model_config *c, float *d_in,
                               float beta_in, const float *d_out, const float *in) {
    const int B = v->B, N = v->N, D = c->embed_dim, NH = c->n_heads, HS = D / NH;
    const int n_out = L->cls_only ? B : N;
    const float scale = 1.0f / sqrtf((float)HS);
    /* out = att.W_o^T + b_o: d_att = d_out.W_o (written), d_W_o, d_b_o accumulate */
    attn_sgemm(ATTN_OP_OUT_PROJ, true, false, false, n_out, D, D, 1.0f, d_out, L->w.out_proj_weight,
               0.0f, v->d_att);
    attn_linear_backward(NULL, L->d.out_proj_weight, L->d.out_proj_bias, d_out, L->att,
                         L->w.out_proj_weight, n_out, D, D, ATTN_OP_OUT_PROJ);
    for (int i = 0; i < B; i++) {
        const int S = seq_len(v, i), nq = L->cls_only ? 1 : S;
        const float *d_att = v->d_att + (size_t)(L->cls_only ? i : v->rows[i]) * D;
        for (int h = 0; h < NH; h++) {
            const size_t o = ((size_t)h * N + v->rows[i]) * HS;
            const float *probs = probs_at(v, L, NH, i, h);
            for (int s = 0; s < nq; s++) /* d_ctx = this head's columns of d_att */
                memcpy(v->ctx + (size_t)s * HS, d_att + (size_t)s * D + (size_t)h * HS,
                       (size_t)HS * sizeof(float));
            /* ctx = P.v: d_P = d_ctx.v^T, d_v = P^T.d_ctx */
            attn_sgemm(ATTN_OP_AV, true, false, true, nq, S, HS, 1.0f, v->ctx, L->v + o, 0.0f,
                       v->d_probs);
            attn_sgemm(ATTN_OP_AV, true, true, false, S, HS, nq, 1.0f, probs, v->ctx, 0.0f,
                       v->d_v + o);
            /* P = softmax(scores) */
            memset(v->d_scores, 0, (size_t)nq * S * sizeof(float));
            attn_softmax_backward(v->d_scores, v->d_probs, probs, nq, S, S);
            /* scores = q.k^T: d_q = d_scores.k (the [CLS] row only if cls_only),
             * d_k = d_scores^T.q */
            attn_sgemm(ATTN_OP_QK, true, false, false, nq, HS, S, 1.0f, v->d_scores, L->k + o, 0.0f,
                       v->d_q + o);
            attn_sgemm(ATTN_OP_QK, true, true, false, S, HS, nq, 1.0f, v->d_scores, L->q + o, 0.0f,
                       v->d_k + o);
        }
    }
    if (L->cls_only) {
        qkv_cls_backward(v, L, c, d_in, beta_in, in);
        return;
    }
    /* q = (qkv_q + b_q) * scale, k = qkv_k + b_k, v = qkv_v + b_v: back to [N, 3D] */
    for (int i = 0; i < B; i++) {
        const int S = seq_len(v, i);
        for (int h = 0; h < NH; h++)
            for (int s = 0; s < S; s++) {
                const size_t r = (size_t)v->rows[i] + s, o = ((size_t)h * N + r) * HS;
                merge_head_row(v->d_qkv + r * 3 * D + (size_t)h * HS, v->d_q + o, v->d_k + o,
                               v->d_v + o, HS, D, scale);
            }
    }
    /* qkv = in.W_in^T (+ b_in in the split): d_b_in is the column sum of d_qkv */
    attn_sgemm(ATTN_OP_QKV, true, false, false, N, D, 3 * D, 1.0f, v->d_qkv, L->w.in_proj_weight,
               beta_in, d_in);
    attn_linear_backward(NULL, L->d.in_proj_weight, L->d.in_proj_bias, v->d_qkv, in,
                         L->w.in_proj_weight, N, D, 3 * D, ATTN_OP_QKV);
}

/* ---- feed-forward ------------------------------------------------------------------------- */

/* out[n, D] = act(in.W_1^T + b_1).W_2^T + b_2 (act = relu or erf-gelu). */
static void ffn_forward(tf_layer *L, const attn_model_config *c, int n, float *out,
                        const float *in) {
    const int D = c->embed_dim, F = c->ffn_dim;
    attn_linear_forward(L->ff1, in, L->w.linear1_weight, L->w.linear1_bias, n, D, F,
                        ATTN_OP_FFN_UP);
    if (c->activation == ATTN_ACT_GELU)
        attn_gelu_forward(L->act, L->ff1, (size_t)n * F);
    else
        attn_relu_forward(L->act, L->ff1, (size_t)n * F);
    attn_linear_forward(out, L->act, L->w.linear2_weight, L->w.linear2_bias, n, F, D,
                        ATTN_OP_FFN_DOWN);
}

/* d_in[n, D] = beta_in * d_in + d(in) given d_out[n, D]. */
static void ffn_backward(tf_impl *v, tf_layer *L, const attn_model_config *c, int n, float *d_in,
                         float beta_in, const float *d_out, const float *in) {
    const int D = c->embed_dim, F = c->ffn_dim;
    const size_t NF = (size_t)n * F;
    /* d_act = d_out.W_2 (written); d_W_2, d_b_2 accumulate */
    attn_sgemm(ATTN_OP_FFN_DOWN, true, false, false, n, F, D, 1.0f, d_out, L->w.linear2_weight,
               0.0f, v->d_act);
    attn_linear_backward(NULL, L->d.linear2_weight, L->d.linear2_bias, d_out, L->act,
                         L->w.linear2_weight, n, F, D, ATTN_OP_FFN_DOWN);
    memset(v->d_ff1, 0, NF * sizeof(float));
    if (c->activation == ATTN_ACT_GELU)
        attn_gelu_backward(v->d_ff1, v->d_act, L->ff1, NF);
    else
        attn_relu_backward(v->d_ff1, v->d_act, L->ff1, NF);
    attn_sgemm(ATTN_OP_FFN_UP, true, false, false, n, D, F, 1.0f, v->d_ff1, L->w.linear1_weight,
               beta_in, d_in);
    attn_linear_backward(NULL, L->d.linear1_weight, L->d.linear1_bias, v->d_ff1, in,
                         L->w.linear1_weight, n, D, F, ATTN_OP_FFN_UP);
}

/* ---- encoder layer ------------------------------------------------------------------------- */

/* y[n_out, D] = x' + a, x' = x's [CLS] rows (cls_only) or x itself; y may alias a. */
static void residual_forward(const tf_impl *v, const tf_layer *L, int D, float *y, const float *x,
                             const float *a) {
    if (!L->cls_only) {
        attn_add_forward(y, x, a, (size_t)v->N * D);
        return;
    }
    for (int i = 0; i < v->B; i++)
        attn_add_forward(y + (size_t)i * D, x + (size_t)v->rows[i] * D, a + (size_t)i * D,
                         (size_t)D);
}

/* pre-norm:  r1 = x + SA(LN1(x));  out = r2 = r1 + FF(LN2(r1))
 * post-norm: r1 = x + SA(x); n1 = LN1(r1); r2 = n1 + FF(n1); out = n2 = LN2(r2)
 * Everything after the attention has n_out rows (B if cls_only, else N). */
static void layer_forward(tf_impl *v, tf_layer *L, const attn_model_config *c, const float *x) {
    const int N = v->N, D = c->embed_dim, n_out = L->cls_only ? v->B : N;
    const size_t nD = (size_t)n_out * D;
    if (c->norm == ATTN_NORM_PRE) {
        attn_layernorm_forward(L->n1, L->mean1, L->rstd1, x, L->w.norm1_weight, L->w.norm1_bias, N,
                               D);
        attention_forward(v, L, c, L->r1, L->n1);
        residual_forward(v, L, D, L->r1, x, L->r1);
        attn_layernorm_forward(L->n2, L->mean2, L->rstd2, L->r1, L->w.norm2_weight, L->w.norm2_bias,
                               n_out, D);
        ffn_forward(L, c, n_out, L->r2, L->n2);
        attn_add_forward(L->r2, L->r1, L->r2, nD);
    } else {
        attention_forward(v, L, c, L->r1, x);
        residual_forward(v, L, D, L->r1, x, L->r1);
        attn_layernorm_forward(L->n1, L->mean1, L->rstd1, L->r1, L->w.norm1_weight, L->w.norm1_bias,
                               n_out, D);
        ffn_forward(L, c, n_out, L->r2, L->n1);
        attn_add_forward(L->r2, L->n1, L->r2, nD);
        attn_layernorm_forward(L->n2, L->mean2, L->rstd2, L->r2, L->w.norm2_weight, L->w.norm2_bias,
                               n_out, D);
    }
}

/* d_x[N, D] (zeroed) += the residual gradient d_r[n_out, D] of a cls_only layer, at the [CLS]
 * rows; a full layer's is d_r itself (copied). */
static void residual_backward(const tf_impl *v, const tf_layer *L, int D, float *d_x,
                              const float *d_r) {
    if (!L->cls_only) {
        memcpy(d_x, d_r, (size_t)v->N * D * sizeof(float));
        return;
    }
    memset(d_x, 0, (size_t)v->N * D * sizeof(float));
    for (int i = 0; i < v->B; i++)
        memcpy(d_x + (size_t)v->rows[i] * D, d_r + (size_t)i * D, (size_t)D * sizeof(float));
}

/* On entry v->d_x[n_out, D] = d loss / d layer output; on exit v->d_x[N, D] = d loss / d x
 * (the layer input). v->d_x and v->d_r may be swapped. */
static void layer_backward(tf_impl *v, tf_layer *L, const attn_model_config *c, const float *x) {
    const int N = v->N, D = c->embed_dim, n_out = L->cls_only ? v->B : N;
    const size_t nD = (size_t)n_out * D;
    if (c->norm == ATTN_NORM_PRE) {
        /* out = r1 + FF(LN2(r1)): d_r1 = d_out + LN2'(FF'(d_out)) */
        ffn_backward(v, L, c, n_out, v->d_n, 0.0f, v->d_x, L->n2);
        attn_layernorm_backward(v->d_x, L->d.norm2_weight, L->d.norm2_bias, v->d_n, L->r1, L->mean2,
                                L->rstd2, L->w.norm2_weight, n_out, D);
        /* r1 = x + SA(LN1(x)): d_x = d_r1 + LN1'(SA'(d_r1)) */
        attention_backward(v, L, c, v->d_n, 0.0f, v->d_x, L->n1);
        if (L->cls_only) { /* d_r1 has the B [CLS] rows: spread it over the N rows of d_x */
            residual_backward(v, L, D, v->d_r, v->d_x);
            float *t = v->d_x;
            v->d_x = v->d_r;
            v->d_r = t;
        }
        attn_layernorm_backward(v->d_x, L->d.norm1_weight, L->d.norm1_bias, v->d_n, x, L->mean1,
                                L->rstd1, L->w.norm1_weight, N, D);
    } else {
        /* out = LN2(r2) */
        memset(v->d_r, 0, nD * sizeof(float));
        attn_layernorm_backward(v->d_r, L->d.norm2_weight, L->d.norm2_bias, v->d_x, L->r2, L->mean2,
                                L->rstd2, L->w.norm2_weight, n_out, D);
        /* r2 = n1 + FF(n1): d_n1 = d_r2 + FF'(d_r2) */
        memcpy(v->d_x, v->d_r, nD * sizeof(float));
        ffn_backward(v, L, c, n_out, v->d_x, 1.0f, v->d_r, L->n1);
        /* n1 = LN1(r1) */
        memset(v->d_r, 0, nD * sizeof(float));
        attn_layernorm_backward(v->d_r, L->d.norm1_weight, L->d.norm1_bias, v->d_x, L->r1, L->mean1,
                                L->rstd1, L->w.norm1_weight, n_out, D);
        /* r1 = x + SA(x): d_x = d_r1 + SA'(d_r1) */
        residual_backward(v, L, D, v->d_x, v->d_r);
        attention_backward(v, L, c, v->d_x, 1.0f, v->d_r, x);
    }
}

/* ---- model forward / backward ------------------------------------------------------------- */

static attn_status transformer_forward(attn_model *m, const attn_batch *b, float *logits,
                                       attn_error *err) {
    tf_impl *v = m->impl;
    const attn_model_config *c = &m->cfg;
    const int B = b->B, D = c->embed_dim;
    attn_status st = tf_plan(v, c, b, err);
    if (st == ATTN_OK) {
        /* room for the padded (B, T+1) batch, and at least 1.5 times the old arena when it
         * grows, so that it is not regrown (its pages faulted in afresh) batch after batch */
        const size_t S = (size_t)b->T + 1;
        size_t need = tf_layout(v, c, NULL, B * S, S, (size_t)c->n_heads * B * S * S);
        if (need > v->cap && need < v->cap + v->cap / 2) need = v->cap + v->cap / 2;
        st = attn_arena_reserve(&v->arena, &v->cap, need, err);
    }
    if (st != ATTN_OK) {
        v->B = v->N = 0; /* nothing to back-propagate */
        return st;
    }
    tf_layout(v, c, v->arena, (size_t)v->N, (size_t)v->S_max, v->poff[B]);

    /* x0[rows[i] + s] = embedding[token] + pos_embedding[s], token 0 = [CLS] */
    for (int i = 0; i < B; i++)
        for (int s = 0; s < seq_len(v, i); s++) {
            const float *e = v->w.embedding + (size_t)token_at(b, i, s) * D;
            attn_add_forward(v->x0 + ((size_t)v->rows[i] + s) * D, e,
                             v->w.pos_embedding + (size_t)s * D, (size_t)D);
        }
    const float *x = v->x0;
    for (int l = 0; l < c->n_layers; l++) {
        layer_forward(v, &v->layers[l], c, x);
        x = v->layers[l].out;
    }
    /* head on [CLS] (after the final LayerNorm in pre-norm; LN is row-wise) */
    const tf_layer *last = &v->layers[c->n_layers - 1];
    for (int i = 0; i < B; i++)
        memcpy(v->cls + (size_t)i * D, x + (size_t)cls_row(v, last, i) * D,
               (size_t)D * sizeof(float));
    const float *head_in = v->cls;
    if (c->norm == ATTN_NORM_PRE) {
        attn_layernorm_forward(v->cls_norm, v->mean_f, v->rstd_f, v->cls, v->w.norm_weight,
                               v->w.norm_bias, B, D);
        head_in = v->cls_norm;
    }
    attn_linear_forward(logits, head_in, v->w.head_weight, v->w.head_bias, B, D, 1, ATTN_OP_HEAD);
    return ATTN_OK;
}

static void transformer_backward(attn_model *m, const attn_batch *b, const float *d_logits) {
    tf_impl *v = m->impl;
    const attn_model_config *c = &m->cfg;
    const int B = v->B, D = c->embed_dim;
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
    /* only the [CLS] rows of the last layer's output reach the loss */
    const tf_layer *last = &v->layers[c->n_layers - 1];
    if (!last->cls_only) memset(v->d_x, 0, (size_t)v->N * D * sizeof(float));
    for (int i = 0; i < B; i++)
        memcpy(v->d_x + (size_t)cls_row(v, last, i) * D, d_cls + (size_t)i * D,
               (size_t)D * sizeof(float));
    for (int l = c->n_layers - 1; l >= 0; l--)
        layer_backward(v, &v->layers[l], c, l == 0 ? v->x0 : v->layers[l - 1].out);
    /* x0 = embedding[token] + pos_embedding[s] */
    for (int i = 0; i < B; i++)
        for (int s = 0; s < seq_len(v, i); s++) {
            const float *d_row = v->d_x + ((size_t)v->rows[i] + s) * D;
            float *d_e = v->d.embedding + (size_t)token_at(b, i, s) * D;
            float *d_p = v->d.pos_embedding + (size_t)s * D;
            for (int j = 0; j < D; j++) {
                d_e[j] += d_row[j];
                d_p[j] += d_row[j];
            }
        }
}

const attn_model_vt attn_transformer_vt = {
    "transformer",       transformer_specs,    transformer_setup,  transformer_set_grads,
    transformer_forward, transformer_backward, transformer_destroy};

/* vit_layer.h -- a ViT-style pre-norm Transformer encoder layer (batch 1): the Transformer
 * model's own encoder layer (src/models/encoder_layer.c, attn_encoder_forward) with ViT-Base
 * sizes and GELU, header-only so that bench/flops.c and tests/kernels/test_flops.c share it
 * (CMake builds every C file in bench/ as its own program).
 *
 *   h = LN1(x); qkv = h.W_in^T + b_in; per head: O = softmax(Q.K^T / sqrt(HS)).V;
 *   x1 = x + O.W_out^T + b_out; y = x1 + W2.gelu(W1.LN2(x1) + b1) + b2
 *
 * This is PyTorch's nn.TransformerEncoderLayer(D, NH, F, activation='gelu', norm_first=True).
 * Shapes: x, y [n,D]; n tokens (197 = 14^2 patches + [CLS] at 224 px, 4097 at 1024 px).
 * Multiply-adds per layer: projections (QKV + out) 4nD^2, MLP 2nDF (= 8nD^2 at F = 4D),
 * n x n products (Q.K^T + A.V) 2n^2 D; the n x n share is n / (6D + n) at F = 4D.
 * The attention is attn_attention_forward: without kept probabilities it takes the blocked
 * (online softmax) path above ATTN_ATTENTION_BLOCKED_ABOVE tokens, the naive one below.
 */
#ifndef ATTN_BENCH_VIT_LAYER_H
#define ATTN_BENCH_VIT_LAYER_H

#include "attn.h"
#include "attn_kernels.h"
#include "encoder_layer.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* AUTO: the probabilities are not kept, so the kernel picks the path by size (blocked above
 * ATTN_ATTENTION_BLOCKED_ABOVE tokens). NAIVE: they are kept ([NH, n, n], what PyTorch's layer
 * materialises as attention weights), so the naive path runs at any n. */
typedef enum vit_path { VIT_PATH_AUTO, VIT_PATH_NAIVE } vit_path;

/* Timed stages of one forward (seconds accumulate into stage_s[VIT_ST_COUNT]): the encoder
 * layer's own stages. */
typedef enum vit_stage {
    VIT_ST_LAYERNORM = ATTN_ENCODER_LAYERNORM,
    VIT_ST_QKV = ATTN_ENCODER_QKV,
    VIT_ST_SPLIT = ATTN_ENCODER_SPLIT,         /* bias, scale q, split heads */
    VIT_ST_ATTENTION = ATTN_ENCODER_ATTENTION, /* q.k^T + softmax + a.v, merge heads */
    VIT_ST_OUT_PROJ = ATTN_ENCODER_OUT_PROJ,
    VIT_ST_FFN_UP = ATTN_ENCODER_FFN_UP,
    VIT_ST_GELU = ATTN_ENCODER_ACTIVATION,
    VIT_ST_FFN_DOWN = ATTN_ENCODER_FFN_DOWN,
    VIT_ST_ADD = ATTN_ENCODER_ADD,
    VIT_ST_COUNT = ATTN_ENCODER_STAGE_COUNT
} vit_stage;

/* Parameters of one layer (one allocation; views in w, named as the Transformer's). */
typedef struct vit_layer {
    int D, NH, F;
    attn_model_config cfg; /* embed_dim D, n_heads NH, ffn_dim F, pre-norm, gelu */
    float *params;
    attn_encoder_weights w;
} vit_layer;

/* Activations for up to n_max tokens (one allocation, carved into a). */
typedef struct vit_work {
    int n_max;
    vit_path path;
    float *buf;
    attn_encoder_acts a;
    double *stage_s, t0; /* the lap hook's clock */
} vit_work;

static inline size_t vit_layer_n_params(int D, int F) {
    return (size_t)4 * D + (size_t)3 * D * D + 3 * (size_t)D + (size_t)D * D + D + (size_t)F * D +
           F + (size_t)D * F + D;
}

/* Random layer: Linear weights U(-1/sqrt(in), 1/sqrt(in)) as nn.Linear, LN gamma 1 + U(-.1,.1),
 * beta U(-.1,.1). Returns false on allocation failure. */
static inline bool vit_layer_init(vit_layer *L, int D, int NH, int F, uint64_t seed) {
    memset(L, 0, sizeof *L);
    L->D = D;
    L->NH = NH;
    L->F = F;
    L->cfg = attn_model_config_default(ATTN_ARCH_TRANSFORMER);
    L->cfg.embed_dim = D;
    L->cfg.n_heads = NH;
    L->cfg.ffn_dim = F;
    L->cfg.norm = ATTN_NORM_PRE;
    L->cfg.activation = ATTN_ACT_GELU;
    L->params = malloc(vit_layer_n_params(D, F) * sizeof(float));
    if (!L->params) return false;
    float *p = L->params;
    attn_encoder_weights *w = &L->w;
#define VIT_TAKE(field, count)                                                                     \
    do {                                                                                           \
        w->field = p;                                                                              \
        p += (count);                                                                              \
    } while (0)
    VIT_TAKE(norm1_weight, D);
    VIT_TAKE(norm1_bias, D);
    VIT_TAKE(in_proj_weight, (size_t)3 * D * D);
    VIT_TAKE(in_proj_bias, 3 * D);
    VIT_TAKE(out_proj_weight, (size_t)D * D);
    VIT_TAKE(out_proj_bias, D);
    VIT_TAKE(norm2_weight, D);
    VIT_TAKE(norm2_bias, D);
    VIT_TAKE(linear1_weight, (size_t)F * D);
    VIT_TAKE(linear1_bias, F);
    VIT_TAKE(linear2_weight, (size_t)D * F);
    VIT_TAKE(linear2_bias, D);
#undef VIT_TAKE
    attn_rng r = attn_rng_seed(seed);
    const float bd = 1.0f / sqrtf((float)D), bf = 1.0f / sqrtf((float)F);
    for (int i = 0; i < D; i++) {
        w->norm1_weight[i] = 1.0f + attn_rng_uniform_range(&r, -0.1f, 0.1f);
        w->norm1_bias[i] = attn_rng_uniform_range(&r, -0.1f, 0.1f);
        w->norm2_weight[i] = 1.0f + attn_rng_uniform_range(&r, -0.1f, 0.1f);
        w->norm2_bias[i] = attn_rng_uniform_range(&r, -0.1f, 0.1f);
    }
    for (size_t i = 0; i < (size_t)3 * D * D; i++)
        w->in_proj_weight[i] = attn_rng_uniform_range(&r, -bd, bd);
    for (int i = 0; i < 3 * D; i++) w->in_proj_bias[i] = attn_rng_uniform_range(&r, -bd, bd);
    for (size_t i = 0; i < (size_t)D * D; i++)
        w->out_proj_weight[i] = attn_rng_uniform_range(&r, -bd, bd);
    for (int i = 0; i < D; i++) w->out_proj_bias[i] = attn_rng_uniform_range(&r, -bd, bd);
    for (size_t i = 0; i < (size_t)F * D; i++)
        w->linear1_weight[i] = attn_rng_uniform_range(&r, -bd, bd);
    for (int i = 0; i < F; i++) w->linear1_bias[i] = attn_rng_uniform_range(&r, -bd, bd);
    for (size_t i = 0; i < (size_t)D * F; i++)
        w->linear2_weight[i] = attn_rng_uniform_range(&r, -bf, bf);
    for (int i = 0; i < D; i++) w->linear2_bias[i] = attn_rng_uniform_range(&r, -bf, bf);
    return true;
}

static inline void vit_layer_free(vit_layer *L) {
    free(L->params);
    L->params = NULL;
}

/* Does a forward of n tokens on `path` take the blocked attention? */
static inline bool vit_uses_blocked(vit_path path, int n) {
    return path == VIT_PATH_AUTO && n > ATTN_ATTENTION_BLOCKED_ABOVE;
}

static inline void vit_work_free(vit_work *w) {
    free(w->buf);
    memset(w, 0, sizeof *w);
}

/* base + *used (NULL when base is NULL: counting), then *used += n. */
static inline float *vit_carve(float *base, size_t *used, size_t n) {
    float *p = base ? base + *used : NULL;
    *used += n;
    return p;
}

/* Carves the encoder activations for n_max tokens from base (NULL: only counts); returns the
 * floats needed. A forward-only layout: a buffer is reused once the forward has read it for
 * the last time (pre-norm order: n1 -> qkv -> q, k, v -> ctx -> att -> r1 -> n2 -> ff1 -> act
 * -> y), so the layer holds 8 [n, D] tensors instead of 20, as an inference engine would:
 *   region A [n, D]:   n1, then att (n1 is dead after the in_proj), then n2 (att is dead after
 *                      the out_proj)
 *   region B [n, 3D]:  qkv, then ctx (qkv is dead after the head split)
 *   region C [n, 3D]:  q, k, v
 *   B and C together:  ff1 = act (GELU in place), once the attention is done
 *   r1 [n, D] of its own (read again by the last residual). */
static inline size_t vit_work_layout(vit_work *w, const vit_layer *L, float *base) {
    const size_t n = (size_t)w->n_max, D = (size_t)L->D, F = (size_t)L->F;
    attn_encoder_acts *a = &w->a;
    size_t u = 0;
    float *region_a = vit_carve(base, &u, n * D);
    const size_t bc = 6 * n * D > n * F ? 6 * n * D : n * F;
    float *region_b = vit_carve(base, &u, bc);
    float *region_c = base ? region_b + 3 * n * D : NULL;
    a->n1 = a->att = a->n2 = region_a;
    a->qkv = a->ctx = region_b;
    a->q = region_c;
    a->k = base ? region_c + n * D : NULL;
    a->v = base ? region_c + 2 * n * D : NULL;
    a->ff1 = a->act = region_b;
    a->x_cls = NULL; /* full layer */
    a->mean1 = vit_carve(base, &u, n);
    a->rstd1 = vit_carve(base, &u, n);
    a->mean2 = vit_carve(base, &u, n);
    a->rstd2 = vit_carve(base, &u, n);
    a->r1 = vit_carve(base, &u, n * D);
    const bool keep = w->path == VIT_PATH_NAIVE;
    a->probs = keep ? vit_carve(base, &u, (size_t)L->NH * n * n) : NULL;
    /* without kept probabilities: the larger of the blocked path's work at n_max and the
     * naive path's at the longest n that still takes it */
    const int m = w->n_max < ATTN_ATTENTION_BLOCKED_ABOVE ? w->n_max : ATTN_ATTENTION_BLOCKED_ABOVE;
    const size_t work_long = attn_attention_forward_work_size(w->n_max, w->n_max);
    const size_t work_short = attn_attention_forward_work_size(m, m);
    a->attn_work =
        keep ? NULL : vit_carve(base, &u, work_long > work_short ? work_long : work_short);
    a->r2 = a->out = NULL; /* the caller's y, set per forward */
    return u;
}

/* Workspace for n_max tokens on `path`. Returns false on allocation failure. */
static inline bool vit_work_init(vit_work *w, const vit_layer *L, int n_max, vit_path path) {
    memset(w, 0, sizeof *w);
    w->n_max = n_max;
    w->path = path;
    w->buf = malloc(vit_work_layout(w, L, NULL) * sizeof(float));
    if (!w->buf) return false;
    vit_work_layout(w, L, w->buf);
    return true;
}

static inline double vit_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The encoder layer's lap hook: adds the time since the last lap to stage_s[stage]. */
static inline void vit_lap(void *ctx, attn_encoder_stage stage) {
    vit_work *w = ctx;
    double t = vit_now();
    w->stage_s[stage] += t - w->t0;
    w->t0 = t;
}

/* y[n,D] = layer(x[n,D]); n <= w->n_max, y does not alias x. stage_s: NULL or [VIT_ST_COUNT]
 * seconds (+=). */
static inline void vit_layer_forward(float *y, const float *x, const vit_layer *L, vit_work *w,
                                     int n, double *stage_s) {
    const int rows[2] = {0, n};
    const attn_encoder_rows batch = {1, n, rows};
    w->a.r2 = w->a.out = y; /* pre-norm: the layer output is r2 */
    w->a.lap = stage_s ? vit_lap : NULL;
    w->a.lap_ctx = w;
    w->stage_s = stage_s;
    w->t0 = stage_s ? vit_now() : 0.0;
    attn_encoder_forward(&w->a, x, &L->w, &L->cfg, &batch);
}

/* Analytic forward multiply-adds per attn_op tag of one layer at n tokens. */
static inline void vit_layer_madds(uint64_t madds[ATTN_OP_COUNT], int n, int D, int F) {
    const uint64_t N = (uint64_t)n, d = (uint64_t)D, f = (uint64_t)F;
    memset(madds, 0, ATTN_OP_COUNT * sizeof *madds);
    madds[ATTN_OP_QKV] = 3 * N * d * d;
    madds[ATTN_OP_QK] = N * N * d; /* NH heads x n x n x HS */
    madds[ATTN_OP_AV] = N * N * d;
    madds[ATTN_OP_OUT_PROJ] = N * d * d;
    madds[ATTN_OP_FFN_UP] = N * d * f;
    madds[ATTN_OP_FFN_DOWN] = N * f * d;
}

/* The write-up's closed form for the n x n share at F = 4D: 2n^2 D / (12nD^2 + 2n^2 D). */
static inline double vit_nn_share(int n, int D) {
    return (double)n / (6.0 * D + n);
}

#endif /* ATTN_BENCH_VIT_LAYER_H */

/* vit_layer.h -- a ViT-style pre-norm Transformer encoder layer (batch 1) on attn's kernels,
 * header-only so that bench/flops.c and tests/kernels/test_flops.c share it (CMake builds
 * every C file in bench/ as its own program).
 *
 *   h = LN1(x); qkv = h.W_in^T + b_in; per head: O = softmax(Q.K^T / sqrt(HS)).V;
 *   x1 = x + O.W_out^T + b_out; y = x1 + W2.gelu(W1.LN2(x1) + b1) + b2
 *
 * This is PyTorch's nn.TransformerEncoderLayer(D, NH, F, activation='gelu', norm_first=True).
 * Shapes: x, y [n,D]; n tokens (197 = 14^2 patches + [CLS] at 224 px, 4097 at 1024 px).
 * Multiply-adds per layer: projections (QKV + out) 4nD^2, MLP 2nDF (= 8nD^2 at F = 4D),
 * n x n products (Q.K^T + A.V) 2n^2 D; the n x n share is n / (6D + n) at F = 4D.
 */
#ifndef ATTN_BENCH_VIT_LAYER_H
#define ATTN_BENCH_VIT_LAYER_H

#include "attn.h"
#include "attn_kernels.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Sequences longer than this use the blocked attention automatically. */
#define VIT_BLOCKED_ABOVE 1024

typedef enum vit_path { VIT_PATH_AUTO, VIT_PATH_NAIVE, VIT_PATH_BLOCKED } vit_path;

/* Timed stages of one forward (seconds accumulate into stage_s[VIT_ST_COUNT]). */
typedef enum vit_stage {
    VIT_ST_LAYERNORM,
    VIT_ST_QKV,
    VIT_ST_SPLIT, /* gather heads (and scale q), merge heads */
    VIT_ST_QK,
    VIT_ST_SOFTMAX,
    VIT_ST_AV,
    VIT_ST_BLOCKED, /* q.k^T + softmax + a.v fused (blocked path) */
    VIT_ST_OUT_PROJ,
    VIT_ST_FFN_UP,
    VIT_ST_GELU,
    VIT_ST_FFN_DOWN,
    VIT_ST_ADD,
    VIT_ST_COUNT
} vit_stage;

static const char *const vit_stage_names[VIT_ST_COUNT] = {"layernorm x2",
                                                          "qkv proj",
                                                          "split/merge heads",
                                                          "q.k^T (n x n)",
                                                          "softmax",
                                                          "a.v (n x n)",
                                                          "blocked q.k^T+softmax+a.v",
                                                          "out proj",
                                                          "mlp up (fc1)",
                                                          "gelu",
                                                          "mlp down (fc2)",
                                                          "residual adds"};

/* Parameters of one layer (one allocation; views below). */
typedef struct vit_layer {
    int D, NH, F;
    float *params;
    float *ln1_w, *ln1_b; /* [D] */
    float *w_in, *b_in;   /* [3D,D], [3D] packed q,k,v */
    float *w_out, *b_out; /* [D,D], [D] */
    float *ln2_w, *ln2_b; /* [D] */
    float *w1, *b1;       /* [F,D], [F] */
    float *w2, *b2;       /* [D,F], [D] */
} vit_layer;

/* Activations for up to n_max tokens. */
typedef struct vit_work {
    int n_max, tile;
    vit_path path;         /* the path this workspace was sized for (AUTO: decided by n_max) */
    float *a;              /* [n,D] LN1 out, then merged heads, then LN2 out */
    float *b;              /* [n,D] attention output projection, then x1 */
    float *big;            /* [n,max(3D,F)] qkv, then fc1 out */
    float *heads;          /* [n,max(4D,F)] q,k,v,o per head [4,NH,n,HS], then gelu out */
    float *mean, *rstd;    /* [n] layer norm statistics */
    float *scores, *probs; /* [n,n] naive path only */
    float *blk;       /* [head_threads, attn_attention_blocked_work_size(tile)], blocked only */
    int head_threads; /* >1: blocked heads run in that many threads (OpenBLAS at 1 meanwhile) */
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
    L->params = malloc(vit_layer_n_params(D, F) * sizeof(float));
    if (!L->params) return false;
    float *p = L->params;
#define VIT_TAKE(field, count)                                                                     \
    do {                                                                                           \
        L->field = p;                                                                              \
        p += (count);                                                                              \
    } while (0)
    VIT_TAKE(ln1_w, D);
    VIT_TAKE(ln1_b, D);
    VIT_TAKE(w_in, (size_t)3 * D * D);
    VIT_TAKE(b_in, 3 * D);
    VIT_TAKE(w_out, (size_t)D * D);
    VIT_TAKE(b_out, D);
    VIT_TAKE(ln2_w, D);
    VIT_TAKE(ln2_b, D);
    VIT_TAKE(w1, (size_t)F * D);
    VIT_TAKE(b1, F);
    VIT_TAKE(w2, (size_t)D * F);
    VIT_TAKE(b2, D);
#undef VIT_TAKE
    attn_rng r = attn_rng_seed(seed);
    const float bd = 1.0f / sqrtf((float)D), bf = 1.0f / sqrtf((float)F);
    for (int i = 0; i < D; i++) {
        L->ln1_w[i] = 1.0f + attn_rng_uniform_range(&r, -0.1f, 0.1f);
        L->ln1_b[i] = attn_rng_uniform_range(&r, -0.1f, 0.1f);
        L->ln2_w[i] = 1.0f + attn_rng_uniform_range(&r, -0.1f, 0.1f);
        L->ln2_b[i] = attn_rng_uniform_range(&r, -0.1f, 0.1f);
    }
    for (size_t i = 0; i < (size_t)3 * D * D; i++) L->w_in[i] = attn_rng_uniform_range(&r, -bd, bd);
    for (int i = 0; i < 3 * D; i++) L->b_in[i] = attn_rng_uniform_range(&r, -bd, bd);
    for (size_t i = 0; i < (size_t)D * D; i++) L->w_out[i] = attn_rng_uniform_range(&r, -bd, bd);
    for (int i = 0; i < D; i++) L->b_out[i] = attn_rng_uniform_range(&r, -bd, bd);
    for (size_t i = 0; i < (size_t)F * D; i++) L->w1[i] = attn_rng_uniform_range(&r, -bd, bd);
    for (int i = 0; i < F; i++) L->b1[i] = attn_rng_uniform_range(&r, -bd, bd);
    for (size_t i = 0; i < (size_t)D * F; i++) L->w2[i] = attn_rng_uniform_range(&r, -bf, bf);
    for (int i = 0; i < D; i++) L->b2[i] = attn_rng_uniform_range(&r, -bf, bf);
    return true;
}

static inline void vit_layer_free(vit_layer *L) {
    free(L->params);
    L->params = NULL;
}

static inline bool vit_uses_blocked(vit_path path, int n) {
    return path == VIT_PATH_BLOCKED || (path == VIT_PATH_AUTO && n > VIT_BLOCKED_ABOVE);
}

static inline void vit_work_free(vit_work *w) {
    free(w->a);
    free(w->b);
    free(w->big);
    free(w->heads);
    free(w->mean);
    free(w->rstd);
    free(w->scores);
    free(w->probs);
    free(w->blk);
    memset(w, 0, sizeof *w);
}

/* Workspace for n_max tokens on `path`; the n x n buffers are allocated only for the naive
 * path, the tile buffer only for the blocked one. Returns false on allocation failure. */
static inline bool vit_work_init(vit_work *w, const vit_layer *L, int n_max, vit_path path,
                                 int tile) {
    memset(w, 0, sizeof *w);
    w->n_max = n_max;
    w->tile = tile;
    w->path = path;
    const size_t n = (size_t)n_max, D = (size_t)L->D, F = (size_t)L->F;
    const size_t big = 3 * D > F ? 3 * D : F, heads = 4 * D > F ? 4 * D : F;
    w->a = malloc(n * D * sizeof(float));
    w->b = malloc(n * D * sizeof(float));
    w->big = malloc(n * big * sizeof(float));
    w->heads = malloc(n * heads * sizeof(float));
    w->mean = malloc(n * sizeof(float));
    w->rstd = malloc(n * sizeof(float));
    bool ok = w->a && w->b && w->big && w->heads && w->mean && w->rstd;
    if (vit_uses_blocked(path, n_max)) {
        w->blk = malloc(attn_attention_blocked_work_size(tile) * sizeof(float));
        ok = ok && w->blk;
    } else {
        w->scores = malloc(n * n * sizeof(float));
        w->probs = malloc(n * n * sizeof(float));
        ok = ok && w->scores && w->probs;
    }
    if (!ok) vit_work_free(w);
    w->head_threads = 1;
    return ok;
}

/* Blocked path only: spread the heads over `threads` threads (the tile products are too small
 * for OpenBLAS's own threading to pay). The FLOP counter is thread-local, so counts are taken
 * with head_threads = 1. Returns false on allocation failure (the workspace is unchanged). */
static inline bool vit_work_set_head_threads(vit_work *w, int threads) {
    if (!w->blk || threads < 1) return threads >= 1;
    float *blk = realloc(w->blk, (size_t)threads * attn_attention_blocked_work_size(w->tile) *
                                     sizeof(float));
    if (!blk) return false;
    w->blk = blk;
    w->head_threads = threads;
    return true;
}

typedef struct vit_head_job {
    const float *qh, *kh, *vh; /* [NH,n,HS] */
    float *oh, *blk;
    int n, HS, h0, h1, tile;
} vit_head_job;

static inline void *vit_head_worker(void *arg) {
    const vit_head_job *j = arg;
    const size_t nhs = (size_t)j->n * j->HS;
    for (int h = j->h0; h < j->h1; h++)
        attn_attention_blocked_forward(j->oh + h * nhs, j->qh + h * nhs, j->kh + h * nhs,
                                       j->vh + h * nhs, j->n, j->n, j->HS, j->n, j->blk, j->tile);
    return NULL;
}

/* Blocked attention of all heads on w->head_threads threads. */
static inline void vit_heads_parallel(vit_work *w, const float *qh, const float *kh,
                                      const float *vh, float *oh, int n, int NH, int HS) {
    enum { MAX_T = 16 };
    const int T = w->head_threads < MAX_T ? w->head_threads : MAX_T;
    vit_head_job jobs[MAX_T];
    pthread_t tid[MAX_T];
    bool started[MAX_T] = {false};
    attn_set_num_threads(1);
    for (int t = 0; t < T; t++) {
        jobs[t] = (vit_head_job){qh,
                                 kh,
                                 vh,
                                 oh,
                                 w->blk + (size_t)t * attn_attention_blocked_work_size(w->tile),
                                 n,
                                 HS,
                                 NH * t / T,
                                 NH * (t + 1) / T,
                                 w->tile};
        if (t > 0) started[t] = pthread_create(&tid[t], NULL, vit_head_worker, &jobs[t]) == 0;
    }
    vit_head_worker(&jobs[0]);
    for (int t = 1; t < T; t++) {
        if (started[t])
            pthread_join(tid[t], NULL);
        else
            vit_head_worker(&jobs[t]); /* could not start a thread: do its heads here */
    }
    attn_set_num_threads(w->head_threads);
}

static inline double vit_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Adds the time since *t0 to stage_s[st] (if stage_s) and restarts the clock. */
static inline void vit_lap(double *stage_s, vit_stage st, double *t0) {
    if (!stage_s) return;
    double t = vit_now();
    stage_s[st] += t - *t0;
    *t0 = t;
}

/* y[n,D] = layer(x[n,D]); n <= w->n_max. stage_s: NULL or [VIT_ST_COUNT] seconds (+=). */
static inline void vit_layer_forward(float *y, const float *x, const vit_layer *L, vit_work *w,
                                     int n, double *stage_s) {
    const int D = L->D, NH = L->NH, F = L->F, HS = D / NH;
    const size_t nd = (size_t)n * D, nhs = (size_t)n * HS;
    const bool blocked = vit_uses_blocked(w->path, w->n_max);
    double t0 = stage_s ? vit_now() : 0.0;

    /* ---- attention block: x1 = x + out_proj(attention(LN1(x))) ---- */
    attn_layernorm_forward(w->a, w->mean, w->rstd, x, L->ln1_w, L->ln1_b, n, D);
    vit_lap(stage_s, VIT_ST_LAYERNORM, &t0);
    attn_linear_forward(w->big, w->a, L->w_in, L->b_in, n, D, 3 * D, ATTN_OP_QKV);
    vit_lap(stage_s, VIT_ST_QKV, &t0);
    /* gather head h's q (scaled by 1/sqrt(HS), as PyTorch scales q), k, v into contiguous
     * [n,HS] blocks: attn_sgemm takes contiguous operands only */
    float *qh = w->heads, *kh = qh + nd, *vh = kh + nd, *oh = vh + nd; /* [NH,n,HS] each */
    const float scale = 1.0f / sqrtf((float)HS);
    for (int i = 0; i < n; i++) {
        const float *row = w->big + (size_t)i * 3 * D;
        for (int h = 0; h < NH; h++) {
            float *qd = qh + h * nhs + (size_t)i * HS, *kd = kh + h * nhs + (size_t)i * HS;
            float *vd = vh + h * nhs + (size_t)i * HS;
            for (int c = 0; c < HS; c++) {
                qd[c] = row[h * HS + c] * scale;
                kd[c] = row[D + h * HS + c];
                vd[c] = row[2 * D + h * HS + c];
            }
        }
    }
    vit_lap(stage_s, VIT_ST_SPLIT, &t0);
    if (blocked && w->head_threads > 1) {
        vit_heads_parallel(w, qh, kh, vh, oh, n, NH, HS);
        vit_lap(stage_s, VIT_ST_BLOCKED, &t0);
    }
    for (int h = 0; h < NH && !(blocked && w->head_threads > 1); h++) {
        const float *q = qh + h * nhs, *k = kh + h * nhs, *v = vh + h * nhs;
        float *o = oh + h * nhs;
        if (blocked) {
            attn_attention_blocked_forward(o, q, k, v, n, n, HS, n, w->blk, w->tile);
            vit_lap(stage_s, VIT_ST_BLOCKED, &t0);
        } else {
            /* the naive kernel's three steps, timed one by one */
            attn_sgemm(ATTN_OP_QK, false, false, true, n, n, HS, 1.0f, q, k, 0.0f, w->scores);
            vit_lap(stage_s, VIT_ST_QK, &t0);
            attn_softmax_forward(w->probs, w->scores, n, n, n);
            vit_lap(stage_s, VIT_ST_SOFTMAX, &t0);
            attn_sgemm(ATTN_OP_AV, false, false, false, n, HS, n, 1.0f, w->probs, v, 0.0f, o);
            vit_lap(stage_s, VIT_ST_AV, &t0);
        }
    }
    for (int i = 0; i < n; i++) /* merge heads: a[i, h*HS + c] = o_h[i, c] */
        for (int h = 0; h < NH; h++)
            memcpy(w->a + (size_t)i * D + h * HS, oh + h * nhs + (size_t)i * HS,
                   (size_t)HS * sizeof(float));
    vit_lap(stage_s, VIT_ST_SPLIT, &t0);
    attn_linear_forward(w->b, w->a, L->w_out, L->b_out, n, D, D, ATTN_OP_OUT_PROJ);
    vit_lap(stage_s, VIT_ST_OUT_PROJ, &t0);
    attn_add_forward(w->b, x, w->b, nd); /* x1 */
    vit_lap(stage_s, VIT_ST_ADD, &t0);

    /* ---- MLP block: y = x1 + fc2(gelu(fc1(LN2(x1)))) ---- */
    attn_layernorm_forward(w->a, w->mean, w->rstd, w->b, L->ln2_w, L->ln2_b, n, D);
    vit_lap(stage_s, VIT_ST_LAYERNORM, &t0);
    attn_linear_forward(w->big, w->a, L->w1, L->b1, n, D, F, ATTN_OP_FFN_UP);
    vit_lap(stage_s, VIT_ST_FFN_UP, &t0);
    attn_gelu_forward(w->heads, w->big, (size_t)n * F);
    vit_lap(stage_s, VIT_ST_GELU, &t0);
    attn_linear_forward(y, w->heads, L->w2, L->b2, n, F, D, ATTN_OP_FFN_DOWN);
    vit_lap(stage_s, VIT_ST_FFN_DOWN, &t0);
    attn_add_forward(y, w->b, y, nd);
    vit_lap(stage_s, VIT_ST_ADD, &t0);
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

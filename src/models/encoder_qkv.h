/* encoder_qkv.h -- between an encoder layer (encoder_layer.c) and its q, k, v (encoder_qkv.c):
 * where the heads are (in the in-projection's rows or split head-major), and the projections,
 * their backward and the rotation that fill them. Internal to src/models.
 *
 * Two layouts give the same bits (the same products with the same shapes): heads side by side
 * in each row of a->qkv ([N, 3D]; [CLS]-only: kv [N, 2D], then q [B, D]), or split into the
 * head-major a->q, k, v ([NH, N, HS]). heads_in_rows says which; heads_where says where. */
#ifndef ATTN_ENCODER_QKV_H
#define ATTN_ENCODER_QKV_H

#include "encoder_layer.h"

/* Reports the end of a stage to the lap hook, if any. */
static inline void lap(const attn_encoder_acts *a, attn_encoder_stage stage) {
    if (a->lap) a->lap(a->lap_ctx, stage);
}

static inline int seq_len(const attn_encoder_rows *r, int i) {
    return r->rows[i + 1] - r->rows[i];
}

/* Whether q, k, v stay in the in-projection's output (biased and scaled in place, heads side
 * by side in each row) and the attention writes its heads straight into att: with kept
 * probabilities (training; the blocked path of a forward-only use wants head-major rows) and
 * heads wider than one float (a one-float head's P.v is a column, which OpenBLAS writes
 * contiguously). Else the heads are split into the head-major a->q, k, v and gathered back from
 * a->ctx. The same products with the same shapes either way, so the same bits. */
static inline bool heads_in_rows(const attn_encoder_acts *a, int D, int NH) {
    return a->probs != NULL && D / NH > 1;
}

/* Where q, k, v (or d_q, d_k, d_v) are: head h of sentence i's query row t at
 * q + h * hs + (q_row(i) + t) * ld_q, of its key row t at k + h * hs + (rows[i] + t) * ld_kv
 * (v likewise); q_row(i) = i when q_packed (the [CLS]-only layer's [B, D] queries), else
 * rows[i]. */
typedef struct heads_at {
    float *q, *k, *v;
    size_t hs;
    int ld_q, ld_kv;
    bool q_packed;
} heads_at;

/* qkv_base: a->qkv (the values) or s->d_qkv (their gradients); q, k, v: the head-major
 * buffers of the other layout. */
static inline heads_at heads_where(bool rows, float *qkv_base, float *q, float *k, float *v, int N,
                                   int D, int NH, bool cls_only) {
    if (!rows) return (heads_at){q, k, v, (size_t)N * (D / NH), D / NH, D / NH, false};
    if (cls_only) /* kv [N, 2D], then q_cls [B, D] */
        return (heads_at){
            qkv_base + (size_t)N * 2 * D, qkv_base, qkv_base + D, (size_t)(D / NH), D, 2 * D, true};
    return (heads_at){qkv_base, qkv_base + D, qkv_base + 2 * D, (size_t)(D / NH), 3 * D,
                      3 * D,    false};
}

static inline size_t q_row(const heads_at *at, const attn_encoder_rows *r, int i) {
    return at->q_packed ? (size_t)i : (size_t)r->rows[i];
}

/* qkv[N, 3D] = in.W_in^T; then per head and row: q = (qkv_q + b_q) * scale, k = qkv_k + b_k,
 * v = qkv_v + b_v, scale = 1 / root (root = sqrt(HS), or 1 unscaled), split or in place
 * (heads_in_rows). Backward: d_in [N, D] += d(in); d_W_in, d_b_in accumulate. */
void attn_encoder_qkv_forward(attn_encoder_acts *a, const float *in, const attn_encoder_weights *w,
                              int N, int D, int NH, float root);
void attn_encoder_qkv_backward(float *d_in, const attn_encoder_weights *d_w,
                               const attn_encoder_scratch *s, const float *in,
                               const attn_encoder_weights *w, int N, int D, int NH, float root,
                               bool rows);
/* The [CLS]-only layer's: k, v for all N rows, q for the B [CLS] rows only. */
void attn_encoder_qkv_cls_forward(attn_encoder_acts *a, const float *in,
                                  const attn_encoder_weights *w, const attn_encoder_rows *r, int D,
                                  int NH, float root);
void attn_encoder_qkv_cls_backward(float *d_in, const attn_encoder_weights *d_w,
                                   const attn_encoder_scratch *s, const attn_encoder_acts *a,
                                   const float *in, const attn_encoder_weights *w,
                                   const attn_encoder_rows *r, int D, int NH, float root);
/* pos rope: q and k (or d_q, d_k by the transpose) rotated where they are; else nothing. */
void attn_encoder_rope_qk(const heads_at *at, const attn_encoder_acts *a,
                          const attn_model_config *c, const attn_encoder_rows *r, bool cls_only,
                          bool transpose);

#endif /* ATTN_ENCODER_QKV_H */

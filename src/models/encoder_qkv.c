/* encoder_qkv.c -- where an encoder layer's q, k and v come from and where they stay: the
 * in-projection of the full layer and of the [CLS]-only layer (k, v for every row, q for the
 * [CLS] rows), its bias, the 1/sqrt(HS) scale and the head split (or none: heads_in_rows), their
 * backward, and the rotation of q and k (pos rope). The layer around them: encoder_layer.c;
 * the shared view of where the heads are: encoder_qkv.h. */
#include "encoder_qkv.h"

#include "attention_positions.h"

#include "attn_kernels.h"

#include <string.h>

/* ---- positions inside the attention: rotary q, k (rope) ------------------------------------
 * rope: each head's q and k row at position p (its row within the sentence, [CLS] = 0) is
 * rotated in halves (GPT-NeoX): (x1, x2) -> (x1 c - x2 s, x2 c + x1 s), c, s = cos, sin of
 * p / 10000^(2i/HS) (a->rope), after the bias and the 1/sqrt(HS) scale; backward applies the
 * transpose to d_q, d_k. (alibi, a score bias, is added with the attention: encoder_layer.c.) */

/* Which rows rope_rows rotates: every row of every sentence, the [CLS] rows of the packed
 * batch (row rows[i], position 0), or the [CLS] rows packed one per sentence (row i). */
typedef enum rope_rows_of { ROPE_ALL, ROPE_CLS, ROPE_CLS_PACKED } rope_rows_of;

/* Rows of x, head h of row n at x + h * hs + n * ld (hs = N*HS, ld = HS: head-major
 * [NH, N, HS]; hs = HS, ld = 3D: heads side by side in the in-projection's rows). */
static void rope_rows(float *x, size_t hs, size_t ld, const float *table,
                      const attn_encoder_rows *r, int NH, int HS, rope_rows_of which,
                      bool transpose) {
    for (int h = 0; h < NH; h++)
        for (int i = 0; i < r->B; i++) {
            const int S = which == ROPE_ALL ? seq_len(r, i) : 1;
            const size_t row0 = which == ROPE_CLS_PACKED ? (size_t)i : (size_t)r->rows[i];
            for (int p = 0; p < S; p++)
                attn_rope_row(x + h * hs + (row0 + p) * ld, table, p, HS, transpose);
        }
}

/* Rotates q and k (or d_q, d_k by the transpose) of the layer where they are (pos rope). */
void attn_encoder_rope_qk(const heads_at *at, const attn_encoder_acts *a,
                          const attn_model_config *c, const attn_encoder_rows *r, bool cls_only,
                          bool transpose) {
    const int NH = c->n_heads, HS = c->embed_dim / NH;
    if (c->pos != ATTN_POS_ROPE) return;
    rope_rows(at->q, at->hs, (size_t)at->ld_q, a->rope, r, NH, HS,
              !cls_only      ? ROPE_ALL
              : at->q_packed ? ROPE_CLS_PACKED
                             : ROPE_CLS,
              transpose);
    rope_rows(at->k, at->hs, (size_t)at->ld_kv, a->rope, r, NH, HS, ROPE_ALL, transpose);
}

/* ---- q, k, v projection and head split ------------------------------------------------- */

/* y[n] = (x + b) * scale, or x + b when scale is 0. */
static void add_bias(float *restrict y, const float *restrict x, const float *restrict b, int n,
                     float scale) {
    if (scale != 0.0f)
        for (int j = 0; j < n; j++) y[j] = (x[j] + b[j]) * scale;
    else
        for (int j = 0; j < n; j++) y[j] = x[j] + b[j];
}

/* The head split of an odd number of heads: PyTorch 1.13 leaves its fast path ("num_head is
 * odd") for F.multi_head_attention_forward, which computes qkv = in.W_in^T + b_in in one GEMM
 * (bias pre-filled) and then q = q / sqrt(HS) (a float division, not a multiplication by
 * 1/sqrt(HS)). */
static void qkv_split_python(attn_encoder_acts *a, int N, int D, int NH, float root) {
    const int HS = D / NH;
    for (int h = 0; h < NH; h++)
        for (int r = 0; r < N; r++) {
            const size_t o = ((size_t)h * N + r) * HS, c = (size_t)h * HS;
            const float *row = a->qkv + (size_t)r * 3 * D + c;
            for (int j = 0; j < HS; j++) a->q[o + j] = row[j] / root;
            memcpy(a->k + o, row + D, (size_t)HS * sizeof(float));
            memcpy(a->v + o, row + 2 * D, (size_t)HS * sizeof(float));
        }
}

/* In place on n rows of width `width`: the first D columns (q) (x + b) * scale, or x / root
 * when b is NULL (the bias already in: the odd-heads path); the others x + b (nothing when b is
 * NULL). The same operations as the head split's, on the same values. */
static void bias_in_place(float *x, int n, int width, int D, const float *b, float scale,
                          float root) {
    for (int r = 0; r < n; r++) {
        float *restrict row = x + (size_t)r * width;
        if (!b) {
            for (int j = 0; j < D; j++) row[j] = row[j] / root;
            continue;
        }
        for (int j = 0; j < D; j++) row[j] = (row[j] + b[j]) * scale;
        for (int j = D; j < width; j++) row[j] = row[j] + b[j];
    }
}

/* qkv[N, 3D] = in.W_in^T; then per head and row: q = (qkv_q + b_q) * scale, k = qkv_k + b_k,
 * v = qkv_v + b_v into the head-major q, k, v (PyTorch's fast path, an even number of heads;
 * odd: qkv_split_python), or in place (heads_in_rows). */
void attn_encoder_qkv_forward(attn_encoder_acts *a, const float *in, const attn_encoder_weights *w,
                              int N, int D, int NH, float root) {
    const int HS = D / NH;
    const float scale = 1.0f / root;
    const bool rows = heads_in_rows(a, D, NH);
    if (NH % 2 == 1) {
        attn_linear_forward(a->qkv, in, w->in_proj_weight, w->in_proj_bias, N, D, 3 * D,
                            ATTN_OP_QKV);
        lap(a, ATTN_ENCODER_QKV);
        if (rows)
            bias_in_place(a->qkv, N, 3 * D, D, NULL, 0.0f, root);
        else
            qkv_split_python(a, N, D, NH, root);
        lap(a, ATTN_ENCODER_SPLIT);
        return;
    }
    attn_linear_forward(a->qkv, in, w->in_proj_weight, NULL, N, D, 3 * D, ATTN_OP_QKV);
    lap(a, ATTN_ENCODER_QKV);
    if (rows) {
        bias_in_place(a->qkv, N, 3 * D, D, w->in_proj_bias, scale, root);
        lap(a, ATTN_ENCODER_SPLIT);
        return;
    }
    for (int h = 0; h < NH; h++)
        for (int r = 0; r < N; r++) {
            const size_t o = ((size_t)h * N + r) * HS, c = (size_t)h * HS;
            const float *row = a->qkv + (size_t)r * 3 * D + c;
            add_bias(a->q + o, row, w->in_proj_bias + c, HS, scale);
            add_bias(a->k + o, row + D, w->in_proj_bias + D + c, HS, 0.0f);
            add_bias(a->v + o, row + 2 * D, w->in_proj_bias + 2 * D + c, HS, 0.0f);
        }
    lap(a, ATTN_ENCODER_SPLIT);
}

/* Its backward: d_qkv row r = (d_q * scale, d_k, d_v) per head (rows: d_qkv holds them
 * already, d_q scaled in place); d_in += d_qkv.W_in; d_W_in, d_b_in accumulate. */
void attn_encoder_qkv_backward(float *d_in, const attn_encoder_weights *d_w,
                               const attn_encoder_scratch *s, const float *in,
                               const attn_encoder_weights *w, int N, int D, int NH, float root,
                               bool rows) {
    const int HS = D / NH;
    const float scale = 1.0f / root;
    const float *restrict d_q = s->d_q, *restrict d_k = s->d_k, *restrict d_v = s->d_v;
    if (rows)
        for (int r = 0; r < N; r++) {
            float *restrict row = s->d_qkv + (size_t)r * 3 * D;
            for (int j = 0; j < D; j++) row[j] = row[j] * scale;
        }
    else
        for (int h = 0; h < NH; h++)
            for (int r = 0; r < N; r++) {
                const size_t o = ((size_t)h * N + r) * HS;
                float *restrict row = s->d_qkv + (size_t)r * 3 * D + (size_t)h * HS;
                for (int j = 0; j < HS; j++) row[j] = d_q[o + j] * scale;
                for (int j = 0; j < HS; j++) row[D + j] = d_k[o + j];
                for (int j = 0; j < HS; j++) row[2 * D + j] = d_v[o + j];
            }
    attn_linear_backward(d_in, d_w->in_proj_weight, d_w->in_proj_bias, s->d_qkv, in,
                         w->in_proj_weight, N, D, 3 * D, ATTN_OP_QKV);
}

/* ---- the [CLS]-only layer (the model's last layer when B > 1) ---------------------------- */

/* k, v for all N rows (kv[N, 2D] = in.W_kv^T) and q for the B [CLS] rows only (q_cls[B, D] =
 * x_cls.W_q^T); biases and scale as in attn_encoder_qkv_forward. Two GEMMs over K = D, not one over
 * 3D: the rows they share round the same as the full layer's, and the model's training bits depend
 * on exactly this split. */
void attn_encoder_qkv_cls_forward(attn_encoder_acts *a, const float *in,
                                  const attn_encoder_weights *w, const attn_encoder_rows *r, int D,
                                  int NH, float root) {
    const int B = r->B, N = r->N, HS = D / NH;
    const float scale = 1.0f / root;
    float *kv = a->qkv, *q_cls = a->qkv + (size_t)N * 2 * D;
    const float *bias = w->in_proj_bias;
    for (int i = 0; i < B; i++)
        memcpy(a->x_cls + (size_t)i * D, in + (size_t)r->rows[i] * D, (size_t)D * sizeof(float));
    attn_linear_forward(kv, in, w->in_proj_weight + (size_t)D * D, NULL, N, D, 2 * D, ATTN_OP_QKV);
    attn_linear_forward(q_cls, a->x_cls, w->in_proj_weight, NULL, B, D, D, ATTN_OP_QKV);
    if (heads_in_rows(a, D, NH)) { /* k | v of each row, then the [CLS] queries, in place */
        for (int row = 0; row < N; row++) {
            float *restrict x = kv + (size_t)row * 2 * D;
            for (int j = 0; j < 2 * D; j++) x[j] = x[j] + bias[D + j];
        }
        bias_in_place(q_cls, B, D, D, bias, scale, root);
        return;
    }
    for (int h = 0; h < NH; h++) {
        const size_t c = (size_t)h * HS;
        for (int row = 0; row < N; row++) {
            const size_t o = ((size_t)h * N + row) * HS;
            add_bias(a->k + o, kv + (size_t)row * 2 * D + c, bias + D + c, HS, 0.0f);
            add_bias(a->v + o, kv + (size_t)row * 2 * D + D + c, bias + 2 * D + c, HS, 0.0f);
        }
        for (int i = 0; i < B; i++)
            add_bias(a->q + ((size_t)h * N + r->rows[i]) * HS, q_cls + (size_t)i * D + c, bias + c,
                     HS, scale);
    }
}

/* Its backward, from d_q (the [CLS] rows), d_k and d_v: d_in += d_kv.W_kv, then the [CLS]
 * rows += d_q_cls.W_q; d_W_in, d_b_in accumulate. */
void attn_encoder_qkv_cls_backward(float *d_in, const attn_encoder_weights *d_w,
                                   const attn_encoder_scratch *s, const attn_encoder_acts *a,
                                   const float *in, const attn_encoder_weights *w,
                                   const attn_encoder_rows *r, int D, int NH, float root) {
    const int B = r->B, N = r->N, HS = D / NH;
    const float scale = 1.0f / root;
    float *d_kv = s->d_qkv, *d_q_cls = s->d_qkv + (size_t)N * 2 * D;
    if (heads_in_rows(a, D, NH)) { /* d_kv and d_q_cls are there; d_q scaled in place */
        for (size_t j = 0; j < (size_t)B * D; j++) d_q_cls[j] = d_q_cls[j] * scale;
    } else {
        for (int h = 0; h < NH; h++) {
            for (int row = 0; row < N; row++) {
                const size_t o = ((size_t)h * N + row) * HS;
                float *dst = d_kv + (size_t)row * 2 * D + (size_t)h * HS;
                memcpy(dst, s->d_k + o, (size_t)HS * sizeof(float));
                memcpy(dst + D, s->d_v + o, (size_t)HS * sizeof(float));
            }
            for (int i = 0; i < B; i++) {
                const float *src = s->d_q + ((size_t)h * N + r->rows[i]) * HS;
                float *dst = d_q_cls + (size_t)i * D + (size_t)h * HS;
                for (int j = 0; j < HS; j++) dst[j] = src[j] * scale;
            }
        }
    }
    attn_linear_backward(d_in, d_w->in_proj_weight + (size_t)D * D, d_w->in_proj_bias + D, d_kv, in,
                         w->in_proj_weight + (size_t)D * D, N, D, 2 * D, ATTN_OP_QKV);
    memset(s->d_x_cls, 0, (size_t)B * D * sizeof(float));
    attn_linear_backward(s->d_x_cls, d_w->in_proj_weight, d_w->in_proj_bias, d_q_cls, a->x_cls,
                         w->in_proj_weight, B, D, D, ATTN_OP_QKV);
    for (int i = 0; i < B; i++) {
        float *d_row = d_in + (size_t)r->rows[i] * D;
        attn_add_forward(d_row, d_row, s->d_x_cls + (size_t)i * D, (size_t)D);
    }
}

/* encoder_layer.c -- one nn.TransformerEncoderLayer over packed sentences, forward/backward.
 *
 *   pre-norm:  r1 = x + SA(LN1(x));  out = r2 = r1 + FF(LN2(r1))
 *   post-norm: r1 = x + SA(x); n1 = LN1(r1); r2 = n1 + FF(n1); out = n2 = LN2(r2)
 *   SA(h) = out_proj(concat_h attention(q_h, k_h, v_h)), q, k, v = split(h.W_in^T) + b_in,
 *   FF(h) = linear2(act(linear1(h))), act = relu or erf-gelu.
 *
 * Numerics follow PyTorch's eval-mode layer (docs/numerics.md): the in_proj GEMM has no
 * bias; the bias is added and q scaled by 1/sqrt(HS) in the head split (ATen's
 * transform_bias_rescale_qkv); per-head Q.K^T and P.V GEMMs (attn_attention_forward).
 * Shapes and the packed layout: encoder_layer.h; q, k, v (projection, bias, scale, head split,
 * rope): encoder_qkv.c. Backward accumulates into d_x and d_w. */
#include "encoder_layer.h"
#include "encoder_qkv.h"

#include "attention_positions.h"

#include "attn_kernels.h"

#include <math.h>
#include <string.h>

size_t attn_encoder_probs_size(const attn_model_config *c, const attn_encoder_rows *r,
                               bool cls_only) {
    size_t n = 0;
    for (int i = 0; i < r->B; i++) {
        const size_t S = (size_t)seq_len(r, i);
        n += (size_t)c->n_heads * (cls_only ? 1 : S) * S;
    }
    return n;
}

/* sqrt(HS), the divisor of the scores (applied to q); 1 when the config turns the scaling off
 * (attn_unscaled: the scaling experiment), which leaves q exactly as it is. */
static float score_root(const attn_model_config *c) {
    return c->attn_unscaled ? 1.0f : sqrtf((float)(c->embed_dim / c->n_heads));
}

/* ---- attention of every sentence, and the output projection ----------------------------- */

/* pos alibi: scores + bias, bias = -slope_h * |i - j| (symmetric: an encoder), slope_h of Press
 * et al. 2022 (attn_alibi_bias); a key-padding mask adds -inf at the padding keys. */

/* bias [NH, n_q, S]: -inf at the padding keys, elsewhere 0 (or the bias already there). */
static void padding_bias(float *bias, bool keep, const unsigned char *padding, int NH, int n_q,
                         int S) {
    for (size_t row = 0; row < (size_t)NH * n_q; row++)
        for (int j = 0; j < S; j++)
            if (padding[j])
                bias[row * S + j] = -INFINITY;
            else if (!keep)
                bias[row * S + j] = 0.0f;
}

/* Whether the linears fuse with the residual add and the relu that follow them (a lap stage
 * each otherwise; bench/vit_layer.h times the stages of a ViT layer, whose in > 128 does not
 * fuse): attn_linear_residual_forward, attn_linear_relu_forward. The same bits either way. */
static bool fuse_linear(const attn_encoder_acts *a, int in) {
    return !a->lap && in <= ATTN_LINEAR_BIAS_AFTER_MAX_IN;
}

/* att[n_out, D] = concat_h P_h.v_h for each sentence (its [CLS] query only when cls_only,
 * landing in row i), then r1[n_out, D] = out_proj(att), plus x (full layer: the residual,
 * x [N, D]; NULL: the caller adds it). */
static void heads_forward(attn_encoder_acts *a, const float *x, const attn_encoder_weights *w,
                          const attn_model_config *c, const attn_encoder_rows *r, bool cls_only) {
    const int N = r->N, D = c->embed_dim, NH = c->n_heads, HS = D / NH;
    const bool rows = heads_in_rows(a, D, NH);
    const heads_at at = heads_where(rows, a->qkv, a->q, a->k, a->v, N, D, NH, cls_only);
    if (rows) { /* the scores and heads accumulate onto zeros: one memset each for the batch */
        memset(a->probs, 0, attn_encoder_probs_size(c, r, cls_only) * sizeof(float));
        memset(a->att, 0, (size_t)(cls_only ? r->B : N) * D * sizeof(float));
    }
    size_t p = 0; /* this sentence's probabilities */
    for (int i = 0; i < r->B; i++) {
        const int S = seq_len(r, i), n_q = cls_only ? 1 : S;
        const size_t o = (size_t)r->rows[i] * HS;
        const float *bias = NULL;
        if (c->pos == ATTN_POS_ALIBI) {
            attn_alibi_bias(a->score_bias, NH, 0, n_q, S);
            bias = a->score_bias;
        }
        if (a->key_padding) {
            padding_bias(a->score_bias, bias != NULL, a->key_padding + r->rows[i], NH, n_q, S);
            bias = a->score_bias;
        }
        float *att = a->att + (size_t)(cls_only ? i : r->rows[i]) * D;
        if (rows) { /* the heads land in att's columns directly */
            const size_t ok = (size_t)r->rows[i] * at.ld_kv;
            attn_attention_forward_rows(att, D, a->probs + p, at.q + q_row(&at, r, i) * at.ld_q,
                                        at.ld_q, at.k + ok, at.ld_kv, at.v + ok, at.ld_kv, bias, NH,
                                        n_q, S, HS, S);
            p += (size_t)NH * n_q * S;
            continue;
        }
        attn_attention_forward_bias(a->ctx + o, a->probs ? a->probs + p : NULL, a->q + o, a->k + o,
                                    a->v + o, bias, NH, n_q, S, HS, S, (size_t)N * HS,
                                    a->attn_work);
        p += (size_t)NH * n_q * S;
        for (int h = 0; h < NH; h++)
            for (int s = 0; s < n_q; s++)
                memcpy(att + (size_t)s * D + (size_t)h * HS,
                       a->ctx + ((size_t)h * N + r->rows[i] + s) * HS, (size_t)HS * sizeof(float));
    }
    lap(a, ATTN_ENCODER_ATTENTION);
    const int n_out = cls_only ? r->B : N;
    if (x && fuse_linear(a, D)) {
        attn_linear_residual_forward(a->r1, a->att, w->out_proj_weight, w->out_proj_bias, x, n_out,
                                     D, D, ATTN_OP_OUT_PROJ);
        return;
    }
    attn_linear_forward(a->r1, a->att, w->out_proj_weight, w->out_proj_bias, n_out, D, D,
                        ATTN_OP_OUT_PROJ);
    lap(a, ATTN_ENCODER_OUT_PROJ);
    if (x) {
        attn_add_forward(a->r1, x, a->r1, (size_t)n_out * D);
        lap(a, ATTN_ENCODER_ADD);
    }
}

/* Its backward from d_r1[n_out, D]: d_att, then per sentence d_q, d_k, d_v (zeroed here,
 * accumulated by the kernel; heads_in_rows: in d_qkv's layout of the forward's qkv); d_W_o,
 * d_b_o accumulate. */
static void heads_backward(const attn_encoder_weights *d_w, const attn_encoder_scratch *s,
                           const attn_encoder_acts *a, const attn_encoder_weights *w,
                           const attn_model_config *c, const attn_encoder_rows *r, bool cls_only) {
    const int N = r->N, D = c->embed_dim, NH = c->n_heads, HS = D / NH;
    const int n_out = cls_only ? r->B : N;
    const size_t ND = (size_t)N * D;
    const bool rows = heads_in_rows(a, D, NH);
    memset(s->d_att, 0, (size_t)n_out * D * sizeof(float));
    attn_linear_backward(s->d_att, d_w->out_proj_weight, d_w->out_proj_bias, s->d_r1, a->att,
                         w->out_proj_weight, n_out, D, D, ATTN_OP_OUT_PROJ);
    if (rows) {
        const heads_at at = heads_where(true, a->qkv, NULL, NULL, NULL, N, D, NH, cls_only);
        const heads_at dat = heads_where(true, s->d_qkv, NULL, NULL, NULL, N, D, NH, cls_only);
        memset(s->d_qkv, 0, (cls_only ? 2 * ND + (size_t)r->B * D : 3 * ND) * sizeof(float));
        size_t p = 0;
        for (int i = 0; i < r->B; i++) {
            const int S = seq_len(r, i), n_q = cls_only ? 1 : S;
            const size_t oq = q_row(&at, r, i) * at.ld_q, ok = (size_t)r->rows[i] * at.ld_kv;
            const float *d_att = s->d_att + (size_t)(cls_only ? i : r->rows[i]) * D;
            attn_attention_backward_rows(dat.q + oq, dat.k + ok, dat.v + ok, d_att, D, a->probs + p,
                                         at.q + oq, at.ld_q, at.k + ok, at.ld_kv, at.v + ok,
                                         at.ld_kv, NH, n_q, S, HS, S, s->attn_work);
            p += (size_t)NH * n_q * S;
        }
        return;
    }
    memset(s->d_q, 0, ND * sizeof(float));
    memset(s->d_k, 0, ND * sizeof(float));
    memset(s->d_v, 0, ND * sizeof(float));
    size_t p = 0;
    for (int i = 0; i < r->B; i++) {
        const int S = seq_len(r, i), n_q = cls_only ? 1 : S;
        const size_t o = (size_t)r->rows[i] * HS;
        const float *d_att = s->d_att + (size_t)(cls_only ? i : r->rows[i]) * D;
        for (int h = 0; h < NH; h++) /* d_ctx = the head's columns of d_att */
            for (int q = 0; q < n_q; q++)
                memcpy(s->d_ctx + ((size_t)h * N + r->rows[i] + q) * HS,
                       d_att + (size_t)q * D + (size_t)h * HS, (size_t)HS * sizeof(float));
        attn_attention_backward(s->d_q + o, s->d_k + o, s->d_v + o, s->d_ctx + o, a->probs + p,
                                a->q + o, a->k + o, a->v + o, NH, n_q, S, HS, S, (size_t)N * HS,
                                s->attn_work);
        p += (size_t)NH * n_q * S;
    }
}

/* ---- feed-forward and the sublayers after attention --------------------------------------- */

/* out[n, D] = res + act(in.W_1^T + b_1).W_2^T + b_2 (out aliases neither res nor in). */
static void ffn_forward(attn_encoder_acts *a, float *out, const float *in, const float *res,
                        const attn_encoder_weights *w, const attn_model_config *c, int n) {
    const int D = c->embed_dim, F = c->ffn_dim;
    if (c->activation == ATTN_ACT_RELU && fuse_linear(a, D)) {
        attn_linear_relu_forward(a->ff1, a->act, in, w->linear1_weight, w->linear1_bias, n, D, F,
                                 ATTN_OP_FFN_UP);
    } else {
        attn_linear_forward(a->ff1, in, w->linear1_weight, w->linear1_bias, n, D, F,
                            ATTN_OP_FFN_UP);
        lap(a, ATTN_ENCODER_FFN_UP);
        if (c->activation == ATTN_ACT_GELU)
            attn_gelu_forward(a->act, a->ff1, (size_t)n * F);
        else
            attn_relu_forward(a->act, a->ff1, (size_t)n * F);
        lap(a, ATTN_ENCODER_ACTIVATION);
    }
    if (fuse_linear(a, F)) {
        attn_linear_residual_forward(out, a->act, w->linear2_weight, w->linear2_bias, res, n, F, D,
                                     ATTN_OP_FFN_DOWN);
        return;
    }
    attn_linear_forward(out, a->act, w->linear2_weight, w->linear2_bias, n, F, D, ATTN_OP_FFN_DOWN);
    lap(a, ATTN_ENCODER_FFN_DOWN);
    attn_add_forward(out, res, out, (size_t)n * D);
    lap(a, ATTN_ENCODER_ADD);
}

/* d[n, F] = relu'(ff1) * d in place (attn_relu_backward_set), and d_b[F] += its column sums
 * (NULL: none) in the same pass: each d_b[j] takes the rows in row order, the additions of
 * attn_linear_backward's bias sum, without reading the n x F gradient a second time. */
static void relu_backward_bias(float *restrict d, float *restrict d_b, const float *restrict ff1,
                               int n, int F) {
    for (size_t i = 0; i < (size_t)n; i++) {
        float *restrict row = d + i * (size_t)F;
        attn_relu_backward_set(row, row, ff1 + i * (size_t)F, (size_t)F);
        if (d_b)
            for (int j = 0; j < F; j++) d_b[j] += row[j];
    }
}

/* d_in[n, D] += d(in) given d_out[n, D]; the weights' gradients accumulate. */
void attn_ffn_backward(float *d_in, attn_ffn_tensors d_w, const float *d_out, const float *in,
                       const float *ff1, const float *act, attn_ffn_tensors w, int n, int D, int F,
                       attn_activation activation, float *d_act, float *d_ff1) {
    const size_t nF = (size_t)n * F;
    memset(d_act, 0, nF * sizeof(float));
    attn_linear_backward(d_act, d_w.l2_w, d_w.l2_b, d_out, act, w.l2_w, n, F, D, ATTN_OP_FFN_DOWN);
    if (activation == ATTN_ACT_GELU) {
        memset(d_ff1, 0, nF * sizeof(float));
        attn_gelu_backward(d_ff1, d_act, ff1, nF);
    } else { /* written in place of d_act: the bits of zeroing d_ff1 and adding */
        relu_backward_bias(d_act, d_w.l1_b, ff1, n, F);
        attn_linear_backward(d_in, d_w.l1_w, NULL, d_act, in, w.l1_w, n, D, F, ATTN_OP_FFN_UP);
        return;
    }
    attn_linear_backward(d_in, d_w.l1_w, d_w.l1_b, d_ff1, in, w.l1_w, n, D, F, ATTN_OP_FFN_UP);
}

static attn_ffn_tensors ffn_tensors(const attn_encoder_weights *w) {
    return (attn_ffn_tensors){w->linear1_weight, w->linear1_bias, w->linear2_weight,
                              w->linear2_bias};
}

static void ffn_backward(float *d_in, const attn_encoder_weights *d_w, const float *d_out,
                         const attn_encoder_scratch *s, const attn_encoder_acts *a, const float *in,
                         const attn_encoder_weights *w, const attn_model_config *c, int n) {
    attn_ffn_backward(d_in, ffn_tensors(d_w), d_out, in, a->ff1, a->act, ffn_tensors(w), n,
                      c->embed_dim, c->ffn_dim, c->activation, s->d_act, s->d_ff1);
}

/* From r1[n, D] to the layer output: pre: out = r1 + FF(LN2(r1));
 * post: n1 = LN1(r1), out = LN2(n1 + FF(n1)). */
static void tail_forward(attn_encoder_acts *a, const attn_encoder_weights *w,
                         const attn_model_config *c, int n) {
    const int D = c->embed_dim;
    if (c->norm == ATTN_NORM_PRE) {
        attn_layernorm_forward(a->n2, a->mean2, a->rstd2, a->r1, w->norm2_weight, w->norm2_bias, n,
                               D);
        lap(a, ATTN_ENCODER_LAYERNORM);
        ffn_forward(a, a->r2, a->n2, a->r1, w, c, n);
    } else {
        attn_layernorm_forward(a->n1, a->mean1, a->rstd1, a->r1, w->norm1_weight, w->norm1_bias, n,
                               D);
        lap(a, ATTN_ENCODER_LAYERNORM);
        ffn_forward(a, a->r2, a->n1, a->n1, w, c, n);
        attn_layernorm_forward(a->n2, a->mean2, a->rstd2, a->r2, w->norm2_weight, w->norm2_bias, n,
                               D);
        lap(a, ATTN_ENCODER_LAYERNORM);
    }
}

/* Its backward: s->d_r1[n, D] = d r1 given d_out[n, D]. */
static void tail_backward(const attn_encoder_weights *d_w, const float *d_out,
                          const attn_encoder_scratch *s, const attn_encoder_acts *a,
                          const attn_encoder_weights *w, const attn_model_config *c, int n) {
    const int D = c->embed_dim;
    const size_t nD = (size_t)n * D;
    if (c->norm == ATTN_NORM_PRE) {
        /* out = r1 + FF(n2), n2 = LN2(r1): d_r1 = d_out + LN2'(FF'(d_out)) */
        memset(s->d_n2, 0, nD * sizeof(float));
        ffn_backward(s->d_n2, d_w, d_out, s, a, a->n2, w, c, n);
        memcpy(s->d_r1, d_out, nD * sizeof(float));
        attn_layernorm_backward(s->d_r1, d_w->norm2_weight, d_w->norm2_bias, s->d_n2, a->r1,
                                a->mean2, a->rstd2, w->norm2_weight, n, D);
    } else {
        /* out = LN2(r2), r2 = n1 + FF(n1), n1 = LN1(r1) */
        memset(s->d_r2, 0, nD * sizeof(float));
        attn_layernorm_backward(s->d_r2, d_w->norm2_weight, d_w->norm2_bias, d_out, a->r2, a->mean2,
                                a->rstd2, w->norm2_weight, n, D);
        memcpy(s->d_n1, s->d_r2, nD * sizeof(float));
        ffn_backward(s->d_n1, d_w, s->d_r2, s, a, a->n1, w, c, n);
        memset(s->d_r1, 0, nD * sizeof(float));
        attn_layernorm_backward(s->d_r1, d_w->norm1_weight, d_w->norm1_bias, s->d_n1, a->r1,
                                a->mean1, a->rstd1, w->norm1_weight, n, D);
    }
}

/* ---- the layer, full and [CLS]-only ------------------------------------------------------- */

void attn_encoder_forward(attn_encoder_acts *a, const float *x, const attn_encoder_weights *w,
                          const attn_model_config *c, const attn_encoder_rows *r) {
    const int N = r->N, D = c->embed_dim;
    const float *in = x; /* the attention input: LN1(x) (pre) or x (post) */
    if (c->norm == ATTN_NORM_PRE) {
        attn_layernorm_forward(a->n1, a->mean1, a->rstd1, x, w->norm1_weight, w->norm1_bias, N, D);
        in = a->n1;
        lap(a, ATTN_ENCODER_LAYERNORM);
    }
    attn_encoder_qkv_forward(a, in, w, N, D, c->n_heads, score_root(c));
    const heads_at at = heads_where(heads_in_rows(a, D, c->n_heads), a->qkv, a->q, a->k, a->v, N, D,
                                    c->n_heads, false);
    attn_encoder_rope_qk(&at, a, c, r, false, false);
    heads_forward(a, x, w, c, r, false);
    tail_forward(a, w, c, N);
}

void attn_encoder_backward(float *d_x, const attn_encoder_weights *d_w, const float *d_out,
                           const attn_encoder_acts *a, const float *x,
                           const attn_encoder_weights *w, const attn_model_config *c,
                           const attn_encoder_rows *r, const attn_encoder_scratch *s) {
    const int N = r->N, D = c->embed_dim;
    const size_t ND = (size_t)N * D;
    const bool rows = heads_in_rows(a, D, c->n_heads);
    tail_backward(d_w, d_out, s, a, w, c, N);
    heads_backward(d_w, s, a, w, c, r, false);
    const heads_at dat =
        heads_where(rows, s->d_qkv, s->d_q, s->d_k, s->d_v, N, D, c->n_heads, false);
    attn_encoder_rope_qk(&dat, a, c, r, false, true);
    /* r1 = x + SA(in): d_x = d_r1 + in'(SA'(d_r1)), its first write the add onto zeros */
    attn_add_onto_zero(d_x, s->d_r1, ND);
    if (c->norm == ATTN_NORM_PRE) {
        memset(s->d_n1, 0, ND * sizeof(float));
        attn_encoder_qkv_backward(s->d_n1, d_w, s, a->n1, w, N, D, c->n_heads, score_root(c), rows);
        attn_layernorm_backward(d_x, d_w->norm1_weight, d_w->norm1_bias, s->d_n1, x, a->mean1,
                                a->rstd1, w->norm1_weight, N, D);
    } else {
        attn_encoder_qkv_backward(d_x, d_w, s, x, w, N, D, c->n_heads, score_root(c), rows);
    }
}

void attn_encoder_cls_forward(attn_encoder_acts *a, const float *x, const attn_encoder_weights *w,
                              const attn_model_config *c, const attn_encoder_rows *r) {
    const int N = r->N, D = c->embed_dim;
    const float *in = x;
    if (c->norm == ATTN_NORM_PRE) {
        attn_layernorm_forward(a->n1, a->mean1, a->rstd1, x, w->norm1_weight, w->norm1_bias, N, D);
        in = a->n1;
    }
    attn_encoder_qkv_cls_forward(a, in, w, r, D, c->n_heads, score_root(c));
    const heads_at at = heads_where(heads_in_rows(a, D, c->n_heads), a->qkv, a->q, a->k, a->v, N, D,
                                    c->n_heads, true);
    attn_encoder_rope_qk(&at, a, c, r, true, false);
    heads_forward(a, NULL, w, c, r, true);
    for (int i = 0; i < r->B; i++) /* r1 = x + SA at the [CLS] rows */
        attn_add_forward(a->r1 + (size_t)i * D, x + (size_t)r->rows[i] * D, a->r1 + (size_t)i * D,
                         (size_t)D);
    tail_forward(a, w, c, r->B);
}

void attn_encoder_cls_backward(float *d_x, const attn_encoder_weights *d_w, const float *d_out,
                               const attn_encoder_acts *a, const float *x,
                               const attn_encoder_weights *w, const attn_model_config *c,
                               const attn_encoder_rows *r, const attn_encoder_scratch *s) {
    const int N = r->N, D = c->embed_dim;
    tail_backward(d_w, d_out, s, a, w, c, r->B);
    heads_backward(d_w, s, a, w, c, r, true);
    const heads_at dat = heads_where(heads_in_rows(a, D, c->n_heads), s->d_qkv, s->d_q, s->d_k,
                                     s->d_v, N, D, c->n_heads, true);
    attn_encoder_rope_qk(&dat, a, c, r, true, true);
    /* r1[i] = x[rows[i]] + SA(in)[i]: the residual reaches the [CLS] rows only */
    for (int i = 0; i < r->B; i++) {
        float *d_row = d_x + (size_t)r->rows[i] * D;
        attn_add_forward(d_row, d_row, s->d_r1 + (size_t)i * D, (size_t)D);
    }
    if (c->norm == ATTN_NORM_PRE) {
        memset(s->d_n1, 0, (size_t)N * D * sizeof(float));
        attn_encoder_qkv_cls_backward(s->d_n1, d_w, s, a, a->n1, w, r, D, c->n_heads,
                                      score_root(c));
        attn_layernorm_backward(d_x, d_w->norm1_weight, d_w->norm1_bias, s->d_n1, x, a->mean1,
                                a->rstd1, w->norm1_weight, N, D);
    } else {
        attn_encoder_qkv_cls_backward(d_x, d_w, s, a, x, w, r, D, c->n_heads, score_root(c));
    }
}

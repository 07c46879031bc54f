/* decoder_layer.c -- one nn.TransformerDecoderLayer over packed pairs, forward/backward, and
 * its cached one-row step (decoder_layer.h).
 *
 * Numerics follow what PyTorch 1.13 runs for this layer (it has no fast path; both attentions
 * go through F.multi_head_attention_forward, docs/decoder.md): self-attention's in-projection
 * is one [3D, D] Linear (bias pre-filled, the chunked q | k | v), cross-attention's two: q from
 * the layer input with rows 0..D-1 of the packed weight, k | v from the memory with rows D..3D-1;
 * then q / sqrt(HS) as a true float division; attention (attention_masked.c); heads
 * concatenated; out_proj. Backward accumulates into d_x, d_mem and d_w. */
#include "attention_positions.h"
#include "decoder_layer.h"
#include "model_internal.h"

#include "attn_kernels.h"

#include <math.h>
#include <string.h>

static int rows_of(const int *rows, int i) {
    return rows[i + 1] - rows[i];
}

void attn_decoder_layout(attn_decoder_acts *a, attn_decoder_scratch *s,
                         const attn_seq2seq_config *c, float *base, size_t *u,
                         const attn_decoder_rows *r) {
    const size_t D = (size_t)c->d_model, F = (size_t)c->ffn_dim, NH = (size_t)c->n_heads;
    const size_t N = (size_t)r->N, Ns = (size_t)r->Ns;
    size_t p_sa = 0, p_ca = 0, work = 0, bias = 0;
    for (int i = 0; i < r->B; i++) {
        const size_t T = (size_t)rows_of(r->trows, i), S = (size_t)rows_of(r->srows, i);
        const size_t keys = r->step_keys > 0 ? (size_t)r->step_keys : T;
        p_sa += NH * T * keys;
        if (NH * T * keys > bias) bias = NH * T * keys;
        p_ca += NH * T * S;
        const size_t wk = 2 * T * (keys > S ? keys : S);
        if (wk > work) work = wk;
    }
    for (int b = 0; b < 3; b++) {
        a->ln[b] = attn_arena_carve(base, u, N * D);
        a->mean[b] = attn_arena_carve(base, u, N);
        a->rstd[b] = attn_arena_carve(base, u, N);
        a->sum[b] = attn_arena_carve(base, u, N * D);
    }
    a->qkv = attn_arena_carve(base, u, 3 * N * D);
    ATTN_ARENA_CARVE_EACH(base, u, N * D, &a->q, &a->k, &a->v);
    a->sa_probs = attn_arena_carve(base, u, p_sa);
    ATTN_ARENA_CARVE_EACH(base, u, N * D, &a->sa_ctx, &a->sa_att, &a->cq_lin, &a->cq);
    a->ckv = attn_arena_carve(base, u, 2 * Ns * D);
    ATTN_ARENA_CARVE_EACH(base, u, Ns * D, &a->ck, &a->cv);
    a->ca_probs = attn_arena_carve(base, u, p_ca);
    ATTN_ARENA_CARVE_EACH(base, u, N * D, &a->ca_ctx, &a->ca_att);
    ATTN_ARENA_CARVE_EACH(base, u, N * F, &a->ff1, &a->act);
    a->out = c->norm == ATTN_NORM_PRE ? a->sum[2] : a->ln[2];
    a->sa_bias = c->pos == ATTN_POS_ALIBI ? attn_arena_carve(base, u, bias) : NULL;
    if (!s) return;
    ATTN_ARENA_CARVE_EACH(base, u, N * D, &s->d_res, &s->d_sum, &s->d_in, &s->d_att, &s->d_ctx,
                          &s->d_q, &s->d_k, &s->d_v);
    s->d_qkv = attn_arena_carve(base, u, 3 * N * D);
    ATTN_ARENA_CARVE_EACH(base, u, Ns * D, &s->d_ck, &s->d_cv);
    s->d_ckv = attn_arena_carve(base, u, 2 * Ns * D);
    ATTN_ARENA_CARVE_EACH(base, u, N * F, &s->d_ff1, &s->d_act);
    s->attn_work = attn_arena_carve(base, u, work);
}

/* ---- heads: split and concatenate ------------------------------------------------------------ */

/* Rows [0, n) of src (row width `width`, head h at column col + h*HS) into head-major dst at
 * rows row0.. of a [NH, rows, HS] tensor (head stride hs), each value divided by root when
 * root != 0 (PyTorch's q / sqrt(HS)). */
static void split_heads(float *dst, size_t hs, int row0, const float *src, int n, int width,
                        int col, int NH, int HS, float root) {
    for (int h = 0; h < NH; h++)
        for (int r = 0; r < n; r++) {
            const float *in = src + (size_t)r * width + col + (size_t)h * HS;
            float *out = dst + h * hs + ((size_t)row0 + r) * HS;
            if (root != 0.0f)
                for (int j = 0; j < HS; j++) out[j] = in[j] / root;
            else
                memcpy(out, in, (size_t)HS * sizeof(float));
        }
}

/* The inverse gather: head-major src rows row0.. -> dst [n, width] at columns col + h*HS,
 * multiplied by scale when scale != 0 (the division's derivative), else copied. ADDS when add. */
static void merge_heads(float *dst, int width, int col, const float *src, size_t hs, int row0,
                        int n, int NH, int HS, float scale) {
    for (int h = 0; h < NH; h++)
        for (int r = 0; r < n; r++) {
            const float *in = src + h * hs + ((size_t)row0 + r) * HS;
            float *out = dst + (size_t)r * width + col + (size_t)h * HS;
            if (scale != 0.0f)
                for (int j = 0; j < HS; j++) out[j] = in[j] * scale;
            else
                memcpy(out, in, (size_t)HS * sizeof(float));
        }
}

static float head_root(const attn_seq2seq_config *c) {
    return sqrtf((float)(c->d_model / c->n_heads));
}

/* Rows row0 .. row0+n-1 of every head of x (head stride hs, rows ld floats apart) rotated at
 * positions p0 .. p0+n-1, or by the transpose (backward); nothing unless pos rope. */
static void rope_heads_ld(float *x, size_t hs, size_t ld, int row0, int n, int p0,
                          const attn_decoder_acts *a, const attn_seq2seq_config *c,
                          bool transpose) {
    const int NH = c->n_heads, HS = c->d_model / NH;
    if (c->pos != ATTN_POS_ROPE) return;
    for (int h = 0; h < NH; h++)
        for (int t = 0; t < n; t++)
            attn_rope_row(x + h * hs + ((size_t)row0 + t) * ld, a->rope, p0 + t, HS, transpose);
}

/* The same on a head-major [NH, rows, HS] x. */
static void rope_heads(float *x, size_t hs, int row0, int n, int p0, const attn_decoder_acts *a,
                       const attn_seq2seq_config *c, bool transpose) {
    rope_heads_ld(x, hs, (size_t)(c->d_model / c->n_heads), row0, n, p0, a, c, transpose);
}

/* Whether a full pass keeps q, k, v in the in-projections' outputs (q divided in place, heads
 * side by side in each row) and writes the heads straight into the concatenated [N, D]: heads
 * wider than one float (a one-float head's P.v is a column, which OpenBLAS writes contiguously).
 * Else split into head-major buffers and merged back. The same products with the same shapes
 * either way, so the same bits. */
static bool heads_in_rows(const attn_seq2seq_config *c) {
    return c->d_model / c->n_heads > 1;
}

/* Floats of one full pass's self- (T x T per pair and head) or cross-attention (T x S)
 * probabilities. */
static size_t probs_floats(const attn_decoder_rows *r, int NH, bool cross) {
    size_t n = 0;
    for (int i = 0; i < r->B; i++) {
        const size_t T = (size_t)rows_of(r->trows, i);
        n += (size_t)NH * T * (cross ? (size_t)rows_of(r->srows, i) : T);
    }
    return n;
}

/* In place: the first D columns of n rows of width `width` divided by root (or multiplied by
 * scale when root is 0): the head split's and merge's operations on the same values. */
static void scale_q_columns(float *x, int n, int width, int D, float root, float scale) {
    for (int r = 0; r < n; r++) {
        float *restrict row = x + (size_t)r * width;
        if (root != 0.0f)
            for (int j = 0; j < D; j++) row[j] = row[j] / root;
        else
            for (int j = 0; j < D; j++) row[j] = row[j] * scale;
    }
}

/* The self-attention's score bias for n_q queries from position q_pos over keys 0..n_k-1 (pos
 * alibi: filled into a->sa_bias), else NULL. */
static const float *sa_bias(const attn_decoder_acts *a, const attn_seq2seq_config *c, int q_pos,
                            int n_q, int n_k) {
    if (c->pos != ATTN_POS_ALIBI) return NULL;
    attn_alibi_bias(a->sa_bias, c->n_heads, q_pos, n_q, n_k);
    return a->sa_bias;
}

/* ---- the three blocks -------------------------------------------------------------------- */

/* sum[N, D] = res + SA(in) (causal): qkv = in.W^T + b; heads; attention per pair; out_proj
 * with the residual added (attn_linear_residual_forward: the bits of the linear, then the add). */
static void sa_forward(attn_decoder_acts *a, float *sum, const float *in, const float *res,
                       const attn_decoder_weights *w, const attn_seq2seq_config *c,
                       const attn_decoder_rows *r) {
    const int N = r->N, D = c->d_model, NH = c->n_heads, HS = D / NH;
    const size_t hs = (size_t)N * HS;
    attn_linear_forward(a->qkv, in, w->sa_in_w, w->sa_in_b, N, D, 3 * D, ATTN_OP_QKV);
    const bool rows = heads_in_rows(c);
    if (rows) {
        scale_q_columns(a->qkv, N, 3 * D, D, head_root(c), 0.0f);
    } else {
        split_heads(a->q, hs, 0, a->qkv, N, 3 * D, 0, NH, HS, head_root(c));
        split_heads(a->k, hs, 0, a->qkv, N, 3 * D, D, NH, HS, 0.0f);
        split_heads(a->v, hs, 0, a->qkv, N, 3 * D, 2 * D, NH, HS, 0.0f);
    }
    if (rows) { /* the scores and heads accumulate onto zeros: one memset each for the batch */
        memset(a->sa_probs, 0, probs_floats(r, NH, false) * sizeof(float));
        memset(a->sa_att, 0, (size_t)N * D * sizeof(float));
    }
    size_t p = 0;
    for (int i = 0; i < r->B; i++) {
        const int T = rows_of(r->trows, i);
        const size_t o = (size_t)r->trows[i] * HS;
        /* unmasked: every target row sees every other (the causal-mask experiment's control) */
        const int q_pos = r->unmasked ? -1 : 0;
        if (rows) {
            float *qkv = a->qkv + (size_t)r->trows[i] * 3 * D;
            rope_heads_ld(qkv, (size_t)HS, (size_t)3 * D, 0, T, 0, a, c, false);
            rope_heads_ld(qkv + D, (size_t)HS, (size_t)3 * D, 0, T, 0, a, c, false);
            attn_masked_attention_forward_rows(
                a->sa_att + (size_t)r->trows[i] * D, D, a->sa_probs + p, qkv, 3 * D, qkv + D, 3 * D,
                qkv + 2 * D, 3 * D, sa_bias(a, c, 0, T, T), NH, T, T, HS, q_pos);
        } else {
            rope_heads(a->q, hs, r->trows[i], T, 0, a, c, false);
            rope_heads(a->k, hs, r->trows[i], T, 0, a, c, false);
            attn_masked_attention_forward(a->sa_ctx + o, a->sa_probs + p, a->q + o, a->k + o,
                                          a->v + o, sa_bias(a, c, 0, T, T), NH, T, T, HS, q_pos, hs,
                                          hs);
        }
        p += (size_t)NH * T * T;
    }
    if (!rows) merge_heads(a->sa_att, D, 0, a->sa_ctx, hs, 0, N, NH, HS, 0.0f);
    attn_linear_residual_forward(sum, a->sa_att, w->sa_out_w, w->sa_out_b, res, N, D, D,
                                 ATTN_OP_OUT_PROJ);
}

/* ck, cv [NH, Ns, HS] from mem: ckv = mem.W_kv^T + b_kv (one Linear, then chunked). */
static void memory_kv(float *ckv, float *ck, float *cv, const float *mem, int Ns,
                      const attn_decoder_weights *w, const attn_seq2seq_config *c) {
    const int D = c->d_model, NH = c->n_heads, HS = D / NH;
    attn_linear_forward(ckv, mem, w->ca_in_w + (size_t)D * D, w->ca_in_b + D, Ns, D, 2 * D,
                        ATTN_OP_QKV);
    split_heads(ck, (size_t)Ns * HS, 0, ckv, Ns, 2 * D, 0, NH, HS, 0.0f);
    split_heads(cv, (size_t)Ns * HS, 0, ckv, Ns, 2 * D, D, NH, HS, 0.0f);
}

/* sum[N, D] = res + CA(in, mem). */
static void ca_forward(attn_decoder_acts *a, float *sum, const float *in, const float *res,
                       const float *mem, const attn_decoder_weights *w,
                       const attn_seq2seq_config *c, const attn_decoder_rows *r) {
    const int N = r->N, D = c->d_model, NH = c->n_heads, HS = D / NH;
    const size_t hs = (size_t)N * HS, hss = (size_t)r->Ns * HS;
    const bool rows = heads_in_rows(c);
    attn_linear_forward(a->cq_lin, in, w->ca_in_w, w->ca_in_b, N, D, D, ATTN_OP_QKV);
    if (rows) {
        memset(a->ca_probs, 0, probs_floats(r, NH, true) * sizeof(float));
        memset(a->ca_att, 0, (size_t)N * D * sizeof(float));
        scale_q_columns(a->cq_lin, N, D, D, head_root(c), 0.0f);
        attn_linear_forward(a->ckv, mem, w->ca_in_w + (size_t)D * D, w->ca_in_b + D, r->Ns, D,
                            2 * D, ATTN_OP_QKV);
    } else {
        split_heads(a->cq, hs, 0, a->cq_lin, N, D, 0, NH, HS, head_root(c));
        memory_kv(a->ckv, a->ck, a->cv, mem, r->Ns, w, c);
    }
    size_t p = 0;
    for (int i = 0; i < r->B; i++) {
        const int T = rows_of(r->trows, i), S = rows_of(r->srows, i);
        const size_t oq = (size_t)r->trows[i] * HS, ok = (size_t)r->srows[i] * HS;
        if (rows) {
            const float *ckv = a->ckv + (size_t)r->srows[i] * 2 * D;
            attn_masked_attention_forward_rows(a->ca_att + (size_t)r->trows[i] * D, D,
                                               a->ca_probs + p, a->cq_lin + (size_t)r->trows[i] * D,
                                               D, ckv, 2 * D, ckv + D, 2 * D, NULL, NH, T, S, HS,
                                               -1);
        } else {
            attn_cross_attention_forward(a->ca_ctx + oq, a->ca_probs + p, a->cq + oq, a->ck + ok,
                                         a->cv + ok, NH, T, S, HS, hs, hss);
        }
        p += (size_t)NH * T * S;
    }
    if (!rows) merge_heads(a->ca_att, D, 0, a->ca_ctx, hs, 0, N, NH, HS, 0.0f);
    attn_linear_residual_forward(sum, a->ca_att, w->ca_out_w, w->ca_out_b, res, N, D, D,
                                 ATTN_OP_OUT_PROJ);
}

/* sum[n, D] = res + linear2(act(linear1(in))). */
static void ff_forward(attn_decoder_acts *a, float *sum, const float *in, const float *res,
                       const attn_decoder_weights *w, const attn_seq2seq_config *c, int n) {
    const int D = c->d_model, F = c->ffn_dim;
    if (c->activation == ATTN_ACT_GELU) {
        attn_linear_forward(a->ff1, in, w->l1_w, w->l1_b, n, D, F, ATTN_OP_FFN_UP);
        attn_gelu_forward(a->act, a->ff1, (size_t)n * F);
    } else {
        attn_linear_relu_forward(a->ff1, a->act, in, w->l1_w, w->l1_b, n, D, F, ATTN_OP_FFN_UP);
    }
    attn_linear_residual_forward(sum, a->act, w->l2_w, w->l2_b, res, n, F, D, ATTN_OP_FFN_DOWN);
}

/* Block b's residual input: x, then the previous block's output. */
static const float *block_res(const attn_decoder_acts *a, const float *x, bool pre, int b) {
    return b == 0 ? x : pre ? a->sum[b - 1] : a->ln[b - 1];
}

/* Block b of the layer: in = LN_b(res) (pre) or res; sum_b = res + F_b(in); post:
 * ln_b = LN_b(sum_b). */
static const float *block_in(attn_decoder_acts *a, const float *res, const attn_decoder_weights *w,
                             const attn_seq2seq_config *c, int b, int n) {
    if (c->norm != ATTN_NORM_PRE) return res;
    attn_layernorm_forward(a->ln[b], a->mean[b], a->rstd[b], res, w->norm_w[b], w->norm_b[b], n,
                           c->d_model);
    return a->ln[b];
}

/* sum_b already holds res + F_b(in) (the blocks add the residual); post: ln_b = LN_b(sum_b). */
static void block_out(attn_decoder_acts *a, const attn_decoder_weights *w,
                      const attn_seq2seq_config *c, int b, int n) {
    if (c->norm != ATTN_NORM_PRE)
        attn_layernorm_forward(a->ln[b], a->mean[b], a->rstd[b], a->sum[b], w->norm_w[b],
                               w->norm_b[b], n, c->d_model);
}

void attn_decoder_forward(attn_decoder_acts *a, const float *x, const float *mem,
                          const attn_decoder_weights *w, const attn_seq2seq_config *c,
                          const attn_decoder_rows *r) {
    const bool pre = c->norm == ATTN_NORM_PRE;
    const int N = r->N;
    for (int b = 0; b < 3; b++) {
        const float *res = block_res(a, x, pre, b);
        const float *in = block_in(a, res, w, c, b, N);
        if (b == 0)
            sa_forward(a, a->sum[0], in, res, w, c, r);
        else if (b == 1)
            ca_forward(a, a->sum[1], in, res, mem, w, c, r);
        else
            ff_forward(a, a->sum[2], in, res, w, c, N);
        block_out(a, w, c, b, N);
    }
}

/* ---- backward ----------------------------------------------------------------------------- */

/* d_in [N, D] += d SA(in) given d_sum. */
static void sa_backward(float *d_in, const attn_decoder_weights *d_w, const float *d_sum,
                        const attn_decoder_acts *a, const float *in, const attn_decoder_weights *w,
                        const attn_seq2seq_config *c, const attn_decoder_rows *r,
                        const attn_decoder_scratch *s) {
    const int N = r->N, D = c->d_model, NH = c->n_heads, HS = D / NH;
    const size_t hs = (size_t)N * HS, ND = (size_t)N * D;
    const float inv_root = 1.0f / head_root(c);
    memset(s->d_att, 0, ND * sizeof(float));
    attn_linear_backward(s->d_att, d_w->sa_out_w, d_w->sa_out_b, d_sum, a->sa_att, w->sa_out_w, N,
                         D, D, ATTN_OP_OUT_PROJ);
    if (heads_in_rows(c)) { /* d_q, d_k, d_v straight into d_qkv's columns */
        memset(s->d_qkv, 0, 3 * ND * sizeof(float));
        size_t p = 0;
        for (int i = 0; i < r->B; i++) {
            const int T = rows_of(r->trows, i);
            const size_t o = (size_t)r->trows[i] * 3 * D;
            const float *qkv = a->qkv + o;
            float *d_qkv = s->d_qkv + o;
            attn_masked_attention_backward_rows(d_qkv, d_qkv + D, d_qkv + 2 * D,
                                                s->d_att + (size_t)r->trows[i] * D, D,
                                                a->sa_probs + p, qkv, 3 * D, qkv + D, 3 * D,
                                                qkv + 2 * D, 3 * D, NH, T, T, HS, s->attn_work);
            rope_heads_ld(d_qkv, (size_t)HS, (size_t)3 * D, 0, T, 0, a, c, true);
            rope_heads_ld(d_qkv + D, (size_t)HS, (size_t)3 * D, 0, T, 0, a, c, true);
            p += (size_t)NH * T * T;
        }
        scale_q_columns(s->d_qkv, N, 3 * D, D, 0.0f, inv_root);
    } else {
        split_heads(s->d_ctx, hs, 0, s->d_att, N, D, 0, NH, HS, 0.0f);
        memset(s->d_q, 0, ND * sizeof(float));
        memset(s->d_k, 0, ND * sizeof(float));
        memset(s->d_v, 0, ND * sizeof(float));
        size_t p = 0;
        for (int i = 0; i < r->B; i++) {
            const int T = rows_of(r->trows, i);
            const size_t o = (size_t)r->trows[i] * HS;
            attn_causal_attention_backward(s->d_q + o, s->d_k + o, s->d_v + o, s->d_ctx + o,
                                           a->sa_probs + p, a->q + o, a->k + o, a->v + o, NH, T, T,
                                           HS, hs, hs, s->attn_work);
            rope_heads(s->d_q, hs, r->trows[i], T, 0, a, c, true);
            rope_heads(s->d_k, hs, r->trows[i], T, 0, a, c, true);
            p += (size_t)NH * T * T;
        }
        merge_heads(s->d_qkv, 3 * D, 0, s->d_q, hs, 0, N, NH, HS, inv_root);
        merge_heads(s->d_qkv, 3 * D, D, s->d_k, hs, 0, N, NH, HS, 0.0f);
        merge_heads(s->d_qkv, 3 * D, 2 * D, s->d_v, hs, 0, N, NH, HS, 0.0f);
    }
    attn_linear_backward(d_in, d_w->sa_in_w, d_w->sa_in_b, s->d_qkv, in, w->sa_in_w, N, D, 3 * D,
                         ATTN_OP_QKV);
}

/* d_in [N, D] += d CA(in, mem) / d in, d_mem [Ns, D] += d CA / d mem, given d_sum. */
static void ca_backward(float *d_in, float *d_mem, const attn_decoder_weights *d_w,
                        const float *d_sum, const attn_decoder_acts *a, const float *in,
                        const float *mem, const attn_decoder_weights *w,
                        const attn_seq2seq_config *c, const attn_decoder_rows *r,
                        const attn_decoder_scratch *s) {
    const int N = r->N, Ns = r->Ns, D = c->d_model, NH = c->n_heads, HS = D / NH;
    const size_t hs = (size_t)N * HS, hss = (size_t)Ns * HS, ND = (size_t)N * D;
    memset(s->d_att, 0, ND * sizeof(float));
    attn_linear_backward(s->d_att, d_w->ca_out_w, d_w->ca_out_b, d_sum, a->ca_att, w->ca_out_w, N,
                         D, D, ATTN_OP_OUT_PROJ);
    if (heads_in_rows(c)) { /* d_q into d_qkv [N, D], d_k | d_v into d_ckv [Ns, 2D] */
        memset(s->d_qkv, 0, ND * sizeof(float));
        memset(s->d_ckv, 0, 2 * (size_t)Ns * D * sizeof(float));
        size_t p = 0;
        for (int i = 0; i < r->B; i++) {
            const int T = rows_of(r->trows, i), S = rows_of(r->srows, i);
            const size_t oq = (size_t)r->trows[i] * D, ok = (size_t)r->srows[i] * 2 * D;
            attn_masked_attention_backward_rows(s->d_qkv + oq, s->d_ckv + ok, s->d_ckv + ok + D,
                                                s->d_att + oq, D, a->ca_probs + p, a->cq_lin + oq,
                                                D, a->ckv + ok, 2 * D, a->ckv + ok + D, 2 * D, NH,
                                                T, S, HS, s->attn_work);
            p += (size_t)NH * T * S;
        }
        scale_q_columns(s->d_qkv, N, D, D, 0.0f, 1.0f / head_root(c));
    } else {
        split_heads(s->d_ctx, hs, 0, s->d_att, N, D, 0, NH, HS, 0.0f);
        memset(s->d_q, 0, ND * sizeof(float));
        memset(s->d_ck, 0, (size_t)Ns * D * sizeof(float));
        memset(s->d_cv, 0, (size_t)Ns * D * sizeof(float));
        size_t p = 0;
        for (int i = 0; i < r->B; i++) {
            const int T = rows_of(r->trows, i), S = rows_of(r->srows, i);
            const size_t oq = (size_t)r->trows[i] * HS, ok = (size_t)r->srows[i] * HS;
            attn_cross_attention_backward(s->d_q + oq, s->d_ck + ok, s->d_cv + ok, s->d_ctx + oq,
                                          a->ca_probs + p, a->cq + oq, a->ck + ok, a->cv + ok, NH,
                                          T, S, HS, hs, hss, s->attn_work);
            p += (size_t)NH * T * S;
        }
        /* q = (in.W_q^T + b_q) / root */
        merge_heads(s->d_qkv, D, 0, s->d_q, hs, 0, N, NH, HS, 1.0f / head_root(c));
        /* k | v = mem.W_kv^T + b_kv */
        merge_heads(s->d_ckv, 2 * D, 0, s->d_ck, hss, 0, Ns, NH, HS, 0.0f);
        merge_heads(s->d_ckv, 2 * D, D, s->d_cv, hss, 0, Ns, NH, HS, 0.0f);
    }
    attn_linear_backward(d_in, d_w->ca_in_w, d_w->ca_in_b, s->d_qkv, in, w->ca_in_w, N, D, D,
                         ATTN_OP_QKV);
    attn_linear_backward(d_mem, d_w->ca_in_w + (size_t)D * D, d_w->ca_in_b + D, s->d_ckv, mem,
                         w->ca_in_w + (size_t)D * D, Ns, D, 2 * D, ATTN_OP_QKV);
}

static void ff_backward(float *d_in, const attn_decoder_weights *d_w, const float *d_sum,
                        const attn_decoder_acts *a, const float *in, const attn_decoder_weights *w,
                        const attn_seq2seq_config *c, int n, const attn_decoder_scratch *s) {
    const int D = c->d_model, F = c->ffn_dim;
    const size_t nF = (size_t)n * F;
    memset(s->d_act, 0, nF * sizeof(float));
    attn_linear_backward(s->d_act, d_w->l2_w, d_w->l2_b, d_sum, a->act, w->l2_w, n, F, D,
                         ATTN_OP_FFN_DOWN);
    float *d_ff1 = s->d_ff1;
    if (c->activation == ATTN_ACT_GELU) {
        memset(d_ff1, 0, nF * sizeof(float));
        attn_gelu_backward(d_ff1, s->d_act, a->ff1, nF);
    } else { /* written in place of d_act: the bits of zeroing d_ff1 and adding */
        d_ff1 = s->d_act;
        attn_relu_backward_set(d_ff1, s->d_act, a->ff1, nF);
    }
    attn_linear_backward(d_in, d_w->l1_w, d_w->l1_b, d_ff1, in, w->l1_w, n, D, F, ATTN_OP_FFN_UP);
}

void attn_decoder_backward(float *d_x, float *d_mem, const attn_decoder_weights *d_w,
                           const float *d_out, const attn_decoder_acts *a, const float *x,
                           const float *mem, const attn_decoder_weights *w,
                           const attn_seq2seq_config *c, const attn_decoder_rows *r,
                           const attn_decoder_scratch *s) {
    const bool pre = c->norm == ATTN_NORM_PRE;
    const int N = r->N, D = c->d_model;
    const size_t ND = (size_t)N * D;
    memcpy(s->d_res, d_out, ND * sizeof(float)); /* d loss / d res_{b+1} */
    for (int b = 2; b >= 0; b--) {
        const float *res = block_res(a, x, pre, b);
        const float *in = pre ? a->ln[b] : res;
        /* d_sum = d loss / d sum_b: pre-norm, sum_b is res_{b+1} itself, so d_sum is d_res (read
         * only until d_res_b accumulates into it below); post, LN_b' of it */
        const float *d_sum = s->d_res;
        if (!pre) {
            memset(s->d_sum, 0, ND * sizeof(float));
            attn_layernorm_backward(s->d_sum, d_w->norm_w[b], d_w->norm_b[b], s->d_res, a->sum[b],
                                    a->mean[b], a->rstd[b], w->norm_w[b], N, D);
            d_sum = s->d_sum;
        }
        /* sum_b = res + F_b(in): d_in = F_b'(d_sum) */
        memset(s->d_in, 0, ND * sizeof(float));
        if (b == 0)
            sa_backward(s->d_in, d_w, d_sum, a, in, w, c, r, s);
        else if (b == 1)
            ca_backward(s->d_in, d_mem, d_w, d_sum, a, in, mem, w, c, r, s);
        else
            ff_backward(s->d_in, d_w, d_sum, a, in, w, c, N, s);
        /* d_res_b = d_sum + (pre: LN_b'(d_in); post: d_in) */
        if (!pre) memcpy(s->d_res, s->d_sum, ND * sizeof(float));
        if (pre)
            attn_layernorm_backward(s->d_res, d_w->norm_w[b], d_w->norm_b[b], s->d_in, res,
                                    a->mean[b], a->rstd[b], w->norm_w[b], N, D);
        else
            attn_add_forward(s->d_res, s->d_res, s->d_in, ND);
    }
    attn_add_forward(d_x, d_x, s->d_res, ND);
}

/* ---- the cached step ------------------------------------------------------------------------ */

void attn_decoder_cache_memory(attn_decoder_cache *cache, float *ckv_scratch, const float *mem,
                               const attn_decoder_weights *w, const attn_seq2seq_config *c) {
    memory_kv(ckv_scratch, cache->ck, cache->cv, mem, cache->S, w, c);
}

void attn_decoder_step(attn_decoder_acts *a, const float *x, const attn_decoder_weights *w,
                       const attn_seq2seq_config *c, attn_decoder_cache *cache, int pos) {
    const bool pre = c->norm == ATTN_NORM_PRE;
    const int D = c->d_model, NH = c->n_heads, HS = D / NH;
    const size_t hc = (size_t)cache->cap * HS, hsrc = (size_t)cache->S * HS;
    for (int b = 0; b < 3; b++) {
        const float *res = block_res(a, x, pre, b);
        const float *in = block_in(a, res, w, c, b, 1);
        if (b == 0) { /* the new row's q, k, v; k, v appended at row pos of the cache */
            attn_linear_forward(a->qkv, in, w->sa_in_w, w->sa_in_b, 1, D, 3 * D, ATTN_OP_QKV);
            split_heads(a->q, HS, 0, a->qkv, 1, 3 * D, 0, NH, HS, head_root(c));
            split_heads(cache->k, hc, pos, a->qkv, 1, 3 * D, D, NH, HS, 0.0f);
            split_heads(cache->v, hc, pos, a->qkv, 1, 3 * D, 2 * D, NH, HS, 0.0f);
            rope_heads(a->q, HS, 0, 1, pos, a, c, false); /* the key cached already rotated */
            rope_heads(cache->k, hc, pos, 1, pos, a, c, false);
            attn_masked_attention_forward(a->sa_ctx, a->sa_probs, a->q, cache->k, cache->v,
                                          sa_bias(a, c, pos, 1, pos + 1), NH, 1, pos + 1, HS, pos,
                                          HS, hc);
            merge_heads(a->sa_att, D, 0, a->sa_ctx, HS, 0, 1, NH, HS, 0.0f);
            attn_linear_residual_forward(a->sum[0], a->sa_att, w->sa_out_w, w->sa_out_b, res, 1, D,
                                         D, ATTN_OP_OUT_PROJ);
        } else if (b == 1) {
            attn_linear_forward(a->cq_lin, in, w->ca_in_w, w->ca_in_b, 1, D, D, ATTN_OP_QKV);
            split_heads(a->cq, HS, 0, a->cq_lin, 1, D, 0, NH, HS, head_root(c));
            attn_cross_attention_forward(a->ca_ctx, a->ca_probs, a->cq, cache->ck, cache->cv, NH, 1,
                                         cache->S, HS, HS, hsrc);
            merge_heads(a->ca_att, D, 0, a->ca_ctx, HS, 0, 1, NH, HS, 0.0f);
            attn_linear_residual_forward(a->sum[1], a->ca_att, w->ca_out_w, w->ca_out_b, res, 1, D,
                                         D, ATTN_OP_OUT_PROJ);
        } else {
            ff_forward(a, a->sum[2], in, res, w, c, 1);
        }
        block_out(a, w, c, b, 1);
    }
}

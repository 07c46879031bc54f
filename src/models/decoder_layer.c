/* decoder_layer.c -- one nn.TransformerDecoderLayer over packed pairs, forward, and its cached
 * one-row step (decoder_layer.h; the backward: decoder_layer_backward.c; the head layout both
 * share: decoder_heads.h).
 *
 * Numerics follow what PyTorch 1.13 runs for this layer (it has no fast path; both attentions
 * go through F.multi_head_attention_forward, docs/decoder.md): self-attention's in-projection
 * is one [3D, D] Linear (bias pre-filled, the chunked q | k | v), cross-attention's two: q from
 * the layer input with rows 0..D-1 of the packed weight, k | v from the memory with rows D..3D-1;
 * then q / sqrt(HS) as a true float division; attention (attention_masked.c); heads
 * concatenated; out_proj. */
#include "attention_positions.h"
#include "decoder_heads.h"
#include "decoder_layer.h"
#include "model_internal.h"

#include "attn_kernels.h"

#include <math.h>
#include <string.h>

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

/* ---- the forward's own helpers (the shared ones: decoder_heads.h) ------------------------- */

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

/* ---- the cached step ------------------------------------------------------------------------ */

void attn_decoder_cache_memory(attn_decoder_cache *cache, float *ckv_scratch, const float *mem,
                               const attn_decoder_weights *w, const attn_seq2seq_config *c) {
    memory_kv(ckv_scratch, cache->ck, cache->cv, mem, cache->S, w, c);
}

void attn_decoder_step_rows(attn_decoder_acts *a, const float *x, const attn_decoder_weights *w,
                            const attn_seq2seq_config *c, attn_decoder_cache *const *caches, int n,
                            int pos) {
    const bool pre = c->norm == ATTN_NORM_PRE;
    const int D = c->d_model, NH = c->n_heads, HS = D / NH;
    for (int b = 0; b < 3; b++) {
        const float *res = block_res(a, x, pre, b);
        const float *in = block_in(a, res, w, c, b, n);
        if (b == 0) { /* the new rows' q, k, v; row r's k, v appended at row pos of its cache */
            attn_linear_forward(a->qkv, in, w->sa_in_w, w->sa_in_b, n, D, 3 * D, ATTN_OP_QKV);
            for (int r = 0; r < n; r++) {
                attn_decoder_cache *cache = caches[r];
                const size_t hc = (size_t)cache->cap * HS, o = (size_t)r * D;
                const float *qkv = a->qkv + (size_t)r * 3 * D;
                split_heads(a->q + o, HS, 0, qkv, 1, 3 * D, 0, NH, HS, head_root(c));
                split_heads(cache->k, hc, pos, qkv, 1, 3 * D, D, NH, HS, 0.0f);
                split_heads(cache->v, hc, pos, qkv, 1, 3 * D, 2 * D, NH, HS, 0.0f);
                rope_heads(a->q + o, HS, 0, 1, pos, a, c, false); /* the key cached rotated */
                rope_heads(cache->k, hc, pos, 1, pos, a, c, false);
                attn_masked_attention_forward(a->sa_ctx + o, a->sa_probs, a->q + o, cache->k,
                                              cache->v, sa_bias(a, c, pos, 1, pos + 1), NH, 1,
                                              pos + 1, HS, pos, HS, hc);
                merge_heads(a->sa_att + o, D, 0, a->sa_ctx + o, HS, 0, 1, NH, HS, 0.0f);
            }
            attn_linear_residual_forward(a->sum[0], a->sa_att, w->sa_out_w, w->sa_out_b, res, n, D,
                                         D, ATTN_OP_OUT_PROJ);
        } else if (b == 1) {
            attn_linear_forward(a->cq_lin, in, w->ca_in_w, w->ca_in_b, n, D, D, ATTN_OP_QKV);
            for (int r = 0; r < n; r++) {
                const attn_decoder_cache *cache = caches[r];
                const size_t o = (size_t)r * D;
                split_heads(a->cq + o, HS, 0, a->cq_lin + o, 1, D, 0, NH, HS, head_root(c));
                attn_cross_attention_forward(a->ca_ctx + o, a->ca_probs, a->cq + o, cache->ck,
                                             cache->cv, NH, 1, cache->S, HS, HS,
                                             (size_t)cache->S * HS);
                merge_heads(a->ca_att + o, D, 0, a->ca_ctx + o, HS, 0, 1, NH, HS, 0.0f);
            }
            attn_linear_residual_forward(a->sum[1], a->ca_att, w->ca_out_w, w->ca_out_b, res, n, D,
                                         D, ATTN_OP_OUT_PROJ);
        } else {
            ff_forward(a, a->sum[2], in, res, w, c, n);
        }
        block_out(a, w, c, b, n);
    }
}

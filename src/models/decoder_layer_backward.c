/* decoder_layer_backward.c -- the backward of one nn.TransformerDecoderLayer over packed pairs
 * (decoder_layer.h; the forward and the cached step: decoder_layer.c): the three blocks in
 * reverse, each attention's gradient in the layout its forward used (heads_in_rows). Backward
 * writes d_x and accumulates into d_mem and d_w. */
#include "decoder_heads.h"
#include "encoder_layer.h"

#include "attn_kernels.h"

#include <string.h>

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
    const attn_ffn_tensors d_ff = {d_w->l1_w, d_w->l1_b, d_w->l2_w, d_w->l2_b};
    const attn_ffn_tensors ff = {w->l1_w, w->l1_b, w->l2_w, w->l2_b};
    attn_ffn_backward(d_in, d_ff, d_sum, in, a->ff1, a->act, ff, n, c->d_model, c->ffn_dim,
                      c->activation, s->d_act, s->d_ff1);
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
    attn_add_onto_zero(d_x, s->d_res, ND); /* d_x's only write */
}

/* seq2seq_rnn_backward.c -- seq2seq-gru and seq2seq-attn backward (BPTT through the decoder
 * steps, the attention and both encoder directions); seq2seq_rnn.c has the forward. Gradients
 * are checked against finite differences (tests/models/test_seq2seq_rnn.c) and autograd
 * (tools/seq2seq_grad_check.py --models rnn). */
#include "seq2seq_rnn.h"

#include "attn_kernels.h"

#include <string.h>

/* Slot k's attention at step t backward from d_ctx[He]: d_enc, d_keys, d_q, d_energy. */
static void attend_backward(rnn_impl *v, int t, int k, const float *d_ctx) {
    const rnn_dims *d = &v->d;
    const int S = v->S, len = v->slen[k], A = d->A, He = d->He;
    const size_t tk = (size_t)t * v->B + k;
    const float *e = v->e + tk * S * A, *alpha = v->alpha + tk * S;
    const float *enc = v->enc + (size_t)k * S * He;
    float *d_enc = v->d_enc + (size_t)k * S * He, *d_keys = v->d_keys + (size_t)k * S * A;
    float *d_q = v->d_q + (size_t)k * A, *ds = v->d_alpha + S; /* ds: d score [len] */
    /* ctx = alpha . enc: d_alpha_j = d_ctx . enc_j, d_enc_j += alpha_j d_ctx (rank one: loops,
     * not GEMMs packing one row) */
    for (int j = 0; j < len; j++) {
        float acc = 0.0f;
        const float *ej = enc + (size_t)j * He;
        float *dj = d_enc + (size_t)j * He;
        for (int c = 0; c < He; c++) {
            acc += d_ctx[c] * ej[c];
            dj[c] += alpha[j] * d_ctx[c];
        }
        v->d_alpha[j] = acc;
    }
    /* alpha = softmax(score) */
    memset(ds, 0, (size_t)len * sizeof(float));
    attn_softmax_backward(ds, v->d_alpha, alpha, 1, len, len);
    /* score_j = energy . e_j: d_e_j = d_score_j energy, d_energy += sum_j d_score_j e_j */
    for (int j = 0; j < len; j++)
        for (int a = 0; a < A; a++) {
            v->d_pre[(size_t)j * A + a] = ds[j] * v->w.v_w[a];
            v->g.v_w[a] += ds[j] * e[(size_t)j * A + a];
        }
    /* e = tanh(keys + q) */
    for (int j = 0; j < len; j++)
        for (int a = 0; a < A; a++) {
            const size_t i = (size_t)j * A + a;
            const float g = v->d_pre[i] * (1.0f - e[i] * e[i]);
            d_keys[i] += g;
            d_q[a] += g;
        }
}

/* The decoder backward from d_logits; leaves d/d s_0 in v->d_s, d/d enc in v->d_enc. */
static void decoder_backward(rnn_impl *v, const attn_s2s_batch *b, const float *d_logits) {
    const rnn_dims *d = &v->d;
    const int B = v->B, T = v->T, H = d->H, G = 3 * H, Vt = d->Vt;
    memset(v->d_s, 0, (size_t)B * H * sizeof(float));
    for (int t = T - 1; t >= 0; t--) {
        for (int k = 0; k < B; k++) {
            float *row = v->d_lg + (size_t)k * Vt;
            if (t < v->tlen[k]) {
                size_t r = 0;
                for (int i = 0; i < v->order[k]; i++) r += (size_t)b->tgt_lengths[i];
                memcpy(row, d_logits + (r + t) * Vt, (size_t)Vt * sizeof(float));
            } else {
                memset(row, 0, (size_t)Vt * sizeof(float));
            }
        }
        const float *sp = v->s + (size_t)t * B * H, *sn = sp + (size_t)B * H;
        float *d_xw = v->d_dxw + (size_t)t * B * G, *d_hw = v->d_dhw + (size_t)t * B * G;
        if (d->attn) {
            memset(v->d_o, 0, (size_t)B * d->O * sizeof(float));
            attn_linear_backward(v->d_o, v->g.head_w, v->g.head_b, v->d_lg,
                                 v->o + (size_t)t * B * d->O, v->w.head_w, B, d->O, Vt,
                                 ATTN_OP_HEAD);
            for (int k = 0; k < B; k++)
                attn_add_forward(v->d_s + (size_t)k * H, v->d_s + (size_t)k * H,
                                 v->d_o + (size_t)k * d->O, (size_t)H);
        } else {
            attn_linear_backward(v->d_s, v->g.head_w, v->g.head_b, v->d_lg, sn, v->w.head_w, B, H,
                                 Vt, ATTN_OP_HEAD);
        }
        memset(v->d_sp, 0, (size_t)B * H * sizeof(float));
        attn_s2s_rnn_cell_backward(v->d_s, d_xw, d_hw, v->d_sp, sp,
                                   v->dsaved + (size_t)t * B * 4 * H, B, H);
        attn_matmul_nn(v->d_sp, d_hw, v->w.dec.w_hh, B, H, G, 1.0f, ATTN_OP_RECURRENT,
                       ATTN_PASS_BACKWARD);
        attn_matmul_nn(v->d_dx, d_xw, v->w.dec.w_ih, B, d->X, G, 0.0f, ATTN_OP_INPUT,
                       ATTN_PASS_BACKWARD);
        for (int k = 0; k < B; k++)
            attn_embedding_backward(v->g.tgt_emb, v->d_dx + (size_t)k * d->X,
                                    &v->toks[(size_t)t * B + k], 1, d->E);
        if (d->attn) {
            memset(v->d_q, 0, (size_t)B * d->A * sizeof(float));
            for (int k = 0; k < B; k++) {
                float *d_ctx = v->d_dx + (size_t)k * d->X + d->E; /* GRU input's context part */
                attn_add_forward(d_ctx, d_ctx, v->d_o + (size_t)k * d->O + H, (size_t)d->He);
                attend_backward(v, t, k, d_ctx);
            }
            attn_linear_backward(v->d_sp, v->g.q_w, NULL, v->d_q, sp, v->w.q_w, B, H, d->A,
                                 ATTN_OP_QKV);
        }
        float *swap = v->d_s;
        v->d_s = v->d_sp;
        v->d_sp = swap;
    }
    /* the GRUCell's weights over all steps at once */
    attn_linear_backward(NULL, v->g.dec.w_ih, v->g.dec.b_ih, v->d_dxw, v->dx, v->w.dec.w_ih, T * B,
                         d->X, G, ATTN_OP_INPUT);
    attn_linear_backward(NULL, v->g.dec.w_hh, v->g.dec.b_hh, v->d_dhw, v->s, v->w.dec.w_hh, T * B,
                         H, G, ATTN_OP_RECURRENT);
}

/* Direction k of the encoder backward (BPTT), from d_enc and (forward direction) d_s0. */
static void encoder_dir_backward(rnn_impl *v, int k, const float *d_s0) {
    const rnn_dims *d = &v->d;
    const int B = v->B, S = v->S, H = d->H, G = 3 * H;
    const gru_tensors *w = &v->w.enc[k], *g = &v->g.enc[k];
    memset(v->d_exw[k], 0, (size_t)S * B * G * sizeof(float));
    memset(v->d_ehw[k], 0, (size_t)S * B * G * sizeof(float));
    memset(v->d_h, 0, (size_t)B * H * sizeof(float));
    for (int i = 0; i < S; i++) {
        const int t = k == 0 ? S - 1 - i : i, n = v->rows[t];
        for (int s = 0; s < n; s++) {
            float *dh = v->d_h + (size_t)s * H;
            if (k == 0 && v->slen[s] - 1 == t) { /* enters: s_0 read this state */
                memset(dh, 0, (size_t)H * sizeof(float));
                attn_add_forward(dh, dh, d_s0 + (size_t)s * H, (size_t)H);
            }
            attn_add_forward(dh, dh, v->d_enc + ((size_t)s * S + t) * d->He + (size_t)k * H,
                             (size_t)H);
        }
        memset(v->d_hp, 0, (size_t)n * H * sizeof(float));
        float *d_xw = v->d_exw[k] + (size_t)t * B * G, *d_hw = v->d_ehw[k] + (size_t)t * B * G;
        attn_s2s_rnn_cell_backward(v->d_h, d_xw, d_hw, v->d_hp, attn_s2s_rnn_eh_prev(v, k, t),
                                   v->esaved[k] + (size_t)t * B * 4 * H, n, H);
        if (i < S - 1) /* the first state read is 0, not a parameter */
            attn_matmul_nn(v->d_hp, d_hw, w->w_hh, n, H, G, 1.0f, ATTN_OP_RECURRENT,
                           ATTN_PASS_BACKWARD);
        float *swap = v->d_h;
        v->d_h = v->d_hp;
        v->d_hp = swap;
    }
    const float *h_prev = v->eh[k] + (size_t)(k == 0 ? 0 : B) * H; /* [S, B, H] */
    attn_linear_backward(NULL, g->w_hh, g->b_hh, v->d_ehw[k], h_prev, w->w_hh, S * B, H, G,
                         ATTN_OP_RECURRENT);
    attn_linear_backward(v->d_xs, g->w_ih, g->b_ih, v->d_exw[k], v->xs, w->w_ih, S * B, d->E, G,
                         ATTN_OP_INPUT);
}

void attn_s2s_rnn_backward(attn_seq2seq *m, const attn_s2s_batch *b, const float *d_logits) {
    rnn_impl *v = m->impl;
    const rnn_dims *d = &v->d;
    const int B = v->B, S = v->S;
    if (B == 0) return;
    memset(v->d_enc, 0, (size_t)B * S * d->He * sizeof(float));
    if (d->attn) memset(v->d_keys, 0, (size_t)B * S * d->A * sizeof(float));
    decoder_backward(v, b, d_logits);
    if (d->attn)
        attn_linear_backward(v->d_enc, v->g.k_w, v->g.k_b, v->d_keys, v->enc, v->w.k_w, B * S,
                             d->He, d->A, ATTN_OP_QKV);
    memset(v->d_xs, 0, (size_t)S * B * d->E * sizeof(float));
    for (int k = d->ND - 1; k >= 0; k--) encoder_dir_backward(v, k, v->d_s);
    for (int t = 0; t < S; t++)
        for (int k = 0; k < B; k++)
            if (t < v->slen[k])
                attn_embedding_backward(v->g.src_emb, v->d_xs + ((size_t)t * B + k) * d->E,
                                        &b->src_ids[(size_t)v->order[k] * b->S + t], 1, d->E);
    if (m->d_src_x && B == 1) memcpy(m->d_src_x, v->d_xs, (size_t)S * d->E * sizeof(float));
}

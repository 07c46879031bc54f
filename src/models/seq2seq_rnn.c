/* seq2seq_rnn.c -- the two recurrent translation models of write-up §1 (docs/decoder.md):
 *
 *   seq2seq-gru (Cho et al. 2014; everything squeezed into one vector):
 *     h_1..h_S = GRU(src_embedding[src]);  s_0 = h_S
 *     s_t = GRUCell(tgt_embedding[y_t], s_{t-1});  logits_t = head(s_t)
 *   seq2seq-attn (Bahdanau et al. 2015; additive attention over every encoder state):
 *     h_j = [fwd_j ; bwd_j] (bidirectional GRU; fwd_j alone if not);  s_0 = fwd_S
 *     score_j = energy . tanh(query s_{t-1} + key h_j),  alpha = softmax(score),  c_t = sum alpha_j
 * h_j s_t = GRUCell([tgt_embedding[y_t] ; c_t], s_{t-1});  logits_t = head([s_t ; c_t])
 *
 * The GRU numerics are nn.GRU's (gru.c's cell, attn_gru_cell): the encoder's input projections
 * for all steps in one GEMM (the reverse direction's too, then stepped from the end), one hh
 * GEMM per step. The decoder is nn.GRUCell stepped one token at a time, the head applied to each
 * step's row: a teacher-forced forward computes exactly the steps of generation, so the cached
 * decoder (one step per token) and the recomputing one give the same bits.
 *
 * Batches: pairs sit in slots sorted by source length, longest first (pack_padded_sequence's
 * order); encoder step t runs on the rows[t] slots whose source is longer than t. The decoder
 * runs every slot for the longest decoder input; steps past a pair's input are computed from
 * [PAD] and never reach the logits or the gradients. B = 1 is PyTorch's batch-1 eval forward
 * of tools/seq2seq_models.py bit for bit. */
#include "seq2seq_rnn.h"

#include "attn_kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static rnn_dims dims_of(const attn_seq2seq_config *c) {
    rnn_dims d;
    d.attn = c->arch == ATTN_S2S_ATTN;
    d.E = c->d_model;
    d.H = c->hidden_size;
    d.ND = d.attn && c->bidirectional ? 2 : 1;
    d.He = d.ND * d.H;
    d.A = d.H;
    d.X = d.E + (d.attn ? d.He : 0);
    d.O = d.H + (d.attn ? d.He : 0);
    d.Vt = c->tgt_vocab;
    return d;
}

static void gru_specs(attn_param_spec *s, size_t *n, const char *prefix, const char *suffix, int I,
                      int H) {
    const float k = 1.0f / sqrtf((float)H); /* nn.GRU / nn.GRUCell: U(-1/sqrt(H), 1/sqrt(H)) */
    const char *const part[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
    char name[ATTN_NAME_MAX];
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "%s.%s%s", prefix, part[i], suffix);
        if (i < 2)
            attn_spec_set(&s[(*n)++], name, 2, (int[]){3 * H, i == 0 ? I : H}, ATTN_INIT_UNIFORM,
                          k);
        else
            attn_spec_set(&s[(*n)++], name, 1, (int[]){3 * H}, ATTN_INIT_UNIFORM, k);
    }
}

/* state_dict order of the reference modules (tools/seq2seq_models.py). */
static size_t rnn_specs(const attn_seq2seq_config *c, attn_param_spec *s) {
    const rnn_dims d = dims_of(c);
    size_t n = 0;
    attn_spec_set(&s[n++], "src_embedding.weight", 2, (int[]){c->src_vocab, d.E}, ATTN_INIT_NORMAL,
                  1.0f);
    gru_specs(s, &n, "encoder", "_l0", d.E, d.H);
    if (d.ND == 2) gru_specs(s, &n, "encoder", "_l0_reverse", d.E, d.H);
    attn_spec_set(&s[n++], "tgt_embedding.weight", 2, (int[]){d.Vt, d.E}, ATTN_INIT_NORMAL, 1.0f);
    if (d.attn) { /* nn.Linear: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) */
        attn_spec_set(&s[n++], "attention.query.weight", 2, (int[]){d.A, d.H}, ATTN_INIT_UNIFORM,
                      1.0f / sqrtf((float)d.H));
        attn_spec_set(&s[n++], "attention.key.weight", 2, (int[]){d.A, d.He}, ATTN_INIT_UNIFORM,
                      1.0f / sqrtf((float)d.He));
        attn_spec_set(&s[n++], "attention.key.bias", 1, (int[]){d.A}, ATTN_INIT_UNIFORM,
                      1.0f / sqrtf((float)d.He));
        attn_spec_set(&s[n++], "attention.energy.weight", 2, (int[]){1, d.A}, ATTN_INIT_UNIFORM,
                      1.0f / sqrtf((float)d.A));
    }
    gru_specs(s, &n, "decoder", "", d.X, d.H);
    const float ko = 1.0f / sqrtf((float)d.O);
    attn_spec_set(&s[n++], "head.weight", 2, (int[]){d.Vt, d.O}, ATTN_INIT_UNIFORM, ko);
    attn_spec_set(&s[n++], "head.bias", 1, (int[]){d.Vt}, ATTN_INIT_UNIFORM, ko);
    return n;
}

static void bind_gru(attn_seq2seq *m, float *base, gru_tensors *g, const char *prefix,
                     const char *suffix) {
    char name[ATTN_NAME_MAX];
    float **f[4] = {&g->w_ih, &g->w_hh, &g->b_ih, &g->b_hh};
    const char *const part[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "%s.%s%s", prefix, part[i], suffix);
        *f[i] = attn_seq2seq_view(m, base, name);
    }
}

static void bind(attn_seq2seq *m, float *base, rnn_tensors *t) {
    memset(t, 0, sizeof *t);
    t->src_emb = attn_seq2seq_view(m, base, "src_embedding.weight");
    t->tgt_emb = attn_seq2seq_view(m, base, "tgt_embedding.weight");
    bind_gru(m, base, &t->enc[0], "encoder", "_l0");
    bind_gru(m, base, &t->enc[1], "encoder", "_l0_reverse");
    bind_gru(m, base, &t->dec, "decoder", "");
    t->q_w = attn_seq2seq_view(m, base, "attention.query.weight");
    t->k_w = attn_seq2seq_view(m, base, "attention.key.weight");
    t->k_b = attn_seq2seq_view(m, base, "attention.key.bias");
    t->v_w = attn_seq2seq_view(m, base, "attention.energy.weight");
    t->head_w = attn_seq2seq_view(m, base, "head.weight");
    t->head_b = attn_seq2seq_view(m, base, "head.bias");
}

static size_t layout(rnn_impl *v, float *base) {
    const rnn_dims *d = &v->d;
    const size_t B = (size_t)v->B, S = (size_t)v->S, T = (size_t)v->T, H = (size_t)d->H;
    const size_t G = 3 * H, SB = S * B, TB = T * B;
    size_t u = 0;
    v->xs = attn_arena_carve(base, &u, SB * d->E);
    for (int k = 0; k < d->ND; k++) {
        v->exw[k] = attn_arena_carve(base, &u, SB * G);
        v->esaved[k] = attn_arena_carve(base, &u, SB * 4 * H);
        v->eh[k] = attn_arena_carve(base, &u, (SB + B) * H);
        v->d_exw[k] = attn_arena_carve(base, &u, SB * G);
        v->d_ehw[k] = attn_arena_carve(base, &u, SB * G);
    }
    v->hw = attn_arena_carve(base, &u, B * G);
    v->enc = attn_arena_carve(base, &u, SB * d->He);
    v->keys = attn_arena_carve(base, &u, d->attn ? SB * d->A : 0);
    v->s = attn_arena_carve(base, &u, (TB + B) * H);
    v->dx = attn_arena_carve(base, &u, TB * d->X);
    v->dxw = attn_arena_carve(base, &u, TB * G);
    v->dsaved = attn_arena_carve(base, &u, TB * 4 * H);
    v->q = attn_arena_carve(base, &u, d->attn ? TB * d->A : 0);
    v->e = attn_arena_carve(base, &u, d->attn ? TB * S * d->A : 0);
    v->alpha = attn_arena_carve(base, &u, d->attn ? TB * S : 0);
    v->o = attn_arena_carve(base, &u, d->attn ? TB * d->O : 0);
    v->lg = attn_arena_carve(base, &u, B * d->Vt);
    v->d_lg = attn_arena_carve(base, &u, B * d->Vt);
    v->d_o = attn_arena_carve(base, &u, B * d->O);
    v->d_dx = attn_arena_carve(base, &u, B * d->X);
    v->d_q = attn_arena_carve(base, &u, B * d->A);
    v->d_s = attn_arena_carve(base, &u, B * H);
    v->d_sp = attn_arena_carve(base, &u, B * H);
    v->d_dxw = attn_arena_carve(base, &u, TB * G);
    v->d_dhw = attn_arena_carve(base, &u, TB * G);
    v->d_alpha = attn_arena_carve(base, &u, 2 * S);
    v->d_pre = attn_arena_carve(base, &u, S * d->A);
    v->d_enc = attn_arena_carve(base, &u, SB * d->He);
    v->d_keys = attn_arena_carve(base, &u, d->attn ? SB * d->A : 0);
    v->d_h = attn_arena_carve(base, &u, B * H);
    v->d_hp = attn_arena_carve(base, &u, B * H);
    v->d_xs = attn_arena_carve(base, &u, SB * d->E);
    return u;
}

/* Slots for B pairs of source lengths slen_in[B] (counting sort, longest first, stable) and the
 * arena for (B, S, T). */
static attn_status prepare(rnn_impl *v, int B, int S, int T, const int *slen_in, const int *tlen_in,
                           attn_error *err) {
    v->B = 0;
    const int need = 4 * B + S + T * B;
    if (need > v->ints_cap) {
        int *ints = malloc((size_t)need * sizeof *ints);
        if (!ints) return attn_errorf(err, ATTN_ERR_NOMEM, "seq2seq: out of memory for a batch");
        free(v->ints);
        v->ints = ints;
        v->ints_cap = need;
    }
    v->order = v->ints;
    v->slen = v->order + B;
    v->tlen = v->slen + B;
    v->rows = v->tlen + B;
    v->toks = v->rows + S;
    v->B = B, v->S = S, v->T = T;
    attn_status st = attn_arena_reserve(&v->arena, &v->cap, layout(v, NULL), err);
    if (st != ATTN_OK) {
        v->B = 0;
        return st;
    }
    layout(v, v->arena);
    int n = 0;
    for (int len = S; len >= 1; len--) {
        for (int i = 0; i < B; i++)
            if (slen_in[i] == len) v->order[n++] = i;
        v->rows[len - 1] = n;
    }
    for (int k = 0; k < B; k++) {
        v->slen[k] = slen_in[v->order[k]];
        v->tlen[k] = tlen_in[v->order[k]];
    }
    return ATTN_OK;
}

static attn_status rnn_setup(attn_seq2seq *m, attn_error *err) {
    rnn_impl *v = calloc(1, sizeof *v);
    if (!v) return attn_errorf(err, ATTN_ERR_NOMEM, "seq2seq: out of memory for views");
    m->impl = v;
    v->d = dims_of(&m->cfg);
    bind(m, m->params, &v->w);
    return ATTN_OK;
}

static void rnn_set_grads(attn_seq2seq *m) {
    bind(m, m->grads, &((rnn_impl *)m->impl)->g);
}

static void rnn_destroy(attn_seq2seq *m) {
    rnn_impl *v = m->impl;
    free(v->arena);
    free(v->ints);
    free(v);
    m->impl = NULL;
}

/* ---- encoder -------------------------------------------------------------------------------- */

/* The GRU cell's step on n rows (gru.c). */
void attn_s2s_rnn_cell_forward(const float *xw, float *hw, const float *h_prev, float *h,
                               float *saved, int n, int H) {
    const attn_recurrent_step st = {
        .n = n, .H = H, .xw = xw, .hw = hw, .h_prev = h_prev, .h = h, .saved = saved};
    attn_gru_cell.step_forward(&st);
}

void attn_s2s_rnn_cell_backward(const float *d_h, float *d_xw, float *d_hw, float *d_h_prev,
                                const float *h_prev, const float *saved, int n, int H) {
    float *saved_rw = (float *)saved; /* the step only reads it */
    const attn_recurrent_step st = {.n = n,
                                    .H = H,
                                    .h_prev = h_prev,
                                    .saved = saved_rw,
                                    .d_h = d_h,
                                    .d_xw = d_xw,
                                    .d_hw = d_hw,
                                    .d_h_prev = d_h_prev};
    attn_gru_cell.step_backward(&st);
}

/* Where direction k reads h_prev and writes h at word t (eh layout above). */
float *attn_s2s_rnn_eh_prev(const rnn_impl *v, int k, int t) {
    return v->eh[k] + (size_t)(k == 0 ? t : t + 1) * v->B * v->d.H;
}
float *attn_s2s_rnn_eh_out(const rnn_impl *v, int k, int t) {
    return v->eh[k] + (size_t)(k == 0 ? t + 1 : t) * v->B * v->d.H;
}

/* src_at(i, t): pair i's source word t. */
static void encode(rnn_impl *v, const int *src_ids, int src_stride) {
    const rnn_dims *d = &v->d;
    const int B = v->B, S = v->S, H = d->H, G = 3 * H;
    for (int t = 0; t < S; t++)
        for (int k = 0; k < B; k++) {
            float *x = v->xs + ((size_t)t * B + k) * d->E;
            if (t < v->slen[k])
                attn_embedding_forward(x, &src_ids[(size_t)v->order[k] * src_stride + t],
                                       v->w.src_emb, 1, d->E);
            else
                memset(x, 0, (size_t)d->E * sizeof(float));
        }
    for (int k = 0; k < d->ND; k++) {
        const gru_tensors *g = &v->w.enc[k];
        /* all steps' input projections in one GEMM (ATen RNN.cpp, both directions) */
        attn_linear_forward(v->exw[k], v->xs, g->w_ih, g->b_ih, S * B, d->E, G, ATTN_OP_INPUT);
        memset(v->eh[k], 0, (size_t)(S + 1) * B * H * sizeof(float));
        for (int i = 0; i < S; i++) {
            const int t = k == 0 ? i : S - 1 - i, n = v->rows[t];
            attn_linear_forward(v->hw, attn_s2s_rnn_eh_prev(v, k, t), g->w_hh, g->b_hh, n, H, G,
                                ATTN_OP_RECURRENT);
            attn_s2s_rnn_cell_forward(v->exw[k] + (size_t)t * B * G, v->hw,
                                      attn_s2s_rnn_eh_prev(v, k, t), attn_s2s_rnn_eh_out(v, k, t),
                                      v->esaved[k] + (size_t)t * B * 4 * H, n, H);
        }
    }
    /* enc[k][j] = [forward after word j ; reverse at word j], 0 past the source */
    memset(v->enc, 0, (size_t)B * S * d->He * sizeof(float));
    for (int k = 0; k < B; k++)
        for (int j = 0; j < v->slen[k]; j++)
            for (int r = 0; r < d->ND; r++)
                memcpy(v->enc + ((size_t)k * S + j) * d->He + (size_t)r * H,
                       attn_s2s_rnn_eh_out(v, r, j) + (size_t)k * H, (size_t)H * sizeof(float));
    if (d->attn) /* keys of every encoder state in one GEMM */
        attn_linear_forward(v->keys, v->enc, v->w.k_w, v->w.k_b, B * S, d->He, d->A, ATTN_OP_QKV);
    /* s_0 = the forward direction's state after each source's last word */
    for (int k = 0; k < B; k++)
        memcpy(v->s + (size_t)k * H, attn_s2s_rnn_eh_out(v, 0, v->slen[k] - 1) + (size_t)k * H,
               (size_t)H * sizeof(float));
}

/* ---- decoder step ------------------------------------------------------------------------- */

/* Slot k's additive attention at step t: alpha = softmax(energy . tanh(keys + q)), context
 * ctx[He] = alpha . enc (the reference's tanh, Linear, softmax over the row and mm). */
static void attend(rnn_impl *v, int t, int k, float *ctx) {
    const rnn_dims *d = &v->d;
    const int S = v->S, len = v->slen[k], A = d->A;
    const size_t tk = (size_t)t * v->B + k;
    float *e = v->e + tk * S * A, *alpha = v->alpha + tk * S;
    const float *keys = v->keys + (size_t)k * S * A, *q = v->q + tk * A;
    for (int j = 0; j < len; j++) attn_add_forward(e + (size_t)j * A, keys + (size_t)j * A, q, A);
    attn_tanh_forward(e, e, (size_t)len * A);
    /* scores [1, len] = energy [1, A] . e^T: PyTorch's Linear(A, 1) GEMM, transposed */
    attn_matmul_nt(alpha, v->w.v_w, e, 1, len, A, 0.0f, ATTN_OP_QK, ATTN_PASS_FORWARD);
    attn_softmax_forward(alpha, alpha, 1, len, len);
    memset(alpha + len, 0, (size_t)(S - len) * sizeof(float));
    attn_matmul_nn(ctx, alpha, v->enc + (size_t)k * S * d->He, 1, d->He, len, 0.0f, ATTN_OP_AV,
                   ATTN_PASS_FORWARD);
}

/* Decoder step t for every slot, input tokens v->toks[t*B ..]: s[t+1] and the logits v->lg. */
static void dec_step(rnn_impl *v, int t) {
    const rnn_dims *d = &v->d;
    const int B = v->B, H = d->H, G = 3 * H;
    const float *sp = v->s + (size_t)t * B * H;
    float *sn = v->s + (size_t)(t + 1) * B * H;
    float *x = v->dx + (size_t)t * B * d->X, *xw = v->dxw + (size_t)t * B * G;
    for (int k = 0; k < B; k++)
        attn_embedding_forward(x + (size_t)k * d->X, &v->toks[(size_t)t * B + k], v->w.tgt_emb, 1,
                               d->E);
    if (d->attn) {
        attn_linear_forward(v->q + (size_t)t * B * d->A, sp, v->w.q_w, NULL, B, H, d->A,
                            ATTN_OP_QKV);
        for (int k = 0; k < B; k++) attend(v, t, k, x + (size_t)k * d->X + d->E);
    }
    attn_linear_forward(xw, x, v->w.dec.w_ih, v->w.dec.b_ih, B, d->X, G, ATTN_OP_INPUT);
    attn_linear_forward(v->hw, sp, v->w.dec.w_hh, v->w.dec.b_hh, B, H, G, ATTN_OP_RECURRENT);
    attn_s2s_rnn_cell_forward(xw, v->hw, sp, sn, v->dsaved + (size_t)t * B * 4 * H, B, H);
    const float *o = sn;
    if (d->attn) {
        float *oo = v->o + (size_t)t * B * d->O;
        for (int k = 0; k < B; k++) {
            memcpy(oo + (size_t)k * d->O, sn + (size_t)k * H, (size_t)H * sizeof(float));
            memcpy(oo + (size_t)k * d->O + H, x + (size_t)k * d->X + d->E,
                   (size_t)d->He * sizeof(float));
        }
        o = oo;
    }
    attn_linear_forward(v->lg, o, v->w.head_w, v->w.head_b, B, d->O, d->Vt, ATTN_OP_HEAD);
}

/* ---- forward -------------------------------------------------------------------------------- */

static int max_of(const int *x, int n) {
    int m = 0;
    for (int i = 0; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}

static attn_status rnn_forward(attn_seq2seq *m, const attn_s2s_batch *b, float *logits,
                               attn_error *err) {
    rnn_impl *v = m->impl;
    const int B = b->B, Vt = v->d.Vt;
    attn_status st = prepare(v, B, max_of(b->src_lengths, B), max_of(b->tgt_lengths, B),
                             b->src_lengths, b->tgt_lengths, err);
    if (st != ATTN_OK) return st;
    encode(v, b->src_ids, b->S);
    int *trow = malloc((size_t)B * sizeof *trow); /* first logits row of each slot's pair */
    if (!trow) {
        v->B = 0;
        return attn_errorf(err, ATTN_ERR_NOMEM, "seq2seq: out of memory for a batch");
    }
    for (int k = 0; k < B; k++) {
        trow[k] = 0;
        for (int i = 0; i < v->order[k]; i++) trow[k] += b->tgt_lengths[i];
    }
    for (int t = 0; t < v->T; t++) {
        for (int k = 0; k < B; k++)
            v->toks[(size_t)t * B + k] =
                t < v->tlen[k] ? b->tgt_ids[(size_t)v->order[k] * b->T + t] : ATTN_PAD_ID;
        dec_step(v, t);
        for (int k = 0; k < B; k++)
            if (t < v->tlen[k])
                memcpy(logits + ((size_t)trow[k] + t) * Vt, v->lg + (size_t)k * Vt,
                       (size_t)Vt * sizeof(float));
    }
    free(trow);
    return ATTN_OK;
}

/* ---- generation, maps ----------------------------------------------------------------------- */

/* Cached: the encoder once, then one decoder step per token (the state is the cache). */
static attn_status decode_cached(attn_seq2seq *m, const int *src, int n_src, int max_out,
                                 const attn_s2s_chooser *ch, int *out, int *n_out,
                                 float *step_logits, int *n_steps, attn_error *err) {
    rnn_impl *v = m->impl;
    const int Vt = v->d.Vt, T = max_out + 1;
    attn_status st = prepare(v, 1, n_src, T, &n_src, &T, err);
    if (st != ATTN_OK) return st;
    encode(v, src, n_src);
    int n = 0, steps = 0;
    v->toks[0] = ATTN_TGT_BOS;
    while (n < max_out) {
        dec_step(v, n);
        if (step_logits)
            memcpy(step_logits + (size_t)steps * Vt, v->lg, (size_t)Vt * sizeof(float));
        steps++;
        const int next = ch->choose(ch->ctx, v->lg, Vt);
        if (next == ATTN_TGT_EOS) break;
        out[n++] = next;
        v->toks[n] = next;
    }
    v->B = 0; /* nothing to back-propagate */
    *n_out = n;
    if (n_steps) *n_steps = steps;
    return ATTN_OK;
}

static attn_status rnn_decode(attn_seq2seq *m, const int *src, int n_src, int max_out, bool cache,
                              const attn_s2s_chooser *ch, int *out, int *n_out, float *step_logits,
                              int *n_steps, attn_error *err) {
    return (cache ? decode_cached : attn_seq2seq_decode_recompute)(
        m, src, n_src, max_out, ch, out, n_out, step_logits, n_steps, err);
}

/* seq2seq-attn's alignment of one teacher-forced pair: cross [1, 1, n_dec, n_src]; self is not
 * written (no self-attention). */
static attn_status attn_maps(attn_seq2seq *m, const int *src, int n_src, const int *dec_in,
                             int n_dec, float *cross, float *self, attn_error *err) {
    (void)self;
    rnn_impl *v = m->impl;
    if (!src || !dec_in || !cross || n_src < 1 || n_dec < 1)
        return attn_errorf(err, ATTN_ERR_ARG, "maps: need a source, a decoder input and cross");
    float *logits = malloc((size_t)n_dec * v->d.Vt * sizeof *logits);
    if (!logits) return attn_errorf(err, ATTN_ERR_NOMEM, "maps: out of memory");
    const attn_s2s_batch b = {1, n_src, n_dec, src, &n_src, dec_in, &n_dec};
    attn_status st = attn_seq2seq_forward(m, &b, logits, err);
    free(logits);
    if (st == ATTN_OK)
        for (int t = 0; t < n_dec; t++)
            memcpy(cross + (size_t)t * n_src, v->alpha + (size_t)t * n_src,
                   (size_t)n_src * sizeof(float));
    return st;
}

attn_status attn_seq2seq_alignment(attn_seq2seq *m, const int *src, int n_src, const int *dec_in,
                                   int n_dec, float *alpha, attn_error *err) {
    if (!m || m->cfg.arch != ATTN_S2S_ATTN)
        return attn_errorf(err, ATTN_ERR_VALUE, "%s has no additive attention",
                           m ? attn_s2s_arch_name(m->cfg.arch) : "(null)");
    return m->vt->maps(m, src, n_src, dec_in, n_dec, alpha, NULL, err);
}

const attn_s2s_vt attn_s2s_gru_vt = {
    "seq2seq-gru",         rnn_specs,  rnn_setup, rnn_set_grads, rnn_forward,
    attn_s2s_rnn_backward, rnn_decode, NULL,      rnn_destroy,   NULL};
const attn_s2s_vt attn_s2s_attn_vt = {
    "seq2seq-attn",        rnn_specs,  rnn_setup, rnn_set_grads, rnn_forward,
    attn_s2s_rnn_backward, rnn_decode, attn_maps, rnn_destroy,   NULL};

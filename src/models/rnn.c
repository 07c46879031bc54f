/* rnn.c -- Elman RNN: embedding -> nn.RNN(E, H, tanh) -> h after the last word -> Linear(H, 1).
 *
 * Shapes: [T, B, ...] time-major slabs in the activation arena. Numerics follow ATen RNN.cpp
 * (PYTORCH_NUMERICS.md): one GEMM for all input projections, then per step
 * (h.W_hh^T + b_hh) + xw[t] and Sleef tanh, so batch-1 logits match PyTorch bit for bit.
 * Padding: the state after word lengths[b] feeds the head; later steps are computed but unused. */
#include "model_internal.h"

#include "attn_kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static size_t rnn_specs(const attn_model_config *c, attn_param_spec *s) {
    const int V = c->vocab_size, E = c->embed_dim, H = c->hidden_size;
    const float k = 1.0f / sqrtf((float)H); /* nn.RNN: U(-1/sqrt(H), 1/sqrt(H)) for all */
    attn_spec_set(&s[0], "embedding.weight", 2, (int[]){V, E}, ATTN_INIT_NORMAL, 1.0f);
    attn_spec_set(&s[1], "rnn.weight_ih_l0", 2, (int[]){H, E}, ATTN_INIT_UNIFORM, k);
    attn_spec_set(&s[2], "rnn.weight_hh_l0", 2, (int[]){H, H}, ATTN_INIT_UNIFORM, k);
    attn_spec_set(&s[3], "rnn.bias_ih_l0", 1, (int[]){H}, ATTN_INIT_UNIFORM, k);
    attn_spec_set(&s[4], "rnn.bias_hh_l0", 1, (int[]){H}, ATTN_INIT_UNIFORM, k);
    const float kh = 1.0f / sqrtf((float)H); /* nn.Linear: U(-1/sqrt(fan_in), .) */
    attn_spec_set(&s[5], "head.weight", 2, (int[]){1, H}, ATTN_INIT_UNIFORM, kh);
    attn_spec_set(&s[6], "head.bias", 1, (int[]){1}, ATTN_INIT_UNIFORM, kh);
    return 7;
}

/* ---- views and activation arena ------------------------------------------------------- */

typedef struct rnn_impl {
    attn_recurrent_tensors w; /* parameters (views into m->params) */
    attn_recurrent_tensors d; /* gradients (views into m->grads, set by set_grads) */
    /* activation arena, carved for the last forward's (B, T) */
    float *arena;
    size_t cap;
    int B, T;
    float *x;      /* [T, B, E] word embeddings */
    float *xw;     /* [T, B, H] x.W_ih^T + b_ih for all steps */
    float *pre;    /* [B, H] one step's pre-activation (scratch) */
    float *h;      /* [T+1, B, H] hidden states, h[0] = 0 */
    float *h_last; /* [B, H] h after each sentence's last word */
    /* backward scratch */
    float *d_pre;    /* [T, B, H] d loss / d pre-activation per step */
    float *d_h;      /* [B, H] d loss / d h[t+1] */
    float *d_h_last; /* [B, H] */
    float *d_x;      /* [T, B, E] */
} rnn_impl;

/* Lays the arena out for (B, T); with base NULL it only counts. Returns the floats needed. */
static size_t rnn_layout(rnn_impl *v, float *base, int B, int T, int E, int H) {
    size_t u = 0, TB = (size_t)T * B;
    v->x = attn_arena_carve(base, &u, TB * E);
    v->xw = attn_arena_carve(base, &u, TB * H);
    v->pre = attn_arena_carve(base, &u, (size_t)B * H);
    v->h = attn_arena_carve(base, &u, (TB + B) * H);
    v->h_last = attn_arena_carve(base, &u, (size_t)B * H);
    v->d_pre = attn_arena_carve(base, &u, TB * H);
    v->d_h = attn_arena_carve(base, &u, (size_t)B * H);
    v->d_h_last = attn_arena_carve(base, &u, (size_t)B * H);
    v->d_x = attn_arena_carve(base, &u, TB * E);
    return u;
}

static attn_status rnn_setup(attn_model *m, attn_error *err) {
    rnn_impl *v = calloc(1, sizeof *v);
    if (!v) return attn_errorf(err, ATTN_ERR_NOMEM, "rnn: out of memory for views");
    m->impl = v;
    attn_recurrent_bind(m, m->params, "rnn", &v->w);
    return ATTN_OK;
}

static void rnn_set_grads(attn_model *m) {
    rnn_impl *v = m->impl;
    attn_recurrent_bind(m, m->grads, "rnn", &v->d);
}

static void rnn_destroy(attn_model *m) {
    rnn_impl *v = m->impl;
    free(v->arena);
    free(v);
    m->impl = NULL;
}

/* Word id at step t of sentence i; steps past the sentence read [PAD]. */
static int word_at(const attn_batch *b, int i, int t) {
    return t < b->lengths[i] ? b->ids[(size_t)i * b->T + t] : ATTN_PAD_ID;
}

/* ---- forward ---------------------------------------------------------------------------- */

/* logits[B]. Final state rule (tools/attn_models.py): every sentence runs over all T steps of
 * the padded batch and the output is taken at step lengths[b]-1; later (padding) steps never
 * reach the loss. */
static attn_status rnn_forward(attn_model *m, const attn_batch *b, float *logits, attn_error *err) {
    rnn_impl *v = m->impl;
    const int B = b->B, T = b->T, E = m->cfg.embed_dim, H = m->cfg.hidden_size;
    attn_status st = attn_arena_reserve(&v->arena, &v->cap, rnn_layout(v, NULL, B, T, E, H), err);
    if (st != ATTN_OK) return st;
    rnn_layout(v, v->arena, B, T, E, H);
    v->B = B;
    v->T = T;

    /* x[t, b, :] = embedding[ids[b, t], :] (time-major) */
    for (int t = 0; t < T; t++)
        for (int i = 0; i < B; i++) {
            int id = word_at(b, i, t);
            attn_embedding_forward(v->x + ((size_t)t * B + i) * E, &id, v->w.embedding, 1, E);
        }
    /* xw[T*B, H] = x.W_ih^T + b_ih: all input projections in one GEMM (ATen RNN.cpp) */
    attn_linear_forward(v->xw, v->x, v->w.weight_ih, v->w.bias_ih, T * B, E, H, ATTN_OP_INPUT);

    /* h_{t+1} = tanh((h_t.W_hh^T + b_hh) + xw[t]), h_0 = 0 */
    memset(v->h, 0, (size_t)B * H * sizeof(float));
    for (int t = 0; t < T; t++) {
        const float *h_prev = v->h + (size_t)t * B * H;
        float *h_next = v->h + (size_t)(t + 1) * B * H;
        const float *xw_t = v->xw + (size_t)t * B * H;
        attn_linear_forward(v->pre, h_prev, v->w.weight_hh, v->w.bias_hh, B, H, H,
                            ATTN_OP_RECURRENT);
        for (size_t j = 0; j < (size_t)B * H; j++) v->pre[j] = v->pre[j] + xw_t[j];
        attn_tanh_forward(h_next, v->pre, (size_t)B * H);
    }

    /* h_last[b] = h after word lengths[b]; logits = h_last.head_w^T + head_b */
    for (int i = 0; i < B; i++)
        memcpy(v->h_last + (size_t)i * H, v->h + ((size_t)b->lengths[i] * B + i) * H,
               (size_t)H * sizeof(float));
    attn_linear_forward(logits, v->h_last, v->w.head_weight, v->w.head_bias, B, H, 1, ATTN_OP_HEAD);
    return ATTN_OK;
}

/* ---- backward (BPTT) ---------------------------------------------------------------------- */

static void rnn_backward(attn_model *m, const attn_batch *b, const float *d_logits) {
    rnn_impl *v = m->impl;
    const int B = v->B, T = v->T, E = m->cfg.embed_dim, H = m->cfg.hidden_size;
    const size_t BH = (size_t)B * H;

    /* head: logits = h_last.w^T + b */
    memset(v->d_h_last, 0, BH * sizeof(float));
    attn_linear_backward(v->d_h_last, v->d.head_weight, v->d.head_bias, d_logits, v->h_last,
                         v->w.head_weight, B, H, 1, ATTN_OP_HEAD);

    /* Walk back in time. d_h holds d loss / d h[t+1]; sentence b's d_h_last enters at its last
     * word (t = lengths[b]-1). pre_t -> h[t+1] = tanh(pre_t), so d_pre = d_h * (1 - h^2);
     * pre_t = h[t].W_hh^T + ..., so d h[t] = d_pre.W_hh. */
    memset(v->d_h, 0, BH * sizeof(float));
    memset(v->d_pre, 0, (size_t)T * BH * sizeof(float));
    for (int t = T - 1; t >= 0; t--) {
        for (int i = 0; i < B; i++)
            if (b->lengths[i] - 1 == t)
                for (int j = 0; j < H; j++)
                    v->d_h[(size_t)i * H + j] += v->d_h_last[(size_t)i * H + j];
        float *d_pre_t = v->d_pre + (size_t)t * BH;
        attn_tanh_backward(d_pre_t, v->d_h, v->h + (size_t)(t + 1) * BH, BH);
        memset(v->d_h, 0, BH * sizeof(float));
        if (t > 0)
            attn_linear_backward(v->d_h, NULL, NULL, d_pre_t, v->h + (size_t)t * BH, v->w.weight_hh,
                                 B, H, H, ATTN_OP_RECURRENT);
    }

    /* Weight gradients over all steps at once: d_W_hh += d_pre^T.h[0..T-1] (stacked h_{t-1}),
     * d_W_ih += d_pre^T.x, d_x = d_pre.W_ih. */
    attn_linear_backward(NULL, v->d.weight_hh, v->d.bias_hh, v->d_pre, v->h, v->w.weight_hh, T * B,
                         H, H, ATTN_OP_RECURRENT);
    memset(v->d_x, 0, (size_t)T * B * E * sizeof(float));
    attn_linear_backward(v->d_x, v->d.weight_ih, v->d.bias_ih, v->d_pre, v->x, v->w.weight_ih,
                         T * B, E, H, ATTN_OP_INPUT);
    for (int t = 0; t < T; t++)
        for (int i = 0; i < B; i++) {
            int id = word_at(b, i, t);
            attn_embedding_backward(v->d.embedding, v->d_x + ((size_t)t * B + i) * E, &id, 1, E);
        }
}

const attn_model_vt attn_rnn_vt = {"rnn",       rnn_specs,    rnn_setup,  rnn_set_grads,
                                   rnn_forward, rnn_backward, rnn_destroy};

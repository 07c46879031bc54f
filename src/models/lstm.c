/* lstm.c -- LSTM: embedding -> nn.LSTM(E, H) (gates i,f,g,o) -> h after the last word ->
 * Linear(H, 1).
 *
 * Shapes: [T, B, ...] time-major slabs in the activation arena. Numerics follow ATen RNN.cpp
 * (PYTORCH_NUMERICS.md): one GEMM for all input projections; per step
 * gates = (h.W_hh^T + b_hh) + xw[t], sigmoid on the i, f, o chunks and tanh on g separately,
 * c = (f*c) + (i*g) without FMA, h = o*tanh(c). Batch-1 logits match PyTorch bit for bit.
 * Padding: the state after word lengths[b] feeds the head; later steps are computed but unused. */
#include "model_internal.h"

#include "attn_kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static size_t lstm_specs(const attn_model_config *c, attn_param_spec *s) {
    const int V = c->vocab_size, E = c->embed_dim, H = c->hidden_size;
    const float k = 1.0f / sqrtf((float)H); /* nn.LSTM: U(-1/sqrt(H), 1/sqrt(H)) for all */
    attn_spec_set(&s[0], "embedding.weight", 2, (int[]){V, E}, ATTN_INIT_NORMAL, 1.0f);
    attn_spec_set(&s[1], "lstm.weight_ih_l0", 2, (int[]){4 * H, E}, ATTN_INIT_UNIFORM, k);
    attn_spec_set(&s[2], "lstm.weight_hh_l0", 2, (int[]){4 * H, H}, ATTN_INIT_UNIFORM, k);
    attn_spec_set(&s[3], "lstm.bias_ih_l0", 1, (int[]){4 * H}, ATTN_INIT_UNIFORM, k);
    attn_spec_set(&s[4], "lstm.bias_hh_l0", 1, (int[]){4 * H}, ATTN_INIT_UNIFORM, k);
    attn_spec_set(&s[5], "head.weight", 2, (int[]){1, H}, ATTN_INIT_UNIFORM, k);
    attn_spec_set(&s[6], "head.bias", 1, (int[]){1}, ATTN_INIT_UNIFORM, k);
    return 7;
}

/* ---- views and activation arena ------------------------------------------------------- */

typedef struct lstm_impl {
    /* parameters (views into m->params) */
    float *embedding;         /* [V, E] */
    float *weight_ih;         /* [4H, E] gates i,f,g,o */
    float *weight_hh;         /* [4H, H] */
    float *bias_ih, *bias_hh; /* [4H] */
    float *head_weight;       /* [1, H] */
    float *head_bias;         /* [1] */
    /* gradients (views into m->grads, set by set_grads) */
    float *d_embedding, *d_weight_ih, *d_weight_hh, *d_bias_ih, *d_bias_hh;
    float *d_head_weight, *d_head_bias;
    /* activation arena, carved for the last forward's (B, T) */
    float *arena;
    size_t cap;
    int B, T;
    float *x;      /* [T, B, E] word embeddings */
    float *xw;     /* [T, B, 4H] x.W_ih^T + b_ih for all steps */
    float *pre;    /* [B, 4H] one step's gate pre-activations (scratch) */
    float *gates;  /* [T, B, 4H] activated gates i,f,g,o */
    float *c;      /* [T+1, B, H] cell states, c[0] = 0 */
    float *tanh_c; /* [T, B, H] tanh(c[t+1]) */
    float *h;      /* [T+1, B, H] hidden states, h[0] = 0 */
    float *h_last; /* [B, H] h after each sentence's last word */
    /* backward scratch */
    float *d_pre;     /* [T, B, 4H] d loss / d gate pre-activations per step */
    float *d_gates;   /* [B, 4H] d loss / d activated gates */
    float *d_h;       /* [B, H] d loss / d h[t+1] */
    float *d_c;       /* [B, H] d loss / d c[t+1] */
    float *d_tanh_c;  /* [B, H] */
    float *d_h_last;  /* [B, H] */
    float *d_x;       /* [T, B, E] */
} lstm_impl;

static float *carve(float *base, size_t *used, size_t n) {
    float *p = base ? base + *used : NULL;
    *used += n;
    return p;
}

/* Lays the arena out for (B, T); with base NULL it only counts. Returns the floats needed. */
static size_t lstm_layout(lstm_impl *v, float *base, int B, int T, int E, int H) {
    size_t u = 0, TB = (size_t)T * B, BH = (size_t)B * H;
    v->x = carve(base, &u, TB * E);
    v->xw = carve(base, &u, TB * 4 * H);
    v->pre = carve(base, &u, 4 * BH);
    v->gates = carve(base, &u, TB * 4 * H);
    v->c = carve(base, &u, (TB + B) * H);
    v->tanh_c = carve(base, &u, TB * H);
    v->h = carve(base, &u, (TB + B) * H);
    v->h_last = carve(base, &u, BH);
    v->d_pre = carve(base, &u, TB * 4 * H);
    v->d_gates = carve(base, &u, 4 * BH);
    v->d_h = carve(base, &u, BH);
    v->d_c = carve(base, &u, BH);
    v->d_tanh_c = carve(base, &u, BH);
    v->d_h_last = carve(base, &u, BH);
    v->d_x = carve(base, &u, TB * E);
    return u;
}

static attn_status lstm_setup(attn_model *m, attn_error *err) {
    lstm_impl *v = calloc(1, sizeof *v);
    if (!v) return attn_errorf(err, ATTN_ERR_NOMEM, "lstm: out of memory for views");
    m->impl = v;
    v->embedding = attn_model_view(m, m->params, "embedding.weight");
    v->weight_ih = attn_model_view(m, m->params, "lstm.weight_ih_l0");
    v->weight_hh = attn_model_view(m, m->params, "lstm.weight_hh_l0");
    v->bias_ih = attn_model_view(m, m->params, "lstm.bias_ih_l0");
    v->bias_hh = attn_model_view(m, m->params, "lstm.bias_hh_l0");
    v->head_weight = attn_model_view(m, m->params, "head.weight");
    v->head_bias = attn_model_view(m, m->params, "head.bias");
    return ATTN_OK;
}

static void lstm_set_grads(attn_model *m) {
    lstm_impl *v = m->impl;
    v->d_embedding = attn_model_view(m, m->grads, "embedding.weight");
    v->d_weight_ih = attn_model_view(m, m->grads, "lstm.weight_ih_l0");
    v->d_weight_hh = attn_model_view(m, m->grads, "lstm.weight_hh_l0");
    v->d_bias_ih = attn_model_view(m, m->grads, "lstm.bias_ih_l0");
    v->d_bias_hh = attn_model_view(m, m->grads, "lstm.bias_hh_l0");
    v->d_head_weight = attn_model_view(m, m->grads, "head.weight");
    v->d_head_bias = attn_model_view(m, m->grads, "head.bias");
}

static void lstm_destroy(attn_model *m) {
    lstm_impl *v = m->impl;
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
static attn_status lstm_forward(attn_model *m, const attn_batch *b, float *logits,
                                attn_error *err) {
    lstm_impl *v = m->impl;
    const int B = b->B, T = b->T, E = m->cfg.embed_dim, H = m->cfg.hidden_size;
    const size_t BH = (size_t)B * H, G = 4 * (size_t)H;
    attn_status st =
        attn_arena_reserve(&v->arena, &v->cap, lstm_layout(v, NULL, B, T, E, H), err);
    if (st != ATTN_OK) return st;
    lstm_layout(v, v->arena, B, T, E, H);
    v->B = B;
    v->T = T;

    /* x[t, b, :] = embedding[ids[b, t], :] (time-major) */
    for (int t = 0; t < T; t++)
        for (int i = 0; i < B; i++)
{
            int id = word_at(b, i, t);
            attn_embedding_forward(v->x + ((size_t)t * B + i) * E, &id, v->embedding, 1, E);
        }
    /* xw[T*B, 4H] = x.W_ih^T + b_ih: all input projections in one GEMM (ATen RNN.cpp) */
    attn_linear_forward(v->xw, v->x, v->weight_ih, v->bias_ih, T * B, E, 4 * H, ATTN_OP_INPUT);

    memset(v->h, 0, BH * sizeof(float));
    memset(v->c, 0, BH * sizeof(float));
    for (int t = 0; t < T; t++) {
        const float *h_prev = v->h + (size_t)t * BH, *c_prev = v->c + (size_t)t * BH;
        float *h_next = v->h + (size_t)(t + 1) * BH, *c_next = v->c + (size_t)(t + 1) * BH;
        float *tc = v->tanh_c + (size_t)t * BH, *gt = v->gates + (size_t)t * B * G;
        const float *xw_t = v->xw + (size_t)t * B * G;
        /* pre = (h.W_hh^T + b_hh) + xw[t] */
        attn_linear_forward(v->pre, h_prev, v->weight_hh, v->bias_hh, B, H, 4 * H,
                            ATTN_OP_RECURRENT);
        for (size_t j = 0; j < (size_t)B * G; j++) v->pre[j] = v->pre[j] + xw_t[j];
        /* i, f, o = sigmoid, g = tanh, each on its own H-float chunk per sentence (PyTorch
         * applies sigmoid_ to each chunk view; its 16-wide blocks restart at every chunk) */
        for (int i = 0; i < B; i++) {
            const float *p = v->pre + (size_t)i * G;
            float *a = gt + (size_t)i * G;
            attn_sigmoid_forward(a, p, (size_t)H);
            attn_sigmoid_forward(a + H, p + H, (size_t)H);
            attn_tanh_forward(a + 2 * H, p + 2 * H, (size_t)H);
            attn_sigmoid_forward(a + 3 * H, p + 3 * H, (size_t)H);
        }
        /* c = (f*c) + (i*g) with two rounded products; h = o * tanh(c) */
        for (int i = 0; i < B; i++) {
            const float *a = gt + (size_t)i * G;
            for (int j = 0; j < H; j++) {
                size_t k = (size_t)i * H + j;
                float fc = a[H + j] * c_prev[k];
                float ig = a[j] * a[2 * H + j];
                c_next[k] = fc + ig;
            }
        }
        attn_tanh_forward(tc, c_next, BH);
        for (int i = 0; i < B; i++)
            for (int j = 0; j < H; j++)
                h_next[(size_t)i * H + j] = gt[(size_t)i * G + 3 * H + j] * tc[(size_t)i * H + j];
    }

    /* h_last[b] = h after word lengths[b]; logits = h_last.head_w^T + head_b */
    for (int i = 0; i < B; i++)
        memcpy(v->h_last + (size_t)i * H, v->h + ((size_t)b->lengths[i] * B + i) * H,
               (size_t)H * sizeof(float));
    attn_linear_forward(logits, v->h_last, v->head_weight, v->head_bias, B, H, 1,
                        ATTN_OP_HEAD);
    return ATTN_OK;
}

/* ---- backward (BPTT) ---------------------------------------------------------------------- */

static void lstm_backward(attn_model *m, const attn_batch *b, const float *d_logits) {
    lstm_impl *v = m->impl;
    const int B = v->B, T = v->T, E = m->cfg.embed_dim, H = m->cfg.hidden_size;
    const size_t BH = (size_t)B * H, G = 4 * (size_t)H;

    /* head: logits = h_last.w^T + b */
    memset(v->d_h_last, 0, BH * sizeof(float));
    attn_linear_backward(v->d_h_last, v->d_head_weight, v->d_head_bias, d_logits, v->h_last,
                         v->head_weight, B, H, 1, ATTN_OP_HEAD);

    /* d_h = d loss / d h[t+1], d_c = d loss / d c[t+1] (through c[t+2] = f*c[t+1] + ...). */
    memset(v->d_h, 0, BH * sizeof(float));
    memset(v->d_c, 0, BH * sizeof(float));
    memset(v->d_pre, 0, (size_t)T * B * G * sizeof(float));
    for (int t = T - 1; t >= 0; t--) {
        const float *gt = v->gates + (size_t)t * B * G, *tc = v->tanh_c + (size_t)t * BH;
        const float *c_prev = v->c + (size_t)t * BH;
        float *d_pre_t = v->d_pre + (size_t)t * B * G;
        for (int i = 0; i < B; i++)
            if (b->lengths[i] - 1 == t)
                for (int j = 0; j < H; j++)
                    v->d_h[(size_t)i * H + j] += v->d_h_last[(size_t)i * H + j];
        /* h = o * tanh(c): d_o = d_h * tanh(c), d tanh(c) = d_h * o */
        for (int i = 0; i < B; i++)
            for (int j = 0; j < H; j++) {
                size_t k = (size_t)i * H + j;
                v->d_gates[(size_t)i * G + 3 * H + j] = v->d_h[k] * tc[k];
                v->d_tanh_c[k] = v->d_h[k] * gt[(size_t)i * G + 3 * H + j];
            }
        attn_tanh_backward(v->d_c, v->d_tanh_c, tc, BH); /* d_c += d tanh(c) * (1 - tanh^2) */
        /* c = f*c_prev + i*g: d_i = d_c*g, d_f = d_c*c_prev, d_g = d_c*i, d c_prev = d_c*f */
        for (int i = 0; i < B; i++)
            for (int j = 0; j < H; j++) {
                size_t k = (size_t)i * H + j;
                const float *a = gt + (size_t)i * G;
                float *da = v->d_gates + (size_t)i * G;
                da[j] = v->d_c[k] * a[2 * H + j];
                da[H + j] = v->d_c[k] * c_prev[k];
                da[2 * H + j] = v->d_c[k] * a[j];
                v->d_c[k] = v->d_c[k] * a[H + j];
            }
        /* through the gate nonlinearities, chunk by chunk */
        for (int i = 0; i < B; i++) {
            const float *a = gt + (size_t)i * G, *da = v->d_gates + (size_t)i * G;
            float *dp = d_pre_t + (size_t)i * G;
            attn_sigmoid_backward(dp, da, a, (size_t)H);
            attn_sigmoid_backward(dp + H, da + H, a + H, (size_t)H);
            attn_tanh_backward(dp + 2 * H, da + 2 * H, a + 2 * H, (size_t)H);
            attn_sigmoid_backward(dp + 3 * H, da + 3 * H, a + 3 * H, (size_t)H);
        }
        /* pre = h[t].W_hh^T + ...: d h[t] = d_pre.W_hh */
        memset(v->d_h, 0, BH * sizeof(float));
        if (t > 0)
            attn_linear_backward(v->d_h, NULL, NULL, d_pre_t, v->h + (size_t)t * BH,
                                 v->weight_hh, B, H, 4 * H, ATTN_OP_RECURRENT);
    }

    /* Weight gradients over all steps at once: d_W_hh += d_pre^T.h[0..T-1] (stacked h_{t-1}),
     * d_W_ih += d_pre^T.x, d_x = d_pre.W_ih. */
    attn_linear_backward(NULL, v->d_weight_hh, v->d_bias_hh, v->d_pre, v->h, v->weight_hh,
                         T * B, H, 4 * H, ATTN_OP_RECURRENT);
    memset(v->d_x, 0, (size_t)T * B * E * sizeof(float));
    attn_linear_backward(v->d_x, v->d_weight_ih, v->d_bias_ih, v->d_pre, v->x, v->weight_ih,
                         T * B, E, 4 * H, ATTN_OP_INPUT);
    for (int t = 0; t < T; t++)
        for (int i = 0; i < B; i++)
{
            int id = word_at(b, i, t);
            attn_embedding_backward(v->d_embedding, v->d_x + ((size_t)t * B + i) * E, &id, 1, E);
        }
}

const attn_model_vt attn_lstm_vt = {"lstm",        lstm_specs,    lstm_setup,  lstm_set_grads,
                                    lstm_forward, lstm_backward, lstm_destroy};

/* lstm.c -- LSTM: embedding -> nn.LSTM(E, H) (gates i,f,g,o) -> h after the last word ->
 * Linear(H, 1).
 *
 * Shapes: [T, B, ...] time-major slabs in the activation arena. Numerics follow ATen RNN.cpp
 * (PYTORCH_NUMERICS.md): one GEMM for all input projections; per step
 * gates = (h.W_hh^T + b_hh) + xw[t], sigmoid on the i, f, o chunks and tanh on g separately,
 * c = (f*c) + (i*g) without FMA, h = o*tanh(c). Batch-1 logits match PyTorch bit for bit.
 * Padding: the state after word lengths[b] feeds the head. The sentences are kept in slots
 * sorted by length (longest first, like pack_padded_sequence), so step t runs its GEMM and gate
 * math on the first n_active[t] slots only; padding steps are never computed (a sentence's own
 * steps are unaffected, so batch-1 logits are unchanged). */
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
    attn_recurrent_tensors w; /* parameters (views into m->params) */
    attn_recurrent_tensors d; /* gradients (views into m->grads, set by set_grads) */
    /* activation arena, carved for the last forward's (B, T) */
    float *arena;
    size_t cap;
    int B, T;
    /* slots: the batch's sentences by length, longest first (stable), as pack_padded_sequence
     * orders them; only the first n_active[t] slots are still inside their sentence at step t */
    int *slots;    /* [B + T]: order[B] (sentence in slot s), then n_active[T] */
    int slots_cap; /* ints allocated in slots */
    float *x;      /* [T, B, E] word embeddings */
    float *xw;     /* [T, B, 4H] x.W_ih^T + b_ih for all steps */
    float *pre;    /* [B, 4H] one step's gate pre-activations (scratch) */
    float *gates;  /* [T, B, 4H] activated gates i,f,g,o */
    float *c;      /* [T+1, B, H] cell states, c[0] = 0 */
    float *tanh_c; /* [T, B, H] tanh(c[t+1]) */
    float *h;      /* [T+1, B, H] hidden states, h[0] = 0 */
    float *h_last; /* [B, H] h after each sentence's last word */
    /* backward scratch */
    float *d_pre;    /* [T, B, 4H] d loss / d gate pre-activations per step */
    float *d_h;      /* [B, H] d loss / d h[t+1] */
    float *d_c;      /* [B, H] d loss / d c[t+1] */
    float *d_h_last; /* [B, H] */
    float *d_x;      /* [T, B, E] */
} lstm_impl;

/* Lays the arena out for (B, T); with base NULL it only counts. Returns the floats needed. */
static size_t lstm_layout(lstm_impl *v, float *base, int B, int T, int E, int H) {
    size_t u = 0, TB = (size_t)T * B, BH = (size_t)B * H;
    v->x = attn_arena_carve(base, &u, TB * E);
    v->xw = attn_arena_carve(base, &u, TB * 4 * H);
    v->pre = attn_arena_carve(base, &u, 4 * BH);
    v->gates = attn_arena_carve(base, &u, TB * 4 * H);
    v->c = attn_arena_carve(base, &u, (TB + B) * H);
    v->tanh_c = attn_arena_carve(base, &u, TB * H);
    v->h = attn_arena_carve(base, &u, (TB + B) * H);
    v->h_last = attn_arena_carve(base, &u, BH);
    v->d_pre = attn_arena_carve(base, &u, TB * 4 * H);
    v->d_h = attn_arena_carve(base, &u, BH);
    v->d_c = attn_arena_carve(base, &u, BH);
    v->d_h_last = attn_arena_carve(base, &u, BH);
    v->d_x = attn_arena_carve(base, &u, TB * E);
    return u;
}

static attn_status lstm_setup(attn_model *m, attn_error *err) {
    lstm_impl *v = calloc(1, sizeof *v);
    if (!v) return attn_errorf(err, ATTN_ERR_NOMEM, "lstm: out of memory for views");
    m->impl = v;
    attn_recurrent_bind(m, m->params, "lstm", &v->w);
    return ATTN_OK;
}

static void lstm_set_grads(attn_model *m) {
    lstm_impl *v = m->impl;
    attn_recurrent_bind(m, m->grads, "lstm", &v->d);
}

static void lstm_destroy(attn_model *m) {
    lstm_impl *v = m->impl;
    free(v->arena);
    free(v->slots);
    free(v);
    m->impl = NULL;
}

/* Word id at step t of sentence i; steps past the sentence read [PAD]. */
static int word_at(const attn_batch *b, int i, int t) {
    return t < b->lengths[i] ? b->ids[(size_t)i * b->T + t] : ATTN_PAD_ID;
}

/* ---- per-sentence cell arithmetic (one row of H) --------------------------------------- */

/* c[H] = (f*c_prev) + (i*g) with two rounded products, a = the row's activated gates i,f,g,o. */
static void cell_forward(float *restrict c, const float *restrict a, const float *restrict c_prev,
                         int H) {
    for (int j = 0; j < H; j++) {
        float fc = a[H + j] * c_prev[j];
        float ig = a[j] * a[2 * H + j];
        c[j] = fc + ig;
    }
}

/* y[H] = a * b */
static void mul_rows(float *restrict y, const float *restrict a, const float *restrict b, int H) {
    for (int j = 0; j < H; j++) y[j] = a[j] * b[j];
}

/* One sentence's step backward. In: d_h = d loss / d h[t+1] (plus d_h_last, if this is the
 * sentence's last word), d_c = d loss / d c[t+1] from the later steps. Out: d_pre[4H] = d loss
 * / d gate pre-activations (written), d_c = d loss / d c[t]. With h = o*tanh(c),
 * c = f*c_prev + i*g: d_o = d_h*tanh(c), dc = d_c + d_h*o*(1 - tanh^2(c)), d_i = dc*g,
 * d_f = dc*c_prev, d_g = dc*i, d c_prev = dc*f; then sigmoid' = y(1-y) and tanh' = 1 - y^2. */
static void cell_backward(float *restrict d_pre, float *restrict d_c, const float *restrict d_h,
                          const float *restrict d_h_last, const float *restrict a,
                          const float *restrict tc, const float *restrict c_prev, int H) {
    for (int j = 0; j < H; j++) {
        float dh = d_h_last ? d_h[j] + d_h_last[j] : d_h[j];
        const float ai = a[j], af = a[H + j], ag = a[2 * H + j], ao = a[3 * H + j];
        float d_o = dh * tc[j];
        float dc = d_c[j] + (dh * ao) * (1.0f - tc[j] * tc[j]);
        d_pre[j] = (dc * ag) * ai * (1.0f - ai);
        d_pre[H + j] = (dc * c_prev[j]) * af * (1.0f - af);
        d_pre[2 * H + j] = (dc * ai) * (1.0f - ag * ag);
        d_pre[3 * H + j] = d_o * ao * (1.0f - ao);
        d_c[j] = dc * af;
    }
}

/* ---- forward ---------------------------------------------------------------------------- */

/* logits[B]. Final state rule (tools/attn_models.py): the output is taken at step
 * lengths[b]-1; later (padding) steps never reach the loss, so they are skipped here. */
static attn_status lstm_forward(attn_model *m, const attn_batch *b, float *logits,
                                attn_error *err) {
    lstm_impl *v = m->impl;
    const int B = b->B, T = b->T, E = m->cfg.embed_dim, H = m->cfg.hidden_size;
    const size_t BH = (size_t)B * H, G = 4 * (size_t)H;
    attn_status st = attn_arena_reserve(&v->arena, &v->cap, lstm_layout(v, NULL, B, T, E, H), err);
    if (st == ATTN_OK && B + T > v->slots_cap) {
        int *slots = malloc((size_t)(B + T) * sizeof *slots);
        if (!slots)
            st = attn_errorf(err, ATTN_ERR_NOMEM, "lstm: out of memory for a batch of %d", B);
        else {
            free(v->slots);
            v->slots = slots;
            v->slots_cap = B + T;
        }
    }
    if (st != ATTN_OK) {
        v->B = v->T = 0; /* nothing to back-propagate */
        return st;
    }
    lstm_layout(v, v->arena, B, T, E, H);
    v->B = B;
    v->T = T;
    /* order: counting sort by length, longest first; n_active[t] = #{lengths > t} */
    int *order = v->slots, *n_active = v->slots + B, n = 0;
    for (int len = T; len >= 1; len--) {
        for (int i = 0; i < B; i++)
            if (b->lengths[i] == len) order[n++] = i;
        n_active[len - 1] = n;
    }

    /* x[t, s, :] = embedding[ids[order[s], t], :] (time-major) */
    for (int t = 0; t < T; t++)
        for (int s = 0; s < B; s++) {
            int id = word_at(b, order[s], t);
            attn_embedding_forward(v->x + ((size_t)t * B + s) * E, &id, v->w.embedding, 1, E);
        }
    /* xw[T*B, 4H] = x.W_ih^T + b_ih: all input projections in one GEMM (ATen RNN.cpp) */
    attn_linear_forward(v->xw, v->x, v->w.weight_ih, v->w.bias_ih, T * B, E, 4 * H, ATTN_OP_INPUT);

    memset(v->h, 0, BH * sizeof(float));
    memset(v->c, 0, BH * sizeof(float));
    for (int t = 0; t < T; t++) {
        const int na = n_active[t];
        const size_t nH = (size_t)na * H;
        const float *h_prev = v->h + (size_t)t * BH, *c_prev = v->c + (size_t)t * BH;
        float *h_next = v->h + (size_t)(t + 1) * BH, *c_next = v->c + (size_t)(t + 1) * BH;
        float *tc = v->tanh_c + (size_t)t * BH, *gt = v->gates + (size_t)t * B * G;
        const float *xw_t = v->xw + (size_t)t * B * G;
        /* pre = (h.W_hh^T + b_hh) + xw[t], for the active slots */
        attn_linear_forward(v->pre, h_prev, v->w.weight_hh, v->w.bias_hh, na, H, 4 * H,
                            ATTN_OP_RECURRENT);
        for (size_t j = 0; j < (size_t)na * G; j++) v->pre[j] = v->pre[j] + xw_t[j];
        /* i, f, o = sigmoid, g = tanh, each on its own H-float chunk per sentence (PyTorch
         * applies sigmoid_ to each chunk view; its 16-wide blocks restart at every chunk) */
        for (int s = 0; s < na; s++) {
            const float *p = v->pre + (size_t)s * G;
            float *a = gt + (size_t)s * G;
            attn_sigmoid_forward(a, p, (size_t)H);
            attn_sigmoid_forward(a + H, p + H, (size_t)H);
            attn_tanh_forward(a + 2 * H, p + 2 * H, (size_t)H);
            attn_sigmoid_forward(a + 3 * H, p + 3 * H, (size_t)H);
        }
        /* c = (f*c) + (i*g) with two rounded products; h = o * tanh(c) */
        for (int s = 0; s < na; s++)
            cell_forward(c_next + (size_t)s * H, gt + (size_t)s * G, c_prev + (size_t)s * H, H);
        attn_tanh_forward(tc, c_next, nH);
        for (int s = 0; s < na; s++)
            mul_rows(h_next + (size_t)s * H, gt + (size_t)s * G + 3 * H, tc + (size_t)s * H, H);
        /* finished slots: zero states (the weight-gradient GEMMs read every row of h) */
        memset(h_next + nH, 0, (BH - nH) * sizeof(float));
        memset(c_next + nH, 0, (BH - nH) * sizeof(float));
    }

    /* h_last[i] = h after word lengths[i]; logits = h_last.head_w^T + head_b */
    for (int s = 0; s < B; s++)
        memcpy(v->h_last + (size_t)order[s] * H, v->h + ((size_t)b->lengths[order[s]] * B + s) * H,
               (size_t)H * sizeof(float));
    attn_linear_forward(logits, v->h_last, v->w.head_weight, v->w.head_bias, B, H, 1, ATTN_OP_HEAD);
    return ATTN_OK;
}

/* ---- backward (BPTT) ---------------------------------------------------------------------- */

static void lstm_backward(attn_model *m, const attn_batch *b, const float *d_logits) {
    lstm_impl *v = m->impl;
    const int B = v->B, T = v->T, E = m->cfg.embed_dim, H = m->cfg.hidden_size;
    const size_t BH = (size_t)B * H, G = 4 * (size_t)H;

    /* head: logits = h_last.w^T + b */
    memset(v->d_h_last, 0, BH * sizeof(float));
    attn_linear_backward(v->d_h_last, v->d.head_weight, v->d.head_bias, d_logits, v->h_last,
                         v->w.head_weight, B, H, 1, ATTN_OP_HEAD);

    /* d_h = d loss / d h[t+1], d_c = d loss / d c[t+1] (through c[t+2] = f*c[t+1] + ...),
     * for the active slots; a slot enters (zero state plus d_h_last) at its last word. */
    const int *order = v->slots, *n_active = v->slots + B;
    for (int t = T - 1; t >= 0; t--) {
        const int na = n_active[t], na_later = t + 1 < T ? n_active[t + 1] : 0;
        const float *gt = v->gates + (size_t)t * B * G, *tc = v->tanh_c + (size_t)t * BH;
        const float *c_prev = v->c + (size_t)t * BH;
        float *d_pre_t = v->d_pre + (size_t)t * B * G;
        memset(v->d_h + (size_t)na_later * H, 0, (size_t)(na - na_later) * H * sizeof(float));
        memset(v->d_c + (size_t)na_later * H, 0, (size_t)(na - na_later) * H * sizeof(float));
        for (int s = 0; s < na; s++) {
            const size_t k = (size_t)s * H;
            cell_backward(d_pre_t + (size_t)s * G, v->d_c + k, v->d_h + k,
                          s >= na_later ? v->d_h_last + (size_t)order[s] * H : NULL,
                          gt + (size_t)s * G, tc + k, c_prev + k, H);
        }
        memset(d_pre_t + (size_t)na * G, 0, (size_t)(B - na) * G * sizeof(float));
        /* pre = h[t].W_hh^T + ...: d h[t] = d_pre.W_hh (written) */
        if (t > 0)
            attn_sgemm(ATTN_OP_RECURRENT, true, false, false, na, H, 4 * H, 1.0f, d_pre_t,
                       v->w.weight_hh, 0.0f, v->d_h);
    }

    /* Weight gradients over all steps at once: d_W_hh += d_pre^T.h[0..T-1] (stacked h_{t-1}),
     * d_W_ih += d_pre^T.x, d_x = d_pre.W_ih. */
    attn_linear_backward(NULL, v->d.weight_hh, v->d.bias_hh, v->d_pre, v->h, v->w.weight_hh, T * B,
                         H, 4 * H, ATTN_OP_RECURRENT);
    memset(v->d_x, 0, (size_t)T * B * E * sizeof(float));
    attn_linear_backward(v->d_x, v->d.weight_ih, v->d.bias_ih, v->d_pre, v->x, v->w.weight_ih,
                         T * B, E, 4 * H, ATTN_OP_INPUT);
    for (int t = 0; t < T; t++)
        for (int s = 0; s < B; s++) {
            int id = word_at(b, order[s], t);
            attn_embedding_backward(v->d.embedding, v->d_x + ((size_t)t * B + s) * E, &id, 1, E);
        }
}

const attn_model_vt attn_lstm_vt = {"lstm",       lstm_specs,    lstm_setup,  lstm_set_grads,
                                    lstm_forward, lstm_backward, lstm_destroy};

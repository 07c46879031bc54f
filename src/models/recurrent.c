/* recurrent.c -- the core every recurrent classifier shares: embedding -> n_layers stacked
 * recurrent layers (PyTorch num_layers: layer l > 0 reads layer l-1's h at every step; its
 * tensors are "<cell>.weight_ih_l<l>" ...) -> the top layer's h after each sentence's last word
 * -> Linear(H, 1). The cell files (rnn.c, lstm.c) add only
 * their spec names and one time step forward/backward (attn_recurrent_cell).
 *
 * The spec table and the named views are in recurrent_specs.c, the state (rec_impl) in
 * recurrent_internal.h, the looking-inside entry points (attn.h) in recurrent_inspect.c.
 *
 * Shapes: [T, B, ...] time-major slabs in one activation arena; G gate blocks of H per unit.
 * Numerics follow ATen RNN.cpp (docs/numerics.md): one GEMM for all steps' input projections
 * xw = x.W_ih^T + b_ih, then per step hw = h.W_hh^T + b_hh (b_hh pre-filled) handed to the
 * cell, so batch-1 logits match PyTorch bit for bit.
 *
 * Padding, one mechanism for every cell: sentences sit in slots; step t runs the hh GEMM on
 * slots 0..rows[t]-1 and the cell only on those slots whose sentence has more than t words.
 * Finished slots hold zero states and zero gradients; the head reads h after word lengths[b].
 * The cell picks the slot table (attn_recurrent_cell.packed): packed = sorted longest first as
 * pack_padded_sequence orders them, rows[t] = the active slots, so padding steps cost nothing;
 * unpacked = batch order, rows[t] = B, the GEMM geometry of tools/attn_models.py's nn.RNN over
 * the padded batch (its batched logits equal PyTorch's bit for bit). A sentence's own
 * arithmetic is the same either way (batch-1 logits are unchanged), but OpenBLAS rounds a GEMM
 * row by its position and the row count, so the two tables round differently in a padded
 * batch, and each cell keeps the table its results were made with (measured: either table
 * alone changes the other model's batch-32 gradients and training). */
#include "recurrent_internal.h"

#include "attn_kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- activation arena (rec_impl: recurrent_internal.h) ----------------------------------- */

/* Lays the arena out for (B, T); with base NULL it only counts. Returns the floats needed. */
static size_t rec_layout(rec_impl *v, float *base, int n_layers, int B, int T, int E, int H) {
    const attn_recurrent_cell *c = v->cell;
    const size_t TB = (size_t)T * B, BH = (size_t)B * H, GH = (size_t)c->G * H;
    /* steps kept: all T (+ h[0]) for a backward, else the rolling buffers (rec_impl.infer);
     * the backward's buffers get nothing then */
    const size_t TS = v->infer ? 2 * (size_t)B : TB + B, TA = v->infer ? (size_t)B : TB;
    const size_t TD = v->infer ? 0 : TB;
    v->roll_h = v->infer ? n_layers - 1 : -1;
    size_t u = 0;
    v->x = attn_arena_carve(base, &u, TB * E);
    for (int l = 0; l < n_layers; l++) {
        rec_layer *L = &v->layer[l];
        L->xw = attn_arena_carve(base, &u, TB * GH);
        L->h = attn_arena_carve(base, &u, (l == v->roll_h ? TS : TB + B) * H);
        L->state = attn_arena_carve(base, &u, TS * c->S * H);
        L->saved = attn_arena_carve(base, &u, TA * c->A * H);
        L->d_xw = attn_arena_carve(base, &u, TD * GH);
        L->d_hw = c->split_hh ? attn_arena_carve(base, &u, TD * GH) : L->d_xw;
    }
    v->hw = attn_arena_carve(base, &u, (size_t)B * GH);
    v->h_last = attn_arena_carve(base, &u, BH);
    const size_t DBH = v->infer ? 0 : BH;
    v->d_h = attn_arena_carve(base, &u, DBH);
    v->d_h_prev = attn_arena_carve(base, &u, DBH);
    v->d_state = attn_arena_carve(base, &u, DBH * c->S);
    v->d_h_last = attn_arena_carve(base, &u, DBH);
    v->d_x = attn_arena_carve(base, &u, TD * E);
    for (int i = 0; i < 2; i++) v->d_mid[i] = attn_arena_carve(base, &u, n_layers > 1 ? TD * H : 0);
    return u;
}

/* Reserves and carves the arena and the slot table for (B, T). */
static attn_status rec_reserve(attn_model *m, int B, int T, attn_error *err) {
    rec_impl *v = m->impl;
    const int L = m->cfg.n_layers, E = m->cfg.embed_dim, H = m->cfg.hidden_size;
    attn_status st =
        attn_arena_reserve(&v->arena, &v->cap, rec_layout(v, NULL, L, B, T, E, H), err);
    if (st == ATTN_OK && 2 * B + T > v->slot_cap) {
        int *ints = malloc((size_t)(2 * B + T) * sizeof *ints);
        if (!ints)
            return attn_errorf(err, ATTN_ERR_NOMEM, "%s: out of memory for a batch of %d",
                               v->cell->name, B);
        free(v->slot_ints);
        v->slot_ints = ints;
        v->slot_cap = 2 * B + T;
    }
    if (st != ATTN_OK) return st;
    rec_layout(v, v->arena, L, B, T, E, H);
    v->order = v->slot_ints;
    v->slot_len = v->slot_ints + B;
    v->rows = v->slot_ints + 2 * B;
    return ATTN_OK;
}

attn_status attn_recurrent_setup(attn_model *m, const attn_recurrent_cell *cell, attn_error *err) {
    rec_impl *v = calloc(1, sizeof *v);
    if (!v) return attn_errorf(err, ATTN_ERR_NOMEM, "%s: out of memory for views", cell->name);
    m->impl = v;
    v->cell = cell;
    attn_recurrent_bind(m, m->params, cell->name, &v->w);
    return ATTN_OK;
}

void attn_recurrent_set_grads(attn_model *m) {
    rec_impl *v = m->impl;
    attn_recurrent_bind(m, m->grads, v->cell->name, &v->d);
}

void attn_recurrent_destroy(attn_model *m) {
    rec_impl *v = m->impl;
    free(v->arena);
    free(v->slot_ints);
    free(v);
    m->impl = NULL;
}

/* Word id at step t of sentence i; steps past the sentence read [PAD]. */
static int word_at(const attn_batch *b, int i, int t) {
    return t < b->lengths[i] ? b->ids[(size_t)i * b->T + t] : ATTN_PAD_ID;
}

/* The slot tables. Packed: order = counting sort by length, longest first, stable, and
 * rows[t] = #{lengths > t}, so the GEMM rows are exactly the active slots. Unpacked: batch order
 * and rows[t] = B (the GEMM geometry of a plain nn.RNN over the padded batch). */
static void rec_schedule(rec_impl *v, const attn_batch *b) {
    int n = 0;
    if (v->cell->packed) {
        for (int len = b->T; len >= 1; len--) {
            for (int i = 0; i < b->B; i++)
                if (b->lengths[i] == len) v->order[n++] = i;
            v->rows[len - 1] = n;
        }
    } else {
        for (int i = 0; i < b->B; i++) v->order[i] = i;
        for (int t = 0; t < b->T; t++) v->rows[t] = b->B;
    }
    for (int s = 0; s < b->B; s++) v->slot_len[s] = b->lengths[v->order[s]];
}

/* Slot s runs the cell at step t: a GEMM row whose sentence has more than t words. */
static bool rec_active(const rec_impl *v, int t, int rows, int s) {
    return s < rows && v->slot_len[s] > t;
}

/* The next run of consecutive active slots at step t: moves *s to its first slot and returns
 * one past its last (returns *s = rows when there is none). Packed slots form one run. */
static int rec_run(const rec_impl *v, int t, int rows, int *s) {
    while (*s < rows && !rec_active(v, t, rows, *s)) (*s)++;
    int e = *s;
    while (rec_active(v, t, rows, e)) e++;
    return e;
}

/* The step's pointers for slots s0..s0+n-1 of layer l at step t (backward fields included). */
static attn_recurrent_step rec_step_at(const rec_impl *v, int l, int t, int s0, int n, int H) {
    const attn_recurrent_cell *c = v->cell;
    const rec_layer *L = &v->layer[l];
    const size_t B = (size_t)v->B, GH = (size_t)c->G * H, SH = (size_t)c->S * H;
    const size_t r = (size_t)t * B + s0, r1 = r + B; /* row of step t, of step t + 1 */
    /* the same rows in the rolling buffers (rec_impl.infer): half t % 2, the other half */
    const size_t q = (size_t)(t % 2) * B + s0, q1 = (size_t)((t + 1) % 2) * B + s0;
    const size_t rh = l == v->roll_h ? q : r, rh1 = l == v->roll_h ? q1 : r1;
    return (attn_recurrent_step){
        .n = n,
        .H = H,
        .xw = L->xw + r * GH,
        .hw = v->hw + (size_t)s0 * GH,
        .h_prev = L->h + rh * H,
        .state_prev = L->state + (v->infer ? q : r) * SH,
        .h = L->h + rh1 * H,
        .state = L->state + (v->infer ? q1 : r1) * SH,
        .saved = L->saved + (v->infer ? (size_t)s0 : r) * c->A * H,
        .d_h = v->d_h + (size_t)s0 * H,
        .d_state = v->d_state + (size_t)s0 * SH,
        .d_xw = L->d_xw + r * GH,
        .d_hw = L->d_hw + r * GH,
        .d_h_prev = v->d_h_prev + (size_t)s0 * H,
    };
}

/* ---- forward ------------------------------------------------------------------------------- */

/* out[rows, GH] = in[rows, K].w^T + bias, PyTorch's addmm, or without the bias: the BLAS adds
 * its accumulator to C once per k-block (c = acc * alpha + c, one rounding), so with a single
 * k-block (K <= ATTN_LINEAR_BIAS_AFTER_MAX_IN, the rule of the fused linears in sgemm.c) the
 * product alone followed by `+ bias` rounds exactly as the pre-filled product. Then the bias is
 * left to the cell (returned; the step's b_ih / b_hh), which adds it in the pass that reads the
 * product: no [rows, GH] pre-fill copy (the input projection's is the whole [T*B, GH] slab).
 * Returns NULL when the bias is in out. */
const float *attn_rec_project(float *out, const float *in, const float *w, const float *bias,
                              int rows, int K, int GH, attn_op tag) {
    if (bias && K <= ATTN_LINEAR_BIAS_AFTER_MAX_IN) {
        attn_matmul_nt(out, in, w, rows, GH, K, 0.0f, tag, ATTN_PASS_FORWARD);
        return bias;
    }
    attn_linear_forward(out, in, w, bias, rows, K, GH, tag);
    return NULL;
}

/* Step t of layer l: hw = h[t].W_hh^T + b_hh on the GEMM rows, then the cell on each run of
 * slots inside their sentence. Finished slots get zero states: their h is never read (the
 * head took it at the last word) and the weight-gradient GEMMs meet it with zero gradients. */
void attn_rec_step_forward(rec_impl *v, int l, int t, int H) {
    const attn_recurrent_cell *c = v->cell;
    const int B = v->B, rows = v->rows[t];
    const size_t GH = (size_t)c->G * H, SH = (size_t)c->S * H;
    const attn_recurrent_step all = rec_step_at(v, l, t, 0, B, H);
    const float *b_hh =
        attn_rec_project(v->hw, all.h_prev, v->w.layer[l].weight_hh, v->w.layer[l].bias_hh, rows, H,
                         (int)GH, ATTN_OP_RECURRENT);
    for (int s = 0, e; (e = rec_run(v, t, rows, &s)) > s; s = e) {
        attn_recurrent_step run = rec_step_at(v, l, t, s, e - s, H);
        run.b_hh = b_hh;
        run.b_ih = v->xw_bias[l];
        c->step_forward(&run);
    }
    /* rolling h: the sentences whose last word was step t leave their h in h_last now */
    if (l == v->roll_h)
        for (int s = 0; s < rows; s++)
            if (v->slot_len[s] - 1 == t)
                memcpy(v->h_last + (size_t)v->order[s] * H, all.h + (size_t)s * H,
                       (size_t)H * sizeof(float));
    /* one memset per run of consecutive finished slots (packed: the one run rows..B-1); not for
     * the rolling buffers of a forward without backward: there no gradient GEMM meets them, the
     * cell skips them and a product row of one (unpacked) is discarded, each row of a product
     * reading only its own row of h */
    for (int s = l == v->roll_h ? B : 0; s < B;) {
        if (rec_active(v, t, rows, s)) {
            s++;
            continue;
        }
        int e = s + 1;
        while (e < B && !rec_active(v, t, rows, e)) e++;
        memset(all.h + (size_t)s * H, 0, (size_t)(e - s) * H * sizeof(float));
        memset(all.state + (size_t)s * SH, 0, (size_t)(e - s) * SH * sizeof(float));
        s = e;
    }
}

/* Layer l over all steps; in [T, B, I] is the layer's input (x, or the layer below's h). */
static void rec_layer_forward(rec_impl *v, int l, const float *in, int I, int H) {
    const rec_layer *L = &v->layer[l];
    const int B = v->B, T = v->T, GH = v->cell->G * H;
    /* xw[T*B, G*H] = in.W_ih^T + b_ih: all input projections in one GEMM (ATen RNN.cpp), b_ih
     * left to the cells where attn_rec_project allows it */
    v->xw_bias[l] = attn_rec_project(L->xw, in, v->w.layer[l].weight_ih, v->w.layer[l].bias_ih,
                                     T * B, I, GH, ATTN_OP_INPUT);
    memset(L->h, 0, (size_t)B * H * sizeof(float));
    memset(L->state, 0, (size_t)B * v->cell->S * H * sizeof(float));
    for (int t = 0; t < T; t++) attn_rec_step_forward(v, l, t, H);
}

/* Reserves the arena for b (infer: the layout without a backward's buffers, rec_impl.infer)
 * and makes its slot table; x is then filled by the caller. */
attn_status attn_rec_begin(attn_model *m, const attn_batch *b, bool infer, attn_error *err) {
    rec_impl *v = m->impl;
    v->B = v->T = 0; /* nothing to back-propagate until this forward has succeeded */
    v->infer = infer;
    attn_status st = rec_reserve(m, b->B, b->T, err);
    if (st != ATTN_OK) return st;
    v->B = b->B;
    v->T = b->T;
    rec_schedule(v, b);
    return ATTN_OK;
}

/* The layers over v->x, then the head on h after each sentence's last word. */
void attn_rec_finish(attn_model *m, const attn_batch *b, float *logits) {
    rec_impl *v = m->impl;
    const int B = b->B, E = m->cfg.embed_dim, H = m->cfg.hidden_size;
    const int top = m->cfg.n_layers - 1;
    const int *order = v->order;
    for (int l = 0; l <= top; l++)
        rec_layer_forward(v, l, l == 0 ? v->x : v->layer[l - 1].h + (size_t)B * H, l == 0 ? E : H,
                          H);

    /* h_last[i] = h after word lengths[i] (rolling h: copied by the steps); logits =
     * h_last.head_w^T + head_b */
    for (int s = 0; s < B && v->roll_h < 0; s++)
        memcpy(v->h_last + (size_t)order[s] * H,
               v->layer[top].h + ((size_t)b->lengths[order[s]] * B + s) * H,
               (size_t)H * sizeof(float));
    attn_linear_forward(logits, v->h_last, v->w.head_weight, v->w.head_bias, B, H, 1, ATTN_OP_HEAD);
}

/* logits[B]. Final state rule (tools/attn_models.py): the output is taken at step
 * lengths[b]-1 of the last layer; later (padding) steps never reach the loss. infer: keep
 * nothing for a backward (rec_impl.infer). */
static attn_status rec_forward(attn_model *m, const attn_batch *b, float *logits, bool infer,
                               attn_error *err) {
    rec_impl *v = m->impl;
    const int B = b->B, T = b->T, E = m->cfg.embed_dim;
    attn_status st = attn_rec_begin(m, b, infer, err);
    if (st != ATTN_OK) return st;
    /* x[t, s, :] = embedding[ids[order[s], t], :] (time-major) */
    for (int t = 0; t < T; t++)
        for (int s = 0; s < B; s++) {
            int id = word_at(b, v->order[s], t);
            attn_embedding_forward(v->x + ((size_t)t * B + s) * E, &id, v->w.embedding, 1, E);
        }
    attn_rec_finish(m, b, logits);
    if (infer) v->B = v->T = 0; /* the arena holds nothing to back-propagate */
    return ATTN_OK;
}

attn_status attn_recurrent_forward(attn_model *m, const attn_batch *b, float *logits,
                                   attn_error *err) {
    return rec_forward(m, b, logits, false, err);
}

attn_status attn_recurrent_forward_infer(attn_model *m, const attn_batch *b, float *logits,
                                         attn_error *err) {
    return rec_forward(m, b, logits, true, err);
}

/* ---- backward (BPTT) ----------------------------------------------------------------------- */

/* Step t of layer l backward. In: d_h = d loss / d h[t+1] and d_state = d loss / d state[t+1]
 * on the GEMM rows of step t+1. Slots whose last word is t enter here: zero state gradients
 * plus d_h_last (top layer), or, for a layer below, plus d_out[t] (d loss / d h[t+1] from the
 * layer above, [T, B, H]; NULL for the top layer). Out: d_xw[t], d_hw[t] (zero rows for
 * finished slots), d_state = d loss / d state[t] and, unless t = 0, d_h = d loss / d h[t]. */
static void rec_step_backward(rec_impl *v, int l, int t, int H, const float *d_out) {
    const attn_recurrent_cell *c = v->cell;
    const int B = v->B, rows = v->rows[t];
    const size_t GH = (size_t)c->G * H, SH = (size_t)c->S * H;
    const attn_recurrent_step all = rec_step_at(v, l, t, 0, B, H);
    for (int s = 0; s < rows; s++)
        if (v->slot_len[s] - 1 == t) { /* enters: h[t+1] fed the head only */
            memset(v->d_h + (size_t)s * H, 0, (size_t)H * sizeof(float));
            memset(v->d_state + (size_t)s * SH, 0, SH * sizeof(float));
            if (!d_out)
                for (int j = 0; j < H; j++)
                    v->d_h[(size_t)s * H + j] += v->d_h_last[(size_t)v->order[s] * H + j];
        }
    if (d_out) /* h[t+1] also fed the layer above at step t */
        for (size_t j = 0; j < (size_t)rows * H; j++) v->d_h[j] += d_out[(size_t)t * B * H + j];
    memset(v->d_h_prev, 0, (size_t)rows * H * sizeof(float));
    for (int s = 0, e; (e = rec_run(v, t, rows, &s)) > s; s = e) {
        const attn_recurrent_step run = rec_step_at(v, l, t, s, e - s, H);
        c->step_backward(&run);
    }
    for (int s = 0; s < B; s++)
        if (!rec_active(v, t, rows, s)) {
            memset(all.d_xw + (size_t)s * GH, 0, GH * sizeof(float));
            if (c->split_hh) memset(all.d_hw + (size_t)s * GH, 0, GH * sizeof(float));
        }
    /* hw = h[t].W_hh^T + ...: d h[t] += d_hw.W_hh (h[0] = 0 is no parameter: skipped) */
    if (t > 0)
        attn_matmul_nn(v->d_h_prev, all.d_hw, v->w.layer[l].weight_hh, rows, H, (int)GH, 1.0f,
                       ATTN_OP_RECURRENT, ATTN_PASS_BACKWARD);
    float *swap = v->d_h;
    v->d_h = v->d_h_prev;
    v->d_h_prev = swap;
}

/* Layer l backward over all steps, then its weight gradients in three GEMMs over all T*B rows:
 * d_W_hh += d_hw^T.h[0..T-1] (stacked h_{t-1}), d_W_ih += d_xw^T.in, d_in += d_xw.W_ih. */
static void rec_layer_backward(rec_impl *v, int l, const float *in, int I, int H, float *d_in,
                               const float *d_out) {
    const rec_layer *L = &v->layer[l];
    const attn_recurrent_layer_tensors *w = &v->w.layer[l], *d = &v->d.layer[l];
    const int B = v->B, T = v->T, GH = v->cell->G * H;
    for (int t = T - 1; t >= 0; t--) rec_step_backward(v, l, t, H, d_out);
    attn_linear_backward(NULL, d->weight_hh, d->bias_hh, L->d_hw, L->h, w->weight_hh, T * B, H, GH,
                         ATTN_OP_RECURRENT);
    attn_linear_backward(d_in, d->weight_ih, d->bias_ih, L->d_xw, in, w->weight_ih, T * B, I, GH,
                         ATTN_OP_INPUT);
}

void attn_recurrent_backward(attn_model *m, const attn_batch *b, const float *d_logits) {
    rec_impl *v = m->impl;
    const int B = v->B, T = v->T, E = m->cfg.embed_dim, H = m->cfg.hidden_size;
    const int *order = v->order;

    /* head: logits = h_last.w^T + b */
    memset(v->d_h_last, 0, (size_t)B * H * sizeof(float));
    attn_linear_backward(v->d_h_last, v->d.head_weight, v->d.head_bias, d_logits, v->h_last,
                         v->w.head_weight, B, H, 1, ATTN_OP_HEAD);

    /* top layer down: layer l > 0 read the layer below's h[1..T] as its input, so its d_in is
     * the d_out (d loss / d h[1..T]) of layer l - 1 */
    const size_t TBH = (size_t)T * B * H;
    const float *d_out = NULL;
    for (int l = m->cfg.n_layers - 1; l >= 0; l--) {
        float *d_in = l == 0 ? v->d_x : v->d_mid[l % 2];
        memset(d_in, 0, (l == 0 ? (size_t)T * B * E : TBH) * sizeof(float));
        const float *in = l == 0 ? v->x : v->layer[l - 1].h + (size_t)B * H;
        rec_layer_backward(v, l, in, l == 0 ? E : H, H, d_in, d_out);
        d_out = d_in;
    }

    /* embedding: d_table[ids] += d_x */
    for (int t = 0; t < T; t++)
        for (int s = 0; s < B; s++) {
            int id = word_at(b, order[s], t);
            attn_embedding_backward(v->d.embedding, v->d_x + ((size_t)t * B + s) * E, &id, 1, E);
        }
}

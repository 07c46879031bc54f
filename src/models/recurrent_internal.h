/* recurrent_internal.h -- the recurrent core's state (src/models/recurrent.c) and the forward
 * pieces the looking-inside entry points (recurrent_inspect.c) reuse. Internal to src/models. */
#ifndef ATTN_RECURRENT_INTERNAL_H
#define ATTN_RECURRENT_INTERNAL_H

#include "model_internal.h"

/* One layer's time-indexed slabs. */
typedef struct rec_layer {
    float *xw;    /* [T, B, G*H] x.W_ih^T + b_ih for all steps (x: the layer's input) */
    float *h;     /* [T+1, B, H] hidden states, h[0] = 0; finished slots hold 0 */
    float *state; /* [T+1, B, S*H] the cell's other state (LSTM c), state[0] = 0 */
    float *saved; /* [T, B, A*H] what the cell's backward reads */
    float *d_xw;  /* [T, B, G*H] d loss / d xw */
    float *d_hw;  /* [T, B, G*H] d loss / d hw; == d_xw unless the cell has split_hh */
} rec_layer;

typedef struct rec_impl {
    const attn_recurrent_cell *cell;
    attn_recurrent_tensors w; /* parameters (views into m->params) */
    attn_recurrent_tensors d; /* gradients (views into m->grads, set by set_grads) */
    /* activation arena, carved for the last forward's (B, T) */
    float *arena;
    size_t cap;
    int B, T;
    /* the forward keeps nothing for a backward (attn_recurrent_forward_infer): saved is one
     * step's [B, A*H], state two steps' [2, B, S*H] and the top layer's h two steps' [2, B, H]
     * (step t in half t % 2), each sentence's last h copied to h_last as its slot finishes; the
     * other layers keep their h slab (the layer above reads it in one GEMM). Only the buffers
     * change, not one operation, so the logits are the same bits. */
    bool infer;
    int roll_h; /* the layer whose h rolls (the top layer when infer, else -1) */
    /* slots (rec_schedule): sentence order[s] sits in slot s; step t runs the hh GEMM on
     * slots 0..rows[t]-1 and the cell on those of them still inside their sentence */
    int *slot_ints; /* [2B + T] the three tables below */
    int slot_cap;   /* ints allocated in slot_ints */
    int *order;     /* [B] sentence in slot s */
    int *slot_len;  /* [B] its length in words */
    int *rows;      /* [T] GEMM rows of step t */
    float *x;       /* [T, B, E] word embeddings (slot order) */
    rec_layer layer[ATTN_RECURRENT_MAX_LAYERS];
    /* per layer: b_ih when its xw slab was computed without it (rec_project), else NULL */
    const float *xw_bias[ATTN_RECURRENT_MAX_LAYERS];
    float *hw;     /* [B, G*H] one step's h.W_hh^T + b_hh (scratch) */
    float *h_last; /* [B, H] h after each sentence's last word (sentence order) */
    /* backward scratch */
    float *d_h;      /* [B, H] d loss / d h[t+1] */
    float *d_h_prev; /* [B, H] d loss / d h[t] (swapped with d_h after each step) */
    float *d_state;  /* [B, S*H] d loss / d state[t+1] */
    float *d_h_last; /* [B, H] (sentence order) */
    float *d_x;      /* [T, B, E] d loss / d x */
    float *d_mid[2]; /* [T, B, H] d loss / d h[1..T] of the layer below the one being back-
                      * propagated (alternating; only with more than one layer) */
} rec_impl;

/* The arena reserved and the slots scheduled for b; nothing to back-propagate until it succeeds.
 * infer: keep nothing for a backward (rec_impl.infer). */
attn_status attn_rec_begin(attn_model *m, const attn_batch *b, bool infer, attn_error *err);
/* The layers over v->x, then the head on h after each sentence's last word: logits [B]. */
void attn_rec_finish(attn_model *m, const attn_batch *b, float *logits);
/* out[rows, GH] = in[rows, K].w^T (+ bias); returns the bias left for the cell to add, or NULL
 * when it is in out (recurrent.c says when each rounds as PyTorch's addmm). */
const float *attn_rec_project(float *out, const float *in, const float *w, const float *bias,
                              int rows, int K, int GH, attn_op tag);
/* Step t of layer l: hw = h[t].W_hh^T + b_hh, then the cell on the slots inside their sentence. */
void attn_rec_step_forward(rec_impl *v, int l, int t, int H);

#endif

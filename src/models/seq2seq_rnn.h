/* seq2seq_rnn.h -- the run state of seq2seq-gru and seq2seq-attn shared by seq2seq_rnn.c (specs,
 * encoder, decoder step, forward, generation, maps) and seq2seq_rnn_backward.c (BPTT). */
#ifndef ATTN_SEQ2SEQ_RNN_H
#define ATTN_SEQ2SEQ_RNN_H

#include "seq2seq_internal.h"

/* ---- tensors -------------------------------------------------------------------------------- */

typedef struct gru_tensors {
    float *w_ih, *w_hh, *b_ih, *b_hh; /* [3H, I], [3H, H], [3H], [3H] */
} gru_tensors;

typedef struct rnn_tensors {
    float *src_emb, *tgt_emb; /* [Vs, E], [Vt, E] */
    gru_tensors enc[2];       /* forward, reverse (bidirectional) */
    gru_tensors dec;          /* GRUCell(X, H) */
    float *q_w;               /* [A, H] attention.query (no bias) */
    float *k_w, *k_b;         /* [A, He], [A] attention.key */
    float *v_w;               /* [1, A] attention.energy (no bias) */
    float *head_w, *head_b;   /* [Vt, O], [Vt] */
} rnn_tensors;

/* The sizes every function needs. */
typedef struct rnn_dims {
    bool attn;
    int E, H, ND, He, A, X, O, Vt; /* ND directions, He = ND*H, X decoder input, O head input */
} rnn_dims;

/* ---- run state ------------------------------------------------------------------------------ */

typedef struct rnn_impl {
    rnn_dims d;
    rnn_tensors w, g; /* parameters, gradients */
    int B, S, T;      /* the last forward: pairs, longest source, longest decoder input */
    int *ints, ints_cap;
    int *order, *slen, *tlen, *rows, *toks; /* [B] pair of slot, lengths; [S] rows; [T, B] */
    float *arena;
    size_t cap;
    /* encoder, time-major in slot order */
    float *xs;                 /* [S, B, E] source embeddings */
    float *exw[2], *esaved[2]; /* [S, B, 3H], [S, B, 4H] per direction */
    float *eh[2]; /* [S+1, B, H]: forward [t+1] after word t ([0] = 0); reverse [t] ([S] = 0) */
    float *hw;    /* [B, 3H] one step's hh product (scratch) */
    float *enc;   /* [B, S, He] encoder states, pair-major (0 past the source) */
    float *keys;  /* [B, S, A] key(enc) */
    /* decoder, time-major in slot order */
    float *s;      /* [T+1, B, H] decoder states, s[0] = the encoder's final forward state */
    float *dx;     /* [T, B, X] GRUCell inputs: embedding (| context) */
    float *dxw;    /* [T, B, 3H] */
    float *dsaved; /* [T, B, 4H] */
    float *q;      /* [T, B, A] query(s_{t-1}) */
    float *e;      /* [T, B, S, A] tanh(keys + q) */
    float *alpha;  /* [T, B, S] the alignment (0 past the source) */
    float *o;      /* [T, B, O] head inputs: s_t (| context) */
    float *lg;     /* [B, Vt] one step's logits (slot order) */
    /* backward */
    float *d_lg, *d_o, *d_dx, *d_q; /* [B, Vt], [B, O], [B, X], [B, A] */
    float *d_s, *d_sp;              /* [B, H] d/d s[t+1], d/d s[t] */
    float *d_dxw, *d_dhw;           /* [T, B, 3H] */
    float *d_alpha, *d_pre;         /* [2S] d alpha then d score, [S, A] d (keys + q) */
    float *d_enc, *d_keys;          /* [B, S, He], [B, S, A] */
    float *d_exw[2], *d_ehw[2];     /* [S, B, 3H] */
    float *d_h, *d_hp;              /* [B, H] encoder carries */
    float *d_xs;                    /* [S, B, E] */
} rnn_impl;

/* The GRU cell's step on n rows (gru.c's attn_gru_cell): forward and backward. */
void attn_s2s_rnn_cell_forward(const float *xw, float *hw, const float *h_prev, float *h,
                               float *saved, int n, int H);
void attn_s2s_rnn_cell_backward(const float *d_h, float *d_xw, float *d_hw, float *d_h_prev,
                                const float *h_prev, const float *saved, int n, int H);
/* Where encoder direction k (0 forward, 1 reverse) reads h_prev and writes h at word t. */
float *attn_s2s_rnn_eh_prev(const rnn_impl *v, int k, int t);
float *attn_s2s_rnn_eh_out(const rnn_impl *v, int k, int t);
/* The gradients of the last forward's batch from d_logits (seq2seq_rnn_backward.c). */
void attn_s2s_rnn_backward(attn_seq2seq *m, const attn_s2s_batch *b, const float *d_logits);

#endif /* ATTN_SEQ2SEQ_RNN_H */

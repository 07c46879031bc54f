/* seq2seq_transformer.h -- the run state of "seq2seq-transformer" shared by its two files:
 * seq2seq_transformer.c (parameters, positions, the teacher-forced forward and backward) and
 * seq2seq_transformer_decode.c (greedy decoding with and without the KV cache, the attention
 * maps). Internal to libattn. */
#ifndef ATTN_SEQ2SEQ_TRANSFORMER_H
#define ATTN_SEQ2SEQ_TRANSFORMER_H

#include "decoder_layer.h"
#include "encoder_layer.h"
#include "seq2seq_internal.h"

#define S2S_MAX_L ATTN_TRANSFORMER_MAX_LAYERS

typedef struct s2s_tensors {
    float *src_pos, *tgt_pos;            /* [Ps, D], [Pt, D] learned positions, else NULL */
    float *src_emb, *tgt_emb;            /* [Vs, D], [Vt, D] */
    float *enc_norm_w, *enc_norm_b;      /* [D] */
    float *dec_norm_w, *dec_norm_b;      /* [D] */
    float *head_w, *head_b;              /* [Vt, D], [Vt] */
    attn_encoder_weights enc[S2S_MAX_L]; /* encoder layers */
    attn_decoder_weights dec[S2S_MAX_L]; /* decoder layers */
} s2s_tensors;

typedef struct s2s_impl {
    s2s_tensors w, d;             /* parameters, gradients */
    float *src_table, *tgt_table; /* [P, D] fixed sinusoid tables (pos sinusoidal) */
    float *rope;                  /* pos rope: [max(max_src_len, max_tgt_len), HS] rotary table */
    attn_model_config enc_cfg;    /* what the encoder layer functions read */
    bool unmasked; /* attn_seq2seq_set_causal_mask(m, false): no causal mask (forward only) */
    /* the last forward's batch */
    int B, *srows, *trows, rows_cap; /* [B+1] packed rows of sources and targets */
    attn_encoder_rows erows;
    attn_decoder_rows drows;
    /* activation arena */
    float *arena;
    size_t cap;
    float *xs0, *xt0; /* [Ns, D], [Nt, D] embeddings + positions */
    attn_encoder_acts eacts[S2S_MAX_L];
    attn_encoder_scratch escratch;
    float *mem, *mem_mean, *mem_rstd; /* [Ns, D] encoder.norm output, [Ns] */
    attn_decoder_acts dacts[S2S_MAX_L];
    attn_decoder_scratch dscratch;
    float *dec_out, *dn_mean, *dn_rstd;  /* [Nt, D] decoder.norm output, [Nt] */
    float *d_enc[S2S_MAX_L + 1], *d_mem; /* [Ns, D] */
    float *d_dec[S2S_MAX_L + 1], *d_out; /* [Nt, D] */
} s2s_impl;

/* Packed rows of batch b and the arena for them (v->eacts, v->dacts, ... point into it). */
attn_status attn_s2s_tf_prepare(s2s_impl *v, const attn_seq2seq_config *c, const attn_s2s_batch *b,
                                attn_error *err);
/* v->mem = the memory of the prepared batch b (embeddings, encoder layers, encoder.norm). */
void attn_s2s_tf_encode(s2s_impl *v, const attn_seq2seq_config *c, const attn_s2s_batch *b);
/* x[D] = tgt_embedding[id] + the target position row of p (learned or sinusoidal; else the
 * embedding alone: rope and alibi act in the attention). */
void attn_s2s_tf_embed_target(float *x, const s2s_impl *v, const attn_seq2seq_config *c, int id,
                              int p);
/* The vtable's forward, decode and maps (attn_s2s_vt). */
attn_status attn_s2s_tf_forward(attn_seq2seq *m, const attn_s2s_batch *b, float *logits,
                                attn_error *err);
attn_status attn_s2s_tf_decode(attn_seq2seq *m, const int *src, int n_src, int max_out, bool cache,
                               const attn_s2s_chooser *ch, int *out, int *n_out, float *step_logits,
                               int *n_steps, attn_error *err);
/* The vtable's decode_batch: n sources with the KV cache, finished rows leaving the step. */
attn_status attn_s2s_tf_decode_batch(attn_seq2seq *m, int n, const int *const *src,
                                     const int *n_src, int max_out, const attn_s2s_chooser *ch,
                                     int *out, int *n_out, float *step_logits, int *n_steps,
                                     attn_error *err);
attn_status attn_s2s_tf_maps(attn_seq2seq *m, const int *src, int n_src, const int *dec_in,
                             int n_dec, float *cross, float *self, attn_error *err);

#endif /* ATTN_SEQ2SEQ_TRANSFORMER_H */

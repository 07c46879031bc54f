/* attn_encoder.h -- the Transformer's encoder stack as a library a C program embeds
 * (src/models/encoder_api.c): run L layers of a model on vectors you give, with a key-padding
 * mask, and read every layer's output and attention, bit-identical to PyTorch 1.13's
 * nn.TransformerEncoder(...)(x, src_key_padding_mask=mask) on the same weights.
 *
 *     attn_model *m;                                   // e.g. attn_weights_load_json
 *     attn_encoder *enc;
 *     attn_encoder_create(m, 16, &enc, &err);          // room for up to 16 positions
 *     float x[5 * D];                                  // 5 positions of width D, row-major
 *     unsigned char pad[5] = {0, 0, 0, 1, 1};          // the last two are padding
 *     attn_encoder_run(enc, x, pad, 5, &err);
 *     const float *y = attn_encoder_output(enc);       // [5, D]
 *     const float *p = attn_encoder_attention(enc, 0); // [NH, 5, 5], layer 0
 *     attn_encoder_free(enc);
 *
 * Letters: T positions (1 .. max_positions), D width (embed_dim), NH heads, L layers. The input
 * is what the first layer reads: a classifier's input is its embedding plus positions
 * (attn_model_input after attn_model_forward gives the rows it builds). Positions inside the
 * attention (pos rope, alibi) are not supported here (ATTN_ERR_ARG). */
#ifndef ATTN_ENCODER_H
#define ATTN_ENCODER_H

#include "attn_model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct attn_encoder attn_encoder; /* opaque */

/* The encoder layers of Transformer m (borrowed: m must outlive the encoder and keep its
 * weights; the encoder reads them at each run), with buffers for up to max_positions
 * positions. ATTN_ERR_ARG for another architecture, rope/alibi positions or max_positions out
 * of 1..65536; ATTN_ERR_NOMEM. */
attn_status attn_encoder_create(attn_model *m, int max_positions, attn_encoder **out,
                                attn_error *err);
void attn_encoder_free(attn_encoder *e); /* NULL is fine */

int attn_encoder_width(const attn_encoder *e);    /* D */
int attn_encoder_n_layers(const attn_encoder *e); /* L */
int attn_encoder_n_heads(const attn_encoder *e);  /* NH */

/* Runs the L layers on x [T, D]. key_padding [T] (NULL: none): a nonzero entry marks a padding
 * position, which no query attends to (its own row is still computed, as PyTorch does); a
 * query whose keys are all padding gets NaN, as in PyTorch. ATTN_ERR_ARG for T out of
 * 1..max_positions or NULL x. */
attn_status attn_encoder_run(attn_encoder *e, const float *x, const unsigned char *key_padding,
                             int T, attn_error *err);

/* After a run, valid until the next: layer l's output [T, D] (l = 0 .. L-1); the encoder's
 * output [T, D] (the last layer's, through the final LayerNorm in a pre-norm model); layer l's
 * attention probabilities [NH, T, T] (head, query, key). NULL for l out of range or before a
 * run. */
const float *attn_encoder_layer_output(const attn_encoder *e, int layer);
const float *attn_encoder_output(const attn_encoder *e);
const float *attn_encoder_attention(const attn_encoder *e, int layer);

#ifdef __cplusplus
}
#endif
#endif /* ATTN_ENCODER_H */

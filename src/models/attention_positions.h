/* attention_positions.h -- the position schemes that act inside the attention, rope and alibi
 * (docs/transformer-positions.md), shared by the classifier's encoder layer and the seq2seq
 * model's layers (attention_positions.c). Internal to libattn.
 *
 *   rope:  each head's q and k row at position p, after the bias and the 1/sqrt(HS) scale,
 *          rotated in halves (GPT-NeoX): (x1, x2) -> (x1 c - x2 s, x2 c + x1 s) with
 *          c, s = cos, sin of p / 10000^(2i/HS), i < HS/2.
 *   alibi: each score gets -(slope_h * |i - j|) (Press et al. 2022's slopes), added in float to
 *          the rounded score before the softmax. */
#ifndef ATTN_ATTENTION_POSITIONS_H
#define ATTN_ATTENTION_POSITIONS_H

#include <stdbool.h>

/* A new [P, HS] table (malloc; NULL when out of memory): row p holds cos(p / 10000^(2i/HS)) in
 * column i < HS/2 and the sine in column HS/2 + i, each computed in double and rounded once
 * (tools/attn_models.rope_table). HS even. */
float *attn_rope_table(int P, int HS);

/* x[HS] in place: rotated by position p's angles (a row of attn_rope_table), or by their
 * transpose (backward: d_x from d_y). */
void attn_rope_row(float *x, const float *table, int p, int HS, bool transpose);

/* bias[NH, n_q, S] = -(slope_h * |i - j|): query row r at position q_pos + r, key j at j; the
 * slope is computed in double and rounded once, the product rounded, then negated. */
void attn_alibi_bias(float *bias, int NH, int q_pos, int n_q, int S);

#endif /* ATTN_ATTENTION_POSITIONS_H */

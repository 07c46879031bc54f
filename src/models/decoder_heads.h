/* decoder_heads.h -- what a decoder layer's forward (decoder_layer.c) and backward
 * (decoder_layer_backward.c) share: where the heads are and how they move between the
 * in-projections' rows and head-major [NH, rows, HS] tensors, the q scale, rope on the
 * self-attention's q and k, and each block's residual input. Internal to src/models. */
#ifndef ATTN_DECODER_HEADS_H
#define ATTN_DECODER_HEADS_H

#include "attention_positions.h"
#include "decoder_layer.h"

#include <math.h>
#include <string.h>

static inline int rows_of(const int *rows, int i) {
    return rows[i + 1] - rows[i];
}

/* Rows [0, n) of src (row width `width`, head h at column col + h*HS) into head-major dst at
 * rows row0.. of a [NH, rows, HS] tensor (head stride hs), each value divided by root when
 * root != 0 (PyTorch's q / sqrt(HS)). */
static inline void split_heads(float *dst, size_t hs, int row0, const float *src, int n, int width,
                               int col, int NH, int HS, float root) {
    for (int h = 0; h < NH; h++)
        for (int r = 0; r < n; r++) {
            const float *in = src + (size_t)r * width + col + (size_t)h * HS;
            float *out = dst + h * hs + ((size_t)row0 + r) * HS;
            if (root != 0.0f)
                for (int j = 0; j < HS; j++) out[j] = in[j] / root;
            else
                memcpy(out, in, (size_t)HS * sizeof(float));
        }
}

/* The inverse gather: head-major src rows row0.. -> dst [n, width] at columns col + h*HS,
 * multiplied by scale when scale != 0 (the division's derivative), else copied. ADDS when add. */
static inline void merge_heads(float *dst, int width, int col, const float *src, size_t hs,
                               int row0, int n, int NH, int HS, float scale) {
    for (int h = 0; h < NH; h++)
        for (int r = 0; r < n; r++) {
            const float *in = src + h * hs + ((size_t)row0 + r) * HS;
            float *out = dst + (size_t)r * width + col + (size_t)h * HS;
            if (scale != 0.0f)
                for (int j = 0; j < HS; j++) out[j] = in[j] * scale;
            else
                memcpy(out, in, (size_t)HS * sizeof(float));
        }
}

static inline float head_root(const attn_seq2seq_config *c) {
    return sqrtf((float)(c->d_model / c->n_heads));
}

/* Rows row0 .. row0+n-1 of every head of x (head stride hs, rows ld floats apart) rotated at
 * positions p0 .. p0+n-1, or by the transpose (backward); nothing unless pos rope. */
static inline void rope_heads_ld(float *x, size_t hs, size_t ld, int row0, int n, int p0,
                                 const attn_decoder_acts *a, const attn_seq2seq_config *c,
                                 bool transpose) {
    const int NH = c->n_heads, HS = c->d_model / NH;
    if (c->pos != ATTN_POS_ROPE) return;
    for (int h = 0; h < NH; h++)
        for (int t = 0; t < n; t++)
            attn_rope_row(x + h * hs + ((size_t)row0 + t) * ld, a->rope, p0 + t, HS, transpose);
}

/* The same on a head-major [NH, rows, HS] x. */
static inline void rope_heads(float *x, size_t hs, int row0, int n, int p0,
                              const attn_decoder_acts *a, const attn_seq2seq_config *c,
                              bool transpose) {
    rope_heads_ld(x, hs, (size_t)(c->d_model / c->n_heads), row0, n, p0, a, c, transpose);
}

/* Whether a full pass keeps q, k, v in the in-projections' outputs (q divided in place, heads
 * side by side in each row) and writes the heads straight into the concatenated [N, D]: heads
 * wider than one float (a one-float head's P.v is a column, which OpenBLAS writes contiguously).
 * Else split into head-major buffers and merged back. The same products with the same shapes
 * either way, so the same bits. */
static inline bool heads_in_rows(const attn_seq2seq_config *c) {
    return c->d_model / c->n_heads > 1;
}

/* In place: the first D columns of n rows of width `width` divided by root (or multiplied by
 * scale when root is 0): the head split's and merge's operations on the same values. */
static inline void scale_q_columns(float *x, int n, int width, int D, float root, float scale) {
    for (int r = 0; r < n; r++) {
        float *restrict row = x + (size_t)r * width;
        if (root != 0.0f)
            for (int j = 0; j < D; j++) row[j] = row[j] / root;
        else
            for (int j = 0; j < D; j++) row[j] = row[j] * scale;
    }
}

/* Block b's residual input: x, then the previous block's output. */
static inline const float *block_res(const attn_decoder_acts *a, const float *x, bool pre, int b) {
    return b == 0 ? x : pre ? a->sum[b - 1] : a->ln[b - 1];
}

#endif /* ATTN_DECODER_HEADS_H */

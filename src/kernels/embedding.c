/* embedding.c -- token/position embedding gather and scatter-add, and the elementwise add
 * used for residuals and positional embeddings. Backward kernels ACCUMULATE (+=).
 */
#include "kernels_internal.h"

/* y[n,D] = table[ids[i], :] for each row i (ids in range: checked at the API boundary). The
 * rows are short (D = 16-128 floats) and a batched recurrent forward gathers one row per call:
 * copied 4 floats at a time by constant-size copies the compiler inlines, not a library call per
 * row (a plain loop would be turned back into one). A copy either way: the same bytes. */
void attn_embedding_forward(float *y, const int *ids, const float *table, int n, int D) {
    for (int i = 0; i < n; i++) {
        ATTN_ASSERT(ids[i] >= 0);
        float *dst = y + (size_t)i * D;
        const float *src = table + (size_t)ids[i] * D;
        int j = 0;
        for (; j + 4 <= D; j += 4) memcpy(dst + j, src + j, 4 * sizeof *dst);
        for (; j < D; j++) dst[j] = src[j];
    }
}

/* d_table[ids[i], :] += d_y[i, :]; a repeated id receives the sum of its rows' gradients. */
void attn_embedding_backward(float *d_table, const float *d_y, const int *ids, int n, int D) {
    if (!d_table) return;
    for (int i = 0; i < n; i++) {
        float *row = d_table + (size_t)ids[i] * D;
        const float *g = d_y + (size_t)i * D;
        for (int j = 0; j < D; j++) row[j] += g[j];
    }
}

/* y[n] = a + b, one float add per element (y may alias a or b). */
void attn_add_forward(float *y, const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] = a[i] + b[i];
}

void attn_add_onto_zero(float *y, const float *a, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] = 0.0f + a[i];
}

/* d_a[n] += d_y, d_b[n] += d_y (either may be NULL). */
void attn_add_backward(float *d_a, float *d_b, const float *d_y, size_t n) {
    if (d_a)
        for (size_t i = 0; i < n; i++) d_a[i] += d_y[i];
    if (d_b)
        for (size_t i = 0; i < n; i++) d_b[i] += d_y[i];
}

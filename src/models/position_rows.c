/* position_rows.c -- attn_model_position_row: the vectors a classifier Transformer adds to its
 * word embeddings, whether trained (pos_embedding, a tensor of the weights file) or fixed (the
 * sinusoidal table, made here by the same attn_sinusoid_value the forward's table is made by),
 * for a reader such as the server's section-4 view. */
#include "model_internal.h"

#include <string.h>

bool attn_model_position_row(const attn_model *m, int p, float *row) {
    if (!m || !row || m->cfg.arch != ATTN_ARCH_TRANSFORMER || p < 0 || p >= m->cfg.max_len)
        return false;
    const int D = m->cfg.embed_dim;
    if (m->cfg.pos == ATTN_POS_LEARNED) {
        const long t = attn_model_tensor_find(m, "pos_embedding");
        if (t < 0) return false;
        memcpy(row, m->params + attn_model_tensor_offset(m, (size_t)t) + (size_t)p * D,
               (size_t)D * sizeof *row);
        return true;
    }
    if (m->cfg.pos != ATTN_POS_SINUSOIDAL) return false;
    for (int j = 0; j < D; j++) row[j] = attn_sinusoid_value(p, j, D, 1.0f);
    return true;
}

/* explain_internal.h -- between attn_explain's sentence passes (explain.c) and its integrated
 * gradients (integrated_gradients.c). Internal to src/explain. */
#ifndef ATTN_EXPLAIN_INTERNAL_H
#define ATTN_EXPLAIN_INTERNAL_H

#include "attn.h"
#include "attn_threads.h"

/* e->integrated_gradients[n_words] from the baseline xb to the sentence x0 (both [rows, D],
 * the words from row w0) in e->ig_steps midpoint points on pool's threads, models[w] thread w's
 * model; extra (NULL: none) runs as one more task of the first wave. The same bytes for every
 * thread count. */
attn_status attn_explain_integrated_gradients(attn_model **models, attn_pool *pool,
                                              const attn_batch *b, const float *x0, const float *xb,
                                              int rows, int D, int w0, void (*extra)(void *),
                                              void *extra_ctx, attn_explanation *e,
                                              attn_error *err);
/* Integrated-gradient chunks per wave for n_chunks chunks of inputs of nx floats on `threads`
 * threads (the memory bound counts them too). */
int attn_explain_ig_wave(int n_chunks, int threads, size_t nx);

#endif /* ATTN_EXPLAIN_INTERNAL_H */

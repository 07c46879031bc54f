/* seq2seq_internal.h -- struct attn_seq2seq and the vtable of its architectures (seq2seq.c is
 * the factory: config, spec table, flat parameters, init, accessors; seq2seq_transformer.c the
 * encoder-decoder Transformer). The parameter layout is the classifiers' struct
 * (attn_param_layout, model_internal.h): one spec per state_dict tensor, one flat params array
 * and one flat grads array with the same offsets. */
#ifndef ATTN_SEQ2SEQ_INTERNAL_H
#define ATTN_SEQ2SEQ_INTERNAL_H

#include "attn_seq2seq.h"
#include "model_internal.h"

/* positions 2, embeddings 2, per encoder layer 12, encoder.norm 2, per decoder layer 18,
 * decoder.norm 2, head 2 */
#define ATTN_S2S_MAX_SPECS                                                                         \
    (8 + 12 * ATTN_TRANSFORMER_MAX_LAYERS + 18 * ATTN_TRANSFORMER_MAX_LAYERS + 2)
_Static_assert(ATTN_S2S_MAX_SPECS <= ATTN_PARAM_MAX_SPECS, "the shared layout holds every spec");

/* How a decoding step picks the next token from its logits [V]: greedy (argmax) or a sampler. */
typedef struct attn_s2s_chooser {
    int (*choose)(void *ctx, const float *logits, int V);
    void *ctx;
} attn_s2s_chooser;

typedef struct attn_s2s_vt {
    const char *kind; /* "seq2seq-transformer" */
    size_t (*specs)(const attn_seq2seq_config *cfg, attn_param_spec *specs);
    attn_status (*setup)(attn_seq2seq *m, attn_error *err); /* views into params, m->impl */
    void (*set_grads)(attn_seq2seq *m);                     /* views into grads */
    attn_status (*forward)(attn_seq2seq *m, const attn_s2s_batch *b, float *logits,
                           attn_error *err);
    void (*backward)(attn_seq2seq *m, const attn_s2s_batch *b, const float *d_logits);
    /* token by token from [BOS] until [EOS] or max_out words, each chosen by ch */
    attn_status (*decode)(attn_seq2seq *m, const int *src, int n_src, int max_out, bool cache,
                          const attn_s2s_chooser *ch, int *out, int *n_out, float *step_logits,
                          int *n_steps, attn_error *err);
    /* Attention probabilities of one teacher-forced pair (B = 1): source src[n_src], decoder
     * input dec_in[n_dec] ([BOS] first). cross: [L, NH, n_dec, n_src] (seq2seq-transformer:
     * L = dec_layers, NH = n_heads; seq2seq-attn: L = NH = 1, the additive attention's
     * alignment); self: [L, NH, n_dec, n_dec] or NULL (transformer only). NULL hook: the
     * architecture has no attention (seq2seq-gru). */
    attn_status (*maps)(attn_seq2seq *m, const int *src, int n_src, const int *dec_in, int n_dec,
                        float *cross, float *self, attn_error *err);
    void (*destroy)(attn_seq2seq *m); /* frees m->impl only */
    /* n sources decoded together with the KV cache (attn_seq2seq_greedy_batch), source i's
     * tokens chosen by ch[i], its words at out + i * max_out, its step logits (NULL or
     * [n, max_out + 1, Vt]) at row i * (max_out + 1); NULL: the architecture decodes one
     * source at a time (decode with cache). */
    attn_status (*decode_batch)(attn_seq2seq *m, int n, const int *const *src, const int *n_src,
                                int max_out, const attn_s2s_chooser *ch, int *out, int *n_out,
                                float *step_logits, int *n_steps, attn_error *err);
} attn_s2s_vt;

struct attn_seq2seq {
    const attn_s2s_vt *vt;
    attn_seq2seq_config cfg;
    ATTN_PARAM_LAYOUT_MEMBER; /* specs, offsets, params, grads (model_internal.h) */
    void *impl;
    /* NULL, or [S, E] set by the caller before a B = 1 backward: the backward then writes
     * d loss / d (the source embedding row looked up at each position), E = the source
     * embedding width, for gradient x input saliency (src/explain). */
    float *d_src_x;
};

extern const attn_s2s_vt attn_s2s_transformer_vt;
extern const attn_s2s_vt attn_s2s_gru_vt;  /* seq2seq_rnn.c */
extern const attn_s2s_vt attn_s2s_attn_vt; /* seq2seq_rnn.c */

/* The checks of attn_seq2seq_greedy's arguments, shared by the samplers (seq2seq.c). */
attn_status attn_seq2seq_check_decode(const attn_seq2seq *m, const int *src, int n_src, int max_out,
                                      const int *out, const int *n_out, attn_error *err);

/* Decoding without a cache, for every architecture: the teacher-forced forward (vt->forward)
 * over [BOS] + the words so far at every step, its last row the step's logits -- what a PyTorch
 * loop over the reference module computes. Arguments as attn_s2s_vt.decode. */
attn_status attn_seq2seq_decode_recompute(attn_seq2seq *m, const int *src, int n_src, int max_out,
                                          const attn_s2s_chooser *ch, int *out, int *n_out,
                                          float *step_logits, int *n_steps, attn_error *err);

/* Pointer to tensor `name` in base (params or grads); NULL if absent or base is NULL. */
float *attn_seq2seq_view(attn_seq2seq *m, float *base, const char *name);

#endif /* ATTN_SEQ2SEQ_INTERNAL_H */

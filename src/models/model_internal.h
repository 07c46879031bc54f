/* model_internal.h -- struct attn_model, the per-architecture vtable and parameter specs.
 *
 * One factory (model.c) turns an architecture's spec table (state_dict names, shapes and
 * PyTorch init rules, in state_dict order) into offsets into one flat params array and one
 * flat grads array. JSON I/O, Adam, NaN scans and checkpoints loop over the table and contain
 * no model-specific code. Each architecture file (rnn.c, lstm.c, transformer.c) provides the
 * vtable below and keeps its named views and activation arena in m->impl.
 */
#ifndef ATTN_MODEL_INTERNAL_H
#define ATTN_MODEL_INTERNAL_H

#include "attn.h"

/* PyTorch's initialisers, drawn from the project's PRNG. */
typedef enum attn_init {
    ATTN_INIT_ZEROS,
    ATTN_INIT_ONES,
    ATTN_INIT_NORMAL,   /* N(0, a^2) (Embedding: a = 1) */
    ATTN_INIT_UNIFORM,  /* U(-a, a) (Linear 1/sqrt(fan_in), RNN/LSTM 1/sqrt(H), Xavier) */
    ATTN_INIT_SINUSOID, /* [P, D]: a * sin|cos(p / 10000^(2i/D)) (Vaswani et al.), no draw */
} attn_init;

#define ATTN_NAME_MAX 64
typedef struct attn_param_spec {
    char name[ATTN_NAME_MAX]; /* exact PyTorch state_dict key, e.g. "lstm.weight_ih_l0" */
    int ndim, shape[4];       /* PyTorch shape, row-major */
    attn_init init;
    float init_a; /* std (NORMAL) or bound (UNIFORM) */
} attn_param_spec;

#define ATTN_MAX_SPECS 64

typedef struct attn_model_vt {
    const char *kind; /* "rnn" | "lstm" | "transformer" */
    /* Fills specs (at most ATTN_MAX_SPECS) in state_dict order; returns how many. */
    size_t (*specs)(const attn_model_config *cfg, attn_param_spec *specs);
    /* Allocates m->impl (named views into m->params; grad views are set up by set_grads). */
    attn_status (*setup)(attn_model *m, attn_error *err);
    /* Points the gradient views at m->grads (called once, after grads is allocated). */
    void (*set_grads)(attn_model *m);
    attn_status (*forward)(attn_model *m, const attn_batch *b, float *logits, attn_error *err);
    void (*backward)(attn_model *m, const attn_batch *b, const float *d_logits);
    void (*destroy)(attn_model *m); /* frees m->impl (and its arena) only */
} attn_model_vt;

struct attn_model {
    const attn_model_vt *vt;
    attn_model_config cfg;
    attn_param_spec specs[ATTN_MAX_SPECS];
    size_t n_specs;
    size_t offsets[ATTN_MAX_SPECS + 1]; /* offsets[i] into params AND grads; [n_specs] = total */
    float *params;                      /* [n_params] */
    float *grads;                       /* [n_params], NULL until the first backward */
    size_t n_params;
    void *impl; /* per-architecture views and activation arena */
};

extern const attn_model_vt attn_rnn_vt;
extern const attn_model_vt attn_lstm_vt;
extern const attn_model_vt attn_transformer_vt;

/* The seven tensors of a one-layer recurrent classifier (rnn.c, lstm.c), in spec order:
 * embedding.weight, <cell>.weight_ih_l0, .weight_hh_l0, .bias_ih_l0, .bias_hh_l0, head.weight,
 * head.bias. G = 1 for the RNN, 4 for the LSTM (gates i, f, g, o). */
typedef struct attn_recurrent_tensors {
    float *embedding;         /* [V, E] */
    float *weight_ih;         /* [G*H, E] */
    float *weight_hh;         /* [G*H, H] */
    float *bias_ih, *bias_hh; /* [G*H] */
    float *head_weight;       /* [1, H] */
    float *head_bias;         /* [1] */
} attn_recurrent_tensors;

/* Helpers for architecture files. */
/* Points t at the recurrent tensors of `cell` ("rnn" or "lstm") in base (params or grads). */
void attn_recurrent_bind(attn_model *m, float *base, const char *cell, attn_recurrent_tensors *t);
void attn_spec_set(attn_param_spec *s, const char *name, int ndim, const int *shape, attn_init init,
                   float init_a);
/* Pointer to tensor `name` in params (or grads if grads != NULL); NULL if not found. */
float *attn_model_view(attn_model *m, float *base, const char *name);
/* Validates a batch against the model (B >= 1, 1 <= lengths[b] <= T, ids in range, T limit). */
attn_status attn_batch_validate(const attn_model *m, const attn_batch *b, attn_error *err);
/* Arena layout step: the next n floats at base + *used (NULL when base is NULL, so the same
 * layout code can first count the floats it needs); advances *used by n. */
static inline float *attn_arena_carve(float *base, size_t *used, size_t n) {
    float *p = base ? base + *used : NULL;
    *used += n;
    return p;
}
/* Grows *buf to at least n floats (keeps nothing); *cap tracks the current size. */
attn_status attn_arena_reserve(float **buf, size_t *cap, size_t n, attn_error *err);

#endif /* ATTN_MODEL_INTERNAL_H */

/* model_internal.h -- struct attn_model, the per-architecture vtable and parameter specs.
 *
 * One factory (model.c) turns an architecture's spec table (state_dict names, shapes and
 * PyTorch init rules, in state_dict order) into a parameter layout (attn_param_layout, shared
 * with the seq2seq factory): offsets into one flat params array and one flat grads array. JSON I/O,
 * Adam, NaN scans and checkpoints loop over the table and contain no model-specific code. Each
 * architecture file (rnn.c, lstm.c, transformer.c) provides the vtable below and keeps its named
 * views and activation arena in m->impl.
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

/* transformer: 12 tensors per layer + 6; recurrent: 4 per layer + 3 */
#define ATTN_MAX_SPECS (12 * ATTN_TRANSFORMER_MAX_LAYERS + 6)
/* The bound of the layout both factories share: the larger one, seq2seq's (seq2seq_internal.h). */
#define ATTN_PARAM_MAX_SPECS (10 + 30 * ATTN_TRANSFORMER_MAX_LAYERS)
_Static_assert(ATTN_MAX_SPECS <= ATTN_PARAM_MAX_SPECS, "the shared layout holds every spec");

/* The parameter layout (param_table.c), one struct that the classifier (struct attn_model) and
 * the seq2seq model (struct attn_seq2seq) both embed: the spec table in state_dict order, its
 * offsets into one flat params array and one flat grads array, and the two arrays. offsets[i] is
 * tensor i's first float in params and grads alike, offsets[n_specs] the total (n_params). */
#define ATTN_PARAM_LAYOUT_FIELDS                                                                   \
    attn_param_spec specs[ATTN_PARAM_MAX_SPECS];                                                   \
    size_t n_specs;                                                                                \
    size_t offsets[ATTN_PARAM_MAX_SPECS + 1];                                                      \
    float *params; /* [n_params] */                                                                \
    float *grads;  /* [n_params], NULL until the first backward */                                 \
    size_t n_params;                                                                               \
    bool params_borrowed;         /* params are another model's (attn_model_replica): not freed */ \
    void (*release)(void *owner); /* not NULL: params are owner's (a mapped file): released */     \
    void *owner;                                                                                   \
    attn_kernels_info kernels; /* what computed params: the file's, or training's (mode "": none)  \
                                */
typedef struct attn_param_layout {
    ATTN_PARAM_LAYOUT_FIELDS
} attn_param_layout;
/* The member a model struct embeds: `layout` for the attn_param_layout functions, and the same
 * fields by their own names (m->params, m->grads, m->specs...) for the architecture files. Both
 * name one object (C11 anonymous struct in a union, the same member list). */
#define ATTN_PARAM_LAYOUT_MEMBER                                                                   \
    union {                                                                                        \
        attn_param_layout layout;                                                                  \
        struct {                                                                                   \
            ATTN_PARAM_LAYOUT_FIELDS                                                               \
        };                                                                                         \
    }

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
    /* Looking inside (attn.h's attn_model_forward_embedded_batch, attn_model_input,
     * attn_model_input_grad, attn_model_attention_probs, attn_model_prefix_logits dispatch
     * here); attention_probs is NULL without attention, prefix_logits without recurrence.
     * forward_embedded: b->B sentences of b->T words (b->ids NULL, every length T). */
    attn_status (*forward_embedded)(attn_model *m, const float *x, const attn_batch *b,
                                    float *logits, attn_error *err);
    void (*input)(const attn_model *m, const float **x, const float **d_x, int *n_rows);
    /* d_x [rows, width] of sentence i of the last batch; false if i is not in it */
    bool (*input_grad)(const attn_model *m, int i, float *d_x);
    const float *(*attention_probs)(const attn_model *m, int layer, int *S);
    attn_status (*prefix_logits)(attn_model *m, const int *ids, int n_words, float *logits,
                                 attn_error *err);
    /* attn_model_forward_infer: the same logits, keeping nothing for a backward; NULL: forward */
    attn_status (*forward_infer)(attn_model *m, const attn_batch *b, float *logits,
                                 attn_error *err);
} attn_model_vt;

struct attn_model {
    const attn_model_vt *vt;
    attn_model_config cfg;
    ATTN_PARAM_LAYOUT_MEMBER; /* specs, offsets, params, grads */
    void *impl;               /* per-architecture views and activation arena */
};

/* The model of a recurrent cell: attn_<name>_vt, whose specs and setup pass the cell to
 * attn_recurrent_specs / attn_recurrent_setup, everything else the shared core's. */
#define ATTN_RECURRENT_MODEL(name, cell)                                                           \
    static size_t name##_specs(const attn_model_config *c, attn_param_spec *s) {                   \
        return attn_recurrent_specs(c, &(cell), s);                                                \
    }                                                                                              \
    static attn_status name##_setup(attn_model *m, attn_error *err) {                              \
        return attn_recurrent_setup(m, &(cell), err);                                              \
    }                                                                                              \
    const attn_model_vt attn_##name##_vt = {#name,                                                 \
                                            name##_specs,                                          \
                                            name##_setup,                                          \
                                            attn_recurrent_set_grads,                              \
                                            attn_recurrent_forward,                                \
                                            attn_recurrent_backward,                               \
                                            attn_recurrent_destroy,                                \
                                            attn_recurrent_forward_embedded,                       \
                                            attn_recurrent_input,                                  \
                                            attn_recurrent_input_grad,                             \
                                            NULL,                                                  \
                                            attn_recurrent_prefix_logits,                          \
                                            attn_recurrent_forward_infer}

extern const attn_model_vt attn_rnn_vt;
extern const attn_model_vt attn_lstm_vt;
extern const attn_model_vt attn_gru_vt;
extern const attn_model_vt attn_transformer_vt;

/* ---- recurrent models: recurrent.c (the core) + one cell file each (rnn.c, lstm.c) ---------- */

/* Layers of nn.RNN/nn.LSTM/nn.GRU (PyTorch num_layers): ATTN_RECURRENT_MAX_LAYERS (attn.h). The
 * core runs layer by layer (layer l > 0 reads layer l-1's h slab). */

/* One layer's tensors, PyTorch layout: G gate blocks of H rows each (LSTM i,f,g,o). */
typedef struct attn_recurrent_layer_tensors {
    float *weight_ih; /* [G*H, I], I = E for layer 0, H above */
    float *weight_hh; /* [G*H, H] */
    float *bias_ih;   /* [G*H] */
    float *bias_hh;   /* [G*H] */
} attn_recurrent_layer_tensors;

/* The tensors of a recurrent classifier, in spec order: embedding.weight, then per layer l
 * (I = E for layer 0, H above)
 * <cell>.weight_ih_l<l>, .weight_hh_l<l>, .bias_ih_l<l>, .bias_hh_l<l>, then head.weight,
 * head.bias. G = 1 for the RNN, 4 for the LSTM (gates i, f, g, o). */
typedef struct attn_recurrent_tensors {
    float *embedding;                                              /* [V, E] */
    attn_recurrent_layer_tensors layer[ATTN_RECURRENT_MAX_LAYERS]; /* cfg.n_layers bound */
    float *head_weight;                                            /* [1, H] */
    float *head_bias;                                              /* [1] */
} attn_recurrent_tensors;

/* One time step of one layer for a run of n consecutive slots whose sentences are still inside
 * their sentence (the core calls the cell once per run; packed slots form one run). Every
 * pointer is at the run's first row. The core fills them all; a cell reads and writes only
 * what its step_forward / step_backward contract names. */
typedef struct attn_recurrent_step {
    int n, H; /* rows of the run, hidden size */
    /* forward in */
    const float *xw; /* [n, G*H] x.W_ih^T + b_ih (all steps' product, one GEMM; without b_ih
                      * when b_ih below is set) */
    float *hw;       /* [n, G*H] h_prev.W_hh^T + b_hh (without b_hh when b_hh is set); scratch */
    /* [G*H] or NULL. Non-NULL: that bias is NOT in xw (b_ih) or hw (b_hh) and the cell adds it,
     * xw + b_ih and hw + b_hh, one rounding each, before it uses them: the bits of the
     * pre-filled product when the product has a single k-block (recurrent.c) */
    const float *b_ih, *b_hh;
    const float *h_prev;     /* [n, H] */
    const float *state_prev; /* [n, S*H] the cell's other state (LSTM c) */
    /* forward out, kept for backward */
    float *h;     /* [n, H] */
    float *state; /* [n, S*H] */
    float *saved; /* [n, A*H] whatever the cell's backward needs (LSTM gates, tanh c) */
    /* backward (forward's pointers above hold the values forward wrote) */
    const float *d_h; /* [n, H] d loss / d h (d_h_last already added at a last word) */
    float *d_state;   /* [n, S*H] in: d loss / d state; out: d loss / d state_prev */
    float *d_xw;      /* [n, G*H] d loss / d xw (written) */
    float *d_hw;      /* [n, G*H] d loss / d hw (written; the same buffer as d_xw unless
                       * split_hh) */
    float *d_h_prev;  /* [n, H] zeroed by the core; the cell ADDS terms that bypass W_hh (a
                       * GRU's z*d_h), then the core adds d_hw.W_hh */
} attn_recurrent_step;

/* A recurrent cell: the only part that differs between nn.RNN, nn.LSTM (and nn.GRU). Per
 * unit of H it has G gate rows in W_ih/W_hh, S floats of state besides h and A saved floats. */
typedef struct attn_recurrent_cell {
    const char *name; /* state_dict module and vtable kind: "rnn", "lstm" */
    int G, S, A;      /* gate blocks, state floats and saved floats per unit of H */
    /* true if d loss / d hw differs from d loss / d xw (a GRU's n gate multiplies hw_n by r):
     * the core then keeps d_hw as its own [T, B, G*H] slab for W_hh's gradients */
    bool split_hh;
    /* slot table (recurrent.c): true = packed, slots sorted longest first and step t's hh GEMM
     * on the active slots only; false = batch order and every step's hh GEMM on all B rows
     * (nn.RNN over the padded batch). The cell runs on active slots either way. Same results
     * up to rounding, but OpenBLAS rounds a GEMM row by its position and the row count, and
     * each cell keeps the bits its batched results have always had: RNN unpacked, LSTM packed.
     * A new cell takes packed (padding steps cost nothing). */
    bool packed;
    void (*step_forward)(const attn_recurrent_step *s);
    void (*step_backward)(const attn_recurrent_step *s);
} attn_recurrent_cell;

/* nn.GRU's cell (gru.c), shared with the seq2seq GRU models. */
extern const attn_recurrent_cell attn_gru_cell;

/* The core (recurrent.c): spec table, views and the vtable entries every cell shares. */
size_t attn_recurrent_specs(const attn_model_config *c, const attn_recurrent_cell *cell,
                            attn_param_spec *s);
attn_status attn_recurrent_setup(attn_model *m, const attn_recurrent_cell *cell, attn_error *err);
void attn_recurrent_set_grads(attn_model *m);
attn_status attn_recurrent_forward(attn_model *m, const attn_batch *b, float *logits,
                                   attn_error *err);
attn_status attn_recurrent_forward_infer(attn_model *m, const attn_batch *b, float *logits,
                                         attn_error *err);
void attn_recurrent_backward(attn_model *m, const attn_batch *b, const float *d_logits);
void attn_recurrent_destroy(attn_model *m);
/* Points t at the tensors of `cell` ("rnn" or "lstm") in base (params or grads). */
void attn_recurrent_bind(attn_model *m, float *base, const char *cell, attn_recurrent_tensors *t);

/* Looking inside (the vtable entries of the same names). x: per sentence the first layer's input
 * rows, [T, E] (recurrent) or [T+1, D] (Transformer, [CLS] first), sentences one after the other.
 * _input: those rows of the last forward and d logit / d x of the last backward; *n_rows = 0
 * unless the last forward had B = 1. _input_grad: sentence i's rows of d logit / d x. */
attn_status attn_recurrent_forward_embedded(attn_model *m, const float *x, const attn_batch *b,
                                            float *logits, attn_error *err);
void attn_recurrent_input(const attn_model *m, const float **x, const float **d_x, int *n_rows);
bool attn_recurrent_input_grad(const attn_model *m, int i, float *d_x);
attn_status attn_recurrent_prefix_logits(attn_model *m, const int *ids, int n_words, float *logits,
                                         attn_error *err);
attn_status attn_transformer_forward_embedded(attn_model *m, const float *x, const attn_batch *b,
                                              float *logits, attn_error *err);
void attn_transformer_input(const attn_model *m, const float **x, const float **d_x, int *n_rows);
bool attn_transformer_input_grad(const attn_model *m, int i, float *d_x);
/* Layer `layer`'s probabilities [NH, S, S] of the last batch-1 forward (NULL if B > 1). */
const float *attn_transformer_probs(const attn_model *m, int layer, int *S);
/* Layer `layer`'s q (scaled) and k of the last batch-1 forward, where the layer keeps them
 * (attn_model_attention_qk); false if B > 1. */
bool attn_transformer_qk(const attn_model *m, int layer, const float **q, const float **k,
                         size_t *head_stride, size_t *row_stride, int *S);

/* ---- the parameter layout both factories share (param_table.c) ---------------------------- */

/* Floats of all n_specs tensors together. */
size_t attn_param_table_count(const attn_param_spec *specs, size_t n_specs);
/* l->specs holds n_specs tensors: fills the rest of *l, allocates its params and initialises
 * them from seed (every tensor in state_dict order, element by element, from one stream, by
 * PyTorch's rules); with a source (not NULL), its params instead, or zeros when src->params is
 * NULL (attn_param_source, attn_model.h). */
attn_status attn_param_layout_create(attn_param_layout *l, size_t n_specs, uint64_t seed,
                                     const attn_param_source *src, attn_error *err);
/* A copy of *l whose params are l's (borrowed: attn_param_layout_free leaves them), no grads. */
attn_param_layout attn_param_layout_borrow(const attn_param_layout *l);
/* params (unless borrowed; released to their owner if they are its) and grads */
void attn_param_layout_free(attn_param_layout *l);
/* l->grads = n_params zeros, if l has no grads yet; *fresh says whether it had to allocate
 * them (the caller then points its gradient views at them). */
attn_status attn_param_layout_grads(attn_param_layout *l, bool *fresh, attn_error *err);
void attn_param_layout_zero_grads(attn_param_layout *l);
/* ATTN_ERR_VALUE naming the tensor and index of the first NaN or Inf in params (or grads). */
attn_status attn_param_layout_check_finite(const attn_param_layout *l, bool grads, attn_error *err);
/* Tensor i's name (NULL past the end), shape (returns ndim, 0 past the end) and size. */
const char *attn_param_layout_name(const attn_param_layout *l, size_t i);
int attn_param_layout_shape(const attn_param_layout *l, size_t i, int shape[4]);
size_t attn_param_layout_numel(const attn_param_layout *l, size_t i);
/* Index of tensor `name`, -1 if absent; its first float in base, NULL if absent or base NULL. */
long attn_param_layout_find(const attn_param_layout *l, const char *name);
float *attn_param_layout_view(const attn_param_layout *l, float *base, const char *name);

/* The public tensor accessors of a model struct that embeds ATTN_PARAM_LAYOUT_MEMBER, written
 * once for both factories: ATTN_PARAM_ACCESSORS(attn_model, attn_model) in model.c and
 * (attn_seq2seq, attn_seq2seq) in seq2seq.c define <prefix>_n_params, _params, _grads,
 * _tensor_count, _tensor_name, _tensor_shape, _tensor_offset, _tensor_numel, _tensor_find,
 * _kernels, _set_kernels, _grads_take and _grads_give (the public headers' contracts) and the
 * internal <prefix>_view. */
#define ATTN_PARAM_ACCESSORS(prefix, type)                                                         \
    size_t prefix##_n_params(const type *m) {                                                      \
        return m->layout.n_params;                                                                 \
    }                                                                                              \
    float *prefix##_params(type *m) {                                                              \
        return m->layout.params;                                                                   \
    }                                                                                              \
    float *prefix##_grads(type *m) {                                                               \
        return m->layout.grads;                                                                    \
    }                                                                                              \
    size_t prefix##_tensor_count(const type *m) {                                                  \
        return m->layout.n_specs;                                                                  \
    }                                                                                              \
    const char *prefix##_tensor_name(const type *m, size_t i) {                                    \
        return attn_param_layout_name(&m->layout, i);                                              \
    }                                                                                              \
    int prefix##_tensor_shape(const type *m, size_t i, int shape[4]) {                             \
        return attn_param_layout_shape(&m->layout, i, shape);                                      \
    }                                                                                              \
    size_t prefix##_tensor_offset(const type *m, size_t i) {                                       \
        return m->layout.offsets[i];                                                               \
    }                                                                                              \
    size_t prefix##_tensor_numel(const type *m, size_t i) {                                        \
        return attn_param_layout_numel(&m->layout, i);                                             \
    }                                                                                              \
    long prefix##_tensor_find(const type *m, const char *name) {                                   \
        return attn_param_layout_find(&m->layout, name);                                           \
    }                                                                                              \
    float *prefix##_view(type *m, float *base, const char *name) {                                 \
        return attn_param_layout_view(&m->layout, base, name);                                     \
    }                                                                                              \
    const attn_kernels_info *prefix##_kernels(const type *m) {                                     \
        return m->layout.kernels.mode[0] ? &m->layout.kernels : NULL;                              \
    }                                                                                              \
    void prefix##_set_kernels(type *m, const attn_kernels_info *k) {                               \
        if (k)                                                                                     \
            m->layout.kernels = *k;                                                                \
        else                                                                                       \
            attn_kernels_info_get(&m->layout.kernels);                                             \
    }                                                                                              \
    float *prefix##_grads_take(type *m) {                                                          \
        float *g = m->layout.grads;                                                                \
        m->layout.grads = NULL; /* the next _grads_alloc binds the views again */                  \
        return g;                                                                                  \
    }                                                                                              \
    void prefix##_grads_give(type *m, float *grads) {                                              \
        free(m->layout.grads);                                                                     \
        m->layout.grads = grads;                                                                   \
        if (grads) m->vt->set_grads(m);                                                            \
    }

/* The factory of a model struct with vt, cfg, ATTN_PARAM_LAYOUT_MEMBER and impl, written once
 * for both families over the file's vt_for (the architecture's vtable): in model.c and
 * seq2seq.c it defines <prefix>_create, _create_from and _free (the public headers' contracts)
 * and the file's replica_of (a model sharing m's parameters, set up; *out NULL on failure).
 * what / replica_what name the object in out-of-memory messages. */
#define ATTN_MODEL_FACTORY(prefix, type, cfg_type, what, replica_what)                             \
    void prefix##_free(type *m) {                                                                  \
        if (!m) return;                                                                            \
        if (m->vt && m->impl) m->vt->destroy(m);                                                   \
        attn_param_layout_free(&m->layout);                                                        \
        free(m);                                                                                   \
    }                                                                                              \
    static attn_status create(const cfg_type *cfg, uint64_t seed, const attn_param_source *src,    \
                              type **out, attn_error *err) {                                       \
        if (!out) return attn_errorf(err, ATTN_ERR_ARG, #prefix "_create: NULL out");              \
        *out = NULL;                                                                               \
        attn_status st = prefix##_config_validate(cfg, err);                                       \
        if (st != ATTN_OK) return st;                                                              \
        type *m = calloc(1, sizeof *m);                                                            \
        if (!m) return attn_errorf(err, ATTN_ERR_NOMEM, "out of memory creating " what);           \
        m->vt = vt_for(cfg->arch);                                                                 \
        m->cfg = *cfg;                                                                             \
        st = attn_param_layout_create(&m->layout, m->vt->specs(cfg, m->layout.specs), seed, src,   \
                                      err);                                                        \
        if (st == ATTN_OK) st = m->vt->setup(m, err);                                              \
        if (st != ATTN_OK) {                                                                       \
            if (src && src->params) m->layout.params_borrowed = true; /* still the caller's */     \
            prefix##_free(m);                                                                      \
            return st;                                                                             \
        }                                                                                          \
        *out = m;                                                                                  \
        return ATTN_OK;                                                                            \
    }                                                                                              \
    attn_status prefix##_create(const cfg_type *cfg, uint64_t seed, type **out, attn_error *err) { \
        return create(cfg, seed, NULL, out, err);                                                  \
    }                                                                                              \
    attn_status prefix##_create_from(const cfg_type *cfg, const attn_param_source *src,            \
                                     type **out, attn_error *err) {                                \
        if (!src) return attn_errorf(err, ATTN_ERR_ARG, #prefix "_create_from: NULL source");      \
        return create(cfg, 0, src, out, err);                                                      \
    }                                                                                              \
    static attn_status replica_of(type *m, type **out, attn_error *err) {                          \
        *out = NULL;                                                                               \
        type *r = calloc(1, sizeof *r);                                                            \
        if (!r) return attn_errorf(err, ATTN_ERR_NOMEM, "out of memory creating " replica_what);   \
        r->vt = m->vt;                                                                             \
        r->cfg = m->cfg;                                                                           \
        r->layout = attn_param_layout_borrow(&m->layout); /* setup's views: into m's params */     \
        attn_status st = r->vt->setup(r, err);                                                     \
        if (st != ATTN_OK) {                                                                       \
            prefix##_free(r);                                                                      \
            return st;                                                                             \
        }                                                                                          \
        *out = r;                                                                                  \
        return ATTN_OK;                                                                            \
    }

/* Range check of an int config field, for the config validators (model.c, seq2seq.c): returns
 * ATTN_ERR_VALUE naming the field from the enclosing function, which has cfg and err. */
#define ATTN_REQUIRE_RANGE(field, lo, hi)                                                          \
    do {                                                                                           \
        if (cfg->field < (lo) || cfg->field > (hi))                                                \
            return attn_errorf(err, ATTN_ERR_VALUE, "config: %s = %d, expected %d..%d", #field,    \
                               cfg->field, (lo), (hi));                                            \
    } while (0)

/* Helpers for architecture files. */
/* amplitude * sin|cos(pos / 10000^((col - col%2)/d)) in double, rounded once (Vaswani et al.). */
float attn_sinusoid_value(int pos, int col, int d, float amplitude);
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
/* Several arena steps of the same size: each listed pointer, in order, gets the next n floats. */
static inline void attn_arena_carve_list(float *base, size_t *used, size_t n, float **const *views,
                                         size_t n_views) {
    for (size_t i = 0; i < n_views; i++) *views[i] = attn_arena_carve(base, used, n);
}
#define ATTN_ARENA_CARVE_EACH(base, used, n, ...)                                                  \
    attn_arena_carve_list(base, used, n, (float **const[]){__VA_ARGS__},                           \
                          sizeof((float **const[]){__VA_ARGS__}) / sizeof(float **))
/* Grows *buf to at least n floats (keeps nothing); *cap tracks the current size. */
attn_status attn_arena_reserve(float **buf, size_t *cap, size_t n, attn_error *err);

#endif /* ATTN_MODEL_INTERNAL_H */

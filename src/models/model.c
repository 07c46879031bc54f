/* model.c -- the one factory: config defaults and validation, parameter layout from the
 * architecture's spec table, PyTorch-style initialisation, tensor accessors, dispatch. */
#include "attn_threads.h"
#include "attention_positions.h"
#include "model_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- config ----------------------------------------------------------------------------- */

attn_model_config attn_model_config_default(attn_arch arch) {
    attn_model_config c = {0};
    c.arch = arch;
    c.vocab_size = ATTN_VOCAB_SIZE;
    c.norm = ATTN_NORM_PRE;
    c.activation = ATTN_ACT_RELU;
    if (arch == ATTN_ARCH_TRANSFORMER) {
        c.embed_dim = 32;
        c.n_heads = 2;
        c.ffn_dim = 64;
        c.n_layers = 2;
        c.max_len = ATTN_MAX_WORDS + 1;
    } else {
        c.embed_dim = 16;
        c.hidden_size = 32;
        c.n_layers = 1;
    }
    return c;
}

static const char *const arch_names[] = {"rnn", "lstm", "transformer", "gru"};
#define N_ARCH ((int)(sizeof arch_names / sizeof arch_names[0]))

static const char *const pos_names[ATTN_N_POS] = {"learned", "sinusoidal", "none", "rope", "alibi"};

const char *attn_pos_name(attn_pos p) {
    return (unsigned)p < ATTN_N_POS ? pos_names[p] : "unknown";
}

int attn_pos_from_name(const char *name) {
    for (int i = 0; name && i < ATTN_N_POS; i++)
        if (strcmp(name, pos_names[i]) == 0) return i;
    return -1;
}

const char *attn_arch_name(attn_arch a) {
    return (unsigned)a < N_ARCH ? arch_names[a] : "unknown";
}

attn_status attn_arch_from_name(const char *name, attn_arch *out, attn_error *err) {
    for (int i = 0; i < N_ARCH; i++) {
        if (name && strcmp(name, arch_names[i]) == 0) {
            *out = (attn_arch)i;
            return ATTN_OK;
        }
    }
    return attn_errorf(err, ATTN_ERR_VALUE,
                       "unknown model \"%s\" (expected rnn, lstm, gru or transformer)",
                       name ? name : "(null)");
}

attn_status attn_model_config_validate(const attn_model_config *cfg, attn_error *err) {
    if ((unsigned)cfg->arch > ATTN_ARCH_GRU)
        return attn_errorf(err, ATTN_ERR_VALUE, "config: unknown arch %d", (int)cfg->arch);
    ATTN_REQUIRE_RANGE(vocab_size, 2, 1 << 20);
    ATTN_REQUIRE_RANGE(embed_dim, 1, 1 << 14);
    if (cfg->arch == ATTN_ARCH_TRANSFORMER) {
        ATTN_REQUIRE_RANGE(n_heads, 1, cfg->embed_dim);
        if (cfg->embed_dim % cfg->n_heads != 0)
            return attn_errorf(err, ATTN_ERR_VALUE,
                               "config: embed_dim %d is not divisible by n_heads %d",
                               cfg->embed_dim, cfg->n_heads);
        ATTN_REQUIRE_RANGE(ffn_dim, 1, 1 << 16);
        ATTN_REQUIRE_RANGE(n_layers, 1, ATTN_TRANSFORMER_MAX_LAYERS);
        ATTN_REQUIRE_RANGE(max_len, 2, 1 << 16);
        if ((unsigned)cfg->norm > ATTN_NORM_POST)
            return attn_errorf(err, ATTN_ERR_VALUE, "config: unknown norm %d", (int)cfg->norm);
        if ((unsigned)cfg->activation > ATTN_ACT_GELU)
            return attn_errorf(err, ATTN_ERR_VALUE, "config: unknown activation %d",
                               (int)cfg->activation);
        if ((unsigned)cfg->pos >= ATTN_N_POS)
            return attn_errorf(err, ATTN_ERR_VALUE, "config: unknown pos %d", (int)cfg->pos);
        ATTN_REQUIRE_RANGE(attn_unscaled, 0, 1);
        if (cfg->pos == ATTN_POS_ROPE && (cfg->embed_dim / cfg->n_heads) % 2 != 0)
            return attn_errorf(err, ATTN_ERR_VALUE,
                               "config: pos rope needs an even head size, embed_dim %d / "
                               "n_heads %d is odd",
                               cfg->embed_dim, cfg->n_heads);
    } else {
        ATTN_REQUIRE_RANGE(hidden_size, 1, 1 << 14);
        ATTN_REQUIRE_RANGE(n_layers, 1, ATTN_RECURRENT_MAX_LAYERS);
    }
    return ATTN_OK;
}

/* ---- layout and init -------------------------------------------------------------------- */

void attn_spec_set(attn_param_spec *s, const char *name, int ndim, const int *shape, attn_init init,
                   float init_a) {
    memset(s, 0, sizeof *s);
    strncpy(s->name, name, ATTN_NAME_MAX - 1);
    s->ndim = ndim;
    for (int i = 0; i < ndim; i++) s->shape[i] = shape[i];
    s->init = init;
    s->init_a = init_a;
}

static const attn_model_vt *vt_for(attn_arch arch) {
    switch (arch) {
    case ATTN_ARCH_RNN:
        return &attn_rnn_vt;
    case ATTN_ARCH_LSTM:
        return &attn_lstm_vt;
    case ATTN_ARCH_GRU:
        return &attn_gru_vt;
    case ATTN_ARCH_TRANSFORMER:
        return &attn_transformer_vt;
    }
    return NULL;
}

size_t attn_model_config_n_params(const attn_model_config *cfg) {
    const attn_model_vt *vt = vt_for(cfg->arch);
    if (!vt) return 0;
    attn_param_spec specs[ATTN_MAX_SPECS];
    return attn_param_table_count(specs, vt->specs(cfg, specs));
}

ATTN_MODEL_FACTORY(attn_model, attn_model, attn_model_config, "a model", "a model replica")

attn_status attn_model_replica(attn_model *m, attn_model **out, attn_error *err) {
    return replica_of(m, out, err);
}

const attn_model_config *attn_model_config_of(const attn_model *m) {
    return &m->cfg;
}

/* ---- forward / backward ----------------------------------------------------------------- */

attn_status attn_batch_validate(const attn_model *m, const attn_batch *b, attn_error *err) {
    if (!b || !b->ids || !b->lengths || b->B < 1 || b->T < 1)
        return attn_errorf(err, ATTN_ERR_ARG, "batch: need B >= 1, T >= 1, ids and lengths");
    const bool positions = m->cfg.arch == ATTN_ARCH_TRANSFORMER;
    int max_t = positions ? m->cfg.max_len - 1 : 1 << 20;
    if (b->T > max_t && positions)
        return attn_errorf(err, ATTN_ERR_SHAPE,
                           "batch: %d words, the %s model takes at most %d (max_len %d "
                           "positions including [CLS])",
                           b->T, attn_arch_name(m->cfg.arch), max_t, m->cfg.max_len);
    if (b->T > max_t) /* recurrent models have no max_len: this is attn's own bound */
        return attn_errorf(err, ATTN_ERR_SHAPE,
                           "batch: %d words, the %s model takes at most %d words per sentence",
                           b->T, attn_arch_name(m->cfg.arch), max_t);
    for (int i = 0; i < b->B; i++) {
        if (b->lengths[i] < 1 || b->lengths[i] > b->T)
            return attn_errorf(err, ATTN_ERR_SHAPE,
                               "batch: sentence %d has length %d, "
                               "expected 1..%d",
                               i, b->lengths[i], b->T);
        for (int t = 0; t < b->lengths[i]; t++) {
            int id = b->ids[(size_t)i * b->T + t];
            if (id < 0 || id >= m->cfg.vocab_size)
                return attn_errorf(err, ATTN_ERR_VALUE,
                                   "batch: sentence %d word %d has id %d, expected 0..%d", i, t + 1,
                                   id, m->cfg.vocab_size - 1);
        }
    }
    return ATTN_OK;
}

attn_status attn_arena_reserve(float **buf, size_t *cap, size_t n, attn_error *err) {
    if (n <= *cap) return ATTN_OK;
    float *p = attn_malloc_large(n, sizeof(float));
    if (!p) return attn_errorf(err, ATTN_ERR_NOMEM, "out of memory for %zu activation floats", n);
    free(*buf);
    *buf = p;
    *cap = n;
    return ATTN_OK;
}

attn_status attn_model_forward(attn_model *m, const attn_batch *b, float *logits, attn_error *err) {
    attn_status st = attn_batch_validate(m, b, err);
    if (st != ATTN_OK) return st;
    return m->vt->forward(m, b, logits, err);
}

attn_status attn_model_forward_infer(attn_model *m, const attn_batch *b, float *logits,
                                     attn_error *err) {
    attn_status st = attn_batch_validate(m, b, err);
    if (st != ATTN_OK) return st;
    return (m->vt->forward_infer ? m->vt->forward_infer : m->vt->forward)(m, b, logits, err);
}

attn_status attn_model_grads_alloc(attn_model *m, attn_error *err) {
    bool fresh;
    attn_status st = attn_param_layout_grads(&m->layout, &fresh, err);
    if (st == ATTN_OK && fresh) m->vt->set_grads(m);
    return st;
}

attn_status attn_model_backward(attn_model *m, const attn_batch *b, const float *d_logits,
                                attn_error *err) {
    attn_status st = attn_model_grads_alloc(m, err);
    if (st != ATTN_OK) return st;
    m->vt->backward(m, b, d_logits);
    return ATTN_OK;
}

void attn_model_zero_grad(attn_model *m) {
    attn_param_layout_zero_grads(&m->layout);
}

/* ---- tensor accessors ------------------------------------------------------------------- */

const float *attn_model_params_const(const attn_model *m) {
    return m->layout.params;
}
const float *attn_model_grads_const(const attn_model *m) {
    return m->layout.grads;
}

ATTN_PARAM_ACCESSORS(attn_model, attn_model)

attn_status attn_model_check_finite(const attn_model *m, bool grads, attn_error *err) {
    return attn_param_layout_check_finite(&m->layout, grads, err);
}

/* ---- looking inside a batch-1 forward (attn.h) ------------------------------------------- */

static bool is_transformer(const attn_model *m) {
    return m->cfg.arch == ATTN_ARCH_TRANSFORMER;
}

attn_status attn_model_forward_embedded_batch(attn_model *m, const float *x, int B, int n_words,
                                              float *logits, attn_error *err) {
    if (!x || !logits || B < 1 || n_words < 1)
        return attn_errorf(err, ATTN_ERR_ARG,
                           "forward_embedded: need x, logits, B >= 1 and n_words >= 1");
    if (is_transformer(m) && n_words > m->cfg.max_len - 1)
        return attn_errorf(err, ATTN_ERR_SHAPE,
                           "forward_embedded: %d words, the transformer takes at most %d", n_words,
                           m->cfg.max_len - 1);
    int *lengths = malloc((size_t)B * sizeof *lengths);
    if (!lengths) return attn_errorf(err, ATTN_ERR_NOMEM, "forward_embedded: out of memory");
    for (int i = 0; i < B; i++) lengths[i] = n_words;
    const attn_batch b = {.B = B, .T = n_words, .ids = NULL, .lengths = lengths};
    attn_status st = m->vt->forward_embedded(m, x, &b, logits, err);
    free(lengths);
    return st;
}

attn_status attn_model_forward_embedded(attn_model *m, const float *x, int n_words, float *logit,
                                        attn_error *err) {
    return attn_model_forward_embedded_batch(m, x, 1, n_words, logit, err);
}

attn_status attn_model_input_grad(const attn_model *m, int i, float *d_x, attn_error *err) {
    if (!d_x || !m->vt->input_grad(m, i, d_x))
        return attn_errorf(err, ATTN_ERR_ARG,
                           "model input gradient: no sentence %d in the last "
                           "batch",
                           i);
    return ATTN_OK;
}

attn_status attn_model_prefix_logits(attn_model *m, const int *ids, int n_words, float *logits,
                                     attn_error *err) {
    if (!m->vt->prefix_logits)
        return attn_errorf(err, ATTN_ERR_ARG, "prefix logits: %s is not recurrent",
                           attn_arch_name(m->cfg.arch));
    if (!logits) return attn_errorf(err, ATTN_ERR_ARG, "prefix logits: need logits");
    const attn_batch b = {.B = 1, .T = n_words, .ids = ids, .lengths = &n_words};
    attn_status st = attn_batch_validate(m, &b, err);
    return st == ATTN_OK ? m->vt->prefix_logits(m, ids, n_words, logits, err) : st;
}

attn_status attn_model_input(const attn_model *m, const float **x, const float **d_x, int *n_rows,
                             int *width, attn_error *err) {
    const float *xs = NULL, *ds = NULL;
    int n = 0;
    m->vt->input(m, &xs, &ds, &n);
    if (n == 0)
        return attn_errorf(err, ATTN_ERR_ARG, "model input: the last forward was not at batch 1");
    if (x) *x = xs;
    if (d_x) *d_x = ds;
    if (n_rows) *n_rows = n;
    if (width) *width = m->cfg.embed_dim;
    return ATTN_OK;
}

attn_status attn_model_attention_probs(const attn_model *m, int layer, const float **probs, int *S,
                                       attn_error *err) {
    if (!m->vt->attention_probs)
        return attn_errorf(err, ATTN_ERR_ARG, "attention probs: %s has no attention",
                           attn_arch_name(m->cfg.arch));
    if (layer < 0 || layer >= m->cfg.n_layers)
        return attn_errorf(err, ATTN_ERR_ARG, "attention probs: layer %d of %d", layer,
                           m->cfg.n_layers);
    const float *p = m->vt->attention_probs(m, layer, S);
    if (!p)
        return attn_errorf(err, ATTN_ERR_ARG,
                           "attention probs: the last forward was not at batch 1");
    *probs = p;
    return ATTN_OK;
}

attn_status attn_model_attention_qk(const attn_model *m, int layer, const float **q,
                                    const float **k, size_t *head_stride, size_t *row_stride,
                                    int *S, attn_error *err) {
    if (m->vt != &attn_transformer_vt)
        return attn_errorf(err, ATTN_ERR_ARG, "attention q, k: %s has no attention",
                           attn_arch_name(m->cfg.arch));
    if (layer < 0 || layer >= m->cfg.n_layers)
        return attn_errorf(err, ATTN_ERR_ARG, "attention q, k: layer %d of %d", layer,
                           m->cfg.n_layers);
    if (!attn_transformer_qk(m, layer, q, k, head_stride, row_stride, S))
        return attn_errorf(err, ATTN_ERR_ARG,
                           "attention q, k: the last forward was not at batch 1");
    return ATTN_OK;
}

bool attn_model_score_bias(const attn_model *m, int S, float *bias) {
    if (m->vt != &attn_transformer_vt || m->cfg.pos != ATTN_POS_ALIBI) return false;
    attn_alibi_bias(bias, m->cfg.n_heads, 0, S, S);
    return true;
}

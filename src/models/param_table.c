/* param_table.c -- the parameter layout both factories embed (model.c for the classifiers,
 * seq2seq.c for the seq2seq models): offsets from a spec table, the flat params and grads,
 * PyTorch-style initialisation in state_dict order, and the lookups behind the public tensor
 * accessors and the architectures' named views. */
#include "model_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The sinusoidal table of Vaswani et al. (2017), scaled by amplitude:
 * table[p, 2i] = amplitude * sin(p / 10000^(2i/D)), table[p, 2i+1] = amplitude * cos(same angle),
 * computed in double and rounded once to float. tools/attn_models.py computes the same. */
float attn_sinusoid_value(int pos, int col, int d, float amplitude) {
    const double angle = (double)pos / pow(10000.0, (double)(col - col % 2) / (double)d);
    return (float)((double)amplitude * (col % 2 ? cos(angle) : sin(angle)));
}

static size_t spec_numel(const attn_param_spec *s) {
    size_t n = 1;
    for (int i = 0; i < s->ndim; i++) n *= (size_t)s->shape[i];
    return n;
}

size_t attn_param_table_count(const attn_param_spec *specs, size_t n_specs) {
    size_t n = 0;
    for (size_t i = 0; i < n_specs; i++) n += spec_numel(&specs[i]);
    return n;
}

/* One tensor's values: the sinusoidal table draws nothing, every other rule draws per element. */
static void init_tensor(const attn_param_spec *s, float *p, attn_rng *rng) {
    const size_t n = spec_numel(s);
    for (size_t j = 0; j < n; j++) {
        switch (s->init) {
        case ATTN_INIT_ZEROS:
            p[j] = 0.0f;
            break;
        case ATTN_INIT_ONES:
            p[j] = 1.0f;
            break;
        case ATTN_INIT_NORMAL:
            p[j] = (float)(s->init_a * attn_rng_normal(rng));
            break;
        case ATTN_INIT_UNIFORM:
            p[j] = attn_rng_uniform_range(rng, -s->init_a, s->init_a);
            break;
        case ATTN_INIT_SINUSOID:
            p[j] = attn_sinusoid_value((int)(j / (size_t)s->shape[1]),
                                       (int)(j % (size_t)s->shape[1]), s->shape[1], s->init_a);
            break;
        }
    }
}

static void init_params(const attn_param_layout *l, uint64_t seed) {
    attn_rng rng = attn_rng_seed(seed);
    for (size_t i = 0; i < l->n_specs; i++)
        init_tensor(&l->specs[i], l->params + l->offsets[i], &rng);
}

attn_status attn_param_layout_create(attn_param_layout *l, size_t n_specs, uint64_t seed,
                                     const attn_param_source *src, attn_error *err) {
    l->n_specs = n_specs;
    l->offsets[0] = 0;
    for (size_t i = 0; i < n_specs; i++)
        l->offsets[i + 1] = l->offsets[i] + spec_numel(&l->specs[i]);
    l->n_params = l->offsets[n_specs];
    l->grads = NULL;
    l->params_borrowed = false;
    l->release = NULL;
    l->owner = NULL;
    if (src && src->params) { /* the caller's, released to it with the model */
        l->params = src->params;
        l->release = src->release;
        l->owner = src->owner;
        return ATTN_OK;
    }
    /* zeros for a loader to fill: calloc's fresh pages cost nothing until written */
    l->params = src ? calloc(l->n_params, sizeof(float)) : malloc(l->n_params * sizeof(float));
    if (!l->params)
        return attn_errorf(err, ATTN_ERR_NOMEM, "out of memory for %zu parameters", l->n_params);
    if (!src) init_params(l, seed);
    return ATTN_OK;
}

attn_param_layout attn_param_layout_borrow(const attn_param_layout *l) {
    attn_param_layout copy = *l;
    copy.grads = NULL;
    copy.params_borrowed = true;
    copy.release = NULL;
    copy.owner = NULL;
    return copy;
}

void attn_param_layout_free(attn_param_layout *l) {
    if (l->params_borrowed)
        ; /* another model's */
    else if (l->release)
        l->release(l->owner);
    else
        free(l->params);
    free(l->grads);
    l->params = l->grads = NULL;
}

attn_status attn_param_layout_grads(attn_param_layout *l, bool *fresh, attn_error *err) {
    *fresh = false;
    if (l->grads) return ATTN_OK;
    l->grads = attn_calloc_large(l->n_params, sizeof(float)); /* swept whole every step */
    if (!l->grads)
        return attn_errorf(err, ATTN_ERR_NOMEM, "out of memory for %zu gradients", l->n_params);
    *fresh = true;
    return ATTN_OK;
}

void attn_param_layout_zero_grads(attn_param_layout *l) {
    if (l->grads) memset(l->grads, 0, l->n_params * sizeof(float));
}

attn_status attn_param_layout_check_finite(const attn_param_layout *l, bool grads,
                                           attn_error *err) {
    const float *base = grads ? l->grads : l->params;
    if (!base) return ATTN_OK;
    for (size_t i = 0; i < l->n_specs; i++) {
        for (size_t j = l->offsets[i]; j < l->offsets[i + 1]; j++) {
            if (!isfinite(base[j]))
                return attn_errorf(err, ATTN_ERR_VALUE, "%s of \"%s\" holds %s at index %zu",
                                   grads ? "gradient" : "parameter", l->specs[i].name,
                                   isnan(base[j]) ? "NaN" : "Inf", j - l->offsets[i]);
        }
    }
    return ATTN_OK;
}

const char *attn_param_layout_name(const attn_param_layout *l, size_t i) {
    return i < l->n_specs ? l->specs[i].name : NULL;
}

int attn_param_layout_shape(const attn_param_layout *l, size_t i, int shape[4]) {
    if (i >= l->n_specs) return 0;
    for (int d = 0; d < 4; d++) shape[d] = d < l->specs[i].ndim ? l->specs[i].shape[d] : 0;
    return l->specs[i].ndim;
}

size_t attn_param_layout_numel(const attn_param_layout *l, size_t i) {
    return l->offsets[i + 1] - l->offsets[i];
}

long attn_param_layout_find(const attn_param_layout *l, const char *name) {
    for (size_t i = 0; i < l->n_specs; i++)
        if (strcmp(l->specs[i].name, name) == 0) return (long)i;
    return -1;
}

float *attn_param_layout_view(const attn_param_layout *l, float *base, const char *name) {
    const long i = attn_param_layout_find(l, name);
    return i < 0 || !base ? NULL : base + l->offsets[i];
}

/* param_table.c -- the parameter layout both factories share (model.c for the classifiers,
 * seq2seq.c for the seq2seq models): offsets from a spec table, PyTorch-style initialisation in
 * state_dict order, and the lookups behind the public tensor accessors. */
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

void attn_param_table_init(attn_param_table t, float *params, uint64_t seed) {
    attn_rng rng = attn_rng_seed(seed);
    for (size_t i = 0; i < t.n_specs; i++) init_tensor(&t.specs[i], params + t.offsets[i], &rng);
}

const char *attn_param_table_name(attn_param_table t, size_t i) {
    return i < t.n_specs ? t.specs[i].name : NULL;
}

int attn_param_table_shape(attn_param_table t, size_t i, int shape[4]) {
    if (i >= t.n_specs) return 0;
    for (int d = 0; d < 4; d++) shape[d] = d < t.specs[i].ndim ? t.specs[i].shape[d] : 0;
    return t.specs[i].ndim;
}

size_t attn_param_table_numel(attn_param_table t, size_t i) {
    return t.offsets[i + 1] - t.offsets[i];
}

long attn_param_table_find(attn_param_table t, const char *name) {
    for (size_t i = 0; i < t.n_specs; i++)
        if (strcmp(t.specs[i].name, name) == 0) return (long)i;
    return -1;
}

float *attn_param_table_view(attn_param_table t, float *base, const char *name) {
    const long i = attn_param_table_find(t, name);
    return i < 0 || !base ? NULL : base + t.offsets[i];
}

attn_status attn_param_table_create(const attn_param_spec *specs, size_t n_specs, size_t *offsets,
                                    uint64_t seed, float **params, size_t *n_params,
                                    attn_error *err) {
    offsets[0] = 0;
    for (size_t i = 0; i < n_specs; i++) offsets[i + 1] = offsets[i] + spec_numel(&specs[i]);
    *n_params = offsets[n_specs];
    *params = malloc(*n_params * sizeof(float));
    if (!*params)
        return attn_errorf(err, ATTN_ERR_NOMEM, "out of memory for %zu parameters", *n_params);
    attn_param_table_init((attn_param_table){specs, offsets, n_specs}, *params, seed);
    return ATTN_OK;
}

attn_status attn_param_table_grads(float **grads, size_t n_params, attn_error *err) {
    *grads = calloc(n_params, sizeof(float));
    if (!*grads)
        return attn_errorf(err, ATTN_ERR_NOMEM, "out of memory for %zu gradients", n_params);
    return ATTN_OK;
}

/* transformer.c -- [CLS] + token embedding + learned positions -> L x nn.TransformerEncoderLayer
 * (pre-norm by default) -> final LayerNorm (pre-norm only) -> Linear(D, 1) on [CLS].
 * (forward/backward: being written under issue 3/4) */
#include "model_internal.h"

#include <math.h>
#include <stdio.h>

/* pos_embedding init: N(0, 0.02^2), the documented choice (tools/attn_models.py does the same). */
#define POS_EMBEDDING_STD 0.02f

static size_t transformer_specs(const attn_model_config *c, attn_param_spec *s) {
    const int V = c->vocab_size, D = c->embed_dim, F = c->ffn_dim, P = c->max_len;
    size_t n = 0;
    char name[ATTN_NAME_MAX];
    /* A module's own parameters come before its children's in state_dict order. */
    attn_spec_set(&s[n++], "pos_embedding", 2, (int[]){P, D}, ATTN_INIT_NORMAL,
                  POS_EMBEDDING_STD);
    attn_spec_set(&s[n++], "embedding.weight", 2, (int[]){V, D}, ATTN_INIT_NORMAL, 1.0f);
    const float xavier = sqrtf(6.0f / (float)(D + 3 * D)); /* in_proj: xavier_uniform_ */
    const float kd = 1.0f / sqrtf((float)D), kf = 1.0f / sqrtf((float)F);
    for (int l = 0; l < c->n_layers; l++) {
#define LAYER_SPEC(suffix, ndim, shape, init, a)                                               \
    do {                                                                                       \
        snprintf(name, sizeof name, "layers.%d.%s", l, suffix);                                \
        attn_spec_set(&s[n++], name, ndim, shape, init, a);                                    \
    } while (0)
        LAYER_SPEC("self_attn.in_proj_weight", 2, ((int[]){3 * D, D}), ATTN_INIT_UNIFORM, xavier);
        LAYER_SPEC("self_attn.in_proj_bias", 1, ((int[]){3 * D}), ATTN_INIT_ZEROS, 0.0f);
        LAYER_SPEC("self_attn.out_proj.weight", 2, ((int[]){D, D}), ATTN_INIT_UNIFORM, kd);
        LAYER_SPEC("self_attn.out_proj.bias", 1, ((int[]){D}), ATTN_INIT_ZEROS, 0.0f);
        LAYER_SPEC("linear1.weight", 2, ((int[]){F, D}), ATTN_INIT_UNIFORM, kd);
        LAYER_SPEC("linear1.bias", 1, ((int[]){F}), ATTN_INIT_UNIFORM, kd);
        LAYER_SPEC("linear2.weight", 2, ((int[]){D, F}), ATTN_INIT_UNIFORM, kf);
        LAYER_SPEC("linear2.bias", 1, ((int[]){D}), ATTN_INIT_UNIFORM, kf);
        LAYER_SPEC("norm1.weight", 1, ((int[]){D}), ATTN_INIT_ONES, 0.0f);
        LAYER_SPEC("norm1.bias", 1, ((int[]){D}), ATTN_INIT_ZEROS, 0.0f);
        LAYER_SPEC("norm2.weight", 1, ((int[]){D}), ATTN_INIT_ONES, 0.0f);
        LAYER_SPEC("norm2.bias", 1, ((int[]){D}), ATTN_INIT_ZEROS, 0.0f);
#undef LAYER_SPEC
    }
    if (c->norm == ATTN_NORM_PRE) {
        attn_spec_set(&s[n++], "norm.weight", 1, (int[]){D}, ATTN_INIT_ONES, 0.0f);
        attn_spec_set(&s[n++], "norm.bias", 1, (int[]){D}, ATTN_INIT_ZEROS, 0.0f);
    }
    attn_spec_set(&s[n++], "head.weight", 2, (int[]){1, D}, ATTN_INIT_UNIFORM, kd);
    attn_spec_set(&s[n++], "head.bias", 1, (int[]){1}, ATTN_INIT_UNIFORM, kd);
    return n;
}

/* ---- placeholder vtable until forward/backward land (issue 3) ---- */
static attn_status transformer_setup(attn_model *m, attn_error *err) {
    (void)m;
    (void)err;
    return ATTN_OK;
}
static void transformer_set_grads(attn_model *m) { (void)m; }
static attn_status transformer_forward(attn_model *m, const attn_batch *b, float *logits,
                                attn_error *err) {
    (void)m;
    (void)b;
    (void)logits;
    return attn_errorf(err, ATTN_ERR_ARG, "transformer: forward not built yet");
}
static void transformer_backward(attn_model *m, const attn_batch *b, const float *d_logits) {
    (void)m;
    (void)b;
    (void)d_logits;
}
static void transformer_destroy(attn_model *m) { (void)m; }

const attn_model_vt attn_transformer_vt = {"transformer", transformer_specs, transformer_setup, transformer_set_grads,
                                      transformer_forward, transformer_backward, transformer_destroy};

/* recurrent_specs.c -- the recurrent classifiers' parameters: the spec table in state_dict order
 * (embedding, per layer <cell>.weight_ih_l<l>, weight_hh, bias_ih, bias_hh, then the head) with
 * PyTorch's initialisers, and the named views into params or grads (model_internal.h). The core
 * that runs them is recurrent.c. */
#include "model_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

size_t attn_recurrent_specs(const attn_model_config *c, const attn_recurrent_cell *cell,
                            attn_param_spec *s) {
    const int V = c->vocab_size, E = c->embed_dim, H = c->hidden_size, GH = cell->G * H;
    /* nn.RNN/LSTM/GRU: U(-1/sqrt(H), 1/sqrt(H)) for all; nn.Linear(H, 1): U(-1/sqrt(H), .) */
    const float k = 1.0f / sqrtf((float)H);
    size_t n = 0;
    char name[ATTN_NAME_MAX];
    attn_spec_set(&s[n++], "embedding.weight", 2, (int[]){V, E}, ATTN_INIT_NORMAL, 1.0f);
    for (int l = 0; l < c->n_layers; l++) {
        const int I = l == 0 ? E : H;
        snprintf(name, sizeof name, "%s.weight_ih_l%d", cell->name, l);
        attn_spec_set(&s[n++], name, 2, (int[]){GH, I}, ATTN_INIT_UNIFORM, k);
        snprintf(name, sizeof name, "%s.weight_hh_l%d", cell->name, l);
        attn_spec_set(&s[n++], name, 2, (int[]){GH, H}, ATTN_INIT_UNIFORM, k);
        snprintf(name, sizeof name, "%s.bias_ih_l%d", cell->name, l);
        attn_spec_set(&s[n++], name, 1, (int[]){GH}, ATTN_INIT_UNIFORM, k);
        snprintf(name, sizeof name, "%s.bias_hh_l%d", cell->name, l);
        attn_spec_set(&s[n++], name, 1, (int[]){GH}, ATTN_INIT_UNIFORM, k);
    }
    attn_spec_set(&s[n++], "head.weight", 2, (int[]){1, H}, ATTN_INIT_UNIFORM, k);
    attn_spec_set(&s[n++], "head.bias", 1, (int[]){1}, ATTN_INIT_UNIFORM, k);
    return n;
}

void attn_recurrent_bind(attn_model *m, float *base, const char *cell, attn_recurrent_tensors *t) {
    char name[ATTN_NAME_MAX];
    memset(t, 0, sizeof *t);
    t->embedding = attn_model_view(m, base, "embedding.weight");
    for (int l = 0; l < m->cfg.n_layers && l < ATTN_RECURRENT_MAX_LAYERS; l++) {
        attn_recurrent_layer_tensors *lt = &t->layer[l];
#define BIND(field)                                                                                \
    (snprintf(name, sizeof name, "%s." #field "_l%d", cell, l),                                    \
     lt->field = attn_model_view(m, base, name))
        BIND(weight_ih);
        BIND(weight_hh);
        BIND(bias_ih);
        BIND(bias_hh);
#undef BIND
    }
    t->head_weight = attn_model_view(m, base, "head.weight");
    t->head_bias = attn_model_view(m, base, "head.bias");
}

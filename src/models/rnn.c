/* rnn.c -- Elman RNN: embedding -> nn.RNN(E, H, tanh) -> h after the last word -> Linear(H, 1).
 * (forward/backward: being written under issue 3/4) */
#include "model_internal.h"

#include <math.h>

static size_t rnn_specs(const attn_model_config *c, attn_param_spec *s) {
    const int V = c->vocab_size, E = c->embed_dim, H = c->hidden_size;
    const float k = 1.0f / sqrtf((float)H); /* nn.RNN: U(-1/sqrt(H), 1/sqrt(H)) for all */
    attn_spec_set(&s[0], "embedding.weight", 2, (int[]){V, E}, ATTN_INIT_NORMAL, 1.0f);
    attn_spec_set(&s[1], "rnn.weight_ih_l0", 2, (int[]){H, E}, ATTN_INIT_UNIFORM, k);
    attn_spec_set(&s[2], "rnn.weight_hh_l0", 2, (int[]){H, H}, ATTN_INIT_UNIFORM, k);
    attn_spec_set(&s[3], "rnn.bias_ih_l0", 1, (int[]){H}, ATTN_INIT_UNIFORM, k);
    attn_spec_set(&s[4], "rnn.bias_hh_l0", 1, (int[]){H}, ATTN_INIT_UNIFORM, k);
    const float kh = 1.0f / sqrtf((float)H); /* nn.Linear: U(-1/sqrt(fan_in), .) */
    attn_spec_set(&s[5], "head.weight", 2, (int[]){1, H}, ATTN_INIT_UNIFORM, kh);
    attn_spec_set(&s[6], "head.bias", 1, (int[]){1}, ATTN_INIT_UNIFORM, kh);
    return 7;
}

/* ---- placeholder vtable until forward/backward land (issue 3) ---- */
static attn_status rnn_setup(attn_model *m, attn_error *err) {
    (void)m;
    (void)err;
    return ATTN_OK;
}
static void rnn_set_grads(attn_model *m) { (void)m; }
static attn_status rnn_forward(attn_model *m, const attn_batch *b, float *logits,
                                attn_error *err) {
    (void)m;
    (void)b;
    (void)logits;
    return attn_errorf(err, ATTN_ERR_ARG, "rnn: forward not built yet");
}
static void rnn_backward(attn_model *m, const attn_batch *b, const float *d_logits) {
    (void)m;
    (void)b;
    (void)d_logits;
}
static void rnn_destroy(attn_model *m) { (void)m; }

const attn_model_vt attn_rnn_vt = {"rnn", rnn_specs, rnn_setup, rnn_set_grads,
                                      rnn_forward, rnn_backward, rnn_destroy};

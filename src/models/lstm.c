/* lstm.c -- LSTM: embedding -> nn.LSTM(E, H) (gates i,f,g,o) -> h after the last word ->
 * Linear(H, 1). (forward/backward: being written under issue 3/4) */
#include "model_internal.h"

#include <math.h>

static size_t lstm_specs(const attn_model_config *c, attn_param_spec *s) {
    const int V = c->vocab_size, E = c->embed_dim, H = c->hidden_size;
    const float k = 1.0f / sqrtf((float)H); /* nn.LSTM: U(-1/sqrt(H), 1/sqrt(H)) for all */
    attn_spec_set(&s[0], "embedding.weight", 2, (int[]){V, E}, ATTN_INIT_NORMAL, 1.0f);
    attn_spec_set(&s[1], "lstm.weight_ih_l0", 2, (int[]){4 * H, E}, ATTN_INIT_UNIFORM, k);
    attn_spec_set(&s[2], "lstm.weight_hh_l0", 2, (int[]){4 * H, H}, ATTN_INIT_UNIFORM, k);
    attn_spec_set(&s[3], "lstm.bias_ih_l0", 1, (int[]){4 * H}, ATTN_INIT_UNIFORM, k);
    attn_spec_set(&s[4], "lstm.bias_hh_l0", 1, (int[]){4 * H}, ATTN_INIT_UNIFORM, k);
    attn_spec_set(&s[5], "head.weight", 2, (int[]){1, H}, ATTN_INIT_UNIFORM, k);
    attn_spec_set(&s[6], "head.bias", 1, (int[]){1}, ATTN_INIT_UNIFORM, k);
    return 7;
}

/* ---- placeholder vtable until forward/backward land (issue 3) ---- */
static attn_status lstm_setup(attn_model *m, attn_error *err) {
    (void)m;
    (void)err;
    return ATTN_OK;
}
static void lstm_set_grads(attn_model *m) { (void)m; }
static attn_status lstm_forward(attn_model *m, const attn_batch *b, float *logits,
                                attn_error *err) {
    (void)m;
    (void)b;
    (void)logits;
    return attn_errorf(err, ATTN_ERR_ARG, "lstm: forward not built yet");
}
static void lstm_backward(attn_model *m, const attn_batch *b, const float *d_logits) {
    (void)m;
    (void)b;
    (void)d_logits;
}
static void lstm_destroy(attn_model *m) { (void)m; }

const attn_model_vt attn_lstm_vt = {"lstm", lstm_specs, lstm_setup, lstm_set_grads,
                                      lstm_forward, lstm_backward, lstm_destroy};

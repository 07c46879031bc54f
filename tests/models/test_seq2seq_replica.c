/* test_seq2seq_replica.c -- a seq2seq replica (attn_seq2seq_replica) reads its model's
 * parameters and is that model to the bit: teacher-forced logits, gradients and greedy decoding
 * (with and without the KV cache) of all three architectures; it follows the model's parameters
 * when they change; its gradients are its own; a gradient buffer moves between it and its
 * model (attn_seq2seq_grads_take/give); it inherits the causal-mask setting. */
#include "attn_seq2seq.h"
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

static attn_seq2seq *make(attn_s2s_arch arch) {
    attn_seq2seq_config c = attn_seq2seq_config_default(arch);
    c.d_model = 8;
    c.n_heads = 2;
    c.ffn_dim = 12;
    c.enc_layers = 1;
    c.dec_layers = 1;
    c.hidden_size = 10;
    c.max_src_len = 9;
    c.max_tgt_len = 6;
    attn_error err;
    attn_seq2seq *m = NULL;
    ck_assert_msg(attn_seq2seq_create(&c, 3, &m, &err) == ATTN_OK, "%s", err.msg);
    return m;
}

static const int SRC[2 * 7] = {3, 11, 15, 17, 22, 42, 2, 5, 12, 33, 0, 0, 0, 0};
static const int SRC_LEN[2] = {7, 3};
static const int TGT[2 * 5] = {ATTN_TGT_BOS, ATTN_TGT_NEGATIVE, 3, 15, 22,
                               ATTN_TGT_BOS, ATTN_TGT_POSITIVE, 0, 0,  0};
static const int TGT_LEN[2] = {5, 2};
static const attn_s2s_batch BATCH = {2, 7, 5, SRC, SRC_LEN, TGT, TGT_LEN};
#define N_ROWS 7

/* logits [N_ROWS, V] and the gradient of sum(logits * weights) into grads (a copy, P floats). */
static void forward_backward(attn_seq2seq *m, float *logits, float *grads) {
    const int V = attn_seq2seq_config_of(m)->tgt_vocab;
    attn_error err;
    float *d = malloc((size_t)N_ROWS * V * sizeof *d);
    ck_assert_ptr_nonnull(d);
    for (int i = 0; i < N_ROWS * V; i++) d[i] = (float)((i * 7) % 11 - 5) / 8.0f;
    attn_seq2seq_zero_grad(m);
    ck_assert_msg(attn_seq2seq_forward(m, &BATCH, logits, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_msg(attn_seq2seq_backward(m, &BATCH, d, &err) == ATTN_OK, "%s", err.msg);
    memcpy(grads, attn_seq2seq_grads(m), attn_seq2seq_n_params(m) * sizeof *grads);
    free(d);
}

static void same_decoding(attn_seq2seq *a, attn_seq2seq *b, bool cache) {
    const int V = attn_seq2seq_config_of(a)->tgt_vocab;
    int out_a[5], out_b[5], n_a, n_b, s_a, s_b;
    float *la = malloc(6 * (size_t)V * sizeof *la), *lb = malloc(6 * (size_t)V * sizeof *lb);
    ck_assert(la && lb);
    attn_error err;
    ck_assert(attn_seq2seq_greedy(a, SRC, 7, 5, cache, out_a, &n_a, la, &s_a, &err) == ATTN_OK);
    ck_assert(attn_seq2seq_greedy(b, SRC, 7, 5, cache, out_b, &n_b, lb, &s_b, &err) == ATTN_OK);
    ck_assert_int_eq(n_a, n_b);
    ck_assert_int_eq(s_a, s_b);
    ck_assert(memcmp(out_a, out_b, (size_t)n_a * sizeof *out_a) == 0);
    ck_assert_msg(memcmp(la, lb, (size_t)s_a * V * sizeof *la) == 0, "step logits differ");
    free(la);
    free(lb);
}

START_TEST(test_replica_is_the_model) {
    const attn_s2s_arch arch = (attn_s2s_arch)_i;
    attn_seq2seq *m = make(arch), *r = NULL;
    attn_error err;
    ck_assert_msg(attn_seq2seq_replica(m, &r, &err) == ATTN_OK, "%s", err.msg);
    const size_t P = attn_seq2seq_n_params(m);
    const int V = attn_seq2seq_config_of(m)->tgt_vocab;
    ck_assert_uint_eq(attn_seq2seq_n_params(r), P);
    ck_assert_ptr_eq(attn_seq2seq_params(r), attn_seq2seq_params(m));
    float *lm = malloc((size_t)N_ROWS * V * sizeof *lm), *lr = malloc((size_t)N_ROWS * V * 4);
    float *gm = malloc(P * sizeof *gm), *gr = malloc(P * sizeof *gr);
    ck_assert(lm && lr && gm && gr);
    for (int round = 0; round < 2; round++) {
        forward_backward(m, lm, gm);
        forward_backward(r, lr, gr);
        ck_assert_msg(memcmp(lm, lr, (size_t)N_ROWS * V * sizeof *lm) == 0, "logits differ");
        ck_assert_msg(memcmp(gm, gr, P * sizeof *gm) == 0, "gradients differ");
        ck_assert_ptr_ne(attn_seq2seq_grads(r), attn_seq2seq_grads(m));
        same_decoding(m, r, true);
        same_decoding(m, r, false);
        /* the replica reads the model's parameters as they are now */
        float *p = attn_seq2seq_params(m);
        for (size_t i = 0; i < P; i++) p[i] -= 0.05f * gm[i];
    }
    /* its gradients are its own: zeroing the replica's leaves the model's */
    attn_seq2seq_zero_grad(r);
    ck_assert(memcmp(attn_seq2seq_grads(m), gm, P * sizeof *gm) == 0);
    free(lm), free(lr), free(gm), free(gr);
    attn_seq2seq_free(r);
    attn_seq2seq_free(m);
}
END_TEST

/* A gradient buffer moved between models (attn serve lends one to the decoder workers
 * explaining a big model): taken from m it is no longer m's; given to a replica, that replica's
 * backward adds into it through every gradient view (m's own gradients, bit for bit), and m's
 * next backward allocates a fresh buffer. */
START_TEST(test_grads_move_between_models) {
    const attn_s2s_arch arch = (attn_s2s_arch)_i;
    attn_seq2seq *m = make(arch), *r = NULL;
    attn_error err;
    const size_t P = attn_seq2seq_n_params(m);
    const int V = attn_seq2seq_config_of(m)->tgt_vocab;
    float *logits = malloc((size_t)N_ROWS * V * sizeof *logits);
    float *once = malloc(P * sizeof *once), *again = malloc(P * sizeof *again);
    ck_assert(logits && once && again);
    forward_backward(m, logits, once);
    float *g = attn_seq2seq_grads_take(m);
    ck_assert_ptr_nonnull(g);
    ck_assert_ptr_null(attn_seq2seq_grads(m));
    ck_assert_msg(attn_seq2seq_replica(m, &r, &err) == ATTN_OK, "%s", err.msg);
    attn_seq2seq_grads_give(r, g);
    ck_assert_ptr_eq(attn_seq2seq_grads(r), g);
    for (size_t i = 0; i < P; i++) g[i] = 1e3f; /* what the previous holder left: zeroed first */
    forward_backward(r, logits, again);
    ck_assert_ptr_eq(attn_seq2seq_grads(r), g);
    tu_assert_identical("the replica's backward into the given buffer", g, once, P);
    forward_backward(m, logits, again);
    ck_assert(attn_seq2seq_grads(m) != NULL && attn_seq2seq_grads(m) != g);
    tu_assert_identical("m's fresh buffer", attn_seq2seq_grads(m), once, P);
    attn_seq2seq_grads_give(m, NULL); /* frees m's own */
    ck_assert_ptr_null(attn_seq2seq_grads(m));
    attn_seq2seq_free(r); /* frees g */
    attn_seq2seq_free(m);
    free(logits), free(once), free(again);
}
END_TEST

START_TEST(test_replica_keeps_the_mask_setting) {
    attn_seq2seq *m = make(ATTN_S2S_TRANSFORMER), *r = NULL;
    attn_error err;
    ck_assert(attn_seq2seq_causal_mask(m));
    ck_assert(attn_seq2seq_set_causal_mask(m, false, &err) == ATTN_OK);
    ck_assert(attn_seq2seq_replica(m, &r, &err) == ATTN_OK);
    ck_assert(!attn_seq2seq_causal_mask(r));
    const int V = attn_seq2seq_config_of(m)->tgt_vocab;
    float *lm = malloc((size_t)N_ROWS * V * 4), *lr = malloc((size_t)N_ROWS * V * 4);
    ck_assert(lm && lr);
    ck_assert(attn_seq2seq_forward(m, &BATCH, lm, &err) == ATTN_OK);
    ck_assert(attn_seq2seq_forward(r, &BATCH, lr, &err) == ATTN_OK);
    ck_assert(memcmp(lm, lr, (size_t)N_ROWS * V * 4) == 0);
    free(lm), free(lr);
    attn_seq2seq_free(r);
    attn_seq2seq_free(m);
    attn_seq2seq *g = make(ATTN_S2S_GRU);
    ck_assert(attn_seq2seq_causal_mask(g)); /* no self-attention: nothing to unmask */
    attn_seq2seq_free(g);
}
END_TEST

START_TEST(test_replica_refusals) {
    attn_error err;
    attn_seq2seq *r = (attn_seq2seq *)&err;
    ck_assert_int_eq(attn_seq2seq_replica(NULL, &r, &err), ATTN_ERR_ARG);
}
END_TEST

int main(void) {
    Suite *s = suite_create("seq2seq_replica");
    TCase *tc = tcase_create("replica");
    tcase_add_loop_test(tc, test_replica_is_the_model, ATTN_S2S_TRANSFORMER, ATTN_S2S_ATTN + 1);
    tcase_add_loop_test(tc, test_grads_move_between_models, ATTN_S2S_TRANSFORMER,
                        ATTN_S2S_ATTN + 1);
    tcase_add_test(tc, test_replica_keeps_the_mask_setting);
    tcase_add_test(tc, test_replica_refusals);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}

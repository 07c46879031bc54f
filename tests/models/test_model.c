/* test_model.c -- the model factory: default parameter counts, tensor names and shapes in
 * state_dict order (tools/attn_models.py), init rules, config and batch validation errors that
 * name the field, and the accumulate contract of attn_model_backward. */
#include "model_internal.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static attn_model *make(attn_arch arch) {
    return tu_model_default(arch, 1);
}

typedef struct expect_tensor {
    const char *name;
    int ndim, shape[2];
} expect_tensor;

static void check_table(attn_model *m, const expect_tensor *want, size_t n, size_t n_params) {
    ck_assert_uint_eq(attn_model_tensor_count(m), n);
    ck_assert_uint_eq(attn_model_n_params(m), n_params);
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        int shape[4];
        ck_assert_str_eq(attn_model_tensor_name(m, i), want[i].name);
        ck_assert_int_eq(attn_model_tensor_shape(m, i, shape), want[i].ndim);
        size_t numel = 1;
        for (int d = 0; d < want[i].ndim; d++) {
            ck_assert_int_eq(shape[d], want[i].shape[d]);
            numel *= (size_t)want[i].shape[d];
        }
        ck_assert_uint_eq(attn_model_tensor_offset(m, i), off);
        ck_assert_uint_eq(attn_model_tensor_numel(m, i), numel);
        ck_assert_int_eq(attn_model_tensor_find(m, want[i].name), (long)i);
        off += numel;
    }
    ck_assert_uint_eq(off, n_params);
    ck_assert_int_eq(attn_model_tensor_find(m, "no.such.tensor"), -1);
}

/* nn.RNN / nn.LSTM (E = 16, H = 32) between the embedding (V = 91) and the head: `gates` rows
 * of H per weight (1 for the RNN, 4 for the LSTM: i, f, g, o), prefixed `prefix`. */
static void check_recurrent_table(attn_arch arch, const char *prefix, int gates, size_t n_params) {
    char names[4][64];
    static const char *const suffix[4] = {"weight_ih_l0", "weight_hh_l0", "bias_ih_l0",
                                          "bias_hh_l0"};
    for (int i = 0; i < 4; i++) snprintf(names[i], sizeof names[i], "%s.%s", prefix, suffix[i]);
    const int G = gates * 32;
    const expect_tensor want[] = {{"embedding.weight", 2, {91, 16}},
                                  {names[0], 2, {G, 16}},
                                  {names[1], 2, {G, 32}},
                                  {names[2], 1, {G}},
                                  {names[3], 1, {G}},
                                  {"head.weight", 2, {1, 32}},
                                  {"head.bias", 1, {1}}};
    attn_model *m = make(arch);
    check_table(m, want, 7, n_params);
    attn_model_free(m);
}

START_TEST(test_rnn_table) {
    check_recurrent_table(ATTN_ARCH_RNN, "rnn", 1, 3089);
}
END_TEST

START_TEST(test_lstm_table) {
    check_recurrent_table(ATTN_ARCH_LSTM, "lstm", 4, 7889);
}
END_TEST

START_TEST(test_gru_table) {
    check_recurrent_table(ATTN_ARCH_GRU, "gru", 3, 6289); /* gates r, z, n */
}
END_TEST

START_TEST(test_transformer_table) {
    expect_tensor want[32];
    char names[32][64];
    size_t n = 0;
    want[n++] = (expect_tensor){"pos_embedding", 2, {81, 32}};
    want[n++] = (expect_tensor){"embedding.weight", 2, {91, 32}};
    static const expect_tensor layer[] = {{"self_attn.in_proj_weight", 2, {96, 32}},
                                          {"self_attn.in_proj_bias", 1, {96}},
                                          {"self_attn.out_proj.weight", 2, {32, 32}},
                                          {"self_attn.out_proj.bias", 1, {32}},
                                          {"linear1.weight", 2, {64, 32}},
                                          {"linear1.bias", 1, {64}},
                                          {"linear2.weight", 2, {32, 64}},
                                          {"linear2.bias", 1, {32}},
                                          {"norm1.weight", 1, {32}},
                                          {"norm1.bias", 1, {32}},
                                          {"norm2.weight", 1, {32}},
                                          {"norm2.bias", 1, {32}}};
    for (int l = 0; l < 2; l++)
        for (int j = 0; j < 12; j++) {
            snprintf(names[n], sizeof names[n], "layers.%d.%s", l, layer[j].name);
            want[n] = layer[j];
            want[n].name = names[n];
            n++;
        }
    want[n++] = (expect_tensor){"norm.weight", 1, {32}};
    want[n++] = (expect_tensor){"norm.bias", 1, {32}};
    want[n++] = (expect_tensor){"head.weight", 2, {1, 32}};
    want[n++] = (expect_tensor){"head.bias", 1, {1}};
    attn_model *m = make(ATTN_ARCH_TRANSFORMER);
    check_table(m, want, n, 22689);
    attn_model_free(m);

    /* post-norm has no final "norm" */
    attn_model_config c = attn_model_config_default(ATTN_ARCH_TRANSFORMER);
    c.norm = ATTN_NORM_POST;
    m = tu_model_new(&c, 1);
    ck_assert_uint_eq(attn_model_n_params(m), 22689 - 64);
    ck_assert_int_eq(attn_model_tensor_find(m, "norm.weight"), -1);
    attn_model_free(m);
}
END_TEST

/* Init rules (PyTorch's): Linear/RNN uniform within +-bound, LayerNorm ones/zeros, in_proj
 * bias zeros, embeddings N(0,1) (std near 1); pos_embedding the sinusoidal table times 2. */
START_TEST(test_init_rules) {
    attn_model *m = make(ATTN_ARCH_TRANSFORMER);
    for (size_t i = 0; i < m->n_specs; i++) {
        const attn_param_spec *s = &m->specs[i];
        const float *p = attn_model_params(m) + attn_model_tensor_offset(m, i);
        size_t n = attn_model_tensor_numel(m, i);
        double sum2 = 0.0;
        for (size_t j = 0; j < n; j++) {
            if (s->init == ATTN_INIT_UNIFORM)
                ck_assert_msg(fabsf(p[j]) <= s->init_a, "%s[%zu] = %g outside +-%g", s->name, j,
                              p[j], s->init_a);
            if (s->init == ATTN_INIT_ZEROS) ck_assert_float_eq(p[j], 0.0f);
            if (s->init == ATTN_INIT_ONES) ck_assert_float_eq(p[j], 1.0f);
            sum2 += (double)p[j] * p[j];
        }
        if (s->init == ATTN_INIT_NORMAL) {
            double std = sqrt(sum2 / n);
            ck_assert_msg(fabs(std / s->init_a - 1.0) < 0.1, "%s: std %g, expected %g", s->name,
                          std, s->init_a);
        }
    }
    /* pos_embedding [81, 32]: written out from the formula of Vaswani et al. (2017) with
     * amplitude 2, frequency k = 10000^(-2i/32) for columns 2i (sin) and 2i+1 (cos) */
    ck_assert_str_eq(m->specs[0].name, "pos_embedding");
    const float *pos = attn_model_params(m) + attn_model_tensor_offset(m, 0);
    for (int p = 0; p < 81; p++)
        for (int i = 0; i < 16; i++) {
            double freq = exp(-log(10000.0) * (2.0 * i) / 32.0);
            ck_assert_double_eq_tol(pos[p * 32 + 2 * i], 2.0 * sin(p * freq), 1e-6);
            ck_assert_double_eq_tol(pos[p * 32 + 2 * i + 1], 2.0 * cos(p * freq), 1e-6);
        }
    ck_assert_float_eq(pos[0], 0.0f); /* position 0 ([CLS]): sin 0 = 0, cos 0 = 1 */
    ck_assert_float_eq(pos[1], 2.0f);
    /* the same seed gives the same parameters; another seed does not */
    attn_model *m2 = make(ATTN_ARCH_TRANSFORMER);
    ck_assert_int_eq(
        memcmp(attn_model_params(m), attn_model_params(m2), attn_model_n_params(m) * sizeof(float)),
        0);
    attn_model_free(m2);
    attn_model_free(m);
}
END_TEST

static void expect_config_error(attn_model_config c, const char *field) {
    attn_error err = {0};
    attn_model *m = NULL;
    ck_assert_int_eq(attn_model_config_validate(&c, &err), ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, field) != NULL, "message \"%s\" does not name %s", err.msg,
                  field);
    ck_assert_int_eq(attn_model_create(&c, 1, &m, &err), ATTN_ERR_VALUE);
    ck_assert_ptr_null(m);
    ck_assert_msg(strstr(err.msg, field) != NULL, "message \"%s\" does not name %s", err.msg,
                  field);
}

/* Sets `field` of arch's default config to `value`: the error must name the field. */
#define EXPECT_CONFIG_ERROR(arch, field, value)                                                    \
    do {                                                                                           \
        attn_model_config c_ = attn_model_config_default(arch);                                    \
        c_.field = (value);                                                                        \
        expect_config_error(c_, #field);                                                           \
    } while (0)

START_TEST(test_config_errors) {
    EXPECT_CONFIG_ERROR(ATTN_ARCH_TRANSFORMER, n_heads, 3); /* 32 % 3 != 0 */
    EXPECT_CONFIG_ERROR(ATTN_ARCH_TRANSFORMER, ffn_dim, 0);
    EXPECT_CONFIG_ERROR(ATTN_ARCH_TRANSFORMER, n_layers, 13); /* 1..12 */
    EXPECT_CONFIG_ERROR(ATTN_ARCH_TRANSFORMER, max_len, 1);
    EXPECT_CONFIG_ERROR(ATTN_ARCH_TRANSFORMER, pos, ATTN_N_POS);
    EXPECT_CONFIG_ERROR(ATTN_ARCH_RNN, hidden_size, 0);
    EXPECT_CONFIG_ERROR(ATTN_ARCH_LSTM, vocab_size, 1);
    EXPECT_CONFIG_ERROR(ATTN_ARCH_LSTM, embed_dim, -4);
    EXPECT_CONFIG_ERROR(ATTN_ARCH_LSTM, n_layers, 9); /* 1..8 */
    attn_arch a;
    attn_error err = {0};
    ck_assert_int_eq(attn_arch_from_name("mamba", &a, &err), ATTN_ERR_VALUE);
    ck_assert_ptr_nonnull(strstr(err.msg, "mamba"));
    ck_assert_int_eq(attn_arch_from_name("gru", &a, &err), ATTN_OK);
    ck_assert_int_eq(a, ATTN_ARCH_GRU);
    ck_assert_int_eq(attn_arch_from_name("lstm", &a, &err), ATTN_OK);
    ck_assert_int_eq(a, ATTN_ARCH_LSTM);
}
END_TEST

static void expect_batch_error(attn_model *m, attn_batch b, attn_status st, const char *frag) {
    attn_error err = {0};
    float logits[8];
    ck_assert_int_eq(attn_model_forward(m, &b, logits, &err), st);
    ck_assert_msg(strstr(err.msg, frag) != NULL, "message \"%s\" lacks \"%s\"", err.msg, frag);
}

START_TEST(test_batch_errors) {
    attn_model *rnn = make(ATTN_ARCH_RNN), *tf = make(ATTN_ARCH_TRANSFORMER);
    int ids[2 * 3] = {2, 3, 4, 5, 6, 0}, lengths[2] = {3, 2};
    attn_batch ok = {.B = 2, .T = 3, .ids = ids, .lengths = lengths};
    float logits[2];
    attn_error err;
    ck_assert_int_eq(attn_model_forward(rnn, &ok, logits, &err), ATTN_OK);
    attn_batch b = ok;
    b.B = 0;
    expect_batch_error(rnn, b, ATTN_ERR_ARG, "B >= 1");
    b = ok;
    b.ids = NULL;
    expect_batch_error(rnn, b, ATTN_ERR_ARG, "ids");
    int bad_len[2] = {3, 4};
    b = ok;
    b.lengths = bad_len;
    expect_batch_error(rnn, b, ATTN_ERR_SHAPE, "length 4");
    int bad_ids[6] = {2, 3, 4, 5, 91, 0};
    b = ok;
    b.ids = bad_ids;
    expect_batch_error(rnn, b, ATTN_ERR_VALUE, "id 91");
    /* the Transformer takes at most max_len - 1 = 80 words */
    static int long_ids[81];
    int long_len = 81;
    for (int t = 0; t < 81; t++) long_ids[t] = 2;
    b = (attn_batch){.B = 1, .T = 81, .ids = long_ids, .lengths = &long_len};
    expect_batch_error(tf, b, ATTN_ERR_SHAPE, "at most 80");
    long_len = 80;
    b.T = 80;
    ck_assert_int_eq(attn_model_forward(tf, &b, logits, &err), ATTN_OK);
    ck_assert(isfinite(logits[0]));
    /* a recurrent model has no max_len: its bound is stated in words (it said "max_len 0") */
    const int huge = (1 << 20) + 1;
    int *huge_ids = calloc((size_t)huge, sizeof *huge_ids);
    ck_assert_ptr_nonnull(huge_ids);
    b = (attn_batch){.B = 1, .T = huge, .ids = huge_ids, .lengths = &long_len};
    expect_batch_error(rnn, b, ATTN_ERR_SHAPE, "at most 1048576 words per sentence");
    free(huge_ids);
    attn_model_free(rnn);
    attn_model_free(tf);
}
END_TEST

/* Backward accumulates: two backward passes give twice one pass; zero_grad clears. Padding
 * ids past a sentence's length are ignored whatever they hold. */
START_TEST(test_backward_accumulates) {
    for (int a = 0; a < 3; a++) {
        attn_model *m = make((attn_arch)a);
        int ids[2 * 4] = {2, 3, 4, 5, 6, 7, 0, 0}, lengths[2] = {4, 2};
        attn_batch b = {.B = 2, .T = 4, .ids = ids, .lengths = lengths};
        float logits[2], d_logits[2] = {0.5f, -0.25f};
        attn_error err;
        ck_assert_ptr_null(attn_model_grads(m));
        ck_assert_int_eq(attn_model_forward(m, &b, logits, &err), ATTN_OK);
        ck_assert_int_eq(attn_model_backward(m, &b, d_logits, &err), ATTN_OK);
        size_t n = attn_model_n_params(m);
        float *once = malloc(n * sizeof(float));
        ck_assert_ptr_nonnull(once);
        memcpy(once, attn_model_grads(m), n * sizeof(float));
        ck_assert_int_eq(attn_model_backward(m, &b, d_logits, &err), ATTN_OK);
        /* old + new: exact up to the rounding of sums that add row by row into d_ */
        float *twice = malloc(n * sizeof(float));
        ck_assert_ptr_nonnull(twice);
        double gmax = 0.0;
        for (size_t i = 0; i < n; i++) {
            twice[i] = 2.0f * once[i];
            gmax = fmax(gmax, fabsf(twice[i]));
        }
        tu_assert_close(attn_arch_name((attn_arch)a), attn_model_grads(m), twice, n, 1e-5,
                        1e-3 * gmax);
        free(twice);
        /* garbage in the padding does not change anything */
        int ids2[8] = {2, 3, 4, 5, 6, 7, -5, 1000};
        attn_batch b2 = b;
        b2.ids = ids2;
        float logits2[2];
        attn_model_zero_grad(m);
        ck_assert_int_eq(attn_model_forward(m, &b2, logits2, &err), ATTN_OK);
        ck_assert_int_eq(attn_model_backward(m, &b2, d_logits, &err), ATTN_OK);
        tu_assert_identical("padding garbage: logits", logits2, logits, 2);
        tu_assert_identical("padding garbage: grads", attn_model_grads(m), once, n);
        ck_assert_int_eq(attn_model_check_finite(m, true, &err), ATTN_OK);
        free(once);
        attn_model_free(m);
    }
}
END_TEST

/* A gradient buffer moved between models (attn serve lends one to its explaining workers):
 * taken from m it is no longer m's; given to a replica, that replica's backward adds into it
 * through every gradient view (the same gradients as m's own, bit for bit), and m's next
 * backward allocates a fresh buffer. */
START_TEST(test_grads_move_between_models) {
    for (int a = 0; a < 3; a++) {
        attn_model *m = make((attn_arch)a), *r = NULL;
        int ids[2 * 4] = {2, 3, 4, 5, 6, 7, 0, 0}, lengths[2] = {4, 2};
        attn_batch b = {.B = 2, .T = 4, .ids = ids, .lengths = lengths};
        float logits[2], d_logits[2] = {0.5f, -0.25f};
        attn_error err;
        ck_assert_int_eq(attn_model_forward(m, &b, logits, &err), ATTN_OK);
        ck_assert_int_eq(attn_model_backward(m, &b, d_logits, &err), ATTN_OK);
        const size_t n = attn_model_n_params(m);
        float *once = malloc(n * sizeof(float));
        ck_assert_ptr_nonnull(once);
        memcpy(once, attn_model_grads(m), n * sizeof(float));
        float *g = attn_model_grads_take(m);
        ck_assert_ptr_nonnull(g);
        ck_assert_ptr_null(attn_model_grads(m));
        ck_assert_int_eq(attn_model_replica(m, &r, &err), ATTN_OK);
        attn_model_grads_give(r, g);
        ck_assert_ptr_eq(attn_model_grads(r), g);
        attn_model_zero_grad(r);
        ck_assert_int_eq(attn_model_forward(r, &b, logits, &err), ATTN_OK);
        ck_assert_int_eq(attn_model_backward(r, &b, d_logits, &err), ATTN_OK);
        ck_assert_ptr_eq(attn_model_grads(r), g);
        tu_assert_identical("the replica's backward into the given buffer", g, once, n);
        ck_assert_int_eq(attn_model_backward(m, &b, d_logits, &err), ATTN_OK);
        ck_assert(attn_model_grads(m) != NULL && attn_model_grads(m) != g);
        tu_assert_identical("m's fresh buffer", attn_model_grads(m), once, n);
        attn_model_free(r); /* frees g */
        attn_model_free(m);
        free(once);
    }
}
END_TEST

int main(void) {
    Suite *s = suite_create("models/model");
    TCase *tc = tcase_create("model");
    tcase_add_test(tc, test_rnn_table);
    tcase_add_test(tc, test_lstm_table);
    tcase_add_test(tc, test_gru_table);
    tcase_add_test(tc, test_transformer_table);
    tcase_add_test(tc, test_init_rules);
    tcase_add_test(tc, test_config_errors);
    tcase_add_test(tc, test_batch_errors);
    tcase_add_test(tc, test_backward_accumulates);
    tcase_add_test(tc, test_grads_move_between_models);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}

/* test_encoder_api.c -- attn_encoder (include/attn_encoder.h, src/models/encoder_api.c) against
 * the model it borrows: without a mask, its run on the classifier's own input gives, layer by
 * layer, the attention the classifier used, bit for bit; a padding key gets exactly zero weight
 * from every query, a query with every key padded gets NaN (as PyTorch); argument errors.
 * (Against PyTorch with padding: the CTest examples/encoder_torch.) */
#include "attn_encoder.h"
#include "attn_io.h"
#include "test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static attn_model *load_transformer(void) {
    attn_model *m = NULL;
    attn_error err;
    ck_assert_msg(attn_weights_load_json(tu_source_path("weights/transformer-seed1.json"), &m,
                                         &err) == ATTN_OK,
                  "%s", err.msg);
    return m;
}

START_TEST(test_matches_model) {
    attn_model *m = load_transformer();
    attn_error err;
    int ids[16], n = 0;
    ck_assert(attn_tokenize("the lecture was not very helpful", ids, 16, &n, &err) == ATTN_OK);
    const attn_batch b = {.B = 1, .T = n, .ids = ids, .lengths = &n};
    float logit;
    ck_assert(attn_model_forward(m, &b, &logit, &err) == ATTN_OK);
    const float *x0;
    int rows, D;
    ck_assert(attn_model_input(m, &x0, NULL, &rows, &D, &err) == ATTN_OK);
    float *x = malloc((size_t)rows * D * sizeof *x);
    ck_assert_ptr_nonnull(x);
    memcpy(x, x0, (size_t)rows * D * sizeof *x);
    const int L = attn_model_config_of(m)->n_layers, NH = attn_model_config_of(m)->n_heads;
    /* the model's probabilities before the encoder's run (the model keeps its own buffers) */
    float *want = malloc((size_t)L * NH * rows * rows * sizeof *want);
    ck_assert_ptr_nonnull(want);
    for (int l = 0; l < L; l++) {
        const float *p;
        int S;
        ck_assert(attn_model_attention_probs(m, l, &p, &S, &err) == ATTN_OK && S == rows);
        memcpy(want + (size_t)l * NH * S * S, p, (size_t)NH * S * S * sizeof *p);
    }
    attn_encoder *enc = NULL;
    ck_assert_msg(attn_encoder_create(m, 32, &enc, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_ptr_null(attn_encoder_output(enc)); /* before a run */
    ck_assert_int_eq(attn_encoder_width(enc), D);
    ck_assert(attn_encoder_run(enc, x, NULL, rows, &err) == ATTN_OK);
    for (int l = 0; l < L; l++)
        ck_assert_msg(memcmp(attn_encoder_attention(enc, l), want + (size_t)l * NH * rows * rows,
                             (size_t)NH * rows * rows * sizeof(float)) == 0,
                      "layer %d attention differs from the model's", l);
    ck_assert_ptr_null(attn_encoder_layer_output(enc, L));
    ck_assert_ptr_nonnull(attn_encoder_layer_output(enc, L - 1));

    /* padding: positions 2 and 4 hidden from every query; all hidden: NaN */
    unsigned char pad[8] = {0, 0, 1, 0, 1, 0, 0, 0};
    ck_assert(attn_encoder_run(enc, x, pad, rows, &err) == ATTN_OK);
    for (int l = 0; l < L; l++)
        for (int hq = 0; hq < NH * rows; hq++) {
            const float *row = attn_encoder_attention(enc, l) + (size_t)hq * rows;
            ck_assert(row[2] == 0.0f && row[4] == 0.0f && row[0] > 0.0f);
        }
    memset(pad, 1, sizeof pad);
    ck_assert(attn_encoder_run(enc, x, pad, rows, &err) == ATTN_OK);
    ck_assert(isnan(attn_encoder_attention(enc, 0)[0]));

    /* errors */
    ck_assert_int_eq(attn_encoder_run(enc, x, NULL, 0, &err), ATTN_ERR_ARG);
    ck_assert_int_eq(attn_encoder_run(enc, x, NULL, 33, &err), ATTN_ERR_ARG);
    ck_assert_int_eq(attn_encoder_run(enc, NULL, NULL, 2, &err), ATTN_ERR_ARG);
    attn_encoder_free(enc);
    ck_assert_int_eq(attn_encoder_create(m, 0, &enc, &err), ATTN_ERR_ARG);
    attn_model *rnn = NULL;
    const attn_model_config c = attn_model_config_default(ATTN_ARCH_RNN);
    ck_assert(attn_model_create(&c, 1, &rnn, &err) == ATTN_OK);
    ck_assert_int_eq(attn_encoder_create(rnn, 4, &enc, &err), ATTN_ERR_ARG);
    attn_model_free(rnn);
    free(want);
    free(x);
    attn_model_free(m);
}
END_TEST

int main(void) {
    Suite *s = suite_create("models/encoder_api");
    TCase *tc = tcase_create("encoder_api");
    tcase_add_test(tc, test_matches_model);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}

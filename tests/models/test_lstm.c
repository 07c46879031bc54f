/* test_lstm.c -- the LSTM model: whole-model finite differences, PyTorch golden logits
 * (bit-identical at batch 1) and gradients, padding invariance. */
#include "models_common.h"

/* finite differences on a small padded batch (V=7, E=3, H=4) */
#define FD_STEP 1e-2f
#define FD_ATOL 1e-4
#define FD_RTOL 1e-3
/* a sentence inside a padded batch vs alone: OpenBLAS rounds a GEMM row by its position */
#define PAD_MAX_ULP 32

static attn_model *small_model(uint64_t seed) {
    attn_model_config c = attn_model_config_default(ATTN_ARCH_LSTM);
    c.vocab_size = 7;
    c.embed_dim = 3;
    c.hidden_size = 4;
    attn_model *m = NULL;
    attn_error err;
    ck_assert_int_eq(attn_model_create(&c, seed, &m, &err), ATTN_OK);
    return m;
}

START_TEST(test_finite_differences) {
    attn_rng rng = attn_rng_seed(11);
    attn_model *m = small_model(1);
    mc_perturb(m, 0.1f, &rng);
    mc_batch mb;
    mc_batch_make(&mb, 7, &rng);
    mc_fd_check_model(m, &mb.b, FD_STEP, FD_ATOL, FD_RTOL, &rng);
    attn_model_free(m);
}
END_TEST

START_TEST(test_golden_logits) { mc_assert_golden_logits("lstm"); }
END_TEST

START_TEST(test_golden_grads) { mc_golden_grads("lstm"); }
END_TEST

START_TEST(test_padding_invariance) {
    attn_model_config c = attn_model_config_default(ATTN_ARCH_LSTM);
    attn_model *m = NULL;
    attn_error err;
    ck_assert_int_eq(attn_model_create(&c, 3, &m, &err), ATTN_OK);
    mc_grad_batch g;
    mc_batch_generate(&g, 8, 5);
    mc_padding_invariance(m, &g, PAD_MAX_ULP);
    mc_grad_batch_free(&g);
    attn_model_free(m);
}
END_TEST

int main(void) {
    Suite *s = suite_create("models/lstm");
    TCase *tc = tcase_create("lstm");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_finite_differences);
    tcase_add_test(tc, test_golden_logits);
    tcase_add_test(tc, test_golden_grads);
    tcase_add_test(tc, test_padding_invariance);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}

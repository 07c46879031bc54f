/* recurrent_tests.h -- the test suite of a recurrent model (Elman RNN or LSTM), shared by
 * test_rnn.c and test_lstm.c, which differ only in the architecture: whole-model finite
 * differences, PyTorch golden logits (bit-identical at batch 1) and gradients, padding
 * invariance. The test file's main returns mc_recurrent_main(arch). */
#ifndef ATTN_RECURRENT_TESTS_H
#define ATTN_RECURRENT_TESTS_H

#include "models_common.h"

/* finite differences on a small padded batch (V=7, E=3, H=4) */
#define FD_STEP 1e-2f
#define FD_ATOL 1e-4
#define FD_RTOL 1e-3
/* a sentence inside a padded batch vs alone: OpenBLAS rounds a GEMM row by its position */
#define PAD_MAX_ULP 32

/* The architecture under test; set by mc_recurrent_main before the suite runs. */
static attn_arch rec_arch;

static attn_model *small_model(uint64_t seed) {
    attn_model_config c = attn_model_config_default(rec_arch);
    c.vocab_size = 7;
    c.embed_dim = 3;
    c.hidden_size = 4;
    return tu_model_new(&c, seed);
}

START_TEST(test_finite_differences) {
    attn_model *m = small_model(1);
    mc_fd_check_model(m, 11, FD_STEP, FD_ATOL, FD_RTOL);
    attn_model_free(m);
}
END_TEST

/* golden files are named after the architecture: weights/golden/<rnn|lstm>.*.json */
START_TEST(test_golden_logits) {
    mc_assert_golden_logits(attn_arch_name(rec_arch));
}
END_TEST

START_TEST(test_golden_grads) {
    mc_golden_grads(attn_arch_name(rec_arch));
}
END_TEST

/* weights attn trained (tools/make_golden.py --trained): weights/golden/trained_<arch>.* */
START_TEST(test_golden_logits_trained) {
    char name[32];
    snprintf(name, sizeof name, "trained_%s", attn_arch_name(rec_arch));
    mc_assert_golden_logits(name);
}
END_TEST

START_TEST(test_padding_invariance) {
    attn_model *m = tu_model_default(rec_arch, 3);
    mc_padding_invariance(m, PAD_MAX_ULP);
    attn_model_free(m);
}
END_TEST

/* Runs the suite "models/<arch>" for arch (ATTN_ARCH_RNN or ATTN_ARCH_LSTM). */
static int mc_recurrent_main(attn_arch arch) {
    rec_arch = arch;
    static char suite_name[64];
    snprintf(suite_name, sizeof suite_name, "models/%s", attn_arch_name(arch));
    Suite *s = suite_create(suite_name);
    TCase *tc = tcase_create(attn_arch_name(arch));
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_finite_differences);
    tcase_add_test(tc, test_golden_logits);
    tcase_add_test(tc, test_golden_grads);
    tcase_add_test(tc, test_golden_logits_trained);
    tcase_add_test(tc, test_padding_invariance);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}

#endif /* ATTN_RECURRENT_TESTS_H */

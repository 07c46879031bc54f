/* test_transformer.c -- the Transformer encoder model (pre-norm/ReLU default, post-norm and
 * GELU variants): whole-model finite differences, PyTorch golden logits (bit-identical at
 * batch 1) and gradients, padding invariance. */
#include "models_common.h"

/* finite differences on a small padded batch (V=7, D=8, NH=2, F=6, L=2); the step is small
 * because a ReLU kink inside +-step would spoil the central difference */
#define FD_STEP 2e-3f
#define FD_ATOL 5e-4
#define FD_RTOL 5e-3
/* a sentence inside a padded batch vs alone: OpenBLAS rounds a GEMM row by its position and the
 * bound depends on its kernel set (measured: at most 32 ULP with SkylakeX, 56 with Haswell/Zen;
 * 80 with Haswell on the scalar kernels, ATTN_CPU=scalar) */
#define PAD_MAX_ULP (strcmp(attn_cpu_path(), "avx2") == 0 ? 64u : 128u)
/* GELU: PyTorch 1.13 runs oneDNN's JIT erf-GELU, which the gelu kernel follows (AVX2 injector).
 * Measured: 240/240 identical, max ULP 0; the bound asserts that measurement. */
#define GELU_MAX_ULP 0

static attn_model *small_model(uint64_t seed, attn_norm norm, attn_activation act) {
    attn_model_config c = attn_model_config_default(ATTN_ARCH_TRANSFORMER);
    c.vocab_size = 7;
    c.embed_dim = 8;
    c.n_heads = 2;
    c.ffn_dim = 6;
    c.n_layers = 2;
    c.max_len = MC_T + 1;
    c.norm = norm;
    c.activation = act;
    return tu_model_new(&c, seed);
}

static void fd_variant(attn_norm norm, attn_activation act) {
    attn_model *m = small_model(1, norm, act);
    mc_fd_check_model(m, 21 + (uint64_t)norm * 2 + (uint64_t)act, FD_STEP, FD_ATOL, FD_RTOL);
    attn_model_free(m);
}

START_TEST(test_fd_pre_relu) {
    fd_variant(ATTN_NORM_PRE, ATTN_ACT_RELU);
}
END_TEST
START_TEST(test_fd_post_relu) {
    fd_variant(ATTN_NORM_POST, ATTN_ACT_RELU);
}
END_TEST
START_TEST(test_fd_pre_gelu) {
    fd_variant(ATTN_NORM_PRE, ATTN_ACT_GELU);
}
END_TEST

START_TEST(test_golden_logits) {
    mc_assert_golden_logits("transformer");
}
END_TEST
START_TEST(test_golden_logits_post) {
    mc_assert_golden_logits("transformer_post");
}
END_TEST

/* weights attn trained (tools/make_golden.py --trained) */
START_TEST(test_golden_logits_trained) {
    mc_assert_golden_logits("trained_transformer");
}
END_TEST

START_TEST(test_golden_logits_gelu) {
    float *got, *want;
    bool exact;
    size_t n = mc_golden_logits("transformer_gelu", &got, &want, &exact);
    if (!exact) { /* another CPU class: the same tolerance as every golden logit */
        tu_assert_close("transformer_gelu golden logits (batch 1)", got, want, n, GOLDEN_LOGIT_REL,
                        GOLDEN_LOGIT_FLOOR);
        free(got);
        free(want);
        return;
    }
    tu_compare c = tu_compare_floats(got, want, n);
    printf("  %-44s identical: %zu/%zu, max ULP: %u\n", "transformer_gelu golden logits (batch 1)",
           c.n_equal, n, c.max_ulp);
    ck_assert_msg(c.max_ulp <= GELU_MAX_ULP, "transformer_gelu: item %zu is %u ULP off (bound %d)",
                  c.worst, c.max_ulp, GELU_MAX_ULP);
    free(got);
    free(want);
}
END_TEST

START_TEST(test_golden_grads) {
    mc_golden_grads("transformer");
}
END_TEST
START_TEST(test_golden_grads_post) {
    mc_golden_grads("transformer_post");
}
END_TEST
START_TEST(test_golden_grads_gelu) {
    mc_golden_grads("transformer_gelu");
}
END_TEST

START_TEST(test_padding_invariance) {
    attn_model *m = tu_model_default(ATTN_ARCH_TRANSFORMER, 3);
    attn_rng rng = attn_rng_seed(9);
    mc_perturb(m, 0.05f, &rng); /* non-zero biases, LayerNorm weights away from 1 */
    mc_padding_invariance(m, PAD_MAX_ULP);
    attn_model_free(m);
}
END_TEST

int main(void) {
    Suite *s = suite_create("models/transformer");
    TCase *tc = tcase_create("transformer");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_fd_pre_relu);
    tcase_add_test(tc, test_fd_post_relu);
    tcase_add_test(tc, test_fd_pre_gelu);
    tcase_add_test(tc, test_golden_logits);
    tcase_add_test(tc, test_golden_logits_post);
    tcase_add_test(tc, test_golden_logits_trained);
    tcase_add_test(tc, test_golden_logits_gelu);
    tcase_add_test(tc, test_golden_grads);
    tcase_add_test(tc, test_golden_grads_post);
    tcase_add_test(tc, test_golden_grads_gelu);
    tcase_add_test(tc, test_padding_invariance);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}

/* recurrent_tests.h -- the test suite of a recurrent model (Elman RNN or LSTM), shared by
 * test_rnn.c and test_lstm.c, which differ only in the architecture: whole-model finite
 * differences, PyTorch golden logits (bit-identical at batch 1) and gradients, padding
 * invariance, steps past every sentence's end. The test file's main returns
 * mc_recurrent_main(arch). */
#ifndef ATTN_RECURRENT_TESTS_H
#define ATTN_RECURRENT_TESTS_H

#include "models_common.h"

/* finite differences on a small padded batch (V=7, E=3, H=4) */
#define FD_STEP 1e-2f
#define FD_ATOL 1e-4
#define FD_RTOL 1e-3
/* a sentence inside a padded batch vs alone: OpenBLAS rounds a GEMM row by its position */
#define PAD_MAX_ULP 8

/* The architecture under test; set by mc_recurrent_main before the suite runs. */
static attn_arch rec_arch;

static attn_model *small_model_layers(uint64_t seed, int n_layers) {
    attn_model_config c = attn_model_config_default(rec_arch);
    c.vocab_size = 7;
    c.embed_dim = 3;
    c.hidden_size = 4;
    c.n_layers = n_layers;
    return tu_model_new(&c, seed);
}

static attn_model *small_model(uint64_t seed) {
    return small_model_layers(seed, 1);
}

/* The default sizes with n_layers stacked layers (PyTorch num_layers). */
static attn_model *layered_model(uint64_t seed, int n_layers) {
    attn_model_config c = attn_model_config_default(rec_arch);
    c.n_layers = n_layers;
    return tu_model_new(&c, seed);
}

/* Stacked layers (num_layers 3; E != H so a layer above reads H-wide input): every tensor,
 * "<cell>.weight_ih_l2" included, against central differences. */
START_TEST(test_finite_differences_3_layers) {
    attn_model *m = small_model_layers(2, 3);
    char name[64];
    snprintf(name, sizeof name, "%s.weight_ih_l2", attn_arch_name(rec_arch));
    ck_assert_int_ge(attn_model_tensor_find(m, name), 0);
    int shape[4];
    attn_model_tensor_shape(m, (size_t)attn_model_tensor_find(m, name), shape);
    ck_assert_int_eq(shape[1], 4); /* [G*H, H] */
    mc_fd_check_model(m, 12, FD_STEP, FD_ATOL, FD_RTOL);
    attn_model_free(m);
}
END_TEST

START_TEST(test_padding_invariance_2_layers) {
    attn_model *m = layered_model(5, 2);
    mc_padding_invariance(m, PAD_MAX_ULP);
    attn_model_free(m);
}
END_TEST

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

/* Forward and backward of batch g padded to T words (T >= g->T), upstream gradient r. */
static void run_padded(attn_model *m, const mc_grad_batch *g, int T, const float *r, float *logits,
                       float *grads) {
    int *ids = calloc((size_t)g->B * T, sizeof *ids); /* [PAD] = 0 */
    ck_assert_ptr_nonnull(ids);
    for (int i = 0; i < g->B; i++)
        memcpy(ids + (size_t)i * T, g->ids + (size_t)i * g->T, (size_t)g->T * sizeof *ids);
    attn_batch b = {.B = g->B, .T = T, .ids = ids, .lengths = g->lengths};
    attn_error err;
    attn_model_zero_grad(m);
    ck_assert_int_eq(attn_model_forward(m, &b, logits, &err), ATTN_OK);
    ck_assert_int_eq(attn_model_backward(m, &b, r, &err), ATTN_OK);
    memcpy(grads, attn_model_grads(m), attn_model_n_params(m) * sizeof *grads);
    free(ids);
}

/* Steps past every sentence's end (T larger than the longest sentence: steps where no slot is
 * active, and in the RNN's batch-order slots GEMM rows whose cell work is skipped) change
 * nothing but GEMM rounding: logits within PAD_MAX_ULP, gradients within GOLDEN_GRAD_REL, all
 * finite. Also runs after a larger batch, so the reused arena's stale rows are exercised. */
static void trailing_padding(int n_layers) {
    attn_model *m = layered_model(4, n_layers);
    mc_grad_batch g;
    mc_batch_generate(&g, 6, 9);
    const size_t n = attn_model_n_params(m);
    float r[6], logits_tight[6], logits_long[6];
    float *grads_tight = malloc(n * sizeof(float)), *grads_long = malloc(n * sizeof(float));
    ck_assert(grads_tight && grads_long);
    attn_rng rng = attn_rng_seed(11);
    for (int i = 0; i < g.B; i++) r[i] = attn_rng_uniform_range(&rng, -1.0f, 1.0f);
    run_padded(m, &g, g.T + 7, r, logits_long, grads_long);
    run_padded(m, &g, g.T, r, logits_tight, grads_tight);
    run_padded(m, &g, g.T + 4, r, logits_long, grads_long); /* arena from T + 7 */
    for (size_t j = 0; j < n; j++) ck_assert(isfinite(grads_long[j]));
    tu_assert_ulp("logits, T + 4 vs T", logits_long, logits_tight, (size_t)g.B, PAD_MAX_ULP);
    for (size_t i = 0; i < attn_model_tensor_count(m); i++) {
        size_t off = attn_model_tensor_offset(m, i), k = attn_model_tensor_numel(m, i);
        double wmax = 0.0;
        for (size_t j = 0; j < k; j++) wmax = fmax(wmax, fabs(grads_tight[off + j]));
        char what[128];
        snprintf(what, sizeof what, "T + 4 vs T: %s", attn_model_tensor_name(m, i));
        tu_assert_close(what, grads_long + off, grads_tight + off, k, GOLDEN_GRAD_REL,
                        fmax(GOLDEN_GRAD_FLOOR * wmax, 1e-30));
    }
    free(grads_tight);
    free(grads_long);
    mc_grad_batch_free(&g);
    attn_model_free(m);
}

START_TEST(test_trailing_padding) {
    trailing_padding(1);
}
END_TEST

START_TEST(test_trailing_padding_3_layers) {
    trailing_padding(3);
}
END_TEST

/* A forward that no backward follows (attn_model_forward_infer: one step's gates and states in
 * rolling buffers, the top layer's last h copied out as each sentence ends) gives the logits of
 * attn_model_forward bit for bit: 1-3 layers, H on and off the cells' 16-unit vector path,
 * batches of 1, 37 and 256 generated sentences padded past their longest. The arena is shared, so
 * the forwards alternate in both orders, and a training forward and backward after an infer
 * forward give the gradients of a model that never ran one. A backward right after an infer
 * forward adds nothing. */
static void infer_same_bits(int n_layers, int H, int B) {
    attn_model_config c = attn_model_config_default(rec_arch);
    c.n_layers = n_layers;
    c.hidden_size = H;
    attn_model *m = tu_model_new(&c, 8), *fresh = tu_model_new(&c, 8);
    mc_grad_batch g;
    mc_batch_generate(&g, B, 21 + (uint64_t)B);
    const int T = g.T + 3; /* steps past every sentence */
    int *ids = calloc((size_t)B * T, sizeof *ids);
    float *want = malloc((size_t)B * sizeof(float)), *got = malloc((size_t)B * sizeof(float));
    float *r = malloc((size_t)B * sizeof(float));
    ck_assert(ids && want && got && r);
    for (int i = 0; i < B; i++) {
        memcpy(ids + (size_t)i * T, g.ids + (size_t)i * g.T, (size_t)g.T * sizeof *ids);
        r[i] = (float)(i % 5) - 2.0f;
    }
    const attn_batch b = {.B = B, .T = T, .ids = ids, .lengths = g.lengths};
    attn_error err;
    ck_assert_int_eq(attn_model_forward(m, &b, want, &err), ATTN_OK);
    ck_assert_int_eq(attn_model_forward_infer(m, &b, got, &err), ATTN_OK);
    ck_assert_msg(memcmp(got, want, (size_t)B * sizeof(float)) == 0,
                  "%s, %d layers, H %d, B %d: infer logits differ", attn_arch_name(rec_arch),
                  n_layers, H, B);
    /* a backward after the infer forward adds nothing */
    attn_model_zero_grad(m);
    ck_assert_int_eq(attn_model_backward(m, &b, r, &err), ATTN_OK);
    const size_t n = attn_model_n_params(m);
    for (size_t j = 0; j < n; j++) ck_assert(attn_model_grads(m)[j] == 0.0f);
    /* training after it: the same logits and gradients as the model that never inferred */
    attn_model_zero_grad(m);
    ck_assert_int_eq(attn_model_forward(m, &b, got, &err), ATTN_OK);
    ck_assert_int_eq(attn_model_backward(m, &b, r, &err), ATTN_OK);
    attn_model_zero_grad(fresh);
    ck_assert_int_eq(attn_model_forward(fresh, &b, want, &err), ATTN_OK);
    ck_assert_int_eq(attn_model_backward(fresh, &b, r, &err), ATTN_OK);
    ck_assert(memcmp(got, want, (size_t)B * sizeof(float)) == 0);
    ck_assert(memcmp(attn_model_grads(m), attn_model_grads(fresh), n * sizeof(float)) == 0);
    /* and an infer forward of a smaller batch in the grown arena */
    const attn_batch b1 = {.B = 1, .T = g.lengths[0], .ids = g.ids, .lengths = g.lengths};
    ck_assert_int_eq(attn_model_forward_infer(m, &b1, got, &err), ATTN_OK);
    ck_assert_int_eq(attn_model_forward(fresh, &b1, want, &err), ATTN_OK);
    ck_assert(memcmp(got, want, sizeof(float)) == 0);
    free(ids);
    free(want);
    free(got);
    free(r);
    mc_grad_batch_free(&g);
    attn_model_free(m);
    attn_model_free(fresh);
}

START_TEST(test_forward_infer_same_bits) {
    const int layers[] = {1, 2, 3}, hs[] = {32, 20}, bs[] = {1, 37, 256};
    /* the sanitizer build (tu_small): 1 and 3 layers at B 1 and 37, and B 256 at one layer */
    const bool small = tu_small();
    for (int l = 0; l < 3; l++)
        for (int h = 0; h < 2; h++)
            for (int k = 0; k < 3; k++)
                if (!small || (l != 1 && k < 2) || (l == 0 && h == 0))
                    infer_same_bits(layers[l], hs[h], bs[k]);
}
END_TEST

/* Runs the suite "models/<arch>" for arch (ATTN_ARCH_RNN, ATTN_ARCH_LSTM or ATTN_ARCH_GRU). */
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
    tcase_add_test(tc, test_trailing_padding);
    tcase_add_test(tc, test_finite_differences_3_layers);
    tcase_add_test(tc, test_padding_invariance_2_layers);
    tcase_add_test(tc, test_trailing_padding_3_layers);
    tcase_add_test(tc, test_forward_infer_same_bits);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}

#endif /* ATTN_RECURRENT_TESTS_H */

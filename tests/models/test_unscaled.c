/* test_unscaled.c -- attn_model_config.attn_unscaled (the scaling experiment's models): with
 * head size HS = 4 the scaling divides q by 2, a power of two, so a model without the scaling
 * whose q rows of in_proj (weights and bias) are halved computes the same floats as the scaled
 * model: the same logits bit for bit, and the gradient of those q rows exactly twice the
 * scaled model's (chain rule through W' = W / 2), every other gradient equal. Also: the
 * default is 0 and stays out of weights files; 1 goes through a weights file and back; a
 * value other than 0/1 is rejected. */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static attn_model *make(int unscaled) {
    attn_model_config c = attn_model_config_default(ATTN_ARCH_TRANSFORMER);
    c.embed_dim = 8, c.n_heads = 2, c.ffn_dim = 16, c.attn_unscaled = unscaled;
    attn_model *m = NULL;
    attn_error err;
    ck_assert_msg(attn_model_create(&c, 3, &m, &err) == ATTN_OK, "%s", err.msg);
    return m;
}

static void logits_and_grads(attn_model *m, int B, float *logits) {
    static const int ids[2 * 5] = {5, 17, 30, 44, 2, 61, 8, 90, 0, 0};
    static const int lengths[2] = {5, 3};
    attn_batch b = {B, 5, ids, lengths};
    attn_error err;
    float d[2];
    ck_assert_msg(attn_model_forward(m, &b, logits, &err) == ATTN_OK, "%s", err.msg);
    for (int i = 0; i < B; i++) d[i] = 0.37f + (float)i;
    attn_model_zero_grad(m);
    ck_assert_msg(attn_model_backward(m, &b, d, &err) == ATTN_OK, "%s", err.msg);
}

START_TEST(test_same_function) {
    attn_set_num_threads(1);
    const int B = _i + 1; /* batch 1: the full layers; batch 2: the [CLS]-only last layer */
    attn_model *s = make(0), *u = make(1);
    ck_assert_uint_eq(attn_model_n_params(s), attn_model_n_params(u));
    memcpy(attn_model_params(u), attn_model_params(s), attn_model_n_params(s) * sizeof(float));
    const int D = 8;
    for (int l = 0; l < 2; l++) { /* halve the q rows: in_proj_weight[0:D], in_proj_bias[0:D] */
        char name[64];
        snprintf(name, sizeof name, "layers.%d.self_attn.in_proj_weight", l);
        float *w =
            attn_model_params(u) + attn_model_tensor_offset(u, attn_model_tensor_find(u, name));
        for (int i = 0; i < D * D; i++) w[i] *= 0.5f;
        snprintf(name, sizeof name, "layers.%d.self_attn.in_proj_bias", l);
        float *b =
            attn_model_params(u) + attn_model_tensor_offset(u, attn_model_tensor_find(u, name));
        for (int i = 0; i < D; i++) b[i] *= 0.5f;
    }
    float ls[2], lu[2];
    logits_and_grads(s, B, ls);
    logits_and_grads(u, B, lu);
    tu_assert_identical("logits", lu, ls, (size_t)B);
    for (size_t t = 0; t < attn_model_tensor_count(s); t++) {
        const char *name = attn_model_tensor_name(s, t);
        const size_t off = attn_model_tensor_offset(s, t), n = attn_model_tensor_numel(s, t);
        const float *gs = attn_model_grads(s) + off, *gu = attn_model_grads(u) + off;
        const bool in_w = strstr(name, "in_proj_weight") != NULL,
                   in_b = strstr(name, "in_proj_bias") != NULL;
        const size_t q_end = in_w ? (size_t)D * D : in_b ? (size_t)D : 0;
        for (size_t i = 0; i < n; i++) {
            const float want = i < q_end ? 2.0f * gs[i] : gs[i];
            ck_assert_msg(gu[i] == want, "%s[%zu]: %g, want %g", name, i, gu[i], want);
        }
    }
    /* and the scaling matters: the same weights unscaled give another logit */
    memcpy(attn_model_params(u), attn_model_params(s), attn_model_n_params(s) * sizeof(float));
    logits_and_grads(u, B, lu);
    ck_assert(lu[0] != ls[0]);
    attn_model_free(s);
    attn_model_free(u);
}
END_TEST

START_TEST(test_config_and_json) {
    attn_error err;
    attn_model_config c = attn_model_config_default(ATTN_ARCH_TRANSFORMER);
    ck_assert_int_eq(c.attn_unscaled, 0);
    c.attn_unscaled = 2;
    ck_assert(attn_model_config_validate(&c, &err) == ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "attn_unscaled") != NULL, "%s", err.msg);
    const char *path = "test_unscaled.weights.json";
    for (int k = 0; k < 2; k++) {
        attn_model *m = make(k), *back = NULL;
        ck_assert_msg(attn_weights_save_json(m, false, path, &err) == ATTN_OK, "%s", err.msg);
        FILE *f = fopen(path, "rb");
        ck_assert_ptr_nonnull(f);
        char buf[4096] = {0};
        ck_assert_uint_gt(fread(buf, 1, sizeof buf - 1, f), 0);
        fclose(f);
        ck_assert_msg((strstr(buf, "\"attn_unscaled\"") != NULL) == (k == 1),
                      "attn_unscaled %d in the file's header: %.300s", k, buf);
        ck_assert_msg(attn_weights_load_json(path, &back, &err) == ATTN_OK, "%s", err.msg);
        ck_assert_int_eq(attn_model_config_of(back)->attn_unscaled, k);
        attn_model_free(back);
        attn_model_free(m);
    }
    remove(path);
}
END_TEST

int main(void) {
    Suite *s = suite_create("models/unscaled");
    TCase *tc = tcase_create("unscaled");
    tcase_add_loop_test(tc, test_same_function, 0, 2);
    tcase_add_test(tc, test_config_and_json);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}

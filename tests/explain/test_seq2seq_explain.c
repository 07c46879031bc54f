/* test_seq2seq_explain.c -- attn_seq2seq_explain: the output is attn_seq2seq_greedy's
 * (recomputing) and its steps' logits give the top-5 (sorted, the chosen token's probability
 * among them); a forced prefix is written and generation continues from it; the maps are
 * distributions, the self-attention causal, and they are the teacher-forced forward's own
 * (attn_seq2seq_maps of the same pair); gradient x input agrees with central differences of the
 * chosen logit along the input rows; bad prefixes and sizes are refused; the JSON writer and the
 * decoder requests' strict parsing. (Against PyTorch: tools/seq2seq_explain_torch.py.) */
#include "attn_seq2seq.h"
#include "test_util.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static attn_seq2seq *model(attn_pos pos, uint64_t seed) {
    attn_seq2seq_config c = attn_seq2seq_config_default(ATTN_S2S_TRANSFORMER);
    c.d_model = 16;
    c.n_heads = 2;
    c.ffn_dim = 24;
    c.pos = pos;
    c.max_tgt_len = 8;
    attn_seq2seq *m = NULL;
    attn_error err;
    ck_assert_msg(attn_seq2seq_create(&c, seed, &m, &err) == ATTN_OK, "%s", err.msg);
    return m;
}

static attn_s2s_explanation *explain(attn_seq2seq *m, const int *src, int n,
                                     const attn_s2s_explain_opts *o) {
    attn_s2s_explanation *e = NULL;
    attn_error err;
    ck_assert_msg(attn_seq2seq_explain(m, src, n, o, &e, &err) == ATTN_OK, "%s", err.msg);
    return e;
}

static const int SRC[7] = {4, 9, 13, 20, 31, 44, 57}; /* distinct words */

START_TEST(test_generation_and_top5) {
    for (int p = 0; p < 3; p++) {
        const attn_pos pos = p == 0   ? ATTN_POS_LEARNED
                             : p == 1 ? ATTN_POS_SINUSOIDAL
                                      : ATTN_POS_NONE;
        attn_seq2seq *m = model(pos, 3 + (uint64_t)p);
        int out[16], n_out = 0, n_steps = 0;
        attn_error err;
        ck_assert(attn_seq2seq_greedy(m, SRC, 7, 7, false, out, &n_out, NULL, &n_steps, &err) ==
                  ATTN_OK);
        attn_s2s_explanation *e = explain(m, SRC, 7, NULL);
        ck_assert_int_eq(e->n_out, n_out);
        ck_assert_int_eq(e->T, n_steps);
        for (int i = 0; i < n_out; i++) ck_assert_int_eq(e->out[i], out[i]);
        for (int t = 0; t < e->T; t++) {
            const int *ids = e->top_ids + t * ATTN_S2S_TOP_K;
            const float *pr = e->top_probs + t * ATTN_S2S_TOP_K;
            ck_assert_int_eq(ids[0], e->chosen[t]); /* greedy: the argmax */
            ck_assert(pr[0] == e->chosen_prob[t]);
            for (int k = 1; k < ATTN_S2S_TOP_K; k++)
                ck_assert(pr[k] < pr[k - 1] || (pr[k] == pr[k - 1] && ids[k] > ids[k - 1]));
        }
        attn_s2s_explanation_free(e);
        attn_seq2seq_free(m);
    }
}
END_TEST

START_TEST(test_forced_prefix) {
    attn_seq2seq *m = model(ATTN_POS_LEARNED, 5);
    attn_s2s_explanation *e0 = explain(m, SRC, 7, NULL);
    const int alt = e0->top_ids[1]; /* the runner-up of the first step */
    const int prefix[2] = {alt, 17};
    const attn_s2s_explain_opts o = {.prefix = prefix, .n_prefix = 2};
    attn_s2s_explanation *e = explain(m, SRC, 7, &o);
    ck_assert_int_eq(e->n_prefix, 2);
    ck_assert_int_ge(e->n_out, 2);
    ck_assert_int_eq(e->out[0], alt);
    ck_assert_int_eq(e->out[1], 17);
    ck_assert(e->chosen_prob[0] == e0->top_probs[1]); /* the same first step */
    for (int t = 2; t < e->T; t++) ck_assert_int_eq(e->chosen[t], e->top_ids[t * 5]);
    const int bad[3][1] = {{ATTN_TGT_BOS}, {ATTN_TGT_EOS}, {ATTN_TGT_VOCAB_SIZE}};
    for (int k = 0; k < 3; k++) {
        attn_s2s_explanation *x = NULL;
        attn_error err;
        const attn_s2s_explain_opts b = {.prefix = bad[k], .n_prefix = 1};
        ck_assert_int_eq(attn_seq2seq_explain(m, SRC, 7, &b, &x, &err), ATTN_ERR_VALUE);
        ck_assert_ptr_null(x);
    }
    attn_s2s_explanation *x = NULL;
    attn_error err;
    const attn_s2s_explain_opts longp = {.prefix = prefix, .n_prefix = 2, .max_out = 1};
    ck_assert_int_eq(attn_seq2seq_explain(m, SRC, 7, &longp, &x, &err), ATTN_ERR_ARG);
    ck_assert_int_eq(attn_seq2seq_explain(m, SRC, 0, NULL, &x, &err), ATTN_ERR_SHAPE);
    attn_s2s_explanation_free(e);
    attn_s2s_explanation_free(e0);
    attn_seq2seq_free(m);
}
END_TEST

START_TEST(test_maps) {
    attn_seq2seq *m = model(ATTN_POS_LEARNED, 6);
    attn_s2s_explanation *e = explain(m, SRC, 7, NULL);
    int L, NH;
    bool self;
    ck_assert(attn_seq2seq_map_shape(m, &L, &NH, &self) && self);
    ck_assert_int_eq(e->n_layers, L);
    ck_assert_int_eq(e->n_heads, NH);
    const int T = e->T, S = 7;
    for (int lh = 0; lh < L * NH; lh++)
        for (int t = 0; t < T; t++) {
            double cs = 0, ss = 0;
            for (int s = 0; s < S; s++) cs += e->cross[((size_t)lh * T + t) * S + s];
            for (int u = 0; u < T; u++) {
                const float p = e->self[((size_t)lh * T + t) * T + u];
                if (u > t) ck_assert(p == 0.0f); /* causal */
                ss += p;
            }
            ck_assert_double_eq_tol(cs, 1.0, 1e-5);
            ck_assert_double_eq_tol(ss, 1.0, 1e-5);
        }
    /* the same pair through attn_seq2seq_maps */
    int dec[16] = {ATTN_TGT_BOS};
    for (int t = 1; t < T; t++) dec[t] = e->chosen[t - 1];
    float *cross = malloc((size_t)L * NH * T * S * sizeof *cross);
    float *sm = malloc((size_t)L * NH * T * T * sizeof *sm);
    attn_error err;
    ck_assert(attn_seq2seq_maps(m, SRC, S, dec, T, cross, sm, &err) == ATTN_OK);
    tu_assert_identical("cross", e->cross, cross, (size_t)L * NH * T * S);
    tu_assert_identical("self", e->self, sm, (size_t)L * NH * T * T);
    ck_assert_int_eq(attn_seq2seq_maps(m, SRC, S, dec, 99, cross, sm, &err), ATTN_ERR_SHAPE);
    free(cross);
    free(sm);
    attn_s2s_explanation_free(e);
    attn_seq2seq_free(m);
}
END_TEST

/* The chosen logit of step t with the source embedding (and, learned, position) rows of the
 * words scaled by (1 + eps) at position i. */
static double scaled_logit(attn_seq2seq *m, const int *dec, int T, int t, int tok, int i,
                           double eps) {
    const int D = attn_seq2seq_source_width(m);
    const long ke = attn_seq2seq_tensor_find(m, "src_embedding.weight");
    const long kp = attn_seq2seq_tensor_find(m, "src_pos_embedding");
    float *p = attn_seq2seq_params(m);
    float *emb = p + attn_seq2seq_tensor_offset(m, (size_t)ke) + (size_t)SRC[i] * D;
    float *pos = kp >= 0 ? p + attn_seq2seq_tensor_offset(m, (size_t)kp) + (size_t)i * D : NULL;
    float save[2][64];
    memcpy(save[0], emb, D * sizeof(float));
    if (pos) memcpy(save[1], pos, D * sizeof(float));
    for (int j = 0; j < D; j++) {
        emb[j] = (float)(save[0][j] * (1.0 + eps));
        if (pos) pos[j] = (float)(save[1][j] * (1.0 + eps));
    }
    const int S = 7;
    const attn_s2s_batch b = {1, S, T, SRC, &S, dec, &T};
    float *logits = malloc((size_t)T * ATTN_TGT_VOCAB_SIZE * sizeof *logits);
    attn_error err;
    ck_assert(attn_seq2seq_forward(m, &b, logits, &err) == ATTN_OK);
    const double v = logits[(size_t)t * ATTN_TGT_VOCAB_SIZE + tok];
    free(logits);
    memcpy(emb, save[0], D * sizeof(float));
    if (pos) memcpy(pos, save[1], D * sizeof(float));
    return v;
}

START_TEST(test_saliency_finite_differences) {
    for (int p = 0; p < 2; p++) {
        attn_seq2seq *m = model(p ? ATTN_POS_NONE : ATTN_POS_LEARNED, 8 + (uint64_t)p);
        attn_s2s_explanation *e = explain(m, SRC, 7, NULL);
        int dec[16] = {ATTN_TGT_BOS};
        for (int t = 1; t < e->T; t++) dec[t] = e->chosen[t - 1];
        double worst = 0, scale = 0;
        for (int t = 0; t < e->T; t++)
            for (int i = 0; i < 7; i++) {
                const double h = 1e-3; /* d/d eps of logit(x_i (1 + eps)) = g . x_i */
                const double fd = (scaled_logit(m, dec, e->T, t, e->chosen[t], i, h) -
                                   scaled_logit(m, dec, e->T, t, e->chosen[t], i, -h)) /
                                  (2 * h);
                worst = fmax(worst, fabs(fd - e->grad_x_input[t * 7 + i]));
                scale = fmax(scale, fabs(fd));
                ck_assert(e->grad_norm[t * 7 + i] >= 0.0f);
            }
        ck_assert_msg(worst <= 2e-2 * scale, "gradient x input off finite differences by %g of %g",
                      worst, scale);
        attn_s2s_explanation_free(e);
        attn_s2s_explanation *n = NULL;
        attn_error err;
        const attn_s2s_explain_opts o = {.no_saliency = true};
        ck_assert(attn_seq2seq_explain(m, SRC, 7, &o, &n, &err) == ATTN_OK);
        ck_assert_ptr_null(n->grad_x_input);
        attn_s2s_explanation_free(n);
        attn_seq2seq_free(m);
    }
}
END_TEST

START_TEST(test_json_and_requests) {
    attn_seq2seq *m = model(ATTN_POS_LEARNED, 9);
    attn_s2s_explanation *e = explain(m, SRC, 7, NULL);
    char *json = NULL;
    attn_error err;
    const attn_s2s_json_opts o = {false, true, -1, 1};
    ck_assert(attn_s2s_explanation_to_json("s \"q\"", SRC, e, &o, &json, NULL, &err) == ATTN_OK);
    cJSON *root = cJSON_Parse(json);
    ck_assert_ptr_nonnull(root);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(root, "steps")), e->T);
    ck_assert_ptr_null(cJSON_GetObjectItem(root, "cross_attention"));
    const cJSON *al = cJSON_GetObjectItem(root, "alignment");
    ck_assert_int_eq(cJSON_GetArraySize(al), e->T);
    /* head 1, mean of the layers */
    const int T = e->T, L = e->n_layers, NH = e->n_heads;
    double want = 0;
    for (int l = 0; l < L; l++) want += e->cross[(((size_t)l * NH + 1) * T + 0) * 7 + 2];
    ck_assert((float)cJSON_GetArrayItem(cJSON_GetArrayItem(al, 0), 2)->valuedouble ==
              (float)(want / L));
    cJSON_Delete(root);
    free(json);
    const attn_s2s_json_opts bad = {false, true, 5, 0};
    ck_assert_int_eq(attn_s2s_explanation_to_json("s", SRC, e, &bad, &json, NULL, &err),
                     ATTN_ERR_VALUE);
    attn_s2s_explanation_free(e);
    attn_seq2seq_free(m);

    attn_generate_request r;
    const char *good = "{\"text\": \"the exam was bad\", \"prefix\": [\"positive\", \"exam\"], "
                       "\"layer\": 1, \"head\": -1}";
    ck_assert(attn_generate_request_parse(good, strlen(good), &r, &err) == ATTN_OK);
    ck_assert_str_eq(r.text, "the exam was bad");
    ck_assert_int_eq(r.n_prefix, 2);
    ck_assert_int_eq(r.prefix[0], ATTN_TGT_POSITIVE);
    ck_assert_int_eq(r.layer, 1);
    ck_assert_int_eq(r.head, -1);
    attn_generate_request_clear(&r);
    const char *bads[] = {"{\"text\": \"a\", \"text\": \"b\"}",
                          "{\"text\": 1}",
                          "{}",
                          "{\"text\": \"a\", \"extra\": 1}",
                          "{\"text\": \"a\", \"prefix\": [\"[EOS]\"]}",
                          "{\"text\": \"a\", \"layer\": 1.5}",
                          "[1]",
                          "{\"text\": \"a\"} x"};
    for (size_t i = 0; i < sizeof bads / sizeof *bads; i++) {
        ck_assert_msg(attn_generate_request_parse(bads[i], strlen(bads[i]), &r, &err) != ATTN_OK,
                      "accepted %s", bads[i]);
        ck_assert_ptr_null(r.text);
    }
    attn_compose_request c;
    const char *cg = "{\"polarity\": \"negative\", \"subject\": \"exam\", \"temperature\": 0.7, "
                     "\"top_p\": 0.8, \"n\": 3, \"seed\": 5}";
    ck_assert(attn_compose_request_parse(cg, strlen(cg), &c, &err) == ATTN_OK);
    ck_assert_str_eq(c.polarity, "negative");
    ck_assert_int_eq(c.n, 3);
    const char *cbad[] = {"{\"polarity\": \"meh\"}", "{\"polarity\": \"positive\", \"n\": 99}",
                          "{\"polarity\": \"positive\", \"temperature\": 0}",
                          "{\"subject\": \"x\"}"};
    for (size_t i = 0; i < sizeof cbad / sizeof *cbad; i++)
        ck_assert_msg(attn_compose_request_parse(cbad[i], strlen(cbad[i]), &c, &err) != ATTN_OK,
                      "accepted %s", cbad[i]);
}
END_TEST

int main(void) {
    Suite *s = suite_create("explain/seq2seq_explain");
    TCase *tc = tcase_create("seq2seq_explain");
    tcase_add_test(tc, test_generation_and_top5);
    tcase_add_test(tc, test_forced_prefix);
    tcase_add_test(tc, test_maps);
    tcase_add_test(tc, test_saliency_finite_differences);
    tcase_add_test(tc, test_json_and_requests);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}

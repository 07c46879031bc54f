/* test_seq2seq_rnn.c -- seq2seq-gru and seq2seq-attn in C: backward against finite differences
 * (a batch of two pairs of unequal lengths: packed slots, both encoder directions), d_src_x, a
 * packed batch against its pairs alone, cached decoding bit-identical to recomputing, the
 * attention maps hook, config validation and the weights JSON (round trip, strict keys). The
 * bit-identity with PyTorch is tools/seq2seq_crosscheck.py --models rnn (models/seq2seq_rnn_torch).
 */
#include "attn_seq2seq.h"
#include "seq2seq_internal.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* case 0: seq2seq-gru; 1: seq2seq-attn bidirectional; 2: seq2seq-attn one direction */
static attn_seq2seq_config small_config(int which) {
    attn_seq2seq_config c = attn_seq2seq_config_default(which ? ATTN_S2S_ATTN : ATTN_S2S_GRU);
    c.d_model = 5;
    c.hidden_size = 6;
    c.bidirectional = which == 1;
    c.max_src_len = 9;
    c.max_tgt_len = 12;
    return c;
}

static attn_seq2seq *make(const attn_seq2seq_config *c, uint64_t seed) {
    attn_error err;
    attn_seq2seq *m = NULL;
    ck_assert_msg(attn_seq2seq_create(c, seed, &m, &err) == ATTN_OK, "%s", err.msg);
    attn_rng r = attn_rng_seed(seed + 7);
    float *p = attn_seq2seq_params(m);
    for (size_t i = 0; i < attn_seq2seq_n_params(m); i++) p[i] += 0.2f * (float)attn_rng_normal(&r);
    return m;
}

/* Two pairs of different lengths (the shorter source first: the slots reorder them). */
static const int SRC[2 * 7] = {5, 12, 33, 0, 0, 0, 0, 3, 11, 15, 17, 22, 42, 2};
static const int SRC_LEN[2] = {3, 7};
static const int TGT[2 * 5] = {ATTN_TGT_BOS, ATTN_TGT_NEGATIVE, 3, 15, 22,
                               ATTN_TGT_BOS, ATTN_TGT_POSITIVE, 0, 0,  0};
static const int TGT_LEN[2] = {5, 2};
static const attn_s2s_batch BATCH = {2, 7, 5, SRC, SRC_LEN, TGT, TGT_LEN};
#define N_ROWS 7

typedef struct fd_ctx {
    attn_seq2seq *m;
    const attn_s2s_batch *b;
    int rows;
    float *logits, *r;
} fd_ctx;

static double loss_of(void *ctx) {
    fd_ctx *f = ctx;
    attn_error err;
    ck_assert(attn_seq2seq_forward(f->m, f->b, f->logits, &err) == ATTN_OK);
    const size_t n = (size_t)f->rows * attn_seq2seq_config_of(f->m)->tgt_vocab;
    double l = 0.0;
    for (size_t i = 0; i < n; i++) l += (double)f->logits[i] * f->r[i];
    return l;
}

START_TEST(test_backward_finite_differences) {
    const attn_seq2seq_config c = small_config(_i);
    attn_seq2seq *m = make(&c, 3 + (uint64_t)_i);
    const size_t n = (size_t)N_ROWS * c.tgt_vocab;
    fd_ctx f = {m, &BATCH, N_ROWS, malloc(n * sizeof(float)), malloc(n * sizeof(float))};
    ck_assert(f.logits && f.r);
    attn_rng r = attn_rng_seed(11);
    tu_fill_uniform(f.r, n, -1.0f, 1.0f, &r);
    attn_error err;
    loss_of(&f);
    ck_assert(attn_seq2seq_backward(m, &BATCH, f.r, &err) == ATTN_OK);
    float *grads = malloc(attn_seq2seq_n_params(m) * sizeof(float));
    ck_assert_ptr_nonnull(grads);
    memcpy(grads, attn_seq2seq_grads(m), attn_seq2seq_n_params(m) * sizeof(float));
    float *p = attn_seq2seq_params(m);
    for (size_t t = 0; t < attn_seq2seq_tensor_count(m); t++) {
        const size_t o = attn_seq2seq_tensor_offset(m, t);
        tu_check_grad(attn_seq2seq_tensor_name(m, t), loss_of, &f, p + o, grads + o,
                      attn_seq2seq_tensor_numel(m, t), 1e-2f, 3e-3, 3e-2);
    }
    /* backward accumulates */
    loss_of(&f);
    ck_assert(attn_seq2seq_backward(m, &BATCH, f.r, &err) == ATTN_OK);
    for (size_t i = 0; i < attn_seq2seq_n_params(m); i++) grads[i] += grads[i];
    tu_assert_close("two backwards vs twice one", attn_seq2seq_grads(m), grads,
                    attn_seq2seq_n_params(m), 1e-5, 1.0);
    free(grads), free(f.logits), free(f.r);
    attn_seq2seq_free(m);
}
END_TEST

/* d_src_x at B = 1: with every source word distinct, row j is the gradient of the embedding row
 * of word j, bit for bit (the embedding backward adds it to a zeroed gradient). */
START_TEST(test_d_src_x) {
    const attn_seq2seq_config c = small_config(_i);
    attn_seq2seq *m = make(&c, 21 + (uint64_t)_i);
    const int S = 7, T = 5;
    const attn_s2s_batch b = {1, S, T, SRC + 7, &S, TGT, &T};
    const size_t n = (size_t)T * c.tgt_vocab;
    float *logits = malloc(n * sizeof(float)), *d = malloc(n * sizeof(float));
    float *dx = malloc((size_t)S * c.d_model * sizeof(float));
    ck_assert(logits && d && dx);
    attn_rng r = attn_rng_seed(5);
    tu_fill_uniform(d, n, -1.0f, 1.0f, &r);
    memset(dx, 0xff, (size_t)S * c.d_model * sizeof(float)); /* NaN: every row must be written */
    attn_error err;
    ck_assert(attn_seq2seq_forward(m, &b, logits, &err) == ATTN_OK);
    m->d_src_x = dx;
    ck_assert(attn_seq2seq_backward(m, &b, d, &err) == ATTN_OK);
    m->d_src_x = NULL;
    const float *g = attn_seq2seq_view(m, attn_seq2seq_grads(m), "src_embedding.weight");
    for (int j = 0; j < S; j++)
        tu_assert_identical("d_src_x row", dx + (size_t)j * c.d_model,
                            g + (size_t)SRC[7 + j] * c.d_model, (size_t)c.d_model);
    free(logits), free(d), free(dx);
    attn_seq2seq_free(m);
}
END_TEST

/* A packed batch computes each pair as if alone (up to the GEMMs' rounding by row count). */
START_TEST(test_batch_equals_pairs_alone) {
    const attn_seq2seq_config c = small_config(_i);
    attn_seq2seq *m = make(&c, 5);
    const int V = c.tgt_vocab;
    float *all = malloc((size_t)N_ROWS * V * sizeof(float)), *one = malloc(5 * (size_t)V * 4);
    ck_assert(all && one);
    attn_error err;
    ck_assert(attn_seq2seq_forward(m, &BATCH, all, &err) == ATTN_OK);
    int row = 0;
    for (int i = 0; i < 2; i++) {
        const attn_s2s_batch b = {1,           SRC_LEN[i],  TGT_LEN[i], SRC + 7 * i,
                                  SRC_LEN + i, TGT + 5 * i, TGT_LEN + i};
        ck_assert(attn_seq2seq_forward(m, &b, one, &err) == ATTN_OK);
        tu_assert_close("pair in a batch vs alone", all + (size_t)row * V, one,
                        (size_t)TGT_LEN[i] * V, 1e-5, 1.0);
        row += TGT_LEN[i];
    }
    free(all), free(one);
    attn_seq2seq_free(m);
}
END_TEST

/* The recurrent decoder is incremental: cached and recomputing decoding give the same tokens and
 * the same step logits bit for bit; so does sampling. */
START_TEST(test_cache_equals_recompute) {
    const attn_seq2seq_config c = small_config(_i);
    attn_seq2seq *m = make(&c, 9 + (uint64_t)_i);
    const int V = c.tgt_vocab, max_out = 11;
    float *a = malloc((size_t)(max_out + 1) * V * 4), *b = malloc((size_t)(max_out + 1) * V * 4);
    ck_assert(a && b);
    attn_rng r = attn_rng_seed(21);
    attn_error err;
    for (int k = 0; k < 20; k++) {
        int src[9], out_a[16], out_b[16], na, nb, sa, sb;
        const int n = 1 + (int)attn_rng_below(&r, 9);
        for (int j = 0; j < n; j++) src[j] = 2 + (int)attn_rng_below(&r, ATTN_N_WORDS);
        ck_assert(attn_seq2seq_greedy(m, src, n, max_out, false, out_a, &na, a, &sa, &err) ==
                  ATTN_OK);
        ck_assert(attn_seq2seq_greedy(m, src, n, max_out, true, out_b, &nb, b, &sb, &err) ==
                  ATTN_OK);
        ck_assert_int_eq(na, nb);
        ck_assert_int_eq(sa, sb);
        ck_assert_int_ge(sa, 1);
        for (int j = 0; j < na; j++) ck_assert_int_eq(out_a[j], out_b[j]);
        tu_assert_identical("cached vs recomputed step logits", b, a, (size_t)sa * V);
        const attn_s2s_sampling hot = {3.0, 0, 1.0, (uint64_t)k};
        ck_assert(attn_seq2seq_sample(m, src, n, max_out, false, &hot, out_a, &na, NULL, NULL,
                                      &err) == ATTN_OK);
        ck_assert(attn_seq2seq_sample(m, src, n, max_out, true, &hot, out_b, &nb, NULL, NULL,
                                      &err) == ATTN_OK);
        ck_assert_int_eq(na, nb);
        for (int j = 0; j < na; j++) ck_assert_int_eq(out_a[j], out_b[j]);
    }
    free(a), free(b);
    attn_seq2seq_free(m);
}
END_TEST

/* maps: seq2seq-attn's alignment rows are distributions over the source, and rerunning gives the
 * same bits; attn_seq2seq_alignment is the hook; seq2seq-gru has no hook, and the public call
 * says so. */
START_TEST(test_maps) {
    const int S = 7, T = 5;
    float cross[5 * 7], again[5 * 7];
    attn_error err;
    attn_seq2seq_config c = small_config(0);
    attn_seq2seq *m = make(&c, 31);
    ck_assert_ptr_null(m->vt->maps);
    ck_assert_int_eq(attn_seq2seq_alignment(m, SRC + 7, S, TGT, T, cross, &err), ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "seq2seq-gru has no additive attention"), "%s", err.msg);
    attn_seq2seq_free(m);
    c = small_config(1);
    m = make(&c, 33);
    ck_assert_ptr_nonnull(m->vt->maps);
    ck_assert(m->vt->maps(m, SRC + 7, S, TGT, T, cross, NULL, &err) == ATTN_OK);
    for (int t = 0; t < T; t++) {
        double sum = 0.0;
        for (int j = 0; j < S; j++) {
            ck_assert(cross[t * S + j] > 0.0f && cross[t * S + j] < 1.0f);
            sum += cross[t * S + j];
        }
        ck_assert_msg(fabs(sum - 1.0) < 1e-6, "row %d sums to %.9g", t, sum);
    }
    ck_assert(m->vt->maps(m, SRC + 7, S, TGT, T, again, NULL, &err) == ATTN_OK);
    tu_assert_identical("maps twice", again, cross, (size_t)T * S);
    ck_assert(attn_seq2seq_alignment(m, SRC + 7, S, TGT, T, again, &err) == ATTN_OK);
    tu_assert_identical("attn_seq2seq_alignment", again, cross, (size_t)T * S);
    /* a short source: only its columns */
    ck_assert(m->vt->maps(m, SRC, 3, TGT, 2, cross, NULL, &err) == ATTN_OK);
    ck_assert(fabs(cross[0] + cross[1] + cross[2] - 1.0) < 1e-6);
    ck_assert_int_ne(m->vt->maps(m, SRC, 0, TGT, 2, cross, NULL, &err), ATTN_OK);
    attn_seq2seq_free(m);
}
END_TEST

START_TEST(test_config_validation) {
    attn_error err;
    attn_seq2seq_config c = small_config(0);
    c.hidden_size = 0;
    ck_assert_int_eq(attn_seq2seq_config_validate(&c, &err), ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "hidden_size"), "%s", err.msg);
    c = small_config(0);
    c.bidirectional = 1; /* the single-vector model has one direction */
    ck_assert_int_eq(attn_seq2seq_config_validate(&c, &err), ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "bidirectional"), "%s", err.msg);
    c = small_config(1);
    c.bidirectional = 2;
    ck_assert_int_eq(attn_seq2seq_config_validate(&c, &err), ATTN_ERR_VALUE);
    c = small_config(1);
    c.d_model = 0;
    ck_assert_int_eq(attn_seq2seq_config_validate(&c, &err), ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "d_model"), "%s", err.msg);
    attn_s2s_arch a;
    ck_assert(attn_s2s_arch_from_name("seq2seq-attn", &a, &err) == ATTN_OK && a == ATTN_S2S_ATTN);
    ck_assert(attn_s2s_arch_from_name("seq2seq-gru", &a, &err) == ATTN_OK && a == ATTN_S2S_GRU);
    ck_assert_str_eq(attn_s2s_arch_name(ATTN_S2S_ATTN), "seq2seq-attn");
    /* the defaults: E 32, H 64; parameter counts of docs/decoder.md */
    attn_seq2seq *m = NULL;
    c = attn_seq2seq_config_default(ATTN_S2S_GRU);
    ck_assert(attn_seq2seq_create(&c, 1, &m, &err) == ATTN_OK);
    const size_t E = 32, H = 64, Vs = ATTN_VOCAB_SIZE, Vt = ATTN_TGT_VOCAB_SIZE, G = 3 * H;
    ck_assert_uint_eq(attn_seq2seq_n_params(m),
                      Vs * E + 2 * (G * E + G * H + 2 * G) + Vt * E + Vt * H + Vt);
    attn_seq2seq_free(m);
    c = attn_seq2seq_config_default(ATTN_S2S_ATTN);
    ck_assert(attn_seq2seq_create(&c, 1, &m, &err) == ATTN_OK);
    const size_t He = 2 * H;
    ck_assert_uint_eq(attn_seq2seq_n_params(m),
                      Vs * E + 2 * (G * E + G * H + 2 * G) + Vt * E + H * H + H * He + H + H +
                          (G * (E + He) + G * H + 2 * G) + Vt * (H + He) + Vt);
    attn_seq2seq_free(m);
}
END_TEST

START_TEST(test_json_round_trip_and_strict_keys) {
    const attn_seq2seq_config c = small_config(_i);
    attn_seq2seq *m = make(&c, 13), *back = NULL;
    char path[] = "/tmp/attn-s2s-rnn-XXXXXX";
    const int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    attn_error err;
    for (int b64 = 0; b64 < 2; b64++) {
        ck_assert_msg(attn_seq2seq_save_json(m, false, b64, path, &err) == ATTN_OK, "%s", err.msg);
        ck_assert_msg(attn_seq2seq_load_json(path, &back, &err) == ATTN_OK, "%s", err.msg);
        ck_assert_int_eq(attn_seq2seq_n_params(back), attn_seq2seq_n_params(m));
        tu_assert_identical("params after the round trip", attn_seq2seq_params(back),
                            attn_seq2seq_params(m), attn_seq2seq_n_params(m));
        ck_assert_int_eq(attn_seq2seq_config_of(back)->arch, c.arch);
        ck_assert_int_eq(attn_seq2seq_config_of(back)->hidden_size, c.hidden_size);
        ck_assert_int_eq(attn_seq2seq_config_of(back)->bidirectional, c.bidirectional);
        attn_seq2seq_free(back);
    }
    char *text = tu_read_text(path);
    ck_assert_ptr_nonnull(text);
    /* a Transformer key is not a GRU model's; a missing hidden_size is named */
    char *bad = tu_replace_once(text, path, "\"hidden_size\"", "\"n_heads\"");
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(bad, f);
    fclose(f);
    ck_assert_int_ne(attn_seq2seq_load_json(path, &back, &err), ATTN_OK);
    ck_assert_ptr_null(back);
    ck_assert_msg(strstr(err.msg, path) && strstr(err.msg, "\"hidden_size\" is missing") &&
                      strstr(err.msg, "unknown key \"n_heads\""),
                  "%s", err.msg);
    free(bad);
    free(text);
    unlink(path);
    attn_seq2seq_free(m);
}
END_TEST

int main(void) {
    Suite *s = suite_create("seq2seq_rnn");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, test_backward_finite_differences, 0, 3);
    tcase_add_loop_test(tc, test_d_src_x, 0, 3);
    tcase_add_loop_test(tc, test_batch_equals_pairs_alone, 0, 3);
    tcase_add_loop_test(tc, test_cache_equals_recompute, 0, 3);
    tcase_add_test(tc, test_maps);
    tcase_add_test(tc, test_config_validation);
    tcase_add_loop_test(tc, test_json_round_trip_and_strict_keys, 0, 3);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

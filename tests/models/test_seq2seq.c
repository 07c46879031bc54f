/* test_seq2seq.c -- the seq2seq-transformer in C: backward against finite differences (pre and
 * post norm, relu and gelu, every position scheme, every tensor), a packed batch against its pairs
 * alone, the KV-cached greedy decoding against the recomputing one (rope and alibi too), rope and
 * alibi adding no tensor and recorded in the weights file, greedy decoding with a floor on the
 * length and in batches, the weights JSON round trip and its strict loader's refusals. The
 * bit-identity with PyTorch is tools/seq2seq_crosscheck.py (models/seq2seq_torch) and
 * tools/greedy_len_check.py (models/greedy_len_torch). */
#include "attn_seq2seq.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static attn_seq2seq_config small_config(attn_norm norm, attn_activation act, attn_pos pos) {
    attn_seq2seq_config c = attn_seq2seq_config_default(ATTN_S2S_TRANSFORMER);
    c.d_model = 8;
    c.n_heads = 2;
    c.ffn_dim = 12;
    c.enc_layers = 1;
    c.dec_layers = 2;
    c.max_src_len = 9;
    c.max_tgt_len = 6;
    c.norm = norm;
    c.activation = act;
    c.pos = pos;
    return c;
}

/* Every parameter moved by N(0, 0.2^2) (zero biases leave paths untested). */
static attn_seq2seq *make(const attn_seq2seq_config *c, uint64_t seed) {
    attn_error err;
    attn_seq2seq *m = NULL;
    ck_assert_msg(attn_seq2seq_create(c, seed, &m, &err) == ATTN_OK, "%s", err.msg);
    attn_rng r = attn_rng_seed(seed + 7);
    float *p = attn_seq2seq_params(m);
    for (size_t i = 0; i < attn_seq2seq_n_params(m); i++) p[i] += 0.2f * (float)attn_rng_normal(&r);
    return m;
}

/* Two pairs of different lengths, padded to S = 7, T = 5. */
static const int SRC[2 * 7] = {3, 11, 15, 17, 22, 42, 2, 5, 12, 33, 0, 0, 0, 0};
static const int SRC_LEN[2] = {7, 3};
static const int TGT[2 * 5] = {ATTN_TGT_BOS, ATTN_TGT_NEGATIVE, 3, 15, 22,
                               ATTN_TGT_BOS, ATTN_TGT_POSITIVE, 0, 0,  0};
static const int TGT_LEN[2] = {5, 2};
static const attn_s2s_batch BATCH = {2, 7, 5, SRC, SRC_LEN, TGT, TGT_LEN};
#define N_ROWS 7 /* 5 + 2 target rows */

typedef struct fd_ctx {
    attn_seq2seq *m;
    float *logits, *r; /* [N_ROWS, Vt] */
} fd_ctx;

static double loss_of(void *ctx) {
    fd_ctx *f = ctx;
    attn_error err;
    ck_assert(attn_seq2seq_forward(f->m, &BATCH, f->logits, &err) == ATTN_OK);
    const size_t n = (size_t)N_ROWS * attn_seq2seq_config_of(f->m)->tgt_vocab;
    double l = 0.0;
    for (size_t i = 0; i < n; i++) l += (double)f->logits[i] * f->r[i];
    return l;
}

static const struct {
    attn_norm norm;
    attn_activation act;
    attn_pos pos;
} FD_CASES[] = {{ATTN_NORM_PRE, ATTN_ACT_GELU, ATTN_POS_LEARNED},
                {ATTN_NORM_POST, ATTN_ACT_GELU, ATTN_POS_SINUSOIDAL},
                {ATTN_NORM_PRE, ATTN_ACT_RELU, ATTN_POS_NONE},
                {ATTN_NORM_PRE, ATTN_ACT_GELU, ATTN_POS_ROPE},
                {ATTN_NORM_POST, ATTN_ACT_GELU, ATTN_POS_ALIBI}};

START_TEST(test_backward_finite_differences) {
    const attn_seq2seq_config c =
        small_config(FD_CASES[_i].norm, FD_CASES[_i].act, FD_CASES[_i].pos);
    attn_seq2seq *m = make(&c, 3 + (uint64_t)_i);
    const bool relu = c.activation == ATTN_ACT_RELU; /* a smaller step, to miss its kink */
    const size_t n = (size_t)N_ROWS * c.tgt_vocab;
    fd_ctx f = {m, malloc(n * sizeof(float)), malloc(n * sizeof(float))};
    ck_assert(f.logits && f.r);
    attn_rng r = attn_rng_seed(11);
    tu_fill_uniform(f.r, n, -1.0f, 1.0f, &r);
    attn_error err;
    loss_of(&f);
    ck_assert(attn_seq2seq_backward(m, &BATCH, f.r, &err) == ATTN_OK);
    const float *g = attn_seq2seq_grads(m);
    float *grads = malloc(attn_seq2seq_n_params(m) * sizeof(float));
    ck_assert_ptr_nonnull(grads);
    memcpy(grads, g, attn_seq2seq_n_params(m) * sizeof(float));
    float *p = attn_seq2seq_params(m);
    for (size_t t = 0; t < attn_seq2seq_tensor_count(m); t++) {
        const size_t o = attn_seq2seq_tensor_offset(m, t);
        tu_check_grad(attn_seq2seq_tensor_name(m, t), loss_of, &f, p + o, grads + o,
                      attn_seq2seq_tensor_numel(m, t), relu ? 1e-3f : 1e-2f, 3e-3, 3e-2);
    }
    /* backward accumulates: a second one doubles every gradient (up to the order of the sums) */
    loss_of(&f);
    ck_assert(attn_seq2seq_backward(m, &BATCH, f.r, &err) == ATTN_OK);
    for (size_t i = 0; i < attn_seq2seq_n_params(m); i++) grads[i] += grads[i];
    tu_assert_close("two backwards vs twice one", attn_seq2seq_grads(m), grads,
                    attn_seq2seq_n_params(m), 1e-5, 1.0);
    free(grads), free(f.logits), free(f.r);
    attn_seq2seq_free(m);
}
END_TEST

/* A packed batch computes each pair as if alone (up to the GEMMs' rounding by row count). */
START_TEST(test_batch_equals_pairs_alone) {
    const attn_seq2seq_config c = small_config(ATTN_NORM_POST, ATTN_ACT_RELU, ATTN_POS_LEARNED);
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

/* The KV cache computes the same decoding as recomputing the prefix: the same tokens, the same
 * logits up to rounding (other GEMM shapes; docs/decoder.md measures it). */
START_TEST(test_cached_greedy_matches_recompute) {
    static const attn_pos POS[4] = {ATTN_POS_LEARNED, ATTN_POS_LEARNED, ATTN_POS_ROPE,
                                    ATTN_POS_ALIBI};
    attn_seq2seq_config c =
        small_config(_i % 2 ? ATTN_NORM_POST : ATTN_NORM_PRE, ATTN_ACT_GELU, POS[_i]);
    c.max_tgt_len = 12;
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
        tu_assert_close("cached vs recomputed step logits", b, a, (size_t)sa * V, 1e-4, 1.0);
    }
    free(a), free(b);
    attn_seq2seq_free(m);
}
END_TEST

/* The greedy argmax with [EOS] left out when skip_eos (ties: the lower id; no NaN here). */
static int argmax_of(const float *x, int V, bool skip_eos) {
    int best = 0;
    for (int j = 1; j < V; j++)
        if (!(skip_eos && j == ATTN_TGT_EOS) && x[j] > x[best]) best = j;
    return best;
}

/* attn_seq2seq_greedy_min: every step's token is the argmax of its logits, [EOS] left out at
 * the first min_out steps; min_out 0 is attn_seq2seq_greedy to the byte; min_out = max_out
 * decodes exactly max_out words. attn_seq2seq_greedy_batch: B = 1 is the one-source cached
 * decoding bit for bit; B = 5 gives every source its words alone (logits up to the GEMMs'
 * rounding); the GRU model's batch is its sources alone bit for bit; bad arguments refused. */
START_TEST(test_greedy_min_and_batch) {
    static const attn_pos POS[4] = {ATTN_POS_LEARNED, ATTN_POS_LEARNED, ATTN_POS_ROPE,
                                    ATTN_POS_ALIBI};
    attn_seq2seq_config c =
        small_config(_i % 2 ? ATTN_NORM_POST : ATTN_NORM_PRE, ATTN_ACT_RELU, POS[_i]);
    c.max_tgt_len = 12;
    attn_seq2seq *m = make(&c, 30 + (uint64_t)_i);
    float *eos_b = attn_seq2seq_params(m) +
                   attn_seq2seq_tensor_offset(m, (size_t)attn_seq2seq_tensor_find(m, "head.bias"));
    eos_b[ATTN_TGT_EOS] += 3.0f; /* [EOS] early: min_out has something to hold back */
    enum { B = 5, MAX = 11 };
    const int V = c.tgt_vocab, per = (MAX + 1) * V;
    float *la = malloc((size_t)B * per * 4), *lb = malloc((size_t)B * per * 4);
    ck_assert(la && lb);
    attn_rng r = attn_rng_seed(5);
    int src[B][9], len[B];
    const int *srcp[B];
    for (int i = 0; i < B; i++) {
        len[i] = 1 + (int)attn_rng_below(&r, 9);
        for (int j = 0; j < len[i]; j++) src[i][j] = 2 + (int)attn_rng_below(&r, ATTN_N_WORDS);
        srcp[i] = src[i];
    }
    attn_error err;
    int out_a[B * MAX], out_b[B * MAX], na[B], nb[B], sa[B], sb[B], stopped = 0;
    static const int FLOORS[3] = {0, 4, MAX};
    for (int f = 0; f < 3; f++) {
        const int min_out = FLOORS[f], lo = min_out;
        for (int cache = 0; cache < 2; cache++)
            for (int i = 0; i < B; i++) {
                ck_assert_msg(attn_seq2seq_greedy_min(m, src[i], len[i], lo, MAX, cache, out_a,
                                                      &na[0], la, &sa[0], &err) == ATTN_OK,
                              "%s", err.msg);
                ck_assert_int_ge(na[0], lo);
                stopped += min_out == 0 && na[0] < MAX;
                for (int s = 0; s < sa[0]; s++) {
                    const int want = argmax_of(la + (size_t)s * V, V, s < lo);
                    ck_assert_int_eq(s < na[0] ? out_a[s] : ATTN_TGT_EOS, want);
                }
                if (min_out == 0) { /* attn_seq2seq_greedy to the byte */
                    ck_assert(attn_seq2seq_greedy(m, src[i], len[i], MAX, cache, out_b, &nb[0], lb,
                                                  &sb[0], &err) == ATTN_OK);
                    ck_assert_int_eq(na[0], nb[0]);
                    ck_assert_int_eq(sa[0], sb[0]);
                    ck_assert(memcmp(la, lb, (size_t)sa[0] * V * 4) == 0);
                }
            }
        /* B = 1: the one-source cached decoder, bit for bit */
        ck_assert(attn_seq2seq_greedy_batch(m, 1, srcp, len, lo, MAX, out_b, nb, lb, sb, &err) ==
                  ATTN_OK);
        ck_assert(attn_seq2seq_greedy_min(m, src[0], len[0], lo, MAX, true, out_a, na, la, sa,
                                          &err) == ATTN_OK);
        ck_assert_int_eq(na[0], nb[0]);
        ck_assert_int_eq(sa[0], sb[0]);
        ck_assert(memcmp(la, lb, (size_t)sa[0] * V * 4) == 0);
        ck_assert(memcmp(out_a, out_b, (size_t)na[0] * sizeof(int)) == 0);
        /* B = 5 against each alone */
        ck_assert_msg(
            attn_seq2seq_greedy_batch(m, B, srcp, len, lo, MAX, out_b, nb, lb, sb, &err) == ATTN_OK,
            "%s", err.msg);
        for (int i = 0; i < B; i++) {
            ck_assert(attn_seq2seq_greedy_min(m, src[i], len[i], lo, MAX, true, out_a, &na[i], la,
                                              &sa[i], &err) == ATTN_OK);
            ck_assert_int_eq(na[i], nb[i]);
            ck_assert_int_eq(sa[i], sb[i]);
            ck_assert(memcmp(out_a, out_b + i * MAX, (size_t)na[i] * sizeof(int)) == 0);
            tu_assert_close("batch vs alone step logits", lb + (size_t)i * per, la,
                            (size_t)sa[i] * V, 1e-4, 1.0);
        }
        if (min_out == MAX)
            for (int i = 0; i < B; i++) ck_assert_int_eq(nb[i], MAX);
    }
    ck_assert_int_gt(stopped, 0); /* without a floor, [EOS] ended some decodings early */
    /* refusals */
    ck_assert_int_eq(
        attn_seq2seq_greedy_min(m, src[0], len[0], MAX + 1, MAX, true, out_a, na, NULL, NULL, &err),
        ATTN_ERR_ARG);
    ck_assert_int_eq(
        attn_seq2seq_greedy_min(m, src[0], len[0], -1, MAX, true, out_a, na, NULL, NULL, &err),
        ATTN_ERR_ARG);
    ck_assert_int_eq(
        attn_seq2seq_greedy_batch(m, 0, srcp, len, 0, MAX, out_b, nb, NULL, NULL, &err),
        ATTN_ERR_ARG);
    const int bad_len[2] = {len[0], 0};
    ck_assert_int_eq(
        attn_seq2seq_greedy_batch(m, 2, srcp, bad_len, 0, MAX, out_b, nb, NULL, NULL, &err),
        ATTN_ERR_SHAPE);
    ck_assert_msg(strstr(err.msg, "source 1 of the batch"), "%s", err.msg);
    attn_seq2seq_free(m);
    /* the GRU: its sources one after the other, bit for bit */
    attn_seq2seq_config g = attn_seq2seq_config_default(ATTN_S2S_GRU);
    g.max_tgt_len = 12;
    m = make(&g, 40 + (uint64_t)_i);
    const int Vg = g.tgt_vocab, perg = (MAX + 1) * Vg;
    float *ga = malloc((size_t)B * perg * 4), *gb = malloc((size_t)B * perg * 4);
    ck_assert(ga && gb);
    ck_assert(attn_seq2seq_greedy_batch(m, B, srcp, len, 2, MAX, out_b, nb, gb, sb, &err) ==
              ATTN_OK);
    for (int i = 0; i < B; i++) {
        ck_assert(attn_seq2seq_greedy_min(m, src[i], len[i], 2, MAX, true, out_a, &na[i], ga,
                                          &sa[i], &err) == ATTN_OK);
        ck_assert_int_eq(na[i], nb[i]);
        ck_assert(memcmp(out_a, out_b + i * MAX, (size_t)na[i] * sizeof(int)) == 0);
        ck_assert(memcmp(ga, gb + (size_t)i * perg, (size_t)sa[i] * Vg * 4) == 0);
    }
    free(ga), free(gb), free(la), free(lb);
    attn_seq2seq_free(m);
}
END_TEST

/* rope and alibi: no tensor of their own (the state_dict of pos none), the scheme recorded in
 * the weights file and read back; they change the logits (the decoder's self-attention and the
 * encoder's see the order); rope with an odd head size is refused naming the sizes. */
START_TEST(test_positions_inside_attention) {
    attn_seq2seq_config c = small_config(ATTN_NORM_PRE, ATTN_ACT_RELU, ATTN_POS_NONE);
    attn_seq2seq *none = make(&c, 31);
    const int V = c.tgt_vocab;
    float *a = malloc((size_t)N_ROWS * V * sizeof(float)), *b = malloc((size_t)N_ROWS * V * 4);
    ck_assert(a && b);
    attn_error err;
    ck_assert(attn_seq2seq_forward(none, &BATCH, a, &err) == ATTN_OK);
    char path[] = "/tmp/attn-s2s-pos-XXXXXX";
    const int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    for (int k = 0; k < 2; k++) {
        c.pos = k ? ATTN_POS_ALIBI : ATTN_POS_ROPE;
        attn_seq2seq *m = make(&c, 31), *back = NULL;
        ck_assert_int_eq(attn_seq2seq_n_params(m), attn_seq2seq_n_params(none));
        tu_assert_identical("same parameters as pos none", attn_seq2seq_params(m),
                            attn_seq2seq_params(none), attn_seq2seq_n_params(m));
        ck_assert(attn_seq2seq_forward(m, &BATCH, b, &err) == ATTN_OK);
        size_t differ = 0;
        for (size_t i = 0; i < (size_t)N_ROWS * V; i++) differ += a[i] != b[i];
        ck_assert_msg(differ > (size_t)V, "%s changed only %zu logits", attn_pos_name(c.pos),
                      differ);
        ck_assert_msg(attn_seq2seq_save_json(m, false, false, path, &err) == ATTN_OK, "%s",
                      err.msg);
        ck_assert_msg(attn_seq2seq_load_json(path, &back, &err) == ATTN_OK, "%s", err.msg);
        ck_assert_int_eq(attn_seq2seq_config_of(back)->pos, c.pos);
        ck_assert(attn_seq2seq_forward(back, &BATCH, a, &err) == ATTN_OK);
        tu_assert_identical("logits after the round trip", a, b, (size_t)N_ROWS * V);
        ck_assert(attn_seq2seq_forward(none, &BATCH, a, &err) == ATTN_OK);
        attn_seq2seq_free(back);
        attn_seq2seq_free(m);
    }
    unlink(path);
    c.pos = ATTN_POS_ROPE;
    c.n_heads = 4; /* head size 2: fine */
    attn_seq2seq *m = NULL;
    ck_assert(attn_seq2seq_create(&c, 1, &m, &err) == ATTN_OK);
    attn_seq2seq_free(m);
    c.d_model = 12; /* head size 3 */
    ck_assert_int_eq(attn_seq2seq_create(&c, 1, &m, &err), ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "rope") && strstr(err.msg, "even head size"), "%s", err.msg);
    c.pos = ATTN_POS_ALIBI; /* any head size */
    ck_assert(attn_seq2seq_create(&c, 1, &m, &err) == ATTN_OK);
    attn_seq2seq_free(m);
    free(a), free(b);
    attn_seq2seq_free(none);
}
END_TEST

/* Beam search of width 1 is greedy decoding (the same argmax, ties to the lower id); its score is
 * the mean log-probability of the chosen tokens; widths outside 1..64 are refused. */
START_TEST(test_beam_width_one_is_greedy) {
    attn_seq2seq_config c = small_config(ATTN_NORM_PRE, ATTN_ACT_RELU, ATTN_POS_LEARNED);
    c.max_tgt_len = 8;
    attn_seq2seq *m = make(&c, 17);
    attn_rng r = attn_rng_seed(3);
    attn_error err;
    for (int k = 0; k < 10; k++) {
        int src[9], g[8], b[8], ng, nb;
        double score = 0.0;
        const int n = 1 + (int)attn_rng_below(&r, 9);
        for (int j = 0; j < n; j++) src[j] = 2 + (int)attn_rng_below(&r, ATTN_N_WORDS);
        ck_assert(attn_seq2seq_greedy(m, src, n, 7, false, g, &ng, NULL, NULL, &err) == ATTN_OK);
        ck_assert(attn_seq2seq_beam(m, src, n, 7, 1, b, &nb, &score, &err) == ATTN_OK);
        ck_assert_int_eq(ng, nb);
        for (int j = 0; j < ng; j++) ck_assert_int_eq(g[j], b[j]);
        ck_assert(score <= 0.0 && isfinite(score));
        int wide[8], nw;
        ck_assert(attn_seq2seq_beam(m, src, n, 7, 5, wide, &nw, NULL, &err) == ATTN_OK);
        ck_assert(nw >= 0 && nw <= 7);
    }
    int out[8], n_out;
    const int src[2] = {3, 11};
    ck_assert_int_eq(attn_seq2seq_beam(m, src, 2, 7, 0, out, &n_out, NULL, &err), ATTN_ERR_ARG);
    ck_assert_int_eq(attn_seq2seq_beam(m, src, 2, 7, 65, out, &n_out, NULL, &err), ATTN_ERR_ARG);
    attn_seq2seq_free(m);
}
END_TEST

/* Sampling with top-k 1 is greedy decoding; the same seed draws the same tokens, another seed
 * (at a high temperature) other ones; bad settings are refused. */
START_TEST(test_sampling) {
    attn_seq2seq_config c = small_config(ATTN_NORM_POST, ATTN_ACT_GELU, ATTN_POS_LEARNED);
    c.max_tgt_len = 10;
    attn_seq2seq *m = make(&c, 19);
    attn_error err;
    const int src[5] = {3, 11, 15, 22, 42};
    int g[9], a[9], b[9], ng, na, nb, differ = 0;
    ck_assert(attn_seq2seq_greedy(m, src, 5, 9, true, g, &ng, NULL, NULL, &err) == ATTN_OK);
    attn_s2s_sampling top1 = {1.0, 1, 1.0, 5};
    ck_assert(attn_seq2seq_sample(m, src, 5, 9, true, &top1, a, &na, NULL, NULL, &err) == ATTN_OK);
    ck_assert_int_eq(na, ng);
    for (int j = 0; j < ng; j++) ck_assert_int_eq(a[j], g[j]);
    for (uint64_t seed = 1; seed <= 8; seed++) {
        attn_s2s_sampling hot = {5.0, 0, 1.0, seed};
        ck_assert(attn_seq2seq_sample(m, src, 5, 9, true, &hot, a, &na, NULL, NULL, &err) ==
                  ATTN_OK);
        ck_assert(attn_seq2seq_sample(m, src, 5, 9, true, &hot, b, &nb, NULL, NULL, &err) ==
                  ATTN_OK);
        ck_assert_int_eq(na, nb); /* the same seed, the same draw */
        for (int j = 0; j < na; j++) ck_assert_int_eq(a[j], b[j]);
        differ += na != ng || memcmp(a, g, (size_t)na * sizeof *a) != 0;
    }
    ck_assert_int_gt(differ, 0);
    attn_s2s_sampling bad = {0.0, 0, 1.0, 1};
    ck_assert_int_eq(attn_seq2seq_sample(m, src, 5, 9, true, &bad, a, &na, NULL, NULL, &err),
                     ATTN_ERR_ARG);
    bad = (attn_s2s_sampling){1.0, 0, 1.5, 1};
    ck_assert_int_eq(attn_seq2seq_sample(m, src, 5, 9, true, &bad, a, &na, NULL, NULL, &err),
                     ATTN_ERR_ARG);
    /* equal logits (a zero head): top-k 1 takes the lowest id, as greedy's first maximum */
    const char *head[2] = {"head.weight", "head.bias"};
    for (int t = 0; t < 2; t++) {
        const long i = attn_seq2seq_tensor_find(m, head[t]);
        ck_assert_int_ge(i, 0);
        memset(attn_seq2seq_params(m) + attn_seq2seq_tensor_offset(m, (size_t)i), 0,
               attn_seq2seq_tensor_numel(m, (size_t)i) * sizeof(float));
    }
    ck_assert(attn_seq2seq_greedy(m, src, 5, 9, true, g, &ng, NULL, NULL, &err) == ATTN_OK);
    ck_assert(attn_seq2seq_sample(m, src, 5, 9, true, &top1, a, &na, NULL, NULL, &err) == ATTN_OK);
    ck_assert_int_eq(ng, 9);
    ck_assert_int_eq(na, 9);
    for (int j = 0; j < 9; j++) ck_assert(a[j] == 0 && g[j] == 0);
    attn_seq2seq_free(m);
}
END_TEST

START_TEST(test_json_round_trip_and_refusals) {
    const attn_seq2seq_config c = small_config(ATTN_NORM_POST, ATTN_ACT_GELU, ATTN_POS_LEARNED);
    attn_seq2seq *m = make(&c, 13), *back = NULL;
    char path[] = "/tmp/attn-s2s-XXXXXX";
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
        ck_assert_int_eq(attn_seq2seq_config_of(back)->norm, ATTN_NORM_POST);
        attn_seq2seq_free(back);
    }
    /* a missing tensor and an unknown one are both named */
    char *text = tu_read_text(path);
    ck_assert_ptr_nonnull(text);
    char *bad = tu_replace_once(text, path, "\"head.bias\"", "\"head.biass\"");
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(bad, f);
    fclose(f);
    ck_assert_int_ne(attn_seq2seq_load_json(path, &back, &err), ATTN_OK);
    ck_assert_ptr_null(back);
    ck_assert_msg(strstr(err.msg, path) && strstr(err.msg, "missing tensor \"head.bias\"") &&
                      strstr(err.msg, "head.biass"),
                  "%s", err.msg);
    free(bad);
    free(text);
    /* a classifier's weights file is named as such */
    attn_model *cls = NULL;
    ck_assert(attn_model_create(&(attn_model_config){0}, 1, &cls, &err) != ATTN_OK || cls == NULL);
    attn_model_config cc = attn_model_config_default(ATTN_ARCH_LSTM);
    ck_assert(attn_model_create(&cc, 1, &cls, &err) == ATTN_OK);
    ck_assert(attn_weights_save_json(cls, false, path, &err) == ATTN_OK);
    ck_assert_int_eq(attn_seq2seq_load_json(path, &back, &err), ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, path) && strstr(err.msg, "classifier"), "%s", err.msg);
    attn_model_free(cls);
    unlink(path);
    attn_seq2seq_free(m);
}
END_TEST

int main(void) {
    Suite *s = suite_create("seq2seq");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, test_backward_finite_differences, 0,
                        (int)(sizeof FD_CASES / sizeof FD_CASES[0]));
    tcase_add_test(tc, test_batch_equals_pairs_alone);
    tcase_add_loop_test(tc, test_cached_greedy_matches_recompute, 0, 4);
    tcase_add_loop_test(tc, test_greedy_min_and_batch, 0, 4);
    tcase_add_test(tc, test_positions_inside_attention);
    tcase_add_test(tc, test_beam_width_one_is_greedy);
    tcase_add_test(tc, test_sampling);
    tcase_add_test(tc, test_json_round_trip_and_refusals);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

/* test_attention_blocked.c -- the online-softmax (blocked) attention of one head against
 * (1) an independent double-precision softmax(q.k^T).v written here and (2) the naive kernel
 * path (scores -> attn_softmax_forward -> probs.v), on shapes with n not a multiple of the tile,
 * n = 1, masked keys (n_valid < n_k), several tiles and a fully masked row set. Also checks the
 * FLOP accountant sees n_q*n_valid*HS multiply-adds per tag, the workspace contract, and that
 * the threaded variant (query tiles over 2 and 3 threads) gives the 1-thread result bit for
 * bit: every query tile is computed the same way whichever thread takes it. */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1e-5 relative to the data's scale: v is U(-1,1), so outputs are judged on absolute error
 * against 1e-5 * max(|want|, 1). */
#define REL_TOL   1e-5
#define ABS_FLOOR 1.0

typedef struct shape {
    int n_q, n_k, hs, n_valid, tile;
} shape;

static const shape shapes[] = {
    {1, 1, 4, 1, 4},                          /* n = 1 */
    {5, 7, 8, 7, 4},                          /* n not a multiple of the tile, 2 key tiles */
    {33, 33, 16, 33, 8},                      /* 5 tiles each way */
    {37, 50, 16, 29, 16},                     /* masked keys: n_valid < n_k, n_q != n_k */
    {64, 64, 8, 64, 16},                      /* exact multiples */
    {20, 20, 8, 0, 8},                        /* every key masked: zeros */
    {300, 300, 64, 300, ATTN_ATTENTION_TILE}, /* default tile, 2 tiles (one partial) */
    {9, 300, 12, 257, 32},                    /* few queries, many key tiles, masked tail */
};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

/* out = softmax over the first n_valid keys of q.k^T, times v; double throughout. */
static void reference(float *out, const float *q, const float *k, const float *v, int n_q, int hs,
                      int n_valid) {
    double *s = malloc((size_t)(n_valid > 0 ? n_valid : 1) * sizeof *s);
    ck_assert_ptr_nonnull(s);
    for (int i = 0; i < n_q; i++) {
        double mx = -INFINITY, sum = 0.0;
        for (int j = 0; j < n_valid; j++) {
            double dot = 0.0;
            for (int c = 0; c < hs; c++) dot += (double)q[i * hs + c] * k[j * hs + c];
            s[j] = dot;
            mx = dot > mx ? dot : mx;
        }
        for (int j = 0; j < n_valid; j++) sum += (s[j] = exp(s[j] - mx));
        for (int c = 0; c < hs; c++) {
            double acc = 0.0;
            for (int j = 0; j < n_valid; j++) acc += s[j] / sum * v[j * hs + c];
            out[i * hs + c] = (float)acc;
        }
    }
    free(s);
}

START_TEST(test_blocked_matches_reference_and_naive) {
    const shape sh = shapes[_i];
    printf("shape n_q=%d n_k=%d hs=%d n_valid=%d tile=%d\n", sh.n_q, sh.n_k, sh.hs, sh.n_valid,
           sh.tile);
    attn_rng r = attn_rng_seed(100 + (uint64_t)_i);
    const size_t nq = (size_t)sh.n_q * sh.hs, nk = (size_t)sh.n_k * sh.hs;
    float *q = malloc(nq * sizeof *q), *k = malloc(nk * sizeof *k), *v = malloc(nk * sizeof *v);
    float *got = malloc(nq * sizeof *got), *naive = malloc(nq * sizeof *naive);
    float *want = malloc(nq * sizeof *want);
    float *probs = malloc((size_t)sh.n_q * sh.n_k * sizeof *probs);
    const size_t work_n = attn_attention_blocked_work_size(sh.tile);
    float *work = malloc((work_n + 1) * sizeof *work);
    ck_assert(q && k && v && got && naive && want && probs && work);
    /* q already scaled; spread of 3 makes the softmax peaky enough to need the max shift */
    tu_fill_uniform(q, nq, -3.0f, 3.0f, &r);
    tu_fill_uniform(k, nk, -1.0f, 1.0f, &r);
    tu_fill_uniform(v, nk, -1.0f, 1.0f, &r);
    for (size_t i = 0; i < nq; i++) got[i] = NAN; /* the kernel must overwrite every element */
    work[work_n] = 12345.0f;                      /* sentinel just past the documented size */

    attn_flop_counts fc = {0};
    attn_flops_set_counter(&fc);
    attn_attention_blocked_forward(got, q, k, v, sh.n_q, sh.n_k, sh.hs, sh.n_valid, work, sh.tile);
    attn_flops_set_counter(NULL);
    const uint64_t per_tag = (uint64_t)sh.n_q * sh.n_valid * sh.hs;
    ck_assert_uint_eq(fc.fwd_madds[ATTN_OP_QK], per_tag);
    ck_assert_uint_eq(fc.fwd_madds[ATTN_OP_AV], per_tag);
    ck_assert_float_eq(work[work_n], 12345.0f);

    reference(want, q, k, v, sh.n_q, sh.hs, sh.n_valid);
    attn_attention_forward(naive, probs, q, k, v, 1, sh.n_q, sh.n_k, sh.hs, sh.n_valid, 0, NULL);
    tu_assert_close("blocked vs double reference", got, want, nq, REL_TOL, ABS_FLOOR);
    tu_assert_close("naive vs double reference", naive, want, nq, REL_TOL, ABS_FLOOR);
    tu_assert_close("blocked vs naive", got, naive, nq, REL_TOL, ABS_FLOOR);
    if (sh.n_valid == 0)
        for (size_t i = 0; i < nq; i++) ck_assert_float_eq(got[i], 0.0f);

    for (int threads = 2; threads <= 3; threads++) {
        float *got_mt = malloc(nq * sizeof *got_mt);
        float *work_mt = malloc((threads * work_n + 1) * sizeof *work_mt);
        ck_assert(got_mt && work_mt);
        for (size_t i = 0; i < nq; i++) got_mt[i] = NAN;
        work_mt[threads * work_n] = 12345.0f;
        attn_attention_blocked_forward_mt(got_mt, q, k, v, sh.n_q, sh.n_k, sh.hs, sh.n_valid,
                                          work_mt, sh.tile, threads);
        ck_assert_float_eq(work_mt[threads * work_n], 12345.0f);
        for (size_t i = 0; i < nq; i++)
            ck_assert_msg(memcmp(&got_mt[i], &got[i], sizeof got[i]) == 0,
                          "%d threads: out[%zu] = %.9g, 1 thread gave %.9g", threads, i, got_mt[i],
                          got[i]);
        free(got_mt), free(work_mt);
    }
    attn_set_num_threads(1);

    free(q), free(k), free(v), free(got), free(naive), free(want), free(probs);
    free(work);
}
END_TEST

/* A huge score spread (logits up to ~+-400) must not overflow: the running max handles it
 * where exp(s) alone would be inf. The key with the largest score wins outright. */
START_TEST(test_blocked_large_scores) {
    enum { NQ = 3, NK = 40, HS = 4, TILE = 8 };
    float q[NQ * HS], k[NK * HS], v[NK * HS], out[NQ * HS];
    float work[TILE * TILE + 2 * TILE];
    for (int i = 0; i < NQ * HS; i++) q[i] = 10.0f;
    for (int j = 0; j < NK; j++)
        for (int c = 0; c < HS; c++) {
            k[j * HS + c] = (float)(j % 11) - 5.0f + (j == 29 ? 5.0f : 0.0f); /* key 29 wins */
            v[j * HS + c] = (float)j;
        }
    attn_attention_blocked_forward(out, q, k, v, NQ, NK, HS, NK, work, TILE);
    for (int i = 0; i < NQ * HS; i++) {
        ck_assert_msg(isfinite(out[i]), "out[%d] = %g is not finite", i, out[i]);
        ck_assert_float_eq_tol(out[i], 29.0f, 1e-4f);
    }
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("attention_blocked");
    TCase *tc = tcase_create("blocked");
    tcase_add_loop_test(tc, test_blocked_matches_reference_and_naive, 0, N_SHAPES);
    tcase_add_test(tc, test_blocked_large_scores);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return tu_run_suite(suite());
}

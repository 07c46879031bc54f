/* test_attention_blocked.c -- the online-softmax (blocked) attention of one head against
 * (1) an independent double-precision softmax(q.k^T).v written here and (2) the naive kernel
 * path (scores -> attn_softmax_forward -> probs.v), on shapes with n not a multiple of the tile,
 * n = 1, masked keys (n_valid < n_k), several tiles and a fully masked row set. Also checks the
 * FLOP accountant sees n_q*n_valid*HS multiply-adds per tag, the workspace contract, that the
 * parts (query tiles dealt to 2 and 3 threads of the caller's, the BLAS on 2 threads) give the
 * one-call result bit for bit -- every query tile is computed the same way whichever thread
 * takes it -- and that the scalar and AVX2 row helpers give the same bits. */
#include "test_util.h"

#include <math.h>
#include <pthread.h>
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

/* One part of the blocked forward on a thread of the test's own. */
typedef struct part_job {
    float *out;
    const float *q, *k, *v;
    float *work;
    shape sh;
    int part, parts;
} part_job;

static void *run_part(void *arg) {
    const part_job *j = arg;
    attn_attention_blocked_forward_part(j->out, j->q, j->k, j->v, j->sh.n_q, j->sh.n_k, j->sh.hs,
                                        j->sh.n_valid, j->work, j->sh.tile, j->part, j->parts);
    return NULL;
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

    /* parts on threads of the caller's (2 and 3, each with its own work slice, one BLAS thread
     * each as attn's pinned rule runs it: OpenBLAS on 2 threads rounds large products otherwise),
     * and the other CPU path: the same bits every time */
    attn_set_num_threads(1);
    for (int parts = 2; parts <= 3; parts++) {
        float *got_p = malloc(nq * sizeof *got_p);
        float *work_p = malloc((parts * work_n + 1) * sizeof *work_p);
        ck_assert(got_p && work_p);
        for (size_t i = 0; i < nq; i++) got_p[i] = NAN;
        work_p[parts * work_n] = 12345.0f;
        part_job jobs[3];
        pthread_t tid[3];
        for (int t = 0; t < parts; t++) {
            jobs[t] = (part_job){got_p, q, k, v, work_p + (size_t)t * work_n, sh, t, parts};
            ck_assert_int_eq(pthread_create(&tid[t], NULL, run_part, &jobs[t]), 0);
        }
        for (int t = 0; t < parts; t++) pthread_join(tid[t], NULL);
        ck_assert_float_eq(work_p[parts * work_n], 12345.0f);
        for (size_t i = 0; i < nq; i++)
            ck_assert_msg(memcmp(&got_p[i], &got[i], sizeof got[i]) == 0,
                          "%d parts: out[%zu] = %.9g, one call gave %.9g", parts, i, got_p[i],
                          got[i]);
        free(got_p), free(work_p);
    }
    attn_set_num_threads(1);
    const char *was = attn_cpu_path(), *other = strcmp(was, "scalar") == 0 ? "avx2" : "scalar";
    if (attn_cpu_path_supported(other)) {
        float *got_o = malloc(nq * sizeof *got_o);
        ck_assert(got_o && attn_cpu_select(other));
        attn_attention_blocked_forward(got_o, q, k, v, sh.n_q, sh.n_k, sh.hs, sh.n_valid, work,
                                       sh.tile);
        ck_assert(attn_cpu_select(was));
        for (size_t i = 0; i < nq; i++)
            ck_assert_msg(memcmp(&got_o[i], &got[i], sizeof got[i]) == 0,
                          "%s path: out[%zu] = %.9g, %s gave %.9g", other, i, got_o[i], was,
                          got[i]);
        free(got_o);
    } else {
        printf("  %s kernels: not supported by this CPU or build, path comparison skipped\n",
               other);
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

/* test_flops.c -- the FLOP accountant against the write-up's formulas for a pre-norm encoder
 * layer (bench/vit_layer.h): projections (QKV + out) 4nD^2, MLP 2nDF (8nD^2 at F = 4D),
 * n x n products (Q.K^T + A.V) 2n^2 D, on both attention paths (the layer is the Transformer's
 * encoder layer; the attention kernel itself is tested in test_attention.c); and the n x n share at
 * the write-up's sizes (ViT-Base, D = 768: 4.1 % at n = 197, 47.1 % at n = 4097), counted. */
#include "test_util.h"

#include "../../bench/vit_layer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cfg {
    int D, NH, F, n;
} cfg;

static const cfg cfgs[] = {
    {16, 2, 64, 1},  {16, 2, 64, 5},   {32, 4, 128, 33}, {48, 3, 192, 197},
    {32, 2, 128, 5}, {48, 4, 192, 33}, {16, 4, 64, 197}, {32, 4, 40, 33}, /* F != 4D */
};
#define N_CFGS ((int)(sizeof cfgs / sizeof cfgs[0]))

/* Runs one forward with the counter on; returns the forward counts. Output must be finite. */
static attn_flop_counts count_layer(const cfg *c, vit_path path) {
    vit_layer L;
    vit_work w;
    ck_assert(vit_layer_init(&L, c->D, c->NH, c->F, 7));
    ck_assert(vit_work_init(&w, &L, c->n, path));
    const size_t nd = (size_t)c->n * c->D;
    float *x = malloc(nd * sizeof *x), *y = malloc(nd * sizeof *y);
    ck_assert(x && y);
    attn_rng r = attn_rng_seed(11);
    tu_fill_uniform(x, nd, -1.0f, 1.0f, &r);
    attn_flop_counts fc = {0};
    attn_flops_set_counter(&fc);
    vit_layer_forward(y, x, &L, &w, c->n, NULL);
    attn_flops_set_counter(NULL);
    for (size_t i = 0; i < nd; i++) ck_assert_msg(isfinite(y[i]), "y[%zu] = %g", i, y[i]);
    free(x), free(y);
    vit_work_free(&w);
    vit_layer_free(&L);
    return fc;
}

static void check_counts(const cfg *c, const attn_flop_counts *fc) {
    const uint64_t n = (uint64_t)c->n, D = (uint64_t)c->D, F = (uint64_t)c->F;
    const uint64_t *m = fc->fwd_madds;
    /* the write-up's three groups, written out independently of vit_layer_madds */
    ck_assert_uint_eq(m[ATTN_OP_QKV] + m[ATTN_OP_OUT_PROJ], 4 * n * D * D);
    ck_assert_uint_eq(m[ATTN_OP_FFN_UP] + m[ATTN_OP_FFN_DOWN], 2 * n * D * F);
    ck_assert_uint_eq(m[ATTN_OP_QK] + m[ATTN_OP_AV], 2 * n * n * D);
    ck_assert_uint_eq(m[ATTN_OP_QK], m[ATTN_OP_AV]);
    ck_assert_uint_eq(m[ATTN_OP_QKV], 3 * m[ATTN_OP_OUT_PROJ]);
    /* nothing else multiplies, and nothing runs backward */
    uint64_t total = 0;
    for (int t = 0; t < ATTN_OP_COUNT; t++) {
        total += m[t];
        ck_assert_uint_eq(fc->bwd_madds[t], 0);
    }
    ck_assert_uint_eq(m[ATTN_OP_OTHER] + m[ATTN_OP_INPUT] + m[ATTN_OP_RECURRENT] + m[ATTN_OP_HEAD],
                      0);
    /* at F = 4D the n x n share is exactly n / (6D + n): cross-multiplied in integers */
    if (F == 4 * D) ck_assert_uint_eq((m[ATTN_OP_QK] + m[ATTN_OP_AV]) * (6 * D + n), n * total);
    /* and the bench's analytic table agrees tag by tag */
    uint64_t want[ATTN_OP_COUNT];
    vit_layer_madds(want, c->n, c->D, c->F);
    for (int t = 0; t < ATTN_OP_COUNT; t++) ck_assert_uint_eq(m[t], want[t]);
}

START_TEST(test_counts_naive) {
    const cfg *c = &cfgs[_i];
    attn_flop_counts fc = count_layer(c, VIT_PATH_NAIVE);
    check_counts(c, &fc);
    /* one Q.K^T and one A.V per head */
    ck_assert_uint_eq(fc.calls[ATTN_OP_QK], (uint64_t)c->NH);
    ck_assert_uint_eq(fc.calls[ATTN_OP_AV], (uint64_t)c->NH);
}
END_TEST

/* Above ATTN_ATTENTION_BLOCKED_ABOVE tokens the layer's attention goes blocked: tiles of
 * ATTN_ATTENTION_TILE each way (a partial one at the end). */
static const cfg long_cfgs[] = {
    {16, 2, 64, ATTN_ATTENTION_BLOCKED_ABOVE + 1},
    {24, 3, 96, ATTN_ATTENTION_BLOCKED_ABOVE + 77},
    {16, 4, 40, 2 * ATTN_ATTENTION_TILE * 3 - 5}, /* F != 4D */
};
#define N_LONG_CFGS ((int)(sizeof long_cfgs / sizeof long_cfgs[0]))

START_TEST(test_counts_blocked) {
    const cfg *c = &long_cfgs[_i];
    const int tile = ATTN_ATTENTION_TILE;
    ck_assert(vit_uses_blocked(VIT_PATH_AUTO, c->n));
    attn_flop_counts fc = count_layer(c, VIT_PATH_AUTO);
    check_counts(c, &fc);
    const uint64_t tiles = (uint64_t)((c->n + tile - 1) / tile);
    ck_assert_uint_eq(fc.calls[ATTN_OP_QK], (uint64_t)c->NH * tiles * tiles);
}
END_TEST

/* The blocked and naive layers agree (the bench validates the same before timing). */
START_TEST(test_layer_paths_agree) {
    const int D = 32, NH = 4, F = 128, n = ATTN_ATTENTION_BLOCKED_ABOVE + 45;
    vit_layer L;
    vit_work wn, wb;
    ck_assert(vit_layer_init(&L, D, NH, F, 3));
    ck_assert(vit_work_init(&wn, &L, n, VIT_PATH_NAIVE));
    ck_assert(vit_work_init(&wb, &L, n, VIT_PATH_AUTO));
    ck_assert(!vit_uses_blocked(VIT_PATH_NAIVE, n) && vit_uses_blocked(VIT_PATH_AUTO, n));
    const size_t nd = (size_t)n * D;
    float *x = malloc(nd * sizeof *x), *yn = malloc(nd * sizeof *yn), *yb = malloc(nd * sizeof *yb);
    ck_assert(x && yn && yb);
    attn_rng r = attn_rng_seed(5);
    tu_fill_uniform(x, nd, -2.0f, 2.0f, &r);
    vit_layer_forward(yn, x, &L, &wn, n, NULL);
    vit_layer_forward(yb, x, &L, &wb, n, NULL);
    tu_assert_close("layer: blocked vs naive", yb, yn, nd, 1e-5, 1.0);
    free(x), free(yn), free(yb);
    vit_work_free(&wn);
    vit_work_free(&wb);
    vit_layer_free(&L);
}
END_TEST

/* The bench's forward-only layout reuses buffers (vit_work_layout); its output must equal the
 * encoder layer's with every activation in a buffer of its own, bit for bit. */
START_TEST(test_layer_reused_buffers_exact) {
    const int D = 32, NH = 4, F = 128, n = 57;
    vit_layer L;
    vit_work w;
    ck_assert(vit_layer_init(&L, D, NH, F, 11));
    ck_assert(vit_work_init(&w, &L, n, VIT_PATH_NAIVE));
    const size_t nd = (size_t)n * D, nf = (size_t)n * F;
    float *x = malloc(nd * sizeof *x), *y = malloc(nd * sizeof *y), *ref = malloc(nd * sizeof *ref);
    ck_assert(x && y && ref);
    attn_rng r = attn_rng_seed(9);
    tu_fill_uniform(x, nd, -2.0f, 2.0f, &r);
    vit_layer_forward(y, x, &L, &w, n, NULL);
    /* the same layer, one buffer per activation */
    float *buf = calloc(14 * nd + 2 * nf + (size_t)NH * n * n + 4 * (size_t)n, sizeof *buf);
    ck_assert(buf);
    attn_encoder_acts a = {0};
    float *p = buf;
    a.n1 = p, p += nd;
    a.qkv = p, p += 3 * nd;
    a.q = p, p += nd;
    a.k = p, p += nd;
    a.v = p, p += nd;
    a.probs = p, p += (size_t)NH * n * n;
    a.ctx = p, p += nd;
    a.att = p, p += nd;
    a.r1 = p, p += nd;
    a.n2 = p, p += nd;
    a.ff1 = p, p += nf;
    a.act = p, p += nf;
    a.mean1 = p, p += n;
    a.rstd1 = p, p += n;
    a.mean2 = p, p += n;
    a.rstd2 = p, p += n;
    a.r2 = a.out = ref;
    const int rows[2] = {0, n};
    const attn_encoder_rows batch = {1, n, rows};
    attn_encoder_forward(&a, x, &L.w, &L.cfg, &batch);
    tu_compare c = tu_compare_floats(y, ref, nd);
    ck_assert_msg(c.max_ulp == 0, "reused buffers: output %zu is %u ULP from separate buffers",
                  c.worst, c.max_ulp);
    free(x), free(y), free(ref), free(buf);
    vit_work_free(&w);
    vit_layer_free(&L);
}
END_TEST

/* The write-up's numbers: ViT-Base (D = 768, 12 heads, MLP 3072) at 224 px (n = 197, counted
 * by running the layer) and 1024 px (n = 4097, counted on the blocked path), printed to one
 * decimal as the write-up prints them. */
START_TEST(test_writeup_shares) {
    const int ns[2] = {197, 4097};
    const char *want[2] = {"4.1", "47.1"};
    for (int i = 0; i < 2; i++) {
        cfg c = {768, 12, 3072, ns[i]};
        attn_flop_counts fc = count_layer(&c, VIT_PATH_AUTO);
        check_counts(&c, &fc);
        uint64_t total = 0;
        for (int t = 0; t < ATTN_OP_COUNT; t++) total += fc.fwd_madds[t];
        const double share =
            100.0 * (double)(fc.fwd_madds[ATTN_OP_QK] + fc.fwd_madds[ATTN_OP_AV]) / (double)total;
        char got[16];
        snprintf(got, sizeof got, "%.1f", share);
        printf("  n = %d: n x n share %s %% (formula %.4f %%)\n", ns[i], got,
               100.0 * vit_nn_share(ns[i], 768));
        ck_assert_str_eq(got, want[i]);
        ck_assert_double_eq_tol(share, 100.0 * vit_nn_share(ns[i], 768), 1e-9);
    }
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("flops");
    TCase *tc = tcase_create("flops");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_counts_naive, 0, N_CFGS);
    tcase_add_loop_test(tc, test_counts_blocked, 0, N_LONG_CFGS);
    tcase_add_test(tc, test_layer_paths_agree);
    tcase_add_test(tc, test_layer_reused_buffers_exact);
    suite_add_tcase(s, tc);
    /* two ViT-Base layers, one of 4097 tokens: its own CTest, kernels/test_flops_writeup
     * (tests/kernels/extra.cmake) */
    TCase *writeup = tcase_create("writeup");
    tcase_set_timeout(writeup, 300);
    tcase_set_tags(writeup, "writeup");
    tcase_add_test(writeup, test_writeup_shares);
    suite_add_tcase(s, writeup);
    return s;
}

int main(void) {
    return tu_run_suite(suite());
}

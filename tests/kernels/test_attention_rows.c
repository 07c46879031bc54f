/* test_attention_rows.c -- the attentions on operands whose heads sit side by side in each row
 * (attn_attention_forward_rows/backward_rows, attn_masked_attention_forward_rows/backward_rows:
 * the encoder's and decoder's training layout, q, k, v read from the in-projection's [n, 3D]
 * output and the heads written into the concatenated [n, D]) against the head-major kernels they
 * replace (the heads copied apart, attn_attention_forward_bias/backward,
 * attn_masked_attention_forward and the causal/cross backward), bit for bit: outputs,
 * probabilities, and accumulated d_q, d_k, d_v. Shapes on both sides of ATen's small-bmm rule
 * (400 multiply-adds per head: the loop, then OpenBLAS with leading dimensions), row strides
 * wider than the heads, masked keys, a score bias, and the one-float head (contiguous rows). The
 * row-layout forwards accumulate into out and probs, zeroed here as the layers do. */
#include "attn_seq2seq.h"
#include "test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct shape {
    int NH, n_q, n_k, HS, n_valid;
    int pad;   /* extra floats per row beyond the heads (ld = NH*HS*3 + pad for q, k, v) */
    int q_pos; /* masked kernels: -1 cross, >= 0 causal from there */
    bool bias; /* with an additive score bias */
} shape;

static const shape shapes[] = {
    {1, 1, 1, 4, 1, 0, 0, false},     /* the smallest */
    {2, 5, 5, 4, 5, 0, 0, false},     /* loop: 100 multiply-adds */
    {2, 4, 7, 3, 5, 2, -1, true},     /* masked keys, n_q != n_k, bias */
    {2, 1, 9, 8, 9, 1, -1, false},    /* one query */
    {2, 12, 12, 16, 12, 0, 0, false}, /* sgemm: 2,304 multiply-adds */
    {3, 20, 20, 8, 17, 5, 0, true},   /* sgemm, masked keys, bias, wide rows */
    {2, 9, 31, 16, 31, 3, -1, false}, /* cross-attention shape, sgemm */
    {1, 7, 7, 1, 7, 0, 0, false},     /* one-float head: rows of one float (ld 1 for out and q) */
};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

typedef struct rows_case {
    shape sh;
    int ld_x;                       /* row stride of q, k, v: [n, 3D + pad] */
    int ld_o;                       /* row stride of out / d_out: [n, D + pad] */
    float *x, *o, *d_o;             /* rows layout: q | k | v per row, out, d_out */
    float *q, *k, *v, *out, *d_out; /* head-major copies [NH, n, HS] */
    float *bias, *probs_a, *probs_b, *work;
} rows_case;

static bool one_float(const shape *s) {
    return s->HS == 1;
}

static void rows_init(rows_case *c, const shape *s, uint64_t seed) {
    memset(c, 0, sizeof *c);
    c->sh = *s;
    const int D = s->NH * s->HS, n = s->n_q > s->n_k ? s->n_q : s->n_k;
    /* a one-float head keeps its operands contiguous (ld 1): a column result must be */
    c->ld_x = one_float(s) ? 1 : 3 * D + s->pad;
    c->ld_o = one_float(s) ? 1 : D + s->pad;
    const size_t nx = (size_t)n * c->ld_x + 3 * (size_t)D * (one_float(s) ? (size_t)n : 1);
    attn_rng rng = attn_rng_seed(seed);
    c->x = malloc(nx * sizeof(float));
    c->o = malloc((size_t)n * c->ld_o * sizeof(float) + sizeof(float));
    c->d_o = malloc((size_t)n * c->ld_o * sizeof(float) + sizeof(float));
    ck_assert(c->x && c->o && c->d_o);
    tu_fill_uniform(c->x, nx, -1.5f, 1.5f, &rng);
    memset(c->o, 0, (size_t)n * c->ld_o * sizeof(float)); /* forward_rows accumulates */
    tu_fill_uniform(c->d_o, (size_t)n * c->ld_o, -1.0f, 1.0f, &rng);
    const size_t hm = (size_t)s->NH * n * s->HS, pn = (size_t)s->NH * s->n_q * s->n_k;
    float **bufs[] = {&c->q, &c->k, &c->v, &c->out, &c->d_out};
    for (int i = 0; i < 5; i++) {
        *bufs[i] = calloc(hm, sizeof(float));
        ck_assert_ptr_nonnull(*bufs[i]);
    }
    c->bias = malloc(pn * sizeof(float));
    c->probs_a = malloc(pn * sizeof(float));
    c->probs_b = calloc(pn, sizeof(float)); /* forward_rows accumulates the scores */
    c->work = malloc(attn_attention_backward_work_size(s->n_q, s->n_k) * sizeof(float));
    ck_assert(c->bias && c->probs_a && c->probs_b && c->work);
    tu_fill_uniform(c->bias, pn, -2.0f, 2.0f, &rng);
}

static void rows_free(rows_case *c) {
    float *bufs[] = {c->x,   c->o,     c->d_o,  c->q,       c->k,       c->v,
                     c->out, c->d_out, c->bias, c->probs_a, c->probs_b, c->work};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) free(bufs[i]);
}

/* Where q, k, v of the rows layout start (one-float heads: three contiguous columns). */
static const float *q_at(const rows_case *c) {
    return c->x;
}
static const float *k_at(const rows_case *c) {
    const int n = c->sh.n_q > c->sh.n_k ? c->sh.n_q : c->sh.n_k;
    return one_float(&c->sh) ? c->x + n : c->x + c->sh.NH * c->sh.HS;
}
static const float *v_at(const rows_case *c) {
    const int n = c->sh.n_q > c->sh.n_k ? c->sh.n_q : c->sh.n_k;
    return one_float(&c->sh) ? c->x + 2 * n : c->x + 2 * c->sh.NH * c->sh.HS;
}

/* dst [NH, rows, HS] head-major <- src rows (ld) with heads side by side, and back. */
static void split(float *dst, const float *src, int ld, int rows, const shape *s) {
    for (int h = 0; h < s->NH; h++)
        for (int r = 0; r < rows; r++)
            memcpy(dst + ((size_t)h * rows + r) * s->HS, src + (size_t)r * ld + (size_t)h * s->HS,
                   (size_t)s->HS * sizeof(float));
}

static void split_operands(rows_case *c) {
    const shape *s = &c->sh;
    split(c->q, q_at(c), c->ld_x, s->n_q, s);
    split(c->k, k_at(c), c->ld_x, s->n_k, s);
    split(c->v, v_at(c), c->ld_x, s->n_k, s);
    split(c->d_out, c->d_o, c->ld_o, s->n_q, s);
}

/* Asserts the rows layout's [rows, HS] heads (ld) equal the head-major ones bit for bit. */
static void assert_rows_equal(const char *what, const float *rows_x, int ld, const float *hm,
                              int rows, const shape *s) {
    float *got = malloc((size_t)s->NH * rows * s->HS * sizeof(float) + sizeof(float));
    ck_assert_ptr_nonnull(got);
    split(got, rows_x, ld, rows, s);
    tu_assert_identical(what, got, hm, (size_t)s->NH * rows * s->HS);
    free(got);
}

/* Head-major copy at head stride hs of `rows` rows of x (row stride ld, heads side by side). */
static float *head_major(const float *x, int ld, int rows, size_t hs, const shape *s) {
    float *hm = calloc(hs * s->NH + 1, sizeof(float));
    ck_assert_ptr_nonnull(hm);
    for (int h = 0; h < s->NH; h++)
        for (int r = 0; r < rows; r++)
            memcpy(hm + h * hs + (size_t)r * s->HS, x + (size_t)r * ld + (size_t)h * s->HS,
                   (size_t)s->HS * sizeof(float));
    return hm;
}

START_TEST(test_encoder_rows_equal_head_major) {
    rows_case c;
    rows_init(&c, &shapes[_i], 0x5eed0 + (uint64_t)_i);
    const shape *s = &c.sh;
    const int n = s->n_q > s->n_k ? s->n_q : s->n_k;
    const size_t hs = (size_t)n * s->HS; /* one head-major stride for q, k, v and out */
    float *q = head_major(q_at(&c), c.ld_x, s->n_q, hs, s);
    float *k = head_major(k_at(&c), c.ld_x, s->n_k, hs, s);
    float *v = head_major(v_at(&c), c.ld_x, s->n_k, hs, s);
    float *d_out = head_major(c.d_o, c.ld_o, s->n_q, hs, s);
    float *out = calloc(hs * s->NH + 1, sizeof(float));
    ck_assert_ptr_nonnull(out);
    const float *bias = s->bias ? c.bias : NULL;
    attn_attention_forward_bias(out, c.probs_a, q, k, v, bias, s->NH, s->n_q, s->n_k, s->HS,
                                s->n_valid, hs, NULL);
    attn_attention_forward_rows(c.o, c.ld_o, c.probs_b, q_at(&c), c.ld_x, k_at(&c), c.ld_x,
                                v_at(&c), c.ld_x, bias, s->NH, s->n_q, s->n_k, s->HS, s->n_valid);
    tu_assert_identical("probabilities", c.probs_b, c.probs_a, (size_t)s->NH * s->n_q * s->n_k);
    float *o_hm = head_major(c.o, c.ld_o, s->n_q, hs, s);
    tu_assert_identical("out", o_hm, out, hs * s->NH);
    /* backward, accumulating onto the same non-zero start in both layouts (the encoder's
     * contract; it starts from zero) */
    const size_t nx = (size_t)n * c.ld_x + 3 * (size_t)s->NH * s->HS * (one_float(s) ? n : 1);
    float *d_x = malloc(nx * sizeof(float));
    ck_assert_ptr_nonnull(d_x);
    attn_rng rng = attn_rng_seed(77 + (uint64_t)_i);
    tu_fill_uniform(d_x, nx, -0.5f, 0.5f, &rng);
    float *d_rows[3] = {d_x + (q_at(&c) - c.x), d_x + (k_at(&c) - c.x), d_x + (v_at(&c) - c.x)};
    const int rows_of[3] = {s->n_q, s->n_k, s->n_k};
    float *d_hm[3];
    for (int t = 0; t < 3; t++) d_hm[t] = head_major(d_rows[t], c.ld_x, rows_of[t], hs, s);
    attn_attention_backward(d_hm[0], d_hm[1], d_hm[2], d_out, c.probs_a, q, k, v, s->NH, s->n_q,
                            s->n_k, s->HS, s->n_valid, hs, c.work);
    attn_attention_backward_rows(d_rows[0], d_rows[1], d_rows[2], c.d_o, c.ld_o, c.probs_b,
                                 q_at(&c), c.ld_x, k_at(&c), c.ld_x, v_at(&c), c.ld_x, s->NH,
                                 s->n_q, s->n_k, s->HS, s->n_valid, c.work);
    const char *names[3] = {"d_q", "d_k", "d_v"};
    for (int t = 0; t < 3; t++) {
        float *got = head_major(d_rows[t], c.ld_x, rows_of[t], hs, s);
        tu_assert_identical(names[t], got, d_hm[t], hs * s->NH);
        free(got);
        free(d_hm[t]);
    }
    free(d_x);
    free(o_hm);
    free(out);
    free(q);
    free(k);
    free(v);
    free(d_out);
    rows_free(&c);
}
END_TEST

START_TEST(test_masked_rows_equal_head_major) {
    rows_case c;
    rows_init(&c, &shapes[_i], 0xdec0 + (uint64_t)_i);
    const shape *s = &c.sh;
    const int q_pos = s->q_pos >= 0 ? s->n_k - s->n_q : -1; /* causal rows end at the last key */
    split_operands(&c);
    const size_t qs = (size_t)s->n_q * s->HS, kvs = (size_t)s->n_k * s->HS;
    const float *bias = s->bias ? c.bias : NULL;
    attn_masked_attention_forward(c.out, c.probs_a, c.q, c.k, c.v, bias, s->NH, s->n_q, s->n_k,
                                  s->HS, q_pos, qs, kvs);
    attn_masked_attention_forward_rows(c.o, c.ld_o, c.probs_b, q_at(&c), c.ld_x, k_at(&c), c.ld_x,
                                       v_at(&c), c.ld_x, bias, s->NH, s->n_q, s->n_k, s->HS, q_pos);
    tu_assert_identical("probabilities", c.probs_b, c.probs_a, (size_t)s->NH * s->n_q * s->n_k);
    assert_rows_equal("out", c.o, c.ld_o, c.out, s->n_q, s);
    /* backward from zero (the decoder's use) in both layouts */
    const int n = s->n_q > s->n_k ? s->n_q : s->n_k;
    const size_t nx = (size_t)n * c.ld_x + 3 * (size_t)s->NH * s->HS * (one_float(s) ? n : 1);
    float *d_x = calloc(nx, sizeof(float));
    float *d_q = calloc(qs * s->NH, sizeof(float)), *d_k = calloc(kvs * s->NH, sizeof(float)),
          *d_v = calloc(kvs * s->NH, sizeof(float));
    ck_assert(d_x && d_q && d_k && d_v);
    if (q_pos >= 0)
        attn_causal_attention_backward(d_q, d_k, d_v, c.d_out, c.probs_a, c.q, c.k, c.v, s->NH,
                                       s->n_q, s->n_k, s->HS, qs, kvs, c.work);
    else
        attn_cross_attention_backward(d_q, d_k, d_v, c.d_out, c.probs_a, c.q, c.k, c.v, s->NH,
                                      s->n_q, s->n_k, s->HS, qs, kvs, c.work);
    float *dq_rows = d_x + (q_at(&c) - c.x), *dk_rows = d_x + (k_at(&c) - c.x),
          *dv_rows = d_x + (v_at(&c) - c.x);
    attn_masked_attention_backward_rows(dq_rows, dk_rows, dv_rows, c.d_o, c.ld_o, c.probs_b,
                                        q_at(&c), c.ld_x, k_at(&c), c.ld_x, v_at(&c), c.ld_x, s->NH,
                                        s->n_q, s->n_k, s->HS, c.work);
    assert_rows_equal("d_q", dq_rows, c.ld_x, d_q, s->n_q, s);
    assert_rows_equal("d_k", dk_rows, c.ld_x, d_k, s->n_k, s);
    assert_rows_equal("d_v", dv_rows, c.ld_x, d_v, s->n_k, s);
    /* the rows layout really was read with its stride: the padding between heads is untouched */
    if (!one_float(s) && s->pad > 0)
        for (int r = 0; r < s->n_k; r++)
            for (int j = 3 * s->NH * s->HS; j < c.ld_x; j++)
                ck_assert_float_eq(d_x[(size_t)r * c.ld_x + j], 0.0f);
    free(d_x);
    free(d_q);
    free(d_k);
    free(d_v);
    rows_free(&c);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("attention_rows");
    TCase *tc = tcase_create("attention_rows");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_encoder_rows_equal_head_major, 0, N_SHAPES);
    tcase_add_loop_test(tc, test_masked_rows_equal_head_major, 0, N_SHAPES);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return tu_run_suite(suite());
}

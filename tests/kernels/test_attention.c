/* test_attention.c -- attn_attention_forward/backward (src/kernels/attention.c): the forward
 * against a double-precision softmax(q.k^T).v; backward against central finite differences of
 * L = sum r * out, and the accumulate contract (pre-filled d_q, d_k, d_v end up old + new);
 * the naive and blocked paths agree (and the blocked one is really taken: masked keys are
 * skipped, so it counts n_q*n_valid*HS multiply-adds); masked keys get probability 0 and do not
 * change the output; kept probability rows sum to 1; all heads at once equal head by head, also
 * in a packed layout with a head stride larger than n*HS; small heads take ATen's sequential
 * bmm loop and larger ones the sgemm, bit for bit, at the boundary of PyTorch's rule. */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FWD_REL_TOL  1e-5 /* forward vs the double reference, relative to max(|want|, 1) */
#define FD_STEP      1e-2f
#define FD_ATOL      2e-3
#define FD_RTOL      2e-2
#define ACCUM_RTOL   1e-6 /* old + new: one rounding of the sum */
#define BLOCKED_RTOL 1e-5 /* naive vs blocked: same math, different summation order */

typedef struct shape {
    int NH, n_q, n_k, HS, n_valid, pad; /* head_stride = max(n_q, n_k)*HS + pad */
} shape;

static const shape shapes[] = {
    {1, 1, 1, 4, 1, 0},  /* the smallest */
    {2, 5, 5, 4, 5, 0},  /* plain head-major [NH, n, HS] */
    {3, 4, 7, 3, 5, 6},  /* masked keys, n_q != n_k, packed stride */
    {2, 1, 6, 8, 6, 10}, /* one query ([CLS]-only style) */
    {1, 6, 6, 5, 0, 0},  /* every key masked: zeros */
};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

typedef struct case_data {
    shape sh;
    size_t stride, n; /* head stride, floats per q/k/v buffer */
    float *q, *k, *v, *r, *out, *probs, *work;
} case_data;

static size_t stride_of(const shape *s) {
    return (size_t)(s->n_q > s->n_k ? s->n_q : s->n_k) * s->HS + (size_t)s->pad;
}

static void case_init(case_data *c, const shape *sh, uint64_t seed) {
    c->sh = *sh;
    c->stride = stride_of(sh);
    c->n = (size_t)sh->NH * c->stride;
    attn_rng rng = attn_rng_seed(seed);
    float **bufs[] = {&c->q, &c->k, &c->v, &c->r, &c->out};
    for (int i = 0; i < 5; i++) {
        *bufs[i] = malloc(c->n * sizeof(float));
        ck_assert_ptr_nonnull(*bufs[i]);
        tu_fill_uniform(*bufs[i], c->n, -1.5f, 1.5f, &rng);
    }
    const size_t pn = (size_t)sh->NH * sh->n_q * sh->n_k;
    c->probs = malloc((pn + 1) * sizeof(float));
    c->work = malloc(attn_attention_backward_work_size(sh->n_q, sh->n_k) * sizeof(float));
    ck_assert(c->probs && c->work);
}

static void case_free(case_data *c) {
    free(c->q), free(c->k), free(c->v), free(c->r), free(c->out), free(c->probs), free(c->work);
}

static void forward(case_data *c) {
    const shape *s = &c->sh;
    attn_attention_forward(c->out, c->probs, c->q, c->k, c->v, s->NH, s->n_q, s->n_k, s->HS,
                           s->n_valid, c->stride, NULL);
}

/* L = sum over the heads' output rows of r * out, in double. */
static double fake_loss(void *ctx) {
    case_data *c = ctx;
    forward(c);
    double L = 0.0;
    for (int h = 0; h < c->sh.NH; h++)
        for (int i = 0; i < c->sh.n_q * c->sh.HS; i++) {
            const size_t o = (size_t)h * c->stride + i;
            L += (double)c->r[o] * c->out[o];
        }
    return L;
}

/* out_h = softmax(q_h.k_h^T over n_valid keys).v_h in double. */
static void reference(float *want, const case_data *c) {
    const shape *s = &c->sh;
    double *p = malloc((size_t)(s->n_k + 1) * sizeof *p);
    ck_assert_ptr_nonnull(p);
    for (int h = 0; h < s->NH; h++) {
        const float *q = c->q + h * c->stride, *k = c->k + h * c->stride, *v = c->v + h * c->stride;
        for (int i = 0; i < s->n_q; i++) {
            double mx = -INFINITY, sum = 0.0;
            for (int j = 0; j < s->n_valid; j++) {
                double dot = 0.0;
                for (int e = 0; e < s->HS; e++) dot += (double)q[i * s->HS + e] * k[j * s->HS + e];
                p[j] = dot;
                mx = dot > mx ? dot : mx;
            }
            for (int j = 0; j < s->n_valid; j++) sum += (p[j] = exp(p[j] - mx));
            for (int e = 0; e < s->HS; e++) {
                double acc = 0.0;
                for (int j = 0; j < s->n_valid; j++) acc += p[j] / sum * v[j * s->HS + e];
                want[h * c->stride + (size_t)i * s->HS + e] = (float)acc;
            }
        }
    }
    free(p);
}

/* Copies the heads' [rows, HS] blocks of x into a dense [NH, rows, HS] array. */
static void gather(float *dst, const float *x, const case_data *c, int rows) {
    const size_t m = (size_t)rows * c->sh.HS;
    for (int h = 0; h < c->sh.NH; h++) memcpy(dst + h * m, x + h * c->stride, m * sizeof(float));
}

START_TEST(test_forward_matches_reference) {
    case_data c;
    case_init(&c, &shapes[_i], 10 + (uint64_t)_i);
    const size_t m = (size_t)c.sh.NH * c.sh.n_q * c.sh.HS;
    float *want = calloc(c.n, sizeof *want), *g = malloc(m * sizeof *g), *w = malloc(m * sizeof *w);
    ck_assert(want && g && w);
    forward(&c);
    reference(want, &c);
    gather(g, c.out, &c, c.sh.n_q);
    gather(w, want, &c, c.sh.n_q);
    tu_assert_close("attention forward vs double reference", g, w, m, FWD_REL_TOL, 1.0);
    free(want), free(g), free(w);
    case_free(&c);
}
END_TEST

/* Each kept probability row sums to 1 over the valid keys (0 when none is valid), masked keys
 * get exactly 0, and what the masked keys and values hold does not change the output. */
START_TEST(test_probs_and_mask) {
    case_data c;
    case_init(&c, &shapes[_i], 20 + (uint64_t)_i);
    const shape *s = &c.sh;
    forward(&c);
    for (int row = 0; row < s->NH * s->n_q; row++) {
        const float *p = c.probs + (size_t)row * s->n_k;
        double sum = 0.0;
        for (int j = 0; j < s->n_k; j++) {
            if (j >= s->n_valid) ck_assert_float_eq(p[j], 0.0f);
            ck_assert(p[j] >= 0.0f);
            sum += p[j];
        }
        ck_assert_msg(fabs(sum - (s->n_valid ? 1.0 : 0.0)) < 1e-6, "row %d sums to %.9g", row, sum);
    }
    const size_t m = (size_t)s->NH * s->n_q * s->HS;
    float *before = malloc(m * sizeof *before), *after = malloc(m * sizeof *after);
    ck_assert(before && after);
    gather(before, c.out, &c, s->n_q);
    for (int h = 0; h < s->NH; h++)
        for (size_t i = (size_t)s->n_valid * s->HS; i < (size_t)s->n_k * s->HS; i++) {
            c.k[h * c.stride + i] = 1e3f; /* would dominate the softmax if it were seen */
            c.v[h * c.stride + i] = -1e3f;
        }
    forward(&c);
    gather(after, c.out, &c, s->n_q);
    tu_assert_identical("output with masked keys/values changed", after, before, m);
    free(before), free(after);
    case_free(&c);
}
END_TEST

START_TEST(test_backward_finite_differences) {
    case_data c;
    case_init(&c, &shapes[_i], 30 + (uint64_t)_i);
    const shape *s = &c.sh;
    float *d[3], *old[3];
    attn_rng rng = attn_rng_seed(99);
    for (int t = 0; t < 3; t++) {
        d[t] = calloc(c.n, sizeof(float));
        old[t] = malloc(c.n * sizeof(float));
        ck_assert(d[t] && old[t]);
        tu_fill_uniform(old[t], c.n, -1.0f, 1.0f, &rng);
    }
    forward(&c);
    attn_attention_backward(d[0], d[1], d[2], c.r, c.probs, c.q, c.k, c.v, s->NH, s->n_q, s->n_k,
                            s->HS, s->n_valid, c.stride, c.work);
    /* gradients only inside the heads' blocks: q rows n_q, k and v rows n_k */
    float *xs[3] = {c.q, c.k, c.v};
    const char *names[3] = {"d_q", "d_k", "d_v"};
    const int rows[3] = {s->n_q, s->n_k, s->n_k};
    for (int t = 0; t < 3; t++)
        for (int h = 0; h < s->NH; h++)
            tu_check_grad(names[t], fake_loss, &c, xs[t] + h * c.stride, d[t] + h * c.stride,
                          (size_t)rows[t] * s->HS, FD_STEP, FD_ATOL, FD_RTOL);
    /* accumulate: a pre-filled buffer ends up old + new */
    float *acc[3];
    for (int t = 0; t < 3; t++) {
        acc[t] = malloc(c.n * sizeof(float));
        ck_assert_ptr_nonnull(acc[t]);
        memcpy(acc[t], old[t], c.n * sizeof(float));
    }
    forward(&c);
    attn_attention_backward(acc[0], acc[1], acc[2], c.r, c.probs, c.q, c.k, c.v, s->NH, s->n_q,
                            s->n_k, s->HS, s->n_valid, c.stride, c.work);
    for (int t = 0; t < 3; t++) {
        for (size_t i = 0; i < c.n; i++) old[t][i] += d[t][i];
        tu_assert_close(names[t], acc[t], old[t], c.n, ACCUM_RTOL, 1.0);
        free(d[t]), free(old[t]), free(acc[t]);
    }
    case_free(&c);
}
END_TEST

/* All heads in one call equal one call per head, bit for bit; the naive path without kept
 * probabilities (work holds them) equals the one with. */
START_TEST(test_all_heads_equal_one_by_one) {
    case_data c;
    case_init(&c, &shapes[_i], 40 + (uint64_t)_i);
    const shape *s = &c.sh;
    forward(&c);
    float *one = calloc(c.n, sizeof *one), *nowork = calloc(c.n, sizeof *nowork);
    float *work = malloc(attn_attention_forward_work_size(s->n_q, s->n_k) * sizeof *work);
    ck_assert(one && nowork && work);
    const size_t pn = (size_t)s->n_q * s->n_k;
    for (int h = 0; h < s->NH; h++) {
        const size_t o = (size_t)h * c.stride;
        attn_attention_forward(one + o, c.probs + h * pn, c.q + o, c.k + o, c.v + o, 1, s->n_q,
                               s->n_k, s->HS, s->n_valid, 0, NULL);
    }
    attn_attention_forward(nowork, NULL, c.q, c.k, c.v, s->NH, s->n_q, s->n_k, s->HS, s->n_valid,
                           c.stride, work);
    const size_t m = (size_t)s->NH * s->n_q * s->HS;
    float *a = malloc(m * sizeof *a), *b = malloc(m * sizeof *b);
    ck_assert(a && b);
    gather(a, c.out, &c, s->n_q);
    gather(b, one, &c, s->n_q);
    tu_assert_identical("all heads vs one by one", a, b, m);
    gather(b, nowork, &c, s->n_q);
    tu_assert_identical("probs kept vs not kept", b, a, m);
    free(one), free(nowork), free(work), free(a), free(b);
    case_free(&c);
}
END_TEST

/* Above ATTN_ATTENTION_BLOCKED_ABOVE keys and without kept probabilities the blocked path
 * runs: it visits only the n_valid valid keys (the naive one multiplies all n_k), and its
 * output agrees with the naive path's. */
START_TEST(test_naive_and_blocked_agree) {
    const shape sh = {2, 40, ATTN_ATTENTION_BLOCKED_ABOVE + 77, 8, ATTN_ATTENTION_BLOCKED_ABOVE, 0};
    case_data c;
    case_init(&c, &sh, 50);
    const size_t fw = attn_attention_forward_work_size(sh.n_q, sh.n_k);
    ck_assert_uint_eq(fw, attn_attention_blocked_work_size(ATTN_ATTENTION_TILE));
    float *blocked = calloc(c.n, sizeof *blocked), *work = malloc(fw * sizeof *work);
    ck_assert(blocked && work);
    attn_flop_counts naive_fc = {0}, blocked_fc = {0};
    attn_flops_set_counter(&naive_fc);
    forward(&c);
    attn_flops_set_counter(&blocked_fc);
    attn_attention_forward(blocked, NULL, c.q, c.k, c.v, sh.NH, sh.n_q, sh.n_k, sh.HS, sh.n_valid,
                           c.stride, work);
    attn_flops_set_counter(NULL);
    const uint64_t heads = (uint64_t)sh.NH;
    ck_assert_uint_eq(naive_fc.fwd_madds[ATTN_OP_QK], heads * sh.n_q * sh.n_k * sh.HS);
    ck_assert_uint_eq(blocked_fc.fwd_madds[ATTN_OP_QK], heads * sh.n_q * sh.n_valid * sh.HS);
    const size_t m = (size_t)sh.NH * sh.n_q * sh.HS;
    float *a = malloc(m * sizeof *a), *b = malloc(m * sizeof *b);
    ck_assert(a && b);
    gather(a, blocked, &c, sh.n_q);
    gather(b, c.out, &c, sh.n_q);
    tu_assert_close("blocked vs naive", a, b, m, BLOCKED_RTOL, 1.0);
    free(blocked), free(work), free(a), free(b);
    case_free(&c);
}
END_TEST

/* ATen's size rule, per head: with n_k * n_k * HS below 400 (16-wide heads: at most 4
 * positions) both products are the sequential float loop of torch.bmm's small kernel, from 400
 * the sgemm (attn_matmul_*); the [CLS]-only query (n_q = 1) follows the rule of the whole
 * n_k x n_k product. Checked bit for bit against products written out here. */
static const int rule_cases[][3] = {{4, 4, 16}, {1, 4, 16}, {5, 5, 16}, {1, 5, 16},
                                    {7, 7, 8},  {1, 8, 8},  {3, 3, 44}, {3, 3, 45}};

static void seq_product(float *c, const float *a, const float *b, int m, int n, int k, bool tb) {
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float acc = 0.0f;
            for (int p = 0; p < k; p++) {
                float prod = a[i * k + p] * (tb ? b[j * k + p] : b[p * n + j]);
                acc = acc + prod;
            }
            c[i * n + j] = acc;
        }
}

/* The optional additive score bias: NULL is exactly attn_attention_forward; a bias gives
 * softmax(q.k^T + bias).v against a double reference, and probabilities that match it. */
START_TEST(test_score_bias) {
    enum { NH = 2, NQ = 3, NK = 5, HS = 4 };
    attn_rng r = attn_rng_seed(77);
    float q[NH * NK * HS], k[NH * NK * HS], v[NH * NK * HS], bias[NH * NQ * NK];
    for (int i = 0; i < NH * NK * HS; i++) {
        q[i] = attn_rng_uniform_range(&r, -1.0f, 1.0f);
        k[i] = attn_rng_uniform_range(&r, -1.0f, 1.0f);
        v[i] = attn_rng_uniform_range(&r, -1.0f, 1.0f);
    }
    for (int i = 0; i < NH * NQ * NK; i++) bias[i] = attn_rng_uniform_range(&r, -3.0f, 0.0f);
    float out0[NH * NK * HS], out1[NH * NK * HS], out2[NH * NK * HS];
    float p0[NH * NQ * NK], p1[NH * NQ * NK], p2[NH * NQ * NK];
    memset(out0, 0, sizeof out0); /* rows NQ..NK-1 of each head are not written */
    memset(out1, 0, sizeof out1);
    attn_attention_forward(out0, p0, q, k, v, NH, NQ, NK, HS, NK, (size_t)NK * HS, NULL);
    attn_attention_forward_bias(out1, p1, q, k, v, NULL, NH, NQ, NK, HS, NK, (size_t)NK * HS, NULL);
    attn_attention_forward_bias(out2, p2, q, k, v, bias, NH, NQ, NK, HS, NK, (size_t)NK * HS, NULL);
    ck_assert(memcmp(out0, out1, sizeof out0) == 0);
    ck_assert(memcmp(p0, p1, sizeof p0) == 0);
    bool changed = false;
    for (int h = 0; h < NH; h++)
        for (int i = 0; i < NQ; i++) {
            double s[NK], mx = -1e30, z = 0.0;
            for (int j = 0; j < NK; j++) {
                double d = 0.0;
                for (int c = 0; c < HS; c++)
                    d += (double)q[(h * NK + i) * HS + c] * k[(h * NK + j) * HS + c];
                s[j] = d + bias[(h * NQ + i) * NK + j];
                mx = s[j] > mx ? s[j] : mx;
            }
            for (int j = 0; j < NK; j++) z += (s[j] = exp(s[j] - mx));
            for (int j = 0; j < NK; j++) {
                const double want = s[j] / z, got = p2[(h * NQ + i) * NK + j];
                ck_assert_msg(fabs(got - want) <= FWD_REL_TOL, "p[%d,%d,%d] %g want %g", h, i, j,
                              got, want);
                changed = changed || fabs(got - p0[(h * NQ + i) * NK + j]) > 1e-3;
            }
            for (int c = 0; c < HS; c++) {
                double want = 0.0;
                for (int j = 0; j < NK; j++) want += s[j] / z * v[(h * NK + j) * HS + c];
                const float got = out2[(h * NK + i) * HS + c];
                ck_assert_msg(fabs(got - want) <= FWD_REL_TOL * fmax(fabs(want), 1.0),
                              "out[%d,%d,%d] %g want %g", h, i, c, got, want);
            }
        }
    ck_assert_msg(changed, "the bias changed no probability");
}
END_TEST

START_TEST(test_small_products_follow_aten_rule) {
    const int n_q = rule_cases[_i][0], n_k = rule_cases[_i][1], HS = rule_cases[_i][2];
    const shape sh = {2, n_q, n_k, HS, n_k, 0};
    case_data c;
    case_init(&c, &sh, 60 + (uint64_t)_i);
    forward(&c);
    const bool loop = n_k * n_k * HS < 400;
    ck_assert(loop == attn_bmm_is_loop(n_k, n_k, HS));
    float *p = malloc((size_t)n_q * n_k * sizeof *p), *o = malloc((size_t)n_q * HS * sizeof *o);
    ck_assert(p && o);
    for (int h = 0; h < sh.NH; h++) {
        const size_t off = (size_t)h * c.stride;
        if (loop)
            seq_product(p, c.q + off, c.k + off, n_q, n_k, HS, true);
        else
            attn_matmul_nt(p, c.q + off, c.k + off, n_q, n_k, HS, 0.0f, ATTN_OP_OTHER,
                           ATTN_PASS_FORWARD);
        attn_softmax_forward(p, p, n_q, n_k, n_k);
        tu_assert_identical("probabilities", c.probs + (size_t)h * n_q * n_k, p, (size_t)n_q * n_k);
        if (loop)
            seq_product(o, p, c.v + off, n_q, HS, n_k, false);
        else
            attn_matmul_nn(o, p, c.v + off, n_q, HS, n_k, 0.0f, ATTN_OP_OTHER, ATTN_PASS_FORWARD);
        tu_assert_identical(loop ? "output (loop)" : "output (sgemm)", c.out + off, o,
                            (size_t)n_q * HS);
    }
    free(p), free(o);
    case_free(&c);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("attention");
    TCase *tc = tcase_create("attention");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_forward_matches_reference, 0, N_SHAPES);
    tcase_add_loop_test(tc, test_probs_and_mask, 0, N_SHAPES);
    tcase_add_loop_test(tc, test_backward_finite_differences, 0, N_SHAPES);
    tcase_add_loop_test(tc, test_all_heads_equal_one_by_one, 0, N_SHAPES);
    tcase_add_test(tc, test_naive_and_blocked_agree);
    tcase_add_test(tc, test_score_bias);
    tcase_add_loop_test(tc, test_small_products_follow_aten_rule, 0,
                        (int)(sizeof rule_cases / sizeof *rule_cases));
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return tu_run_suite(suite());
}

/* test_cross_entropy.c -- the seq2seq loss (src/kernels/cross_entropy.c): the one-pass
 * attn_cross_entropy_forward_backward returns the same loss and adds the same gradient, bit for
 * bit, as forward then backward (rows with the ignored label included); the loss against a
 * direct double computation and the gradient against central differences of the loss. The
 * part-of-a-batch variant attn_cross_entropy_sum_forward_backward: with the divisor its own count,
 * the one-pass gradient bit for bit and the loss times the count; a batch cut into parts with the
 * whole batch's divisor, the parts' sums added, gives the whole batch's loss and gradient; its
 * gradient against central differences of sum / n_mean for a divisor other than the count. */
#include "attn_seq2seq.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ROWS = 13, V = 95, IGNORE = 0 };

static void fill(float *z, int *labels, attn_rng *rng) {
    tu_fill_uniform(z, (size_t)ROWS * V, -6, 6, rng);
    for (int r = 0; r < ROWS; r++) labels[r] = r % 5 == 3 ? IGNORE : 1 + (r * 37) % (V - 1);
}

START_TEST(test_cross_entropy_one_pass) {
    static float z[ROWS * V], d1[ROWS * V], d2[ROWS * V];
    int labels[ROWS];
    attn_rng rng = attn_rng_seed(11);
    fill(z, labels, &rng);
    tu_fill_uniform(d1, (size_t)ROWS * V, -1, 1, &rng); /* accumulates into what is there */
    memcpy(d2, d1, sizeof d1);
    const double l1 = attn_cross_entropy_forward(z, labels, ROWS, V, IGNORE);
    attn_cross_entropy_backward(d1, 0.7f, z, labels, ROWS, V, IGNORE);
    const double l2 = attn_cross_entropy_forward_backward(d2, 0.7f, z, labels, ROWS, V, IGNORE);
    ck_assert_msg(memcmp(&l1, &l2, sizeof l1) == 0, "loss %.17g vs %.17g", l1, l2);
    tu_assert_identical("cross-entropy gradient, one pass vs two", d2, d1, (size_t)ROWS * V);
    /* the loss written out */
    double want = 0;
    int n = 0;
    for (int r = 0; r < ROWS; r++) {
        if (labels[r] == IGNORE) continue;
        double s = 0;
        for (int j = 0; j < V; j++) s += exp((double)z[r * V + j]);
        want += log(s) - z[r * V + labels[r]];
        n++;
    }
    ck_assert_msg(fabs(l2 - want / n) <= 1e-12 * fabs(want / n), "loss %.17g vs %.17g", l2,
                  want / n);
    /* every row ignored: NaN, as PyTorch's 0/0, and no gradient */
    int none[ROWS];
    for (int r = 0; r < ROWS; r++) none[r] = IGNORE;
    memcpy(d1, d2, sizeof d1);
    ck_assert(isnan(attn_cross_entropy_forward_backward(d2, 1.0f, z, none, ROWS, V, IGNORE)));
    tu_assert_identical("no gradient when every row is ignored", d2, d1, (size_t)ROWS * V);
}
END_TEST

START_TEST(test_cross_entropy_gradient) {
    static float z[ROWS * V], d[ROWS * V];
    int labels[ROWS];
    attn_rng rng = attn_rng_seed(12);
    fill(z, labels, &rng);
    memset(d, 0, sizeof d);
    attn_cross_entropy_forward_backward(d, 1.0f, z, labels, ROWS, V, IGNORE);
    for (int k = 0; k < ROWS * V; k += 7) {
        const float keep = z[k], h = 1e-2f;
        z[k] = keep + h;
        const double up = attn_cross_entropy_forward(z, labels, ROWS, V, IGNORE);
        z[k] = keep - h;
        const double down = attn_cross_entropy_forward(z, labels, ROWS, V, IGNORE);
        z[k] = keep;
        const double fd = (up - down) / ((double)(keep + h) - (double)(keep - h));
        ck_assert_msg(fabs(d[k] - fd) <= 1e-4 + 1e-3 * fabs(fd), "d[%d] %g vs %g", k, d[k], fd);
    }
}
END_TEST

/* rows [0, 5) and [5, ROWS) as two parts of one batch */
enum { CUT = 5 };

START_TEST(test_cross_entropy_sum_parts) {
    static float z[ROWS * V], d1[ROWS * V], d2[ROWS * V];
    int labels[ROWS], n = 0;
    attn_rng rng = attn_rng_seed(13);
    fill(z, labels, &rng);
    for (int r = 0; r < ROWS; r++) n += labels[r] != IGNORE;
    ck_assert_int_lt(n, ROWS); /* some rows are ignored: the divisor is not the row count */
    tu_fill_uniform(d1, (size_t)ROWS * V, -1, 1, &rng);
    memcpy(d2, d1, sizeof d1);
    /* one part holding the whole batch: the same gradient bits, the loss times n */
    const double mean = attn_cross_entropy_forward_backward(d1, 0.7f, z, labels, ROWS, V, IGNORE);
    const double sum =
        attn_cross_entropy_sum_forward_backward(d2, 0.7f, z, labels, ROWS, V, IGNORE, n);
    tu_assert_identical("sum variant with its own count vs one pass", d2, d1, (size_t)ROWS * V);
    const double back = sum / n;
    ck_assert_msg(memcmp(&back, &mean, sizeof mean) == 0, "sum / n %.17g vs mean %.17g", back,
                  mean);
    /* two parts with the whole batch's divisor: the whole batch's gradient (each row's terms are
     * its own: the same bits) and loss (the sums added in another order: close) */
    memset(d1, 0, sizeof d1);
    memset(d2, 0, sizeof d2);
    attn_cross_entropy_forward_backward(d1, 1.0f, z, labels, ROWS, V, IGNORE);
    const double s0 =
        attn_cross_entropy_sum_forward_backward(d2, 1.0f, z, labels, CUT, V, IGNORE, n);
    const double s1 = attn_cross_entropy_sum_forward_backward(
        d2 + CUT * V, 1.0f, z + CUT * V, labels + CUT, ROWS - CUT, V, IGNORE, n);
    tu_assert_identical("two parts with the batch's divisor vs the whole batch", d2, d1,
                        (size_t)ROWS * V);
    ck_assert_msg(fabs((s0 + s1) / n - mean) <= 1e-14 * mean, "%.17g vs %.17g", (s0 + s1) / n,
                  mean);
    /* each part's own divisor would be another gradient: the divisor is what is tested */
    memset(d2, 0, sizeof d2);
    int n0 = 0;
    for (int r = 0; r < CUT; r++) n0 += labels[r] != IGNORE;
    attn_cross_entropy_sum_forward_backward(d2, 1.0f, z, labels, CUT, V, IGNORE, n0);
    ck_assert(memcmp(d1, d2, (size_t)CUT * V * sizeof(float)) != 0);
}
END_TEST

typedef struct sum_ctx {
    float *z;
    const int *labels;
    int n_mean;
} sum_ctx;

static double sum_loss(void *vc) {
    sum_ctx *c = vc;
    static float scratch[ROWS * V];
    return attn_cross_entropy_sum_forward_backward(scratch, 1.0f, c->z, c->labels, ROWS, V, IGNORE,
                                                   c->n_mean) /
           c->n_mean;
}

START_TEST(test_cross_entropy_sum_gradient) {
    static float z[ROWS * V], d[ROWS * V];
    int labels[ROWS];
    attn_rng rng = attn_rng_seed(14);
    fill(z, labels, &rng);
    memset(d, 0, sizeof d);
    sum_ctx c = {z, labels, 3 * ROWS}; /* a part of a batch three times as long */
    attn_cross_entropy_sum_forward_backward(d, 1.0f, z, labels, ROWS, V, IGNORE, c.n_mean);
    tu_check_grad("cross-entropy part, d (sum / n_mean) / d logits", sum_loss, &c, z, d,
                  (size_t)ROWS * V, 1e-2f, 1e-5, 1e-3);
}
END_TEST

static Suite *cross_entropy_suite(void) {
    Suite *s = suite_create("cross_entropy");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_cross_entropy_one_pass);
    tcase_add_test(tc, test_cross_entropy_gradient);
    tcase_add_test(tc, test_cross_entropy_sum_parts);
    tcase_add_test(tc, test_cross_entropy_sum_gradient);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return tu_run_suite(cross_entropy_suite());
}

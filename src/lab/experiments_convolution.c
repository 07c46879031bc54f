/* experiments_convolution.c -- `attn experiment convolution` (write-up §9, §10; Cordonnier,
 * Loukas, Jaggi 2020, "On the relationship between self-attention and convolutional layers").
 *
 * The construction. A 1-D convolution of kernel size K = 3 with zero padding 1 (PyTorch Conv1d,
 * cross-correlation) computes
 *     y[t] = b + sum_{k=0..2} W_k x[t+k-1]          x: [T, C_in], W_k: [C_out, C_in]
 * A multi-head attention layer with NH = 3 heads over the zero-padded sequence xp [T+2, C_in]
 * reproduces it: head h gets no content score (W_Q = W_K = 0) and the relative position bias
 *     score_h(i, j) = -alpha * ((j - i) - delta_h)^2,      delta_h = h - 1 in {-1, 0, +1}
 * (the quadratic encoding of the paper), so its softmax concentrates on key i + delta_h as alpha
 * grows (the other keys get weight <= exp(-alpha)); its value projection is the identity and the
 * output projection W_O = [W_0 | W_1 | W_2] applies tap h to head h. The experiment measures the
 * largest difference from the convolution computed directly (in double) as alpha grows: it falls
 * like exp(-alpha) and, once exp(-alpha) underflows in float, to the rounding of the output
 * projection.
 *
 * Without position information. A layer without positions computes, at each position, a
 * function of that position's input and of the set of all inputs (self-attention is
 * permutation-equivariant). So two positions a, b with equal inputs x[a] == x[b] get equal
 * outputs whatever the weights, while the convolution's outputs there differ when their
 * neighbours differ: every position-free layer is off by at least |y[a] - y[b]|_inf / 2 at a or
 * b. The experiment builds such an input, measures that bound, and measures that two
 * position-free layers (the construction with alpha = 0, and one with random content scores)
 * give a and b the same output. */
#include "attn_kernels.h"
#include "attn_plot.h"
#include "experiments_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONV_T    16 /* sequence length */
#define CONV_CIN  4  /* input channels = head size */
#define CONV_COUT 3  /* output channels */
#define CONV_K    3  /* kernel size = heads */
#define CONV_S    (CONV_T + 2)
#define CONV_A    4 /* the two positions that get equal inputs */
#define CONV_B    11

static const double alphas[] = {0.0, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64, 128};
#define N_ALPHA ((int)(sizeof alphas / sizeof alphas[0]))

typedef struct conv_problem {
    float x[CONV_T][CONV_CIN];
    float w[CONV_K][CONV_COUT][CONV_CIN]; /* W_k */
    float b[CONV_COUT];
    double y[CONV_T][CONV_COUT]; /* the convolution, computed directly in double */
} conv_problem;

static void conv_problem_make(conv_problem *p, uint64_t seed) {
    attn_rng r = attn_rng_seed(seed);
    for (int t = 0; t < CONV_T; t++)
        for (int i = 0; i < CONV_CIN; i++) p->x[t][i] = (float)attn_rng_normal(&r);
    /* x[a] == x[b]; their neighbours are independent draws, so y[a] != y[b] */
    memcpy(p->x[CONV_B], p->x[CONV_A], sizeof p->x[CONV_A]);
    for (int k = 0; k < CONV_K; k++)
        for (int o = 0; o < CONV_COUT; o++)
            for (int i = 0; i < CONV_CIN; i++) p->w[k][o][i] = (float)(0.5 * attn_rng_normal(&r));
    for (int o = 0; o < CONV_COUT; o++) p->b[o] = (float)(0.1 * attn_rng_normal(&r));
    for (int t = 0; t < CONV_T; t++)
        for (int o = 0; o < CONV_COUT; o++) {
            double s = p->b[o];
            for (int k = 0; k < CONV_K; k++) {
                const int src = t + k - 1;
                if (src < 0 || src >= CONV_T) continue; /* zero padding */
                for (int i = 0; i < CONV_CIN; i++) s += (double)p->w[k][o][i] * p->x[src][i];
            }
            p->y[t][o] = s;
        }
}

/* The attention layer over xp [S, C_in] (zero rows at 0 and S-1): y [S, C_out].
 * Head h: scores = (xp wq_h^T)(xp wk_h^T)^T / sqrt(HS) (when wq != NULL) + bias_h, probs =
 * softmax, head_h = probs . xp (identity value projection); y = [head_0 .. head_2] W_O^T + b. */
static void mha_forward(float y[CONV_S][CONV_COUT], const conv_problem *p, double alpha,
                        const float *wq, const float *wk) {
    enum { S = CONV_S, HS = CONV_CIN, NH = CONV_K };
    float xp[S][HS] = {{0}}, scores[S][S], concat[S][NH * HS], head[S][HS];
    float q[S][HS], k[S][HS], wo[CONV_COUT][NH * HS];
    memcpy(xp[1], p->x, sizeof p->x);
    for (int h = 0; h < NH; h++) {
        const int delta = h - 1;
        if (wq) { /* content scores q.k^T / sqrt(HS) */
            attn_matmul_nt(&q[0][0], &xp[0][0], wq + h * HS * HS, S, HS, HS, 0.0f, ATTN_OP_QKV,
                           ATTN_PASS_FORWARD);
            attn_matmul_nt(&k[0][0], &xp[0][0], wk + h * HS * HS, S, HS, HS, 0.0f, ATTN_OP_QKV,
                           ATTN_PASS_FORWARD);
            attn_matmul_nt(&scores[0][0], &q[0][0], &k[0][0], S, S, HS, 0.0f, ATTN_OP_QK,
                           ATTN_PASS_FORWARD);
            for (int i = 0; i < S; i++)
                for (int j = 0; j < S; j++) scores[i][j] /= sqrtf((float)HS);
        } else {
            memset(scores, 0, sizeof scores);
        }
        for (int i = 0; i < S; i++) /* relative position bias */
            for (int j = 0; j < S; j++) {
                const double d = (double)(j - i - delta);
                scores[i][j] += (float)(-alpha * d * d);
            }
        attn_softmax_forward(&scores[0][0], &scores[0][0], S, S, S);
        attn_matmul_nn(&head[0][0], &scores[0][0], &xp[0][0], S, HS, S, 0.0f, ATTN_OP_AV,
                       ATTN_PASS_FORWARD);
        for (int i = 0; i < S; i++) memcpy(&concat[i][h * HS], head[i], sizeof head[i]);
        for (int o = 0; o < CONV_COUT; o++) memcpy(&wo[o][h * HS], p->w[h][o], sizeof p->w[h][o]);
    }
    attn_linear_forward(&y[0][0], &concat[0][0], &wo[0][0], p->b, S, NH * HS, CONV_COUT,
                        ATTN_OP_OUT_PROJ);
}

/* max over t, o of |attention - convolution| (attention row t+1 is convolution row t) */
static double max_error(const float y[CONV_S][CONV_COUT], const conv_problem *p) {
    double e = 0.0;
    for (int t = 0; t < CONV_T; t++)
        for (int o = 0; o < CONV_COUT; o++) e = fmax(e, fabs((double)y[t + 1][o] - p->y[t][o]));
    return e;
}

static double row_difference(const float y[CONV_S][CONV_COUT], int a, int b) {
    double d = 0.0;
    for (int o = 0; o < CONV_COUT; o++) d = fmax(d, fabs((double)y[a + 1][o] - y[b + 1][o]));
    return d;
}

attn_status exp_convolution_run(const attn_experiment_opts *o, attn_experiment_result *r,
                                attn_error *err) {
    const int seeds = o->seeds > 0 ? o->seeds : o->quick ? 2 : 10;
    double err_alpha[N_ALPHA] = {0}, rel_sharpest = 0.0, rel_bound = INFINITY, rel_equal = 0.0;
    double err_no_pos = 0.0, err_content = 0.0, bound_abs = INFINITY;
    conv_problem *p = malloc(sizeof *p);
    if (!p) return attn_errorf(err, ATTN_ERR_NOMEM, "convolution: out of memory");
    float y[CONV_S][CONV_COUT];
    float wq[CONV_K * CONV_CIN * CONV_CIN], wk[CONV_K * CONV_CIN * CONV_CIN];
    for (int s = 1; s <= seeds; s++) {
        exp_progress(o, "convolution: seed %d of %d", s, seeds);
        conv_problem_make(p, (uint64_t)s);
        double ymax = 0.0;
        for (int t = 0; t < CONV_T; t++)
            for (int c = 0; c < CONV_COUT; c++) ymax = fmax(ymax, fabs(p->y[t][c]));
        for (int a = 0; a < N_ALPHA; a++) {
            mha_forward(y, p, alphas[a], NULL, NULL);
            err_alpha[a] = fmax(err_alpha[a], max_error(y, p));
            if (a == N_ALPHA - 1) rel_sharpest = fmax(rel_sharpest, max_error(y, p) / ymax);
            if (a == 0) { /* no position information: uniform attention */
                err_no_pos = fmax(err_no_pos, max_error(y, p));
                rel_equal = fmax(rel_equal, row_difference(y, CONV_A, CONV_B) / ymax);
            }
        }
        /* a position-free layer with content scores: random W_Q, W_K */
        attn_rng rr = attn_rng_seed(1000 + (uint64_t)s);
        for (int i = 0; i < CONV_K * CONV_CIN * CONV_CIN; i++) {
            wq[i] = (float)attn_rng_normal(&rr);
            wk[i] = (float)attn_rng_normal(&rr);
        }
        mha_forward(y, p, 0.0, wq, wk);
        err_content = fmax(err_content, max_error(y, p));
        rel_equal = fmax(rel_equal, row_difference(y, CONV_A, CONV_B) / ymax);
        /* the bound for every position-free layer */
        double gap = 0.0;
        for (int c = 0; c < CONV_COUT; c++)
            gap = fmax(gap, fabs(p->y[CONV_A][c] - p->y[CONV_B][c]));
        bound_abs = fmin(bound_abs, gap / 2.0);
        rel_bound = fmin(rel_bound, gap / 2.0 / ymax);
    }
    free(p);
    attn_status st = exp_put(r, "seeds", seeds, err);
    if (!st) st = exp_put_array(r, "alpha", N_ALPHA, alphas, err);
    if (!st) st = exp_put_array(r, "max_abs_error", N_ALPHA, err_alpha, err);
    if (!st) st = exp_put(r, "rel_error_sharpest", rel_sharpest, err);
    if (!st) st = exp_put(r, "no_position.max_abs_error_uniform", err_no_pos, err);
    if (!st) st = exp_put(r, "no_position.max_abs_error_content", err_content, err);
    if (!st) st = exp_put(r, "no_position.rel_equal_input_output_difference", rel_equal, err);
    if (!st) st = exp_put(r, "no_position.lower_bound_abs", bound_abs, err);
    if (!st) st = exp_put(r, "no_position.rel_lower_bound", rel_bound, err);
    if (st) return st;

    exp_convolution_verdict(r);
    return ATTN_OK;
}

/* holds if the relative bias at the sharpest alpha reproduces the convolution (error <= 1e-5
 * of max|y|) and, without positions, equal inputs give equal outputs (<= 1e-6) while every
 * position-free layer stays off by more than 1e-2; mixed if one of the two. */
void exp_convolution_verdict(attn_experiment_result *r) {
    const attn_measure *alpha = attn_experiment_measure(r, "alpha");
    const double rel_sharpest = exp_get(r, "rel_error_sharpest");
    const double rel_equal = exp_get(r, "no_position.rel_equal_input_output_difference");
    const double rel_bound = exp_get(r, "no_position.rel_lower_bound");
    const bool with_pos = rel_sharpest <= 1e-5;
    const bool without = rel_equal <= 1e-6 && rel_bound > 1e-2;
    exp_verdict(r,
                with_pos && without   ? ATTN_VERDICT_HOLDS
                : with_pos || without ? ATTN_VERDICT_MIXED
                                      : ATTN_VERDICT_DOES_NOT_HOLD,
                "with the relative bias at alpha = %g the largest error is %.3g x max|y| (%s "
                "1e-5); without positions equal inputs got outputs %.3g x max|y| apart (%s "
                "1e-6) and every position-free layer is off by >= %.3g x max|y| (%s 1e-2)",
                alpha && alpha->n > 0 ? alpha->values[alpha->n - 1] : NAN, rel_sharpest,
                rel_sharpest <= 1e-5 ? "<=" : ">", rel_equal, rel_equal <= 1e-6 ? "<=" : ">",
                rel_bound, rel_bound > 1e-2 ? ">" : "<=");
}

attn_status exp_convolution_plot(const attn_experiment_result *r, const char *path,
                                 attn_error *err) {
    const attn_measure *a = attn_experiment_measure(r, "alpha");
    const attn_measure *e = attn_experiment_measure(r, "max_abs_error");
    if (!a || !e || a->n != e->n || a->n < 2)
        return attn_errorf(err, ATTN_ERR_ARG, "convolution plot: no alpha sweep in the result");
    /* alpha = 0 cannot sit on a log axis: the curve starts at the second value, the
     * position-free numbers are horizontal reference lines */
    const int n = a->n - 1;
    double ref_x[2] = {a->values[1], a->values[a->n - 1]};
    double uniform[2], bound[2];
    uniform[0] = uniform[1] = exp_get(r, "no_position.max_abs_error_uniform");
    bound[0] = bound[1] = exp_get(r, "no_position.lower_bound_abs");
    const attn_plot_series s[] = {
        {"bias -alpha (j-i-delta_h)^2", n, a->values + 1, e->values + 1, .points = true},
        {"no bias (alpha = 0)", 2, ref_x, uniform, .dashed = true},
        {"bound, any position-free layer", 2, ref_x, bound, .dashed = true},
    };
    char title[160];
    snprintf(title, sizeof title,
             "Attention reproducing a kernel-3 convolution (%g random kernels and inputs)",
             exp_get(r, "seeds"));
    const attn_plot p = {.title = title,
                         .xlabel = "bias sharpness alpha",
                         .ylabel = "largest |attention - convolution|",
                         .log_x = true,
                         .log_y = true,
                         .key = "bottom left",
                         .n_series = 3,
                         .series = s};
    return attn_plot_lines(&p, path, err);
}

/* experiments_convolution2d.c -- `attn experiment convolution-2d` (write-up §9 in two
 * dimensions; Cordonnier, Loukas, Jaggi 2020, "On the relationship between self-attention and
 * convolutional layers", their Theorem 1 and quadratic encoding).
 *
 * The construction. A 3x3 convolution with zero padding 1 (PyTorch Conv2d, cross-correlation)
 * of an H x W image with C_in channels computes
 *     y[r][c] = b + sum_{dy,dx in -1..1} W_(dy,dx) x[r+dy][c+dx]      W_(dy,dx): [C_out, C_in]
 * A multi-head attention layer over the zero-padded image, flattened to S = (H+2)(W+2)
 * positions, reproduces it with NH = 9 heads, one per kernel offset delta_h = (dy_h, dx_h):
 * no content score (W_Q = W_K = 0) and the relative position bias
 *     score_h(q, k) = -alpha * |(k - q) - delta_h|^2        (k - q: the 2-D offset of the pixels)
 * so that head h's softmax concentrates on the pixel at offset delta_h as alpha grows (every
 * other key gets weight <= exp(-alpha)); the value projection is the identity and the output
 * projection W_O = [W_0 | ... | W_8] applies tap h to head h. The experiment measures the
 * largest difference from the convolution computed directly (in double) as alpha grows, and
 * the attention patterns: each head's weights on the 3 x 3 neighbourhood of a query pixel, drawn
 * as nine 3 x 3 maps. */
#include "attn_kernels.h"
#include "attn_plot.h"
#include "experiments_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IMG_H  6 /* the synthetic image: IMG_H x IMG_W pixels, C2_CIN channels */
#define IMG_W  6
#define C2_CIN 3
#define C2_OUT 4
#define C2_NH  9 /* 3 x 3 kernel offsets = heads */
#define PAD_H  (IMG_H + 2)
#define PAD_W  (IMG_W + 2)
#define C2_S   (PAD_H * PAD_W) /* positions of the padded image */
/* the query pixel of the drawn patterns: an inner pixel (its whole 3 x 3 neighbourhood is
 * image) */
#define QUERY_R 2
#define QUERY_C 3

static const double alphas[] = {0.0, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64, 128};
#define N_ALPHA   ((int)(sizeof alphas / sizeof alphas[0]))
#define SHOW_A    4 /* alphas[SHOW_A] = 2: the patterns drawn, soft enough to see the spread */
#define SHARPEST  (N_ALPHA - 1)
#define PATTERN_N (C2_NH * 9)

typedef struct conv2d_problem {
    float x[IMG_H][IMG_W][C2_CIN];
    float w[C2_NH][C2_OUT][C2_CIN]; /* W_h for offset (h / 3 - 1, h % 3 - 1) */
    float b[C2_OUT];
    double y[IMG_H][IMG_W][C2_OUT]; /* the convolution, computed directly in double */
} conv2d_problem;

static int dy_of(int h) {
    return h / 3 - 1;
}
static int dx_of(int h) {
    return h % 3 - 1;
}

/* A random image (a smooth ramp plus noise, so that neighbours differ) and kernel. */
static void problem_make(conv2d_problem *p, uint64_t seed) {
    attn_rng r = attn_rng_seed(seed);
    for (int i = 0; i < IMG_H; i++)
        for (int j = 0; j < IMG_W; j++)
            for (int c = 0; c < C2_CIN; c++)
                p->x[i][j][c] = (float)(0.3 * (i - j + c) / IMG_W + attn_rng_normal(&r));
    for (int h = 0; h < C2_NH; h++)
        for (int o = 0; o < C2_OUT; o++)
            for (int c = 0; c < C2_CIN; c++) p->w[h][o][c] = (float)(0.5 * attn_rng_normal(&r));
    for (int o = 0; o < C2_OUT; o++) p->b[o] = (float)(0.1 * attn_rng_normal(&r));
    for (int i = 0; i < IMG_H; i++)
        for (int j = 0; j < IMG_W; j++)
            for (int o = 0; o < C2_OUT; o++) {
                double s = p->b[o];
                for (int h = 0; h < C2_NH; h++) {
                    const int si = i + dy_of(h), sj = j + dx_of(h);
                    if (si < 0 || si >= IMG_H || sj < 0 || sj >= IMG_W) continue; /* padding */
                    for (int c = 0; c < C2_CIN; c++) s += (double)p->w[h][o][c] * p->x[si][sj][c];
                }
                p->y[i][j][o] = s;
            }
}

/* Working memory of one layer forward (about 100 kB: on the heap). */
typedef struct conv2d_work {
    float xp[C2_S][C2_CIN];   /* the padded image, row-major pixels */
    float scores[C2_S][C2_S]; /* one head's scores, then its probabilities */
    float head[C2_S][C2_CIN]; /* one head's output */
    float concat[C2_S][C2_NH * C2_CIN];
    float wo[C2_OUT][C2_NH * C2_CIN]; /* [W_0 | ... | W_8] */
    float y[C2_S][C2_OUT];
    float pattern[C2_NH][3][3]; /* each head's weights around the query pixel */
} conv2d_work;

/* The attention layer over the padded image: w->y [S, C_out], and the query pixel's patterns. */
static void mha2d_forward(conv2d_work *w, const conv2d_problem *p, double alpha) {
    memset(w->xp, 0, sizeof w->xp);
    for (int i = 0; i < IMG_H; i++)
        for (int j = 0; j < IMG_W; j++)
            memcpy(w->xp[(i + 1) * PAD_W + j + 1], p->x[i][j], sizeof p->x[i][j]);
    const int query = (QUERY_R + 1) * PAD_W + QUERY_C + 1;
    for (int h = 0; h < C2_NH; h++) {
        /* no content score; the relative position bias -alpha |(k - q) - delta_h|^2 */
        for (int q = 0; q < C2_S; q++)
            for (int k = 0; k < C2_S; k++) {
                const double ey = (double)(k / PAD_W - q / PAD_W - dy_of(h));
                const double ex = (double)(k % PAD_W - q % PAD_W - dx_of(h));
                w->scores[q][k] = (float)(-alpha * (ey * ey + ex * ex));
            }
        attn_softmax_forward(&w->scores[0][0], &w->scores[0][0], C2_S, C2_S, C2_S);
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
                w->pattern[h][a][b] = w->scores[query][query + (a - 1) * PAD_W + (b - 1)];
        /* identity value projection: head_h = probs . xp */
        attn_matmul_nn(&w->head[0][0], &w->scores[0][0], &w->xp[0][0], C2_S, C2_CIN, C2_S, 0.0f,
                       ATTN_OP_AV, ATTN_PASS_FORWARD);
        for (int s = 0; s < C2_S; s++)
            memcpy(&w->concat[s][h * C2_CIN], w->head[s], sizeof w->head[s]);
        for (int o = 0; o < C2_OUT; o++)
            memcpy(&w->wo[o][h * C2_CIN], p->w[h][o], sizeof p->w[h][o]);
    }
    attn_linear_forward(&w->y[0][0], &w->concat[0][0], &w->wo[0][0], p->b, C2_S, C2_NH * C2_CIN,
                        C2_OUT, ATTN_OP_OUT_PROJ);
}

/* max over pixels and channels of |attention - convolution| (padded row (i+1, j+1) is pixel
 * (i, j)), and max |y| */
static double max_error(const conv2d_work *w, const conv2d_problem *p, double *ymax) {
    double e = 0.0, m = 0.0;
    for (int i = 0; i < IMG_H; i++)
        for (int j = 0; j < IMG_W; j++)
            for (int o = 0; o < C2_OUT; o++) {
                const double want = p->y[i][j][o];
                e = fmax(e, fabs((double)w->y[(i + 1) * PAD_W + j + 1][o] - want));
                m = fmax(m, fabs(want));
            }
    if (ymax) *ymax = m;
    return e;
}

attn_status exp_convolution2d_run(const attn_experiment_opts *o, attn_experiment_result *r,
                                  attn_error *err) {
    const int seeds = o->seeds > 0 ? o->seeds : o->quick ? 2 : 10;
    double err_alpha[N_ALPHA] = {0}, rel_sharpest = 0.0, min_own = 1.0;
    double shown[PATTERN_N] = {0}, own_shown = 1.0;
    conv2d_problem *p = malloc(sizeof *p);
    conv2d_work *w = malloc(sizeof *w);
    if (!p || !w) {
        free(p);
        free(w);
        return attn_errorf(err, ATTN_ERR_NOMEM, "convolution-2d: out of memory");
    }
    for (int s = 1; s <= seeds; s++) {
        exp_progress(o, "convolution-2d: seed %d of %d", s, seeds);
        problem_make(p, (uint64_t)s);
        for (int a = 0; a < N_ALPHA; a++) {
            mha2d_forward(w, p, alphas[a]);
            double ymax = 0.0;
            const double e = max_error(w, p, &ymax);
            err_alpha[a] = fmax(err_alpha[a], e);
            /* each head's weight on its own offset */
            for (int h = 0; h < C2_NH; h++) {
                const double own = w->pattern[h][dy_of(h) + 1][dx_of(h) + 1];
                if (a == SHARPEST) min_own = fmin(min_own, own);
                if (a == SHOW_A && s == 1) own_shown = fmin(own_shown, own);
            }
            if (a == SHARPEST) rel_sharpest = fmax(rel_sharpest, e / ymax);
            if (a == SHOW_A && s == 1) /* the patterns depend on alpha only, not on the seed */
                for (int h = 0; h < C2_NH; h++)
                    for (int k = 0; k < 9; k++) shown[h * 9 + k] = w->pattern[h][k / 3][k % 3];
        }
    }
    free(p);
    free(w);
    attn_status st = exp_put(r, "seeds", seeds, err);
    if (!st) st = exp_put(r, "image_pixels", IMG_H * IMG_W, err);
    if (!st) st = exp_put_array(r, "alpha", N_ALPHA, alphas, err);
    if (!st) st = exp_put_array(r, "max_abs_error", N_ALPHA, err_alpha, err);
    if (!st) st = exp_put(r, "rel_error_sharpest", rel_sharpest, err);
    if (!st) st = exp_put(r, "min_weight_on_own_offset_sharpest", min_own, err);
    if (!st) st = exp_put(r, "patterns.alpha", alphas[SHOW_A], err);
    if (!st) st = exp_put(r, "patterns.min_weight_on_own_offset", own_shown, err);
    /* head h's 3 x 3 weights around the query pixel, row-major, heads in offset order */
    if (!st) st = exp_put_array(r, "patterns.weights", PATTERN_N, shown, err);
    if (st) return st;
    const bool exact = rel_sharpest <= 1e-5;
    const bool focused = min_own >= 0.999;
    exp_verdict(r,
                exact && focused   ? ATTN_VERDICT_HOLDS
                : exact || focused ? ATTN_VERDICT_MIXED
                                   : ATTN_VERDICT_DOES_NOT_HOLD,
                "with the relative bias at alpha = %g the largest error is %.3g x max|y| (%s "
                "1e-5) and every head puts >= %.6f of its attention on its own kernel offset "
                "(%s 0.999); at alpha = %g the heads' weight on their offsets is >= %.3f",
                alphas[SHARPEST], rel_sharpest, exact ? "<=" : ">", min_own, focused ? ">=" : "<",
                alphas[SHOW_A], own_shown);
    return ATTN_OK;
}

/* Nine 3 x 3 maps in one heat map: the heads in a 3 x 3 grid by their offset (head (dy, dx) at
 * grid row dy + 1, column dx + 1), each map the head's weights around the query pixel; gaps
 * between the maps are left blank (NaN). */
attn_status exp_convolution2d_plot(const attn_experiment_result *r, const char *path,
                                   attn_error *err) {
    const attn_measure *pw = attn_experiment_measure(r, "patterns.weights");
    if (!pw || pw->n != PATTERN_N)
        return attn_errorf(err, ATTN_ERR_ARG, "convolution-2d plot: no patterns in the result");
    enum { N = 11 }; /* 3 maps of 3 cells and 2 gaps per side */
    double z[N * N];
    for (int i = 0; i < N * N; i++) z[i] = NAN;
    for (int h = 0; h < C2_NH; h++)
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
                z[((h / 3) * 4 + a) * N + (h % 3) * 4 + b] = pw->values[h * 9 + a * 3 + b];
    static const char *const labels[N] = {"-1", "0", "+1", "",  "-1", "0",
                                          "+1", "",  "-1", "0", "+1"};
    char title[160];
    snprintf(title, sizeof title,
             "3x3 convolution from 9 heads: each head's attention around one pixel (alpha = %g)",
             exp_get(r, "patterns.alpha"));
    const attn_heatmap hm = {.title = title,
                             .xlabel = "key column offset (left to right: heads of dx = -1, 0, +1)",
                             .ylabel = "key row offset (top to bottom: heads of dy = -1, 0, +1)",
                             .cblabel = "attention weight",
                             .rows = N,
                             .cols = N,
                             .z = z,
                             .row_labels = labels,
                             .col_labels = labels,
                             .z_min = 0.0,
                             .z_max = 1.0,
                             .values = true,
                             .width = 900,
                             .height = 820};
    return attn_plot_heatmap(&hm, path, err);
}

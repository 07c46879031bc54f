/* charts.c -- the charts of the lessons and of the explain call, described as data for the one
 * gnuplot driver (attn_plot.h): s3 scaling, s4 sinusoid table and dot products, s7 [CLS]
 * attention per layer and head, s7 probability after each word. */
#include "attn_lab.h"
#include "attn_plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

attn_status attn_lesson_scaling_plot(const attn_scaling_row rows[ATTN_SCALING_N_DK],
                                     const char *path, attn_error *err) {
    enum { N = ATTN_SCALING_N_DK };
    double x[N], y[6][N];
    for (int i = 0; i < N; i++) {
        x[i] = rows[i].d_k;
        for (int v = 0; v < 2; v++) {
            y[0 + v][i] = rows[i].score_std[1 - v];
            y[2 + v][i] = rows[i].max_prob[1 - v];
            y[4 + v][i] = rows[i].mean_pq[1 - v];
        }
    }
    /* even index: with the 1/sqrt(d_k) (solid); odd: without (dashed) */
    static const char *const titles[6] = {"std of scores, q.k/sqrt(d_k)",
                                          "std of scores, q.k (unscaled)",
                                          "largest softmax probability, scaled",
                                          "largest softmax probability, unscaled",
                                          "mean p(1-p), scaled",
                                          "mean p(1-p), unscaled"};
    attn_plot_series s[6];
    for (int i = 0; i < 6; i++)
        s[i] = (attn_plot_series){
            .title = titles[i], .n = N, .x = x, .y = y[i], .points = true, .dashed = i % 2 == 1};
    const attn_plot p = {.title = "Why divide by sqrt(d_k): random N(0,1) queries and 16 keys",
                         .xlabel = "d_k (dimensions per head)",
                         .ylabel = "value (log scale)",
                         .log_x = true,
                         .log_y = true,
                         .y_min = 2e-3,
                         .y_max = 100,
                         .n_series = 6,
                         .series = s};
    return attn_plot_lines(&p, path, err);
}

attn_status attn_sinusoid_plot_table(int P, int D, const char *path, attn_error *err) {
    double *pe = malloc((size_t)P * D * sizeof *pe);
    if (!pe) return attn_errorf(err, ATTN_ERR_NOMEM, "sinusoid plot: out of memory");
    attn_status st = attn_sinusoid_table(pe, P, D, err);
    const attn_heatmap h = {.title = "Sinusoidal position table PE(p, i)",
                            .xlabel = "dimension i (even: sin, odd: cos)",
                            .ylabel = "position p",
                            .cblabel = "PE(p, i)",
                            .rows = P,
                            .cols = D,
                            .z = pe,
                            .z_min = -1,
                            .z_max = 1,
                            .width = 820,
                            .height = 760};
    if (st == ATTN_OK) st = attn_plot_heatmap(&h, path, err);
    free(pe);
    return st;
}

attn_status attn_sinusoid_plot_dots(int P, int D, const char *path, attn_error *err) {
    double *dots = malloc((size_t)P * sizeof *dots), *x = malloc((size_t)P * sizeof *x);
    double dev = 0.0;
    attn_status st = dots && x ? attn_sinusoid_dots(P, D, dots, &dev, err)
                               : attn_errorf(err, ATTN_ERR_NOMEM, "sinusoid plot: out of memory");
    if (st == ATTN_OK) {
        for (int i = 0; i < P; i++) x[i] = i;
        char title[160];
        snprintf(title, sizeof title,
                 "PE(p).PE(p+d) depends only on d (largest deviation over p: %.1e)", dev);
        const attn_plot_series s = {
            .title = "PE(0).PE(d) = sum over pairs of cos(d w_i)", .n = P, .x = x, .y = dots};
        const attn_plot p = {.title = title,
                             .xlabel = "offset d = q - p (positions)",
                             .ylabel = "dot product",
                             .n_series = 1,
                             .series = &s};
        st = attn_plot_lines(&p, path, err);
    }
    free(dots);
    free(x);
    return st;
}

/* Row labels "L0 H0", ... and "L0 avg" for the heat map of [CLS]'s attention. */
attn_status attn_explain_plot_cls(const attn_explanation *e, const int *ids, const char *title,
                                  const char *path, attn_error *err) {
    if (!e || !e->attention || !ids)
        return attn_errorf(err, ATTN_ERR_ARG, "plot %s: no attention maps (not a transformer)",
                           path ? path : "");
    const int S = e->S, NH = e->n_heads, L = e->n_layers, rows = L * (NH + 1);
    double *z = calloc((size_t)rows * S, sizeof *z);
    char(*labels)[48] = calloc((size_t)rows, sizeof *labels);
    const char **row_labels = calloc((size_t)rows, sizeof *row_labels);
    const char **col_labels = calloc((size_t)S, sizeof *col_labels);
    if (!z || !labels || !row_labels || !col_labels) {
        free(z), free(labels), free(row_labels), free(col_labels);
        return attn_errorf(err, ATTN_ERR_NOMEM, "plot %s: out of memory", path);
    }
    for (int l = 0, r = 0; l < L; l++) {
        double *avg = z + (size_t)(r + NH) * S;
        for (int h = 0; h < NH; h++, r++) {
            const float *cls = e->attention + ((size_t)l * NH + h) * S * S; /* query 0 */
            for (int k = 0; k < S; k++) {
                z[(size_t)r * S + k] = cls[k];
                avg[k] += cls[k] / (double)NH;
            }
            snprintf(labels[r], sizeof labels[r], "layer %d head %d", l, h);
        }
        snprintf(labels[r], sizeof labels[r], "layer %d mean", l);
        r++;
    }
    for (int r = 0; r < rows; r++) row_labels[r] = labels[r];
    for (int k = 0; k < S; k++) col_labels[k] = k == 0 ? "[CLS]" : attn_vocab_word(ids[k - 1]);
    const attn_heatmap h = {.title = title,
                            .xlabel = "key (token attended to)",
                            .ylabel = "",
                            .cblabel = "attention of [CLS]",
                            .rows = rows,
                            .cols = S,
                            .z = z,
                            .row_labels = row_labels,
                            .col_labels = col_labels,
                            .z_min = 0,
                            .z_max = 1,
                            .values = S <= 40, /* 56 px a cell: "0.12" fits */
                            .width = 360 + 56 * (S < 8 ? 8 : S),
                            .height = 300 + 40 * rows};
    attn_status st = attn_plot_heatmap(&h, path, err);
    free(z), free(labels), free(row_labels), free(col_labels);
    return st;
}

attn_status attn_explain_plot_prefixes(const attn_explanation *const *e, const char *const *names,
                                       int n_models, const int *ids, const char *title,
                                       const char *path, attn_error *err) {
    if (!e || n_models < 1 || n_models > 8 || !ids)
        return attn_errorf(err, ATTN_ERR_ARG, "plot %s: 1..8 explanations", path ? path : "");
    const int n = e[0]->n_words;
    for (int i = 0; i < n_models; i++)
        if (!e[i]->prefix_probability || e[i]->n_words != n)
            return attn_errorf(err, ATTN_ERR_ARG,
                               "plot %s: model %d has no probability after each word of the "
                               "sentence",
                               path, i);
    double *x = malloc((size_t)n * sizeof *x), *half = malloc((size_t)n * sizeof *half);
    const char **words = malloc((size_t)n * sizeof *words);
    attn_plot_series s[9];
    attn_status st =
        x && half && words ? ATTN_OK : attn_errorf(err, ATTN_ERR_NOMEM, "plot: out of memory");
    if (st == ATTN_OK) {
        for (int i = 0; i < n; i++) {
            x[i] = i;
            half[i] = 0.5;
            words[i] = attn_vocab_word(ids[i]);
        }
        for (int m = 0; m < n_models; m++)
            s[m] = (attn_plot_series){
                .title = names[m], .n = n, .x = x, .y = e[m]->prefix_probability, .points = true};
        s[n_models] =
            (attn_plot_series){.title = "50 %", .n = n, .x = x, .y = half, .dashed = true};
        const attn_plot p = {.title = title,
                             .xlabel = "",
                             .ylabel = "P(positive) after the word",
                             .y_min = -0.02,
                             .y_max = 1.02,
                             .width = 420 + 48 * (n < 10 ? 10 : n), /* cut at 1200 */
                             .height = 560,
                             .n_series = n_models + 1,
                             .series = s,
                             .n_x_labels = n,
                             .x_labels = words};
        st = attn_plot_lines(&p, path, err);
    }
    free(x);
    free(half);
    free(words);
    return st;
}

/* attn_plot.h -- charts through gnuplot (src/lab/plot.c): the one place that draws.
 *
 *     const double x[3] = {1, 2, 3}, y[3] = {0.5, 0.7, 0.9};
 *     attn_plot_series s = {"accuracy", 3, x, y, .points = true};
 *     attn_plot p = {.title = "Test accuracy", .xlabel = "epoch", .ylabel = "accuracy",
 *                    .n_series = 1, .series = &s};
 *     attn_plot_lines(&p, "acc.png", &err);                 // or .svg
 *
 * A chart is described as data (titles, axis labels with units, series or a matrix) and
 * written to a .png (pngcairo) or .svg file chosen by the path's extension. The data and the
 * gnuplot script go to temporary files; gnuplot's own messages are captured into the error
 * message, never printed; the chart is written beside its destination and renamed over it, so
 * a failed plot leaves an existing file untouched. Titles, axis labels and legend entries are
 * gnuplot enhanced text: "d_k" draws k as a subscript, "10^{-9}" an exponent, "_{T-1}" a group;
 * a caller passing a user's text (a file name, a sentence) escapes it with attn_plot_literal.
 * Tic labels (the words of a sentence) are drawn literally.
 */
#ifndef ATTN_PLOT_H
#define ATTN_PLOT_H

#include "attn_util.h"

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The widest canvas drawn (pixels): a wider width is cut to it, since the docs shrink a wider
 * chart until its text is unreadable. */
#define ATTN_PLOT_MAX_WIDTH 1200

/* One curve of a line chart. y_lo/y_hi (both or neither) draw a shaded band, e.g. the 10th
 * to 90th percentile around a median. Non-finite y values (and, on a log axis, values <= 0)
 * leave a gap. */
typedef struct attn_plot_series {
    const char *title;         /* legend entry */
    int n;                     /* points */
    const double *x;           /* [n] */
    const double *y;           /* [n] */
    const double *y_lo, *y_hi; /* [n] optional band */
    bool points;               /* markers on the points as well as the line */
    bool dashed;               /* dashed line (reference curves, e.g. "without scaling") */
} attn_plot_series;

typedef struct attn_plot {
    const char *title;
    const char *xlabel, *ylabel; /* with units where there are any */
    bool log_x, log_y;
    /* The legend is always outside the data: at the right when its entries are short, under
     * the x axis' title when they are long (the canvas grows by its rows). "below" (anywhere in
     * key) asks for under the title; other positions are not honoured. */
    const char *key;
    double y_min, y_max; /* both 0: automatic */
    int width, height;   /* pixels; 0 = 900 x 540; width at most ATTN_PLOT_MAX_WIDTH */
    int n_series;
    const attn_plot_series *series; /* [n_series] */
    /* optional: words on the x axis, x_labels[i] at x = i (i < n_x_labels), rotated 45 degrees
     * (the probability after each word of a sentence) */
    int n_x_labels;
    const char *const *x_labels;
} attn_plot;

/* A matrix as a heat map, row 0 at the top (attention maps: query rows, key columns). */
typedef struct attn_heatmap {
    const char *title;
    const char *xlabel, *ylabel, *cblabel;
    int rows, cols;
    const double *z;               /* [rows][cols] */
    const char *const *row_labels; /* [rows] or NULL (then 0, 1, ...) */
    const char *const *col_labels; /* [cols] or NULL */
    double z_min, z_max;           /* colour range; both 0: automatic */
    bool values;                   /* print each cell's value (small matrices) */
    int width, height;             /* pixels; 0 = sized from the matrix */
} attn_heatmap;

/* One group of bars per category, one bar per series (accuracy per model and test set, ...).
 * Each bar's value is printed above it, so a bar of height 0 reads as 0, not as missing. The
 * legend is placed as a line chart's. */
typedef struct attn_bars {
    const char *title;
    const char *xlabel, *ylabel;
    int n_categories;
    const char *const *categories; /* [n_categories] */
    int n_series;
    const char *const *series_titles; /* [n_series]; NULL: no legend (one series, which the
                                       * title and the axis labels name) */
    const double *values;             /* [n_series][n_categories] */
    double y_min, y_max;              /* both 0: automatic */
    int width, height;
} attn_bars;

/* text as literal enhanced text into buf[size] (cut to fit): ^ _ @ & ~ { } and the backslash
 * escaped with a backslash. */
void attn_plot_literal(const char *text, char *buf, size_t size);
/* true when a gnuplot program is on PATH. */
bool attn_plot_available(void);
attn_status attn_plot_lines(const attn_plot *p, const char *path, attn_error *err);
attn_status attn_plot_heatmap(const attn_heatmap *h, const char *path, attn_error *err);
attn_status attn_plot_bars(const attn_bars *b, const char *path, attn_error *err);

#ifdef __cplusplus
}
#endif
#endif

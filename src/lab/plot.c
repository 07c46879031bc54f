/* plot.c -- the gnuplot driver: every chart of attn is drawn here (attn_plot.h).
 *
 * Each call writes its data and a script to temporary files beside the destination, runs
 * gnuplot on the script with its output captured into a third (its messages become the error
 * message), and lets gnuplot write the chart to a fourth, checked (complete PNG or SVG),
 * synced and renamed over the destination on success (the files and the run: plot_files.c).
 * The library never prints; nothing is left behind on failure. Titles, axis labels and
 * legend entries are gnuplot enhanced text (d_k, 10^{-9}); tic labels are literal. */
#include "plot_files.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PLOT_FONT "DejaVu Sans,12"

/* ---- script pieces --------------------------------------------------------------------- */

/* A gnuplot single-quoted string: '' is a quote; control characters become spaces. */
static void put_str(FILE *s, const char *text) {
    fputc('\'', s);
    for (const char *c = text ? text : ""; *c; c++) {
        if (*c == '\'')
            fputs("''", s);
        else
            fputc((unsigned char)*c < 0x20 ? ' ' : *c, s);
    }
    fputc('\'', s);
}

/* Text that is not markup (words of a sentence, file names): put_str with gnuplot's enhanced-text
 * characters ^ _ @ & ~ { } and the backslash escaped, so they print as themselves. */
static void put_literal(FILE *s, const char *text) {
    char buf[512];
    attn_plot_literal(text, buf, sizeof buf);
    put_str(s, buf);
}

void attn_plot_literal(const char *text, char *buf, size_t size) {
    size_t n = 0;
    if (!size) return;
    for (const char *c = text ? text : ""; *c; c++) {
        const bool special = strchr("^_@&~{}\\", *c) != NULL;
        if (n + special + 2 > size) break; /* the character, its escape and the NUL */
        if (special) buf[n++] = '\\';
        buf[n++] = *c;
    }
    buf[n] = '\0';
}

static attn_status put_header(plot_files *f, const char *path, int width, int height,
                              const char *title, attn_error *err) {
    FILE *s = f->script_f;
    if (plot_ends_with(path, ".png"))
        fprintf(s, "set terminal pngcairo size %d,%d enhanced font '%s' background '#ffffff'\n",
                width, height, PLOT_FONT);
    else if (plot_ends_with(path, ".svg"))
        fprintf(s,
                "set terminal svg size %d,%d enhanced font '%s' background '#ffffff' "
                "dynamic\n",
                width, height, PLOT_FONT);
    else
        return attn_errorf(err, ATTN_ERR_ARG, "plot %s: the file name must end in .png or .svg",
                           path);
    fputs("set output ", s);
    put_str(s, f->out_tmp);
    fputs("\nset encoding utf8\nset title ", s);
    put_str(s, title);
    fputs("\nset border lw 1.2\nset grid lc rgb '#dddddd'\n", s);
    return ATTN_OK;
}

static void put_axis_label(FILE *s, const char *axis, const char *label) {
    fprintf(s, "set %slabel ", axis);
    put_str(s, label);
    fputc('\n', s);
}

/* Colour-blind safe colours (Okabe & Ito 2008). Each model has its own on every chart
 * (model_colour); other series take the rest in turn. */
static const char *const colours[] = {"#E69F00", "#56B4E9", "#000000",
                                      "#999999", "#882255", "#332288"};
#define N_COLOURS (int)(sizeof colours / sizeof colours[0])

/* The model a series is about, from its title's first word ("lstm-seed1", "RNN, batch 1",
 * "Transformer (untrained)"), and that model's colour on every chart; NULL for other series. */
static const char *model_colour(const char *title) {
    static const struct {
        const char *name, *colour;
    } models[] = {
        {"rnn", "#D55E00"}, {"lstm", "#0072B2"}, {"gru", "#CC79A7"}, {"transformer", "#009E73"}};
    if (!title) return NULL;
    size_t len = strcspn(title, " ,-(");
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++)
        if (len == strlen(models[i].name) && strncasecmp(title, models[i].name, len) == 0)
            return models[i].colour;
    return NULL;
}

/* Series i's colour: its model's, else the next of the palette (models do not use it up). */
static const char *series_colour(const char *title, int *next) {
    const char *c = model_colour(title);
    return c ? c : colours[(*next)++ % N_COLOURS];
}

/* The legend, always outside the data and never over an axis title: at the right of the plot
 * (left-aligned, sample first) when its entries are short enough to leave the plot most of the
 * canvas, else in a box of one or two columns under the x axis' title, in a bottom margin made
 * for it (so it neither covers the title nor floats apart from it). A caller's key
 * string only matters when it asks for "below"; a position inside the plot is not honoured.
 * Returns the rows the legend takes under the chart (0 at the right), for the canvas height. */
static int put_key(FILE *s, const char *key, size_t longest, int n_entries, int width) {
    /* ~7.5 px a character at 12 pt, plus the sample and the box */
    const double right_px = 7.5 * (double)longest + 70;
    const bool below = (key && strstr(key, "below")) || right_px > 0.26 * width;
    if (!below) {
        /* gnuplot overestimates long enhanced text's width (a narrower box) and underestimates
         * short capitals' ("LSTM", a wider one) */
        fprintf(s, "set key outside right top vertical Left reverse box opaque samplen 2%s\n",
                longest > 12 ? " width -1" : " width 1");
        return 0;
    }
    /* two columns only with room to spare: pngcairo sets text wider than the svg terminal, and
     * an entry that does not fit pushes the legend to more rows than its margin holds */
    const int cols = n_entries > 2 && 2 * right_px < 0.8 * width ? 2 : 1;
    const int rows = (n_entries + cols - 1) / cols;
    /* at the canvas' foot, under a margin of the tics and the x title (4 of the margin's units,
     * 18 px at 12 pt) and its rows (one unit each):
     * gnuplot 5.4's own "below" draws the box over the x title */
    fprintf(s,
            "set bmargin %.2f\nset key at screen 0.5, screen 0.012 center bottom horizontal Left "
            "reverse box opaque samplen 2 maxcols %d maxrows %d width -1\n",
            4.0 + rows, cols, rows);
    return rows;
}

/* The canvas: at most ATTN_PLOT_MAX_WIDTH wide (wider charts shrink in the docs until their text
 * is unreadable), and taller by the legend's rows under the chart, so the plot keeps its
 * height. */
#define KEY_ROW_PX 18
static int clamp_width(int width) {
    return width > ATTN_PLOT_MAX_WIDTH ? ATTN_PLOT_MAX_WIDTH : width;
}

static void put_tics(FILE *s, const char *axis, const char *const *labels, int n, bool rotate);

/* ---- line charts ----------------------------------------------------------------------- */

static bool drawable(double v, bool log_axis) {
    return isfinite(v) && (!log_axis || v > 0);
}

/* Series i is data block i (blocks separated by two blank lines); a single blank line breaks
 * the curve where a point cannot be drawn. Columns: x y [lo hi]. */
static void put_series_data(FILE *d, const attn_plot *p, const attn_plot_series *s) {
    bool band = s->y_lo && s->y_hi;
    for (int i = 0; i < s->n; i++) {
        bool ok = drawable(s->x[i], p->log_x) && drawable(s->y[i], p->log_y) &&
                  (!band || (drawable(s->y_lo[i], p->log_y) && drawable(s->y_hi[i], p->log_y)));
        if (!ok) {
            fputc('\n', d);
            continue;
        }
        fprintf(d, "%.9g %.9g", s->x[i], s->y[i]);
        if (band) fprintf(d, " %.9g %.9g", s->y_lo[i], s->y_hi[i]);
        fputc('\n', d);
    }
    fputs("\n\n", d);
}

static attn_status check_lines(const attn_plot *p, const char *path, attn_error *err) {
    if (!p || !path || p->n_series < 1 || !p->series)
        return attn_errorf(err, ATTN_ERR_ARG, "plot: no chart or no series");
    for (int i = 0; i < p->n_series; i++) {
        const attn_plot_series *s = &p->series[i];
        if (s->n < 1 || !s->x || !s->y || (!s->y_lo != !s->y_hi))
            return attn_errorf(err, ATTN_ERR_ARG,
                               "plot %s: series %d (%s) has no points or half "
                               "a band",
                               path, i, s->title ? s->title : "untitled");
    }
    return ATTN_OK;
}

attn_status attn_plot_lines(const attn_plot *p, const char *path, attn_error *err) {
    attn_status st = check_lines(p, path, err);
    if (st != ATTN_OK) return st;
    plot_files f;
    if ((st = plot_files_open(&f, path, err)) != ATTN_OK) return st;
    FILE *s = f.script_f;
    size_t longest = 0;
    for (int i = 0; i < p->n_series; i++)
        if (p->series[i].title && strlen(p->series[i].title) > longest)
            longest = strlen(p->series[i].title);
    const int width = clamp_width(p->width > 0 ? p->width : 900);
    const int key_rows = put_key(s, p->key, longest, p->n_series, width);
    st = put_header(&f, path, width, (p->height > 0 ? p->height : 540) + KEY_ROW_PX * key_rows,
                    p->title, err);
    put_axis_label(s, "x", p->xlabel);
    put_axis_label(s, "y", p->ylabel);
    if (p->log_x) fputs("set logscale x\nset format x '%g'\n", s);
    if (p->log_y) fputs("set logscale y\nset format y '10^{%T}'\n", s);
    if (p->y_min != 0 || p->y_max != 0) fprintf(s, "set yrange [%.9g:%.9g]\n", p->y_min, p->y_max);
    if (p->x_labels && p->n_x_labels > 0) {
        fprintf(s, "set xrange [-0.5:%d.5]\n", p->n_x_labels - 1);
        put_tics(s, "x", p->x_labels, p->n_x_labels, true);
    }
    fputs("set style fill transparent solid 0.18 noborder\nplot ", s);
    for (int i = 0, next = 0; i < p->n_series; i++) {
        const attn_plot_series *ser = &p->series[i];
        put_series_data(f.data_f, p, ser);
        const char *c = series_colour(ser->title, &next);
        if (ser->y_lo) {
            put_str(s, f.data);
            fprintf(s, " index %d using 1:3:4 with filledcurves lc rgb '%s' notitle, ", i, c);
        }
        put_str(s, f.data);
        fprintf(s, " index %d using 1:2 with %s lw 2 lc rgb '%s' dt %d %s title ", i,
                ser->points ? "linespoints" : "lines", c, ser->dashed ? 2 : 1,
                ser->points ? "pt 7 ps 0.7" : "");
        put_str(s, ser->title);
        fputs(i + 1 < p->n_series ? ", \\\n  " : "\n", s);
    }
    return plot_finish(&f, path, st, err);
}

/* ---- heat maps ------------------------------------------------------------------------- */

static void put_tics(FILE *s, const char *axis, const char *const *labels, int n, bool rotate) {
    if (!labels) return;
    fprintf(s, "set %stics %s(", axis, rotate ? "rotate by 45 right " : "");
    for (int i = 0; i < n; i++) {
        put_literal(s, labels[i]);
        fprintf(s, " %d%s", i, i + 1 < n ? ", " : "");
    }
    fputs(")\n", s);
}

/* About a heat map cell's width (the row labels and the colour box take some 360 pixels): a
 * cut canvas prints its values smaller so that "0.12" still fits. */
static int cell_px(int width, int cols) {
    return (width - 360) / cols;
}

attn_status attn_plot_heatmap(const attn_heatmap *h, const char *path, attn_error *err) {
    if (!h || !path || h->rows < 1 || h->cols < 1 || !h->z)
        return attn_errorf(err, ATTN_ERR_ARG, "plot: heat map without data");
    plot_files f;
    attn_status st = plot_files_open(&f, path, err);
    if (st != ATTN_OK) return st;
    int w = clamp_width(h->width > 0 ? h->width : 260 + 40 * (h->cols < 8 ? 8 : h->cols));
    int ht = h->height > 0 ? h->height : 200 + 36 * (h->rows < 6 ? 6 : h->rows);
    st = put_header(&f, path, w, ht, h->title, err);
    FILE *s = f.script_f;
    put_axis_label(s, "x", h->xlabel);
    put_axis_label(s, "y", h->ylabel);
    put_axis_label(s, "cb", h->cblabel);
    fputs("unset grid\nset tics nomirror out\nset palette defined (0 '#ffffff', 0.5 '#6baed6', "
          "1 '#08306b')\n",
          s);
    fprintf(s, "set xrange [-0.5:%d.5]\nset yrange [%d.5:-0.5]\n", h->cols - 1, h->rows - 1);
    if (h->z_min != 0 || h->z_max != 0) fprintf(s, "set cbrange [%.9g:%.9g]\n", h->z_min, h->z_max);
    put_tics(s, "x", h->col_labels, h->cols, true);
    put_tics(s, "y", h->row_labels, h->rows, false);
    for (int r = 0; r < h->rows; r++) {
        for (int c = 0; c < h->cols; c++)
            fprintf(f.data_f, "%s%.9g", c ? " " : "", h->z[(size_t)r * h->cols + c]);
        fputc('\n', f.data_f);
    }
    fputs("plot ", s);
    put_str(s, f.data);
    fputs(" matrix with image notitle", s);
    if (h->values) {
        double top = h->z_max;
        if (h->z_min == 0 && h->z_max == 0)
            for (size_t i = 0; i < (size_t)h->rows * h->cols; i++)
                if (h->z[i] > top) top = h->z[i];
        /* white text on dark cells */
        fputs(", ", s);
        put_str(s, f.data);
        fprintf(s,
                " matrix using 1:2:($3 == $3 ? sprintf('%%.2f', $3) : ''):($3 > %.9g ? 0xffffff "
                ": 0) " /* NaN cells (gaps) stay blank */
                "with labels tc rgb variable font ',%d' notitle",
                0.6 * top, cell_px(w, h->cols) < 40 ? 8 : 9);
    }
    fputc('\n', s);
    return plot_finish(&f, path, st, err);
}

/* ---- grouped bars ---------------------------------------------------------------------- */

attn_status attn_plot_bars(const attn_bars *b, const char *path, attn_error *err) {
    if (!b || !path || b->n_categories < 1 || b->n_series < 1 || !b->values || !b->categories)
        return attn_errorf(err, ATTN_ERR_ARG, "plot: bar chart without data");
    plot_files f;
    attn_status st = plot_files_open(&f, path, err);
    if (st != ATTN_OK) return st;
    FILE *s = f.script_f;
    size_t longest = 0;
    for (int i = 0; b->series_titles && i < b->n_series; i++)
        if (b->series_titles[i] && strlen(b->series_titles[i]) > longest)
            longest = strlen(b->series_titles[i]);
    const int width = clamp_width(b->width > 0 ? b->width : 900);
    int key_rows = 0;
    if (b->series_titles)
        key_rows = put_key(s, NULL, longest, b->n_series, width);
    else
        fputs("set key off\n", s);
    st = put_header(&f, path, width, (b->height > 0 ? b->height : 540) + KEY_ROW_PX * key_rows,
                    b->title, err);
    put_axis_label(s, "x", b->xlabel);
    put_axis_label(s, "y", b->ylabel);
    if (b->y_min != 0 || b->y_max != 0) fprintf(s, "set yrange [%.9g:%.9g]\n", b->y_min, b->y_max);
    fputs("set style data histograms\nset style histogram clustered gap 1\n"
          "set style fill solid 0.85 border -1\nset boxwidth 0.9\nset xtics nomirror\n"
          "set grid noxtics\n",
          s);
    for (int c = 0; c < b->n_categories; c++) {
        fprintf(f.data_f, "%d", c);
        for (int i = 0; i < b->n_series; i++)
            fprintf(f.data_f, " %.9g", b->values[(size_t)i * b->n_categories + c]);
        fputc('\n', f.data_f);
    }
    fprintf(s, "set xrange [-0.5:%d.5]\n", b->n_categories - 1);
    put_tics(s, "x", b->categories, b->n_categories, false);
    fputs("plot ", s);
    for (int i = 0, next = 0; i < b->n_series; i++) {
        put_str(s, f.data);
        fprintf(s, " using %d lc rgb '%s' title ", i + 2,
                series_colour(b->series_titles ? b->series_titles[i] : NULL, &next));
        put_str(s, b->series_titles ? b->series_titles[i] : "");
        fputs(", ", s);
    }
    /* each bar's value above it (bar i of n sits (i - (n-1)/2) / (n + gap) off its category) */
    for (int i = 0; i < b->n_series; i++) {
        put_str(s, f.data);
        fprintf(s,
                " using ($1 + %.6f):%d:(sprintf('%%.3g', $%d)) with labels offset 0,0.6 "
                "font ',9' notitle%s",
                (i - (b->n_series - 1) / 2.0) / (b->n_series + 1), i + 2, i + 2,
                i + 1 < b->n_series ? ", " : "\n");
    }
    return plot_finish(&f, path, st, err);
}

/* test_plot_layout.c -- the charts' layout, read back from what gnuplot writes: a PNG is at most
 * ATTN_PLOT_MAX_WIDTH wide (its IHDR), the plot area keeps most of the canvas, and the legend's
 * box (the SVG's closed rectangles: the largest is the plot's border) lies outside the plot,
 * inside the canvas and below the x axis' title when it goes under the chart; a bar of height 0
 * is labelled "0", not left blank. */
#include "attn_plot.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[80];

static const char *tmp_path(const char *ext) {
    static int serial;
    snprintf(path, sizeof path, "/tmp/attn-test-layout-%d-%d.%s", (int)getpid(), serial++, ext);
    return path;
}

/* width and height from a PNG's IHDR chunk (bytes 16..23, big-endian) */
static void png_size(const char *file, unsigned *w, unsigned *h) {
    unsigned char b[24];
    FILE *f = fopen(file, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fread(b, 1, sizeof b, f), sizeof b);
    fclose(f);
    ck_assert(memcmp(b + 12, "IHDR", 4) == 0);
    *w = (unsigned)b[16] << 24 | (unsigned)b[17] << 16 | (unsigned)b[18] << 8 | b[19];
    *h = (unsigned)b[20] << 24 | (unsigned)b[21] << 16 | (unsigned)b[22] << 8 | b[23];
}

typedef struct rect {
    double x0, y0, x1, y1; /* SVG pixels, y down */
} rect;

typedef struct layout {
    double width, height; /* the canvas (viewBox) */
    rect plot, key;       /* the border and the legend's box */
    double xlabel_y;      /* the x axis' title's baseline */
    char *svg;
} layout;

/* The closed rectangles "M a,b L a,c L d,c L d,b L a,b Z" of the SVG: the largest is the plot's
 * border, the one not inside it the legend's box. */
static layout read_layout(const char *file, const char *xlabel) {
    layout l = {0};
    size_t len = 0;
    l.svg = tu_read_file(file, &len);
    ck_assert_ptr_nonnull(l.svg);
    const char *vb = strstr(l.svg, "viewBox=\"0 0 ");
    ck_assert_ptr_nonnull(vb);
    ck_assert(sscanf(vb, "viewBox=\"0 0 %lf %lf", &l.width, &l.height) == 2);
    rect all[64];
    int n = 0;
    for (const char *at = l.svg; n < 64 && (at = strstr(at, "d='M")) != NULL; at++) {
        double a, b, c, d, e, f, g, h;
        if (sscanf(at, "d='M%lf,%lf L%lf,%lf L%lf,%lf L%lf,%lf", &a, &b, &c, &d, &e, &f, &g, &h) !=
                8 ||
            a != c || d != f || e != g || b != h)
            continue;
        all[n++] = (rect){a < e ? a : e, b < d ? b : d, a < e ? e : a, b < d ? d : b};
    }
    double best = 0;
    for (int i = 0; i < n; i++) {
        const double area = (all[i].x1 - all[i].x0) * (all[i].y1 - all[i].y0);
        if (area > best) best = area, l.plot = all[i];
    }
    /* the legend's box: the rectangle not inside the border (bars are) */
    bool found = false;
    for (int i = 0; i < n && !found; i++) {
        const rect r = all[i];
        if (r.x0 < l.plot.x0 || r.x1 > l.plot.x1 || r.y0 < l.plot.y0 || r.y1 > l.plot.y1)
            l.key = r, found = true;
    }
    ck_assert_msg(best > 0 && found, "no border or no legend box outside it in %s", file);
    char want[128];
    snprintf(want, sizeof want, ">%s</tspan>", xlabel);
    const char *t = strstr(l.svg, want);
    ck_assert_ptr_nonnull(t);
    while (t > l.svg && strncmp(t, "translate(", 10) != 0) t--;
    double x;
    ck_assert(sscanf(t, "translate(%lf,%lf", &x, &l.xlabel_y) == 2);
    return l;
}

static bool overlap(rect a, rect b) {
    return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;
}

/* n flat series titled titles[], asked at width w (0: the default) */
static attn_status lines(const char *const *titles, int n, int w, const char *file) {
    double x[4] = {0, 1, 2, 3}, y[6][4];
    attn_plot_series s[6];
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < 4; k++) y[i][k] = i + 1 + 0.1 * k;
        s[i] = (attn_plot_series){.title = titles[i], .n = 4, .x = x, .y = y[i], .points = true};
    }
    const attn_plot p = {.title = "layout",
                         .xlabel = "the x title",
                         .ylabel = "the y title",
                         .key = "top left", /* inside: not honoured */
                         .width = w,
                         .n_series = n,
                         .series = s};
    attn_error err;
    attn_status st = attn_plot_lines(&p, file, &err);
    ck_assert_msg(st == ATTN_OK, "%s", err.msg);
    return st;
}

static void check_outside(const layout *l) {
    ck_assert_msg(!overlap(l->plot, l->key), "legend [%g,%g]-[%g,%g] over the plot [%g,%g]-[%g,%g]",
                  l->key.x0, l->key.y0, l->key.x1, l->key.y1, l->plot.x0, l->plot.y0, l->plot.x1,
                  l->plot.y1);
    ck_assert_msg(l->key.x0 >= 0 && l->key.x1 <= l->width && l->key.y0 >= 0 &&
                      l->key.y1 <= l->height,
                  "legend cut off the %gx%g canvas", l->width, l->height);
}

START_TEST(test_short_entries_right) {
    const char *t[] = {"rnn", "lstm", "transformer"};
    lines(t, 3, 0, tmp_path("svg"));
    layout l = read_layout(path, "the x title");
    unlink(path);
    check_outside(&l);
    ck_assert_msg(l.key.x0 >= l.plot.x1, "short entries belong at the right");
    /* the legend takes no more than a quarter of the width */
    const double frac = (l.plot.x1 - l.plot.x0) / l.width;
    ck_assert_msg(frac > 0.7, "plot area %.2f of the width", frac);
    free(l.svg);
}
END_TEST

START_TEST(test_long_entries_below_the_x_title) {
    const char *t[] = {"largest softmax probability, unscaled", "std of scores, q.k (unscaled)",
                       "rows after i (where the words changed)",
                       "seq2seq-gru: 64 sequential steps at 64 words, +17.0 us per word"};
    lines(t, 4, 0, tmp_path("svg"));
    layout l = read_layout(path, "the x title");
    unlink(path);
    check_outside(&l);
    /* under the x title's baseline, with its descenders' room, and not floating below it */
    ck_assert_msg(l.key.y0 > l.xlabel_y + 4, "legend top %g over the x title at %g", l.key.y0,
                  l.xlabel_y);
    ck_assert_msg(l.key.y0 < l.xlabel_y + 30, "legend top %g floats below the x title at %g",
                  l.key.y0, l.xlabel_y);
    const double wf = (l.plot.x1 - l.plot.x0) / l.width, hf = (l.plot.y1 - l.plot.y0) / l.height;
    ck_assert_msg(wf > 0.8 && hf > 0.55, "plot area %.2f x %.2f of the canvas", wf, hf);
    free(l.svg);
}
END_TEST

START_TEST(test_width_bound) {
    const char *t[] = {"rnn", "lstm"};
    lines(t, 2, 1872, tmp_path("png"));
    unsigned w, h;
    png_size(path, &w, &h);
    unlink(path);
    ck_assert_uint_le(w, ATTN_PLOT_MAX_WIDTH);
    ck_assert_uint_eq(h, 540);
    /* a 27-column heat map sized by its caller as 56 px a cell */
    double z[2 * 27] = {0};
    const attn_heatmap hm = {
        .title = "wide", .rows = 2, .cols = 27, .z = z, .values = true, .width = 360 + 56 * 27};
    attn_error err;
    ck_assert_msg(attn_plot_heatmap(&hm, tmp_path("png"), &err) == ATTN_OK, "%s", err.msg);
    png_size(path, &w, &h);
    unlink(path);
    ck_assert_uint_le(w, ATTN_PLOT_MAX_WIDTH);
}
END_TEST

START_TEST(test_zero_bar_labelled) {
    const char *cats[] = {"with the mask", "without"};
    const char *series[] = {"rows before", "rows after"};
    const double v[4] = {100, 0, 0, 0};
    const attn_bars b = {.title = "bars",
                         .xlabel = "the x title",
                         .ylabel = "share (%)",
                         .n_categories = 2,
                         .categories = cats,
                         .n_series = 2,
                         .series_titles = series,
                         .values = v};
    attn_error err;
    ck_assert_msg(attn_plot_bars(&b, tmp_path("svg"), &err) == ATTN_OK, "%s", err.msg);
    layout l = read_layout(path, "the x title");
    unlink(path);
    check_outside(&l);
    /* the values are printed at 9 pt, above the bars, so above the x axis */
    int zeros = 0;
    for (const char *at = l.svg; (at = strstr(at, ">0</tspan>")) != NULL; at++) {
        const char *g = at;
        while (g > l.svg && strncmp(g, "<g transform=", 13) != 0) g--;
        double x, y;
        if (strstr(g, "font-size=\"9.00\"") < at &&
            sscanf(g, "<g transform=\"translate(%lf,%lf", &x, &y) == 2 && y < l.plot.y1)
            zeros++;
    }
    ck_assert_int_eq(zeros, 3);
    ck_assert_ptr_nonnull(strstr(l.svg, ">100</tspan>"));
    free(l.svg);
}
END_TEST

/* Bars without series titles (one series, which the title and the axes name: the kv-cache
 * chart) have no legend: no box outside the border, no entry, and the border reaches further
 * right than beside a one-entry legend. */
START_TEST(test_untitled_bars_no_legend) {
    const char *cats[] = {"0", "1", "2-4"};
    const char *series[] = {"one series"};
    const double v[3] = {60, 30, 10};
    attn_bars b = {.title = "bars",
                   .xlabel = "the x title",
                   .ylabel = "share (%)",
                   .n_categories = 3,
                   .categories = cats,
                   .n_series = 1,
                   .series_titles = series,
                   .values = v};
    attn_error err;
    ck_assert_msg(attn_plot_bars(&b, tmp_path("svg"), &err) == ATTN_OK, "%s", err.msg);
    layout titled = read_layout(path, "the x title"); /* asserts a legend box */
    unlink(path);
    b.series_titles = NULL;
    ck_assert_msg(attn_plot_bars(&b, tmp_path("svg"), &err) == ATTN_OK, "%s", err.msg);
    size_t len = 0;
    char *svg = tu_read_file(path, &len);
    unlink(path);
    ck_assert_ptr_nonnull(svg);
    rect all[64], border = {0};
    int n = 0;
    for (const char *at = svg; n < 64 && (at = strstr(at, "d='M")) != NULL; at++) {
        double a, c, d, e, f, g, h, bb;
        if (sscanf(at, "d='M%lf,%lf L%lf,%lf L%lf,%lf L%lf,%lf", &a, &bb, &c, &d, &e, &f, &g, &h) ==
                8 &&
            a == c && d == f && e == g && bb == h)
            all[n++] = (rect){a < e ? a : e, bb < d ? bb : d, a < e ? e : a, bb < d ? d : bb};
    }
    for (int i = 0; i < n; i++)
        if ((all[i].x1 - all[i].x0) * (all[i].y1 - all[i].y0) >
            (border.x1 - border.x0) * (border.y1 - border.y0))
            border = all[i];
    for (int i = 0; i < n; i++)
        ck_assert_msg(all[i].x0 >= border.x0 && all[i].x1 <= border.x1 && all[i].y0 >= border.y0 &&
                          all[i].y1 <= border.y1,
                      "a box outside the border: a legend");
    ck_assert_ptr_null(strstr(svg, "one series"));
    ck_assert_msg(border.x1 > titled.plot.x1,
                  "the border (right edge %.1f) leaves room for a "
                  "legend (titled: %.1f)",
                  border.x1, titled.plot.x1);
    free(svg);
    free(titled.svg);
}
END_TEST

int main(void) {
    Suite *s = suite_create("lab/plot_layout");
    TCase *tc = tcase_create("plot_layout");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_short_entries_right);
    tcase_add_test(tc, test_long_entries_below_the_x_title);
    tcase_add_test(tc, test_width_bound);
    tcase_add_test(tc, test_zero_bar_labelled);
    tcase_add_test(tc, test_untitled_bars_no_legend);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}

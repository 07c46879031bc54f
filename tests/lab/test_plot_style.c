/* test_plot_style.c -- the charts' house style, read back from the SVG gnuplot writes: each
 * model has one colour on every chart (whatever its position among the series), other series
 * never take a model's colour, subscripts and exponents are enhanced text (d_k, 10^{-3}) while
 * attn_plot_literal keeps a user's text as typed, and the legend sits outside the data. */
#include "attn_plot.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[64];

/* The chart of series titled titles[0..n) (flat lines at 1..n) as SVG text. */
static char *chart_svg(const char *const *titles, int n, const char *title, bool log_y) {
    double x[4] = {0, 1, 2, 3}, y[8][4];
    attn_plot_series s[8];
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < 4; k++) y[i][k] = log_y ? pow(10.0, -i - k) : i + 1;
        s[i] = (attn_plot_series){.title = titles[i], .n = 4, .x = x, .y = y[i]};
    }
    const attn_plot p = {
        .title = title, .xlabel = "x", .ylabel = "y", .log_y = log_y, .n_series = n, .series = s};
    static int serial;
    snprintf(path, sizeof path, "/tmp/attn-test-style-%d-%d.svg", (int)getpid(), serial++);
    attn_error err;
    ck_assert_msg(attn_plot_lines(&p, path, &err) == ATTN_OK, "%s", err.msg);
    size_t len = 0;
    char *text = tu_read_file(path, &len);
    ck_assert_ptr_nonnull(text);
    unlink(path);
    return text;
}

/* gnuplot's SVG colour of a hex colour, "rgb(  0, 114, 178)" */
static void svg_rgb(const char *hex, char *buf, size_t n) {
    unsigned r, g, b;
    ck_assert(sscanf(hex, "#%02x%02x%02x", &r, &g, &b) == 3);
    snprintf(buf, n, "rgb(%3u, %3u, %3u)", r, g, b);
}

START_TEST(test_one_colour_per_model) {
    static const char *const models[][2] = {
        {"rnn", "#D55E00"}, {"lstm", "#0072B2"}, {"gru", "#CC79A7"}, {"transformer", "#009E73"}};
    /* the same model first in one chart and last in another, named as the commands name it */
    const char *a[] = {"lstm-seed1", "RNN", "Transformer (untrained, seed 1)", "GRU, batch 1"};
    const char *b[] = {"gru (seed 1)", "transformer, before training", "rnn-seed2",
                       "LSTM, after training"};
    char *sa = chart_svg(a, 4, "a", false), *sb = chart_svg(b, 4, "b", false);
    for (int m = 0; m < 4; m++) {
        char rgb[32];
        svg_rgb(models[m][1], rgb, sizeof rgb);
        ck_assert_msg(strstr(sa, rgb) && strstr(sb, rgb), "%s (%s) missing", models[m][0], rgb);
    }
    free(sa);
    free(sb);
    /* series that are no model take none of the models' colours */
    const char *c[] = {"scaled", "unscaled", "50 %", "bound"};
    char *sc = chart_svg(c, 4, "c", false);
    for (int m = 0; m < 4; m++) {
        char rgb[32];
        svg_rgb(models[m][1], rgb, sizeof rgb);
        ck_assert_msg(!strstr(sc, rgb), "a non-model series drawn in %s's colour", models[m][0]);
    }
    free(sc);
}
END_TEST

START_TEST(test_enhanced_text) {
    const char *t[] = {"q.k/sqrt(d_k)"};
    char *s = chart_svg(t, 1, "scores over d_k", true);
    /* the k of d_k is a subscript (a smaller font, shifted down), not "d_k" */
    ck_assert_msg(!strstr(s, "d_k"), "d_k drawn literally");
    ck_assert_msg(strstr(s, "font-size=\"9.6\" dy=\"3.60px\">k</tspan>"), "no subscript k");
    /* log tics are powers of ten with exponents */
    ck_assert_msg(strstr(s, ">10</tspan>") && strstr(s, "dy=\"-6.00px\">-3</tspan>"),
                  "no 10^-3 tic");
    free(s);
    char buf[64];
    attn_plot_literal("my_model^2 {x}", buf, sizeof buf);
    ck_assert_str_eq(buf, "my\\_model\\^2 \\{x\\}");
    const char *lit[] = {buf};
    s = chart_svg(lit, 1, "literal", false);
    ck_assert_msg(strstr(s, "my_model^2 {x}"), "the user's text is not drawn as typed");
    free(s);
    attn_plot_literal("abcdef", buf, 4); /* cut to fit */
    ck_assert_str_eq(buf, "abc");
}
END_TEST

/* The legend is outside the plot area: its entries' x lies right of the plot's right border
 * (short entries) or its y below the x axis' label (long ones). */
START_TEST(test_legend_outside) {
    const char *t[] = {"lstm", "rnn"};
    char *s = chart_svg(t, 2, "short entries", false);
    /* the key's text is anchored left of its sample ("Left reverse"): find "lstm" and check it
     * is drawn right of x = 700 of the 900-pixel canvas */
    const char *at = strstr(s, ">lstm</tspan>");
    ck_assert_ptr_nonnull(at);
    const char *tr = at;
    while (tr > s && strncmp(tr, "translate(", 10) != 0) tr--;
    double x = 0;
    ck_assert(sscanf(tr, "translate(%lf", &x) == 1);
    ck_assert_msg(x > 700, "legend entry at x = %g, inside the data", x);
    free(s);
}
END_TEST

int main(void) {
    Suite *s = suite_create("lab/plot_style");
    TCase *tc = tcase_create("plot_style");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_one_colour_per_model);
    tcase_add_test(tc, test_enhanced_text);
    tcase_add_test(tc, test_legend_outside);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}

/* test_plot.c -- the gnuplot driver: each chart kind writes a real PNG / SVG (magic bytes,
 * a plausible size), odd text (quotes, control characters) and undrawable points (NaN, zero on
 * a log axis) do not break the script, and a failure (bad extension, no gnuplot) is an error
 * that leaves an existing file untouched and no temporary file behind. */
#include "attn_plot.h"
#include "test_util.h"

#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static char dir[64];

static void make_dir(void) {
    snprintf(dir, sizeof dir, "/tmp/attn-test-plot-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void remove_dir(void) {
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[512];
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            remove(p);
        }
    if (d) closedir(d);
    rmdir(dir);
}

static int files_in_dir(void) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') n++;
    if (d) closedir(d);
    return n;
}

static long read_head(const char *path, char *head, size_t n) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    memset(head, 0, n);
    size_t got = fread(head, 1, n, f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    return got ? size : 0;
}

static void assert_png(const char *path) {
    char head[8];
    long size = read_head(path, head, sizeof head);
    ck_assert_msg(size > 2000, "%s: %ld bytes", path, size);
    ck_assert_msg(memcmp(head, "\x89PNG\r\n\x1a\n", 8) == 0, "%s is not a PNG", path);
}

/* A median with a band, a log y axis, a NaN and a zero (gaps), and a title with a quote. */
static attn_plot sample_lines(double *x, double *y, double *lo, double *hi, double *y2,
                              attn_plot_series *s) {
    for (int i = 0; i < 20; i++) {
        x[i] = i;
        y[i] = exp(-0.5 * i);
        lo[i] = 0.5 * y[i];
        hi[i] = 2 * y[i];
        y2[i] = 1.0;
    }
    y[5] = NAN;
    y2[7] = 0.0;
    s[0] = (attn_plot_series){
        .title = "RNN's median", .n = 20, .x = x, .y = y, .y_lo = lo, .y_hi = hi};
    s[1] = (attn_plot_series){
        .title = "attention\t(flat)", .n = 20, .x = x, .y = y2, .points = true, .dashed = true};
    return (attn_plot){.title = "gradient 'ratio' vs distance",
                       .xlabel = "distance k (words)",
                       .ylabel = "ratio",
                       .log_y = true,
                       .n_series = 2,
                       .series = s};
}

START_TEST(test_lines_png_and_svg) {
    make_dir();
    double x[20], y[20], lo[20], hi[20], y2[20];
    attn_plot_series s[2];
    attn_plot p = sample_lines(x, y, lo, hi, y2, s);
    char png[128], svg[128];
    snprintf(png, sizeof png, "%s/a.png", dir);
    snprintf(svg, sizeof svg, "%s/a.svg", dir);
    attn_error err;
    ck_assert_msg(attn_plot_lines(&p, png, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_msg(attn_plot_lines(&p, svg, &err) == ATTN_OK, "%s", err.msg);
    assert_png(png);
    char head[4096];
    ck_assert_int_gt(read_head(svg, head, sizeof head - 1), 1000);
    ck_assert_msg(strstr(head, "<svg") != NULL, "no <svg in %s", svg);
    ck_assert_int_eq(files_in_dir(), 2); /* no temporary file left */
    remove_dir();
}
END_TEST

START_TEST(test_heatmap_and_bars) {
    make_dir();
    double z[12];
    for (int i = 0; i < 12; i++) z[i] = (double)i / 11;
    const char *rows[] = {"[CLS]", "the", "food"};
    const char *cols[] = {"[CLS]", "the", "food", "was"};
    attn_heatmap h = {.title = "layer 1, head 1",
                      .xlabel = "key",
                      .ylabel = "query",
                      .cblabel = "probability",
                      .rows = 3,
                      .cols = 4,
                      .z = z,
                      .row_labels = rows,
                      .col_labels = cols,
                      .z_max = 1,
                      .values = true};
    char path[128];
    attn_error err;
    snprintf(path, sizeof path, "%s/h.png", dir);
    ck_assert_msg(attn_plot_heatmap(&h, path, &err) == ATTN_OK, "%s", err.msg);
    assert_png(path);
    const char *cats[] = {"plain", "distractor"};
    const char *titles[] = {"rnn", "lstm", "transformer"};
    double v[6] = {0.6, 0.55, 1, 0.9, 1, 1};
    attn_bars b = {.title = "accuracy",
                   .ylabel = "accuracy",
                   .n_categories = 2,
                   .categories = cats,
                   .n_series = 3,
                   .series_titles = titles,
                   .values = v,
                   .y_max = 1.05};
    snprintf(path, sizeof path, "%s/b.png", dir);
    ck_assert_msg(attn_plot_bars(&b, path, &err) == ATTN_OK, "%s", err.msg);
    assert_png(path);
    remove_dir();
}
END_TEST

/* An existing destination survives a failed plot: wrong extension, then no gnuplot on PATH. */
START_TEST(test_failure_keeps_existing_file) {
    make_dir();
    double x[20], y[20], lo[20], hi[20], y2[20];
    attn_plot_series s[2];
    attn_plot p = sample_lines(x, y, lo, hi, y2, s);
    char path[128], head[16];
    snprintf(path, sizeof path, "%s/keep.txt", dir);
    FILE *f = fopen(path, "w");
    fputs("precious", f);
    fclose(f);
    attn_error err;
    ck_assert_int_eq(attn_plot_lines(&p, path, &err), ATTN_ERR_ARG);
    ck_assert_msg(strstr(err.msg, ".png or .svg") != NULL, "%s", err.msg);
    snprintf(path, sizeof path, "%s/keep.png", dir);
    f = fopen(path, "w");
    fputs("precious", f);
    fclose(f);
    setenv("PATH", "/nonexistent", 1);
    ck_assert(!attn_plot_available());
    ck_assert_int_eq(attn_plot_lines(&p, path, &err), ATTN_ERR_IO);
    ck_assert_msg(strstr(err.msg, "gnuplot") != NULL, "%s", err.msg);
    ck_assert_int_eq(read_head(path, head, sizeof head), 8);
    ck_assert_str_eq(head, "precious");
    ck_assert_int_eq(files_in_dir(), 2);
    remove_dir();
}
END_TEST

/* A short write (full disk; here a file size limit with SIGXFSZ ignored, which gnuplot
 * inherits) is an error and leaves the existing PNG and SVG untouched: gnuplot itself exits 0
 * with a truncated file. */
START_TEST(test_short_write_keeps_existing_file) {
    make_dir();
    double x[20], y[20], lo[20], hi[20], y2[20];
    attn_plot_series s[2];
    attn_plot p = sample_lines(x, y, lo, hi, y2, s);
    signal(SIGXFSZ, SIG_IGN);
    const struct rlimit lim = {4000, 4000}; /* the data and script fit, the chart does not */
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    static const char *const ext[] = {"png", "svg"};
    for (int i = 0; i < 2; i++) {
        char path[128], head[16];
        snprintf(path, sizeof path, "%s/keep.%s", dir, ext[i]);
        FILE *f = fopen(path, "w");
        fputs("precious", f);
        fclose(f);
        attn_error err;
        ck_assert_int_eq(attn_plot_lines(&p, path, &err), ATTN_ERR_IO);
        ck_assert_msg(strstr(err.msg, "incomplete") != NULL, "%s", err.msg);
        ck_assert_int_eq(read_head(path, head, sizeof head), 8);
        ck_assert_str_eq(head, "precious");
    }
    ck_assert_int_eq(files_in_dir(), 2);
    remove_dir();
}
END_TEST

int main(void) {
    Suite *s = suite_create("lab/plot");
    TCase *tc = tcase_create("plot");
    tcase_add_test(tc, test_lines_png_and_svg);
    tcase_add_test(tc, test_heatmap_and_bars);
    tcase_add_test(tc, test_failure_keeps_existing_file);
    tcase_add_test(tc, test_short_write_keeps_existing_file);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}

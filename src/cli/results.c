/* results.c -- the write-up's table (rows: test sets, columns: models, cells: accuracy range
 * across seeds), shared by `attn reproduce` and `attn eval --table`. */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const attn_set cli_test_sets[ATTN_N_TEST_SETS] = {ATTN_SET_PLAIN, ATTN_SET_DISTRACTOR,
                                                  ATTN_SET_FILL4, ATTN_SET_FILL8};
static const char *const arch_titles[CLI_MAX_ARCH] = {"RNN", "LSTM", "Transformer", "GRU"};
/* Column order; a model gets a column when some run is of it. */
static const attn_arch columns[CLI_MAX_ARCH] = {ATTN_ARCH_RNN, ATTN_ARCH_GRU, ATTN_ARCH_LSTM,
                                                ATTN_ARCH_TRANSFORMER};

/* The archs of runs[] in column order into cols; returns their count. */
static int table_columns(const cli_run_result *runs, int n_runs, attn_arch *cols) {
    int n = 0;
    for (int c = 0; c < CLI_MAX_ARCH; c++)
        for (int i = 0; i < n_runs; i++)
            if (runs[i].arch == columns[c]) {
                cols[n++] = columns[c];
                break;
            }
    return n;
}

/* "52.5" or "100": one decimal unless whole. */
static void fmt_pct(char *buf, size_t n, double x) {
    double p = 100.0 * x;
    if (fabs(p - round(p)) < 1e-9)
        snprintf(buf, n, "%.0f", p);
    else
        snprintf(buf, n, "%.1f", p);
}

/* "52–55%" (or "100%" when all seeds agree). */
static void fmt_range(char *buf, size_t n, double lo, double hi) {
    char a[16], b[16];
    fmt_pct(a, sizeof a, lo);
    fmt_pct(b, sizeof b, hi);
    if (strcmp(a, b) == 0)
        snprintf(buf, n, "%s%%", a);
    else
        snprintf(buf, n, "%s\xe2\x80\x93%s%%", a, b); /* en dash */
}

/* Pads a cell to 13 display columns (the en dash is 3 bytes, 1 column). */
static void put_cell(FILE *f, const char *cell) {
    int extra = strstr(cell, "\xe2\x80\x93") ? 2 : 0;
    fprintf(f, " %-*s |", 13 + extra, cell);
}

void cli_print_results_table(FILE *f, const cli_run_result *runs, int n_runs) {
    attn_arch cols[CLI_MAX_ARCH];
    const int n_cols = table_columns(runs, n_runs, cols);
    fprintf(f, "| test set   |");
    for (int c = 0; c < n_cols; c++) fprintf(f, " %-13s |", arch_titles[cols[c]]);
    fprintf(f, "\n|------------|");
    for (int c = 0; c < n_cols; c++) fprintf(f, "---------------|");
    fprintf(f, "\n");
    for (int s = 0; s < ATTN_N_TEST_SETS; s++) {
        fprintf(f, "| %-10s |", attn_set_name(cli_test_sets[s]));
        for (int c = 0; c < n_cols; c++) {
            double lo = INFINITY, hi = -INFINITY;
            for (int i = 0; i < n_runs; i++) {
                if (runs[i].arch != cols[c] || !runs[i].ok) continue;
                lo = fmin(lo, runs[i].acc[s]);
                hi = fmax(hi, runs[i].acc[s]);
            }
            char cell[48];
            if (lo > hi)
                snprintf(cell, sizeof cell, "-");
            else
                fmt_range(cell, sizeof cell, lo, hi);
            put_cell(f, cell);
        }
        fprintf(f, "\n");
    }
    fprintf(f, "| parameters |");
    for (int c = 0; c < n_cols; c++) {
        size_t np = 0;
        for (int i = 0; i < n_runs; i++)
            if (runs[i].arch == cols[c] && runs[i].ok) np = runs[i].n_params;
        char cell[32];
        if (np)
            cli_fmt_thousands(cell, sizeof cell, np);
        else
            snprintf(cell, sizeof cell, "-");
        put_cell(f, cell);
    }
    fprintf(f, "\n");
}

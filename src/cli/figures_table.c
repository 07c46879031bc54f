/* figures_table.c -- `attn figures`: the table's chart, every run's test accuracy from the
 * committed weights (exact mode), one point per seed. */
#include "figures_cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the table
 * ------------------------------------------------------------------------------------ */

/* Every run's accuracy as a point: x = test set, one colour per model (models side by side
 * within a test set, seeds beside each other), and the 50 % of guessing. */
typedef struct table_ctx {
    int n_models;
    const char *names[CLI_MAX_ARCH];
    int n[CLI_MAX_ARCH];                                  /* points of model m */
    double x[CLI_MAX_ARCH][2 * 3 * ATTN_N_TEST_SETS * 4]; /* a NaN between points: no line */
    double y[CLI_MAX_ARCH][2 * 3 * ATTN_N_TEST_SETS * 4];
} table_ctx;

static attn_status table_chart(const void *ctx, const char *path, attn_error *err) {
    const table_ctx *t = ctx;
    static const char *const sets[] = {"plain", "distractor", "fill4", "fill8"};
    attn_plot_series s[CLI_MAX_ARCH + 1];
    for (int m = 0; m < t->n_models; m++)
        s[m] = (attn_plot_series){t->names[m], t->n[m], t->x[m], t->y[m], .points = true};
    static const double chance_x[2] = {-0.5, 3.5}, chance_y[2] = {50, 50};
    s[t->n_models] = (attn_plot_series){"guessing (50 %)", 2, chance_x, chance_y, .dashed = true};
    const attn_plot p = {.title = "Test accuracy of every run (committed weights, one point per "
                                  "seed)",
                         .xlabel = "test set (1,000 sentences each)",
                         .ylabel = "accuracy (%)",
                         .y_min = 40,
                         .y_max = 102,
                         .n_series = t->n_models + 1,
                         .series = s,
                         .n_x_labels = 4,
                         .x_labels = sets};
    return attn_plot_lines(&p, path, err);
}

/* The chart's points of runs[0..n) (models in the table's order of want). */
static void table_points(table_ctx *t, const cli_run_result *runs, int n,
                         const bool want[CLI_MAX_ARCH]) {
    static const attn_arch order[] = {ATTN_ARCH_RNN, ATTN_ARCH_GRU, ATTN_ARCH_LSTM,
                                      ATTN_ARCH_TRANSFORMER};
    static const char *const titles[] = {"RNN", "LSTM", "Transformer", "GRU"};
    t->n_models = 0;
    for (int k = 0; k < CLI_MAX_ARCH; k++)
        if (want[order[k]]) t->names[t->n_models++] = titles[order[k]];
    for (int m = 0, k = 0; k < CLI_MAX_ARCH; k++) {
        if (!want[order[k]]) continue;
        t->n[m] = 0;
        for (int set = 0; set < ATTN_N_TEST_SETS; set++)
            for (int i = 0, seed = 0; i < n; i++) {
                if (runs[i].arch != order[k] || !runs[i].ok || seed >= 3) continue;
                const double centre = set + 0.22 * (m - (t->n_models - 1) / 2.0);
                t->x[m][t->n[m]] = centre + 0.05 * (seed++ - 1);
                t->y[m][t->n[m]++] = 100.0 * runs[i].acc[set];
                t->x[m][t->n[m]] = NAN; /* a gap: points, not a line */
                t->y[m][t->n[m]++] = NAN;
            }
        m++;
    }
}

int cli_figures_table(figs *f) {
    bool want[CLI_MAX_ARCH];
    int rc = cli_parse_models("figures", f->models, f->wdir, want);
    if (rc >= 0) return rc;
    cli_run_result runs[CLI_MAX_ARCH * 3];
    int n = 0;
    for (int a = 0; a < CLI_MAX_ARCH; a++)
        for (int s = 0; s < 3 && want[a]; s++)
            runs[n++] = (cli_run_result){.arch = (attn_arch)a, .seed = s + 1};
    const cli_run_settings rs = {.dir = f->wdir, .batch = 1, .workers = cli_n_cores()};
    if (cli_runs_execute("figures", &rs, runs, n) != 0) return CLI_ERROR;
    char path[4096];
    cli_figures_path(path, sizeof path, f, "table", "md");
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem) return cli_runtime_error("figures", "out of memory");
    cli_print_results_table(mem, runs, n);
    fclose(mem);
    const attn_status st = attn_write_file_atomic(path, text, len, &f->err);
    free(text);
    if (st != ATTN_OK) return cli_fail("figures", &f->err);
    f->gru = want[ATTN_ARCH_GRU];
    table_ctx *t = calloc(1, sizeof *t);
    if (!t) return cli_runtime_error("figures", "out of memory");
    table_points(t, runs, n, want);
    fprintf(f->index, "## The table\n\n[table.md](table.md): accuracy range over seeds 1-3 of "
                      "the committed weights on the four 1,000-sentence test sets (exact mode), as "
                      "`attn eval --table` prints it.\n\n");
    rc = cli_figures_chart(
        f, "table", "Accuracy per test set",
        "Every run, one point per seed: the RNN stays at guessing (the dashed 50 % line); "
        "the LSTM and the Transformer learn the task.",
        table_chart, t);
    free(t);
    return rc;
}

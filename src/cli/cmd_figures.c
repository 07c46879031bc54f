/* cmd_figures.c -- `attn figures`: every figure of the write-up from the committed weights in
 * one go: the table, s1 gradient versus distance, s2 calculator output, s3 and s4 lessons, s7
 * [CLS] attention maps and probability-after-each-word curves for the example sentences and
 * the observations measured on the test sets, s8 cost chart; PNG and SVG, plus index.md. */
#include "attn_lab.h"
#include "attn_plot.h"
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char about[] =
    "Draws every figure of the write-up from the weights in DIR (the committed weights/ by\n"
    "default) into OUT (docs/figures): each chart as PNG and SVG, text outputs as .md, and\n"
    "index.md, which shows them in order with one line of explanation each.";

static const char notes[] =
    "Needs gnuplot. Runs the table's evaluation (9 runs, exact mode), the section 1 experiment\n"
    "(untrained and trained models, 100 sentences of 60 words), `attn attend --shuffle`,\n"
    "`attn lesson scaling|positions`, attn_explain of the example sentences with seed 1 of\n"
    "each model, and the section 7 observations on the plain, distractor and fill8 test sets of\n"
    "seed 1 (300 sentences each, seeds 1-3 of the models).";

/* The example sentences of s7: plain, with negation (the write-up's s2 sentence), the
 * write-up's mixed example (messy decides, the distractor's good must be ignored), long with
 * fillers. */
typedef struct example {
    const char *stem, *what, *sentence;
} example;
static const example examples[] = {
    {"plain", "plain", "the lecture was very helpful"},
    {"negation", "with negation", "the food was not good"},
    {"distractor", "with a distractor", "the lecture was messy although the food was good"},
    {"fillers", "long, with fillers",
     "honestly during the winter semester last year the professor was not very clear according "
     "to my friends at least for me as far as i know"},
};
#define N_EXAMPLES (int)(sizeof examples / sizeof examples[0])
/* the section sign, for the Markdown headings */
#define SECT  "\xc2\xa7"
#define OBS_N 300 /* sentences per test set for the observations (--quick: 30) */

typedef struct figs {
    const char *wdir, *out;
    const char *models; /* --models LIST, NULL: the three and the GRU where its weights are */
    bool gru;           /* the GRU is one of them: its probability curves beside the RNN's */
    int n_obs;          /* sentences per test set for the observations */
    int n_sal;          /* sentences per s1 curve */
    FILE *index;        /* index.md, being written (a temporary name) */
    /* --decoder-weights (NULL: wdir), --quick, --decoder-only */
    const char *s2s_wdir;
    bool quick, decoder_only;
    attn_error err;
} figs;

/* ---- helpers ------------------------------------------------------------------------------------
 */

static void path_of(char *buf, size_t n, const figs *f, const char *stem, const char *ext) {
    snprintf(buf, n, "%s/%s.%s", f->out, stem, ext);
}

typedef attn_status (*chart_fn)(const void *ctx, const char *path, attn_error *err);

/* stem.png and stem.svg, and a line in index.md: a heading, the picture, the explanation. */
static int chart(figs *f, const char *stem, const char *heading, const char *line, chart_fn fn,
                 const void *ctx) {
    static const char *const ext[] = {"png", "svg"};
    for (int i = 0; i < 2; i++) {
        char path[4096];
        path_of(path, sizeof path, f, stem, ext[i]);
        if (fn(ctx, path, &f->err) != ATTN_OK) return cli_fail("figures", &f->err);
    }
    fprintf(f->index, "### %s\n\n![%s](%s.png)\n\n%s ([SVG](%s.svg))\n\n", heading, heading, stem,
            line, stem);
    return CLI_OK;
}

/* What a command would print, between Markdown code fences, into OUT/name.md (written
 * atomically): report(out, ctx) writes it. */
typedef int (*report_fn)(FILE *out, const void *ctx);
static int text_file(figs *f, const char *name, report_fn report, const void *ctx) {
    char path[4096];
    path_of(path, sizeof path, f, name, "md");
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out) return cli_runtime_error("figures", "out of memory");
    fputs("```\n", out);
    int rc = report(out, ctx);
    fputs("```\n", out);
    if (fclose(out) != 0 && rc == CLI_OK) rc = cli_runtime_error("figures", "out of memory");
    if (rc == CLI_OK && attn_write_file_atomic(path, text, len, &f->err) != ATTN_OK)
        rc = cli_fail("figures", &f->err);
    free(text);
    return rc;
}

static int attend_report(FILE *out, const void *ctx) {
    (void)ctx;
    return cli_attend_report(out, "the lecture was not good", NULL, true, false);
}

typedef struct lesson_ctx {
    const char *lesson, *out_dir, *weights;
} lesson_ctx;
static int lesson_report(FILE *out, const void *ctx) {
    const lesson_ctx *l = ctx;
    return cli_lesson_report(out, l->lesson, false, l->out_dir, l->weights, 1);
}

static int load(figs *f, const char *model, int seed, attn_model **m) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-seed%d.json", f->wdir, model, seed);
    return attn_weights_load_json(path, m, &f->err) == ATTN_OK ? CLI_OK
                                                               : cli_fail("figures", &f->err);
}

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

static int table(figs *f) {
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
    path_of(path, sizeof path, f, "table", "md");
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
    rc = chart(f, "table", "Accuracy per test set",
               "Every run, one point per seed: the RNN stays at guessing (the dashed 50 % line); "
               "the LSTM and the Transformer learn the task.",
               table_chart, t);
    free(t);
    return rc;
}

/* ---- s1
 * ------------------------------------------------------------------------------------------ */

typedef struct sal_ctx {
    const attn_saliency_curve *c[3];
    const char *names[3];
    const char *title;
} sal_ctx;

static attn_status sal_chart(const void *ctx, const char *path, attn_error *err) {
    const sal_ctx *s = ctx;
    return attn_saliency_plot(s->c, s->names, 3, s->title, path, err);
}

static int saliency(figs *f, bool trained) {
    static const char *const models[] = {"rnn", "lstm", "transformer"};
    attn_saliency_curve *c[3] = {0};
    sal_ctx sc = {.title = trained ? "Gradient vs distance, trained models (seed 1)"
                                   : "Gradient vs distance before training (seed 1)"};
    const attn_saliency_opts o = {.T = 60, .n = f->n_sal, .seed = 1};
    int rc = CLI_OK;
    for (int i = 0; rc == CLI_OK && i < 3; i++) {
        attn_model *m = NULL;
        if (trained) {
            rc = load(f, models[i], 1, &m);
        } else {
            const attn_model_config cfg = attn_model_config_default((attn_arch)i);
            if (attn_model_create(&cfg, 1, &m, &f->err) != ATTN_OK)
                rc = cli_fail("figures", &f->err);
        }
        if (rc == CLI_OK && attn_saliency_curve_compute(m, &o, &c[i], &f->err) != ATTN_OK)
            rc = cli_fail("figures", &f->err);
        attn_model_free(m);
        sc.c[i] = c[i];
        sc.names[i] = models[i];
    }
    if (rc == CLI_OK && !trained) {
        fprintf(f->index, "## " SECT "1 Gradient versus distance\n\n");
        rc = chart(f, "s1-saliency", "Before training",
                   "|d logit / d x| of the word k positions before the last, relative to the "
                   "last word's (median and 10-90 % band over 100 random 60-word sentences, "
                   "`attn saliency --model rnn,lstm,transformer`).",
                   sal_chart, &sc);
        if (rc == CLI_OK)
            fprintf(f->index,
                    "At 40 words back the median ratio is %.1e (RNN), %.1e (LSTM) and %.2f "
                    "(Transformer).\n\n",
                    c[0]->median[40], c[1]->median[40], c[2]->median[40]);
    } else if (rc == CLI_OK) {
        rc = chart(f, "s1-saliency-trained", "After training",
                   "The same for the committed seed-1 weights (`attn saliency --weights ...`).",
                   sal_chart, &sc);
        if (rc == CLI_OK)
            fprintf(f->index, "At 40 words back: %.1e (RNN), %.1e (LSTM), %.2f (Transformer).\n\n",
                    c[0]->median[40], c[1]->median[40], c[2]->median[40]);
    }
    for (int i = 0; i < 3; i++) attn_saliency_curve_free(c[i]);
    return rc;
}

/* ---- s2, s3, s4
 * ------------------------------------------------------------------------------------ */

static int lessons(figs *f) {
    int rc = text_file(f, "s2-attend", attend_report, NULL);
    if (rc != CLI_OK) return rc;
    fprintf(f->index,
            "## " SECT "2 The attention calculator\n\n[s2-attend.md](s2-attend.md): `attn "
            "attend --shuffle`, every step of one head of self-attention on made-up "
            "4-number embeddings, with shapes, and the permutation equivariance "
            "measured.\n\n");
    const lesson_ctx scaling = {"scaling", f->out, NULL};
    if ((rc = text_file(f, "s3-scaling", lesson_report, &scaling)) != CLI_OK) return rc;
    fprintf(f->index, "## " SECT "3 Why divide by sqrt(d_k)\n\n![scaling](lesson-scaling.png)\n\n"
                      "Spread of q.k, largest softmax probability and mean p(1-p) against d_k, "
                      "with (solid) and without (dashed) the scaling; table in "
                      "[s3-scaling.md](s3-scaling.md) ([SVG](lesson-scaling.svg)).\n\n");
    char weights[4200];
    snprintf(weights, sizeof weights, "%s/transformer-seed1.json", f->wdir);
    const lesson_ctx positions = {"positions", f->out, weights};
    if ((rc = text_file(f, "s4-positions", lesson_report, &positions)) != CLI_OK) return rc;
    fprintf(f->index,
            "## " SECT
            "4 Positions\n\n![sinusoid table](lesson-positions-table.png)\n\nThe sinusoid "
            "table, 81 positions x 32 dimensions (attn's Transformer starts its learned "
            "positions at twice this table) ([SVG](lesson-positions-table.svg)).\n\n"
            "![dot products](lesson-positions-dots.png)\n\nPE(p).PE(p+d) depends only on the "
            "offset d ([SVG](lesson-positions-dots.svg)); [s4-positions.md](s4-positions.md): "
            "the trained Transformer (seed 1) under permuted words with and without its "
            "positions.\n\n");
    return CLI_OK;
}

/* ---- s7
 * ------------------------------------------------------------------------------------------ */

typedef struct cls_ctx {
    const attn_explanation *e;
    const int *ids;
    char title[256];
} cls_ctx;

static attn_status cls_chart(const void *ctx, const char *path, attn_error *err) {
    const cls_ctx *c = ctx;
    return attn_explain_plot_cls(c->e, c->ids, c->title, path, err);
}

typedef struct prefix_ctx {
    const attn_explanation *e[3];
    const char *names[3];
    int n; /* RNN and LSTM, and the GRU with f->gru */
    const int *ids;
    char title[256];
} prefix_ctx;

static attn_status prefix_chart(const void *ctx, const char *path, attn_error *err) {
    const prefix_ctx *c = ctx;
    return attn_explain_plot_prefixes(c->e, c->names, c->n, c->ids, c->title, path, err);
}

static int example_figures(figs *f, attn_model *const *m, const example *x) {
    int ids[ATTN_MAX_WORDS], n;
    attn_explanation *e[4] = {0}; /* rnn, lstm, transformer, gru (with f->gru) */
    if (attn_tokenize(x->sentence, ids, ATTN_MAX_WORDS, &n, &f->err) != ATTN_OK)
        return cli_fail("figures", &f->err);
    int rc = CLI_OK;
    for (int i = 0; rc == CLI_OK && i < (f->gru ? 4 : 3); i++)
        if (attn_explain(m[i], ids, n, NULL, &e[i], &f->err) != ATTN_OK)
            rc = cli_fail("figures", &f->err);
    char stem[64], heading[128];
    cls_ctx cc = {.e = e[2], .ids = ids};
    snprintf(cc.title, sizeof cc.title,
             "[CLS] attention, %s (Transformer seed 1, P(positive) = %.2g)", x->what,
             e[2] ? e[2]->probability : 0.0);
    snprintf(stem, sizeof stem, "s7-attention-%s", x->stem);
    snprintf(heading, sizeof heading, "[CLS] attention: %s", x->what);
    char line[512];
    snprintf(line, sizeof line,
             "\"%s\": the weight [CLS] gives each token, per layer and head "
             "and each layer's mean (`attn explain --weights "
             "weights/transformer-seed1.json`).",
             x->sentence);
    if (rc == CLI_OK) rc = chart(f, stem, heading, line, cls_chart, &cc);
    prefix_ctx pc = {.e = {e[0], e[1], e[3]}, .names = {"RNN", "LSTM", "GRU"}, .ids = ids};
    pc.n = f->gru ? 3 : 2;
    snprintf(pc.title, sizeof pc.title, "Probability after each word, %s (seed 1)", x->what);
    snprintf(stem, sizeof stem, "s7-prefix-%s", x->stem);
    snprintf(heading, sizeof heading, "Probability after each word: %s", x->what);
    snprintf(line, sizeof line,
             "What the RNN and the LSTM%s would answer after each word of \"%s\" "
             "(`attn explain` of the recurrent models).",
             f->gru ? " (and the GRU)" : "", x->sentence);
    if (rc == CLI_OK) rc = chart(f, stem, heading, line, prefix_chart, &pc);
    for (int i = 0; i < 4; i++) attn_explanation_free(e[i]);
    return rc;
}

static int examples_all(figs *f) {
    static const char *const models[] = {"rnn", "lstm", "transformer", "gru"};
    attn_model *m[4] = {0};
    int rc = CLI_OK;
    for (int i = 0; rc == CLI_OK && i < (f->gru ? 4 : 3); i++) rc = load(f, models[i], 1, &m[i]);
    if (rc == CLI_OK) fprintf(f->index, "## " SECT "7 What the models look at\n\n");
    for (int i = 0; rc == CLI_OK && i < N_EXAMPLES; i++) rc = example_figures(f, m, &examples[i]);
    for (int i = 0; i < 4; i++) attn_model_free(m[i]);
    return rc;
}

/* The observations table, OUT/s7-observations.md. */
static int observations(figs *f) {
    static const attn_set sets[] = {ATTN_SET_PLAIN, ATTN_SET_DISTRACTOR, ATTN_SET_FILL8};
    char *text = NULL;
    size_t len = 0;
    FILE *o = open_memstream(&text, &len);
    if (!o) return cli_runtime_error("figures", "out of memory");
    int rc = CLI_OK;
    fprintf(o,
            "# " SECT "7 observations, measured (%d sentences of each test set of seed 1)\n\n"
            "Transformer, [CLS]'s attention row (query 0) per layer (0 = the first). The "
            "deciding word is the negation if the sentence has one, else the first adjective. "
            "\"mean\" is the heads' average row.\n\n"
            "| seed | set | layer | on the deciding word (mean) | mean row >= 90 %% on it | "
            "some head >= 90 %% on it | every head >= 90 %% on the negation or the adjective | "
            "distractor adjective: mean, max | largest weight of the mean row | entropy "
            "(nats) |\n|---|---|---|---|---|---|---|---|---|---|\n",
            OBS_N);
    for (int seed = 1; rc == CLI_OK && seed <= 3; seed++) {
        attn_model *m = NULL;
        rc = load(f, "transformer", seed, &m);
        for (int s = 0; rc == CLI_OK && s < 2; s++) {
            attn_dataset *d = NULL;
            attn_attention_obs a;
            if (attn_data_generate(sets[s], f->n_obs, 1, &d, &f->err) != ATTN_OK ||
                attn_observe_attention(m, d, &a, &f->err) != ATTN_OK)
                rc = cli_fail("figures", &f->err);
            for (int l = 0; rc == CLI_OK && l < a.n_layers; l++) {
                char distr[64] = "-";
                if (a.n_distractor)
                    snprintf(distr, sizeof distr, "%.1f %%, %.1f %%", 100 * a.distractor_mean[l],
                             100 * a.distractor_max[l]);
                fprintf(
                    o,
                    "| %d | %s | %d | %.1f %% | %.1f %% | %.1f %% | %.1f %% | %s | %.2f | %.2f |\n",
                    seed, attn_set_name(sets[s]), l, 100 * a.deciding_mean[l],
                    100 * a.deciding_avg90[l], 100 * a.deciding_head90[l], 100 * a.core_head90[l],
                    distr, a.mean_max[l], a.mean_entropy[l]);
            }
            attn_dataset_free(d);
        }
        attn_model_free(m);
    }
    fprintf(o, "\nRNN and LSTM, probability after each word:\n\n| model | seed | set | mean "
               "|step| at deciding words | mean |step| at fillers after the adjective | mean "
               "|p - 0.5| | prefixes with p in [0.4, 0.6] |\n|---|---|---|---|---|---|---|\n");
    static const char *const rec[] = {"rnn", "lstm"};
    for (int r = 0; rc == CLI_OK && r < 2; r++)
        for (int seed = 1; rc == CLI_OK && seed <= 3; seed++) {
            attn_model *m = NULL;
            rc = load(f, rec[r], seed, &m);
            for (int s = 0; rc == CLI_OK && s < 3; s += 2) {
                attn_dataset *d = NULL;
                attn_prefix_obs p;
                if (attn_data_generate(sets[s], f->n_obs, 1, &d, &f->err) != ATTN_OK ||
                    attn_observe_prefixes(m, d, &p, &f->err) != ATTN_OK)
                    rc = cli_fail("figures", &f->err);
                char filler[32] = "- (none)";
                if (rc == CLI_OK && !isnan(p.mean_step_filler))
                    snprintf(filler, sizeof filler, "%.3f", p.mean_step_filler);
                if (rc == CLI_OK)
                    fprintf(o, "| %s | %d | %s | %.3f | %s | %.3f | %.1f %% |\n", rec[r], seed,
                            attn_set_name(sets[s]), p.mean_step_deciding, filler, p.mean_dist_half,
                            100 * p.frac_within_10);
                attn_dataset_free(d);
            }
            attn_model_free(m);
        }
    fclose(o);
    char path[4096];
    path_of(path, sizeof path, f, "s7-observations", "md");
    if (rc == CLI_OK && attn_write_file_atomic(path, text, len, &f->err) != ATTN_OK)
        rc = cli_fail("figures", &f->err);
    free(text);
    if (rc == CLI_OK)
        fprintf(f->index, "### The observations, measured\n\n[s7-observations.md]"
                          "(s7-observations.md): where [CLS] attends on the plain and distractor "
                          "test sets, and how the recurrent models' probability moves, for seeds "
                          "1-3.\n\n");
    return rc;
}

/* s6, the decoder: src/lab/figures_decoder.c draws them and writes their index section. */
static int decoder(figs *f) {
    if (!f->s2s_wdir && !attn_figures_decoder_available(f->wdir)) { /* not asked for: a note */
        fprintf(stderr, "attn figures: no seq2seq weights in %s, the s6 figures left out\n",
                f->wdir);
        fprintf(f->index, "## " SECT "6 The decoder\n\nNot drawn: no seq2seq weights in %s.\n\n",
                f->wdir);
        return CLI_OK;
    }
    char *md = NULL;
    if (attn_figures_decoder(f->s2s_wdir ? f->s2s_wdir : f->wdir, f->out, f->quick, &md, &f->err) !=
        ATTN_OK)
        return cli_fail("figures", &f->err);
    fputs(md, f->index);
    free(md);
    return CLI_OK;
}

/* ---- s8
 * ------------------------------------------------------------------------------------------ */

#define VIT_D  768
#define N_COST 64

/* Shares of a ViT-Base layer's multiply-adds (d = 768): projections 4nd^2, MLP 8nd^2 and the
 * n x n products 2n^2d, of 12nd^2 + 2n^2d (bench/flops.c counts the same, measured). */
static attn_status cost_chart(const void *ctx, const char *path, attn_error *err) {
    (void)ctx;
    double n[N_COST], proj[N_COST], mlp[N_COST], nn[N_COST];
    for (int i = 0; i < N_COST; i++) {
        n[i] = pow(2.0, 4.0 + 12.0 * i / (N_COST - 1)); /* 16 .. 65536 tokens */
        const double d = VIT_D, total = 12.0 * n[i] * d * d + 2.0 * n[i] * n[i] * d;
        proj[i] = 100.0 * 4.0 * n[i] * d * d / total;
        mlp[i] = 100.0 * 8.0 * n[i] * d * d / total;
        nn[i] = 100.0 * 2.0 * n[i] * n[i] * d / total;
    }
    double mx[2] = {197, 4097}, my[2];
    for (int i = 0; i < 2; i++) my[i] = 100.0 * mx[i] / (6.0 * VIT_D + mx[i]);
    const attn_plot_series s[5] = {
        {.title = "n x n products (Q.K^T, P.V): 2n^2d", .n = N_COST, .x = n, .y = nn},
        {.title = "MLP: 8nd^2", .n = N_COST, .x = n, .y = mlp},
        {.title = "projections Q, K, V, out: 4nd^2", .n = N_COST, .x = n, .y = proj},
        {.title = "224 px image (n = 197): 4.1 %", .n = 1, .x = mx, .y = my, .points = true},
        {.title = "1024 px image (n = 4097): 47.1 %",
         .n = 1,
         .x = mx + 1,
         .y = my + 1,
         .points = true},
    };
    const attn_plot p = {.title = "Where a ViT-Base layer's multiply-adds go (d = 768)",
                         .xlabel = "tokens n (log scale)",
                         .ylabel = "share of the layer's multiply-adds (%)",
                         .log_x = true,
                         .key = "outside right top vertical width 1",
                         .y_min = 0,
                         .y_max = 100,
                         .width = 1250,
                         .n_series = 5,
                         .series = s};
    return attn_plot_lines(&p, path, err);
}

/* ---- the command
 * ---------------------------------------------------------------------------------- */

static int figures_all(figs *f) {
    fprintf(f->index,
            "# Figures of the write-up, drawn by attn\n\nMade by `attn figures --weights "
            "%s` from the committed weights; every chart also as SVG.\n\n",
            f->wdir);
    if (f->decoder_only) return decoder(f);
    int rc = table(f);
    if (rc == CLI_OK) rc = saliency(f, false);
    if (rc == CLI_OK) rc = saliency(f, true);
    if (rc == CLI_OK) rc = lessons(f);
    if (rc == CLI_OK) rc = decoder(f);
    if (rc == CLI_OK) rc = examples_all(f);
    if (rc == CLI_OK) rc = observations(f);
    if (rc == CLI_OK) fprintf(f->index, "## " SECT "8 Cost\n\n");
    if (rc == CLI_OK)
        rc = chart(f, "s8-cost", "Where the multiply-adds go",
                   "The n x n attention products' share of a ViT-Base layer grows as n / (6d + n): "
                   "4.1 % at 224 px, 47.1 % at 1024 px (`attn flops --vit` counts them through "
                   "attn_sgemm; `build/bench/flops` times them).",
                   cost_chart, NULL);
    return rc;
}

/* What a run killed half-way leaves in DIR: index.md.partial, NAME.md.capture and the plot
 * driver's NAME.png.<stem>.tmpXXXXXX. Removed under the lock, so no other run is using them. */
static bool is_litter(const char *name) {
    const size_t n = strlen(name);
    if (n > 8 && strcmp(name + n - 8, ".partial") == 0) return true;
    if (n > 8 && strcmp(name + n - 8, ".capture") == 0) return true;
    return n > 10 && strncmp(name + n - 10, ".tmp", 4) == 0;
}

static void remove_litter(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    char path[4200];
    for (struct dirent *e; (e = readdir(d));) {
        if (!is_litter(e->d_name)) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISREG(st.st_mode)) remove(path);
    }
    closedir(d);
}

int cmd_figures(int argc, char **argv) {
    figs f = {.wdir = "weights", .out = "docs/figures"};
    bool quick = false;
    cli_opt opts[] = {
        {"--weights", "DIR", CLI_OPT_STR, &f.wdir,
         .help = "DIR/<model>-seed<S>.json for rnn, lstm, transformer, seeds 1-3"},
        {"--out", "DIR", CLI_OPT_STR, &f.out, .help = "where the figures go (created)"},
        {"--models", "LIST", CLI_OPT_STR, &f.models, .def = "rnn,lstm,transformer (+gru if there)",
         .help = "the table's models: comma-separated rnn, gru, lstm, transformer;\n"
                 "by default the GRU too when DIR/gru-seed1.json exists"},
        {"--quick", NULL, CLI_OPT_FLAG, &quick,
         .help = "30 sentences per observation set, 10 per s1 curve (a smoke run)"},
        {"--decoder-weights", "DIR", CLI_OPT_STR, &f.s2s_wdir, .def = "the --weights DIR",
         .help = "the s6 figures' seq2seq weights (seq2seq-*-seed<S>.json, compose-...);\n"
                 "without it the s6 figures are left out when DIR has none"},
        {"--decoder-only", NULL, CLI_OPT_FLAG, &f.decoder_only, .help = "only the s6 figures"},
    };
    cli_spec spec = {"figures",
                     "[--weights DIR] [--out DIR] [--models LIST] [--quick]\n"
                     "[--decoder-weights DIR] [--decoder-only]",
                     about,
                     NULL,
                     notes,
                     opts,
                     (int)(sizeof opts / sizeof opts[0])};
    int rc = cli_parse(&spec, argc, argv, NULL, NULL);
    if (rc >= 0) return rc;
    f.quick = quick;
    f.n_obs = quick ? 30 : OBS_N;
    f.n_sal = quick ? 10 : 100;
    if (!attn_plot_available())
        return cli_runtime_error("figures", "gnuplot is not on PATH (Debian: gnuplot-nox)");
    if (cli_make_dir("figures", "--out", f.out) != CLI_OK) return CLI_ERROR;
    char index[4096], tmp[4200];
    path_of(index, sizeof index, &f, "index", "md");
    if (cli_check_dest("figures", "--out", index) != CLI_OK) return CLI_ERROR;
    if ((rc = cli_lock_output("figures", "--out", f.out)) != CLI_OK) return rc;
    remove_litter(f.out);
    snprintf(tmp, sizeof tmp, "%s.partial", index);
    f.index = fopen(tmp, "w");
    if (!f.index) return cli_runtime_error("figures", "%s: %s", tmp, strerror(errno));
    attn_set_num_threads(1);
    const double t0 = cli_now_s();
    rc = figures_all(&f);
    const bool bad = fclose(f.index) != 0;
    if (rc == CLI_OK && (bad || rename(tmp, index) != 0))
        rc = cli_runtime_error("figures", "%s: %s", index, strerror(errno));
    if (rc != CLI_OK) remove(tmp);
    if (rc == CLI_OK)
        fprintf(stderr, "attn figures: %s written in %.1f s\n", index, cli_now_s() - t0);
    return rc;
}

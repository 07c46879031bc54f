/* cmd_figures.c -- `attn figures`: every figure of the write-up from the committed weights in
 * one go: the table, s1 gradient versus distance, s2 calculator output, s3 and s4 lessons, s7
 * [CLS] attention maps and probability-after-each-word curves for the example sentences and
 * the observations measured on the test sets, s8 cost chart; PNG and SVG, plus index.md. */
#include "attn_attend.h"
#include "figures_cli.h"

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

/* ---- helpers ------------------------------------------------------------------------------------
 */

/* What a command would print, between Markdown code fences, into OUT/name.md (written
 * atomically): report(out, ctx) writes it. */
typedef attn_status (*report_fn)(FILE *out, const void *ctx, attn_error *err);
static int text_file(figs *f, const char *name, report_fn report, const void *ctx) {
    char path[4096];
    cli_figures_path(path, sizeof path, f, name, "md");
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out) return cli_runtime_error("figures", "out of memory");
    fputs("```\n", out);
    int rc = report(out, ctx, &f->err) == ATTN_OK ? CLI_OK : cli_fail("figures", &f->err);
    fputs("```\n", out);
    if (fclose(out) != 0 && rc == CLI_OK) rc = cli_runtime_error("figures", "out of memory");
    if (rc == CLI_OK && attn_write_file_atomic(path, text, len, &f->err) != ATTN_OK)
        rc = cli_fail("figures", &f->err);
    free(text);
    return rc;
}

static attn_status attend_report(FILE *out, const void *ctx, attn_error *err) {
    (void)ctx;
    const attn_attend_opts o = {.sentence = "the lecture was not good", .shuffle = true};
    return attn_attend_write(out, &o, err);
}

static attn_status lesson_report(FILE *out, const void *ctx, attn_error *err) {
    return attn_lesson_write(out, ctx, err);
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
            rc = cli_figures_load(f, models[i], 1, &m);
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
        rc = cli_figures_chart(
            f, "s1-saliency", "Before training",
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
        rc = cli_figures_chart(
            f, "s1-saliency-trained", "After training",
            "The same for the committed seed-1 weights (`attn saliency --weights ...`).", sal_chart,
            &sc);
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
    const attn_lesson_opts scaling = {ATTN_LESSON_SCALING, false, NULL, 1, f->out};
    if ((rc = text_file(f, "s3-scaling", lesson_report, &scaling)) != CLI_OK) return rc;
    fprintf(f->index, "## " SECT "3 Why divide by sqrt(d_k)\n\n![scaling](lesson-scaling.png)\n\n"
                      "Spread of q.k, largest softmax probability and mean p(1-p) against d_k, "
                      "with (solid) and without (dashed) the scaling; table in "
                      "[s3-scaling.md](s3-scaling.md) ([SVG](lesson-scaling.svg)).\n\n");
    char weights[4200];
    snprintf(weights, sizeof weights, "%s/transformer-seed1.json", f->wdir);
    const attn_lesson_opts positions = {ATTN_LESSON_POSITIONS, false, weights, 1, f->out};
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

/* "attn figures: NAME (12.3 s)" on stderr before each part, so 18 s are not silent. */
static void part(const char *name, double t0) {
    fprintf(stderr, "attn figures: %s (%.1f s)\n", name, attn_seconds() - t0);
    fflush(stderr);
}

static int figures_all(figs *f) {
    const double t0 = attn_seconds();
    fprintf(f->index,
            "# Figures of the write-up, drawn by attn\n\nMade by `attn figures --weights "
            "%s` from the committed weights; every chart also as SVG.\n\n",
            f->wdir);
    if (f->decoder_only) return part("the decoder figures", t0), decoder(f);
    part("the table", t0);
    int rc = cli_figures_table(f);
    if (rc == CLI_OK) part("saliency", t0), rc = saliency(f, false);
    if (rc == CLI_OK) rc = saliency(f, true);
    if (rc == CLI_OK) part("the lessons", t0), rc = lessons(f);
    if (rc == CLI_OK) part("the decoder figures", t0), rc = decoder(f);
    if (rc == CLI_OK) part("the examples", t0), rc = cli_figures_examples(f);
    if (rc == CLI_OK) part("the observations", t0), rc = cli_figures_observations(f);
    if (rc == CLI_OK) fprintf(f->index, "## " SECT "8 Cost\n\n");
    if (rc == CLI_OK)
        rc = cli_figures_chart(
            f, "s8-cost", "Where the multiply-adds go",
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
    cli_spec spec = CLI_SPEC("figures",
                             "[--weights DIR] [--out DIR] [--models LIST] [--quick]\n"
                             "[--decoder-weights DIR] [--decoder-only]",
                             about, NULL, notes, opts);
    int rc = cli_parse(&spec, argc, argv, NULL, NULL);
    if (rc >= 0) return rc;
    f.quick = quick;
    f.n_obs = quick ? 30 : OBS_N;
    f.n_sal = quick ? 10 : 100;
    if (!attn_plot_available())
        return cli_runtime_error("figures", "gnuplot is not on PATH (Debian: gnuplot-nox)");
    if (cli_make_dir("figures", "--out", f.out) != CLI_OK) return CLI_ERROR;
    char index[4096], tmp[4200];
    cli_figures_path(index, sizeof index, &f, "index", "md");
    if (cli_check_dest("figures", "--out", index) != CLI_OK) return CLI_ERROR;
    if ((rc = cli_lock_output("figures", "--out", f.out)) != CLI_OK) return rc;
    remove_litter(f.out);
    snprintf(tmp, sizeof tmp, "%s.partial", index);
    f.index = fopen(tmp, "w");
    if (!f.index) return cli_runtime_error("figures", "%s: %s", tmp, strerror(errno));
    attn_set_num_threads(1);
    const double t0 = attn_seconds();
    rc = figures_all(&f);
    const bool bad = fclose(f.index) != 0;
    if (rc == CLI_OK && (bad || rename(tmp, index) != 0))
        rc = cli_runtime_error("figures", "%s: %s", index, strerror(errno));
    if (rc != CLI_OK) remove(tmp);
    if (rc == CLI_OK)
        fprintf(stderr, "attn figures: %s written in %.1f s\n", index, attn_seconds() - t0);
    return rc;
}

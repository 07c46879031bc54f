/* figures_observations.c -- `attn figures`, section 7: the [CLS] attention maps and the
 * probability-after-each-word curves of the example sentences, and the observations measured
 * on the test sets. */
#include "figures_cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    /* Markdown, not JSON: the sentence in its quotes is made apart, so that no format string
     * reads as a JSON key to tests/style/check_json_printf.sh */
    char line[512], quoted[256]; /* the longest sentence is 135 bytes */
    snprintf(quoted, sizeof quoted, "\"%s\"", x->sentence);
    snprintf(line, sizeof line,
             "%s: the weight [CLS] gives each token, per layer and head "
             "and each layer's mean (`attn explain --weights "
             "weights/transformer-seed1.json`).",
             quoted);
    if (rc == CLI_OK) rc = cli_figures_chart(f, stem, heading, line, cls_chart, &cc);
    prefix_ctx pc = {.e = {e[0], e[1], e[3]}, .names = {"RNN", "LSTM", "GRU"}, .ids = ids};
    pc.n = f->gru ? 3 : 2;
    snprintf(pc.title, sizeof pc.title, "Probability after each word, %s (seed 1)", x->what);
    snprintf(stem, sizeof stem, "s7-prefix-%s", x->stem);
    snprintf(heading, sizeof heading, "Probability after each word: %s", x->what);
    snprintf(line, sizeof line,
             "What the RNN and the LSTM%s would answer after each word of %s "
             "(`attn explain` of the recurrent models).",
             f->gru ? " (and the GRU)" : "", quoted);
    if (rc == CLI_OK) rc = cli_figures_chart(f, stem, heading, line, prefix_chart, &pc);
    for (int i = 0; i < 4; i++) attn_explanation_free(e[i]);
    return rc;
}

int cli_figures_examples(figs *f) {
    static const char *const models[] = {"rnn", "lstm", "transformer", "gru"};
    attn_model *m[4] = {0};
    int rc = CLI_OK;
    for (int i = 0; rc == CLI_OK && i < (f->gru ? 4 : 3); i++)
        rc = cli_figures_load(f, models[i], 1, &m[i]);
    if (rc == CLI_OK) fprintf(f->index, "## " SECT "7 What the models look at\n\n");
    for (int i = 0; rc == CLI_OK && i < N_EXAMPLES; i++) rc = example_figures(f, m, &examples[i]);
    for (int i = 0; i < 4; i++) attn_model_free(m[i]);
    return rc;
}

/* The observations table, OUT/s7-observations.md. */
int cli_figures_observations(figs *f) {
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
        rc = cli_figures_load(f, "transformer", seed, &m);
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
            rc = cli_figures_load(f, rec[r], seed, &m);
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
    cli_figures_path(path, sizeof path, f, "s7-observations", "md");
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

/* figures_decoder.c -- the write-up's §6 figures for `attn figures` (attn_lab.h,
 * attn_figures_decoder): the decoder's causal mask as a matrix, Bahdanau-style alignment matrices
 * (target x source) of seq2seq-attn and of the Transformer's best-aligning head for a long
 * sentence with fillers and a distractor, exact match against source length for the three
 * translation models (the looking-back experiment's chart), and one compose example per
 * polarity with the probability of each word it writes.
 *
 * Every chart is drawn as PNG and SVG through attn_plot.h; the Markdown that introduces them in
 * index.md is returned to the caller, which writes the index. */
#include "attn_lab.h"
#include "attn_plot.h"
#include "experiments_decoder.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* fillers before and after, the distractor clause "although the food was good" */
#define LONG_SENTENCE                                                                              \
    "honestly during the winter semester the professor was not very clear although the food "      \
    "was good as far as i know"
#define COMPOSE_SUBJECT "lecture"

typedef struct figs6 {
    const char *wdir, *out;
    bool quick;
    FILE *md; /* the index section being written */
    attn_error *err;
} figs6;

typedef attn_status (*draw_fn)(const void *ctx, const char *path, attn_error *err);

/* out/stem.png and out/stem.svg, and the heading, picture and line in the index. */
static attn_status chart2(figs6 *f, const char *stem, const char *heading, const char *line,
                          draw_fn draw, const void *ctx) {
    static const char *const ext[2] = {"png", "svg"};
    for (int i = 0; i < 2; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.%s", f->out, stem, ext[i]);
        attn_status st = draw(ctx, path, f->err);
        if (st != ATTN_OK) return st;
    }
    fprintf(f->md, "### %s\n\n![%s](%s.png)\n\n%s ([SVG](%s.svg))\n\n", heading, heading, stem,
            line, stem);
    return ATTN_OK;
}

static bool have(const figs6 *f, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", f->wdir, name);
    return access(path, R_OK) == 0;
}

static attn_status load(const figs6 *f, const char *name, attn_seq2seq **m) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", f->wdir, name);
    return attn_seq2seq_load_json(path, m, f->err);
}

/* ---- the causal mask and the alignments of one long sentence ------------------------------- */

typedef struct matrix_ctx {
    attn_heatmap h;
    char title[256];
} matrix_ctx;

static attn_status draw_matrix(const void *ctx, const char *path, attn_error *err) {
    return attn_plot_heatmap(&((const matrix_ctx *)ctx)->h, path, err);
}

/* The token a decoder row writes, and the decoder input of each row. */
static const char *tok(int id) {
    const char *t = attn_tgt_vocab_token(id);
    return t ? t : "?";
}

/* z[T, S] = head (layer l, head h; h < 0: the layer's mean) of e's cross-attention. */
static void cross_map(const attn_s2s_explanation *e, int l, int h, double *z) {
    const int T = e->T, S = e->n_src, NH = e->n_heads;
    for (int t = 0; t < T; t++)
        for (int s = 0; s < S; s++) {
            double v = 0.0;
            for (int k = h < 0 ? 0 : h; k < (h < 0 ? NH : h + 1); k++)
                v += e->cross[(((size_t)l * NH + k) * T + t) * S + s];
            z[(size_t)t * S + s] = h < 0 ? v / NH : v;
        }
}

static attn_status alignment_figure(figs6 *f, const char *arch, int layer, int head, const int *src,
                                    int n_src, const char *const *words) {
    attn_seq2seq *m = NULL;
    attn_s2s_explanation *e = NULL;
    const attn_s2s_explain_opts eo = {.no_saliency = true};
    char name[128];
    snprintf(name, sizeof name, "%s-seed1.json", arch);
    attn_status st = load(f, name, &m);
    if (!st) st = attn_seq2seq_explain(m, src, n_src, &eo, &e, f->err);
    if (!st && (!e->cross || layer >= e->n_layers || head >= e->n_heads))
        st = attn_errorf(f->err, ATTN_ERR_VALUE, "figures: %s has no cross-attention map %d/%d",
                         arch, layer, head);
    double *z = st ? NULL : malloc((size_t)e->T * n_src * sizeof *z);
    const char *rows[ATTN_S2S_MAX_TGT + 1];
    if (!st && !z) st = attn_errorf(f->err, ATTN_ERR_NOMEM, "figures: out of memory");
    if (!st) {
        cross_map(e, layer, head, z);
        for (int t = 0; t < e->T; t++) rows[t] = tok(e->chosen[t]);
        const bool tf = e->n_heads > 1 || e->n_layers > 1;
        matrix_ctx c = {.h = {.xlabel = "source words",
                              .ylabel = "word written",
                              .cblabel = "attention",
                              .rows = e->T,
                              .cols = n_src,
                              .z = z,
                              .row_labels = rows,
                              .col_labels = words,
                              .z_min = 0,
                              .z_max = 1,
                              .values = false}};
        if (tf)
            snprintf(c.title, sizeof c.title,
                     "seq2seq-transformer cross-attention, layer %d head %d (its best-aligning "
                     "head), seed 1",
                     layer + 1, head + 1);
        else
            snprintf(c.title, sizeof c.title,
                     "seq2seq-attn additive attention (alignment), seed 1");
        c.h.title = c.title;
        char stem[64], heading[128], line[1024];
        snprintf(stem, sizeof stem, "s6-alignment-%s", tf ? "transformer" : "attn");
        snprintf(heading, sizeof heading, "Alignment: %s", tf ? "the Transformer" : "seq2seq-attn");
        snprintf(line, sizeof line,
                 "For each word %s writes for \"%s\" (rows, [EOS] last), the attention over the "
                 "source words (columns) of the pass that wrote it%s (`attn explain --weights "
                 "%s`).",
                 arch, LONG_SENTENCE,
                 tf ? ": the head that most often looks at the word a target word comes from "
                      "(`attn experiment alignment`)"
                    : "",
                 name);
        st = chart2(f, stem, heading, line, draw_matrix, &c);
    }
    free(z);
    attn_s2s_explanation_free(e);
    attn_seq2seq_free(m);
    return st;
}

/* The decoder's masked self-attention for the long sentence: layer 1, mean of the heads. */
static attn_status mask_figure(figs6 *f, const int *src, int n_src) {
    attn_seq2seq *m = NULL;
    attn_s2s_explanation *e = NULL;
    const attn_s2s_explain_opts eo = {.no_saliency = true};
    attn_status st = load(f, "seq2seq-transformer-seed1.json", &m);
    if (!st) st = attn_seq2seq_explain(m, src, n_src, &eo, &e, f->err);
    if (!st && !e->self)
        st = attn_errorf(f->err, ATTN_ERR_VALUE, "figures: no self-attention maps");
    const int T = st ? 0 : e->T, NH = st ? 0 : e->n_heads;
    double z[(ATTN_S2S_MAX_TGT + 1) * (ATTN_S2S_MAX_TGT + 1)];
    const char *rows[ATTN_S2S_MAX_TGT + 1], *cols[ATTN_S2S_MAX_TGT + 1];
    char row_text[ATTN_S2S_MAX_TGT + 1][48];
    for (int t = 0; !st && t < T; t++) {
        const int in = t == 0 ? ATTN_TGT_BOS : e->chosen[t - 1];
        cols[t] = tok(in);
        snprintf(row_text[t], sizeof row_text[t], "%s (writes %s)", tok(in), tok(e->chosen[t]));
        rows[t] = row_text[t];
        for (int s = 0; s < T; s++) {
            double v = 0.0;
            for (int h = 0; h < NH; h++) v += e->self[((size_t)h * T + t) * T + s];
            z[t * T + s] = v / NH;
        }
    }
    if (!st) {
        matrix_ctx c = {.h = {.xlabel = "decoder input it reads (key)",
                              .ylabel = "decoder row (query)",
                              .cblabel = "attention",
                              .rows = T,
                              .cols = T,
                              .z = z,
                              .row_labels = rows,
                              .col_labels = cols,
                              .z_min = 0,
                              .z_max = 1,
                              .values = true,
                              .width = 260 + 90 * T > 900 ? 260 + 90 * T : 900,
                              .height = 200 + 60 * T}};
        snprintf(c.title, sizeof c.title,
                 "Decoder self-attention, layer 1, mean of %d heads: 0 above the diagonal", NH);
        c.h.title = c.title;
        fprintf(f->md, "## "
                       "\xc2\xa7"
                       "6 The decoder\n\n");
        st = chart2(f, "s6-causal-mask", "The causal mask",
                    "Each decoder row attends to itself and the rows before it: the mask sets "
                    "every score above the diagonal to -inf, so those probabilities are exactly "
                    "0 (seq2seq-transformer seed 1 writing the verdict of the long sentence "
                    "below; `attn experiment causal-mask` checks that the logits before a "
                    "position never move when later words change).",
                    draw_matrix, &c);
    }
    attn_s2s_explanation_free(e);
    attn_seq2seq_free(m);
    return st;
}

/* ---- exact match against source length ------------------------------------------------------ */

typedef struct result_ctx {
    const attn_experiment_result *r;
} result_ctx;

static attn_status draw_looking_back(const void *ctx, const char *path, attn_error *err) {
    return exp_looking_back_plot(((const result_ctx *)ctx)->r, path, err);
}

static int seeds_present(const figs6 *f) {
    static const char *const archs[3] = {"seq2seq-gru", "seq2seq-attn", "seq2seq-transformer"};
    int s = 0;
    for (bool all = true; all && s < 3;) {
        char name[128];
        for (int a = 0; a < 3 && all; a++) {
            snprintf(name, sizeof name, "%s-seed%d.json", archs[a], s + 1);
            all = have(f, name);
        }
        s += all;
    }
    return s;
}

static attn_status length_figure(figs6 *f, int seeds) {
    const attn_experiment_opts o = {.seeds = seeds, .quick = f->quick, .weights_dir = f->wdir};
    attn_experiment_result r;
    memset(&r, 0, sizeof r);
    attn_status st = exp_looking_back_run(&o, &r, f->err);
    if (!st) {
        const result_ctx c = {&r};
        char line[2048];
        snprintf(line, sizeof line,
                 "Exact match of greedy decoding on the four rewrite test sets (%d pairs each), "
                 "binned by source length, seed%s 1%s%.0d (`attn experiment looking-back`, whose "
                 "verdict says: %s -- %s).",
                 f->quick ? 100 : ATTN_TEST_DEFAULT_N, seeds > 1 ? "s" : "", seeds > 1 ? "-" : "",
                 seeds > 1 ? seeds : 0, attn_verdict_name(r.verdict), r.why);
        st = chart2(f, "s6-looking-back", "Exact match against source length", line,
                    draw_looking_back, &c);
    }
    attn_experiment_result_free(&r);
    return st;
}

/* ---- compose: the probability of each word written ----------------------------------------- */

typedef struct compose_ctx {
    const attn_s2s_explanation *e;
    char title[256];
} compose_ctx;

static attn_status draw_compose(const void *ctx, const char *path, attn_error *err) {
    const compose_ctx *c = ctx;
    const attn_s2s_explanation *e = c->e;
    double x[ATTN_COMPOSE_MAX_TGT + 1], chosen[ATTN_COMPOSE_MAX_TGT + 1];
    double second[ATTN_COMPOSE_MAX_TGT + 1];
    const char *labels[ATTN_COMPOSE_MAX_TGT + 1];
    const int T = e->T < ATTN_COMPOSE_MAX_TGT + 1 ? e->T : ATTN_COMPOSE_MAX_TGT + 1;
    for (int t = 0; t < T; t++) {
        x[t] = t;
        chosen[t] = e->chosen_prob[t];
        const int k = e->top_ids[t * ATTN_S2S_TOP_K] == e->chosen[t] ? 1 : 0;
        second[t] = e->top_probs[t * ATTN_S2S_TOP_K + k];
        labels[t] = tok(e->chosen[t]);
    }
    const attn_plot_series s[2] = {
        {"the word written (greedy)", T, x, chosen, .points = true},
        {"the most probable other word", T, x, second, .points = true, .dashed = true}};
    const attn_plot p = {.title = c->title,
                         .xlabel = "word written, step by step",
                         .ylabel = "probability",
                         .y_min = 0,
                         .y_max = 1.05,
                         .key = "bottom left",
                         .width = 1100,
                         .n_series = 2,
                         .series = s,
                         .n_x_labels = T,
                         .x_labels = labels};
    return attn_plot_lines(&p, path, err);
}

static attn_status compose_figures(figs6 *f) {
    attn_seq2seq *m = NULL;
    attn_status st = load(f, "compose-seq2seq-transformer-seed1.json", &m);
    static const char *const polarity[2] = {"positive", "negative"};
    for (int p = 0; !st && p < 2; p++) {
        char source[64];
        int src[ATTN_COMPOSE_SRC];
        attn_s2s_explanation *e = NULL;
        const attn_s2s_explain_opts eo = {.no_saliency = true};
        snprintf(source, sizeof source, "%s " COMPOSE_SUBJECT, polarity[p]);
        st = attn_compose_source(source, src, f->err);
        if (!st) st = attn_seq2seq_explain(m, src, ATTN_COMPOSE_SRC, &eo, &e, f->err);
        if (!st) {
            attn_compose_verdict v;
            const bool grammatical =
                attn_compose_judge(src, e->out, e->n_out, &v, f->err) == ATTN_OK;
            compose_ctx c = {.e = e};
            /* a chart title, not JSON: the source in its quotes is made apart, so that no format
             * string reads as a JSON key to tests/style/check_json_printf.sh */
            char quoted[sizeof source + 2];
            snprintf(quoted, sizeof quoted, "\"%s\"", source);
            snprintf(c.title, sizeof c.title,
                     "compose %s: the probability of each word written (seed 1)", quoted);
            char stem[64], heading[128], line[2048], text[1024] = "";
            for (int i = 0; i < e->n_out; i++) {
                strncat(text, i ? " " : "", sizeof text - strlen(text) - 1);
                strncat(text, tok(e->out[i]), sizeof text - strlen(text) - 1);
            }
            snprintf(stem, sizeof stem, "s6-compose-%s", polarity[p]);
            snprintf(heading, sizeof heading, "Compose: %s", source);
            snprintf(line, sizeof line,
                     "Greedy decoding of \"%s\" writes \"%s\" (%s); at each step the "
                     "probability of the word written and of the runner-up (`attn explain "
                     "--weights compose-seq2seq-transformer-seed1.json`).",
                     source, text,
                     !grammatical     ? "not a sentence of the grammar"
                     : !v.polarity_ok ? "a sentence of the grammar, but not of that polarity"
                     : !v.subject_ok  ? "a sentence of the grammar, but about another subject"
                                      : "a sentence of the grammar, with that polarity and "
                                        "subject");
            st = chart2(f, stem, heading, line, draw_compose, &c);
        }
        attn_s2s_explanation_free(e);
    }
    attn_seq2seq_free(m);
    return st;
}

/* ---- all of them --------------------------------------------------------------------------- */

static attn_status best_head(const figs6 *f, int *layer, int *head) {
    const attn_experiment_opts o = {.quick = true, .weights_dir = f->wdir};
    attn_experiment_result r;
    memset(&r, 0, sizeof r);
    attn_status st = exp_alignment_run(&o, &r, f->err);
    if (!st) {
        *layer = (int)exp_get(&r, "seq2seq-transformer.best.layer");
        *head = (int)exp_get(&r, "seq2seq-transformer.best.head");
    }
    attn_experiment_result_free(&r);
    return st;
}

static const char *const needed[3] = {"seq2seq-transformer-seed1.json", "seq2seq-attn-seed1.json",
                                      "seq2seq-gru-seed1.json"};

bool attn_figures_decoder_available(const char *weights_dir) {
    const figs6 f = {.wdir = weights_dir};
    bool all = weights_dir != NULL;
    for (int i = 0; i < 3 && all; i++) all = have(&f, needed[i]);
    return all;
}

static attn_status figures(figs6 *f) {
    for (int i = 0; i < 3; i++)
        if (!have(f, needed[i]))
            return attn_errorf(f->err, ATTN_ERR_IO,
                               "figures: no %s/%s (the decoder figures need the rewrite models: "
                               "attn reproduce --task rewrite --out %s)",
                               f->wdir, needed[i], f->wdir);
    int src[ATTN_MAX_WORDS], n_src, layer = 0, head = 0;
    attn_status st = attn_tokenize(LONG_SENTENCE, src, ATTN_MAX_WORDS, &n_src, f->err);
    const char *words[ATTN_MAX_WORDS];
    for (int i = 0; !st && i < n_src; i++) words[i] = attn_vocab_word(src[i]);
    if (!st) st = mask_figure(f, src, n_src);
    if (!st) st = best_head(f, &layer, &head);
    if (!st) st = alignment_figure(f, "seq2seq-attn", 0, 0, src, n_src, words);
    if (!st) st = alignment_figure(f, "seq2seq-transformer", layer, head, src, n_src, words);
    if (!st) st = length_figure(f, f->quick ? 1 : seeds_present(f));
    if (!st && have(f, "compose-seq2seq-transformer-seed1.json"))
        st = compose_figures(f);
    else if (!st)
        fprintf(f->md,
                "The compose examples need %s/compose-seq2seq-transformer-seed1.json "
                "(`attn reproduce --task compose --out %s`).\n\n",
                f->wdir, f->wdir);
    return st;
}

attn_status attn_figures_decoder(const char *weights_dir, const char *out_dir, bool quick,
                                 char **markdown, attn_error *err) {
    if (!weights_dir || !out_dir || !markdown)
        return attn_errorf(err, ATTN_ERR_ARG, "figures: NULL argument");
    *markdown = NULL;
    size_t len = 0;
    figs6 f = {weights_dir, out_dir, quick, open_memstream(markdown, &len), err};
    if (!f.md) return attn_errorf(err, ATTN_ERR_NOMEM, "figures: out of memory");
    attn_status st = figures(&f);
    if (fclose(f.md) != 0 && st == ATTN_OK)
        st = attn_errorf(err, ATTN_ERR_NOMEM, "figures: out of memory");
    if (st != ATTN_OK) {
        free(*markdown);
        *markdown = NULL;
    }
    return st;
}

/* cmd_explain_seq2seq.c -- `attn explain` on seq2seq weights (cmd_explain hands over): per
 * source, the words the decoder writes with the top-5 of every step, the source words shaded
 * by the cross-attention of each output word (one layer and head, or their mean) and by
 * saliency; or the JSON object of attn_s2s_explanation_to_json, one a line. Sources are
 * explained on --threads threads (a replica of the model each) and printed in input order, the
 * same bytes for every thread count (cli_run_pieces_pool). */
#include "attn_seq2seq.h"
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { FORMAT_TEXT, FORMAT_JSON };

static const char about[] =
    "Explains each SOURCE (or, without arguments, each non-blank line of stdin) with a\n"
    "seq2seq model: the words the decoder writes (greedy, the decoder recomputed over [BOS] and\n"
    "the words so far at every step, as PyTorch's loop over nn.Transformer), the five most\n"
    "probable next tokens of every step, the attention maps the teacher-forced pass over the\n"
    "output used (cross-attention [layer][head][output][source], the Transformer's masked\n"
    "self-attention [layer][head][output][output]) and saliency: for every output token and\n"
    "source word, d (the chosen token's logit) / d x_i, x_i the word's first-layer input.";

static const char notes[] =
    "Text: one block per output token: its probability and the top 5, then the source words\n"
    "shaded by the cross-attention of that step (the mean of every layer and head unless\n"
    "--layer/--head choose; layers and heads count from 0 as in the state_dict), then by\n"
    "gradient x input (green positive, red negative). Colour is 24-bit ANSI; auto colours a\n"
    "terminal unless NO_COLOR is set.\n\n"
    "JSON, one object per line: {\"sentence\", \"model\", \"tokens\", \"output\", \"words\",\n"
    "\"ended\", \"prefix\", \"steps\": [{\"token\", \"id\", \"probability\", \"forced\",\n"
    "\"top\": [{\"token\", \"id\", \"probability\"}]}], \"n_layers\", \"n_heads\",\n"
    "\"cross_attention\", \"self_attention\", \"saliency\": {\"grad_norm\", \"grad_x_input\"}}\n"
    "(saliency [output][source]); with --layer/--head also \"alignment\" [output][source].\n"
    "Floats with %.9g (they read back exactly).\n\n"
    "--prefix \"W1 W2\": the decoder writes these target words first, whatever it would have\n"
    "chosen, and continues greedily from them (the page's \"click an alternative\").\n\n"
    "--threads N explains N sources at a time, each as one thread does, printed in input\n"
    "order: the output is the same for every N.";

typedef struct s2s_view {
    int fmt;
    bool color;
    int layer, head; /* -1: the mean */
    attn_s2s_explain_opts opts;
    attn_seq2seq *m;
    attn_seq2seq **models; /* per thread: m, then replicas of it */
} s2s_view;

/* The cross-attention row of step t: one layer/head or the mean (double). */
static void attention_row(const s2s_view *v, const attn_s2s_explanation *e, int t, double *row) {
    const int S = e->n_src, T = e->T;
    int n = 0;
    for (int i = 0; i < S; i++) row[i] = 0.0;
    for (int l = 0; l < e->n_layers; l++)
        for (int h = 0; h < e->n_heads; h++) {
            if ((v->layer >= 0 && l != v->layer) || (v->head >= 0 && h != v->head)) continue;
            const float *p = e->cross + (((size_t)l * e->n_heads + h) * T + t) * S;
            for (int i = 0; i < S; i++) row[i] += p[i];
            n++;
        }
    for (int i = 0; n && i < S; i++) row[i] /= n;
}

static void print_step(FILE *f, const s2s_view *v, const attn_s2s_explanation *e, const int *src,
                       int t, double *row) {
    const int S = e->n_src;
    fprintf(f, "  %2d %-10s p=%.4f%s  top:", t + 1, attn_tgt_vocab_token(e->chosen[t]),
            (double)e->chosen_prob[t], t < e->n_prefix ? " (forced)" : "");
    for (int k = 0; k < ATTN_S2S_TOP_K; k++) {
        const int id = e->top_ids[(size_t)t * ATTN_S2S_TOP_K + k];
        if (id >= 0)
            fprintf(f, " %s %.4f", attn_tgt_vocab_token(id),
                    (double)e->top_probs[(size_t)t * ATTN_S2S_TOP_K + k]);
    }
    fputc('\n', f);
    if (e->cross) {
        attention_row(v, e, t, row);
        double max = 0.0;
        for (int i = 0; i < S; i++) max = fmax(max, row[i]);
        fprintf(f, "     attends ");
        for (int i = 0; i < S; i++) {
            char note[16];
            snprintf(note, sizeof note, "%3.0f%%", 100.0 * row[i]);
            cli_shaded_to(f, v->color, attn_tgt_vocab_token(src[i]), max > 0 ? row[i] / max : 0,
                          255, 140, 0, note);
        }
        fputc('\n', f);
    }
    if (e->grad_x_input) {
        const float *gx = e->grad_x_input + (size_t)t * S;
        double max = 0.0;
        for (int i = 0; i < S; i++) max = fmax(max, fabs(gx[i]));
        fprintf(f, "     g x in  ");
        for (int i = 0; i < S; i++) {
            char note[16];
            snprintf(note, sizeof note, "%+.2f", (double)gx[i]);
            const double s = max > 0 ? fabs(gx[i]) / max : 0;
            if (gx[i] >= 0)
                cli_shaded_to(f, v->color, attn_tgt_vocab_token(src[i]), s, 60, 190, 75, note);
            else
                cli_shaded_to(f, v->color, attn_tgt_vocab_token(src[i]), s, 230, 75, 75, note);
        }
        fputc('\n', f);
    }
}

static void print_text(FILE *f, const s2s_view *v, const char *source, const int *src,
                       const attn_s2s_explanation *e) {
    fprintf(f, "%s  <-  %s\n", source, attn_s2s_arch_name(e->arch));
    fprintf(f, "  output:");
    for (int i = 0; i < e->n_out; i++) fprintf(f, " %s", attn_tgt_vocab_token(e->out[i]));
    fprintf(f, "%s\n", e->ended ? "" : " (no [EOS] within the length limit)");
    if (e->cross) {
        char which[64] = "the mean of every layer and head";
        if (v->layer >= 0 || v->head >= 0) {
            char l[16] = "mean", h[16] = "mean";
            if (v->layer >= 0) snprintf(l, sizeof l, "%d", v->layer);
            if (v->head >= 0) snprintf(h, sizeof h, "%d", v->head);
            snprintf(which, sizeof which, "layer %s, head %s", l, h);
        }
        fprintf(f, "  cross-attention: %s (%d layer%s x %d head%s)\n", which, e->n_layers,
                e->n_layers == 1 ? "" : "s", e->n_heads, e->n_heads == 1 ? "" : "s");
    } else {
        fprintf(f, "  (%s has no attention maps)\n", attn_s2s_arch_name(e->arch));
    }
    double *row = malloc((size_t)e->n_src * sizeof *row);
    for (int t = 0; row && t < e->T; t++) print_step(f, v, e, src, t, row);
    free(row);
}

/* One source read: its text and ids (with "where index" for messages). */
typedef struct s2s_source {
    char *text;
    int *src, n;
    const char *where;
    int index;
} s2s_source;

static void source_free(void *state) {
    s2s_source *s = state;
    free(s->src);
    free(s->text);
    free(s);
}

/* Tokenizes a source on the reading thread (one piece: its explanation). */
static void *explain_prepare(void *ctx, const char *source, const char *where, int index,
                             int *n_pieces, FILE *msg) {
    const s2s_view *v = ctx;
    const int max_ids = (int)(strlen(source) / 2 + 1);
    s2s_source *s = calloc(1, sizeof *s);
    attn_error err;
    attn_status st =
        s && (s->text = strdup(source)) && (s->src = malloc((size_t)max_ids * sizeof(int)))
            ? attn_tokenize(source, s->src, max_ids, &s->n, &err)
            : attn_errorf(&err, ATTN_ERR_NOMEM, "out of memory");
    if (st != ATTN_OK) {
        cli_message_to(msg, "explain", "%s %d: %s", where, index, err.msg);
        if (s) source_free(s);
        return NULL;
    }
    if (attn_seq2seq_config_of(v->m)->task == ATTN_TASK_REWRITE)
        cli_s2s_note_off_task(msg, "explain", s->src, s->n, where, index);
    s->where = where;
    s->index = index;
    *n_pieces = 1;
    return s;
}

static bool explain_compute(void *ctx, int worker, void *state, int k, FILE *f, FILE *msg) {
    (void)k;
    const s2s_view *v = ctx;
    const s2s_source *s = state;
    attn_error err;
    attn_s2s_explanation *e = NULL;
    attn_status st = attn_seq2seq_explain(v->models[worker], s->src, s->n, &v->opts, &e, &err);
    if (st == ATTN_OK && v->fmt == FORMAT_JSON) {
        char *json = NULL;
        const attn_s2s_json_opts jo = {true, v->layer >= 0 || v->head >= 0, v->layer, v->head};
        st = attn_s2s_explanation_to_json(s->text, s->src, e, &jo, &json, NULL, &err);
        if (st == ATTN_OK) fprintf(f, "%s\n", json);
        free(json);
    } else if (st == ATTN_OK) {
        print_text(f, v, s->text, s->src, e);
    }
    if (st != ATTN_OK) cli_message_to(msg, "explain", "%s %d: %s", s->where, s->index, err.msg);
    attn_s2s_explanation_free(e);
    return st == ATTN_OK;
}

/* "w1 w2 ..." into target ids; CLI_USAGE after a message, else -1. */
static int parse_prefix(const char *text, int *ids, int *n, int max) {
    char *copy = strdup(text ? text : "");
    *n = 0;
    int rc = copy ? -1 : CLI_ERROR;
    for (char *save = NULL, *w = copy ? strtok_r(copy, " \t", &save) : NULL; w && rc < 0;
         w = strtok_r(NULL, " \t", &save)) {
        const int id = attn_tgt_vocab_id(w);
        if (id <= ATTN_PAD_ID || id == ATTN_TGT_BOS || id == ATTN_TGT_EOS)
            rc = cli_usage_error("explain", "--prefix: '%s' is not a word of the target vocabulary",
                                 w);
        else if (*n == max)
            rc = cli_usage_error("explain", "--prefix: more than %d words", max);
        else
            ids[(*n)++] = id;
    }
    free(copy);
    return rc;
}

/* --layer/--head against the model; CLI_USAGE after a message, else -1. */
static int check_view(const s2s_view *v) {
    int L = 0, NH = 0;
    const bool has = attn_seq2seq_map_shape(v->m, &L, &NH, NULL);
    if ((v->layer >= 0 || v->head >= 0) && !has)
        return cli_usage_error("explain", "--layer and --head: %s has no attention maps",
                               attn_s2s_arch_name(attn_seq2seq_config_of(v->m)->arch));
    if (v->layer >= L && v->layer >= 0)
        return cli_usage_error("explain", "--layer %d: the model has layers 0..%d", v->layer,
                               L - 1);
    if (v->head >= NH && v->head >= 0)
        return cli_usage_error("explain", "--head %d: the model has heads 0..%d", v->head, NH - 1);
    return -1;
}

int cmd_explain_seq2seq(int argc, char **argv) {
    const char *weights = NULL, *prefix = NULL;
    s2s_view v = {FORMAT_TEXT, false, -1, -1, {0}, NULL, NULL};
    int color = CLI_COLOR_AUTO, max_out = 0, threads = 0;
    bool no_saliency = false;
    int prefix_ids[ATTN_S2S_MAX_TGT];
    cli_opt opts[] = {
        {"--weights", "FILE", CLI_OPT_STR, &weights,
         .help =
             "attn-seq2seq-weights-v1 JSON or safetensors (attn train --task rewrite); required"},
        {"--format", "F", CLI_OPT_CHOICE, &v.fmt, .choices = "text|json",
         .help = "text or json; see below"},
        {"--layer", "L", CLI_OPT_INT, &v.layer, 0, 63, .def = "the mean",
         .help = "the cross-attention of this decoder layer"},
        {"--head", "H", CLI_OPT_INT, &v.head, 0, 63, .def = "the mean",
         .help = "the cross-attention of this head"},
        {"--prefix", "WORDS", CLI_OPT_STR, &prefix, .def = "none",
         .help = "target words written first (see below)"},
        {"--max-out", "N", CLI_OPT_INT, &max_out, 0, ATTN_S2S_MAX_TGT, .def = "max_tgt_len - 1",
         .help = "output words at most"},
        {"--no-saliency", NULL, CLI_OPT_FLAG, &no_saliency, .help = "skip the backward passes"},
        CLI_COLOR_OPT(&color),
        CLI_THREADS_OPT(&threads),
    };
    cli_spec spec =
        CLI_SPEC("explain",
                 "--weights SEQ2SEQ.json [--format F] [--layer L] [--head H] [--prefix WORDS]"
                 " [--max-out N] [--no-saliency] [--color WHEN] [--threads N] [--] [SOURCE...]",
                 about, "SOURCE", notes, opts);
    char **sources = NULL;
    int n_sources = 0;
    attn_error err;
    int rc = cli_parse_operands(&spec, argc, argv, &sources, &n_sources);
    if (rc < 0 && !weights) rc = cli_usage_error("explain", "--weights FILE is required");
    if (rc < 0 && prefix) rc = parse_prefix(prefix, prefix_ids, &v.opts.n_prefix, ATTN_S2S_MAX_TGT);
    if (rc < 0 && attn_seq2seq_load_json(weights, &v.m, &err) != ATTN_OK)
        rc = cli_fail("explain", &err);
    if (rc < 0) rc = check_view(&v);
    if (rc < 0) {
        const int cap = attn_seq2seq_config_of(v.m)->max_tgt_len - 1;
        if (max_out > cap || v.opts.n_prefix > (max_out ? max_out : cap))
            rc = cli_usage_error("explain", "--max-out/--prefix: the model writes at most %d words",
                                 cap);
    }
    /* sources on every thread, each explained as one thread explains it */
    attn_pool *pool = NULL;
    if (rc < 0) rc = cli_threads_start("explain", &threads, &pool);
    if (rc < 0) rc = cli_s2s_thread_models("explain", v.m, threads, &v.models);
    if (rc < 0) {
        v.color = cli_want_color(color);
        v.opts.prefix = prefix_ids;
        v.opts.max_out = max_out;
        v.opts.no_saliency = no_saliency;
        const cli_piece_spec ps = {"explain",       "explained", explain_prepare,
                                   explain_compute, source_free, &v};
        rc = cli_run_pieces_pool(&ps, sources, n_sources, pool);
    }
    cli_s2s_thread_models_free(v.models, threads);
    attn_pool_free(pool);
    attn_seq2seq_free(v.m);
    free(sources);
    return rc;
}

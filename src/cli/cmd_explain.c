/* cmd_explain.c -- `attn explain`: what a model did with each sentence (attn_explain): how much
 * [CLS] attends to each word per layer and head (Transformer) or the probability after each
 * word (RNN/LSTM), and saliency per word; as shaded text or one JSON object per sentence. */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { FORMAT_TEXT, FORMAT_JSON };

static const char about[] =
    "Explains each SENTENCE (or, without arguments, each non-blank line of stdin): the\n"
    "logit and probability of the exact-mode forward; for the Transformer the attention\n"
    "probabilities of every layer and head (the ones the forward used); for RNN/LSTM the\n"
    "probability after each word; and saliency per word: |d logit / d x_i|, gradient x input\n"
    "and integrated gradients (x_i: the vector entering the first layer for word i).";

static const char notes[] =
    "Text: each word shaded by how much [CLS] attends to it (percentages beside), one line\n"
    "per layer and head plus the heads' average (--layer, --head choose; layers and heads\n"
    "count from 0 as in the state_dict); for RNN/LSTM each word with the probability after\n"
    "it (green above 0.5, red below); then the integrated gradients per word (or, with\n"
    "--ig-steps 0, gradient x input), and a caveat line. Colour is\n"
    "24-bit ANSI; auto colours a terminal unless NO_COLOR is set.\n\n"
    "JSON, one object per line: {\"sentence\", \"tokens\", \"logit\", \"probability\",\n"
    "\"attention\" [layer][head][query][key] (Transformer; tokens then start with [CLS]),\n"
    "\"prefix_probability\" (RNN/LSTM, after each word), \"saliency\": {\"grad_norm\",\n"
    "\"grad_x_input\", \"integrated_gradients\"} (per word), \"ig_steps\",\n"
    "\"ig_baseline_logit\"} (the last three absent with --ig-steps 0). Floats with %.9g\n"
    "(they read back exactly). --qk adds, after \"attention\", \"head_size\" and \"q\", \"k\"\n"
    "[layer][head][position][head_size] (q already divided by sqrt(head_size), as the\n"
    "forward scales q) and \"scores\" [layer][head][query][key] = q.k, the numbers each\n"
    "row's softmax was taken of: softmax(scores) is \"attention\" bit for bit. Positions\n"
    "alibi add a term to q.k: there \"scores\" = q.k + the term (one float add, as the\n"
    "forward adds it), followed by \"dot_products\" (q.k) and \"score_bias\" (the term,\n"
    "-slope_h * |query - key|), both [layer][head][query][key].\n\n"
    "Integrated gradients: N midpoint steps (--ig-steps) from the baseline x' = the vectors\n"
    "of as many [PAD] words ([CLS] keeps its own); their sum approximates logit -\n"
    "ig_baseline_logit (how closely depends on the sentence; compare the two). The N points\n"
    "run as batches of 16 consecutive points (rounding as a batch does), spread over\n"
    "--threads and summed in point order (the same bytes for every N); everything else\n"
    "is batch 1.\n"
    "Why a caveat: gradients measure the logit's response to small changes of a word's\n"
    "vector, and a saturated model answers big words with small gradients (a model whose\n"
    "last layer puts all of [CLS]'s attention on 'not' can give 'not' almost nothing). The\n"
    "page of attn serve therefore opens on occlusion, the logit change when the word is\n"
    "removed (attn predict on the sentence without it), which assumes nothing about the\n"
    "model; explain keeps integrated gradients, the method with a completeness check (their\n"
    "sum against logit - baseline, printed).\n"
    "prefix_probability[i] is what `attn predict` prints for words 0..i.\n"
    "Seq2seq weights (attn-seq2seq-weights-v1) are explained per output word instead:\n"
    "attn explain --weights SEQ2SEQ.json --help.\n\n"
    "Length: a recurrent model's explanation costs the square of the sentence length in\n"
    "time (one prefix per word) and its integrated gradients memory in proportion to it\n"
    "(LSTM, 1,000 words: about 1.6 s and 140 MB); sentences longer than --max-words are\n"
    "refused before any work. Memory: before allocating, explain bounds from above what a\n"
    "sentence will need (activations of the integrated-gradient batches on every thread,\n"
    "attention maps, prefixes) and refuses it, exit 1, naming the words and the bytes, when\n"
    "that is more than --max-memory (default 2048 MiB; LSTM with the default 64 steps: at\n"
    "most 55 kB per word and thread, so the default allows some 19,000 words on 2 threads).";

typedef struct explain_view {
    int fmt;
    bool color;
    int layer, head;         /* -1: all */
    int ig_steps;            /* attn_explain_opts.ig_steps */
    bool qk;                 /* attn_explain_opts.qk */
    int max_words;           /* longer sentences are refused before any work */
    int max_mib;             /* attn_explain_opts.max_bytes in MiB */
    const attn_vocab *vocab; /* the weights file's, or the built-in one */
} explain_view;

/* Token i of the displayed axis: [CLS] first for the Transformer. */
static const char *token_name(const explain_view *v, const attn_explanation *e, const int *ids,
                              int i) {
    if (e->arch == ATTN_ARCH_TRANSFORMER)
        return i == 0 ? "[CLS]" : attn_vocab_token(v->vocab, ids[i - 1]);
    return attn_vocab_token(v->vocab, ids[i]);
}

/* The library's writer (src/io/explain_json.c), shared with `attn serve`. */
static bool print_json(const explain_view *v, const char *sentence, const int *ids,
                       const attn_explanation *e, attn_error *err) {
    char *json = NULL;
    if (attn_explanation_to_json(v->vocab, sentence, ids, e, &json, NULL, err) != ATTN_OK)
        return false;
    puts(json);
    free(json);
    return true;
}

/* ---- text ------------------------------------------------------------------------------------ */

/* One attention row: how much [CLS] (query 0) attends to each key; w [S]. */
static void attention_row(const explain_view *v, const attn_explanation *e, const int *ids,
                          const char *label, const float *w) {
    float max = 0.0f;
    for (int k = 0; k < e->S; k++) max = w[k] > max ? w[k] : max;
    printf("  %-8s ", label);
    for (int k = 0; k < e->S; k++) {
        char note[32];
        /* fixed width, so that the lines of the heads and layers align */
        snprintf(note, sizeof note, "%3.0f%%", 100.0 * w[k]);
        cli_shaded(v->color, token_name(v, e, ids, k), max > 0.0f ? w[k] / max : 0.0, 255, 140, 0,
                   note);
    }
    putchar('\n');
}

static void print_attention(const explain_view *v, const attn_explanation *e, const int *ids) {
    const int S = e->S, NH = e->n_heads;
    float *avg = malloc((size_t)S * sizeof *avg);
    printf("  [CLS] attends to (shade relative to the line's largest; L0 is the write-up's "
           "layer 1):\n");
    for (int l = 0; l < e->n_layers; l++) {
        if (v->layer >= 0 && l != v->layer) continue;
        char label[32];
        if (avg) memset(avg, 0, (size_t)S * sizeof *avg);
        for (int h = 0; h < NH; h++) {
            const float *cls = e->attention + ((size_t)l * NH + h) * S * S; /* query 0 */
            for (int k = 0; avg && k < S; k++) avg[k] += cls[k] / (float)NH;
            if (v->head >= 0 && h != v->head) continue;
            snprintf(label, sizeof label, "L%d H%d", l, h);
            attention_row(v, e, ids, label, cls);
        }
        snprintf(label, sizeof label, "L%d avg", l);
        if (v->head < 0 && avg) attention_row(v, e, ids, label, avg);
    }
    free(avg);
}

/* Diverging shade: green for positive x, red for negative, strength |x| / scale. */
static void signed_word(const explain_view *v, const char *word, double x, double scale,
                        const char *note) {
    const double t = scale > 0.0 ? fabs(x) / scale : 0.0;
    if (x >= 0.0)
        cli_shaded(v->color, word, t, 60, 190, 75, note);
    else
        cli_shaded(v->color, word, t, 230, 75, 75, note);
}

static void print_prefix(const explain_view *v, const attn_explanation *e, const int *ids) {
    printf("  probability after each word:\n  ");
    for (int i = 0; i < e->n_words; i++) {
        char note[32];
        snprintf(note, sizeof note, "%.2f", e->prefix_probability[i]);
        signed_word(v, attn_vocab_token(v->vocab, ids[i]), e->prefix_probability[i] - 0.5, 0.5,
                    note);
    }
    putchar('\n');
}

/* The saliency line: integrated gradients (with their sum against logit - baseline), or, when
 * there are none, gradient x input; each word shaded by its value relative to the largest. */
static void print_saliency(const explain_view *v, const attn_explanation *e, const int *ids) {
    const float *val = e->integrated_gradients ? e->integrated_gradients : e->grad_x_input;
    double scale = 0.0, sum = 0.0;
    for (int i = 0; i < e->n_words; i++) {
        scale = fmax(scale, fabs(val[i]));
        sum += val[i];
    }
    if (e->integrated_gradients)
        printf("  integrated gradients (sum %.3f = logit %.3f - baseline %.3f, %d steps):\n  ", sum,
               (double)e->logit, (double)e->ig_baseline_logit, e->ig_steps);
    else
        printf("  gradient x input:\n  ");
    for (int i = 0; i < e->n_words; i++) {
        char note[32];
        snprintf(note, sizeof note, "%+.2f", (double)val[i]);
        signed_word(v, attn_vocab_token(v->vocab, ids[i]), val[i], scale, note);
    }
    putchar('\n');
    printf("  (gradients: how the logit responds to small changes of each word's vector, not what "
           "the word does;\n   to see that, remove it: attn predict on the sentence without it, "
           "the page's occlusion)\n");
}

static void print_text(const explain_view *v, const char *sentence, const int *ids,
                       const attn_explanation *e) {
    printf("%s  p=%.6f  logit=%.9g  %s\n", e->logit > 0.0f ? "positive" : "negative",
           e->probability, (double)e->logit, sentence);
    if (e->attention) print_attention(v, e, ids);
    if (e->prefix_probability) print_prefix(v, e, ids);
    print_saliency(v, e, ids);
}

/* ---- the command ----------------------------------------------------------------------------- */

static bool explain_one(attn_explainer *x, const explain_view *v, const char *sentence,
                        const char *where, int index) {
    int max_ids = (int)(strlen(sentence) / 2 + 1), n = 0;
    int *ids = malloc((size_t)max_ids * sizeof *ids);
    attn_error err = {0};
    attn_explanation *e = NULL;
    int n_unk = 0; /* words read as [UNK], where the vocabulary has it */
    attn_status st = ids ? attn_tokenize_vocab_unk(v->vocab, sentence,
                                                   attn_vocab_lookup(v->vocab, ATTN_UNK_TOKEN), ids,
                                                   max_ids, &n, &n_unk, &err)
                         : attn_errorf(&err, ATTN_ERR_NOMEM, "out of memory");
    if (st == ATTN_OK && n_unk > 0) {
        char what[32];
        snprintf(what, sizeof what, "%s %d", where, index);
        cli_warn_unknown("explain", what, n_unk, 1);
    }
    const attn_explain_opts o = {
        .ig_steps = v->ig_steps, .max_bytes = (size_t)v->max_mib << 20, .qk = v->qk};
    if (st == ATTN_OK && n > v->max_words)
        st = attn_errorf(&err, ATTN_ERR_VALUE,
                         "%d words, more than --max-words %d (raise it for longer sentences; "
                         "the time grows with the square of the length)",
                         n, v->max_words);
    if (st == ATTN_OK) st = attn_explainer_run(x, ids, n, &o, &e, &err);
    if (st == ATTN_OK) {
        if (v->fmt == FORMAT_JSON && !print_json(v, sentence, ids, e, &err))
            st = err.status;
        else if (v->fmt != FORMAT_JSON)
            print_text(v, sentence, ids, e);
    }
    if (st != ATTN_OK) {
        cli_message("explain", "%s %d: %s%s", where, index, err.msg,
                    st == ATTN_ERR_NOMEM ? " (--max-memory MIB raises the limit)" : "");
    }
    attn_explanation_free(e);
    free(ids);
    return st == ATTN_OK;
}

typedef struct explain_ctx {
    attn_explainer *x; /* the model on the run's threads */
    const explain_view *v;
} explain_ctx;

static bool explain_sentence(void *ctx, const char *sentence, const char *where, int index) {
    const explain_ctx *c = ctx;
    return explain_one(c->x, c->v, sentence, where, index);
}

/* --layer/--head against the model; CLI_USAGE after a message, else -1. */
static int check_view(const attn_model *m, const explain_view *v) {
    const attn_model_config *c = attn_model_config_of(m);
    if ((v->layer >= 0 || v->head >= 0) && c->arch != ATTN_ARCH_TRANSFORMER)
        return cli_usage_error("explain", "--layer and --head apply to the transformer only");
    if (v->layer >= c->n_layers)
        return cli_usage_error("explain", "--layer %d: the model has layers 0..%d", v->layer,
                               c->n_layers - 1);
    if (v->head >= c->n_heads)
        return cli_usage_error("explain", "--head %d: the model has heads 0..%d", v->head,
                               c->n_heads - 1);
    return -1;
}

/* The --weights value of argv, before parsing (seq2seq weights go to cmd_explain_seq2seq). */
static const char *weights_arg(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) break;
        if (strcmp(argv[i], "--weights") == 0 && i + 1 < argc) return argv[i + 1];
        if (strncmp(argv[i], "--weights=", 10) == 0) return argv[i] + 10;
    }
    return NULL;
}

int cmd_explain(int argc, char **argv) {
    if (cli_is_seq2seq_weights(weights_arg(argc, argv))) return cmd_explain_seq2seq(argc, argv);
    const char *weights = NULL;
    explain_view v = {FORMAT_TEXT,
                      false,
                      -1,
                      -1,
                      ATTN_EXPLAIN_IG_STEPS,
                      false,
                      1000,
                      (int)(ATTN_EXPLAIN_MAX_BYTES >> 20),
                      NULL};
    int color = CLI_COLOR_AUTO, threads = 0;
    cli_opt opts[] = {
        {"--weights", "FILE", CLI_OPT_STR, &weights,
         .help =
             "attn-weights-v1 JSON or safetensors (attn train, tools/weights_json.py); required"},
        {"--format", "F", CLI_OPT_CHOICE, &v.fmt, .choices = "text|json",
         .help = "text or json; see below"},
        {"--layer", "L", CLI_OPT_INT, &v.layer, 0, 63, .def = "all",
         .help = "text: this layer only (transformer)"},
        {"--head", "H", CLI_OPT_INT, &v.head, 0, 63, .def = "all and their average",
         .help = "text: this head only (transformer)"},
        CLI_COLOR_OPT(&color),
        {"--ig-steps", "N", CLI_OPT_INT, &v.ig_steps, 0, ATTN_EXPLAIN_MAX_STEPS,
         .help = "integrated-gradient steps; 0 = none"},
        {"--qk", NULL, CLI_OPT_FLAG, &v.qk, .def = "off",
         .help = "json (transformer): also each head's q, k and scores (see JSON below)"},
        {"--max-words", "N", CLI_OPT_INT, &v.max_words, 1, 1 << 20,
         .help = "longer sentences are refused (see Length below)"},
        {"--max-memory", "MIB", CLI_OPT_INT, &v.max_mib, 1, 1 << 30,
         .help = "refuse a sentence whose explanation may need more (see Length below)"},
        CLI_THREADS_OPT(&threads),
    };
    cli_spec spec =
        CLI_SPEC("explain",
                 "--weights FILE [--format F] [--layer L] [--head H] [--color WHEN]"
                 " [--ig-steps N] [--qk] [--max-words N] [--max-memory MIB] [--threads N] [--] "
                 "[SENTENCE...]",
                 about, "SENTENCE", notes, opts);
    char **sentences = NULL;
    int n_sentences = 0;
    int rc = cli_parse_operands(&spec, argc, argv, &sentences, &n_sentences);
    attn_model *m = NULL;
    if (rc < 0) rc = cli_load_weights("explain", weights, &m, &v.vocab);
    if (rc < 0) rc = check_view(m, &v);
    if (v.ig_steps == 0) v.ig_steps = ATTN_EXPLAIN_NO_IG;
    attn_pool *pool = NULL;
    if (rc < 0) rc = cli_threads_start("explain", &threads, &pool); /* same output for every N */
    attn_explainer *x = NULL;
    attn_error err = {0};
    if (rc < 0 && attn_explainer_create(m, pool, &x, &err) != ATTN_OK)
        rc = cli_fail("explain", &err);
    if (rc < 0) {
        v.color = cli_want_color(color);
        explain_ctx ctx = {x, &v};
        rc = cli_run_sentences("explain", "explained", sentences, n_sentences, explain_sentence,
                               &ctx);
    }
    attn_explainer_free(x);
    attn_pool_free(pool);
    attn_model_free(m);
    attn_vocab_free(v.vocab);
    free(sentences);
    return rc;
}

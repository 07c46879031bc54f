/* cmd_explain.c -- `attn explain`: what a model did with each sentence, for both families (the
 * weights file says which). A classifier (attn_explain): how much [CLS] attends to each word
 * per layer and head (Transformer) or the probability after each word (RNN/LSTM), and saliency
 * per word. A seq2seq model (attn_seq2seq_explain): the words the decoder writes with the top 5
 * of every step, the cross-attention and saliency of each output word. As shaded text
 * (explain_text.c) or one JSON object per sentence (io's writers, shared with attn serve). */
#include "attn_seq2seq.h"
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { FORMAT_TEXT, FORMAT_JSON };

static const char about[] =
    "Explains each SENTENCE (or, without arguments, each non-blank line of stdin) with the\n"
    "model of --weights, a classifier or a seq2seq model (the file says which).\n"
    "A classifier: the logit and probability of the exact-mode forward; for the Transformer\n"
    "the attention probabilities of every layer and head (the ones the forward used); for\n"
    "RNN/LSTM the probability after each word; and saliency per word: |d logit / d x_i|,\n"
    "gradient x input and integrated gradients (x_i: the vector entering the first layer\n"
    "for word i).\n"
    "A seq2seq model: the words the decoder writes (greedy, the decoder recomputed over [BOS]\n"
    "and the words so far at every step, as PyTorch's loop over nn.Transformer), the five most\n"
    "probable next tokens of every step, the attention maps the teacher-forced pass over the\n"
    "output used (cross-attention [layer][head][output][source], the Transformer's masked\n"
    "self-attention [layer][head][output][output]) and saliency: for every output token and\n"
    "source word, d (the chosen token's logit) / d x_i, x_i the word's first-layer input.";

static const char notes[] =
    "Options of one family only (--ig-steps, --qk, --max-words, --max-memory: classifiers;\n"
    "--prefix, --max-out, --no-saliency: seq2seq) are refused, exit 2, on the other's weights.\n"
    "Layers and heads count from 0 as in the state_dict. Colour is 24-bit ANSI; auto colours\n"
    "a terminal unless NO_COLOR is set. Floats in JSON with %.9g (they read back exactly).\n\n"
    "Classifier text: each word shaded by how much [CLS] attends to it (percentages beside),\n"
    "one line per layer and head plus the heads' average (--layer, --head choose); for\n"
    "RNN/LSTM each word with the probability after it (green above 0.5, red below); then the\n"
    "integrated gradients per word (or, with --ig-steps 0, gradient x input), and a caveat.\n\n"
    "Classifier JSON, one object per line: {\"sentence\", \"tokens\", \"logit\", \"probability\",\n"
    "\"attention\" [layer][head][query][key] (Transformer; tokens then start with [CLS]),\n"
    "\"prefix_probability\" (RNN/LSTM, after each word), \"saliency\": {\"grad_norm\",\n"
    "\"grad_x_input\", \"integrated_gradients\"} (per word), \"ig_steps\",\n"
    "\"ig_baseline_logit\"} (the last three absent with --ig-steps 0). --qk adds, after\n"
    "\"attention\", \"head_size\" and \"q\", \"k\" [layer][head][position][head_size] (q already\n"
    "divided by sqrt(head_size), as the forward scales q) and \"scores\"\n"
    "[layer][head][query][key] = q.k, the numbers each row's softmax was taken of:\n"
    "softmax(scores) is \"attention\" bit for bit. Positions alibi add a term to q.k: there\n"
    "\"scores\" = q.k + the term (one float add, as the forward adds it), followed by\n"
    "\"dot_products\" (q.k) and \"score_bias\" (the term, -slope_h * |query - key|), both\n"
    "[layer][head][query][key].\n\n"
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
    "prefix_probability[i] is what `attn predict` prints for words 0..i.\n\n"
    "Length: a recurrent model's explanation costs the square of the sentence length in\n"
    "time (one prefix per word) and its integrated gradients memory in proportion to it\n"
    "(LSTM, 1,000 words: about 1.6 s and 140 MB); sentences longer than --max-words are\n"
    "refused before any work. Memory: before allocating, explain bounds from above what a\n"
    "sentence will need (activations of the integrated-gradient batches on every thread,\n"
    "attention maps, prefixes) and refuses it, exit 1, naming the words and the bytes, when\n"
    "that is more than --max-memory (default 2048 MiB; LSTM with the default 64 steps: at\n"
    "most 55 kB per word and thread, so the default allows some 19,000 words on 2 threads).\n\n"
    "Seq2seq text: one block per output token: its probability and the top 5, then the\n"
    "source words shaded by the cross-attention of that step (the mean of every layer and\n"
    "head unless --layer/--head choose), then by gradient x input (green positive, red\n"
    "negative).\n\n"
    "Seq2seq JSON, one object per line: {\"sentence\", \"model\", \"tokens\", \"output\",\n"
    "\"words\", \"ended\", \"prefix\", \"steps\": [{\"token\", \"id\", \"probability\", "
    "\"forced\",\n"
    "\"top\": [{\"token\", \"id\", \"probability\"}]}], \"n_layers\", \"n_heads\",\n"
    "\"cross_attention\", \"self_attention\", \"saliency\": {\"grad_norm\", \"grad_x_input\"}}\n"
    "(saliency [output][source]); with --layer/--head also \"alignment\" [output][source].\n\n"
    "--prefix \"W1 W2\": the decoder writes these target words first, whatever it would have\n"
    "chosen, and continues greedily from them (the page's \"click an alternative\").\n\n"
    "--threads N: a seq2seq model explains N sentences at a time, each as one thread does,\n"
    "printed in input order; the output is the same for every N.";

/* The options as parsed; the families read their own parts. */
typedef struct explain_args {
    const char *weights;
    int fmt, color, threads;
    cli_explain_look look; /* look.color from color, once the options are read */
    /* classifiers */
    int ig_steps;  /* attn_explain_opts.ig_steps; 0 = none */
    bool qk;       /* attn_explain_opts.qk */
    int max_words; /* longer sentences are refused before any work */
    int max_mib;   /* attn_explain_opts.max_bytes in MiB */
    /* seq2seq */
    const char *prefix; /* target words written first */
    int max_out;        /* 0: max_tgt_len - 1 */
    bool no_saliency;
} explain_args;

/* ---- classifiers ----------------------------------------------------------------------------- */

typedef struct explain_ctx {
    attn_explainer *x; /* the model on the run's threads */
    const explain_args *a;
    const attn_vocab *vocab; /* the weights file's, or the built-in one */
} explain_ctx;

/* Ids of sentence in ids[max_ids] (*n); a note on stderr for words read as [UNK]. */
static attn_status read_sentence(const explain_ctx *c, const char *sentence, const char *where,
                                 int index, int *ids, int max_ids, int *n, attn_error *err) {
    int n_unk = 0; /* words read as [UNK], where the vocabulary has it */
    const attn_status st =
        attn_tokenize_vocab_unk(c->vocab, sentence, attn_vocab_lookup(c->vocab, ATTN_UNK_TOKEN),
                                ids, max_ids, n, &n_unk, err);
    if (st == ATTN_OK && n_unk > 0) {
        char what[32];
        snprintf(what, sizeof what, "%s %d", where, index);
        cli_warn_unknown("explain", what, n_unk, 1);
    }
    if (st == ATTN_OK && *n > c->a->max_words)
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "%d words, more than --max-words %d (raise it for longer sentences; "
                           "the time grows with the square of the length)",
                           *n, c->a->max_words);
    return st;
}

/* Prints the explanation of e: text or the library's JSON (src/io/explain_json.c). */
static attn_status print_explanation(const explain_ctx *c, const char *sentence, const int *ids,
                                     const attn_explanation *e, attn_error *err) {
    if (c->a->fmt != FORMAT_JSON) {
        cli_explain_text(stdout, &c->a->look, c->vocab, sentence, ids, e);
        return ATTN_OK;
    }
    char *json = NULL;
    const attn_status st = attn_explanation_to_json(c->vocab, sentence, ids, e, &json, NULL, err);
    if (st == ATTN_OK) puts(json);
    free(json);
    return st;
}

static bool explain_sentence(void *ctx, const char *sentence, const char *where, int index) {
    const explain_ctx *c = ctx;
    const int max_ids = (int)(strlen(sentence) / 2 + 1);
    int *ids = malloc((size_t)max_ids * sizeof *ids), n = 0;
    attn_error err = {0};
    attn_explanation *e = NULL;
    const attn_explain_opts o = {.ig_steps = c->a->ig_steps ? c->a->ig_steps : ATTN_EXPLAIN_NO_IG,
                                 .max_bytes = (size_t)c->a->max_mib << 20,
                                 .qk = c->a->qk};
    attn_status st = ids ? read_sentence(c, sentence, where, index, ids, max_ids, &n, &err)
                         : attn_errorf(&err, ATTN_ERR_NOMEM, "out of memory");
    if (st == ATTN_OK) st = attn_explainer_run(c->x, ids, n, &o, &e, &err);
    if (st == ATTN_OK) st = print_explanation(c, sentence, ids, e, &err);
    if (st != ATTN_OK)
        cli_message("explain", "%s %d: %s%s", where, index, err.msg,
                    st == ATTN_ERR_NOMEM ? " (--max-memory MIB raises the limit)" : "");
    attn_explanation_free(e);
    free(ids);
    return st == ATTN_OK;
}

/* --layer/--head against the model; CLI_USAGE after a message, else -1. */
static int check_classifier_look(const attn_model *m, const cli_explain_look *look) {
    const attn_model_config *c = attn_model_config_of(m);
    if ((look->layer >= 0 || look->head >= 0) && c->arch != ATTN_ARCH_TRANSFORMER)
        return cli_usage_error("explain", "--layer and --head apply to the transformer only");
    if (look->layer >= c->n_layers)
        return cli_usage_error("explain", "--layer %d: the model has layers 0..%d", look->layer,
                               c->n_layers - 1);
    if (look->head >= c->n_heads)
        return cli_usage_error("explain", "--head %d: the model has heads 0..%d", look->head,
                               c->n_heads - 1);
    return -1;
}

static int explain_classifier(explain_args *a, char **sentences, int n_sentences) {
    explain_ctx ctx = {NULL, a, NULL};
    attn_model *m = NULL;
    attn_pool *pool = NULL;
    attn_error err = {0};
    int rc = cli_load_weights("explain", a->weights, &m, &ctx.vocab);
    if (rc < 0) rc = check_classifier_look(m, &a->look);
    if (rc < 0) rc = cli_threads_start("explain", &a->threads, &pool); /* same output for any N */
    if (rc < 0 && attn_explainer_create(m, pool, &ctx.x, &err) != ATTN_OK)
        rc = cli_fail("explain", &err);
    if (rc < 0)
        rc = cli_run_sentences("explain", "explained", sentences, n_sentences, explain_sentence,
                               &ctx);
    attn_explainer_free(ctx.x);
    attn_pool_free(pool);
    attn_model_free(m);
    attn_vocab_free(ctx.vocab);
    return rc;
}

/* ---- seq2seq --------------------------------------------------------------------------------- */

typedef struct s2s_ctx {
    const explain_args *a;
    attn_s2s_explain_opts opts;
    attn_seq2seq *m;
    attn_seq2seq **models; /* per thread: m, then replicas of it */
} s2s_ctx;

/* Reads a source on the reading thread (one piece: its explanation). */
static void *explain_prepare(void *ctx, const char *source, const char *where, int index,
                             int *n_pieces, FILE *msg) {
    const s2s_ctx *c = ctx;
    const attn_task task = attn_seq2seq_config_of(c->m)->task;
    *n_pieces = 1;
    return cli_s2s_source_read("explain", task, source, false, where, index, msg);
}

static bool explain_compute(void *ctx, int worker, void *state, int k, FILE *f, FILE *msg) {
    (void)k;
    const s2s_ctx *c = ctx;
    const cli_s2s_source *s = state;
    const cli_explain_look *look = &c->a->look;
    attn_error err;
    attn_s2s_explanation *e = NULL;
    attn_status st = attn_seq2seq_explain(c->models[worker], s->src, s->n_src, &c->opts, &e, &err);
    if (st == ATTN_OK && c->a->fmt == FORMAT_JSON) {
        char *json = NULL;
        const attn_s2s_json_opts jo = {true, look->layer >= 0 || look->head >= 0, look->layer,
                                       look->head};
        st = attn_s2s_explanation_to_json(s->source, s->src, e, &jo, &json, NULL, &err);
        if (st == ATTN_OK) fprintf(f, "%s\n", json);
        free(json);
    } else if (st == ATTN_OK) {
        cli_explain_s2s_text(f, look, s->source, s->src, e);
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

/* --layer/--head, --max-out and --prefix against the model; CLI_USAGE after a message, else -1. */
static int check_s2s_look(const s2s_ctx *c) {
    const cli_explain_look *look = &c->a->look;
    int L = 0, NH = 0;
    const bool has = attn_seq2seq_map_shape(c->m, &L, &NH, NULL);
    if ((look->layer >= 0 || look->head >= 0) && !has)
        return cli_usage_error("explain", "--layer and --head: %s has no attention maps",
                               attn_s2s_arch_name(attn_seq2seq_config_of(c->m)->arch));
    if (look->layer >= L && look->layer >= 0)
        return cli_usage_error("explain", "--layer %d: the model has layers 0..%d", look->layer,
                               L - 1);
    if (look->head >= NH && look->head >= 0)
        return cli_usage_error("explain", "--head %d: the model has heads 0..%d", look->head,
                               NH - 1);
    const int cap = attn_seq2seq_config_of(c->m)->max_tgt_len - 1;
    if (c->a->max_out > cap || c->opts.n_prefix > (c->a->max_out ? c->a->max_out : cap))
        return cli_usage_error("explain", "--max-out/--prefix: the model writes at most %d words",
                               cap);
    return -1;
}

static int explain_seq2seq(explain_args *a, char **sources, int n_sources) {
    int prefix_ids[ATTN_S2S_MAX_TGT];
    s2s_ctx c = {a,
                 {.prefix = prefix_ids, .max_out = a->max_out, .no_saliency = a->no_saliency},
                 NULL,
                 NULL};
    attn_error err;
    int rc =
        a->prefix ? parse_prefix(a->prefix, prefix_ids, &c.opts.n_prefix, ATTN_S2S_MAX_TGT) : -1;
    if (rc < 0 && attn_seq2seq_load_json(a->weights, &c.m, &err) != ATTN_OK)
        rc = cli_fail("explain", &err);
    if (rc < 0) rc = check_s2s_look(&c);
    /* sources on every thread, each explained as one thread explains it */
    attn_pool *pool = NULL;
    if (rc < 0) rc = cli_threads_start("explain", &a->threads, &pool);
    if (rc < 0) rc = cli_s2s_thread_models("explain", c.m, a->threads, &c.models);
    if (rc < 0) {
        const cli_piece_spec ps = {"explain",       "explained",         explain_prepare,
                                   explain_compute, cli_s2s_source_free, &c};
        rc = cli_run_pieces_pool(&ps, sources, n_sources, pool);
    }
    cli_s2s_thread_models_free(c.models, a->threads);
    attn_pool_free(pool);
    attn_seq2seq_free(c.m);
    return rc;
}

/* ---- the command ----------------------------------------------------------------------------- */

/* The options of one family only: the other family's weights refuse them. */
static const char *const classifier_only[] = {"--ig-steps", "--qk", "--max-words", "--max-memory",
                                              NULL};
static const char *const seq2seq_only[] = {"--prefix", "--max-out", "--no-saliency", NULL};

int cmd_explain(int argc, char **argv) {
    explain_args a = {.fmt = FORMAT_TEXT,
                      .color = CLI_COLOR_AUTO,
                      .look = {false, -1, -1},
                      .ig_steps = ATTN_EXPLAIN_IG_STEPS,
                      .max_words = 1000,
                      .max_mib = (int)(ATTN_EXPLAIN_MAX_BYTES >> 20)};
    cli_opt opts[] = {
        {"--weights", "FILE", CLI_OPT_STR, &a.weights, .help = CLI_WEIGHTS_HELP "; required"},
        {"--format", "F", CLI_OPT_CHOICE, &a.fmt, .choices = "text|json",
         .help = "text or json; see below"},
        {"--layer", "L", CLI_OPT_INT, &a.look.layer, 0, 63, .def = "all; seq2seq: the mean",
         .help = "text: this layer only (transformer); seq2seq: the\n"
                 "cross-attention of this decoder layer"},
        {"--head", "H", CLI_OPT_INT, &a.look.head, 0, 63, .def = "all and their average",
         .help = "text: this head only (transformer); seq2seq: the\n"
                 "cross-attention of this head"},
        CLI_COLOR_OPT(&a.color),
        {"--ig-steps", "N", CLI_OPT_INT, &a.ig_steps, 0, ATTN_EXPLAIN_MAX_STEPS,
         .help = "integrated-gradient steps; 0 = none (classifiers)"},
        {"--qk", NULL, CLI_OPT_FLAG, &a.qk, .def = "off",
         .help = "json (transformer): also each head's q, k and scores (see JSON below)"},
        {"--max-words", "N", CLI_OPT_INT, &a.max_words, 1, 1 << 20,
         .help = "longer sentences are refused (classifiers; see Length below)"},
        {"--max-memory", "MIB", CLI_OPT_INT, &a.max_mib, 1, 1 << 30,
         .help = "refuse a sentence whose explanation may need more (classifiers)"},
        {"--prefix", "WORDS", CLI_OPT_STR, &a.prefix, .def = "none",
         .help = "seq2seq: target words written first (see below)"},
        {"--max-out", "N", CLI_OPT_INT, &a.max_out, 0, ATTN_S2S_MAX_TGT, .def = "max_tgt_len - 1",
         .help = "seq2seq: output words at most"},
        {"--no-saliency", NULL, CLI_OPT_FLAG, &a.no_saliency,
         .help = "seq2seq: skip the backward passes"},
        CLI_THREADS_OPT(&a.threads),
    };
    cli_spec spec = CLI_SPEC(
        "explain",
        "--weights FILE [--format F] [--layer L] [--head H] [--color WHEN] [--ig-steps N] [--qk]"
        " [--max-words N] [--max-memory MIB] [--threads N] [--] [SENTENCE...]\n"
        "--weights SEQ2SEQ.json [--format F] [--layer L] [--head H] [--prefix WORDS]"
        " [--max-out N] [--no-saliency] [--color WHEN] [--threads N] [--] [SENTENCE...]",
        about, "SENTENCE", notes, opts);
    char **sentences = NULL;
    int n_sentences = 0;
    int rc = cli_parse_operands(&spec, argc, argv, &sentences, &n_sentences);
    const bool seq2seq = rc < 0 && cli_is_seq2seq_weights(a.weights);
    if (rc < 0 && !a.weights) rc = cli_usage_error("explain", "--weights FILE is required");
    if (rc < 0)
        rc = seq2seq ? cli_refuse_given(&spec, classifier_only, "classifier weights")
                     : cli_refuse_given(&spec, seq2seq_only, "seq2seq weights");
    a.look.color = cli_want_color(a.color);
    if (rc < 0)
        rc = seq2seq ? explain_seq2seq(&a, sentences, n_sentences)
                     : explain_classifier(&a, sentences, n_sentences);
    free(sentences);
    return rc;
}

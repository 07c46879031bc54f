/* cmd_predict.c -- `attn predict`: classifies sentences with trained weights in exact mode
 * (one sentence per forward pass on one BLAS thread: the logits equal PyTorch's batch-1 eval
 * logits bit for bit). Words go through the weights file's vocabulary (or the built-in one);
 * with --ids the input is token ids, for models whose tokenizer lives elsewhere. A sentence
 * that cannot be classified (unknown word, bad id, too long) is reported with its line and the
 * run goes on; the exit code is then 1. */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { FORMAT_TEXT, FORMAT_TSV, FORMAT_JSON };

static const char about[] =
    "Classifies each SENTENCE (or, without arguments, each non-blank line of stdin) and\n"
    "prints the label (1 positive, 0 negative), the probability sigmoid(logit) and the\n"
    "logit (%.9g, enough digits to recover the float exactly).";

static const char notes[] =
    "Formats: text 'positive  p=0.982  logit=4.0  sentence'; tsv\n"
    "'label<TAB>probability<TAB>logit<TAB>sentence'; json one object per line:\n"
    "{\"sentence\", \"label\", \"probability\", \"logit\"}.\n\n"
    "Words are lower-cased; .,!?;: quotes (\" ' and typographic ones) and brackets ()[]{}\n"
    "are removed. Exact mode: one sentence per forward pass on one BLAS thread. A sentence\n"
    "with an unknown word (named with its position and the closest vocabulary word) or too\n"
    "many words is reported on stderr with its line (or argument) number; the others are\n"
    "still classified, and the exit code is then 1.\n\n"
    "Vocabulary: the weights file's own \"vocab\" when it has one, else the built-in\n"
    "course-review vocabulary ('attn vocab --weights FILE.json' lists it). With --ids each\n"
    "SENTENCE (or stdin line) is whitespace-separated token ids of that vocabulary instead\n"
    "of words, e.g. '3 11 15 22' (the Transformer prepends [CLS] = 1 itself); ids outside\n"
    "0..vocab_size-1, non-numbers and empty lines are reported with their line. The output\n"
    "then shows the ids where it shows the sentence (json: \"ids\": [..] instead of\n"
    "\"sentence\").";

/* The ids of --ids as the text and TSV output show them: "3 11 15". */
static void print_ids(const int *ids, int n) {
    for (int i = 0; i < n; i++) printf(i ? " %d" : "%d", ids[i]);
}

/* ids (NULL: the sentence was words) replace the sentence in the output. */
static void print_result(const char *sentence, const int *ids, int n, float logit, int fmt) {
    double prob = 1.0 / (1.0 + exp(-(double)logit));
    int label = logit > 0.0f;
    if (fmt == FORMAT_JSON) {
        attn_prediction_write_json(stdout, sentence, ids, n, logit, prob);
        putchar('\n');
        return;
    }
    if (fmt == FORMAT_TEXT)
        printf("%-8s  p=%.6f  logit=%.9g  ", label ? "positive" : "negative", prob, (double)logit);
    else
        printf("%d\t%.9g\t%.9g\t", label, prob, (double)logit);
    if (ids)
        print_ids(ids, n);
    else
        fputs(sentence, stdout);
    putchar('\n');
}

/* Whitespace-separated token ids of a vocabulary of V tokens into ids[max_ids]. */
static attn_status parse_ids(const char *text, int V, int *ids, int max_ids, int *n,
                             attn_error *err) {
    *n = 0;
    for (const char *p = text;;) {
        while (*p == ' ' || *p == '\t') p++;
        if (!*p) break;
        const char *start = p;
        long long id = 0;
        bool digits = true, big = false;
        for (; *p && *p != ' ' && *p != '\t'; p++) {
            digits = digits && *p >= '0' && *p <= '9';
            if (digits && !big) id = id * 10 + (*p - '0');
            big = big || id > 0x7fffffff;
        }
        int len = (int)(p - start);
        if (!digits)
            return attn_errorf(err, ATTN_ERR_VALUE,
                               "token %d '%.*s' is not a token id (a whole number 0..%d)", *n + 1,
                               len > 40 ? 40 : len, start, V - 1);
        if (big || id >= V)
            return attn_errorf(err, ATTN_ERR_VALUE,
                               "token %d: id %.*s is out of range: the vocabulary has %d tokens "
                               "(ids 0..%d)",
                               *n + 1, len > 40 ? 40 : len, start, V, V - 1);
        if (*n < max_ids) ids[*n] = (int)id;
        (*n)++;
    }
    if (*n == 0)
        return attn_errorf(err, ATTN_ERR_VALUE, "no token ids (empty line); expected ids 0..%d",
                           V - 1);
    return ATTN_OK;
}

typedef struct predict_ctx {
    attn_model *m;
    const attn_vocab *vocab;
    bool ids; /* --ids: the input is token ids */
    int fmt;
} predict_ctx;

/* Tokenizes (or reads the ids of) and classifies one sentence; false (after reporting it) if
 * it cannot be. `where` is "sentence" (arguments) or "line" (stdin). The model itself names
 * its length limit. */
static bool predict_one(const predict_ctx *c, const char *sentence, const char *where, int index) {
    int max_ids = (int)(strlen(sentence) / 2 + 1); /* words are separated by white space */
    int *ids = malloc((size_t)max_ids * sizeof *ids), n = 0;
    attn_error err = {0};
    float logit = 0.0f;
    attn_status st = !ids ? attn_errorf(&err, ATTN_ERR_NOMEM, "out of memory")
                     : c->ids
                         ? parse_ids(sentence, attn_vocab_count(c->vocab), ids, max_ids, &n, &err)
                         : attn_tokenize_vocab(c->vocab, sentence, ids, max_ids, &n, &err);
    attn_batch b = {.B = 1, .T = n, .ids = ids, .lengths = &n};
    if (st == ATTN_OK) st = attn_model_forward(c->m, &b, &logit, &err);
    if (st == ATTN_OK) print_result(sentence, c->ids ? ids : NULL, n, logit, c->fmt);
    free(ids);
    if (st != ATTN_OK) {
        cli_message("predict", "%s %d: %s", where, index, err.msg);
        return false;
    }
    return true;
}

static bool predict_sentence(void *ctx, const char *sentence, const char *where, int index) {
    return predict_one(ctx, sentence, where, index);
}

int cmd_predict(int argc, char **argv) {
    const char *weights = NULL;
    int fmt = FORMAT_TEXT;
    bool by_ids = false;
    cli_opt opts[] = {
        {"--weights", "FILE.json", CLI_OPT_STR, &weights,
         .help = "attn-weights-v1 JSON (attn train or tools/weights_json.py); required"},
        {"--format", "F", CLI_OPT_CHOICE, &fmt, .choices = "text|tsv|json",
         .help = "text, tsv or json; see Formats below"},
        {"--ids", NULL, CLI_OPT_FLAG, &by_ids,
         .help = "each SENTENCE (or line) is whitespace-separated token ids, not words"},
    };
    cli_spec spec = {"predict", "--weights FILE.json [--format F] [--ids] [--] [SENTENCE...]",
                     about,     "SENTENCE",
                     notes,     opts,
                     3};
    char **sentences = calloc((size_t)argc + 1, sizeof *sentences);
    if (!sentences) {
        fprintf(stderr, "attn predict: out of memory\n");
        return CLI_ERROR;
    }
    int n_sentences = 0;
    int rc = cli_parse(&spec, argc, argv, sentences, &n_sentences);
    if (rc < 0 && !weights) rc = cli_usage_error("predict", "--weights FILE.json is required");
    attn_model *m = NULL;
    const attn_vocab *vocab = NULL;
    if (rc < 0) rc = cli_load_weights("predict", weights, &m, &vocab);
    if (rc < 0) {
        attn_set_num_threads(1);
        predict_ctx ctx = {m, vocab, by_ids, fmt};
        rc = by_ids ? cli_run_lines("predict", "classified", sentences, n_sentences,
                                    predict_sentence, &ctx)
                    : cli_run_sentences("predict", "classified", sentences, n_sentences,
                                        predict_sentence, &ctx);
    }
    attn_model_free(m);
    attn_vocab_free(vocab);
    free(sentences);
    return rc;
}

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
    "with an unknown word (named with its position, the closest vocabulary word by spelling\n"
    "and, on the built-in vocabulary, the words of the class the grammar puts at its place:\n"
    "'the pizza was good' offers the subject nouns) or too many words is reported on\n"
    "stderr with its line (or argument) number; the others are still classified, and the\n"
    "exit code is then 1.\n\n"
    "Vocabulary: the weights file's own \"vocab\" when it has one, else the built-in\n"
    "course-review vocabulary ('attn vocab --weights FILE' lists it). Where it has\n"
    "the token [UNK] (attn train --vocab-from-data), an unknown word reads as [UNK] and one\n"
    "warning at the end counts them. With --ids each\n"
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
    attn_model **models; /* per thread: the model, then replicas of it */
    const attn_vocab *vocab;
    bool ids; /* --ids: the input is token ids */
    int fmt;
    int unk_id;                 /* [UNK]'s id in the vocabulary, -1: unknown words fail */
    long n_unk_words, n_unk_in; /* words read as [UNK], sentences holding them */
} predict_ctx;

/* One sentence's result, made on any thread and printed in input order. */
typedef struct predict_slot {
    attn_status st;
    attn_error err;
    float logit;
    int *ids, n;
    int n_unk; /* words read as [UNK] */
} predict_slot;

/* Tokenizes (or reads the ids of) and classifies one sentence on thread `worker`'s model. The
 * model itself names its length limit. */
static void predict_compute(void *ctx, int worker, const char *sentence, void *slot) {
    const predict_ctx *c = ctx;
    predict_slot *r = slot;
    int max_ids = (int)(strlen(sentence) / 2 + 1); /* words are separated by white space */
    memset(r, 0, sizeof *r);
    r->ids = malloc((size_t)max_ids * sizeof *r->ids);
    r->st = !r->ids ? attn_errorf(&r->err, ATTN_ERR_NOMEM, "out of memory")
            : c->ids
                ? parse_ids(sentence, attn_vocab_count(c->vocab), r->ids, max_ids, &r->n, &r->err)
                : attn_tokenize_vocab_unk(c->vocab, sentence, c->unk_id, r->ids, max_ids, &r->n,
                                          &r->n_unk, &r->err);
    attn_batch b = {.B = 1, .T = r->n, .ids = r->ids, .lengths = &r->n};
    if (r->st == ATTN_OK)
        r->st = attn_model_forward_infer(c->models[worker], &b, &r->logit, &r->err);
}

/* Prints the result (or says why there is none, naming `where` "sentence" or "line" and its
 * 1-based index); false if the sentence could not be classified. */
static bool predict_emit(void *ctx, const char *sentence, const char *where, int index,
                         void *slot) {
    predict_ctx *c = ctx;
    predict_slot *r = slot;
    c->n_unk_words += r->n_unk;
    c->n_unk_in += r->n_unk > 0;
    if (r->st == ATTN_OK)
        print_result(sentence, c->ids ? r->ids : NULL, r->n, r->logit, c->fmt);
    else
        cli_message("predict", "%s %d: %s", where, index, r->err.msg);
    free(r->ids);
    r->ids = NULL;
    return r->st == ATTN_OK;
}

int cmd_predict(int argc, char **argv) {
    const char *weights = NULL;
    int fmt = FORMAT_TEXT;
    bool by_ids = false;
    int threads = 0;
    cli_opt opts[] = {
        {"--weights", "FILE", CLI_OPT_STR, &weights,
         .help =
             "attn-weights-v1 JSON or safetensors (attn train, tools/weights_json.py); required"},
        {"--format", "F", CLI_OPT_CHOICE, &fmt, .choices = "text|tsv|json",
         .help = "text, tsv or json; see Formats below"},
        {"--ids", NULL, CLI_OPT_FLAG, &by_ids,
         .help = "each SENTENCE (or line) is whitespace-separated token ids, not words"},
        CLI_THREADS_OPT(&threads),
    };
    cli_spec spec =
        CLI_SPEC("predict", "--weights FILE [--format F] [--ids] [--threads N] [--] [SENTENCE...]",
                 about, "SENTENCE", notes, opts);
    char **sentences = NULL;
    int n_sentences = 0;
    int rc = cli_parse_operands(&spec, argc, argv, &sentences, &n_sentences);
    attn_model *m = NULL;
    const attn_vocab *vocab = NULL;
    if (rc < 0) rc = cli_load_weights("predict", weights, &m, &vocab);
    /* sentences on every thread, each still one exact batch-1 forward: the output is the same
     * for every N */
    attn_pool *pool = NULL;
    attn_model **models = NULL;
    if (rc < 0) rc = cli_threads_start("predict", &threads, &pool);
    if (rc < 0 && !(models = calloc((size_t)threads, sizeof *models)))
        rc = cli_runtime_error("predict", "out of memory");
    if (rc < 0) {
        attn_error err = {0};
        models[0] = m;
        for (int w = 1; rc < 0 && w < threads; w++)
            if (attn_model_replica(m, &models[w], &err) != ATTN_OK) rc = cli_fail("predict", &err);
    }
    if (rc < 0) {
        predict_ctx ctx = {models, vocab, by_ids, fmt, attn_vocab_lookup(vocab, ATTN_UNK_TOKEN),
                           0,      0};
        cli_par_spec ps = {"predict",       "classified", by_ids, sizeof(predict_slot),
                           predict_compute, predict_emit, &ctx};
        rc = cli_run_sentences_pool(&ps, sentences, n_sentences, pool);
        cli_warn_unknown("predict", "input", ctx.n_unk_words, ctx.n_unk_in);
    }
    for (int w = 1; models && w < threads; w++) attn_model_free(models[w]);
    free(models);
    attn_pool_free(pool);
    attn_model_free(m);
    attn_vocab_free(vocab);
    free(sentences);
    return rc;
}

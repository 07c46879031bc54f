/* cmd_predict.c -- `attn predict`: classifies sentences with trained weights in exact mode
 * (one sentence per forward pass on one BLAS thread: the logits equal PyTorch's batch-1 eval
 * logits bit for bit). A sentence that cannot be classified (unknown word, too long) is
 * reported with its line and the run goes on; the exit code is then 1. */
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
    "still classified, and the exit code is then 1.";

static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void print_result(const char *sentence, float logit, int fmt) {
    double prob = 1.0 / (1.0 + exp(-(double)logit));
    int label = logit > 0.0f;
    if (fmt == FORMAT_TEXT) {
        printf("%-8s  p=%.6f  logit=%.9g  %s\n", label ? "positive" : "negative", prob,
               (double)logit, sentence);
    } else if (fmt == FORMAT_TSV) {
        printf("%d\t%.9g\t%.9g\t%s\n", label, prob, (double)logit, sentence);
    } else {
        printf("{\"sentence\": ");
        json_string(stdout, sentence);
        printf(", \"label\": %d, \"probability\": %.9g, \"logit\": %.9g}\n", label, prob,
               (double)logit);
    }
}

/* Tokenizes and classifies one sentence; false (after reporting it) if it cannot be. `where`
 * is "sentence" (arguments) or "line" (stdin). The model itself names its length limit. */
static bool predict_one(attn_model *m, const char *sentence, const char *where, int index,
                        int fmt) {
    int max_ids = (int)(strlen(sentence) / 2 + 1); /* words are separated by white space */
    int *ids = malloc((size_t)max_ids * sizeof *ids), n = 0;
    attn_error err = {0};
    float logit = 0.0f;
    attn_status st = ids ? attn_tokenize(sentence, ids, max_ids, &n, &err)
                         : attn_errorf(&err, ATTN_ERR_NOMEM, "out of memory");
    attn_batch b = {.B = 1, .T = n, .ids = ids, .lengths = &n};
    if (st == ATTN_OK) st = attn_model_forward(m, &b, &logit, &err);
    free(ids);
    if (st != ATTN_OK) {
        cli_message("predict", "%s %d: %s", where, index, err.msg);
        return false;
    }
    print_result(sentence, logit, fmt);
    return true;
}

typedef struct predict_ctx {
    attn_model *m;
    int fmt;
} predict_ctx;

static bool predict_sentence(void *ctx, const char *sentence, const char *where, int index) {
    const predict_ctx *c = ctx;
    return predict_one(c->m, sentence, where, index, c->fmt);
}

int cmd_predict(int argc, char **argv) {
    const char *weights = NULL;
    int fmt = FORMAT_TEXT;
    cli_opt opts[] = {
        {"--weights", "FILE.json", CLI_OPT_STR, &weights,
         .help = "attn-weights-v1 JSON (attn train or tools/weights_json.py); required"},
        {"--format", "F", CLI_OPT_CHOICE, &fmt, .choices = "text|tsv|json",
         .help = "text, tsv or json; see Formats below"},
    };
    cli_spec spec = {"predict", "--weights FILE.json [--format F] [--] [SENTENCE...]",
                     about,     "SENTENCE",
                     notes,     opts,
                     2};
    char **sentences = calloc((size_t)argc + 1, sizeof *sentences);
    if (!sentences) {
        fprintf(stderr, "attn predict: out of memory\n");
        return CLI_ERROR;
    }
    int n_sentences = 0;
    int rc = cli_parse(&spec, argc, argv, sentences, &n_sentences);
    if (rc < 0 && !weights) rc = cli_usage_error("predict", "--weights FILE.json is required");
    attn_model *m = NULL;
    attn_error err;
    if (rc < 0 && attn_weights_load_json(weights, &m, &err) != ATTN_OK)
        rc = cli_fail("predict", &err);
    if (rc < 0) {
        attn_set_num_threads(1);
        predict_ctx ctx = {m, fmt};
        rc = cli_run_sentences("predict", "classified", sentences, n_sentences, predict_sentence,
                               &ctx);
    }
    attn_model_free(m);
    free(sentences);
    return rc;
}

/* cmd_weights.c -- `attn info`, `attn predict` and `attn eval`: commands that read a weights
 * file (attn-weights-v1 JSON) and run the model. predict and eval use exact mode by default:
 * one sentence per forward pass on one BLAS thread, the protocol under which the logits match
 * PyTorch's batch-1 eval logits bit for bit. */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- shared ------------------------------------------------------------------------------- */

/* Value of "--name VALUE" / "--name=VALUE" at argv[*i] (advancing *i); *matched says whether
 * argv[*i] was this option; NULL with *matched set means the value is missing. */
static int load_weights(const char *cmd, const char *path, attn_model **m) {
    attn_error err;
    if (attn_weights_load_json(path, m, &err) != ATTN_OK) return cli_fail(cmd, &err);
    return CLI_OK;
}

static void shape_str(const int *shape, int nd, char *buf, size_t size) {
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < nd && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, d ? ",%d" : "%d", shape[d]);
    if (used < size) snprintf(buf + used, size - used, "]");
}

/* ---- info --------------------------------------------------------------------------------- */

static void info_usage(void) {
    printf("Usage: attn info --weights FILE.json\n\n"
           "Shows a weights file (attn-weights-v1): the architecture, its sizes, the tensor\n"
           "table (state_dict name, shape, element count) and the total parameter count.\n"
           "The file is fully validated first; every problem is reported.\n");
}

int cmd_info(int argc, char **argv) {
    const char *cmd = "info";
    if (cli_wants_help(argc, argv)) {
        info_usage();
        return CLI_OK;
    }
    const char *weights = NULL;
    for (int i = 1; i < argc; i++) {
        bool matched;
        const char *v = cli_opt_value(cmd, argc, argv, &i, "--weights", &matched);
        if (matched && !v) return CLI_USAGE;
        if (matched) {
            weights = v;
            continue;
        }
        return cli_usage_error(cmd, "unexpected argument '%s'", argv[i]);
    }
    if (!weights) return cli_usage_error(cmd, "--weights FILE.json is required");
    attn_model *m = NULL;
    int rc = load_weights(cmd, weights, &m);
    if (rc != CLI_OK) return rc;
    const attn_model_config *c = attn_model_config_of(m);
    printf("file         %s\n", weights);
    printf("arch         %s\n", attn_arch_name(c->arch));
    printf("vocab_size   %d\n", c->vocab_size);
    printf("embed_dim    %d\n", c->embed_dim);
    if (c->arch == ATTN_ARCH_TRANSFORMER) {
        printf("n_heads      %d\n", c->n_heads);
        printf("ffn_dim      %d\n", c->ffn_dim);
        printf("n_layers     %d\n", c->n_layers);
        printf("max_len      %d\n", c->max_len);
        printf("norm         %s\n", c->norm == ATTN_NORM_PRE ? "pre" : "post");
        printf("activation   %s\n", c->activation == ATTN_ACT_RELU ? "relu" : "gelu");
    } else {
        printf("hidden_size  %d\n", c->hidden_size);
        printf("n_layers     %d\n", c->n_layers);
    }
    printf("\n%-36s %-10s %8s\n", "tensor", "shape", "numel");
    for (size_t i = 0; i < attn_model_tensor_count(m); i++) {
        int shape[4];
        char s[64];
        shape_str(shape, attn_model_tensor_shape(m, i, shape), s, sizeof s);
        printf("%-36s %-10s %8zu\n", attn_model_tensor_name(m, i), s,
               attn_model_tensor_numel(m, i));
    }
    printf("\ntotal parameters: %zu\n", attn_model_n_params(m));
    attn_model_free(m);
    return CLI_OK;
}

/* ---- predict ------------------------------------------------------------------------------ */

typedef enum out_format { FORMAT_TEXT, FORMAT_TSV, FORMAT_JSON } out_format;

static void predict_usage(void) {
    printf("Usage: attn predict --weights FILE.json [--format text|tsv|json] [SENTENCE...]\n\n"
           "Classifies each SENTENCE (or, without arguments, each non-blank line of stdin)\n"
           "and prints the label (1 positive, 0 negative), the probability sigmoid(logit) and\n"
           "the logit (%%.9g, enough digits to recover the float exactly).\n\n"
           "Options:\n"
           "  --weights FILE  attn-weights-v1 JSON (attn train or tools/weights_json.py)\n"
           "  --format F      text (default): 'positive  p=0.982  logit=4.0  sentence'\n"
           "                  tsv:  'label<TAB>probability<TAB>logit<TAB>sentence'\n"
           "                  json: one object per line: {\"sentence\", \"label\",\n"
           "                        \"probability\", \"logit\"}\n\n"
           "Exact mode: one sentence per forward pass on one BLAS thread. Stops with exit\n"
           "code 1 at the first sentence with an unknown word.\n");
}

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

/* Tokenizes and classifies one sentence; prints the result. */
/* `where` is "sentence" (arguments) or "line" (stdin), for messages. */
static int predict_one(attn_model *m, const char *sentence, const char *where, int index,
                       out_format fmt) {
    int ids[ATTN_MAX_WORDS], n = 0;
    attn_error err;
    if (attn_tokenize(sentence, ids, ATTN_MAX_WORDS, &n, &err) != ATTN_OK) {
        fprintf(stderr, "attn predict: %s %d: %s\n", where, index, err.msg);
        return CLI_ERROR;
    }
    attn_batch b = {.B = 1, .T = n, .ids = ids, .lengths = &n};
    float logit;
    if (attn_model_forward(m, &b, &logit, &err) != ATTN_OK) {
        fprintf(stderr, "attn predict: %s %d: %s\n", where, index, err.msg);
        return CLI_ERROR;
    }
    double prob = 1.0 / (1.0 + exp(-(double)logit));
    int label = logit > 0.0f;
    switch (fmt) {
    case FORMAT_TEXT:
        printf("%-8s  p=%.6f  logit=%.9g  %s\n", label ? "positive" : "negative", prob,
               (double)logit, sentence);
        break;
    case FORMAT_TSV:
        printf("%d\t%.9g\t%.9g\t%s\n", label, prob, (double)logit, sentence);
        break;
    case FORMAT_JSON:
        printf("{\"sentence\": ");
        json_string(stdout, sentence);
        printf(", \"label\": %d, \"probability\": %.9g, \"logit\": %.9g}\n", label, prob,
               (double)logit);
        break;
    }
    return CLI_OK;
}

int cmd_predict(int argc, char **argv) {
    const char *cmd = "predict";
    if (cli_wants_help(argc, argv)) {
        predict_usage();
        return CLI_OK;
    }
    const char *weights = NULL;
    out_format fmt = FORMAT_TEXT;
    int first_sentence = argc; /* index of the first positional argument */
    char **sentences = calloc((size_t)argc, sizeof *sentences);
    int n_sentences = 0;
    if (!sentences) {
        fprintf(stderr, "attn predict: out of memory\n");
        return CLI_ERROR;
    }
    int rc = CLI_OK;
    for (int i = 1; i < argc && rc == CLI_OK; i++) {
        bool matched;
        const char *v = cli_opt_value(cmd, argc, argv, &i, "--weights", &matched);
        if (matched) {
            if (!v) rc = CLI_USAGE;
            weights = v;
            continue;
        }
        v = cli_opt_value(cmd, argc, argv, &i, "--format", &matched);
        if (matched) {
            if (v && strcmp(v, "text") == 0)
                fmt = FORMAT_TEXT;
            else if (v && strcmp(v, "tsv") == 0)
                fmt = FORMAT_TSV;
            else if (v && strcmp(v, "json") == 0)
                fmt = FORMAT_JSON;
            else
                rc = cli_usage_error(cmd, "--format expects text, tsv or json, got '%s'",
                                     v ? v : "");
            continue;
        }
        if (strcmp(argv[i], "--") == 0) {
            first_sentence = i + 1;
            break;
        }
        if (argv[i][0] == '-' && argv[i][1] == '-') {
            rc = cli_usage_error(cmd, "unknown option '%s'", argv[i]);
            continue;
        }
        sentences[n_sentences++] = argv[i];
    }
    for (int i = first_sentence; i < argc && rc == CLI_OK; i++) sentences[n_sentences++] = argv[i];
    if (rc == CLI_OK && !weights) rc = cli_usage_error(cmd, "--weights FILE.json is required");
    attn_model *m = NULL;
    if (rc == CLI_OK) rc = load_weights(cmd, weights, &m);
    if (rc != CLI_OK) {
        free(sentences);
        return rc;
    }
    attn_set_num_threads(1);
    if (n_sentences > 0) {
        for (int i = 0; i < n_sentences && rc == CLI_OK; i++)
            rc = predict_one(m, sentences[i], "sentence", i + 1, fmt);
    } else {
        char *line = NULL;
        size_t cap = 0;
        ssize_t len;
        int line_no = 0;
        while (rc == CLI_OK && (len = getline(&line, &cap, stdin)) >= 0) {
            line_no++;
            while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
            if (strspn(line, " \t") == (size_t)len) continue; /* blank line */
            rc = predict_one(m, line, "line", line_no, fmt);
        }
        free(line);
    }
    if (fflush(stdout) != 0 && rc == CLI_OK) {
        fprintf(stderr, "attn predict: cannot write the output\n");
        rc = CLI_ERROR;
    }
    attn_model_free(m);
    free(sentences);
    return rc;
}

/* ---- eval --------------------------------------------------------------------------------- */

static void eval_usage(void) {
    printf("Usage: attn eval --weights FILE.json (--set NAME [--seed S] [--n N] | --data "
           "FILE.tsv)\n                 [--batch B]\n\n"
           "Accuracy of the weights on generated test sets or on a TSV file\n"
           "('label<TAB>sentence' lines), one line per set:\n"
           "  plain       accuracy  99.70 %% (997/1000)\n\n"
           "Options:\n"
           "  --weights FILE  attn-weights-v1 JSON\n"
           "  --set NAME      plain, distractor, fill4, fill8 or all (the four test sets)\n"
           "  --seed S        generator seed (default 1, as attn data and attn train)\n"
           "  --n N           sentences per set (default %d)\n"
           "  --data FILE     a TSV file instead of a generated set\n"
           "  --batch B       sentences per forward pass (default 1: exact mode, logits\n"
           "                  bit-identical to PyTorch's batch-1 eval; larger is faster)\n",
           ATTN_TEST_DEFAULT_N);
}

/* Accuracy of m on d (batches of `batch` sentences padded to the batch's longest). */
static attn_status evaluate(attn_model *m, const attn_dataset *d, int batch, int *correct,
                            attn_error *err) {
    *correct = 0;
    int *ids = calloc((size_t)batch * ATTN_MAX_WORDS, sizeof *ids);
    int *lengths = calloc((size_t)batch, sizeof *lengths);
    float *logits = calloc((size_t)batch, sizeof *logits);
    attn_status st = ATTN_OK;
    if (!ids || !lengths || !logits) st = attn_errorf(err, ATTN_ERR_NOMEM, "out of memory");
    for (int start = 0; st == ATTN_OK && start < d->n; start += batch) {
        int B = d->n - start < batch ? d->n - start : batch, T = 1;
        for (int b = 0; b < B; b++)
            if (d->lengths[start + b] > T) T = d->lengths[start + b];
        if (T > ATTN_MAX_WORDS) {
            st = attn_errorf(err, ATTN_ERR_SHAPE, "sentence %d has %d words, at most %d", start + 1,
                             T, ATTN_MAX_WORDS);
            break;
        }
        memset(ids, 0, (size_t)B * (size_t)T * sizeof *ids);
        for (int b = 0; b < B; b++) {
            lengths[b] = d->lengths[start + b];
            memcpy(ids + (size_t)b * T, d->ids + d->offsets[start + b],
                   (size_t)lengths[b] * sizeof *ids);
        }
        attn_batch bt = {.B = B, .T = T, .ids = ids, .lengths = lengths};
        st = attn_model_forward(m, &bt, logits, err);
        for (int b = 0; st == ATTN_OK && b < B; b++)
            *correct += (logits[b] > 0.0f) == (d->labels[start + b] == 1);
    }
    free(ids);
    free(lengths);
    free(logits);
    return st;
}

static int eval_report(const char *cmd, attn_model *m, const char *name, attn_dataset *d,
                       int batch) {
    int correct = 0;
    attn_error err;
    if (evaluate(m, d, batch, &correct, &err) != ATTN_OK) {
        fprintf(stderr, "attn %s: %s: %s\n", cmd, name, err.msg);
        return CLI_ERROR;
    }
    printf("%-11s accuracy %6.2f %% (%d/%d)\n", name, d->n ? 100.0 * correct / d->n : 0.0, correct,
           d->n);
    return CLI_OK;
}

int cmd_eval(int argc, char **argv) {
    const char *cmd = "eval";
    if (cli_wants_help(argc, argv)) {
        eval_usage();
        return CLI_OK;
    }
    const char *weights = NULL, *set = NULL, *data = NULL;
    uint64_t seed = 1;
    int n = ATTN_TEST_DEFAULT_N, batch = 1;
    bool have_seed = false, have_n = false;
    for (int i = 1; i < argc; i++) {
        bool matched;
        const char *v;
        if ((v = cli_opt_value(cmd, argc, argv, &i, "--weights", &matched)) || matched) {
            if (!v) return CLI_USAGE;
            weights = v;
        } else if ((v = cli_opt_value(cmd, argc, argv, &i, "--set", &matched)) || matched) {
            if (!v) return CLI_USAGE;
            set = v;
        } else if ((v = cli_opt_value(cmd, argc, argv, &i, "--data", &matched)) || matched) {
            if (!v) return CLI_USAGE;
            data = v;
        } else if ((v = cli_opt_value(cmd, argc, argv, &i, "--seed", &matched)) || matched) {
            if (!cli_parse_u64(cmd, "--seed", v, &seed)) return CLI_USAGE;
            have_seed = true;
        } else if ((v = cli_opt_value(cmd, argc, argv, &i, "--n", &matched)) || matched) {
            if (!cli_parse_int(cmd, "--n", v, 1, ATTN_DATA_MAX_N, &n)) return CLI_USAGE;
            have_n = true;
        } else if ((v = cli_opt_value(cmd, argc, argv, &i, "--batch", &matched)) || matched) {
            if (!cli_parse_int(cmd, "--batch", v, 1, 4096, &batch)) return CLI_USAGE;
        } else {
            return cli_usage_error(cmd, "unexpected argument '%s'", argv[i]);
        }
    }
    if (!weights) return cli_usage_error(cmd, "--weights FILE.json is required");
    if (!set == !data) return cli_usage_error(cmd, "give exactly one of --set and --data");
    if (data && (have_seed || have_n))
        return cli_usage_error(cmd, "--seed and --n apply to --set, not to --data");
    attn_set sets[ATTN_N_TEST_SETS];
    int n_sets = 0;
    if (set && strcmp(set, "all") == 0) {
        static const attn_set all[] = {ATTN_SET_PLAIN, ATTN_SET_DISTRACTOR, ATTN_SET_FILL4,
                                       ATTN_SET_FILL8};
        memcpy(sets, all, sizeof all);
        n_sets = ATTN_N_TEST_SETS;
    } else if (set) {
        attn_error err;
        if (attn_set_from_name(set, &sets[0], &err) != ATTN_OK)
            return cli_usage_error(cmd, "%s", err.msg);
        n_sets = 1;
    }
    attn_model *m = NULL;
    int rc = load_weights(cmd, weights, &m);
    if (rc != CLI_OK) return rc;
    attn_set_num_threads(1);
    attn_error err;
    if (data) {
        attn_dataset *d = NULL;
        if (attn_dataset_read_tsv(data, &d, &err) != ATTN_OK)
            rc = cli_fail(cmd, &err);
        else
            rc = eval_report(cmd, m, data, d, batch);
        attn_dataset_free(d);
    }
    for (int s = 0; s < n_sets && rc == CLI_OK; s++) {
        attn_dataset *d = NULL;
        if (attn_data_generate(sets[s], n, seed, &d, &err) != ATTN_OK)
            rc = cli_fail(cmd, &err);
        else
            rc = eval_report(cmd, m, attn_set_name(sets[s]), d, batch);
        attn_dataset_free(d);
    }
    attn_model_free(m);
    return rc;
}

/* cmd_weights.c -- `attn info`, `attn predict` and `attn eval`: commands that read a weights
 * file (attn-weights-v1 JSON) and run the model. predict and eval use exact mode by default:
 * one sentence per forward pass on one BLAS thread, the protocol under which the logits match
 * PyTorch's batch-1 eval logits bit for bit. */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

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
           "FILE.tsv)\n                 [--batch B]\n"
           "       attn eval --table DIR [--seeds N] [--batch B]\n\n"
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
           "                  bit-identical to PyTorch's batch-1 eval; larger is faster\n"
           "                  and NOT bit-identical: padded batches round differently,\n"
           "                  in PyTorch too)\n"
           "  --table DIR     the write-up's table from DIR/<model>-seed<S>.json (as written\n"
           "                  by attn reproduce), each model on the four test sets of its\n"
           "                  seed; runs in parallel across cores\n"
           "  --seeds N       seeds 1..N with --table (default 3)\n",
           ATTN_TEST_DEFAULT_N);
}

static int eval_report(const char *cmd, attn_model *m, const char *name, attn_dataset *d,
                       int batch) {
    double acc = 0.0;
    attn_error err;
    if (attn_evaluate(m, d, 0, d->n, batch, &acc, &err) != ATTN_OK) {
        fprintf(stderr, "attn %s: %s: %s\n", cmd, name, err.msg);
        return CLI_ERROR;
    }
    int correct = (int)lround(acc * d->n);
    printf("%-11s accuracy %6.2f %% (%d/%d)\n", name, 100.0 * acc, correct, d->n);
    return CLI_OK;
}

/* ---- attn eval --table DIR: the write-up's table from saved weights ---------------------- */

typedef struct table_work {
    const char *dir;
    int batch;
    cli_run_result *runs;
    char (*errors)[ATTN_ERROR_MSG_MAX];
    int n_runs;
    atomic_int next; /* the next run to take */
} table_work;

/* Loads DIR/<model>-seed<S>.json and evaluates it on the four test sets of seed S. */
static void table_run(const table_work *w, int i) {
    cli_run_result *r = &w->runs[i];
    attn_error err = {0};
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-seed%d.json", w->dir, attn_arch_name(r->arch), r->seed);
    attn_model *m = NULL;
    attn_status st = attn_weights_load_json(path, &m, &err);
    if (st == ATTN_OK && attn_model_config_of(m)->arch != r->arch)
        st = attn_errorf(&err, ATTN_ERR_VALUE, "%s holds a %s model", path,
                         attn_arch_name(attn_model_config_of(m)->arch));
    for (int s = 0; s < ATTN_N_TEST_SETS && st == ATTN_OK; s++) {
        attn_dataset *d = NULL;
        st = attn_data_generate(cli_test_sets[s], ATTN_TEST_DEFAULT_N, (uint64_t)r->seed, &d, &err);
        if (st == ATTN_OK) st = attn_evaluate(m, d, 0, d->n, w->batch, &r->acc[s], &err);
        attn_dataset_free(d);
    }
    if (st == ATTN_OK) r->n_params = attn_model_n_params(m);
    r->ok = st == ATTN_OK;
    if (!r->ok) snprintf(w->errors[i], ATTN_ERROR_MSG_MAX, "%s", err.msg);
    attn_model_free(m);
}

static void *table_worker(void *arg) {
    table_work *w = arg;
    for (int i; (i = atomic_fetch_add(&w->next, 1)) < w->n_runs;) table_run(w, i);
    return NULL;
}

static int eval_table(const char *cmd, const char *dir, int seeds, int batch) {
    int n_runs = CLI_N_ARCH * seeds;
    cli_run_result *runs = calloc((size_t)n_runs, sizeof *runs);
    char(*errors)[ATTN_ERROR_MSG_MAX] = calloc((size_t)n_runs, sizeof *errors);
    if (!runs || !errors) {
        free(runs);
        free(errors);
        fprintf(stderr, "attn %s: out of memory\n", cmd);
        return CLI_ERROR;
    }
    for (int a = 0; a < CLI_N_ARCH; a++)
        for (int s = 0; s < seeds; s++)
            runs[a * seeds + s] = (cli_run_result){.arch = (attn_arch)a, .seed = s + 1};
    table_work w = {.dir = dir, .batch = batch, .runs = runs, .errors = errors, .n_runs = n_runs};
    atomic_init(&w.next, 0);
    /* one BLAS thread per worker keeps every logit bit-identical to the exact mode */
    attn_set_num_threads(1);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int n_threads = ncpu > 1 ? (int)(ncpu < 16 ? ncpu : 16) : 1;
    pthread_t threads[16];
    int started = 0;
    for (; started < n_threads - 1; started++)
        if (pthread_create(&threads[started], NULL, table_worker, &w) != 0) break;
    table_worker(&w);
    for (int t = 0; t < started; t++) pthread_join(threads[t], NULL);

    int failures = 0;
    for (int i = 0; i < n_runs; i++)
        if (!runs[i].ok) {
            fprintf(stderr, "attn %s: %s\n", cmd, errors[i]);
            failures++;
        }
    if (failures < n_runs) cli_print_results_table(stdout, runs, n_runs);
    free(runs);
    free(errors);
    return failures ? CLI_ERROR : CLI_OK;
}

int cmd_eval(int argc, char **argv) {
    const char *cmd = "eval";
    if (cli_wants_help(argc, argv)) {
        eval_usage();
        return CLI_OK;
    }
    const char *weights = NULL, *set = NULL, *data = NULL, *table = NULL;
    uint64_t seed = 1;
    int n = ATTN_TEST_DEFAULT_N, batch = 1, seeds = 3;
    bool have_seed = false, have_n = false, have_seeds = false;
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
        } else if ((v = cli_opt_value(cmd, argc, argv, &i, "--table", &matched)) || matched) {
            if (!v) return CLI_USAGE;
            table = v;
        } else if ((v = cli_opt_value(cmd, argc, argv, &i, "--seeds", &matched)) || matched) {
            if (!cli_parse_int(cmd, "--seeds", v, 1, 100, &seeds)) return CLI_USAGE;
            have_seeds = true;
        } else {
            return cli_usage_error(cmd, "unexpected argument '%s'", argv[i]);
        }
    }
    if (table) {
        if (weights || set || data || have_seed || have_n)
            return cli_usage_error(cmd, "--table takes only --seeds and --batch");
        return eval_table(cmd, table, seeds, batch);
    }
    if (have_seeds) return cli_usage_error(cmd, "--seeds goes with --table");
    if (table) {
        if (weights || set || data || have_seed || have_n)
            return cli_usage_error(cmd, "--table takes only --seeds and --batch");
        return eval_table(cmd, table, seeds, batch);
    }
    if (have_seeds) return cli_usage_error(cmd, "--seeds goes with --table");
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

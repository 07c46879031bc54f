/* cmd_eval.c -- `attn eval`: accuracy of weights on generated sets or a TSV file, and
 * `attn eval --table DIR`: the write-up's table from the weights attn reproduce wrote. */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char about[] =
    "Accuracy of the weights on generated sets or on a TSV file ('label<TAB>sentence'\n"
    "lines), one line per set:\n"
    "  plain       accuracy  99.70 % (997/1000), 95 % interval 99.1-99.9 %, majority-class\n"
    "              baseline 50.3 %\n"
    "(the interval: Wilson's score interval; the baseline: always answering the set's\n"
    "commoner label; a warning on stderr when the interval holds the baseline).\n"
    "With --table: the write-up's table from DIR/<model>-seed<S>.json (as attn reproduce\n"
    "writes them), each model evaluated on the four test sets of its seed, in parallel\n"
    "worker processes.";

static const char notes[] =
    "--batch 1 is exact mode: logits bit-identical to PyTorch's batch-1 eval. A larger\n"
    "batch is faster and NOT bit-identical: padded batches round differently (in PyTorch\n"
    "too).\n\n"
    "--data sentences are read with the weights file's own \"vocab\" when it has one (else\n"
    "the built-in vocabulary); a word it lacks reads as [UNK] where it has that token (one\n"
    "warning counts them), else the line is bad. Every bad line is reported with its number; --set "
    "generates sentences of the built-in vocabulary, so it\n"
    "needs a file without a vocabulary of its own.\n\n"
    "Seq2seq weights (attn-seq2seq-weights-v1): exact match and token accuracy of greedy\n"
    "decoding per set of the model's task and by source length (10-word buckets); --data\n"
    "FILE.tsv holds 'source<TAB>target' lines as attn data --task prints them (the first bad\n"
    "line is reported with its number). Compose models add the teacher-forced loss per\n"
    "target token. --threads decodes the pairs on N threads, one pair per thread at a time;\n"
    "the output is the same for every N.";

static int eval_report(attn_model *m, const char *name, attn_dataset *d, int batch,
                       attn_pool *pool) {
    double acc = 0.0;
    attn_error err;
    if (attn_evaluate_pool(m, d, 0, d->n, batch, pool, &acc, &err) != ATTN_OK) {
        cli_message("eval", "%s: %s", name, err.msg);
        return CLI_ERROR;
    }
    int correct = (int)lround(acc * d->n), positive = 0;
    for (int i = 0; i < d->n; i++) positive += d->labels[i] == 1;
    attn_accuracy_verdict v;
    if (attn_accuracy_verdict_of(correct, d->n, positive, &v, &err) != ATTN_OK)
        return cli_fail("eval", &err);
    char text[128];
    cli_verdict_text(text, sizeof text, &v);
    printf("%-11s accuracy %6.2f %% (%d/%d), %s\n", name, 100.0 * acc, correct, d->n, text);
    cli_warn_chance("eval", name, d->n, &v);
    return CLI_OK;
}

static int eval_table(const char *dir, const char *models, int seeds, int batch, int threads) {
    bool want[CLI_MAX_ARCH];
    int rc = cli_parse_models("eval", models, dir, want);
    if (rc >= 0) return rc;
    cli_run_result *runs = calloc((size_t)CLI_MAX_ARCH * seeds, sizeof *runs);
    if (!runs) {
        fprintf(stderr, "attn eval: out of memory\n");
        return CLI_ERROR;
    }
    int n = 0;
    for (int a = 0; a < CLI_MAX_ARCH; a++)
        for (int s = 0; s < seeds && want[a]; s++)
            runs[n++] = (cli_run_result){.arch = (attn_arch)a, .seed = s + 1};
    /* every core busy: processes for the runs, threads within each */
    int workers = 0;
    rc = cli_threads_split("eval", n, false, &workers, &threads);
    if (rc >= 0) {
        free(runs);
        return rc;
    }
    cli_run_settings rs = {.dir = dir, .batch = batch, .workers = workers, .threads = threads};
    int failures = cli_runs_execute("eval", &rs, runs, n);
    if (failures < n) cli_print_results_table(stdout, runs, n);
    free(runs);
    return failures ? CLI_ERROR : CLI_OK;
}

/* One line per set of --set, or the one line of --data. */
static int eval_weights(const char *weights, const char *data, const attn_set *sets, int n_sets,
                        int n, bool n_given, uint64_t seed, int batch, int threads) {
    attn_model *m = NULL;
    const attn_vocab *vocab = NULL;
    attn_error err;
    int rc = cli_load_weights("eval", weights, &m, &vocab);
    if (rc >= 0) return rc;
    rc = CLI_OK;
    /* generated sentences are ids of the built-in vocabulary */
    if (n_sets > 0 && !attn_vocab_is_builtin(vocab))
        rc = cli_runtime_error("eval",
                               "%s has its own vocabulary (%d tokens); --set generates sentences "
                               "of the built-in one: give them with --data FILE.tsv",
                               weights, attn_vocab_count(vocab));
    attn_pool *pool = NULL;
    if (rc == CLI_OK) {
        int trc = cli_threads_start("eval", &threads, &pool); /* same accuracy for every N */
        if (trc >= 0) rc = trc;
    }
    if (data && rc == CLI_OK) {
        attn_dataset *d = NULL;
        rc = cli_read_tsv("eval", data, vocab, &d);
        if (rc < 0) rc = eval_report(m, data, d, batch, pool);
        attn_dataset_free(d);
    }
    for (int s = 0; s < n_sets && rc == CLI_OK; s++) {
        attn_dataset *d = NULL;
        int size = n_given ? n : cli_set_default_n(sets[s]);
        if (attn_data_generate(sets[s], size, seed, &d, &err) != ATTN_OK)
            rc = cli_fail("eval", &err);
        else
            rc = eval_report(m, attn_set_name(sets[s]), d, batch, pool);
        attn_dataset_free(d);
    }
    attn_pool_free(pool);
    attn_model_free(m);
    attn_vocab_free(vocab);
    return rc;
}

int cmd_eval(int argc, char **argv) {
    const char *weights = NULL, *set = NULL, *data = NULL, *table = NULL, *models = NULL;
    uint64_t seed = 1;
    int n = 0, batch = 1, seeds = 3, threads = 0;
    cli_opt opts[] = {
        {"--weights", "FILE", CLI_OPT_STR, &weights, .help = CLI_WEIGHTS_HELP},
        {"--set", "NAME", CLI_OPT_STR, &set, .help = CLI_SET_NAMES},
        {"--seed", "S", CLI_OPT_U64, &seed, .help = "generator seed of --set, as attn data"},
        {"--n", "N", CLI_OPT_INT, &n, 1, ATTN_DATA_MAX_N, .def = "",
         .help = "sentences per --set; default 8000 for train, 500 for holdout,\n"
                 "1000 for each test set, as attn data"},
        {"--data", "FILE.tsv", CLI_OPT_STR, &data,
         .help = "a TSV file instead of --set (seq2seq: source<TAB>target)"},
        {"--batch", "B", CLI_OPT_INT, &batch, 1, 4096,
         .help = "sentences per forward pass; 1 is exact mode"},
        {"--table", "DIR", CLI_OPT_STR, &table,
         .help = "the write-up's table from DIR/<model>-seed<S>.json"},
        {"--seeds", "N", CLI_OPT_INT, &seeds, 1, 100, .help = "seeds 1..N with --table"},
        CLI_THREADS_OPT(&threads),
        {"--models", "LIST", CLI_OPT_STR, &models, .def = "rnn,lstm,transformer (+gru if there)",
         .help = "with --table: comma-separated columns of rnn, gru, lstm,\n"
                 "transformer; by default the GRU too when DIR/gru-seed1.json exists"},
    };
    cli_spec spec = CLI_SPEC("eval",
                             "--weights FILE --set NAME [--seed S] [--n N] [--batch B]\n"
                             "--weights FILE --data FILE.tsv [--batch B]\n"
                             "--table DIR [--seeds N] [--models LIST] [--batch B]",
                             about, NULL, notes, opts);
    int rc = cli_parse(&spec, argc, argv, NULL, NULL);
    if (rc >= 0) return rc;
    bool have_seed = cli_given(&spec, "--seed"), have_n = cli_given(&spec, "--n");
    if (table) {
        if (weights || set || data || have_seed || have_n)
            return cli_usage_error("eval",
                                   "--table takes only --seeds, --models, --batch and --threads");
        return eval_table(table, models, seeds, batch, threads);
    }
    if (cli_given(&spec, "--seeds") || models)
        return cli_usage_error("eval", "--seeds and --models go with --table");
    if (!weights) return cli_usage_error("eval", "--weights FILE (or --table DIR) is required");
    if (!set == !data) return cli_usage_error("eval", "give exactly one of --set and --data");
    if (data && (have_seed || have_n))
        return cli_usage_error("eval", "--seed and --n apply to --set, not to --data");
    attn_set sets[ATTN_N_TEST_SETS];
    int n_sets = 0;
    if (set && !cli_sets_from_name(set, sets, &n_sets))
        return cli_usage_error("eval", "--set expects %s, got '%s'", CLI_SET_NAMES, set);
    if (cli_is_seq2seq_weights(weights)) {
        return cli_eval_seq2seq(weights, sets, n_sets, have_n ? n : 0, seed, data, threads);
    }
    return eval_weights(weights, data, sets, n_sets, n, have_n, seed, batch, threads);
}

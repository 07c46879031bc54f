/* cmd_reproduce.c -- `attn reproduce`: the write-up's tables, one command with one option table
 * and help. Without --task: trains the RNN, the LSTM and the Transformer for seeds 1..N in
 * parallel worker processes (runs.c), prints the table, writes DIR/reproduce.json (settings,
 * OpenBLAS core and accuracies; no timings, so the same run on the same kind of machine writes
 * the same bytes) and says whether the weights are identical to the committed ones in weights/.
 * --task rewrite and --task compose run the seq2seq tables (reproduce_rewrite.c,
 * reproduce_compose.c) with what this file parsed. */
#define _DEFAULT_SOURCE /* realpath */
#include "attn_kernels.h"
#include "reproduce_cli.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define COMMITTED "weights" /* the committed weights, relative to the repository root */

static const char about[] =
    "Without --task: trains the RNN, the LSTM and the Transformer for seeds 1..N (8000\n"
    "generated training sentences each; the 500-sentence holdout set of the seed picks the best\n"
    "epoch) in parallel worker processes (-j), each run on --threads threads (one BLAS thread\n"
    "per product; the weights are the same for every count), evaluates every run on the four\n"
    "1000-sentence test sets of its seed (plain, distractor, fill4, fill8), and prints the\n"
    "write-up's table: accuracy range across seeds per test set and model, parameter counts,\n"
    "wall time. Then it compares the nine weights files with the committed ones in weights/.\n"
    "\n"
    "--task rewrite: trains the seq2seq models on the rewrite task -- seq2seq-gru (the source\n"
    "squeezed into one vector), seq2seq-attn (Bahdanau attention) and the seq2seq-transformer\n"
    "--, each run in a worker process on one BLAS thread, scores each on the four test sets of\n"
    "its seed by exact match of greedy decoding, and prints the range across seeds per test set\n"
    "and by source length (10-word buckets) for each model.\n"
    "\n"
    "--task compose: trains the seq2seq-transformer on the compose task ('<polarity> <subject>'\n"
    "-> a review sentence; lr 3e-3; the epoch kept: the lowest held-out loss) and prints, as the\n"
    "range across seeds, the loss per target token on the four test sets of each seed and what\n"
    "the grammar parser says of 25 samples per source (2 polarities x 8 subjects) at\n"
    "temperature 1: grammatical, with the polarity and the subject asked for, and novel (not one\n"
    "of the training sentences); with --classifier, the share of samples a trained sentiment\n"
    "classifier reads with the polarity asked for, and of grammatical ones with the parse's\n"
    "label.";

static const char notes[] =
    "Writes DIR/<model>-seed<S>.json and DIR/reproduce.json (settings, the OpenBLAS core,\n"
    "accuracies); --task rewrite DIR/<model>-seed<S>.json, --task compose (with --out only)\n"
    "DIR/compose-seq2seq-transformer-seed<S>.json. runs/ is git-ignored; only --out weights\n"
    "rewrites the committed weights. Options of one task only are refused, exit 2, for the\n"
    "others. Training is deterministic: the same command gives the same bytes on every x86-64\n"
    "CPU with AVX2 (attn runs OpenBLAS's Haswell kernels whatever the CPU; --kernels native\n"
    "trades that for OpenBLAS's own choice, whose products round differently;\n"
    "docs/numerics.md). --models rnn,gru,lstm,transformer adds the GRU (nn.GRU, the LSTM's\n"
    "sizes) as a column.\n"
    "The seq2seq GRU models train with Adam at lr 3e-3, the Transformer at 1e-3 (the defaults\n"
    "of attn train). Each seq2seq run is deterministic: its weights and scores equal `attn\n"
    "train --model M --task rewrite --seed S --epochs E` whatever -j is. Under mpirun the\n"
    "classifier runs are spread over the ranks; the rewrite runs go one after another, each\n"
    "spread over every rank (attn train's steps over ranks): the same weights as without\n"
    "mpirun, for any -np. docs/decoder.md has the seq2seq tables as measured.";

typedef struct repro_opts {
    int seeds, workers, epochs, train_size, eval_batch;
    const char *out_dir;
    const char *models; /* comma-separated, e.g. "rnn,gru,lstm,transformer" */
    int threads;        /* per run; 0 until resolved */
} repro_opts;

/* The kernels the runs ran on: this process's, on the one BLAS thread each worker runs
 * (src/cli/runs.c). */
static void run_kernels(attn_kernels_info *k) {
    attn_kernels_info_get(k);
    k->blas_threads = 1;
}

/* DIR/reproduce.json: no timings and no worker count, only what determines the weights. */
static int write_report(const repro_opts *o, const cli_run_result *runs, int n) {
    attn_report_run *rr = calloc((size_t)n + 1, sizeof *rr);
    char(*names)[64] = calloc((size_t)n + 1, sizeof *names);
    if (!rr || !names) {
        free(rr);
        free(names);
        fprintf(stderr, "attn reproduce: out of memory\n");
        return CLI_ERROR;
    }
    for (int i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], "%s-seed%d.json", attn_arch_name(runs[i].arch),
                 runs[i].seed);
        rr[i] = (attn_report_run){runs[i].arch, runs[i].seed, runs[i].n_params, {0}, names[i]};
        memcpy(rr[i].acc, runs[i].acc, sizeof rr[i].acc);
    }
    attn_kernels_info kernels;
    run_kernels(&kernels);
    attn_report rep = {
        o->epochs, o->train_size, o->seeds, o->eval_batch, attn_blas_corename(), {NULL}, rr,
        n,         &kernels};
    for (int s = 0; s < ATTN_N_TEST_SETS; s++) rep.set_names[s] = attn_set_name(cli_test_sets[s]);
    char path[4096];
    snprintf(path, sizeof path, "%s/reproduce.json", o->out_dir);
    attn_error err = {0};
    int rc =
        attn_report_save_json(&rep, path, &err) == ATTN_OK ? CLI_OK : cli_fail("reproduce", &err);
    free(rr);
    free(names);
    if (rc == CLI_OK) cli_message("reproduce", "wrote %s and the weights", path);
    return rc;
}

/* Counts the runs whose weights equal weights/<model>-seed<S>.json byte for byte. */
static void count_identical(const repro_opts *o, const cli_run_result *runs, int n, int *same,
                            int *compared) {
    *same = *compared = 0;
    for (int i = 0; i < n; i++) {
        char mine[4096], theirs[256];
        snprintf(theirs, sizeof theirs, COMMITTED "/%s-seed%d.json", attn_arch_name(runs[i].arch),
                 runs[i].seed);
        snprintf(mine, sizeof mine, "%s/%s-seed%d.json", o->out_dir, attn_arch_name(runs[i].arch),
                 runs[i].seed);
        struct stat st;
        if (!runs[i].ok || stat(theirs, &st) != 0) continue;
        (*compared)++;
        *same += cli_same_bytes(mine, theirs);
    }
}

/* "identical to weights/: 9/9", with the reason when they differ or cannot be compared: like
 * is compared with like through the kernels record of weights/reproduce.json. */
static void compare_with_committed(const repro_opts *o, const cli_run_result *runs, int n) {
    char a[PATH_MAX], b[PATH_MAX];
    if (realpath(o->out_dir, a) && realpath(COMMITTED, b) && strcmp(a, b) == 0) return;
    attn_report_header rep;
    attn_error err;
    if (attn_report_peek(COMMITTED "/reproduce.json", &rep, &err) != ATTN_OK) {
        printf("identical to weights/: not compared (%s)\n", err.msg);
        return;
    }
    int epochs = rep.epochs, size = rep.train_size;
    if (epochs != o->epochs || size != o->train_size) {
        printf("identical to weights/: not compared (weights/ has %d epochs and %d training "
               "sentences, this run %d and %d)\n",
               epochs, size, o->epochs, o->train_size);
        return;
    }
    int same = 0, compared = 0;
    count_identical(o, runs, n, &same, &compared);
    attn_kernels_info mine;
    run_kernels(&mine);
    char theirs_text[160], mine_text[160];
    attn_kernels_info_describe(&mine, mine_text, sizeof mine_text);
    if (rep.has_kernels)
        attn_kernels_info_describe(&rep.kernels, theirs_text, sizeof theirs_text);
    else
        snprintf(theirs_text, sizeof theirs_text, "OpenBLAS core %s", rep.blas_core);
    if (same == compared)
        printf("identical to weights/: %d/%d\n", same, compared);
    else if (!rep.has_kernels || !attn_kernels_info_same(&rep.kernels, &mine))
        printf("identical to weights/: %d/%d (not like with like: weights/ made with %s, this run "
               "%s; products round differently)\n",
               same, compared, theirs_text, mine_text);
    else
        printf("identical to weights/: %d/%d (both made with %s)\n", same, compared, mine_text);
}

static void print_summary(const repro_opts *o, const cli_run_result *runs, int n, double wall) {
    cli_print_results_table(stdout, runs, n);
    char wall_s[32];
    cli_fmt_duration(wall_s, sizeof wall_s, wall);
    char ranks[48] = ""; /* under mpirun: "2 ranks of " */
    if (cli_mpi_on())
        snprintf(ranks, sizeof ranks, "%d %s of ", cli_mpi_size(),
                 cli_plural(cli_mpi_size(), "rank", "ranks"));
    printf("\nTotal wall time: %s (%d runs of %d %s on %s%d %s x %d %s)\n", wall_s, n, o->epochs,
           cli_plural(o->epochs, "epoch", "epochs"), ranks, o->workers,
           cli_plural(o->workers, "worker", "workers"), o->threads,
           cli_plural(o->threads, "thread", "threads"));
}

/* The n runs of the wanted models and seeds, longest first so that the last worker to finish
 * is a short one; NULL when out of memory. */
static cli_run_result *plan_runs(const repro_opts *o, const bool *want, int n) {
    cli_run_result *runs = calloc((size_t)n, sizeof *runs);
    if (!runs) return NULL;
    static const attn_arch order[CLI_MAX_ARCH] = {ATTN_ARCH_TRANSFORMER, ATTN_ARCH_LSTM,
                                                  ATTN_ARCH_GRU, ATTN_ARCH_RNN};
    for (int a = 0, k = 0; a < CLI_MAX_ARCH; a++)
        for (int s = 1; s <= o->seeds && want[order[a]]; s++, k++)
            runs[k] = (cli_run_result){.arch = order[a], .seed = s};
    return runs;
}

/* The line that says what the n runs are, on stderr. */
static void print_plan(const repro_opts *o, const bool *want, int n) {
    char models[64] = "", seeds[32]; /* "rnn, lstm, transformer" */
    for (int a = 0; a < CLI_MAX_ARCH; a++) {
        static const attn_arch listed[CLI_MAX_ARCH] = {ATTN_ARCH_RNN, ATTN_ARCH_GRU, ATTN_ARCH_LSTM,
                                                       ATTN_ARCH_TRANSFORMER};
        if (want[listed[a]])
            snprintf(models + strlen(models), sizeof models - strlen(models), "%s%s",
                     models[0] ? ", " : "", attn_arch_name(listed[a]));
    }
    snprintf(seeds, sizeof seeds, o->seeds == 1 ? "seed 1" : "seeds 1..%d", o->seeds);
    fprintf(stderr,
            "attn reproduce: %d runs (%s x %s), %d %s, %d training "
            "sentences, %d %s x %d %s, into %s/\n",
            n, models, seeds, o->epochs, cli_plural(o->epochs, "epoch", "epochs"), o->train_size,
            o->workers, cli_plural(o->workers, "worker", "workers"), o->threads,
            cli_plural(o->threads, "thread", "threads"), o->out_dir);
}

/* The classifiers' table (no --task): the runs in workers, or spread over the ranks. */
static int run_classifiers(const cli_repro_args *a) {
    repro_opts o = {a->seeds,      a->workers, a->epochs, a->train_size,
                    a->eval_batch, a->out,     a->models, a->threads};
    bool want[CLI_MAX_ARCH];
    int rc = cli_parse_models("reproduce", o.models, NULL, want);
    if (rc >= 0) return rc;
    if ((rc = cli_reproduce_open_out(a)) != CLI_OK) return rc;
    int n_models = 0;
    for (int k = 0; k < CLI_MAX_ARCH; k++) n_models += want[k];
    int n = n_models * o.seeds;
    if (cli_mpi_on() && o.threads == 0 && !getenv("ATTN_THREADS"))
        o.threads = 1; /* a rank a core */
    rc = cli_threads_split("reproduce", n, cli_given(a->spec, "-j") || cli_mpi_on(), &o.workers,
                           &o.threads);
    if (rc >= 0) return rc;
    cli_run_result *runs = plan_runs(&o, want, n);
    if (!runs) {
        fprintf(stderr, "attn reproduce: out of memory\n");
        return CLI_ERROR;
    }
    if (cli_mpi_root()) print_plan(&o, want, n);
    cli_run_settings rs = {o.out_dir,    true,      o.epochs, o.train_size,
                           o.eval_batch, o.workers, true,     o.threads};
    double start = attn_seconds();
    int failures = cli_runs_execute("reproduce", &rs, runs, n);
    if (!cli_mpi_root()) { /* rank 0 has every result and writes */
        free(runs);
        return CLI_OK;
    }
    print_summary(&o, runs, n, attn_seconds() - start);
    /* under mpirun nothing is written (nor compared) unless every run succeeded */
    const bool none_written = failures && cli_mpi_on();
    rc = none_written ? CLI_ERROR : write_report(&o, runs, n);
    if (!none_written) compare_with_committed(&o, runs, n);
    if (failures) {
        fprintf(stderr, "attn reproduce: %d of %d runs failed\n", failures, n);
        rc = CLI_ERROR;
    }
    free(runs);
    return rc;
}

int cli_reproduce_open_out(const cli_repro_args *a) {
    int rc = CLI_OK;
    if (a->out && cli_mpi_root()) rc = cli_make_dir("reproduce", "--out", a->out);
    if (a->out && cli_mpi_root() && rc == CLI_OK)
        rc = cli_lock_output("reproduce", "--out", a->out);
    return cli_mpi_agree(rc); /* rank 0 made DIR, or said why not */
}

/* ---- the one option table ------------------------------------------------------------------- */

enum { TASK_CLASSIFIERS = -1 }; /* no --task; else an attn_task */

/* The options of some tasks only, refused for the others (a NULL-terminated list each). */
static const char *const seq2seq_only[] = {"--holdout", "--test-size", NULL};
static const char *const rewrite_only[] = {"--size", "--norm", NULL};
static const char *const compose_only[] = {"--classifier", NULL};
static const char *const classifier_only[] = {"--threads", "--eval-batch", NULL};
static const char *const not_compose[] = {"--models", NULL};

static int refuse_other_tasks(cli_spec *spec, int task) {
    int rc = -1;
    if (task != ATTN_TASK_REWRITE && rc < 0)
        rc = cli_refuse_given(spec, rewrite_only, "--task rewrite");
    if (task != ATTN_TASK_COMPOSE && rc < 0)
        rc = cli_refuse_given(spec, compose_only, "--task compose");
    if (task == TASK_CLASSIFIERS && rc < 0)
        rc = cli_refuse_given(spec, seq2seq_only, "--task rewrite and --task compose");
    if (task != TASK_CLASSIFIERS && rc < 0)
        rc = cli_refuse_given(spec, classifier_only, "the classifiers' table (no --task)");
    if (task == ATTN_TASK_COMPOSE && rc < 0)
        rc = cli_refuse_given(spec, not_compose, "the classifiers' table and --task rewrite");
    return rc;
}

/* The defaults that differ by task, for the options not given; the seq2seq tasks' bounds. */
static int task_defaults(cli_repro_args *a, int task) {
    cli_spec *spec = a->spec;
    const bool base = task == ATTN_TASK_REWRITE && a->size && strcmp(a->size, "base") == 0;
    if (!cli_given(spec, "--seeds")) a->seeds = task == ATTN_TASK_COMPOSE || base ? 1 : 3;
    if (task == TASK_CLASSIFIERS) {
        if (!a->models) a->models = "rnn,lstm,transformer";
        if (!a->epochs) a->epochs = 20;
        if (!a->workers) a->workers = cli_mpi_on() ? 1 : cli_n_cores(); /* the rank is the unit */
        return -1;
    }
    if (a->seeds > CLI_REPRO_S2S_MAX_SEEDS)
        return cli_usage_error("reproduce", "--seeds %d: --task %s takes 1..%d", a->seeds,
                               task == ATTN_TASK_REWRITE ? "rewrite" : "compose",
                               CLI_REPRO_S2S_MAX_SEEDS);
    if (a->epochs > ATTN_S2S_MAX_EPOCHS)
        return cli_usage_error("reproduce", "--epochs %d: the seq2seq tasks take 1..%d", a->epochs,
                               ATTN_S2S_MAX_EPOCHS);
    if (!a->workers) a->workers = cli_n_cores();
    if (task == ATTN_TASK_COMPOSE && !a->epochs) a->epochs = 10;
    if (base && !cli_given(spec, "--holdout")) a->holdout = 100; /* decoding dominates there */
    if (base && !cli_given(spec, "--test-size")) a->test_size = 100;
    return -1;
}

static int run_task(cli_repro_args *a, const char *task_name) {
    int task = TASK_CLASSIFIERS;
    if (task_name) {
        attn_task t;
        attn_error err;
        if (attn_task_from_name(task_name, &t, &err) != ATTN_OK)
            return cli_usage_error("reproduce", "--task: %s", err.msg);
        task = (int)t;
    }
    int rc = refuse_other_tasks(a->spec, task);
    if (rc < 0) rc = task_defaults(a, task);
    if (rc >= 0) return rc;
    if (!a->out && task != ATTN_TASK_COMPOSE) a->out = "runs";
    return task == TASK_CLASSIFIERS    ? run_classifiers(a)
           : task == ATTN_TASK_REWRITE ? cli_reproduce_rewrite(a)
                                       : cli_reproduce_compose(a);
}

static const char usage[] =
    "[--seeds N] [-j N] [--threads N] [--out DIR] [--epochs N] [--train-size N] [--eval-batch B]"
    " [--models LIST]\n"
    "--task rewrite [--seeds N] [--models LIST] [--epochs N] [--size small|base] "
    "[--norm pre|post] [-j N] [--out DIR]\n"
    "--task compose [--seeds N] [--epochs N] [--train-size N] [--classifier FILE.json] [-j N] "
    "[--out DIR]";

int cmd_reproduce(int argc, char **argv) {
    const char *task = NULL;
    cli_repro_args a = {.seeds = 3,
                        .holdout = attn_s2s_train_config_default().holdout,
                        .train_size = ATTN_TRAIN_DEFAULT_N,
                        .test_size = ATTN_TEST_DEFAULT_N,
                        .eval_batch = 1};
    cli_opt opts[] = {
        {"--task", "NAME", CLI_OPT_STR, &task, .def = "",
         .help = "rewrite or compose: a seq2seq table; none: the classifiers' table"},
        {"--seeds", "N", CLI_OPT_INT, &a.seeds, 1, CLI_REPRO_MAX_SEEDS,
         .def = "3; compose and --size base 1", .help = "seeds 1..N (the seq2seq tasks: up to 20)"},
        {"--models", "LIST", CLI_OPT_STR, &a.models,
         .def = "rnn,lstm,transformer; rewrite all three",
         .help = "comma-separated: rnn, gru, lstm, transformer (the table's columns in that\n"
                 "order); rewrite: seq2seq-gru, seq2seq-attn, seq2seq-transformer"},
        {"--epochs", "N", CLI_OPT_INT, &a.epochs, 1, 100000,
         .def = "20; rewrite per model 10, 4, 10, base 1; compose 10", .help = "epochs per run"},
        {"--train-size", "N", CLI_OPT_INT, &a.train_size, 2, ATTN_DATA_MAX_N,
         .help = "generated training sentences (pairs) per seed"},
        {"-j", "N", CLI_OPT_INT, &a.workers, 1, 1024,
         .def = "the cores; the classifiers: the cores / --threads, 1 per rank under mpirun",
         .help = "worker processes, one run each at a time"},
        {"--threads", "N", CLI_OPT_INT, &a.threads, 1, ATTN_MAX_THREADS,
         .def = "$ATTN_THREADS, else the cores / -j (1 under mpirun)",
         .help = "the classifiers: threads per run; the weights are the same for every N"},
        {"--eval-batch", "B", CLI_OPT_INT, &a.eval_batch, 1, 4096,
         .help = "the classifiers: sentences per forward pass in the evaluation; 1 is exact mode"},
        {"--holdout", "N", CLI_OPT_INT, &a.holdout, 0, ATTN_DATA_MAX_N, .def = "500; base 100",
         .help = "seq2seq: held-out pairs scored after every epoch (0: none)"},
        {"--test-size", "N", CLI_OPT_INT, &a.test_size, 1, ATTN_DATA_MAX_N, .def = "1000; base 100",
         .help = "seq2seq: pairs of each test set (rewrite: decoded greedily)"},
        {"--size", "NAME", CLI_OPT_STR, &a.size, .def = "small",
         .help = "rewrite: small (the models of the table), or base: the seq2seq-transformer at\n"
                 "section 6's base sizes (d_model 512, 8 heads, FFN 2048, 6+6 layers), weights as\n"
                 "DIR/seq2seq-transformer-base-seed<S>.safetensors"},
        {"--norm", "pre|post", CLI_OPT_STR, &a.norm, .def = "pre",
         .help = "rewrite: the seq2seq-transformer's LayerNorm placement: pre (the table's), or\n"
                 "post (section 6's base Transformer, LayerNorm after each residual sum)"},
        {"--classifier", "FILE.json", CLI_OPT_STR, &a.classifier, .def = "",
         .help = "compose: a sentiment classifier's weights (attn train) that judges the\n"
                 "samples too"},
        {"--out", "DIR", CLI_OPT_STR, &a.out, .def = "runs; compose: nothing written",
         .help = "where the weights (and reproduce.json) go"},
    };
    cli_spec spec = CLI_SPEC("reproduce", usage, about, NULL, notes, opts);
    a.spec = &spec;
    int rc = cli_parse(&spec, argc, argv, NULL, NULL);
    return rc >= 0 ? rc : run_task(&a, task);
}

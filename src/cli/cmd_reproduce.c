/* cmd_reproduce.c -- `attn reproduce`: the write-up's experiment. Trains the RNN, the LSTM and
 * the Transformer for seeds 1..N in parallel worker processes (runs.c), prints the table,
 * writes DIR/reproduce.json (settings, OpenBLAS core and accuracies; no timings, so the same
 * run on the same kind of machine writes the same bytes) and says whether the weights are
 * identical to the committed ones in weights/. */
#define _DEFAULT_SOURCE /* realpath */
#include "attn_kernels.h"
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_SEEDS 100
#define COMMITTED "weights" /* the committed weights, relative to the repository root */

static const char about[] =
    "Trains the RNN, the LSTM and the Transformer for seeds 1..N (8000 generated training\n"
    "sentences each; the 500-sentence holdout set of the seed picks the best epoch) in\n"
    "parallel worker processes (-j), each run on --threads threads (one BLAS thread per\n"
    "product; the weights are the same for every count), evaluates every run on the four\n"
    "1000-sentence test sets of its seed (plain, distractor, fill4, fill8), and prints the\n"
    "write-up's table: accuracy range across seeds per test set and model, parameter counts,\n"
    "wall time. Then it compares the nine weights files with the committed ones in weights/.\n"
    "--task rewrite|compose reproduces the decoder models' table instead (docs/decoder.md).";

static const char notes[] =
    "Writes DIR/<model>-seed<S>.json and DIR/reproduce.json (settings, the OpenBLAS core,\n"
    "accuracies). runs/ is git-ignored; only --out weights rewrites the committed weights.\n"
    "Training is deterministic: the same command gives the same bytes on every x86-64 CPU\n"
    "with AVX2 (attn runs OpenBLAS's Haswell kernels whatever the CPU; --kernels native trades\n"
    "that for OpenBLAS's own choice, whose products round differently; docs/numerics.md).\n"
    "--models rnn,gru,lstm,transformer adds the GRU (nn.GRU, the LSTM's sizes) as a column.";

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

int cmd_reproduce(int argc, char **argv) {
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) /* seq2seq: its own file */
        if (strcmp(argv[i], "--task") == 0 || strncmp(argv[i], "--task=", 7) == 0)
            return cmd_reproduce_seq2seq(argc, argv);
    repro_opts o = {3,      cli_n_cores(),          20, ATTN_TRAIN_DEFAULT_N, 1,
                    "runs", "rnn,lstm,transformer", 0};
    if (cli_mpi_on()) o.workers = 1; /* under mpirun the rank is the unit, unless -j says */
    cli_opt opts[] = {
        {"--seeds", "N", CLI_OPT_INT, &o.seeds, 1, MAX_SEEDS, .help = "seeds 1..N"},
        {"-j", "N", CLI_OPT_INT, &o.workers, 1, 1024,
         .def = "the cores / --threads; 1 per rank under mpirun",
         .help = "worker processes, one run each at a time"},
        {"--threads", "N", CLI_OPT_INT, &o.threads, 1, ATTN_MAX_THREADS,
         .def = "$ATTN_THREADS, else the cores / -j (1 under mpirun)",
         .help = "threads per run; the weights are the same for every N"},
        {"--out", "DIR", CLI_OPT_STR, &o.out_dir,
         .help = "where the weights and reproduce.json go"},
        {"--epochs", "N", CLI_OPT_INT, &o.epochs, 1, 100000, .help = "epochs per run"},
        {"--train-size", "N", CLI_OPT_INT, &o.train_size, 2, ATTN_DATA_MAX_N,
         .help = "generated training sentences per seed"},
        {"--eval-batch", "B", CLI_OPT_INT, &o.eval_batch, 1, 4096,
         .help = "sentences per forward pass in the evaluation; 1 is exact mode"},
        {"--models", "LIST", CLI_OPT_STR, &o.models,
         .help = "comma-separated models of rnn, gru, lstm, transformer (the table's columns "
                 "in that order)"},
    };
    cli_spec spec =
        CLI_SPEC("reproduce",
                 "[--seeds N] [-j N] [--threads N] [--out DIR] [--epochs N] [--train-size N] "
                 "[--eval-batch B] "
                 "[--models LIST]\n"
                 "--task rewrite [--seeds N] [OPTIONS]   the three seq2seq models (attn reproduce\n"
                 "      --task rewrite --help)\n"
                 "--task compose [--seeds N] [OPTIONS]   the seq2seq-transformer on compose",
                 about, NULL, notes, opts);
    int rc = cli_parse(&spec, argc, argv, NULL, NULL);
    if (rc >= 0) return rc;
    bool want[CLI_MAX_ARCH];
    rc = cli_parse_models("reproduce", o.models, NULL, want);
    if (rc >= 0) return rc;
    int n_models = 0;
    for (int a = 0; a < CLI_MAX_ARCH; a++) n_models += want[a];
    rc = CLI_OK;
    if (cli_mpi_root()) rc = cli_make_dir("reproduce", "--out", o.out_dir);
    if (cli_mpi_root() && rc == CLI_OK) rc = cli_lock_output("reproduce", "--out", o.out_dir);
    if ((rc = cli_mpi_agree(rc)) != CLI_OK) return rc; /* rank 0 made DIR, or said why not */
    int n = n_models * o.seeds;
    if (cli_mpi_on() && o.threads == 0 && !getenv("ATTN_THREADS"))
        o.threads = 1; /* a rank a core */
    rc = cli_threads_split("reproduce", n, cli_given(&spec, "-j") || cli_mpi_on(), &o.workers,
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

/* cli.h -- the attn command's subcommands (one cmd_*.c file each) and what they share: the
 * table-driven option parser (options.c), small utilities (util.c), the fork worker pool
 * (workers.c) and the "train and evaluate a run" of the write-up's table (runs.c, results.c).
 * Only src/cli/ prints or exits. Exit codes: 0 success, 1 runtime error, 2 usage error. */
#ifndef ATTN_CLI_H
#define ATTN_CLI_H

#include "attn.h"
#include "attn_threads.h"
#include "attn_experiments.h"
#include "attn_own_data.h"
#include "attn_seq2seq.h"
#include "attn_kernelset.h"

#include <stdbool.h>
#include <stdio.h>

#define CLI_OK    0
#define CLI_ERROR 1
#define CLI_USAGE 2

/* Each subcommand gets argv after the command name's position (argv[0] is the command). */
int cmd_data(int argc, char **argv);
int cmd_vocab(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_predict(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_grad(int argc, char **argv);
int cmd_train(int argc, char **argv);
/* seq2seq_cli.c: whether path starts like seq2seq weights; attn info on them. */
bool cli_is_seq2seq_weights(const char *path);
bool cli_is_seq2seq_checkpoint(const char *path); /* the same for a seq2seq checkpoint */
int cli_info_seq2seq(const char *path);
/* A source of a seq2seq model of `task` into ids[max_ids] (*n of them): a compose source is
 * "<polarity> <subject>" (attn_compose_source), any other a review sentence (attn_tokenize). */
attn_status cli_s2s_read_source(attn_task task, const char *text, int *ids, int max_ids, int *n,
                                attn_error *err);
/* One source of generate or explain, read on the reading thread: its text (with teacher, cut at
 * the tab: the target after it) and its ids as the task reads them, "where index" for messages.
 * NULL after a message on msg (a rewrite source off the task's grammar gets a note there). */
typedef struct cli_s2s_source {
    char *source, *target; /* target: NULL without teacher */
    int *src, n_src;
    const char *where; /* "sentence" or "line" */
    int index;         /* 1-based */
} cli_s2s_source;
cli_s2s_source *cli_s2s_source_read(const char *cmd, attn_task task, const char *line, bool teacher,
                                    const char *where, int index, FILE *msg);
void cli_s2s_source_free(void *state); /* a cli_piece_spec's release; NULL ok */
/* A note on stderr when a rewrite model's source src[n] is not a sentence of the task's grammar
 * (the model has only seen those, so its output says little): "SOURCE_WHERE INDEX: note: ..."
 * (on f: stderr, or a buffer written to stderr later). */
void cli_s2s_note_off_task(FILE *f, const char *cmd, const int *src, int n, const char *where,
                           int index);
/* The models of a run's `threads` threads: [0] m itself, [w > 0] a replica of m each, kept for
 * the run (generate, explain). -1 to go on, else the exit code after the message. */
int cli_s2s_thread_models(const char *cmd, attn_seq2seq *m, int threads, attn_seq2seq ***models);
void cli_s2s_thread_models_free(attn_seq2seq **models, int threads); /* the replicas; NULL ok */
/* attn eval on seq2seq weights: exact match per set of the model's task (or of the pairs of
 * the file data, when not NULL) and by source length, on `threads` threads (0: the default). */
int cli_eval_seq2seq(const char *path, const attn_set *sets, int n_sets, int n, uint64_t seed,
                     const char *data, int threads);
/* generate_output.c: what attn generate writes of one source besides its words. The compose
 * judgement of out for the source ids src as a text line on f, or as the "judged" member of
 * the object open in w; the teacher-forced logits of source<TAB>target (--teacher, with the
 * alignment of a seq2seq-attn model) as one JSON object on f, false after the message on msg. */
void cli_generate_print_judgement(FILE *f, const int *src, const int *out, int n_out);
void cli_generate_json_judgement(attn_json_writer *w, const int *src, const int *out, int n_out);
bool cli_generate_score_target(FILE *f, FILE *msg, attn_seq2seq *m, const char *source,
                               const char *target, const int *src, int n_src);
void cli_json_floats(attn_json_writer *w, const float *x, int n); /* [x0, .., x(n-1)] */
/* The object open in w ended, with its newline on f; false (after the message) on a failure. */
bool cli_generate_json_done(attn_json_writer *w, FILE *f, FILE *msg);
/* compose_cli.c: samples of a compose model judged by the grammar parser, for attn train,
 * reproduce and eval (docs/decoder.md). For each of the 16 sources (2 polarities x 8 subjects)
 * per_source samples at temperature T (no top-k/top-p; sample k seeded with seed + k). train:
 * NULL, or the training pairs (a sample equal to one of their sentences is not novel). */
typedef struct cli_compose_tally {
    long samples, grammatical, polarity, subject, novel; /* polarity/subject: as asked */
    /* with a classifier (built-in vocabulary): samples of review words only it read, those it
     * reads with the polarity asked for, and grammatical ones it reads with the parse's label */
    long classified, classifier_asked, classifier_parse;
} cli_compose_tally;
int cli_compose_samples(const char *cmd, attn_seq2seq *m, int per_source, double temperature,
                        uint64_t seed, const attn_pairs *train, attn_model *classifier,
                        cli_compose_tally *t);
/* "grammatical 97.5%, polarity as asked 96.0%, ..." of t into buf. */
void cli_compose_tally_text(const cli_compose_tally *t, char *buf, size_t size);
/* The teacher-forced loss per target token on the four test sets of seed (test_size pairs each)
 * and the tally of CLI_COMPOSE_PER_SOURCE samples per source at temperature 1 (seeds seed..). */
#define CLI_COMPOSE_PER_SOURCE 25
typedef struct cli_compose_result {
    double set_loss[ATTN_N_TEST_SETS]; /* plain, distractor, fill4, fill8 */
    cli_compose_tally tally;
} cli_compose_result;
int cli_compose_report(const char *cmd, attn_seq2seq *m, uint64_t seed, int test_size,
                       const attn_pairs *train, attn_model *classifier, cli_compose_result *r);
struct cli_spec;
/* train_seq2seq_state.c: --resume, --checkpoint and --log of attn train on seq2seq models. */
/* Loads the checkpoint into *from and takes its model, training settings, data size and seed
 * (--epochs may extend the run); any other option given is a usage error. -1 to go on, else the
 * exit code after the message. */
int cli_s2s_resume_setup(struct cli_spec *spec, const char *path, attn_s2s_train_state *from,
                         attn_seq2seq_config *mc, attn_s2s_train_config *tc, int *train_size,
                         uint64_t *seed);
/* Opens `attn train`'s --log (both kinds of model, train_progress.c): truncated for a new run;
 * for a resumed one trimmed to one line per epoch done, then appended to. -1 or the exit code. */
int cli_train_log_open(const char *path, int done, bool resumed, FILE **out);
/* One JSON line per epoch; false when writing failed. */
bool cli_s2s_log_epoch(FILE *f, const attn_s2s_epoch_stats *st);
/* attn_s2s_resume.on_state: the checkpoint to user (the path). */
attn_status cli_s2s_write_checkpoint(const attn_s2s_train_state *st, void *user, attn_error *err);
int cmd_reproduce(int argc, char **argv);
int cmd_flops(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_experiment(int argc, char **argv);
int cmd_saliency(int argc, char **argv);
int cmd_attend(int argc, char **argv);
int cmd_lesson(int argc, char **argv);
int cmd_figures(int argc, char **argv);
int cmd_sweep(int argc, char **argv);

/* ---- options.c: one table per command ------------------------------------------------------ */

typedef enum cli_opt_type {
    CLI_OPT_FLAG,   /* bool *; takes no value */
    CLI_OPT_INT,    /* int *; an integer in lo..hi */
    CLI_OPT_U64,    /* uint64_t *; a non-negative integer */
    CLI_OPT_REAL,   /* double *; a finite number > 0 (as strtod reads it) */
    CLI_OPT_STR,    /* const char ** */
    CLI_OPT_CHOICE, /* int *; the index of the value in `choices` ("text|tsv|json") */
} cli_opt_type;

typedef struct cli_opt {
    const char *name;    /* "--epochs" (or a short "-j", which also takes "-j4") */
    const char *metavar; /* "N" in the help; NULL for flags */
    cli_opt_type type;
    void *dst;           /* its initial value is the default the help shows */
    int lo, hi;          /* CLI_OPT_INT range, shown in the help and in errors */
    const char *choices; /* CLI_OPT_CHOICE */
    const char *def;     /* the default as the help shows it; NULL: from *dst; "": none */
    const char *help;    /* '\n' starts a continuation line */
    bool given;          /* set by cli_parse */
} cli_opt;

typedef struct cli_spec {
    const char *cmd;        /* "train" */
    const char *usage;      /* after "attn CMD "; '\n' separates alternative forms */
    const char *about;      /* the paragraph(s) after the usage line */
    const char *positional; /* NULL: none allowed; else what they are ("SENTENCE") */
    const char *notes;      /* printed after the options (may be NULL) */
    cli_opt *opts;
    int n_opts;
} cli_spec;
/* A command's spec from its option table `opts` (an array, counted here). */
#define CLI_SPEC(cmd, usage, about, positional, notes, opts)                                       \
    {                                                                                              \
        (cmd), (usage), (about), (positional), (notes), (opts),                                    \
            (int)(sizeof(opts) / sizeof(opts)[0])                                                  \
    }

/* Parses argv[1..argc) by the table. Returns -1 to go on, CLI_OK after printing the help
 * (-h, --help) and CLI_USAGE after a usage error naming the option (and its range). With
 * spec->positional, the other arguments (and all after "--") go to pos[*n_pos] (pos has argc
 * entries). */
int cli_parse(cli_spec *spec, int argc, char **argv, char **pos, int *n_pos);
/* cli_parse into a new *pos of argc + 1 entries (the caller frees it; NULL and CLI_ERROR when
 * out of memory). */
int cli_parse_operands(cli_spec *spec, int argc, char **argv, char ***pos, int *n_pos);
void cli_print_help(const cli_spec *spec, FILE *f);

/* The kernels command `cmd` runs on when neither $ATTN_KERNELS nor --kernels says (the table of
 * src/cli/kernels_policy.c); *why (may be NULL) gets what its output is used for. */
attn_kernels_mode cli_kernels_default(const char *cmd, const char **why);
/* Selects cmd's default kernels and puts them in $ATTN_KERNELS, unless $ATTN_KERNELS is set. */
void cli_kernels_apply_default(const char *cmd);
/* "kernels: pinned, OpenBLAS 0.3.21 Haswell, 1 thread, attn avx2 (pinned)" on stdout: the record
 * of a report that has no file of its own (reproduce --task rewrite|compose). */
void cli_print_kernels(void);
/* "kernels      OpenBLAS 0.3.21 Haswell, 1 thread, attn avx2 (pinned)": what computed a weights
 * file's values (its record; NULL: "none recorded"), for attn info. */
void cli_print_recorded_kernels(const attn_kernels_info *k);
/* The table entry of option `name`. */
cli_opt *cli_opt_find(cli_spec *spec, const char *name);
bool cli_given(cli_spec *spec, const char *name);
/* One command for two families: the first of names (NULL-terminated) given is refused, "NAME
 * applies to WHAT only" (CLI_USAGE after the message), else -1. */
int cli_refuse_given(cli_spec *spec, const char *const *names, const char *what);

/* The name of names[0..n) closest to word (an option "--epoch=3" is compared by its name) when
 * it is close enough to be a typo (1 edit in up to 4 bytes, 2 in up to 8, else 3; a prefix of
 * 3 bytes or more counts as 1), else NULL. */
const char *cli_did_you_mean(const char *word, const char *const *names, int n);

/* Every message that may quote user input goes through these: control bytes (< 0x20, 0x7f)
 * are printed as \xNN, so a file name or sentence cannot move the cursor, recolour the
 * terminal or forge a line. */
void cli_put_escaped(FILE *f, const char *s);
/* "attn CMD: <formatted, escaped>" on stderr (cmd NULL: "attn: ..."). */
void cli_message(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same bytes on f (a thread's buffer, written to stderr later in input order). */
void cli_message_to(FILE *f, const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prints "attn CMD: <msg>" to stderr and returns the exit code for the status. */
int cli_fail(const char *cmd, const attn_error *err);
/* Prints "attn CMD: <formatted>\nTry 'attn CMD --help'." and returns CLI_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Log hook that prints library messages to stderr. */
void cli_log(attn_log_level level, const char *msg, void *user);

/* ---- util.c ------------------------------------------------------------------------------- */

/* "22.5 s", "3m05s", "1h02m". */
void cli_fmt_duration(char *buf, size_t n, double s);
/* The --weights line of every command that takes either family's file. */
#define CLI_WEIGHTS_HELP                                                                           \
    "a classifier (attn-weights-v1: rnn, lstm, gru, transformer) or a\n"                           \
    "seq2seq model (attn-seq2seq-weights-v1: seq2seq-gru, seq2seq-attn,\n"                         \
    "seq2seq-transformer), JSON or safetensors"
/* "22,689", "1,000,000": v with a comma between groups of three digits. */
void cli_fmt_thousands(char *buf, size_t n, size_t v);
/* "1 epoch" / "20 epochs". */
const char *cli_plural(int n, const char *one, const char *many);
/* Whether files a and b both open and hold the same bytes. */
bool cli_same_bytes(const char *a, const char *b);

/* One sentence of predict or explain: false (after saying why) when it could not be handled.
 * `where` is "sentence" (arguments) or "line" (stdin), index its 1-based number. */
typedef bool (*cli_sentence_fn)(void *ctx, const char *sentence, const char *where, int index);
/* Runs fn on each of the n_args argument sentences or, when there are none, on each non-blank
 * line of stdin (a line holding a NUL byte is refused, as the TSV reader does, never handled
 * cut short). Then checks stdout and says "<cmd>: F of N sentences not <verb>" when some
 * failed. CLI_OK, or CLI_ERROR when a sentence failed or the output could not be written. */
int cli_run_sentences(const char *cmd, const char *verb, char **args, int n_args,
                      cli_sentence_fn fn, void *ctx);
/* cli_run_sentences where a blank line of stdin is an item too (fn reports it, naming the
 * line), for inputs whose lines must each hold something (attn predict --ids). */
int cli_run_lines(const char *cmd, const char *verb, char **args, int n_args, cli_sentence_fn fn,
                  void *ctx);
/* attn_weights_load_json_vocab for a command: *vocab is the file's vocabulary or the built-in
 * one (attn_vocab_free accepts both); a NULL path is the usage error "--weights FILE.json is
 * required". -1 when loaded, else the exit code after the message. */
int cli_load_weights(const char *cmd, const char *path, attn_model **m, const attn_vocab **vocab);
/* "its own, 202 tokens" or "built-in course-review, 91 tokens" into buf. */
void cli_vocab_source(const attn_vocab *v, char *buf, size_t size);
/* Before any work: the file `path` given with option `opt` can be written (it is not a
 * directory, and its directory exists and is writable). CLI_OK, or CLI_ERROR after
 * "attn CMD: OPT PATH: reason" on stderr. */
int cli_check_dest(const char *cmd, const char *opt, const char *path);
/* Before any work: a --plot file name ends in .png or .svg (what the plot driver draws);
 * CLI_OK, or CLI_USAGE after a message naming the option. */
int cli_check_plot_name(const char *cmd, const char *opt, const char *path);
/* Takes an advisory lock on the output `path` (a directory itself, a file through PATH.lock)
 * for the rest of the process; another run holding it: an error naming opt and path, exit 1
 * (lock.c). */
int cli_lock_output(const char *cmd, const char *opt, const char *path);
/* Creates directory `path` (given with option `opt`) and its parents, as mkdir -p; an existing
 * directory is fine. CLI_OK, or CLI_ERROR after "attn CMD: OPT PATH: reason". */
int cli_make_dir(const char *cmd, const char *opt, const char *path);
/* cli_make_dir for the directory of the file `path` (nothing when it has none). */
int cli_make_parent_dir(const char *cmd, const char *opt, const char *path);
/* "95 % interval 37.5-67.0 %, majority-class baseline 50.0 %" into buf (own_data.c). */
void cli_verdict_text(char *buf, size_t size, const attn_accuracy_verdict *v);
/* When v says chance: "attn CMD: warning: WHAT: not distinguishable from chance ..." on
 * stderr. */
void cli_warn_chance(const char *cmd, const char *what, int n, const attn_accuracy_verdict *v);
/* Prints "attn CMD: <formatted, escaped>" and returns CLI_ERROR. */
int cli_runtime_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The set names every command accepts: train, holdout, plain, distractor, fill4, fill8, and
 * all (the four test sets). Fills sets[] (ATTN_N_TEST_SETS entries) and *n. */
bool cli_sets_from_name(const char *name, attn_set *sets, int *n);
#define CLI_SET_NAMES "train, holdout, plain, distractor, fill4, fill8 or all"
/* The default size of a generated set: 8000 train, 500 holdout, 1000 for each test set. */
int cli_set_default_n(attn_set s);

/* ---- own_data.c: a user's TSV files and vocabulary ---------------------------------------- */

/* Reads a TSV file with vocab (NULL: the built-in one): unknown words become [UNK] where the
 * vocabulary has it (one warning with the count), every bad line is printed with its number
 * (the first ATTN_TSV_LISTED, then the count). -1 when read, else the exit code. */
int cli_read_tsv(const char *cmd, const char *path, const attn_vocab *vocab, attn_dataset **out);
/* attn_vocab_from_tsv for a command, saying what it made. -1 when made, else the exit code. */
int cli_vocab_from_tsv(const char *cmd, const char *path, int min_count, attn_vocab **out);
/* "attn CMD: warning: WHAT: N words in M sentences read as [UNK] ..." (nothing for 0 words). */
void cli_warn_unknown(const char *cmd, const char *what, long n_words, long n_sentences);

/* ---- workers.c: runs jobs 0..n-1 in forked worker processes -------------------------------- */

typedef struct cli_pool cli_pool;
/* Runs in the worker process; reports with cli_pool_send; returns the exit status. */
typedef int (*cli_job_fn)(cli_pool *p, int job, void *ctx);
typedef struct cli_pool_hooks {
    cli_job_fn run;
    /* In the parent, for each line a worker sent (without the newline). */
    void (*on_line)(int job, const char *line, void *ctx);
    /* In the parent, when job's worker has exited (status as from waitpid, -1: fork failed). */
    void (*on_exit)(int job, int status, void *ctx);
    /* In the parent, about 4 times a second (may be NULL). */
    void (*on_tick)(double elapsed_s, void *ctx);
    void *ctx;
} cli_pool_hooks;
/* n_workers at a time, in job order; false (errno set) if the pipe cannot be made. */
bool cli_pool_run(int n_jobs, int n_workers, const cli_pool_hooks *h);
/* Why a worker that sent no result ended, from its waitpid status (-1: fork failed), into
 * msg[size]: "cannot start a worker process", "worker killed by signal N" or "worker exited
 * (status N) without a result". */
void cli_pool_exit_reason(int status, char *msg, size_t size);
/* One line (newlines replaced) to the parent, written atomically. */
void cli_pool_send(cli_pool *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The number of online cores (at least 1). */
int cli_n_cores(void);

/* ---- runs.c and results.c: the write-up's table -------------------------------------------- */

#define CLI_N_ARCH   3 /* the write-up's models: rnn, lstm, transformer (attn_arch 0..2) */
#define CLI_MAX_ARCH 4 /* and the GRU (`reproduce --models`) */
/* The four test sets in the table's order: plain, distractor, fill4, fill8. */
extern const attn_set cli_test_sets[ATTN_N_TEST_SETS];

/* One (model, seed) run: trained (train true: written to dir) or loaded from dir, then
 * evaluated on the four test sets of its seed. */
typedef struct cli_run_settings {
    const char *dir;        /* DIR/<model>-seed<S>.json */
    bool train;             /* false: load the weights instead */
    int epochs, train_size; /* with train */
    int batch;              /* sentences per forward in the evaluation (1 = exact) */
    int workers;            /* processes */
    bool progress;          /* a status line and one line per finished run on stderr */
    int threads;            /* threads per process (0 = 1); the results do not depend on it */
} cli_run_settings;

typedef struct cli_run_result {
    attn_arch arch;
    int seed;
    bool ok;                      /* false: the run failed, it is left out of the table */
    double acc[ATTN_N_TEST_SETS]; /* accuracy in [0, 1] per cli_test_sets entry */
    size_t n_params;
    double train_s, eval_s;
    int epoch; /* last epoch reported (progress) */
    char msg[256];
} cli_run_result;

/* --models LIST ("rnn,gru,lstm,transformer") into want[arch]; a usage error (the exit code
 * returned, else -1) names an unknown or repeated model. Without a list (NULL): rnn, lstm and
 * transformer, and the GRU when DIR/gru-seed1.json exists (dir may be NULL: not). */
int cli_parse_models(const char *cmd, const char *list, const char *dir, bool want[CLI_MAX_ARCH]);
/* Runs runs[0..n) (arch and seed set) on s->workers processes; returns the failures (their
 * messages printed as "attn CMD: ..."). */
int cli_runs_execute(const char *cmd, const cli_run_settings *s, cli_run_result *runs, int n);
/* cli_runs_execute without the failure messages, on this process's workers only. */
void cli_runs_local(const char *cmd, const cli_run_settings *s, cli_run_result *runs, int n);

/* ---- ranks.c, rank_runs.c: runs spread over the ranks of `mpirun -np N attn ...` ---------- */

/* Starts MPI when attn was built with it and launched by mpirun (or srun): a rank other than 0
 * then prints nothing on stdout. Without both, attn is one rank of one. */
void cli_mpi_start(int *argc, char ***argv);
/* Rank 0's rc on every rank (a check only rank 0 makes, e.g. of the output directory, so
 * that all ranks stop or go on together); rc itself when not under mpirun. Collective. */
int cli_mpi_agree(int rc);
/* Waits for every rank, ends MPI and returns the worst exit code of all ranks. */
int cli_mpi_finish(int rc);
bool cli_mpi_on(void);      /* running under mpirun */
int cli_mpi_size(void);     /* 1 when not under mpirun */
bool cli_mpi_root(void);    /* rank 0: the rank that prints and writes */
bool cli_mpi_mine(int job); /* run `job` is this rank's: job % size == rank */
/* "rank 3 on node7", for messages naming where a run failed. */
void cli_mpi_where(char *buf, size_t size);
/* cli_threads_start for `attn train`: under mpirun with N > 1 the pool (one thread at least)
 * takes the ranks, so each step's micro-batches spread over them (attn_ranks); other ranks' stderr
 * goes to /dev/null. */
int cli_train_threads_start(const char *cmd, int *threads, attn_pool **pool);
/* `attn train`'s exit code; under mpirun a failure ends every rank (MPI_Abort). */
int cli_train_end(int rc);
typedef struct cli_blob {
    char *data;
    size_t len;
} cli_blob;
void cli_blobs_free(cli_blob *b, int n); /* the blobs' data and the array */
/* Each rank has filled blobs[j] of its runs; afterwards rank 0 holds them all (gather) or
 * every rank does (share), in run order. Collective: every rank calls it with the same n. */
void cli_mpi_gather(cli_blob *blobs, int n);
void cli_mpi_share(cli_blob *blobs, int n);
/* cli_runs_execute under mpirun: each rank runs its share of runs[] on s->workers processes;
 * rank 0 gets every result and, when all succeeded, writes every weights file (atomically);
 * a failed run's message names the rank and host it failed on. */
void cli_mpi_runs(const char *cmd, const cli_run_settings *s, cli_run_result *runs, int n);
/* attn_experiment_opts.map under mpirun: job j runs on rank j % N, every rank gets every
 * result. */
attn_status cli_mpi_experiment_map(int n, int width, attn_experiment_job job, void *ctx,
                                   double *out, void *user, attn_error *err);

/* Rows: test sets; columns: RNN, LSTM, Transformer; cells: accuracy range across seeds
 * ("52–55%"); last row: parameter counts. Markdown. */
void cli_print_results_table(FILE *f, const cli_run_result *runs, int n_runs);

/* ---- threads.c: --threads N of one run ------------------------------------------------------ */

/* The option table entry of --threads (an int, 0 until given). */
#define CLI_THREADS_OPT(dst)                                                                       \
    {                                                                                              \
        "--threads", "N", CLI_OPT_INT, (dst), 1, ATTN_MAX_THREADS,                                 \
            .def = "$ATTN_THREADS, else the cores",                                                \
            .help = "threads of this run; every output is the same for every N"                    \
    }
/* The thread count: *threads if given (> 0), else ATTN_THREADS, else the cores. CLI_USAGE (after
 * the message) when ATTN_THREADS is not a number in 1..ATTN_MAX_THREADS, else -1. */
int cli_threads_resolve(const char *cmd, int *threads);
/* Resolves the count, sets one BLAS thread per product and makes the run's pool (NULL for one
 * thread). -1 to go on, else the exit code after the message. */
int cli_threads_start(const char *cmd, int *threads, attn_pool **pool);
/* Processes and threads for n_runs whole runs (reproduce, eval --table): *threads (0 = not
 * given: ATTN_THREADS if set) threads per run, *workers processes (unless given: the cores over
 * the threads), at most n_runs; a thread count not given shares the cores among the workers.
 * -1 to go on, else the exit code after the message. */
int cli_threads_split(const char *cmd, int n_runs, bool workers_given, int *workers, int *threads);
/* cli_run_sentences (keep_blank: cli_run_lines) with the work on a pool: items are read in
 * blocks, compute(ctx, worker, text, slot) runs on any thread (it must not print; its result
 * goes into the item's slot of slot_size bytes), then emit prints each result in input order
 * and returns false for a failed item, so the output is the serial one. */
typedef struct cli_par_spec {
    const char *cmd, *verb;
    bool keep_blank;
    size_t slot_size;
    void (*compute)(void *ctx, int worker, const char *text, void *slot);
    bool (*emit)(void *ctx, const char *text, const char *where, int index, void *slot);
    void *ctx;
} cli_par_spec;
int cli_run_sentences_pool(const cli_par_spec *s, char **args, int n_args, attn_pool *pool);
/* The end of a run over input lines: flushes stdout, and says on stderr when it could not or
 * when `failed` of the n sentences were not `verb`; CLI_OK or CLI_ERROR. */
int cli_lines_finish(const char *cmd, const char *verb, int failed, int n);
/* source_pieces.c: cli_run_sentences for sources whose work is several independent pieces
 * (attn generate --samples N), on a pool. prepare (on the reading thread, in input order) reads
 * one source into a state with *n_pieces >= 1 pieces, or returns NULL (the source failed)
 * after saying why on msg; compute (on any thread) runs piece k of a state, printing its output
 * on out and its messages on msg, false when it failed; release frees a state. Sources are
 * read and computed in blocks of at most 512 pieces; each source's messages and pieces' output
 * are then written to stderr and stdout in input order, up to its first failed piece: the
 * bytes of a serial run, for every pool. */
typedef struct cli_piece_spec {
    const char *cmd, *verb;
    void *(*prepare)(void *ctx, const char *text, const char *where, int index, int *n_pieces,
                     FILE *msg);
    bool (*compute)(void *ctx, int worker, void *state, int k, FILE *out, FILE *msg);
    void (*release)(void *state);
    void *ctx;
} cli_piece_spec;
int cli_run_pieces_pool(const cli_piece_spec *s, char **args, int n_args, attn_pool *pool);

/* --color WHEN of the commands that colour text (explain): the table entry and the decision. */
enum { CLI_COLOR_AUTO, CLI_COLOR_ALWAYS, CLI_COLOR_NEVER };
#define CLI_COLOR_OPT(dst)                                                                         \
    {                                                                                              \
        "--color", "WHEN", CLI_OPT_CHOICE, (dst),                                                  \
            .choices = "auto|always|never",                                                        \
            .help = "text: 24-bit colour; auto = on a terminal without NO_COLOR"                   \
    }
/* attn info's tensor table on stdout, both families: the header after a blank line, then one
 * row per tensor: its name in width columns, "[d0,d1]" and its element count. */
void cli_print_tensor_header(int width);
void cli_print_tensor_row(int width, const char *name, const int *shape, int nd, size_t numel);
/* true for always; for auto, when stdout is a terminal and NO_COLOR is unset or empty. */
bool cli_want_color(int choice);
/* Prints " word note " on f; with color, the word on a background of (r, g, b) mixed with
 * white by t in [0, 1] (0: white) in black text, so that it reads on light and dark terminals
 * alike. Below t = 0.05 the word keeps the terminal's colours (weightless words do not glare on
 * a dark terminal). f: stdout, or a thread's buffer written out later in input order. */
void cli_shaded_to(FILE *f, bool color, const char *word, double t, int r, int g, int b,
                   const char *note);

/* explain_text.c: `attn explain`'s text. What a look shows: colour, and one layer and head
 * (-1: every one with their average for a classifier, the mean for the decoder). */
typedef struct cli_explain_look {
    bool color;
    int layer, head;
} cli_explain_look;
/* A classifier's explanation of sentence (ids[n_words], words of vocab): verdict, [CLS]'s
 * attention rows or the probability after each word, then the saliency line. */
void cli_explain_text(FILE *f, const cli_explain_look *look, const attn_vocab *vocab,
                      const char *sentence, const int *ids, const attn_explanation *e);
/* A decoder's explanation of source (src[n_src]): its output, then one block per step with the
 * top 5 and the source words shaded by cross-attention and gradient x input. */
void cli_explain_s2s_text(FILE *f, const cli_explain_look *look, const char *source, const int *src,
                          const attn_s2s_explanation *e);

#endif

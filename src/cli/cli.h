/* cli.h -- the attn command's subcommands (one cmd_*.c file each) and what they share: the
 * table-driven option parser (options.c), small utilities (util.c), the fork worker pool
 * (workers.c) and the "train and evaluate a run" of the write-up's table (runs.c, results.c).
 * Only src/cli/ prints or exits. Exit codes: 0 success, 1 runtime error, 2 usage error. */
#ifndef ATTN_CLI_H
#define ATTN_CLI_H

#include "attn.h"

#include <stdbool.h>
#include <stdio.h>

#define CLI_OK    0
#define CLI_ERROR 1
#define CLI_USAGE 2

/* Each subcommand gets argv after the command name's position (argv[0] is the command). */
int cmd_data(int argc, char **argv);
int cmd_vocab(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_predict(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_grad(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_train_seq2seq(int argc, char **argv);     /* cmd_train hands seq2seq models over */
int cmd_reproduce_seq2seq(int argc, char **argv); /* cmd_reproduce, with --task */
/* seq2seq_cli.c: whether path starts like seq2seq weights; attn info on them. */
bool cli_is_seq2seq_weights(const char *path);
int cli_info_seq2seq(const char *path);
/* attn eval on seq2seq weights: exact match per set of the rewrite task and by source length. */
int cli_eval_seq2seq(const char *path, const attn_set *sets, int n_sets, int n, uint64_t seed);
/* cmd_grad_seq2seq.c: attn grad for seq2seq weights (FILE holds 'source<TAB>target' pairs). */
int cli_grad_seq2seq(const char *weights, const char *data, const char *out, int batch);
int cmd_reproduce(int argc, char **argv);
int cmd_flops(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_experiment(int argc, char **argv);
int cmd_saliency(int argc, char **argv);
int cmd_attend(int argc, char **argv);
int cmd_lesson(int argc, char **argv);
int cmd_figures(int argc, char **argv);

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

/* Parses argv[1..argc) by the table. Returns -1 to go on, CLI_OK after printing the help
 * (-h, --help) and CLI_USAGE after a usage error naming the option (and its range). With
 * spec->positional, the other arguments (and all after "--") go to pos[*n_pos] (pos has argc
 * entries). */
int cli_parse(cli_spec *spec, int argc, char **argv, char **pos, int *n_pos);
void cli_print_help(const cli_spec *spec, FILE *f);
/* The table entry of option `name`. */
cli_opt *cli_opt_find(cli_spec *spec, const char *name);
bool cli_given(cli_spec *spec, const char *name);

/* Every message that may quote user input goes through these: control bytes (< 0x20, 0x7f)
 * are printed as \xNN, so a file name or sentence cannot move the cursor, recolour the
 * terminal or forge a line. */
void cli_put_escaped(FILE *f, const char *s);
/* "attn CMD: <formatted, escaped>" on stderr (cmd NULL: "attn: ..."). */
void cli_message(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints "attn CMD: <msg>" to stderr and returns the exit code for the status. */
int cli_fail(const char *cmd, const attn_error *err);
/* Prints "attn CMD: <formatted>\nTry 'attn CMD --help'." and returns CLI_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Log hook that prints library messages to stderr. */
void cli_log(attn_log_level level, const char *msg, void *user);

/* ---- util.c ------------------------------------------------------------------------------- */

double cli_now_s(void); /* monotonic clock, seconds */
/* "22.5 s", "3m05s", "1h02m". */
void cli_fmt_duration(char *buf, size_t n, double s);
/* "1 epoch" / "20 epochs". */
const char *cli_plural(int n, const char *one, const char *many);

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
 * one (attn_vocab_free accepts both). -1 when loaded, else the exit code after the message. */
int cli_load_weights(const char *cmd, const char *path, attn_model **m, const attn_vocab **vocab);
/* "its own, 202 tokens" or "built-in course-review, 91 tokens" into buf. */
void cli_vocab_source(const attn_vocab *v, char *buf, size_t size);
/* attn_write_file_atomic: a unique temporary file, fsync, rename; symlinks followed, devices
 * written in place; messages name the file. */
attn_status cli_write_atomic(const char *path, const char *text, size_t len, attn_error *err);
/* Before any work: the file `path` given with option `opt` can be written (it is not a
 * directory, and its directory exists and is writable). CLI_OK, or CLI_ERROR after
 * "attn CMD: OPT PATH: reason" on stderr. */
int cli_check_dest(const char *cmd, const char *opt, const char *path);
/* Prints "attn CMD: <formatted, escaped>" and returns CLI_ERROR. */
int cli_runtime_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The set names every command accepts: train, holdout, plain, distractor, fill4, fill8, and
 * all (the four test sets). Fills sets[] (ATTN_N_TEST_SETS entries) and *n. */
bool cli_sets_from_name(const char *name, attn_set *sets, int *n);
#define CLI_SET_NAMES "train, holdout, plain, distractor, fill4, fill8 or all"
/* The default size of a generated set: 8000 train, 500 holdout, 1000 for each test set. */
int cli_set_default_n(attn_set s);

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

/* Runs runs[0..n) (arch and seed set) on s->workers processes; returns the failures (their
 * messages printed as "attn CMD: ..."). */
int cli_runs_execute(const char *cmd, const cli_run_settings *s, cli_run_result *runs, int n);
/* Rows: test sets; columns: RNN, LSTM, Transformer; cells: accuracy range across seeds
 * ("52–55%"); last row: parameter counts. Markdown. */
void cli_print_results_table(FILE *f, const cli_run_result *runs, int n_runs);

#endif

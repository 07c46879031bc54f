/* cli.h -- the attn command's subcommands. Only src/cli/ prints or exits.
 * Exit codes: 0 success, 1 runtime error, 2 usage error. */
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
int cmd_eval(int argc, char **argv);
int cmd_grad(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_reproduce(int argc, char **argv);
int cmd_flops(int argc, char **argv);

/* ---- the write-up's results table (results.c) ---- */
#define CLI_N_ARCH 3
/* The four test sets in the table's order: plain, distractor, fill4, fill8. */
extern const attn_set cli_test_sets[ATTN_N_TEST_SETS];
typedef struct cli_run_result {
    attn_arch arch;
    int seed;
    bool ok;                      /* false: the run failed, it is left out of the table */
    double acc[ATTN_N_TEST_SETS]; /* accuracy in [0, 1] per cli_test_sets entry */
    size_t n_params;
} cli_run_result;
/* Rows: test sets; columns: RNN, LSTM, Transformer; cells: accuracy range across seeds
 * ("52–55%"); last row: parameter counts. Markdown. */
void cli_print_results_table(FILE *f, const cli_run_result *runs, int n_runs);

/* Prints "attn CMD: <msg>" to stderr and returns the exit code for the status. */
int cli_fail(const char *cmd, const attn_error *err);
/* Prints "attn CMD: <formatted>\nTry 'attn CMD --help'." and returns CLI_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Parses an integer / float / uint64 option value; false (after printing) on garbage. */
bool cli_parse_int(const char *cmd, const char *opt, const char *s, int lo, int hi, int *out);
bool cli_parse_u64(const char *cmd, const char *opt, const char *s, uint64_t *out);
bool cli_parse_float(const char *cmd, const char *opt, const char *s, float *out);
/* "--name VALUE" or "--name=VALUE" at argv[*i]: returns the value (advancing *i past it) and
 * sets *matched. NULL with *matched false: argv[*i] is another option. NULL with *matched true:
 * the value is missing and a usage error naming the option has been printed. */
const char *cli_opt_value(const char *cmd, int argc, char **argv, int *i, const char *name,
                          bool *matched);
/* True if argv has -h or --help. */
bool cli_wants_help(int argc, char **argv);
/* Log hook that prints library messages to stderr. */
void cli_log(attn_log_level level, const char *msg, void *user);

#endif

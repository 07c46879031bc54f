/* main.c -- the attn command: dispatch to subcommands, shared option parsing, exit codes. */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"data", cmd_data, "generate a course-review set as TSV (label<TAB>sentence)"},
    {"vocab", cmd_vocab, "print the 91-token vocabulary with ids and categories"},
    {"info", cmd_info, "show a weights file: arch, sizes, tensor table, parameter count"},
    {"predict", cmd_predict, "classify sentences with trained weights"},
    {"eval", cmd_eval, "accuracy of weights on the test sets or a TSV file"},
    {"grad", cmd_grad, "gradient of the mean loss over a TSV file, as weights JSON"},
    {"train", cmd_train, "train one model with Adam"},
    {"reproduce", cmd_reproduce, "train all models for 3 seeds and print the write-up's table"},
    {"flops", cmd_flops, "multiply-add breakdown of a model's forward or training step"},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f) {
    fprintf(f, "Usage: attn COMMAND [OPTIONS]\n\n"
               "attn trains and runs the RNN, LSTM and Transformer of \"Attention from "
               "Scratch\".\n\nCommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nRun 'attn COMMAND --help' for a command's options.\n"
               "Exit codes: 0 success, 1 runtime error, 2 usage error.\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return CLI_OK;
    }
    attn_set_log(cli_log, NULL);
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(argv[1], commands[i].name) == 0) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "attn: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return CLI_USAGE;
}

/* ---- shared helpers ------------------------------------------------------------------------ */

int cli_fail(const char *cmd, const attn_error *err) {
    fprintf(stderr, "attn %s: %s\n", cmd, err->msg[0] ? err->msg : attn_status_str(err->status));
    return err->status == ATTN_ERR_ARG ? CLI_USAGE : CLI_ERROR;
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "attn %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'attn %s --help'.\n", cmd);
    return CLI_USAGE;
}

bool cli_parse_int(const char *cmd, const char *opt, const char *s, int lo, int hi, int *out) {
    char *end = NULL;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || !*s || *end || errno || v < lo || v > hi) {
        cli_usage_error(cmd, "%s expects an integer in %d..%d, got '%s'", opt, lo, hi, s ? s : "");
        return false;
    }
    *out = (int)v;
    return true;
}

bool cli_parse_u64(const char *cmd, const char *opt, const char *s, uint64_t *out) {
    char *end = NULL;
    errno = 0;
    unsigned long long v = s ? strtoull(s, &end, 10) : 0;
    if (!s || !*s || *end || errno || s[0] == '-') {
        cli_usage_error(cmd, "%s expects a non-negative integer, got '%s'", opt, s ? s : "");
        return false;
    }
    *out = (uint64_t)v;
    return true;
}

bool cli_parse_float(const char *cmd, const char *opt, const char *s, float *out) {
    char *end = NULL;
    errno = 0;
    float v = s ? strtof(s, &end) : 0.0f;
    if (!s || !*s || *end || errno || !(v == v) || v - v != 0.0f) {
        cli_usage_error(cmd, "%s expects a finite number, got '%s'", opt, s ? s : "");
        return false;
    }
    *out = v;
    return true;
}

const char *cli_opt_value(const char *cmd, int argc, char **argv, int *i, const char *name,
                          bool *matched) {
    size_t nl = strlen(name);
    const char *a = argv[*i];
    *matched = false;
    if (strncmp(a, name, nl) != 0 || (a[nl] != '\0' && a[nl] != '=')) return NULL;
    *matched = true;
    if (a[nl] == '=') return a + nl + 1;
    if (*i + 1 >= argc) {
        cli_usage_error(cmd, "%s needs a value", name);
        return NULL;
    }
    return argv[++*i];
}

bool cli_wants_help(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return true;
    return false;
}

void cli_log(attn_log_level level, const char *msg, void *user) {
    (void)user;
    if (level == ATTN_LOG_DEBUG && !getenv("ATTN_DEBUG")) return;
    fprintf(stderr, "attn: %s%s\n", level == ATTN_LOG_WARN ? "warning: " : "", msg);
}

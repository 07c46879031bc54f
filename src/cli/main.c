/* main.c -- the attn command: dispatch to the subcommands (cmd_*.c), exit codes. */
#include "cli.h"

#include <errno.h>
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
    {"vocab", cmd_vocab, "print the vocabulary (built-in, or a weights file's) with ids"},
    {"info", cmd_info, "show a weights file: arch, sizes, tensor table, parameter count"},
    {"convert", cmd_convert, "weights between JSON and safetensors (either family), bit for bit"},
    {"predict", cmd_predict, "classify sentences with trained weights"},
    {"generate", cmd_generate, "rewrite sentences with seq2seq weights (greedy decoding)"},
    {"explain", cmd_explain, "what a model did with a sentence: attention, saliency"},
    {"saliency", cmd_saliency, "gradient versus distance from the last word (write-up section 1)"},
    {"attend", cmd_attend, "the attention calculator on small made-up numbers (section 2)"},
    {"lesson", cmd_lesson, "why scores are scaled (section 3), what positions do (section 4)"},
    {"figures", cmd_figures, "every figure of the write-up from the weights, PNG and SVG"},
    {"eval", cmd_eval, "accuracy of weights on the test sets or a TSV file"},
    {"grad", cmd_grad, "gradient of the mean loss over a TSV file, as weights JSON"},
    {"train", cmd_train, "train one model with Adam"},
    {"reproduce", cmd_reproduce,
     "train all models for 3 seeds into runs/ and print the write-up's table"},
    {"flops", cmd_flops, "multiply-add breakdown of a model's forward or training step"},
    {"serve", cmd_serve, "local web page and JSON API: explain sentences in the browser"},
    {"experiment", cmd_experiment, "the write-up's claims as experiments, with a measured verdict"},
    {"sweep", cmd_sweep, "train and evaluate every point of a grid of options, with a chart"},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f) {
    fprintf(f, "Usage: attn COMMAND [OPTIONS]\n\n"
               "attn trains, runs and explains the RNN, LSTM and Transformer of \"Attention "
               "from Scratch\"\n(and a GRU, and models of other sizes).\n\nCommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nRun 'attn COMMAND --help' (or 'attn help COMMAND') for a command's options;\n"
               "'attn --version' prints the version.\n"
               "Exit codes: 0 success, 1 runtime error, 2 usage error.\n");
}

/* The commands that spread their runs over the ranks of mpirun (docs/mpi.md); under mpirun
 * any other runs on rank 0 alone, as with -np 1. */
static bool spreads_runs(const char *name) {
    static const char *const names[] = {"reproduce", "eval", "experiment", "sweep",
                                        "train"}; /* train: one run, its steps over the ranks */
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i]) == 0) return true;
    return false;
}

/* Every command's output is checked once at the end: a full disk, /dev/full or a closed
 * pipe turns a success into exit code 1 with a message. */
static int finish_stdout(const char *cmd, int rc) {
    int failed = fflush(stdout) != 0 || ferror(stdout);
    int saved = errno;
    if (fclose(stdout) != 0 && !failed) failed = 1, saved = errno;
    if (!failed || rc != CLI_OK) return rc; /* a failed command has said why */
    cli_message(cmd, "error writing to stdout: %s", strerror(saved ? saved : EIO));
    return rc == CLI_OK ? CLI_ERROR : rc;
}

static const command *find_command(const char *name) {
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(name, commands[i].name) == 0) return &commands[i];
    return NULL;
}

/* "unknown command 'X'", with the closest command when X looks like a typo of one. */
static int unknown_command(const char *name) {
    const char *names[N_COMMANDS];
    for (size_t i = 0; i < N_COMMANDS; i++) names[i] = commands[i].name;
    const char *close = cli_did_you_mean(name, names, (int)N_COMMANDS);
    if (close)
        cli_message(NULL, "unknown command '%s'; did you mean '%s'?", name, close);
    else
        cli_message(NULL, "unknown command '%s'", name);
    fputc('\n', stderr);
    usage(stderr);
    return CLI_USAGE;
}

/* attn help [CMD]: the command list, or what `attn CMD --help` prints. */
static int help(int argc, char **argv) {
    if (argc < 3) {
        usage(stdout);
        return finish_stdout("help", CLI_OK);
    }
    if (argc > 3) {
        cli_message("help", "expects one command, got %d arguments", argc - 2);
        return CLI_USAGE;
    }
    const command *c = find_command(argv[2]);
    if (!c) return unknown_command(argv[2]);
    char *args[] = {argv[2], "--help", NULL};
    return finish_stdout(c->name, c->run(2, args));
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0)
        return help(argc, argv);
    if (strcmp(argv[1], "--version") == 0) {
        printf("attn %s\n", ATTN_VERSION);
        return finish_stdout("--version", CLI_OK);
    }
    attn_set_log(cli_log, NULL);
    const command *c = find_command(argv[1]);
    if (!c) return unknown_command(argv[1]);
    cli_kernels_apply_default(c->name); /* before any product; --kernels chooses again */
    cli_mpi_start(&argc, &argv);        /* under mpirun: one rank of N (ranks.c) */
    int rc = CLI_OK;                    /* a command that does not spread: rank 0 alone */
    if (cli_mpi_root() || spreads_runs(argv[1]))
        rc = finish_stdout(c->name, c->run(argc - 1, argv + 1));
    if (strcmp(c->name, "train") == 0) rc = cli_train_end(rc);
    return cli_mpi_finish(rc);
}

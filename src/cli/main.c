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
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f) {
    fprintf(f, "Usage: attn COMMAND [OPTIONS]\n\n"
               "attn trains, runs and explains the RNN, LSTM and Transformer of \"Attention "
               "from Scratch\"\n(and a GRU, and models of other sizes).\n\nCommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nRun 'attn COMMAND --help' for a command's options.\n"
               "Exit codes: 0 success, 1 runtime error, 2 usage error.\n");
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

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return finish_stdout("help", CLI_OK);
    }
    attn_set_log(cli_log, NULL);
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return finish_stdout(commands[i].name, commands[i].run(argc - 1, argv + 1));
    cli_message(NULL, "unknown command '%s'", argv[1]);
    fputc('\n', stderr);
    usage(stderr);
    return CLI_USAGE;
}

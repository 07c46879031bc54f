/* cmd_lesson.c -- `attn lesson scaling|positions`: the write-up's s3 and s4 measured, as a
 * table (or JSON) and charts: the options, then attn_lesson_write (src/lab/lesson_report.c). */
#include "attn_lab.h"
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { FORMAT_TEXT, FORMAT_JSON };

static const char about[] =
    "scaling (write-up section 3): for d_k = 4 .. 512, 500 draws of a query and 16 keys\n"
    "with N(0,1) entries; the standard deviation of q.k, the mean largest softmax\n"
    "probability and the mean p(1-p) (the softmax's own gradient), with and without the\n"
    "1/sqrt(d_k).\n"
    "positions (section 4): the sinusoid table (81 positions x 32 dimensions);\n"
    "PE(p).PE(p+d) against d (the largest deviation over p printed); and a Transformer's\n"
    "response to permuted words, with its positions and without them (pos_embedding\n"
    "zeroed): the largest change of the attention maps and of the input gradient beyond\n"
    "the permutation, and of the logit ([CLS] output).";

static const char notes[] =
    "--out DIR writes the charts as PNG and SVG: lesson-scaling.*, or lesson-positions-table.*\n"
    "and lesson-positions-dots.*. positions uses --weights (default: an untrained\n"
    "Transformer, --seed) on 'the food was not good' against 'not the food was good'\n"
    "and on 50 plain test sentences, each under a random permutation.";

/* The lesson into out (the library's report); CLI_OK or the exit code after the message. */
static int lesson_report(FILE *out, const attn_lesson_opts *o) {
    attn_error err;
    if (o->lesson == ATTN_LESSON_POSITIONS) attn_set_num_threads(1);
    attn_status st = attn_lesson_write(out, o, &err);
    if (st == ATTN_ERR_ARG) return cli_usage_error("lesson", "--weights %s", err.msg);
    return st == ATTN_OK ? CLI_OK : cli_fail("lesson", &err);
}

int cmd_lesson(int argc, char **argv) {
    attn_lesson_opts o = {.seed = 1};
    int fmt = FORMAT_TEXT;
    cli_opt opts[] = {
        {"--format", "F", CLI_OPT_CHOICE, &fmt, .choices = "text|json", .help = "text or json"},
        {"--out", "DIR", CLI_OPT_STR, &o.chart_dir, .def = "", .help = "write the charts into DIR"},
        {"--weights", "W", CLI_OPT_STR, &o.weights, .def = "untrained",
         .help = "positions: the Transformer to permute"},
        {"--seed", "S", CLI_OPT_U64, &o.seed,
         .help = "random draws (and the untrained Transformer)"},
    };
    cli_spec spec = CLI_SPEC("lesson", "scaling|positions [--format F] [--out DIR] [--weights W]",
                             about, "LESSON", notes, opts);
    char *pos[8] = {0};
    char **lessons = argc < 8 ? pos : calloc((size_t)argc, sizeof *lessons);
    if (!lessons) return cli_runtime_error("lesson", "out of memory");
    int n = 0, rc = cli_parse(&spec, argc, argv, lessons, &n);
    int which = -1;
    if (rc < 0 && n != 1) rc = cli_usage_error("lesson", "name one lesson: scaling or positions");
    if (rc < 0 && strcmp(lessons[0], "scaling") == 0) which = ATTN_LESSON_SCALING;
    if (rc < 0 && strcmp(lessons[0], "positions") == 0) which = ATTN_LESSON_POSITIONS;
    if (rc < 0 && which < 0)
        rc = cli_usage_error("lesson", "unknown lesson '%s' (scaling or positions)", lessons[0]);
    if (rc < 0 && o.chart_dir && cli_make_dir("lesson", "--out", o.chart_dir) != CLI_OK)
        rc = CLI_ERROR;
    if (rc < 0 && o.chart_dir) {
        char probe[4096];
        snprintf(probe, sizeof probe, "%s/lesson.png", o.chart_dir);
        if (cli_check_dest("lesson", "--out", probe) != CLI_OK) rc = CLI_ERROR;
    }
    if (rc < 0) {
        o.lesson = (attn_lesson)which;
        o.json = fmt == FORMAT_JSON;
        rc = lesson_report(stdout, &o);
    }
    if (lessons != pos) free(lessons);
    return rc;
}

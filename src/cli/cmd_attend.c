/* cmd_attend.c -- `attn attend`: the write-up's s2 calculator, one head of self-attention on
 * small made-up numbers printed step by step: the options (--roles parsed into a table), then
 * attn_attend_write (src/lab/attend_report.c). */
#include "attn_attend.h"
#include "attn_lab.h"
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { FORMAT_TEXT, FORMAT_JSON };

static const char about[] =
    "The attention calculator: one head of self-attention on made-up numbers small enough\n"
    "to print. Each word gets a 4-number embedding from its category (sentiment: +1\n"
    "positive / -1 negative adjective; negation: not, never; noun: subjects and distractor\n"
    "nouns; other: every other word, plus 0.1 * ((id mod 5) - 2) so that words differ);\n"
    "W_Q, W_K, W_V are fixed 4 x 3 matrices (printed). Q = X W_Q, K = X W_K, V = X W_V;\n"
    "scores = q.k_j; scaled = scores / sqrt(3); softmax; output = softmax . V. The softmax\n"
    "and the output come from the engine's attention kernel, the projections from its GEMM.";

static const char notes[] =
    "Roles: the sentence may hold any words. A word of the vocabulary (attn vocab) gets the\n"
    "embedding of its category; any other word the role --roles gives it (its dimension,\n"
    "plus a small offset from the word's hash on dim 3), else 'other' -- the output names\n"
    "those words. --roles may also change a vocabulary word's role.\n\n"
    "--query: the word whose row is shown (its first occurrence); default the sentence's\n"
    "first noun, else its last word. --shuffle: the words in another order (a fixed\n"
    "shuffle, seed 1): with no position information the output rows are the same rows,\n"
    "permuted; the largest difference is printed. JSON: {\"sentence\", \"tokens\",\n"
    "\"query\", \"query_index\", \"X\", \"W_Q\", \"W_K\", \"W_V\", \"Q\", \"K\", \"V\",\n"
    "\"scores\", \"scaled\", \"softmax\", \"output\", \"outputs\", \"shuffle\"}.";

/* --roles "food=noun,messy=negative" into roles[] (pointing into buf); CLI_OK or CLI_USAGE
 * after the message. */
static int parse_roles(const char *list, char *buf, attn_attend_word_role *roles, int max, int *n) {
    *n = 0;
    for (char *p = strcpy(buf, list ? list : ""); *p;) {
        size_t len = strcspn(p, ",");
        const bool last = p[len] == '\0';
        p[len] = '\0';
        char *eq = strchr(p, '=');
        if (!eq) return cli_usage_error("attend", "--roles: '%s' is not WORD=ROLE", p);
        *eq = '\0';
        int role = -1;
        for (int r = ATTN_ROLE_POSITIVE; r <= ATTN_ROLE_OTHER; r++)
            if (strcmp(eq + 1, attn_attend_role_name((attn_attend_role)r)) == 0) role = r;
        if (role < 0)
            return cli_usage_error("attend",
                                   "--roles: unknown role '%s' (positive, negative, negation, "
                                   "noun or other)",
                                   eq + 1);
        if (*n == max) return cli_usage_error("attend", "--roles: more than %d words", max);
        roles[(*n)++] = (attn_attend_word_role){p, (attn_attend_role)role};
        p += len + !last;
    }
    return CLI_OK;
}

/* The calculator into out; CLI_OK or the exit code after the message. */
static int attend_report(FILE *out, const attn_attend_opts *o) {
    attn_error err;
    attn_status st = attn_attend_write(out, o, &err);
    if (st == ATTN_ERR_VALUE &&
        (err.code == ATTN_CODE_EMPTY_SENTENCE || err.code == ATTN_CODE_TOO_LONG))
        return cli_usage_error("attend", "--sentence: %s", err.msg);
    if (st == ATTN_ERR_ARG) return cli_usage_error("attend", "--%s", err.msg);
    return st == ATTN_OK ? CLI_OK : cli_fail("attend", &err);
}

int cmd_attend(int argc, char **argv) {
    const char *sentence = "the food was not good", *query = NULL, *roles = NULL;
    bool shuffled = false;
    int fmt = FORMAT_TEXT;
    cli_opt opts[] = {
        {"--sentence", "S", CLI_OPT_STR, &sentence,
         .help = "any words (see Roles below for words outside the vocabulary)"},
        {"--query", "WORD", CLI_OPT_STR, &query, .def = "the first noun",
         .help = "the word whose scores, softmax and output are shown"},
        {"--roles", "W=R,...", CLI_OPT_STR, &roles, .def = "",
         .help = "roles of words: positive, negative, negation, noun or other\n"
                 "(e.g. food=noun,messy=negative)"},
        {"--shuffle", NULL, CLI_OPT_FLAG, &shuffled,
         .help = "also permute the words and measure the equivariance"},
        {"--format", "F", CLI_OPT_CHOICE, &fmt, .choices = "text|json", .help = "text or json"},
    };
    cli_spec spec = CLI_SPEC(
        "attend", "[--sentence S] [--query WORD] [--roles W=R,...] [--shuffle] [--format F]", about,
        NULL, notes, opts);
    int rc = cli_parse(&spec, argc, argv, NULL, NULL);
    if (rc >= 0) return rc;
    const size_t size = roles ? strlen(roles) + 1 : 1;
    char *buf = malloc(size);
    attn_attend_word_role *table = malloc(size * sizeof *table); /* a role per '=' at most */
    attn_attend_opts o = {sentence, query, table, 0, shuffled, fmt == FORMAT_JSON};
    if (!buf || !table)
        rc = cli_runtime_error("attend", "out of memory");
    else if ((rc = parse_roles(roles, buf, table, (int)size, &o.n_roles)) == CLI_OK)
        rc = attend_report(stdout, &o);
    free(buf);
    free(table);
    return rc;
}

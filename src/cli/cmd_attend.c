/* cmd_attend.c -- `attn attend`: the write-up's s2 calculator. One head of self-attention on
 * small made-up numbers (attn_attend_compute), printed step by step with shapes: X, W_Q, W_K,
 * W_V, Q, K, V, the chosen query's scores, scaled scores, softmax row and output row; with
 * --shuffle, the equivariance under a permutation of the words, measured. */
#include "attn_lab.h"
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { FORMAT_TEXT, FORMAT_JSON };
#define D  ATTN_ATTEND_D
#define DK ATTN_ATTEND_DK

static const char about[] =
    "The attention calculator: one head of self-attention on made-up numbers small enough\n"
    "to print. Each word gets a 4-number embedding from its category (sentiment: +1\n"
    "positive / -1 negative adjective; negation: not, never; noun: subjects and distractor\n"
    "nouns; other: every other word, plus 0.1 * ((id mod 5) - 2) so that words differ);\n"
    "W_Q, W_K, W_V are fixed 4 x 3 matrices (printed). Q = X W_Q, K = X W_K, V = X W_V;\n"
    "scores = q.k_j; scaled = scores / sqrt(3); softmax; output = softmax . V. The softmax\n"
    "and the output come from the engine's attention kernel, the projections from its GEMM.";

static const char notes[] =
    "--query: the word whose row is shown (its first occurrence); default the sentence's\n"
    "first noun, else its last word. --shuffle: the words in another order (a fixed\n"
    "shuffle, seed 1): with no position information the output rows are the same rows,\n"
    "permuted; the largest difference is printed. JSON: {\"sentence\", \"tokens\",\n"
    "\"query\", \"query_index\", \"X\", \"W_Q\", \"W_K\", \"W_V\", \"Q\", \"K\", \"V\",\n"
    "\"scores\", \"scaled\", \"softmax\", \"output\", \"outputs\", \"shuffle\"}.";

static void print_matrix(FILE *out, const char *name, const char *what, const float *a, int rows,
                         int cols, const int *ids, const char *const *col_names) {
    fprintf(out, "\n%s  [%d x %d]  %s\n", name, rows, cols, what);
    if (col_names) {
        fprintf(out, "  %-12s", "");
        for (int c = 0; c < cols; c++) fprintf(out, " %9s", col_names[c]);
        fputc('\n', out);
    }
    for (int r = 0; r < rows; r++) {
        fprintf(out, "  %-12s", ids ? attn_vocab_word(ids[r]) : "");
        for (int c = 0; c < cols; c++) fprintf(out, " %9.4f", (double)a[(size_t)r * cols + c]);
        fputc('\n', out);
    }
}

static void print_row(FILE *out, const char *label, const float *v, int n) {
    fprintf(out, "  %-30s", label);
    for (int j = 0; j < n; j++) fprintf(out, " %9.4f", (double)v[j]);
    fputc('\n', out);
}

static const char *const dims[] = {"sentiment", "negation", "noun", "other"};

static void print_text(FILE *out, const char *sentence, const attn_attend_result *r, int qi) {
    const int n = r->n;
    fprintf(out, "sentence: %s  (n = %d words, d_model = %d, d_k = d_v = %d, no positions)\n",
            sentence, n, D, DK);
    print_matrix(out, "X", "made-up embeddings, one row per word", r->x, n, D, r->ids, dims);
    print_matrix(out, "W_Q", "rows: sentiment, negation, noun, other", attn_attend_weights('q'), D,
                 DK, NULL, NULL);
    print_matrix(out, "W_K", "", attn_attend_weights('k'), D, DK, NULL, NULL);
    print_matrix(out, "W_V", "", attn_attend_weights('v'), D, DK, NULL, NULL);
    print_matrix(out, "Q = X W_Q", "", r->q, n, DK, r->ids, NULL);
    print_matrix(out, "K = X W_K", "", r->k, n, DK, r->ids, NULL);
    print_matrix(out, "V = X W_V", "", r->v, n, DK, r->ids, NULL);
    fprintf(out, "\nquery \"%s\" (row %d): q = Q[%d]  [1 x %d]\n  %-30s",
            attn_vocab_word(r->ids[qi]), qi, qi, DK, "key:");
    for (int j = 0; j < n; j++) fprintf(out, " %9.9s", attn_vocab_word(r->ids[j]));
    fputc('\n', out);
    char label[64];
    snprintf(label, sizeof label, "scores q.k_j [1 x %d]", n);
    print_row(out, label, r->scores + (size_t)qi * n, n);
    snprintf(label, sizeof label, "scaled / sqrt(%d) [1 x %d]", DK, n);
    print_row(out, label, r->scaled + (size_t)qi * n, n);
    snprintf(label, sizeof label, "softmax [1 x %d]", n);
    print_row(out, label, r->probs + (size_t)qi * n, n);
    fprintf(out, "  output = softmax . V  [1 x %d]  ", DK);
    for (int c = 0; c < DK; c++) fprintf(out, " %9.4f", (double)r->out[(size_t)qi * DK + c]);
    fputc('\n', out);
    print_matrix(out, "outputs", "every query's output row (softmax . V)", r->out, n, DK, r->ids,
                 NULL);
}

static void json_matrix(FILE *out, const char *key, const float *a, int rows, int cols) {
    fprintf(out, ", \"%s\": [", key);
    for (int r = 0; r < rows; r++) {
        fprintf(out, "%s[", r ? ", " : "");
        for (int c = 0; c < cols; c++)
            fprintf(out, "%s%.9g", c ? ", " : "", (double)a[(size_t)r * cols + c]);
        fputc(']', out);
    }
    fputc(']', out);
}

static void json_tokens(FILE *out, const int *ids, int n) {
    fputc('[', out);
    for (int i = 0; i < n; i++) {
        if (i) fprintf(out, ", ");
        attn_json_write_string(out, attn_vocab_word(ids[i]));
    }
    fputc(']', out);
}

static void print_json_head(FILE *out, const char *sentence, const attn_attend_result *r, int qi) {
    const int n = r->n;
    fprintf(out, "{\"sentence\": ");
    attn_json_write_string(out, sentence);
    fprintf(out, ", \"tokens\": ");
    json_tokens(out, r->ids, n);
    fprintf(out, ", \"query\": ");
    attn_json_write_string(out, attn_vocab_word(r->ids[qi]));
    fprintf(out, ", \"query_index\": %d, \"d_model\": %d, \"d_k\": %d", qi, D, DK);
    json_matrix(out, "X", r->x, n, D);
    json_matrix(out, "W_Q", attn_attend_weights('q'), D, DK);
    json_matrix(out, "W_K", attn_attend_weights('k'), D, DK);
    json_matrix(out, "W_V", attn_attend_weights('v'), D, DK);
    json_matrix(out, "Q", r->q, n, DK);
    json_matrix(out, "K", r->k, n, DK);
    json_matrix(out, "V", r->v, n, DK);
    json_matrix(out, "scores", r->scores + (size_t)qi * n, 1, n);
    json_matrix(out, "scaled", r->scaled + (size_t)qi * n, 1, n);
    json_matrix(out, "softmax", r->probs + (size_t)qi * n, 1, n);
    json_matrix(out, "output", r->out + (size_t)qi * DK, 1, DK);
    json_matrix(out, "outputs", r->out, n, DK);
}

/* A fixed shuffle that moves at least one word (seed 1; rotated by one if it did not). */
static void make_perm(int *perm, int n) {
    attn_rng rng = attn_rng_seed(1);
    for (int i = 0; i < n; i++) perm[i] = i;
    attn_rng_shuffle(&rng, perm, n);
    bool moved = false;
    for (int i = 0; i < n; i++) moved |= perm[i] != i;
    if (!moved)
        for (int i = 0; i < n; i++) perm[i] = (i + 1) % n;
}

static int shuffle(FILE *out, const int *ids, int n, int fmt) {
    int *perm = malloc((size_t)n * sizeof *perm), *pids = malloc((size_t)n * sizeof *pids);
    attn_attend_result *s = NULL;
    attn_error err;
    double dev_out = 0.0, dev_p = 0.0;
    attn_status st = perm && pids ? ATTN_OK : attn_errorf(&err, ATTN_ERR_NOMEM, "out of memory");
    if (st == ATTN_OK) {
        make_perm(perm, n);
        for (int i = 0; i < n; i++) pids[i] = ids[perm[i]];
        st = attn_attend_compute(pids, n, &s, &err);
    }
    if (st == ATTN_OK) st = attn_attend_equivariance(ids, n, perm, &dev_out, &dev_p, &err);
    if (st == ATTN_OK && fmt == FORMAT_JSON) {
        fprintf(out, ", \"shuffle\": {\"order\": [");
        for (int i = 0; i < n; i++) fprintf(out, "%s%d", i ? ", " : "", perm[i]);
        fprintf(out, "], \"tokens\": ");
        json_tokens(out, pids, n);
        json_matrix(out, "outputs", s->out, n, DK);
        fprintf(out, ", \"max_output_deviation\": %.9g, \"max_probability_deviation\": %.9g}",
                dev_out, dev_p);
    } else if (st == ATTN_OK) {
        fprintf(out, "\nshuffled (word i is word order[i] of the sentence): order =");
        for (int i = 0; i < n; i++) fprintf(out, " %d", perm[i]);
        print_matrix(out, "outputs, shuffled", "softmax . V of the shuffled words", s->out, n, DK,
                     pids, NULL);
        fprintf(out,
                "\nequivariance: largest |out_shuffled[i] - out[order[i]]| = %.3g, largest\n"
                "|p_shuffled[i][j] - p[order[i]][order[j]]| = %.3g: the same rows, permuted;\n"
                "without position information attention cannot tell the orders apart.\n",
                dev_out, dev_p);
    }
    attn_attend_result_free(s);
    free(perm);
    free(pids);
    return st == ATTN_OK ? CLI_OK : cli_fail("attend", &err);
}

/* The query row: --query's first occurrence, else the first noun, else the last word. */
static int query_index(const int *ids, int n, const char *query) {
    if (query) {
        const int id = attn_vocab_id(query);
        for (int i = 0; i < n; i++)
            if (ids[i] == id) return i;
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const char *c = attn_vocab_category(ids[i]);
        if (strcmp(c, "subject") == 0 || strcmp(c, "distractor") == 0) return i;
    }
    return n - 1;
}

int cli_attend_report(FILE *out, const char *sentence, const char *query, bool shuffled,
                      bool json) {
    const int fmt = json ? FORMAT_JSON : FORMAT_TEXT;
    int ids[ATTN_MAX_WORDS], n = 0;
    attn_error err;
    if (attn_tokenize(sentence, ids, ATTN_MAX_WORDS, &n, &err) != ATTN_OK)
        return cli_usage_error("attend", "--sentence: %s", err.msg);
    const int qi = query_index(ids, n, query);
    if (qi < 0)
        return cli_usage_error("attend", "--query '%s' is not a word of the sentence", query);
    attn_attend_result *r = NULL;
    if (attn_attend_compute(ids, n, &r, &err) != ATTN_OK) return cli_fail("attend", &err);
    if (fmt == FORMAT_JSON)
        print_json_head(out, sentence, r, qi);
    else
        print_text(out, sentence, r, qi);
    const int rc = shuffled ? shuffle(out, ids, n, fmt) : CLI_OK;
    if (fmt == FORMAT_JSON) fputs("}\n", out);
    attn_attend_result_free(r);
    return rc;
}

int cmd_attend(int argc, char **argv) {
    const char *sentence = "the lecture was not good", *query = NULL;
    bool shuffled = false;
    int fmt = FORMAT_TEXT;
    cli_opt opts[] = {
        {"--sentence", "S", CLI_OPT_STR, &sentence, .help = "words of the vocabulary (attn vocab)"},
        {"--query", "WORD", CLI_OPT_STR, &query, .def = "the first noun",
         .help = "the word whose scores, softmax and output are shown"},
        {"--shuffle", NULL, CLI_OPT_FLAG, &shuffled,
         .help = "also permute the words and measure the equivariance"},
        {"--format", "F", CLI_OPT_CHOICE, &fmt, .choices = "text|json", .help = "text or json"},
    };
    cli_spec spec = {"attend", "[--sentence S] [--query WORD] [--shuffle] [--format F]",
                     about,    NULL,
                     notes,    opts,
                     4};
    int rc = cli_parse(&spec, argc, argv, NULL, NULL);
    if (rc >= 0) return rc;
    return cli_attend_report(stdout, sentence, query, shuffled, fmt == FORMAT_JSON);
}

/* cmd_attend.c -- `attn attend`: the write-up's s2 calculator. One head of self-attention on
 * small made-up numbers (attn_attend_compute), printed step by step with shapes: X, W_Q, W_K,
 * W_V, Q, K, V, the chosen query's scores, scaled scores, softmax row and output row; with
 * --shuffle, the equivariance under a permutation of the words, measured. */
#include "attn_attend.h"
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

static void print_matrix(FILE *out, const char *name, const char *what, const float *a, int rows,
                         int cols, const char *const *words, const char *const *col_names) {
    fprintf(out, "\n%s  [%d x %d]  %s\n", name, rows, cols, what);
    if (col_names) {
        fprintf(out, "  %-12s", "");
        for (int c = 0; c < cols; c++) fprintf(out, " %9s", col_names[c]);
        fputc('\n', out);
    }
    for (int r = 0; r < rows; r++) {
        fprintf(out, "  %-12s", words ? words[r] : "");
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

static void print_text(FILE *out, const char *sentence, const char *const *w,
                       const attn_attend_result *r, int qi) {
    const int n = r->n;
    fprintf(out, "sentence: %s  (n = %d words, d_model = %d, d_k = d_v = %d, no positions)\n",
            sentence, n, D, DK);
    print_matrix(out, "X", "made-up embeddings, one row per word", r->x, n, D, w, dims);
    print_matrix(out, "W_Q", "rows: sentiment, negation, noun, other", attn_attend_weights('q'), D,
                 DK, NULL, NULL);
    print_matrix(out, "W_K", "", attn_attend_weights('k'), D, DK, NULL, NULL);
    print_matrix(out, "W_V", "", attn_attend_weights('v'), D, DK, NULL, NULL);
    print_matrix(out, "Q = X W_Q", "", r->q, n, DK, w, NULL);
    print_matrix(out, "K = X W_K", "", r->k, n, DK, w, NULL);
    print_matrix(out, "V = X W_V", "", r->v, n, DK, w, NULL);
    fprintf(out, "\nquery \"%s\" (row %d): q = Q[%d]  [1 x %d]\n  %-30s", w[qi], qi, qi, DK,
            "key:");
    for (int j = 0; j < n; j++) fprintf(out, " %9.9s", w[j]);
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
    print_matrix(out, "outputs", "every query's output row (softmax . V)", r->out, n, DK, w, NULL);
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

static void json_tokens(FILE *out, const char *const *w, int n) {
    fputc('[', out);
    for (int i = 0; i < n; i++) {
        if (i) fprintf(out, ", ");
        attn_json_write_string(out, w[i]);
    }
    fputc(']', out);
}

static void print_json_head(FILE *out, const char *sentence, const char *const *w,
                            const attn_attend_result *r, int qi) {
    const int n = r->n;
    fprintf(out, "{\"sentence\": ");
    attn_json_write_string(out, sentence);
    fprintf(out, ", \"tokens\": ");
    json_tokens(out, w, n);
    fprintf(out, ", \"query\": ");
    attn_json_write_string(out, w[qi]);
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

static int shuffle(FILE *out, const float *x, const char *const *w, int n, int fmt) {
    int *perm = malloc((size_t)n * sizeof *perm);
    const char **pw = malloc((size_t)n * sizeof *pw);
    float *px = malloc((size_t)n * D * sizeof *px);
    attn_attend_result *s = NULL;
    attn_error err;
    double dev_out = 0.0, dev_p = 0.0;
    attn_status st =
        perm && pw && px ? ATTN_OK : attn_errorf(&err, ATTN_ERR_NOMEM, "out of memory");
    if (st == ATTN_OK) {
        make_perm(perm, n);
        for (int i = 0; i < n; i++) {
            pw[i] = w[perm[i]];
            memcpy(px + (size_t)i * D, x + (size_t)perm[i] * D, D * sizeof *px);
        }
        st = attn_attend_compute_x(px, n, &s, &err);
    }
    if (st == ATTN_OK) st = attn_attend_equivariance_x(x, n, perm, &dev_out, &dev_p, &err);
    if (st == ATTN_OK && fmt == FORMAT_JSON) {
        fprintf(out, ", \"shuffle\": {\"order\": [");
        for (int i = 0; i < n; i++) fprintf(out, "%s%d", i ? ", " : "", perm[i]);
        fprintf(out, "], \"tokens\": ");
        json_tokens(out, pw, n);
        json_matrix(out, "outputs", s->out, n, DK);
        fprintf(out, ", \"max_output_deviation\": %.9g, \"max_probability_deviation\": %.9g}",
                dev_out, dev_p);
    } else if (st == ATTN_OK) {
        fprintf(out, "\nshuffled (word i is word order[i] of the sentence): order =");
        for (int i = 0; i < n; i++) fprintf(out, " %d", perm[i]);
        print_matrix(out, "outputs, shuffled", "softmax . V of the shuffled words", s->out, n, DK,
                     pw, NULL);
        fprintf(out,
                "\nequivariance: largest |out_shuffled[i] - out[order[i]]| = %.3g, largest\n"
                "|p_shuffled[i][j] - p[order[i]][order[j]]| = %.3g: the same rows, permuted;\n"
                "without position information attention cannot tell the orders apart.\n",
                dev_out, dev_p);
    }
    attn_attend_result_free(s);
    free(perm);
    free(pw);
    free(px);
    return st == ATTN_OK ? CLI_OK : cli_fail("attend", &err);
}

/* The query row: --query's first occurrence, else the first noun, else the last word. */
static int query_index(const char *const *w, const attn_attend_role *roles, int n,
                       const char *query) {
    if (query) {
        for (int i = 0; i < n; i++)
            if (strcmp(w[i], query) == 0) return i;
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (roles[i] == ATTN_ROLE_NOUN) return i;
    return n - 1;
}

static const char *const role_names[] = {"positive", "negative", "negation", "noun", "other"};
#define N_ROLES 5

/* The role --roles gives word w ("food=noun,messy=negative"), ATTN_ROLE_NONE if none; -2
 * after a usage error in the list. */
static int given_role(const char *roles, const char *w) {
    for (const char *p = roles; p && *p;) {
        size_t len = strcspn(p, ",");
        const char *eq = memchr(p, '=', len);
        if (!eq) {
            cli_usage_error("attend", "--roles: '%.*s' is not WORD=ROLE", (int)len, p);
            return -2;
        }
        int role = -1;
        for (int r = 0; r < N_ROLES; r++)
            if ((size_t)(p + len - eq - 1) == strlen(role_names[r]) &&
                strncmp(eq + 1, role_names[r], strlen(role_names[r])) == 0)
                role = r;
        if (role < 0) {
            cli_usage_error("attend",
                            "--roles: unknown role '%.*s' (positive, negative, negation, noun or "
                            "other)",
                            (int)(p + len - eq - 1), eq + 1);
            return -2;
        }
        if ((size_t)(eq - p) == strlen(w) && strncmp(p, w, strlen(w)) == 0) return role;
        p += len + (p[len] == ',');
    }
    return ATTN_ROLE_NONE;
}

/* FNV-1a of a word: the small offset of a word outside the vocabulary. */
static unsigned word_salt(const char *w) {
    uint32_t h = 2166136261u;
    for (; *w; w++) h = (h ^ (unsigned char)*w) * 16777619u;
    return h;
}

/* The made-up embedding of each word: a vocabulary word's from its category (and id), another
 * word's from its --roles entry, else "other". Says which words are outside the vocabulary.
 * -1, or the exit code. */
static int embed_words(FILE *out, const char *const *w, int n, const char *roles, float *x,
                       attn_attend_role *role, int fmt) {
    char outside[512] = "";
    for (int i = 0; i < n; i++) {
        const int id = attn_vocab_id(w[i]);
        const int given = given_role(roles, w[i]);
        if (given == -2) return CLI_USAGE;
        role[i] = given != ATTN_ROLE_NONE ? (attn_attend_role)given
                  : id >= 2               ? attn_attend_role_of(id)
                                          : ATTN_ROLE_OTHER;
        attn_attend_role_embedding(role[i], id >= 2 ? (unsigned)id : word_salt(w[i]),
                                   x + (size_t)i * D);
        bool listed = false; /* each word once */
        for (int j = 0; j < i && !listed; j++) listed = strcmp(w[j], w[i]) == 0;
        if (id < 2 && !listed) {
            size_t used = strlen(outside);
            snprintf(outside + used, sizeof outside - used, "%s%s (%s)", used ? ", " : "", w[i],
                     role_names[role[i]]);
        }
    }
    if (outside[0] && fmt == FORMAT_TEXT)
        fprintf(out, "outside the vocabulary, with the role given by --roles or else 'other': %s\n",
                outside);
    return -1;
}

/* The calculator on `sentence` into out: text, or JSON when json; roles as --roles (may be
 * NULL). CLI_OK or an exit code, after the message. */
static int attend_report(FILE *out, const char *sentence, const char *query, const char *roles,
                         bool shuffled, int fmt) {
    const size_t size = strlen(sentence) + 1;
    char *buf = malloc(size);
    const char *w[ATTN_MAX_WORDS];
    attn_attend_role role[ATTN_MAX_WORDS];
    float x[ATTN_MAX_WORDS * D];
    int n = 0, rc = -1;
    attn_error err;
    if (!buf) return cli_runtime_error("attend", "out of memory");
    if (attn_tokenize_words(sentence, buf, size, w, ATTN_MAX_WORDS, &n, &err) != ATTN_OK)
        rc = cli_usage_error("attend", "--sentence: %s", err.msg);
    if (rc < 0) rc = embed_words(out, w, n, roles, x, role, fmt);
    const int qi = rc < 0 ? query_index(w, role, n, query) : 0;
    if (rc < 0 && qi < 0)
        rc = cli_usage_error("attend", "--query '%s' is not a word of the sentence", query);
    attn_attend_result *r = NULL;
    if (rc < 0 && attn_attend_compute_x(x, n, &r, &err) != ATTN_OK) rc = cli_fail("attend", &err);
    if (rc < 0) {
        if (fmt == FORMAT_JSON)
            print_json_head(out, sentence, w, r, qi);
        else
            print_text(out, sentence, w, r, qi);
        rc = shuffled ? shuffle(out, x, w, n, fmt) : CLI_OK;
        if (fmt == FORMAT_JSON) fprintf(out, "}\n");
    }
    attn_attend_result_free(r);
    free(buf);
    return rc;
}

int cli_attend_report(FILE *out, const char *sentence, const char *query, bool shuffled,
                      bool json) {
    return attend_report(out, sentence, query, NULL, shuffled, json ? FORMAT_JSON : FORMAT_TEXT);
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
    cli_spec spec = {"attend",
                     "[--sentence S] [--query WORD] [--roles W=R,...] [--shuffle] [--format F]",
                     about,
                     NULL,
                     notes,
                     opts,
                     (int)(sizeof opts / sizeof opts[0])};
    int rc = cli_parse(&spec, argc, argv, NULL, NULL);
    if (rc >= 0) return rc;
    return attend_report(stdout, sentence, query, roles, shuffled, fmt);
}

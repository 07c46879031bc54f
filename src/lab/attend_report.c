/* attend_report.c -- the s2 calculator as a report (`attn attend`): one head of self-attention
 * on any sentence's made-up embeddings (attn_attend_compute_x), written step by step with shapes
 * -- X, W_Q, W_K, W_V, Q, K, V, the chosen query's scores, scaled scores, softmax row and output
 * row -- as text or JSON; with shuffle, the equivariance under a permutation of the words. */
#include "attn_attend.h"
#include "attn_lab.h"
#include "attn_own_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define D  ATTN_ATTEND_D
#define DK ATTN_ATTEND_DK

static const char *const role_names[] = {"positive", "negative", "negation", "noun", "other"};

const char *attn_attend_role_name(attn_attend_role role) {
    return role >= ATTN_ROLE_POSITIVE && role <= ATTN_ROLE_OTHER ? role_names[role] : NULL;
}

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

static void json_matrix(attn_json_writer *j, const char *key, const float *a, int rows, int cols) {
    attn_json_begin_array_field(j, key);
    for (int r = 0; r < rows; r++) {
        attn_json_begin_array(j);
        for (int c = 0; c < cols; c++) attn_json_float(j, a[(size_t)r * cols + c]);
        attn_json_end_array(j);
    }
    attn_json_end_array(j);
}

static void json_tokens(attn_json_writer *j, const char *const *w, int n) {
    attn_json_begin_array_field(j, "tokens");
    for (int i = 0; i < n; i++) attn_json_string(j, w[i]);
    attn_json_end_array(j);
}

static void print_json_head(attn_json_writer *j, const char *sentence, const char *const *w,
                            const attn_attend_result *r, int qi) {
    const int n = r->n;
    attn_json_begin_object(j);
    attn_json_field_string(j, "sentence", sentence);
    json_tokens(j, w, n);
    attn_json_field_string(j, "query", w[qi]);
    attn_json_field_int(j, "query_index", qi);
    attn_json_field_int(j, "d_model", D);
    attn_json_field_int(j, "d_k", DK);
    json_matrix(j, "X", r->x, n, D);
    json_matrix(j, "W_Q", attn_attend_weights('q'), D, DK);
    json_matrix(j, "W_K", attn_attend_weights('k'), D, DK);
    json_matrix(j, "W_V", attn_attend_weights('v'), D, DK);
    json_matrix(j, "Q", r->q, n, DK);
    json_matrix(j, "K", r->k, n, DK);
    json_matrix(j, "V", r->v, n, DK);
    json_matrix(j, "scores", r->scores + (size_t)qi * n, 1, n);
    json_matrix(j, "scaled", r->scaled + (size_t)qi * n, 1, n);
    json_matrix(j, "softmax", r->probs + (size_t)qi * n, 1, n);
    json_matrix(j, "output", r->out + (size_t)qi * DK, 1, DK);
    json_matrix(j, "outputs", r->out, n, DK);
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

/* The shuffled sentence's outputs: as text to out, or as the "shuffle" field to j (not NULL). */
static attn_status shuffle(FILE *out, attn_json_writer *j, const float *x, const char *const *w,
                           int n, attn_error *err) {
    int *perm = malloc((size_t)n * sizeof *perm);
    const char **pw = malloc((size_t)n * sizeof *pw);
    float *px = malloc((size_t)n * D * sizeof *px);
    attn_attend_result *s = NULL;
    double dev_out = 0.0, dev_p = 0.0;
    attn_status st = perm && pw && px ? ATTN_OK : attn_errorf(err, ATTN_ERR_NOMEM, "out of memory");
    if (st == ATTN_OK) {
        make_perm(perm, n);
        for (int i = 0; i < n; i++) {
            pw[i] = w[perm[i]];
            memcpy(px + (size_t)i * D, x + (size_t)perm[i] * D, D * sizeof *px);
        }
        st = attn_attend_compute_x(px, n, &s, err);
    }
    if (st == ATTN_OK) st = attn_attend_equivariance_x(x, n, perm, &dev_out, &dev_p, err);
    if (st == ATTN_OK && j) {
        attn_json_begin_object_field(j, "shuffle");
        attn_json_begin_array_field(j, "order");
        for (int i = 0; i < n; i++) attn_json_int(j, perm[i]);
        attn_json_end_array(j);
        json_tokens(j, pw, n);
        json_matrix(j, "outputs", s->out, n, DK);
        attn_json_field_double(j, "max_output_deviation", dev_out);
        attn_json_field_double(j, "max_probability_deviation", dev_p);
        attn_json_end_object(j);
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
    return st;
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

/* FNV-1a of a word: the small offset of a word outside the vocabulary. */
static unsigned word_salt(const char *w) {
    uint32_t h = 2166136261u;
    for (; *w; w++) h = (h ^ (unsigned char)*w) * 16777619u;
    return h;
}

/* The role o gives word w (its first entry), ATTN_ROLE_NONE if none. */
static attn_attend_role given_role(const attn_attend_opts *o, const char *w) {
    for (int i = 0; i < o->n_roles; i++)
        if (strcmp(o->roles[i].word, w) == 0) return o->roles[i].role;
    return ATTN_ROLE_NONE;
}

/* The made-up embedding of each word: a role o gives it, else a vocabulary word's from its
 * category (and id), else "other". The text names the words outside the vocabulary. */
static void embed_words(FILE *out, const attn_attend_opts *o, const char *const *w, int n, float *x,
                        attn_attend_role *role) {
    char outside[512] = "";
    for (int i = 0; i < n; i++) {
        const int id = attn_vocab_id(w[i]);
        const attn_attend_role given = given_role(o, w[i]);
        role[i] = given != ATTN_ROLE_NONE ? given
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
    if (outside[0] && !o->json)
        fprintf(out, "outside the vocabulary, with the role given by --roles or else 'other': %s\n",
                outside);
}

attn_status attn_attend_write(FILE *out, const attn_attend_opts *o, attn_error *err) {
    if (!out || !o || !o->sentence || (o->n_roles > 0 && !o->roles))
        return attn_errorf(err, ATTN_ERR_ARG, "attn_attend_write: NULL argument");
    const size_t size = strlen(o->sentence) + 1;
    char *buf = malloc(size);
    const char *w[ATTN_MAX_WORDS];
    attn_attend_role role[ATTN_MAX_WORDS];
    float x[ATTN_MAX_WORDS * D];
    int n = 0, qi = 0;
    attn_status st = buf ? attn_tokenize_words(o->sentence, buf, size, w, ATTN_MAX_WORDS, &n, err)
                         : attn_errorf(err, ATTN_ERR_NOMEM, "out of memory");
    if (st == ATTN_OK) {
        embed_words(out, o, w, n, x, role);
        if ((qi = query_index(w, role, n, o->query)) < 0)
            st = attn_errorf(err, ATTN_ERR_ARG, "query '%s' is not a word of the sentence",
                             o->query);
    }
    attn_attend_result *r = NULL;
    if (st == ATTN_OK) st = attn_attend_compute_x(x, n, &r, err);
    attn_json_writer j;
    attn_json_writer_init(&j, out);
    if (st == ATTN_OK) {
        if (o->json)
            print_json_head(&j, o->sentence, w, r, qi);
        else
            print_text(out, o->sentence, w, r, qi);
        st = o->shuffle ? shuffle(out, o->json ? &j : NULL, x, w, n, err) : ATTN_OK;
        if (o->json) {
            attn_json_end_object(&j);
            const attn_status js = attn_json_writer_finish(&j, st == ATTN_OK ? err : NULL);
            st = st == ATTN_OK ? js : st;
            fputc('\n', out);
        }
    }
    attn_attend_result_free(r);
    free(buf);
    return st;
}

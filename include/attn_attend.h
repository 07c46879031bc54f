/* attn_attend.h -- the s2 calculator (attn_lab.h's attn_attend_*) on any sentence: its
 * embeddings are made up from a word's role, so a word outside the vocabulary just needs a role
 * (src/lab/attend.c). Include it beside attn_lab.h.
 *
 *   float x[2 * ATTN_ATTEND_D];
 *   attn_attend_role_embedding(ATTN_ROLE_NOUN, 7, x);          // "food", a noun
 *   attn_attend_role_embedding(ATTN_ROLE_NEGATIVE, 3, x + ATTN_ATTEND_D);   // "messy"
 *   attn_attend_compute_x(x, 2, &r, &err);                     // r->ids are all -1
 */
#ifndef ATTN_ATTEND_H
#define ATTN_ATTEND_H

#include "attn_lab.h"

/* A word's role: which dimension of the made-up embedding it sets (attn_lab.h). */
typedef enum attn_attend_role {
    ATTN_ROLE_NONE = -1, /* not a word (special tokens, out-of-range ids) */
    ATTN_ROLE_POSITIVE,  /* dim 0 = +1 */
    ATTN_ROLE_NEGATIVE,  /* dim 0 = -1 */
    ATTN_ROLE_NEGATION,  /* dim 1 = 1 */
    ATTN_ROLE_NOUN,      /* dim 2 = 1 */
    ATTN_ROLE_OTHER,     /* dim 3 = 1 */
} attn_attend_role;

/* The role of built-in vocabulary id (its category), ATTN_ROLE_NONE for specials. */
attn_attend_role attn_attend_role_of(int id);
/* e[D]: the role's dimension, plus 0.1 * ((salt mod 5) - 2) on dim 3 (a vocabulary word's salt
 * is its id: attn_attend_embedding(id) equals attn_attend_role_embedding(role_of(id), id)). */
void attn_attend_role_embedding(attn_attend_role role, unsigned salt, float e[ATTN_ATTEND_D]);
/* attn_attend_compute on embeddings x [n, D] (n in 1..ATTN_MAX_WORDS); the result's ids are -1. */
attn_status attn_attend_compute_x(const float *x, int n, attn_attend_result **out, attn_error *err);
/* attn_attend_equivariance on embeddings x [n, D]. */
attn_status attn_attend_equivariance_x(const float *x, int n, const int *perm, double *max_out_dev,
                                       double *max_prob_dev, attn_error *err);

/* The role's name: "positive", "negative", "negation", "noun", "other"; NULL for NONE. */
const char *attn_attend_role_name(attn_attend_role role);

/* ---- the calculator as a report (`attn attend`; src/lab/attend_report.c) ---------------- */
typedef struct attn_attend_word_role {
    const char *word;
    attn_attend_role role;
} attn_attend_word_role;
typedef struct attn_attend_opts {
    const char *sentence;               /* any words (attn_tokenize_words) */
    const char *query;                  /* the word whose row is shown; NULL: the first noun,
                                         * else the last word */
    const attn_attend_word_role *roles; /* [n_roles] roles of words (the first entry of a word
                                         * wins); a word without one: its vocabulary category,
                                         * else other */
    int n_roles;
    bool shuffle; /* also permute the words (a fixed shuffle, seed 1) and measure equivariance */
    bool json;    /* one JSON object and a newline instead of the text */
} attn_attend_opts;
/* The calculator on o->sentence into out: X, W_Q, W_K, W_V, Q, K, V, the query's scores,
 * scaled scores, softmax and output row, every output row (text or JSON). Errors: the
 * tokenizer's (ATTN_ERR_VALUE with its codes) before any output; ATTN_ERR_ARG ("query 'W' is
 * not a word of the sentence") after the text's line naming the words outside the
 * vocabulary; ATTN_ERR_NOMEM. */
attn_status attn_attend_write(FILE *out, const attn_attend_opts *o, attn_error *err);

#endif

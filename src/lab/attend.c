/* attend.c -- the write-up's s2 calculator: one head of self-attention on numbers small enough
 * to print, computed by the engine's own kernels (attn_sgemm for the projections,
 * attn_attention_forward for softmax(Q K^T / sqrt(d_k)) V).
 *
 * The made-up embeddings (D = 4), from the word's vocabulary category:
 *     dim 0  sentiment: +1 positive adjective, -1 negative adjective
 *     dim 1  negation:  1 for "not", "never"
 *     dim 2  noun:      1 for subjects (lecture, course, ...) and distractor nouns (coffee, ...)
 *     dim 3  other:     1 for every other word (determiners, verbs, intensifiers, fillers, ...)
 * plus 0.1 * ((id mod 5) - 2) on dim 3, so that two words of one category differ a little.
 * W_Q, W_K, W_V (D x d_k = 4 x 3) below are chosen so that a noun's query meets the keys of
 * the negation and of a positive adjective (q.k = 2 and 1.5), and the values carry sentiment,
 * negation and noun-ness into separate output columns. */
#include "attn_attend.h"
#include "attn_lab.h"
#include "attn_kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define D  ATTN_ATTEND_D
#define DK ATTN_ATTEND_DK

/* [D, DK], row i = input dimension i (sentiment, negation, noun, other) */
static const float w_q[D * DK] = {0.0f, 1.0f, 0.0f, /* sentiment */
                                  1.0f, 0.0f, 0.0f, /* negation */
                                  1.0f, 1.0f, 0.0f, /* noun */
                                  0.0f, 0.0f, 1.0f /* other */};
static const float w_k[D * DK] = {0.0f, 1.5f, 0.0f, /* sentiment */
                                  2.0f, 0.0f, 0.0f, /* negation */
                                  0.0f, 0.0f, 0.5f, /* noun */
                                  0.0f, 0.0f, 0.5f /* other */};
static const float w_v[D * DK] = {1.0f, 0.0f, 0.0f, /* sentiment */
                                  0.0f, 1.0f, 0.0f, /* negation */
                                  0.0f, 0.0f, 1.0f, /* noun */
                                  0.0f, 0.0f, 0.0f /* other */};

const float *attn_attend_weights(char which) {
    return which == 'q' ? w_q : which == 'k' ? w_k : which == 'v' ? w_v : NULL;
}

attn_attend_role attn_attend_role_of(int id) {
    const char *cat = attn_vocab_category(id);
    if (!cat || id < 2) return ATTN_ROLE_NONE;
    if (strcmp(cat, "positive") == 0) return ATTN_ROLE_POSITIVE;
    if (strcmp(cat, "negative") == 0) return ATTN_ROLE_NEGATIVE;
    if (strcmp(cat, "negation") == 0) return ATTN_ROLE_NEGATION;
    if (strcmp(cat, "subject") == 0 || strcmp(cat, "distractor") == 0) return ATTN_ROLE_NOUN;
    return ATTN_ROLE_OTHER;
}

void attn_attend_role_embedding(attn_attend_role role, unsigned salt, float e[D]) {
    memset(e, 0, D * sizeof *e);
    if (role == ATTN_ROLE_POSITIVE)
        e[0] = 1.0f;
    else if (role == ATTN_ROLE_NEGATIVE)
        e[0] = -1.0f;
    else if (role == ATTN_ROLE_NEGATION)
        e[1] = 1.0f;
    else if (role == ATTN_ROLE_NOUN)
        e[2] = 1.0f;
    else
        e[3] = 1.0f;
    e[3] += 0.1f * (float)((int)(salt % 5) - 2);
}

attn_status attn_attend_embedding(int id, float e[D], attn_error *err) {
    const attn_attend_role role = attn_attend_role_of(id);
    if (role == ATTN_ROLE_NONE)
        return attn_errorf(err, ATTN_ERR_ARG, "attend: id %d is not a word of the vocabulary", id);
    attn_attend_role_embedding(role, (unsigned)id, e);
    return ATTN_OK;
}

void attn_attend_result_free(attn_attend_result *r) {
    if (!r) return;
    free(r->ids);
    free(r->x);
    free(r->q);
    free(r->k);
    free(r->v);
    free(r->scores);
    free(r->scaled);
    free(r->probs);
    free(r->out);
    free(r);
}

static attn_attend_result *result_new(int n) {
    attn_attend_result *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->n = n;
    const size_t nn = (size_t)n * n;
    r->ids = malloc((size_t)n * sizeof *r->ids);
    r->x = malloc((size_t)n * D * sizeof(float));
    r->q = malloc((size_t)n * DK * sizeof(float));
    r->k = malloc((size_t)n * DK * sizeof(float));
    r->v = malloc((size_t)n * DK * sizeof(float));
    r->scores = malloc(nn * sizeof(float));
    r->scaled = malloc(nn * sizeof(float));
    r->probs = malloc(nn * sizeof(float));
    r->out = malloc((size_t)n * DK * sizeof(float));
    if (!r->ids || !r->x || !r->q || !r->k || !r->v || !r->scores || !r->scaled || !r->probs ||
        !r->out) {
        attn_attend_result_free(r);
        return NULL;
    }
    return r;
}

attn_status attn_attend_compute(const int *ids, int n, attn_attend_result **out, attn_error *err) {
    *out = NULL;
    if (!ids || n < 1 || n > ATTN_MAX_WORDS)
        return attn_errorf(err, ATTN_ERR_ARG, "attend: %d words (1..%d)", n, ATTN_MAX_WORDS);
    float *x = malloc((size_t)n * D * sizeof *x);
    if (!x) return attn_errorf(err, ATTN_ERR_NOMEM, "attend: out of memory");
    attn_status st = ATTN_OK;
    for (int i = 0; i < n && st == ATTN_OK; i++)
        st = attn_attend_embedding(ids[i], x + (size_t)i * D, err);
    if (st == ATTN_OK) st = attn_attend_compute_x(x, n, out, err);
    free(x);
    for (int i = 0; st == ATTN_OK && i < n; i++) (*out)->ids[i] = ids[i];
    return st;
}

attn_status attn_attend_compute_x(const float *x, int n, attn_attend_result **out,
                                  attn_error *err) {
    *out = NULL;
    if (!x || n < 1 || n > ATTN_MAX_WORDS)
        return attn_errorf(err, ATTN_ERR_ARG, "attend: %d words (1..%d)", n, ATTN_MAX_WORDS);
    attn_attend_result *r = result_new(n);
    if (!r) return attn_errorf(err, ATTN_ERR_NOMEM, "attend: out of memory");
    for (int i = 0; i < n; i++) r->ids[i] = -1;
    memcpy(r->x, x, (size_t)n * D * sizeof *x);
    /* Q = X W_Q, K = X W_K, V = X W_V: [n, D] . [D, DK] */
    attn_sgemm(r->q, r->x, w_q, n, DK, D, false, false, 1.0f, 0.0f, ATTN_OP_QKV, ATTN_PASS_FORWARD);
    attn_sgemm(r->k, r->x, w_k, n, DK, D, false, false, 1.0f, 0.0f, ATTN_OP_QKV, ATTN_PASS_FORWARD);
    attn_sgemm(r->v, r->x, w_v, n, DK, D, false, false, 1.0f, 0.0f, ATTN_OP_QKV, ATTN_PASS_FORWARD);
    /* for display: scores = Q K^T and scores / sqrt(d_k) */
    const float scale = 1.0f / sqrtf((float)DK);
    attn_sgemm(r->scores, r->q, r->k, n, n, DK, false, true, 1.0f, 0.0f, ATTN_OP_QK,
               ATTN_PASS_FORWARD);
    for (size_t i = 0; i < (size_t)n * n; i++) r->scaled[i] = r->scores[i] * scale;
    /* the kernel takes q already scaled by 1/sqrt(HS), as the Transformer's forward does */
    float *q_scaled = malloc((size_t)n * DK * sizeof *q_scaled);
    if (!q_scaled) {
        attn_attend_result_free(r);
        return attn_errorf(err, ATTN_ERR_NOMEM, "attend: out of memory");
    }
    for (size_t i = 0; i < (size_t)n * DK; i++) q_scaled[i] = r->q[i] * scale;
    attn_attention_forward(r->out, r->probs, q_scaled, r->k, r->v, 1, n, n, DK, n, (size_t)n * DK,
                           NULL);
    free(q_scaled);
    *out = r;
    return ATTN_OK;
}

attn_status attn_attend_equivariance(const int *ids, int n, const int *perm, double *max_out_dev,
                                     double *max_prob_dev, attn_error *err) {
    if (!ids || !perm || n < 1 || n > ATTN_MAX_WORDS)
        return attn_errorf(err, ATTN_ERR_ARG, "attend: no words or permutation");
    float *x = malloc((size_t)n * D * sizeof *x);
    if (!x) return attn_errorf(err, ATTN_ERR_NOMEM, "attend: out of memory");
    attn_status st = ATTN_OK;
    for (int i = 0; i < n && st == ATTN_OK; i++)
        st = attn_attend_embedding(ids[i], x + (size_t)i * D, err);
    if (st == ATTN_OK) st = attn_attend_equivariance_x(x, n, perm, max_out_dev, max_prob_dev, err);
    free(x);
    return st;
}

attn_status attn_attend_equivariance_x(const float *x, int n, const int *perm, double *max_out_dev,
                                       double *max_prob_dev, attn_error *err) {
    if (!x || !perm || n < 1 || n > ATTN_MAX_WORDS)
        return attn_errorf(err, ATTN_ERR_ARG, "attend: no words or permutation");
    float *px = malloc((size_t)n * D * sizeof *px);
    char *seen = calloc((size_t)n, 1);
    if (!px || !seen) {
        free(px);
        free(seen);
        return attn_errorf(err, ATTN_ERR_NOMEM, "attend: out of memory");
    }
    for (int i = 0; i < n; i++) {
        if (perm[i] < 0 || perm[i] >= n || seen[perm[i]]) {
            free(px);
            free(seen);
            return attn_errorf(err, ATTN_ERR_ARG, "attend: perm is not a permutation of 0..%d",
                               n - 1);
        }
        seen[perm[i]] = 1;
        memcpy(px + (size_t)i * D, x + (size_t)perm[i] * D, D * sizeof *px);
    }
    free(seen);
    attn_attend_result *a = NULL, *b = NULL;
    attn_status st = attn_attend_compute_x(x, n, &a, err);
    if (st == ATTN_OK) st = attn_attend_compute_x(px, n, &b, err);
    double dev_out = 0.0, dev_p = 0.0;
    for (int i = 0; st == ATTN_OK && i < n; i++) {
        for (int c = 0; c < DK; c++)
            dev_out = fmax(dev_out, fabs((double)b->out[(size_t)i * DK + c] -
                                         a->out[(size_t)perm[i] * DK + c]));
        for (int j = 0; j < n; j++)
            dev_p = fmax(dev_p, fabs((double)b->probs[(size_t)i * n + j] -
                                     a->probs[(size_t)perm[i] * n + perm[j]]));
    }
    *max_out_dev = dev_out;
    *max_prob_dev = dev_p;
    attn_attend_result_free(a);
    attn_attend_result_free(b);
    free(px);
    return st;
}

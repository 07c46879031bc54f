/* rewrite.c -- the rewrite task: a review sentence -> its verdict (attn_seq2seq.h).
 *
 *   honestly the lecture was not very helpful ... although the coffee was great
 *   -> negative lecture not helpful
 *
 * The sources are the generator's sentences, untouched (generator.c); the target is read off
 * the sentence's parse (grammar.c): the core clause's subject, negation and adjective. The
 * first target word depends on words later in the source (the adjective, and the negation
 * before it); the others copy earlier positions.
 */
#include "attn_seq2seq.h"
#include "data_internal.h"

#include <stdlib.h>
#include <string.h>

attn_status attn_rewrite_target(const int *ids, int n, int label, int *tgt, int *align, int *n_tgt,
                                attn_error *err) {
    *n_tgt = 0;
    attn_parse parse;
    attn_error e;
    if (attn_grammar_parse(ids, n, &parse, &e) != ATTN_OK)
        return attn_errorf(err, e.status, "rewrite: %s", e.msg);
    const int subj = parse.subject, neg = parse.negation, adj = parse.adjective;
    /* the label is the adjective's polarity flipped by the negation: check it agrees */
    if (parse.label != (label != 0))
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "rewrite: label %d disagrees with the core clause (adjective '%s'%s)",
                           label, attn_vocab_word(ids[adj]), neg >= 0 ? ", negated" : "");
    int k = 0;
    tgt[k] = label ? ATTN_TGT_POSITIVE : ATTN_TGT_NEGATIVE;
    align[k++] = adj;
    tgt[k] = ids[subj];
    align[k++] = subj;
    if (neg >= 0) {
        tgt[k] = ids[neg];
        align[k++] = neg;
    }
    tgt[k] = ids[adj];
    align[k++] = adj;
    *n_tgt = k;
    return ATTN_OK;
}

/* "w1 w2 ..." of target ids[n] (malloc'd; NULL when out of memory). */
static char *tgt_text(const int *ids, int n) {
    size_t len = 1;
    for (int i = 0; i < n; i++) len += strlen(attn_tgt_vocab_token(ids[i])) + 1;
    char *s = malloc(len), *t = s;
    if (!s) return NULL;
    for (int i = 0; i < n; i++) {
        const char *w = attn_tgt_vocab_token(ids[i]);
        if (i > 0) *t++ = ' ';
        memcpy(t, w, strlen(w));
        t += strlen(w);
    }
    *t = '\0';
    return s;
}

attn_status attn_pairs_generate(attn_task task, attn_set set, int n, uint64_t seed,
                                attn_pairs **out, attn_error *err) {
    if (!out) return attn_errorf(err, ATTN_ERR_ARG, "attn_pairs_generate: NULL out");
    *out = NULL;
    if (task == ATTN_TASK_COMPOSE) return attn_compose_pairs(set, n, seed, out, err);
    if (task != ATTN_TASK_REWRITE)
        return attn_errorf(err, ATTN_ERR_ARG, "attn_pairs_generate: unknown task %d", (int)task);
    attn_pairs *p = calloc(1, sizeof *p);
    if (!p) return attn_errorf(err, ATTN_ERR_NOMEM, "rewrite: out of memory");
    p->task = task;
    attn_status st = attn_data_generate(set, n, seed, &p->src, err);
    if (st != ATTN_OK) {
        attn_pairs_free(p);
        return st;
    }
    const size_t cap = (size_t)n * ATTN_REWRITE_MAX_TGT;
    p->tgt_lengths = calloc((size_t)n, sizeof *p->tgt_lengths);
    p->tgt_offsets = calloc((size_t)n + 1, sizeof *p->tgt_offsets);
    p->tgt_ids = malloc(cap * sizeof *p->tgt_ids);
    p->align = malloc(cap * sizeof *p->align);
    p->tgt_texts = calloc((size_t)n, sizeof *p->tgt_texts);
    if (!p->tgt_lengths || !p->tgt_offsets || !p->tgt_ids || !p->align || !p->tgt_texts) {
        attn_pairs_free(p);
        return attn_errorf(err, ATTN_ERR_NOMEM, "rewrite: out of memory for %d pairs", n);
    }
    const attn_dataset *d = p->src;
    for (int i = 0; i < d->n && st == ATTN_OK; i++) {
        const size_t o = p->tgt_offsets[i];
        st = attn_rewrite_target(d->ids + d->offsets[i], d->lengths[i], d->labels[i],
                                 p->tgt_ids + o, p->align + o, &p->tgt_lengths[i], err);
        p->tgt_offsets[i + 1] = o + (size_t)p->tgt_lengths[i];
        if (st == ATTN_OK && !(p->tgt_texts[i] = tgt_text(p->tgt_ids + o, p->tgt_lengths[i])))
            st = attn_errorf(err, ATTN_ERR_NOMEM, "rewrite: out of memory");
    }
    if (st != ATTN_OK) {
        attn_pairs_free(p);
        return st;
    }
    *out = p;
    return ATTN_OK;
}

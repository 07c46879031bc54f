/* dataset.c -- attn_dataset storage: a growing builder and freeing (the TSV reader is
 * tsv.c's).
 */
#include "data_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void attn_dataset_free(attn_dataset *d) {
    if (!d) return;
    if (d->texts)
        for (int i = 0; i < d->n; i++) free(d->texts[i]);
    free(d->texts);
    free(d->labels);
    free(d->lengths);
    free(d->offsets);
    free(d->ids);
    free(d);
}

/* ---- builder ------------------------------------------------------------------------------- */

attn_status attn_dataset_builder_init(attn_dataset_builder *b, attn_error *err) {
    memset(b, 0, sizeof *b);
    b->vocab = attn_vocab_builtin();
    b->d = calloc(1, sizeof *b->d);
    if (b->d) b->d->offsets = calloc(1, sizeof *b->d->offsets); /* offsets[0] = 0 */
    if (!b->d || !b->d->offsets) {
        attn_dataset_builder_discard(b);
        return attn_errorf(err, ATTN_ERR_NOMEM, "dataset: out of memory");
    }
    return ATTN_OK;
}

static attn_status grow(attn_dataset_builder *b, int len, attn_error *err) {
    attn_dataset *d = b->d;
    if (d->n == b->cap) {
        int cap = b->cap ? 2 * b->cap : 256;
        int *labels = realloc(d->labels, (size_t)cap * sizeof *labels);
        if (labels) d->labels = labels;
        int *lengths = realloc(d->lengths, (size_t)cap * sizeof *lengths);
        if (lengths) d->lengths = lengths;
        char **texts = realloc(d->texts, (size_t)cap * sizeof *texts);
        if (texts) d->texts = texts;
        size_t *offsets = realloc(d->offsets, ((size_t)cap + 1) * sizeof *offsets);
        if (offsets) d->offsets = offsets;
        if (!labels || !lengths || !texts || !offsets)
            return attn_errorf(err, ATTN_ERR_NOMEM, "dataset: out of memory at %d sentences", d->n);
        b->cap = cap;
    }
    size_t need = d->offsets[d->n] + (size_t)len;
    if (need > b->cap_ids) {
        size_t cap = b->cap_ids ? 2 * b->cap_ids : 4096;
        while (cap < need) cap *= 2;
        int *ids = realloc(d->ids, cap * sizeof *ids);
        if (!ids)
            return attn_errorf(err, ATTN_ERR_NOMEM, "dataset: out of memory at %zu words", need);
        d->ids = ids;
        b->cap_ids = cap;
    }
    return ATTN_OK;
}

attn_status attn_dataset_builder_push(attn_dataset_builder *b, int label, const int *ids, int len,
                                      attn_error *err) {
    attn_status st = grow(b, len, err);
    if (st != ATTN_OK) return st;
    attn_dataset *d = b->d;
    size_t chars = 0;
    for (int i = 0; i < len; i++) chars += strlen(attn_vocab_token(b->vocab, ids[i])) + 1;
    char *text = malloc(chars + 1);
    if (!text) return attn_errorf(err, ATTN_ERR_NOMEM, "dataset: out of memory");
    char *t = text;
    for (int i = 0; i < len; i++) {
        const char *w = attn_vocab_token(b->vocab, ids[i]);
        size_t wl = strlen(w);
        if (i > 0) *t++ = ' ';
        memcpy(t, w, wl);
        t += wl;
    }
    *t = '\0';
    memcpy(d->ids + d->offsets[d->n], ids, (size_t)len * sizeof *ids);
    d->labels[d->n] = label;
    d->lengths[d->n] = len;
    d->texts[d->n] = text;
    d->offsets[d->n + 1] = d->offsets[d->n] + (size_t)len;
    d->n++;
    return ATTN_OK;
}

attn_dataset *attn_dataset_builder_finish(attn_dataset_builder *b) {
    attn_dataset *d = b->d;
    memset(b, 0, sizeof *b);
    b->vocab = attn_vocab_builtin();
    return d;
}

void attn_dataset_builder_discard(attn_dataset_builder *b) {
    attn_dataset_free(b->d);
    memset(b, 0, sizeof *b);
}

/* ---- the seeded shuffle of a file's sentences (the held-out set of attn train --data) ------ */

attn_status attn_dataset_shuffle(attn_dataset *d, uint64_t seed, attn_error *err) {
    int n = d->n;
    int *order = malloc((size_t)(n > 0 ? n : 1) * sizeof *order);
    int *labels = malloc((size_t)(n > 0 ? n : 1) * sizeof *labels);
    int *lengths = malloc((size_t)(n > 0 ? n : 1) * sizeof *lengths);
    char **texts = malloc((size_t)(n > 0 ? n : 1) * sizeof *texts);
    size_t *offsets = malloc(((size_t)n + 1) * sizeof *offsets);
    int *ids = malloc((d->offsets[n] > 0 ? d->offsets[n] : 1) * sizeof *ids);
    if (!order || !labels || !lengths || !texts || !offsets || !ids) {
        free(order), free(labels), free(lengths), free(texts), free(offsets), free(ids);
        return attn_errorf(err, ATTN_ERR_NOMEM, "dataset: out of memory shuffling %d sentences", n);
    }
    for (int i = 0; i < n; i++) order[i] = i;
    attn_rng r = attn_rng_seed(seed);
    attn_rng_shuffle(&r, order, n);
    offsets[0] = 0;
    for (int i = 0; i < n; i++) {
        int j = order[i];
        labels[i] = d->labels[j];
        lengths[i] = d->lengths[j];
        texts[i] = d->texts[j];
        memcpy(ids + offsets[i], d->ids + d->offsets[j], (size_t)d->lengths[j] * sizeof *ids);
        offsets[i + 1] = offsets[i] + (size_t)d->lengths[j];
    }
    free(d->labels), free(d->lengths), free(d->texts), free(d->offsets), free(d->ids);
    d->labels = labels, d->lengths = lengths, d->texts = texts, d->offsets = offsets, d->ids = ids;
    free(order);
    return ATTN_OK;
}

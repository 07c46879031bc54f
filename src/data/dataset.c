/* dataset.c -- attn_dataset storage: a growing builder, freeing, and the TSV reader
 * ("label<TAB>sentence" per line, label 0 = negative, 1 = positive).
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

/* ---- TSV reader ---------------------------------------------------------------------------- */

attn_status attn_dataset_read_tsv(const char *path, attn_dataset **out, attn_error *err) {
    return attn_dataset_read_tsv_vocab(path, attn_vocab_builtin(), out, err);
}

attn_status attn_dataset_read_tsv_vocab(const char *path, const attn_vocab *v, attn_dataset **out,
                                        attn_error *err) {
    if (!path || !out || !v)
        return attn_errorf(err, ATTN_ERR_ARG, "attn_dataset_read_tsv: NULL path or vocab");
    *out = NULL;
    FILE *f = fopen(path, "r");
    if (!f) return attn_errorf(err, ATTN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    attn_dataset_builder b;
    attn_status st = attn_dataset_builder_init(&b, err);
    if (st != ATTN_OK) {
        fclose(f);
        return st;
    }
    b.vocab = v;
    char *line = NULL;
    size_t line_cap = 0;
    long lineno = 0;
    ssize_t got;
    int ids[ATTN_MAX_WORDS];
    attn_error tok_err;
    while ((got = getline(&line, &line_cap, f)) != -1) {
        lineno++;
        while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r')) line[--got] = '\0';
        if (got == 0) continue; /* blank lines (e.g. a final newline) are skipped */
        if ((size_t)got != strlen(line)) {
            st = attn_errorf(err, ATTN_ERR_PARSE, "%s:%ld: NUL byte in line", path, lineno);
            goto done;
        }
        char *tab = strchr(line, '\t');
        if (!tab) {
            st = attn_errorf(err, ATTN_ERR_PARSE,
                             "%s:%ld: missing tab; expected 'label<TAB>sentence'", path, lineno);
            goto done;
        }
        if (strchr(tab + 1, '\t')) {
            st = attn_errorf(err, ATTN_ERR_PARSE,
                             "%s:%ld: more than 2 tab-separated columns; expected "
                             "'label<TAB>sentence'",
                             path, lineno);
            goto done;
        }
        *tab = '\0';
        if (strcmp(line, "0") != 0 && strcmp(line, "1") != 0) {
            st = attn_errorf(err, ATTN_ERR_PARSE,
                             "%s:%ld: bad label '%.40s'; expected 0 (negative) or 1 (positive)",
                             path, lineno, line);
            goto done;
        }
        int label = line[0] - '0';
        int n = 0;
        if (attn_tokenize_vocab(v, tab + 1, ids, ATTN_MAX_WORDS, &n, &tok_err) != ATTN_OK) {
            st = attn_errorf(err, tok_err.status, "%s:%ld: %s", path, lineno, tok_err.msg);
            goto done;
        }
        st = attn_dataset_builder_push(&b, label, ids, n, err);
        if (st != ATTN_OK) goto done;
    }
    if (ferror(f)) {
        st = attn_errorf(err, ATTN_ERR_IO, "%s: read error after line %ld", path, lineno);
        goto done;
    }
    if (b.d->n == 0) {
        st = attn_errorf(err, ATTN_ERR_PARSE,
                         "%s: no sentences (expected 'label<TAB>sentence' "
                         "lines)",
                         path);
        goto done;
    }
    st = ATTN_OK;
done:
    free(line);
    fclose(f);
    if (st == ATTN_OK)
        *out = attn_dataset_builder_finish(&b);
    else
        attn_dataset_builder_discard(&b);
    return st;
}

/* pairs_tsv.c -- a file of 'source<TAB>target' pairs as attn_pairs (attn_seq2seq.h): what attn
 * data --task prints, read back for attn eval --data. The first bad line stops the reading, its
 * message naming the file and the line. */
#include "attn_seq2seq.h"
#include "data_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct growing {
    int n, cap;
    size_t n_src, n_tgt, cap_src, cap_tgt;
    int *src_len, *tgt_len, *src, *tgt, *labels;
    char **src_text, **tgt_text;
} growing;

static bool grow(void **p, size_t count, size_t elem) {
    void *q = realloc(*p, count * elem);
    if (q) *p = q;
    return q != NULL;
}

/* Room for one more pair of (at most) s source and t target ids. */
static bool reserve(growing *g, size_t s, size_t t) {
    if (g->n == g->cap) {
        const int cap = g->cap ? 2 * g->cap : 256;
        if (!grow((void **)&g->src_len, (size_t)cap, sizeof(int)) ||
            !grow((void **)&g->tgt_len, (size_t)cap, sizeof(int)) ||
            !grow((void **)&g->labels, (size_t)cap, sizeof(int)) ||
            !grow((void **)&g->src_text, (size_t)cap, sizeof(char *)) ||
            !grow((void **)&g->tgt_text, (size_t)cap, sizeof(char *)))
            return false;
        g->cap = cap;
    }
    while (g->n_src + s > g->cap_src) {
        const size_t cap = g->cap_src ? 2 * g->cap_src : 4096;
        if (!grow((void **)&g->src, cap, sizeof(int))) return false;
        g->cap_src = cap;
    }
    while (g->n_tgt + t > g->cap_tgt) {
        const size_t cap = g->cap_tgt ? 2 * g->cap_tgt : 4096;
        if (!grow((void **)&g->tgt, cap, sizeof(int))) return false;
        g->cap_tgt = cap;
    }
    return true;
}

/* "w1 w2" of ids[n] in vocabulary `tgt` (target) or the built-in one. */
static char *join(const int *ids, int n, bool tgt) {
    size_t len = 1;
    for (int i = 0; i < n; i++)
        len += strlen(tgt ? attn_tgt_vocab_token(ids[i]) : attn_vocab_word(ids[i])) + 1;
    char *s = malloc(len), *p = s;
    for (int i = 0; s && i < n; i++) {
        const char *w = tgt ? attn_tgt_vocab_token(ids[i]) : attn_vocab_word(ids[i]);
        if (i) *p++ = ' ';
        memcpy(p, w, strlen(w));
        p += strlen(w);
    }
    if (s) *p = '\0';
    return s;
}

/* One line (no newline) into pair g->n. */
static attn_status read_line(growing *g, attn_task task, char *line, int max_src, int max_tgt,
                             const char *where, attn_error *err) {
    char *tab = strchr(line, '\t');
    if (!tab || strchr(tab + 1, '\t'))
        return attn_errorf(err, ATTN_ERR_PARSE, "%s: expected 'source<TAB>target' (one tab)",
                           where);
    *tab = '\0';
    const size_t cap_src = strlen(line) / 2 + 1 + ATTN_COMPOSE_SRC;
    const size_t cap_tgt = strlen(tab + 1) / 2 + 1;
    if (!reserve(g, cap_src, cap_tgt))
        return attn_errorf(err, ATTN_ERR_NOMEM, "%s: out of memory", where);
    int *src = g->src + g->n_src, *tgt = g->tgt + g->n_tgt, n_src = ATTN_COMPOSE_SRC, n_tgt = 0;
    attn_error e;
    attn_status st = task == ATTN_TASK_COMPOSE ? attn_compose_source(line, src, &e)
                                               : attn_tokenize(line, src, (int)cap_src, &n_src, &e);
    if (st != ATTN_OK) return attn_errorf(err, st, "%s: source: %s", where, e.msg);
    if (n_src > max_src)
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "%s: the source has %d words, the model reads at most %d", where, n_src,
                           max_src);
    for (char *w = strtok(tab + 1, " "); w; w = strtok(NULL, " ")) {
        const int id = attn_tgt_vocab_id(w);
        if (id < 0 || id == ATTN_PAD_ID || id == ATTN_TGT_BOS || id == ATTN_TGT_EOS)
            return attn_errorf(err, ATTN_ERR_VALUE, "%s: target word '%s' is %s", where, w,
                               id < 0 ? "not in the target vocabulary" : "a special token");
        tgt[n_tgt++] = id;
    }
    if (n_tgt == 0) return attn_errorf(err, ATTN_ERR_VALUE, "%s: the target is empty", where);
    if (n_tgt > max_tgt)
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "%s: the target has %d words, the model writes at most %d", where, n_tgt,
                           max_tgt);
    g->labels[g->n] = task == ATTN_TASK_COMPOSE ? src[0] == ATTN_TGT_POSITIVE : -1;
    g->src_len[g->n] = n_src;
    g->tgt_len[g->n] = n_tgt;
    g->src_text[g->n] = join(src, n_src, task == ATTN_TASK_COMPOSE);
    g->tgt_text[g->n] = join(tgt, n_tgt, true);
    if (!g->src_text[g->n] || !g->tgt_text[g->n]) {
        free(g->src_text[g->n]), free(g->tgt_text[g->n]);
        return attn_errorf(err, ATTN_ERR_NOMEM, "%s: out of memory", where);
    }
    g->n_src += (size_t)n_src;
    g->n_tgt += (size_t)n_tgt;
    g->n++;
    return ATTN_OK;
}

/* Hands g's arrays to a new attn_pairs. */
static attn_status finish(growing *g, attn_task task, attn_pairs **out, attn_error *err) {
    attn_pairs *p = calloc(1, sizeof *p);
    attn_dataset *d = calloc(1, sizeof *d);
    size_t *so = malloc(((size_t)g->n + 1) * sizeof *so),
           *to = malloc(((size_t)g->n + 1) * sizeof *to);
    int *align = malloc((g->n_tgt + 1) * sizeof *align);
    if (!p || !d || !so || !to || !align) {
        free(p), free(d), free(so), free(to), free(align);
        return attn_errorf(err, ATTN_ERR_NOMEM, "pairs: out of memory");
    }
    so[0] = to[0] = 0;
    for (int i = 0; i < g->n; i++) {
        so[i + 1] = so[i] + (size_t)g->src_len[i];
        to[i + 1] = to[i] + (size_t)g->tgt_len[i];
    }
    for (size_t j = 0; j < g->n_tgt; j++) align[j] = -1; /* a file does not say */
    *d = (attn_dataset){g->n, g->labels, g->src_len, so, g->src, g->src_text};
    p->task = task;
    p->src = d;
    p->tgt_lengths = g->tgt_len;
    p->tgt_offsets = to;
    p->tgt_ids = g->tgt;
    p->align = align;
    p->tgt_texts = g->tgt_text;
    memset(g, 0, sizeof *g);
    *out = p;
    return ATTN_OK;
}

static void growing_free(growing *g) {
    for (int i = 0; i < g->n; i++) free(g->src_text[i]), free(g->tgt_text[i]);
    free(g->src_len), free(g->tgt_len), free(g->src), free(g->tgt), free(g->labels);
    free(g->src_text), free(g->tgt_text);
}

attn_status attn_pairs_read_tsv(const char *path, attn_task task, int max_src, int max_tgt,
                                attn_pairs **out, attn_error *err) {
    if (!path || !out) return attn_errorf(err, ATTN_ERR_ARG, "attn_pairs_read_tsv: NULL argument");
    *out = NULL;
    FILE *f = fopen(path, "r");
    if (!f) return attn_errorf(err, ATTN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    growing g = {0};
    char *line = NULL, where[512];
    size_t cap = 0;
    ssize_t got;
    long line_no = 0;
    attn_status st = ATTN_OK;
    while (st == ATTN_OK && (got = getline(&line, &cap, f)) != -1) {
        line_no++;
        snprintf(where, sizeof where, "%s:%ld", path, line_no);
        while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r')) line[--got] = '\0';
        if ((size_t)got != strlen(line))
            st = attn_errorf(err, ATTN_ERR_PARSE, "%s: NUL byte in the line", where);
        else if (got > 0)
            st = read_line(&g, task, line, max_src, max_tgt, where, err);
    }
    if (st == ATTN_OK && ferror(f))
        st = attn_errorf(err, ATTN_ERR_IO, "%s: read error after line %ld", path, line_no);
    free(line);
    fclose(f);
    if (st == ATTN_OK && g.n == 0)
        st = attn_errorf(err, ATTN_ERR_VALUE, "%s: no 'source<TAB>target' lines", path);
    if (st == ATTN_OK) st = finish(&g, task, out, err);
    growing_free(&g);
    return st;
}

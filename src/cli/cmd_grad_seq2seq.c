/* cmd_grad_seq2seq.c -- `attn grad` with seq2seq weights: the gradient of the mean cross-entropy
 * over every target token ([EOS] included) of a file of 'source<TAB>target' pairs, written in
 * the seq2seq weights format. cmd_grad.c hands over when W.json holds a seq2seq model;
 * tools/seq2seq_grad_check.py compares it with PyTorch's autograd. */
#include "attn_seq2seq.h"
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pair_file {
    int n, cap;
    int *src, *src_len, *tgt, *tgt_len; /* [n, ATTN_MAX_WORDS], [n], [n, T_CAP], [n] */
} pair_file;

#define T_CAP (ATTN_S2S_MAX_TGT + 1)

/* One 'source<TAB>target' line into pair n of f (grown as needed). */
static attn_status add_pair(pair_file *f, char *line, const char *path, int line_no,
                            attn_error *err) {
    char *tab = strchr(line, '\t');
    if (!tab)
        return attn_errorf(err, ATTN_ERR_PARSE, "%s:%d: expected 'source<TAB>target'", path,
                           line_no);
    *tab = '\0';
    if (f->n == f->cap) {
        const int cap = f->cap ? 2 * f->cap : 64;
        int *s = realloc(f->src, (size_t)cap * ATTN_MAX_WORDS * sizeof(int));
        if (s) f->src = s;
        int *sl = realloc(f->src_len, (size_t)cap * sizeof(int));
        if (sl) f->src_len = sl;
        int *t = realloc(f->tgt, (size_t)cap * T_CAP * sizeof(int));
        if (t) f->tgt = t;
        int *tl = realloc(f->tgt_len, (size_t)cap * sizeof(int));
        if (tl) f->tgt_len = tl;
        if (!s || !sl || !t || !tl)
            return attn_errorf(err, ATTN_ERR_NOMEM, "%s: out of memory", path);
        f->cap = cap;
    }
    attn_error e;
    if (attn_tokenize(line, f->src + (size_t)f->n * ATTN_MAX_WORDS, ATTN_MAX_WORDS,
                      &f->src_len[f->n], &e) != ATTN_OK)
        return attn_errorf(err, e.status, "%s:%d: source: %s", path, line_no, e.msg);
    int *tgt = f->tgt + (size_t)f->n * T_CAP, T = 0;
    tgt[T++] = ATTN_TGT_BOS;
    for (char *w = strtok(tab + 1, " \t\r\n"); w; w = strtok(NULL, " \t\r\n")) {
        const int id = attn_tgt_vocab_id(w);
        if (id < 0 || T == T_CAP)
            return attn_errorf(err, ATTN_ERR_VALUE, "%s:%d: target word '%s' %s", path, line_no, w,
                               id < 0 ? "is not in the target vocabulary" : "is one too many");
        tgt[T++] = id;
    }
    f->tgt_len[f->n++] = T;
    return ATTN_OK;
}

static attn_status read_pairs(const char *path, pair_file *f, attn_error *err) {
    FILE *in = fopen(path, "r");
    if (!in) return attn_errorf(err, ATTN_ERR_IO, "%s: cannot open", path);
    char *line = NULL;
    size_t cap = 0;
    int line_no = 0;
    attn_status st = ATTN_OK;
    while (st == ATTN_OK && getline(&line, &cap, in) > 0) {
        line_no++;
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0]) st = add_pair(f, line, path, line_no, err);
    }
    free(line);
    fclose(in);
    if (st == ATTN_OK && f->n == 0) st = attn_errorf(err, ATTN_ERR_VALUE, "%s: no pairs", path);
    return st;
}

/* Labels of pair i's rows: the decoder input shifted by one, [EOS] last. */
static int pair_labels(const pair_file *f, int i, int *labels) {
    const int *tgt = f->tgt + (size_t)i * T_CAP, T = f->tgt_len[i];
    for (int t = 1; t < T; t++) labels[t - 1] = tgt[t];
    labels[T - 1] = ATTN_TGT_EOS;
    return T;
}

static attn_status grad_pairs(attn_seq2seq *m, const pair_file *f, int batch, double *loss,
                              attn_error *err) {
    const int V = attn_seq2seq_config_of(m)->tgt_vocab;
    long total = 0;
    for (int i = 0; i < f->n; i++) total += f->tgt_len[i];
    float *logits = malloc((size_t)batch * T_CAP * V * sizeof(float));
    float *d = malloc((size_t)batch * T_CAP * V * sizeof(float));
    int *labels = malloc((size_t)batch * T_CAP * sizeof(int));
    attn_status st =
        logits && d && labels ? ATTN_OK : attn_errorf(err, ATTN_ERR_NOMEM, "out of memory");
    attn_seq2seq_zero_grad(m);
    *loss = 0.0;
    for (int first = 0; st == ATTN_OK && first < f->n; first += batch) {
        const int B = f->n - first < batch ? f->n - first : batch;
        int rows = 0;
        for (int k = 0; k < B; k++) rows += pair_labels(f, first + k, labels + rows);
        const attn_s2s_batch b = {B,
                                  ATTN_MAX_WORDS,
                                  T_CAP,
                                  f->src + (size_t)first * ATTN_MAX_WORDS,
                                  f->src_len + first,
                                  f->tgt + (size_t)first * T_CAP,
                                  f->tgt_len + first};
        st = attn_seq2seq_forward(m, &b, logits, err);
        if (st != ATTN_OK) break;
        /* each batch's mean, weighted by its share of the tokens: the mean over all tokens */
        const double share = (double)rows / (double)total;
        *loss += share * attn_cross_entropy_forward(logits, labels, rows, V, ATTN_PAD_ID);
        memset(d, 0, (size_t)rows * V * sizeof(float));
        attn_cross_entropy_backward(d, (float)share, logits, labels, rows, V, ATTN_PAD_ID);
        st = attn_seq2seq_backward(m, &b, d, err);
    }
    free(logits), free(d), free(labels);
    return st;
}

int cli_grad_seq2seq(const char *weights, const char *data, const char *out, int batch) {
    attn_error err;
    attn_seq2seq *m = NULL;
    pair_file f = {0};
    double loss = 0.0;
    int rc = CLI_OK;
    attn_set_num_threads(1);
    if (attn_seq2seq_load_json(weights, &m, &err) != ATTN_OK ||
        read_pairs(data, &f, &err) != ATTN_OK || grad_pairs(m, &f, batch, &loss, &err) != ATTN_OK ||
        attn_seq2seq_save_json(m, true, false, out, &err) != ATTN_OK)
        rc = cli_fail("grad", &err);
    else
        printf("loss %.9g\n", loss);
    attn_seq2seq_free(m);
    free(f.src), free(f.src_len), free(f.tgt), free(f.tgt_len);
    return rc;
}

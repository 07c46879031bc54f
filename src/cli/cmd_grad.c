/* cmd_grad.c -- `attn grad`: the gradient of a model's mean loss over a whole TSV file with
 * respect to every parameter, written in the family's weights format (same tensor names as the
 * weights). A classifier: the mean BCE over 'label<TAB>sentence' lines. A seq2seq model: the
 * mean cross-entropy over every target token ([EOS] included) of 'source<TAB>target' pairs
 * (tools/seq2seq_grad_check.py compares it with PyTorch's autograd). Lines go in padded batches
 * of consecutive lines; each batch's d_loss is its share of the file, so the sum over batches is
 * the gradient of the file's mean. */
#include "attn_kernels.h"
#include "attn_seq2seq.h"
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Forward + backward over the whole file; *loss = mean loss. Grads are zeroed first. */
static attn_status grad_over_file(attn_model *m, const attn_dataset *d, int batch_size,
                                  double *loss, attn_error *err) {
    attn_status st = ATTN_OK;
    int *ids = NULL, *lengths = NULL;
    float *logits = NULL, *labels = NULL, *d_logits = NULL;
    size_t cap = (size_t)batch_size;
    int max_len = 1;
    for (int i = 0; i < d->n; i++)
        if (d->lengths[i] > max_len) max_len = d->lengths[i];
    ids = malloc(cap * (size_t)max_len * sizeof *ids);
    lengths = malloc(cap * sizeof *lengths);
    logits = malloc(cap * sizeof *logits);
    labels = malloc(cap * sizeof *labels);
    d_logits = malloc(cap * sizeof *d_logits);
    if (!ids || !lengths || !logits || !labels || !d_logits) {
        st = attn_errorf(err, ATTN_ERR_NOMEM, "out of memory for a batch of %d", batch_size);
        goto done;
    }
    attn_model_zero_grad(m);
    double total = 0.0;
    for (int start = 0; start < d->n; start += batch_size) {
        int nb = d->n - start < batch_size ? d->n - start : batch_size;
        int T = 1;
        for (int i = 0; i < nb; i++)
            if (d->lengths[start + i] > T) T = d->lengths[start + i];
        memset(ids, 0, (size_t)nb * T * sizeof *ids); /* ATTN_PAD_ID */
        for (int i = 0; i < nb; i++) {
            lengths[i] = d->lengths[start + i];
            memcpy(ids + (size_t)i * T, d->ids + d->offsets[start + i],
                   (size_t)lengths[i] * sizeof *ids);
            labels[i] = (float)d->labels[start + i];
        }
        attn_batch b = {.B = nb, .T = T, .ids = ids, .lengths = lengths};
        st = attn_model_forward(m, &b, logits, err);
        if (st != ATTN_OK) {
            attn_error_append(err, "in the batch starting at sentence %d", start + 1);
            goto done;
        }
        double share = (double)nb / d->n;
        total += attn_bce_forward(logits, labels, nb) * share;
        memset(d_logits, 0, (size_t)nb * sizeof *d_logits);
        attn_bce_backward(d_logits, (float)share, logits, labels, nb);
        st = attn_model_backward(m, &b, d_logits, err);
        if (st != ATTN_OK) goto done;
    }
    *loss = total;
done:
    free(ids);
    free(lengths);
    free(logits);
    free(labels);
    free(d_logits);
    return st;
}

/* ---- seq2seq ----------------------------------------------------------------------------- */

typedef struct pair_file {
    int n, cap;
    int *src, *src_len, *tgt, *tgt_len; /* [n, ATTN_MAX_WORDS], [n], [n, T_CAP], [n] */
} pair_file;

#define T_CAP (ATTN_S2S_MAX_TGT + 1)

/* One 'source<TAB>target' line into pair n of f (grown as needed). */
static attn_status add_pair(pair_file *f, attn_task task, char *line, const char *path, int line_no,
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
    /* a compose source is "<polarity> <subject>", as the task's data reads it */
    const attn_status st = cli_s2s_read_source(task, line, f->src + (size_t)f->n * ATTN_MAX_WORDS,
                                               ATTN_MAX_WORDS, &f->src_len[f->n], &e);
    if (st != ATTN_OK) return attn_errorf(err, e.status, "%s:%d: source: %s", path, line_no, e.msg);
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

static attn_status read_pairs(const char *path, attn_task task, pair_file *f, attn_error *err) {
    FILE *in = fopen(path, "r");
    if (!in) return attn_errorf(err, ATTN_ERR_IO, "%s: cannot open", path);
    char *line = NULL;
    size_t cap = 0;
    int line_no = 0;
    attn_status st = ATTN_OK;
    while (st == ATTN_OK && getline(&line, &cap, in) > 0) {
        line_no++;
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0]) st = add_pair(f, task, line, path, line_no, err);
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

/* attn grad on seq2seq weights. The pairs are read for a gradient check, not as a task's data:
 * any words of the target vocabulary ([BOS] and [EOS] too) and empty targets are taken. */
static int grad_seq2seq(const char *weights, const char *data, const char *out, int batch) {
    attn_error err;
    attn_seq2seq *m = NULL;
    pair_file f = {0};
    double loss = 0.0;
    int rc = CLI_OK;
    attn_set_num_threads(1);
    if (attn_seq2seq_load_json(weights, &m, &err) != ATTN_OK ||
        read_pairs(data, attn_seq2seq_config_of(m)->task, &f, &err) != ATTN_OK ||
        grad_pairs(m, &f, batch, &loss, &err) != ATTN_OK ||
        attn_seq2seq_save_json(m, true, false, out, &err) != ATTN_OK)
        rc = cli_fail("grad", &err);
    else
        printf("loss %.9g\n", loss);
    attn_seq2seq_free(m);
    free(f.src), free(f.src_len), free(f.tgt), free(f.tgt_len);
    return rc;
}

/* ---- the command ------------------------------------------------------------------------- */

int cmd_grad(int argc, char **argv) {
    const char *cmd = "grad", *weights = NULL, *data = NULL, *out = NULL;
    int batch = 32;
    cli_opt opts[] = {
        {"--weights", "W", CLI_OPT_STR, &weights, .help = CLI_WEIGHTS_HELP "; required"},
        {"--data", "FILE.tsv", CLI_OPT_STR, &data,
         .help = "labelled sentences, or source<TAB>target pairs; required"},
        {"--out", "G.json", CLI_OPT_STR, &out,
         .help = "where to write the gradients (written atomically); required"},
        {"--batch", "B", CLI_OPT_INT, &batch, 1, 1 << 20,
         .help = "sentences per padded batch; changes only the rounding"},
    };
    cli_spec spec = {
        cmd,
        "--weights W --data FILE.tsv --out G.json [--batch B]",
        "Computes the gradient of the model's mean loss over FILE.tsv with respect to\n"
        "every parameter of the model in W, and writes it to G.json in the weights\n"
        "format of its family (same tensor names). A classifier: the binary cross-entropy\n"
        "of 'label<TAB>sentence' lines. A seq2seq model: the cross-entropy of every target\n"
        "token ([EOS] included) of 'source<TAB>target' lines (attn data --task prints\n"
        "them; any words of the target vocabulary, [BOS] and [EOS] too, and empty\n"
        "targets). Prints 'loss <mean loss>' on stdout. Batches are consecutive lines,\n"
        "padded; each batch's loss is weighted by its share of the file (of its\n"
        "sentences, or of its target tokens).",
        NULL,
        NULL,
        opts,
        4};
    int rc = cli_parse(&spec, argc, argv, NULL, NULL);
    if (rc >= 0) return rc;
    if (!weights) return cli_usage_error(cmd, "--weights W is required");
    if (!data) return cli_usage_error(cmd, "--data FILE.tsv is required");
    if (!out) return cli_usage_error(cmd, "--out G.json is required");
    if (cli_is_seq2seq_weights(weights)) return grad_seq2seq(weights, data, out, batch);

    attn_error err = {0};
    attn_model *m = NULL;
    attn_vocab *vocab = NULL; /* the file's own, NULL: the built-in one */
    attn_dataset *d = NULL;
    rc = CLI_OK;
    attn_set_num_threads(1);
    if (attn_weights_load_json_vocab(weights, &m, &vocab, &err) != ATTN_OK) {
        rc = cli_fail(cmd, &err);
        goto done;
    }
    if ((rc = cli_read_tsv(cmd, data, vocab, &d)) >= 0) goto done;
    rc = CLI_OK;
    if (d->n < 1) {
        attn_errorf(&err, ATTN_ERR_VALUE, "%s: no sentences", data);
        rc = cli_fail(cmd, &err);
        goto done;
    }
    double loss = 0.0;
    if (grad_over_file(m, d, batch, &loss, &err) != ATTN_OK ||
        attn_weights_save_json_vocab(m, vocab, true, ATTN_WEIGHTS_TEXT, out, &err) != ATTN_OK) {
        rc = cli_fail(cmd, &err);
        goto done;
    }
    printf("loss %.9g\n", loss);
done:
    attn_dataset_free(d);
    attn_model_free(m);
    attn_vocab_free(vocab);
    return rc;
}

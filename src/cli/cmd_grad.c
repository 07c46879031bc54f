/* cmd_grad.c -- `attn grad`: the gradient of the mean BCE loss over a whole TSV file with
 * respect to every parameter, written as an attn-weights-v1 file of gradients (same tensor
 * names as the weights). Sentences are processed in padded batches of consecutive lines; each
 * batch's d_loss is its share of the file (nb / n), so the sum over batches is the gradient of
 * the file mean. */
#include "cli.h"
#include "attn_kernels.h"

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

int cmd_grad(int argc, char **argv) {
    const char *cmd = "grad", *weights = NULL, *data = NULL, *out = NULL;
    int batch = 32;
    cli_opt opts[] = {
        {"--weights", "W", CLI_OPT_STR, &weights,
         .help = "model weights (attn-weights-v1); required"},
        {"--data", "FILE.tsv", CLI_OPT_STR, &data, .help = "labelled sentences; required"},
        {"--out", "G.json", CLI_OPT_STR, &out,
         .help = "where to write the gradients (written atomically); required"},
        {"--batch", "B", CLI_OPT_INT, &batch, 1, 1 << 20,
         .help = "sentences per padded batch; changes only the rounding"},
    };
    cli_spec spec = {
        cmd,
        "--weights W --data FILE.tsv --out G.json [--batch B]",
        "Computes the gradient of the mean binary cross-entropy over all sentences of\n"
        "FILE.tsv ('label<TAB>sentence' lines) with respect to every parameter of the\n"
        "model in W, and writes it to G.json in the weights format (same tensor\n"
        "names). Prints 'loss <mean loss>' on stdout. Batches are consecutive lines,\n"
        "padded; each batch's loss is weighted by its share of the file.",
        NULL,
        NULL,
        opts,
        4};
    int rc = cli_parse(&spec, argc, argv, NULL, NULL);
    if (rc >= 0) return rc;
    if (!weights) return cli_usage_error(cmd, "--weights W is required");
    if (!data) return cli_usage_error(cmd, "--data FILE.tsv is required");
    if (!out) return cli_usage_error(cmd, "--out G.json is required");
    if (cli_is_seq2seq_weights(weights)) return cli_grad_seq2seq(weights, data, out, batch);

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

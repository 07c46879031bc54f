/* batch.c -- deterministic shuffling (project PRNG), length bucketing and padding of
 * sentences into attn_batch buffers. No I/O, no allocation per batch. */
#include "train_internal.h"

#include <stdlib.h>
#include <string.h>

void attn_batcher_free(attn_batcher *b) {
    if (!b) return;
    free(b->order);
    free(b->batch_start);
    free(b->ids);
    free(b->lengths);
    free(b->labels);
    free(b);
}

attn_status attn_batcher_create(const attn_dataset *d, int first, int n, int batch_size, int bucket,
                                attn_batcher **out, attn_error *err) {
    *out = NULL;
    if (!d || first < 0 || n < 1 || first + n > d->n || batch_size < 1 || bucket < 1)
        return attn_errorf(err, ATTN_ERR_ARG,
                           "batcher: sentences [%d, %d) of %d, batch size %d, bucket %d", first,
                           first + n, d ? d->n : 0, batch_size, bucket);
    attn_batcher *b = calloc(1, sizeof *b);
    if (!b) return attn_errorf(err, ATTN_ERR_NOMEM, "batcher: out of memory");
    b->data = d;
    b->first = first;
    b->n = n;
    b->batch_size = batch_size;
    b->bucket = bucket;
    b->n_batches = (n + batch_size - 1) / batch_size;
    b->max_len = 1;
    for (int i = first; i < first + n; i++)
        if (d->lengths[i] > b->max_len) b->max_len = d->lengths[i];
    b->order = malloc((size_t)n * sizeof(int));
    b->batch_start = malloc((size_t)b->n_batches * sizeof(int));
    b->ids = malloc((size_t)batch_size * b->max_len * sizeof(int));
    b->lengths = malloc((size_t)batch_size * sizeof(int));
    b->labels = malloc((size_t)batch_size * sizeof(float));
    if (!b->order || !b->batch_start || !b->ids || !b->lengths || !b->labels) {
        attn_batcher_free(b);
        return attn_errorf(err, ATTN_ERR_NOMEM, "batcher: out of memory for %d sentences", n);
    }
    attn_batcher_sequential(b);
    *out = b;
    return ATTN_OK;
}

void attn_batcher_sequential(attn_batcher *b) {
    for (int i = 0; i < b->n; i++) b->order[i] = b->first + i;
    for (int i = 0; i < b->n_batches; i++) b->batch_start[i] = i * b->batch_size;
}

/* Stable insertion sort of idx[n] by sentence length (chunks are a few hundred long and
 * already random, so this is cheap; stability keeps the result a function of the seed). */
static void sort_by_length(int *idx, int n, const int *lengths) {
    for (int i = 1; i < n; i++) {
        int x = idx[i], len = lengths[x], j = i - 1;
        while (j >= 0 && lengths[idx[j]] > len) {
            idx[j + 1] = idx[j];
            j--;
        }
        idx[j + 1] = x;
    }
}

void attn_batcher_shuffle(attn_batcher *b, attn_rng *rng) {
    for (int i = 0; i < b->n; i++) b->order[i] = b->first + i;
    attn_rng_shuffle(rng, b->order, b->n);
    if (b->bucket > 1) {
        int chunk = b->bucket * b->batch_size;
        for (int s = 0; s < b->n; s += chunk)
            sort_by_length(b->order + s, b->n - s < chunk ? b->n - s : chunk, b->data->lengths);
    }
    for (int i = 0; i < b->n_batches; i++) b->batch_start[i] = i * b->batch_size;
    attn_rng_shuffle(rng, b->batch_start, b->n_batches);
}

const float *attn_batcher_fill(attn_batcher *b, int i, attn_batch *out) {
    attn_batcher_fill_into(b, i, b->ids, b->lengths, b->labels, out);
    return b->labels;
}

void attn_batcher_fill_into(const attn_batcher *b, int i, int *ids, int *lengths, float *labels,
                            attn_batch *out) {
    const attn_dataset *d = b->data;
    int start = b->batch_start[i];
    int B = b->n - start < b->batch_size ? b->n - start : b->batch_size;
    int T = 1;
    for (int r = 0; r < B; r++) {
        int len = d->lengths[b->order[start + r]];
        if (len > T) T = len;
    }
    for (int r = 0; r < B; r++) {
        int s = b->order[start + r];
        int len = d->lengths[s];
        int *row = ids + (size_t)r * T;
        memcpy(row, d->ids + d->offsets[s], (size_t)len * sizeof(int));
        for (int t = len; t < T; t++) row[t] = ATTN_PAD_ID;
        lengths[r] = len;
        labels[r] = d->labels[s] ? 1.0f : 0.0f;
    }
    out->B = B;
    out->T = T;
    out->ids = ids;
    out->lengths = lengths;
}

/* ranked_step.c -- a training step's micro-batches over the ranks of one run (attn_ranks,
 * docs/mpi.md), for both families: rank r of N computes micro-batches [K r / N, K (r + 1) / N)
 * in waves on its pool, each into a slot of one buffer (its error, its results besides the
 * gradient, its gradient); one allgather gives every rank every slot, and every rank adds the K
 * gradients in micro-batch order with parallel.c's attn_grads_sum_pool -- the same float
 * additions in the same order as one process with any pool, so the same bytes for every N. */
#include "train_internal.h"

#include <stdlib.h>
#include <string.h>

static size_t round64(size_t n) {
    return (n + 63) / 64 * 64;
}

/* This rank's micro-batches of K: [*lo, *hi). */
static void share(int rank, int size, int K, int *lo, int *hi) {
    *lo = (int)((long)K * rank / size);
    *hi = (int)((long)K * (rank + 1) / size);
}

/* Computes this rank's micro-batches into their slots. */
static void compute_share(attn_pool *pool, const attn_ranked_step *s, char *buf, size_t head,
                          size_t slot, int lo, int hi) {
    for (int k0 = lo; k0 < hi; k0 += s->W) {
        const int n_wave = hi - k0 < s->W ? hi - k0 : s->W;
        *s->k0 = k0;
        attn_pool_run(pool, n_wave, s->task, s->ctx);
        for (int j = 0; j < n_wave; j++) {
            char *at = buf + (size_t)(k0 + j) * slot;
            memcpy(at, &s->errs[j], sizeof(attn_error));
            if (s->errs[j].status == ATTN_OK) {
                s->save(s->ctx, k0 + j, at + sizeof(attn_error));
                memcpy(at + head, s->grads(s->ctx, j), s->n_params * sizeof(float));
            }
        }
    }
}

/* Every rank's slots to every rank. */
static attn_status exchange(const attn_ranks *rk, char *buf, size_t slot, int K, attn_error *err) {
    size_t *counts = malloc(2 * (size_t)rk->size * sizeof *counts);
    if (!counts) return attn_errorf(err, ATTN_ERR_NOMEM, "training step: out of memory");
    size_t *displs = counts + rk->size;
    for (int q = 0; q < rk->size; q++) {
        int lo, hi;
        share(q, rk->size, K, &lo, &hi);
        counts[q] = (size_t)(hi - lo) * slot;
        displs[q] = (size_t)lo * slot;
    }
    attn_status st = rk->allgather(rk->ctx, buf, counts, displs, err);
    free(counts);
    return st;
}

/* The first failed micro-batch's error, else the results and the ordered gradient sum. */
static attn_status combine(attn_pool *pool, const attn_ranked_step *s, const char *buf, size_t head,
                           size_t slot, bool *finite, attn_error *err) {
    for (int k = 0; k < s->K; k++) {
        const attn_error *e = (const attn_error *)(const void *)(buf + (size_t)k * slot);
        if (e->status != ATTN_OK) {
            if (err) *err = *e;
            return e->status;
        }
    }
    for (int k = 0; k < s->K; k++) s->load(s->ctx, k, buf + (size_t)k * slot + sizeof(attn_error));
    const float *g[ATTN_MAX_THREADS];
    bool fin = true;
    for (int k0 = 0; k0 < s->K; k0 += ATTN_MAX_THREADS) {
        const int n = s->K - k0 < ATTN_MAX_THREADS ? s->K - k0 : ATTN_MAX_THREADS;
        for (int j = 0; j < n; j++)
            g[j] = (const float *)(const void *)(buf + (size_t)(k0 + j) * slot + head);
        fin = attn_grads_sum_pool(pool, s->sum, s->n_params, g, k0, n, s->K);
    }
    *finite = fin;
    return ATTN_OK;
}

attn_status attn_ranked_step_run(attn_pool *pool, const attn_ranks *rk, const attn_ranked_step *s,
                                 bool *finite, attn_error *err) {
    const size_t head = round64(sizeof(attn_error) + s->extra);
    const size_t slot = head + round64(s->n_params * sizeof(float));
    char *buf = aligned_alloc(64, (size_t)s->K * slot);
    if (!buf) return attn_errorf(err, ATTN_ERR_NOMEM, "training step: out of memory");
    int lo, hi;
    share(rk->rank, rk->size, s->K, &lo, &hi);
    compute_share(pool, s, buf, head, slot, lo, hi);
    attn_status st = exchange(rk, buf, slot, s->K, err);
    if (st == ATTN_OK) st = combine(pool, s, buf, head, slot, finite, err);
    free(buf);
    return st;
}

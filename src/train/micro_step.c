/* micro_step.c -- a training step's micro-batches, for both families (a family hands over its
 * micro-batch task, its replicas' gradients and its results; parallel.c and seq2seq_parallel.c
 * fill an attn_micro_step): on one process, waves of micro-batches on the pool's replicas, each
 * wave's gradients added to the sum in micro-batch order (attn_grads_sum_pool) -- the same bytes
 * for every pool; over the ranks of one run (attn_ranks, docs/mpi.md) the same sum. Rank r of N
 * computes micro-batches [K r / N, K (r + 1) / N) in waves on its pool and owns parameters [a_r,
 * b_r) (attn_rank_range). Round j of the exchange sends each rank's j-th micro-batch gradient in
 * pieces, piece q to rank q (alltoall), so the owner of a range receives every micro-batch's piece
 * of it, in micro-batch order; it adds them with parallel.c's attn_grads_sum_pool -- elementwise,
 * so the same float additions in the same order as one process with any pool -- and Adam runs on
 * the range (attn_adam_step_pool), after which an allgather gives every rank the whole updated
 * parameters. A micro-batch's error and its other results (logits, a loss sum) go to every rank in
 * one small allgather. Per rank and step that is 4P (K - K_r) / N bytes in for the gradients and 4P
 * (N - 1) / N for the parameters, however large K, where every rank receiving every gradient took
 * 4P (K - K_r). */
#include "train_internal.h"

#include <stdlib.h>
#include <string.h>

static size_t round64(size_t n) {
    return (n + 63) / 64 * 64;
}

/* Micro-batches [*lo, *hi) of K are rank's. */
static void share(int rank, int size, int K, int *lo, int *hi) {
    *lo = (int)((long)K * rank / size);
    *hi = (int)((long)K * (rank + 1) / size);
}

void attn_rank_range(int rank, int size, size_t n, size_t *a, size_t *b) {
    *a = rank == 0 ? 0 : n * (size_t)rank / (size_t)size / 16 * 16; /* 64-byte starts */
    *b = rank + 1 == size ? n : n * (size_t)(rank + 1) / (size_t)size / 16 * 16;
}

/* What one step holds besides the replicas' gradients. */
typedef struct step_bufs {
    size_t head;   /* bytes per micro-batch of heads: its error, then its results */
    char *heads;   /* [K * head] */
    float *recv;   /* [K * len] every micro-batch's gradient over this rank's range */
    size_t a, len; /* this rank's range */
    size_t *c;     /* [4 N]: send counts, displacements; receive counts, displacements */
    int *flags;    /* [N] whether each rank's range of the sum is finite */
} step_bufs;

static attn_status bufs_alloc(const attn_ranks *rk, const attn_micro_step *s, step_bufs *b,
                              attn_error *err) {
    size_t hi;
    attn_rank_range(rk->rank, rk->size, s->n_params, &b->a, &hi);
    b->len = hi - b->a;
    b->head = round64(sizeof(attn_error) + s->extra);
    b->heads = calloc((size_t)s->K, b->head);
    b->recv = aligned_alloc(64, round64((size_t)s->K * b->len * sizeof(float)) + 64);
    b->c = malloc(4 * (size_t)rk->size * sizeof *b->c);
    b->flags = calloc((size_t)rk->size, sizeof *b->flags);
    if (b->heads && b->recv && b->c && b->flags) return ATTN_OK;
    return attn_errorf(err, ATTN_ERR_NOMEM, "training step: out of memory");
}

static void bufs_free(step_bufs *b) {
    free(b->heads);
    free(b->recv);
    free(b->c);
    free(b->flags);
}

/* Round j: this rank's j-th micro-batch's gradient g (NULL: it has none), piece q to rank q;
 * rank q's j-th micro-batch's piece of this rank's range into its micro-batch's row of recv. */
static attn_status round_j(const attn_ranks *rk, const attn_micro_step *s, step_bufs *b, int j,
                           const float *g, attn_error *err) {
    const int N = rk->size;
    size_t *sc = b->c, *sd = sc + N, *rc = sd + N, *rd = rc + N;
    for (int q = 0; q < N; q++) {
        size_t qa, qb;
        int lo, hi;
        attn_rank_range(q, N, s->n_params, &qa, &qb);
        share(q, N, s->K, &lo, &hi);
        sc[q] = g ? qb - qa : 0;
        sd[q] = qa;
        rc[q] = j < hi - lo ? b->len : 0;
        rd[q] = j < hi - lo ? (size_t)(lo + j) * b->len : 0;
    }
    /* no gradient: nothing is sent, from a buffer that is not recv (MPI refuses aliasing) */
    return rk->alltoall(rk->ctx, g ? g : s->sum, sc, sd, b->recv, rc, rd, err);
}

/* This rank's waves, each followed by its rounds of the exchange (every rank runs the same
 * number of rounds: the largest share's). */
static attn_status compute_and_send(attn_pool *pool, const attn_ranks *rk, const attn_micro_step *s,
                                    step_bufs *b, attn_error *err) {
    int lo, hi, max_lo, max_hi;
    share(rk->rank, rk->size, s->K, &lo, &hi);
    share(rk->size - 1, rk->size, s->K, &max_lo, &max_hi); /* the last share is the largest */
    const int rounds = max_hi - max_lo;
    for (int j0 = 0; j0 < rounds; j0 += s->W) {
        const int n_wave = hi - lo - j0 < s->W ? hi - lo - j0 : s->W;
        if (n_wave > 0) {
            *s->k0 = lo + j0;
            attn_pool_run(pool, n_wave, s->task, s->ctx);
        }
        for (int j = 0; j < n_wave; j++) {
            char *at = b->heads + (size_t)(lo + j0 + j) * b->head;
            memcpy(at, &s->errs[j], sizeof(attn_error));
            if (s->errs[j].status == ATTN_OK) s->save(s->ctx, lo + j0 + j, at + sizeof(attn_error));
        }
        for (int j = j0; j < j0 + s->W && j < rounds; j++) {
            const float *g = j - j0 < n_wave ? s->grads(s->ctx, j - j0) : NULL;
            attn_status st = round_j(rk, s, b, j, g, err);
            if (st != ATTN_OK) return st;
        }
    }
    return ATTN_OK;
}

/* Every micro-batch's error and results to every rank; the first error in micro-batch order. */
static attn_status share_heads(const attn_ranks *rk, const attn_micro_step *s, step_bufs *b,
                               attn_error *err) {
    size_t *n = b->c, *at = n + rk->size;
    for (int q = 0; q < rk->size; q++) {
        int lo, hi;
        share(q, rk->size, s->K, &lo, &hi);
        n[q] = (size_t)(hi - lo);
        at[q] = (size_t)lo;
    }
    attn_status st = rk->allgather(rk->ctx, b->heads, b->head, n, at, err);
    if (st != ATTN_OK) return st;
    for (int k = 0; k < s->K; k++) {
        const attn_error *e = (const attn_error *)(const void *)(b->heads + (size_t)k * b->head);
        if (e->status != ATTN_OK) {
            if (err) *err = *e;
            return e->status;
        }
    }
    for (int k = 0; k < s->K; k++)
        s->load(s->ctx, k, b->heads + (size_t)k * b->head + sizeof(attn_error));
    return ATTN_OK;
}

attn_status attn_ranks_share_range(const attn_ranks *rk, float *x, size_t n, attn_error *err) {
    size_t *c = malloc(2 * (size_t)rk->size * sizeof *c);
    if (!c) return attn_errorf(err, ATTN_ERR_NOMEM, "training step: out of memory");
    for (int q = 0; q < rk->size; q++) {
        size_t a, b;
        attn_rank_range(q, rk->size, n, &a, &b);
        c[q] = b - a;
        c[rk->size + q] = a;
    }
    attn_status st = rk->allgather(rk->ctx, x, sizeof(float), c, c + rk->size, err);
    free(c);
    return st;
}

/* The ordered sum over this rank's range, and whether every rank's range is finite; if not,
 * the whole sum on every rank, so that each names the same first non-finite tensor. */
static attn_status sum_range(attn_pool *pool, const attn_ranks *rk, const attn_micro_step *s,
                             step_bufs *b, bool *finite, attn_error *err) {
    float *g[ATTN_MAX_THREADS];
    bool fin = true;
    for (int k0 = 0; k0 < s->K && b->len > 0; k0 += ATTN_MAX_THREADS) {
        const int n = s->K - k0 < ATTN_MAX_THREADS ? s->K - k0 : ATTN_MAX_THREADS;
        for (int j = 0; j < n; j++) g[j] = b->recv + (size_t)(k0 + j) * b->len;
        /* the received pieces are not zeroed: freed with the step; the replicas are, by their
         * next task (s->clean stays unset) */
        fin = attn_grads_sum_pool(pool, s->sum + b->a, b->len, g, k0, n, s->K, false);
    }
    size_t *n = b->c, *at = n + rk->size;
    int *flags = b->flags;
    for (int q = 0; q < rk->size; q++) n[q] = 1, at[q] = (size_t)q;
    flags[rk->rank] = fin;
    attn_status st = rk->allgather(rk->ctx, flags, sizeof(int), n, at, err);
    for (int q = 0; q < rk->size && st == ATTN_OK; q++) fin &= flags[q] != 0;
    if (st == ATTN_OK && !fin) st = attn_ranks_share_range(rk, s->sum, s->n_params, err);
    *finite = fin;
    return st;
}

/* One process: waves of micro-batches, each wave's gradients added in micro-batch order. */
static attn_status run_local(attn_pool *pool, const attn_micro_step *s, bool *finite,
                             attn_error *err) {
    float *g[ATTN_MAX_THREADS];
    bool fin = true;
    for (int k0 = 0; k0 < s->K; k0 += s->W) {
        const int n_wave = s->K - k0 < s->W ? s->K - k0 : s->W;
        *s->k0 = k0;
        attn_pool_run(pool, n_wave, s->task, s->ctx);
        for (int j = 0; j < n_wave; j++) /* the first failure in micro-batch order */
            if (s->errs[j].status != ATTN_OK) {
                if (err) *err = s->errs[j];
                return s->errs[j].status;
            }
        for (int j = 0; j < n_wave; j++) g[j] = s->grads(s->ctx, j);
        /* the replicas' gradients are read once, by the sum: zeroed there, not by the next task */
        fin = attn_grads_sum_pool(pool, s->sum, s->n_params, g, k0, n_wave, s->K, true);
        for (int j = 0; j < n_wave; j++)
            if (g[j] != s->sum) s->clean[j] = true;
    }
    *finite = fin;
    return ATTN_OK;
}

attn_status attn_micro_step_run(attn_pool *pool, const attn_micro_step *s, bool *finite,
                                attn_error *err) {
    const attn_ranks *rk = attn_pool_ranks(pool);
    if (!rk) return run_local(pool, s, finite, err);
    step_bufs b = {0};
    attn_status st = bufs_alloc(rk, s, &b, err);
    if (st == ATTN_OK) st = compute_and_send(pool, rk, s, &b, err);
    if (st == ATTN_OK) st = share_heads(rk, s, &b, err);
    if (st == ATTN_OK) st = sum_range(pool, rk, s, &b, finite, err);
    bufs_free(&b);
    return st;
}

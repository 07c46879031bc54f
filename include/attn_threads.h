/* attn_threads.h -- one run on every core, with the same bytes for every thread count.
 *
 *   attn_pool *pool = NULL;
 *   attn_pool_create(attn_threads_default(), &pool, &err);   // once per run
 *   attn_trainer_set_pool(trainer, pool);                      // train on every core
 *   attn_evaluate_pool(m, test, 0, test->n, 256, pool, &acc, &err);
 *   attn_pool_free(pool);
 *
 * The rule (docs/numerics.md, "Threads"): work is cut into pieces whose boundaries never depend
 * on the thread count -- a training batch into micro-batches of ATTN_MICRO_BATCH sentences, an
 * evaluation into its batches, integrated gradients into ATTN_EXPLAIN_IG_CHUNK points -- each
 * piece is computed by the same single-threaded code (one BLAS thread per product) whichever
 * thread runs it, and pieces are combined in piece order. Threads decide who computes a piece,
 * never what it holds, so every output is byte-identical for every N.
 */
#ifndef ATTN_THREADS_H
#define ATTN_THREADS_H

#include "attn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the pool (src/util/pool.c) ------------------------------------------------------------- */

/* Sentences per training micro-batch: a batch of B sentences is cut into ceil(B / 16) consecutive
 * micro-batches (the last may be smaller), whatever the thread count. 16, not 8 or 4: with 8 and
 * with 4 one LSTM seed of the write-up's table fell below its 99.5 % threshold
 * (docs/numerics.md, "Threads"). */
#define ATTN_MICRO_BATCH 16
/* Most threads a pool takes. */
#define ATTN_MAX_THREADS 256

typedef struct attn_pool attn_pool;

/* fn(ctx, task, worker): task in [0, n_tasks), worker in [0, attn_pool_threads) names the thread
 * (callers keep per-worker scratch, e.g. a model replica); tasks must not depend on each other. */
typedef void (*attn_pool_fn)(void *ctx, int task, int worker);

/* n_threads in 1..ATTN_MAX_THREADS; the caller's thread is worker 0, n_threads - 1 more threads
 * are started here and live until attn_pool_free. */
attn_status attn_pool_create(int n_threads, attn_pool **out, attn_error *err);
void attn_pool_free(attn_pool *p);
/* 1 for NULL (no pool: everything runs on the caller's thread). */
int attn_pool_threads(const attn_pool *p);
/* Runs fn for every task and returns when all are done. Not re-entrant: fn must not call
 * attn_pool_run on the same pool. p NULL runs the tasks in order on the caller's thread. */
void attn_pool_run(attn_pool *p, int n_tasks, attn_pool_fn fn, void *ctx);
/* ---- ranks: one training run over processes (docs/mpi.md) ---------------------------------- *
 * Ranks, like threads, decide who computes a micro-batch, never what it holds: rank r of N
 * computes a fixed share of each training step's micro-batches (on its pool's threads) and owns
 * a range of the parameters. Each micro-batch's gradient travels in pieces, each piece to the
 * rank owning its range (alltoall); the owner adds its range of the K gradients in micro-batch
 * order and runs Adam on its range, and an allgather gives every rank the updated parameters:
 * the float operations of one process, in its order, so its bytes for every N. The library only
 * calls the caller's collectives; the caller (src/cli/ranks.c) implements them with MPI. */
typedef struct attn_ranks {
    int rank, size; /* this process of `size` (>= 1) */
    /* Collective, called by every rank with the same arguments: block q of buf (counts[q] units
     * of `unit` bytes, starting displs[q] units into buf) is rank q's; on return every block
     * holds its rank's bytes. */
    attn_status (*allgather)(void *ctx, void *buf, size_t unit, const size_t *counts,
                             const size_t *displs, attn_error *err);
    /* Collective: this rank sends scounts[q] floats from send + sdispls[q] to rank q and receives
     * rcounts[q] floats from rank q into recv + rdispls[q] (counts of 0: nothing). */
    attn_status (*alltoall)(void *ctx, const float *send, const size_t *scounts,
                            const size_t *sdispls, float *recv, const size_t *rcounts,
                            const size_t *rdispls, attn_error *err);
    void *ctx;
} attn_ranks;
/* Training steps on p run over the ranks r (borrowed; NULL: this process alone). */
void attn_pool_set_ranks(attn_pool *p, const attn_ranks *r);
/* NULL for a NULL pool, a pool without ranks, or ranks of size 1. */
const attn_ranks *attn_pool_ranks(const attn_pool *p);

/* ---- measuring how much of a run the threads can take (bench/threads) ----------------------- */

/* CPU times (CLOCK_THREAD_CPUTIME_ID, seconds) since attn_pool_trace_start. */
typedef struct attn_pool_trace {
    long runs, tasks; /* attn_pool_run calls with at least one task; tasks run */
    double caller_s;  /* the thread that called attn_pool_trace_start */
    double serial_s;  /* of which outside attn_pool_run: work no other thread can share */
    double task_s;    /* inside tasks, every thread */
    double span_s;    /* measuring pools only: the runs' makespans on their simulated workers */
} attn_pool_trace;

/* A pool for measuring: callers see n_threads workers (attn_pool_threads) and get the same tasks
 * as from a real pool of that size, but every task runs on the caller's thread, one after the
 * other, named as the worker that would be free first given the CPU time each earlier task took
 * (the real pool's order: the next task to the first free thread). serial_s + span_s is then
 * what n_threads threads would take at best (no waking, no contention), while the run's bytes
 * are those of any pool. */
attn_status attn_pool_create_measuring(int n_threads, attn_pool **out, attn_error *err);
/* Resets the trace and starts timing (p not running; p NULL: nothing). */
void attn_pool_trace_start(attn_pool *p);
/* The trace so far; call from the thread that called attn_pool_trace_start. */
attn_pool_trace attn_pool_trace_read(attn_pool *p);

/* The online cores (at least 1). */
int attn_cores(void);
/* The thread count a run takes when none is given: ATTN_THREADS if set to 1..ATTN_MAX_THREADS,
 * else the online cores (capped at ATTN_MAX_THREADS). */
int attn_threads_default(void);

/* ---- model replicas (src/models/model.c) ------------------------------------------------------
 */

/* A model that reads m's parameters (borrowed: m must outlive it; m's parameter values may
 * change between calls) and owns its own gradients and activations, so that replicas of one
 * model can run forward/backward at the same time. Its forward and backward are m's to the bit. */
attn_status attn_model_replica(attn_model *m, attn_model **out, attn_error *err);
/* Allocates m's gradients (zeroed) if a backward has not yet done so. */
attn_status attn_model_grads_alloc(attn_model *m, attn_error *err);
/* Moving a gradient buffer (n_params floats, from malloc) between models of one configuration,
 * so that models that only now and then run a backward (attn serve's workers explaining one
 * model) can share one: take detaches m's buffer and returns it (NULL if it has none;
 * attn_model_grads(m) is NULL after it, and the next backward allocates a fresh one), give
 * frees m's own and makes `grads` (NULL: none) m's, which frees it with m. Its values are
 * whatever the previous holder's backwards left: a backward adds to them. */
float *attn_model_grads_take(attn_model *m);
void attn_model_grads_give(attn_model *m, float *grads);

/* ---- training and evaluation (src/train/) -----------------------------------------------------
 */

/* Trains on pool's threads from the next step on (NULL: the caller's thread only). The pool is
 * borrowed. The result is the same for every pool, including NULL. */
attn_status attn_trainer_set_pool(attn_trainer *t, attn_pool *pool, attn_error *err);
/* attn_evaluate with the batches spread over pool's threads (the same accuracy for any pool). */
attn_status attn_evaluate_pool(attn_model *m, const attn_dataset *d, int first, int n,
                               int batch_size, attn_pool *pool, double *accuracy, attn_error *err);

/* ---- explaining (src/explain/explain.c) ------------------------------------------------------ */

/* Integrated-gradient points per batched forward/backward: the N points are cut into chunks of
 * ATTN_EXPLAIN_IG_CHUNK consecutive points whatever the thread count. */
#define ATTN_EXPLAIN_IG_CHUNK 16
/* attn_explain with the work spread over pool's threads (a replica of m per thread): the
 * sentence's forward beside the baseline's, then the integrated-gradient chunks beside the
 * sentence's backward, saliency and prefixes; the explanation is the same for every pool. */
attn_status attn_explain_pool(attn_model *m, const int *ids, int n_words,
                              const attn_explain_opts *opts, attn_pool *pool,
                              attn_explanation **out, attn_error *err);
/* The same for many sentences: an explainer keeps its replicas (and their buffers, warm) from
 * one sentence to the next; m and pool are borrowed and must outlive it.
 *   attn_explainer *x; attn_explainer_create(m, pool, &x, &err);
 *   for (...) attn_explainer_run(x, ids, n, &opts, &e, &err);   // = attn_explain_pool's e
 *   attn_explainer_free(x); */
typedef struct attn_explainer attn_explainer;
attn_status attn_explainer_create(attn_model *m, attn_pool *pool, attn_explainer **out,
                                  attn_error *err);
attn_status attn_explainer_run(attn_explainer *x, const int *ids, int n_words,
                               const attn_explain_opts *opts, attn_explanation **out,
                               attn_error *err);
void attn_explainer_free(attn_explainer *x);

#ifdef __cplusplus
}
#endif

#endif /* ATTN_THREADS_H */

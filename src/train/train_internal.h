/* train_internal.h -- the batcher (batch.c) and struct attn_trainer, shared by train.c,
 * checkpoint.c and the tests; the pieces of a step on a pool (parallel.c), which the seq2seq
 * training step (seq2seq_parallel.c) shares. */
#ifndef ATTN_TRAIN_INTERNAL_H
#define ATTN_TRAIN_INTERNAL_H

#include "attn.h"
#include "attn_kernels.h"
#include "attn_seq2seq.h"
#include "attn_threads.h"

/* Cuts sentences [first, first + n) of a dataset into padded batches. Owns its buffers,
 * which are sized once for the longest sentence (no allocation per batch). */
typedef struct attn_batcher {
    const attn_dataset *data; /* borrowed */
    int first, n;             /* the sentences used */
    int batch_size;           /* B (the last batch of an epoch may be smaller) */
    int bucket;               /* chunks of bucket * batch_size are sorted by length */
    int max_len;              /* longest sentence in the range: T of the buffers */
    int n_batches;            /* ceil(n / batch_size) */
    int *order;               /* [n] dataset indices in this epoch's order */
    int *batch_start;         /* [n_batches] start of each batch in `order`, in run order */
    int *ids;                 /* [batch_size, max_len] padded ids of the current batch */
    int *lengths;             /* [batch_size] */
    float *labels;            /* [batch_size] 0.0 / 1.0 */
} attn_batcher;

attn_status attn_batcher_create(const attn_dataset *d, int first, int n, int batch_size, int bucket,
                                attn_batcher **out, attn_error *err);
void attn_batcher_free(attn_batcher *b);
/* Dataset order, batches in order (evaluation). */
void attn_batcher_sequential(attn_batcher *b);
/* One epoch's order: Fisher-Yates over the sentences, stable sort of each chunk of
 * bucket * batch_size by length, batches of consecutive sentences, Fisher-Yates over the
 * batches. Draws only from *rng. */
void attn_batcher_shuffle(attn_batcher *b, attn_rng *rng);
/* Fills the buffers with batch i (0 <= i < n_batches) and points *out at them; T is the
 * batch's longest sentence. Returns the batch's labels ([out->B]). */
const float *attn_batcher_fill(attn_batcher *b, int i, attn_batch *out);
/* The same into the caller's buffers (ids [batch_size * max_len], lengths and labels
 * [batch_size]), leaving b untouched: several threads can fill batches of one batcher. */
void attn_batcher_fill_into(const attn_batcher *b, int i, int *ids, int *lengths, float *labels,
                            attn_batch *out);

/* ---- parallel.c: micro-batches and batches on a pool (attn_threads.h) ---------------------- */

/* Replicas of one model for the tasks of a pool, grown on demand: one struct per family
 * (attn_replicas of a classifier here, attn_s2s_replicas of a seq2seq model below), declared by
 * ATTN_REPLICAS (with its _worker) and given its _reserve and _free by ATTN_REPLICAS_FUNCTIONS,
 * so that the two are written once. */
#define ATTN_REPLICAS(name, model_type)                                                            \
    typedef struct name {                                                                          \
        model_type **m;   /* [n] replicas of one model */                                          \
        attn_error *errs; /* [n] one error per concurrent task */                                  \
        bool *clean;      /* [n] the replica's gradients are all +0 (attn_micro_step's clean) */   \
        int n;                                                                                     \
        /* the model's own gradients (micro-batch 0's, the sum) are all +0: Adam zeroed them as    \
         * it read them; false: micro-batch 0 zeroes them (a seq2seq step's, seq2seq_train.c) */   \
        bool model_clean;                                                                          \
    } name;                                                                                        \
    /* The model of worker `worker` of an evaluation: worker 0 (the caller's thread) runs on m     \
     * itself, worker w > 0 on replica w - 1 (reserved for the pool's threads - 1). */             \
    static inline model_type *name##_worker(const name *r, model_type *m, int worker) {            \
        return worker ? r->m[worker - 1] : m;                                                      \
    }                                                                                              \
    attn_status name##_reserve(name *r, model_type *m, int n, attn_error *err);                    \
    void name##_free(name *r)

/* The first error in task order of a pool's run (an evaluation's): each of W workers keeps the
 * error of the lowest-numbered task it saw fail, whichever thread ran which task. */
typedef struct attn_task_errors {
    struct attn_task_error {
        attn_error e;
        int task;
        bool failed;
    } * w; /* [W] */
    int W;
} attn_task_errors;
/* W workers, none failed (what: the out-of-memory message's start). */
attn_status attn_task_errors_make(attn_task_errors *t, int W, const char *what, attn_error *err);
void attn_task_errors_free(attn_task_errors *t);
/* Task `task` failed on `worker` with st (e its error). */
void attn_task_errors_fail(attn_task_errors *t, int worker, int task, attn_status st,
                           const attn_error *e);
/* After the run: the lowest-numbered failed task's status (its error into err), or ATTN_OK. */
attn_status attn_task_errors_status(const attn_task_errors *t, attn_error *err);

/* errs and clean of a replicas struct grown to n entries (realloc; what: the message's start). */
attn_status attn_replica_slots_grow(attn_error **errs, bool **clean, int n, const char *what,
                                    attn_error *err);
/* The _reserve (replicas up to n, each made by replica_fn; the new ones not clean) and _free
 * (each by free_fn) of ATTN_REPLICAS(name, model_type), in the family's own file. */
#define ATTN_REPLICAS_FUNCTIONS(name, model_type, replica_fn, free_fn, what)                       \
    void name##_free(name *r) {                                                                    \
        for (int i = 0; i < r->n; i++) free_fn(r->m[i]);                                           \
        free(r->m);                                                                                \
        free(r->errs);                                                                             \
        free(r->clean);                                                                            \
        memset(r, 0, sizeof *r);                                                                   \
    }                                                                                              \
    attn_status name##_reserve(name *r, model_type *m, int n, attn_error *err) {                   \
        if (n <= r->n) return ATTN_OK;                                                             \
        model_type **ms = realloc(r->m, (size_t)n * sizeof *ms);                                   \
        if (!ms) return attn_errorf(err, ATTN_ERR_NOMEM, "%s: out of memory", what);               \
        r->m = ms;                                                                                 \
        attn_status st = attn_replica_slots_grow(&r->errs, &r->clean, n, what, err);               \
        while (st == ATTN_OK && r->n < n)                                                          \
            if ((st = replica_fn(m, &r->m[r->n], err)) == ATTN_OK)                                 \
                r->clean[r->n++] = false; /* its first micro-batch zeroes them */                  \
        return st;                                                                                 \
    }

ATTN_REPLICAS(attn_replicas, attn_model);
/* One training step's forward and backward of batch b (labels [b->B]): micro-batches of
 * ATTN_MICRO_BATCH sentences on the replicas, their gradients summed in micro-batch order into
 * the model's gradients (by parameter ranges over the threads). Fills logits and d_logits
 * [b->B] (d loss / d logit of the batch mean) and, unless NULL, *finite: no gradient is NaN/Inf. */
attn_status attn_train_forward_backward(attn_model *m, attn_replicas *r, attn_pool *pool,
                                        const attn_batch *b, const float *labels, float *logits,
                                        float *d_logits, bool *finite, attn_error *err);
/* attn_adam_step with the parameters cut into ranges over pool's threads (elementwise: the same
 * floats for every pool). Under ranks (attn_pool_ranks) on this rank's range of grads only (see
 * attn_micro_step_run), then every rank's range of params to every rank. */
attn_status attn_adam_step_pool(attn_adam *opt, float *params, const float *grads, attn_pool *pool,
                                attn_error *err);
/* attn_adam_step_pool, and on one process grads[] = +0 afterwards, written as Adam reads them
 * (attn_adam_update_zero_grads); *zeroed: whether it did (not under ranks). */
attn_status attn_adam_step_pool_zero_grads(attn_adam *opt, float *params, float *grads,
                                           attn_pool *pool, bool *zeroed, attn_error *err);
/* Under ranks, Adam's moments of every rank's range to every rank (attn_adam_step_pool leaves
 * each rank's own range current only), before the state is read; otherwise nothing. */
attn_status attn_adam_share_pool(attn_adam *opt, attn_pool *pool, attn_error *err);
/* adam.c: counts a step and returns its scalars (attn_adam_step = this + attn_adam_update). */
attn_adam_scalars attn_adam_next(attn_adam *opt);
/* [lo, hi) of piece `task` of n_tasks over n elements: equal pieces, boundaries on multiples of
 * 16 floats (a 64-byte line when the buffer is aligned). Elementwise work split anywhere gives the
 * same floats, so the pieces may follow the thread count. */
void attn_piece_range(int task, int n_tasks, size_t n, size_t *lo, size_t *hi);
/* sum[n] += g[n]; returns whether every new sum is finite (exponent bits not all ones: the
 * integer test vectorizes with the add, so the sum and the check are one pass). With zero_g,
 * g[n] = +0 after it is read, in the same pass (the replica's next micro-batch starts there). */
bool attn_add_finite(float *restrict sum, float *restrict g, size_t n, bool zero_g);
/* One wave of a step's gradient sum: g[j] [n] is micro-batch k0 + j's gradient (j < n_wave, of K
 * micro-batches in all); sum = g[0] (k0 == 0) then sum += g[j] in j order, elementwise, by
 * parameter ranges over pool's threads. With zero_g, every g[j] that is not sum itself is +0
 * afterwards, written in the pass that reads it (instead of a separate zeroing sweep before its
 * next micro-batch). After the last wave (k0 + n_wave == K) returns whether every element of the
 * sum is finite; before it, true. */
bool attn_grads_sum_pool(attn_pool *pool, float *sum, size_t n, float *const *g, int k0, int n_wave,
                         int K, bool zero_g);
/* train.c: how many of B logits fall on their label's side of 0 (labels 0.0 / 1.0). */
int attn_count_correct(const float *logits, const float *labels, int B);
/* Correct predictions over every batch of bt (in its current order), batches spread over pool. */
attn_status attn_eval_batches_pool(attn_model *m, attn_replicas *r, attn_pool *pool,
                                   const attn_batcher *bt, long *correct, attn_error *err);

/* ---- micro_step.c: a step's micro-batches, on one process or over ranks (attn_ranks) ------ */

/* What a family's training step hands to attn_micro_step_run (save and load: only over ranks). */
typedef struct attn_micro_step {
    int K;             /* the step's micro-batches */
    size_t n_params;   /* gradient floats per micro-batch */
    size_t extra;      /* bytes of a micro-batch's other results (logits, a loss sum) */
    attn_pool_fn task; /* micro-batch *k0 + task on replica `task` (fills errs[task]) */
    void *ctx;         /* the task's */
    int *k0;           /* in ctx: the wave's first micro-batch */
    int W;             /* replicas: the largest wave */
    attn_error *errs;  /* [W] the replicas' errors */
    /* [W] replica j's gradients are all +0: set on one process by the sum, which zeroes them as
     * it reads them; the task zeroes them itself when not set (a new replica, a failed or a
     * ranks' step) and clears it */
    bool *clean;
    float *(*grads)(void *ctx, int j);               /* replica j's gradients */
    void (*save)(void *ctx, int k, void *dst);       /* micro-batch k's results -> dst[extra] */
    void (*load)(void *ctx, int k, const void *src); /* and back, on every rank */
    float *sum;                                      /* [n_params] the model's gradients */
} attn_micro_step;
/* The K micro-batches in waves of W on pool, their gradients summed in micro-batch order into
 * s->sum, or the first error in micro-batch order; *finite: the whole sum is finite. Over ranks
 * (attn_pool_ranks): rank rk->rank's share of them; each micro-batch's error and results to
 * every rank, its gradient's piece of each rank's parameter range to that rank (rk->alltoall);
 * then every result loaded and this rank's range of s->sum the sum in micro-batch order (the
 * whole sum on every rank when it is not finite): the bytes of the same step on one process. */
attn_status attn_micro_step_run(attn_pool *pool, const attn_micro_step *s, bool *finite,
                                attn_error *err);
/* The parameters [*a, *b) of n that rank of size owns: n split in order, starts at multiples of
 * 16 floats (64 bytes). */
void attn_rank_range(int rank, int size, size_t n, size_t *a, size_t *b);
/* Every rank's range of x[n] (attn_rank_range) to every rank. */
attn_status attn_ranks_share_range(const attn_ranks *rk, float *x, size_t n, attn_error *err);

/* ---- seq2seq_train.c: a batch of pairs, packed ------------------------------------------- */

/* One batch's buffers: sources [B, S] and lengths, decoder inputs [BOS] + words [B, T] and
 * lengths, and the packed rows' labels (words then [EOS], pair after pair) and logits. */
typedef struct attn_s2s_batch_buf {
    int *src, *src_len, *tgt, *tgt_len, *labels; /* [B, S], [B], [B, T], [B], [rows] */
    float *logits, *d_logits;                    /* [rows, Vt]; d_logits NULL unless asked */
    int S, T, B, rows;                           /* the batch filled last */
} attn_s2s_batch_buf;
/* Buffers for batches of up to B pairs of p (any of them); d_logits too when asked. `what`
 * starts the out-of-memory message ("training"). */
attn_status attn_s2s_batch_alloc(attn_s2s_batch_buf *b, const attn_pairs *p, int B, int V,
                                 bool d_logits, const char *what, attn_error *err);
void attn_s2s_batch_free(attn_s2s_batch_buf *b);
/* Packs pairs order[first .. first + B) (order NULL: pairs first .. first + B) into b, padded to
 * their own longest source (b->S) and decoder input (b->T); b->rows the packed rows. */
void attn_s2s_batch_fill(attn_s2s_batch_buf *b, const attn_pairs *p, const int *order, int first,
                         int B);

/* ---- seq2seq_parallel.c: a seq2seq training step in micro-batches --------------------------- */

/* seq2seq replicas for the tasks of a wave (ATTN_REPLICAS above). */
ATTN_REPLICAS(attn_s2s_replicas, attn_seq2seq);
/* One training step's forward and backward of batch b: pairs cut into micro-batches of
 * ATTN_MICRO_BATCH consecutive pairs (padded to b's S and T), each on a replica, their gradients
 * summed in micro-batch order into m's gradients. labels [rows] (rows = sum of b->tgt_lengths,
 * pair by pair; ATTN_PAD_ID rows count for nothing), logits and d_logits [rows, Vt] filled.
 * d_logits is the gradient of the whole batch's mean cross-entropy (each micro-batch's rows
 * scaled by 1 / the batch's counted rows); *loss that mean (the micro-batches' sums added in
 * order, NaN when no row counts); *finite (unless NULL): every gradient element is finite. */
attn_status attn_s2s_forward_backward(attn_seq2seq *m, attn_s2s_replicas *r, attn_pool *pool,
                                      const attn_s2s_batch *b, const int *labels, float *logits,
                                      float *d_logits, double *loss, bool *finite, attn_error *err);

/* ---- epoch_loop.c: the epoch loop of both families ---------------------------------------- */

/* Model selection: the best held-out epoch's parameters. */
typedef struct attn_best {
    float *params; /* [n] the best epoch's; NULL: no model selection (keep_best off, no held-out) */
    float *last;   /* [n] the last epoch's, kept when params are put back (restore_after false) */
    int epoch;     /* of params (1-based), 0 = none yet */
    double score;  /* its held-out score (higher is better) */
    bool restored; /* the model holds params in place of last */
} attn_best;
/* An epoch's clock: the loop's start, the epoch's start, its steps' end, its score's end, and
 * the epochs done when the loop started. */
typedef struct attn_epoch_clock {
    double start, t0, t1, t2;
    int first_epoch;
} attn_epoch_clock;
/* What a family hands to the loop. */
typedef struct attn_epoch_ops {
    void *ctx;
    attn_status (*steps)(void *ctx, attn_error *err); /* shuffle, kernels record, the steps */
    attn_status (*score)(void *ctx, double *score, attn_error *err); /* NULL: no held-out */
    /* after the epoch is counted: stats, callbacks, state; *go_on = false stops the loop */
    attn_status (*report)(void *ctx, const attn_epoch_clock *c, bool *go_on, attn_error *err);
    float *params; /* [n] the model's */
    size_t n;
    attn_best *best;
    int *epoch; /* epochs done */
    int epochs;
    /* put the best parameters back after the loop (when every epoch is done, the run's last
     * report included), not right after the last epoch's selection before its report */
    bool restore_after;
} attn_epoch_ops;
/* Epochs *o->epoch + 1 .. o->epochs; the first error of a step, score or report. */
attn_status attn_epoch_loop(const attn_epoch_ops *o, attn_error *err);

struct attn_trainer {
    attn_model *model;        /* borrowed */
    const attn_dataset *data; /* borrowed */
    attn_train_config cfg;
    attn_adam *adam;
    attn_rng rng;           /* shuffling; advanced once per epoch */
    int epoch;              /* epochs completed */
    int n_train;            /* data->n - holdout, or data->n with a separate held-out set */
    bool heldout_separate;  /* the held-out slice comes from a separate set */
    attn_batcher *train;    /* sentences [0, n_train) */
    attn_batcher *holdout;  /* [n_train, n) or the separate set's first holdout; NULL if none */
    float *logits;          /* [max(batch_size, eval_batch)] */
    float *d_logits;        /* [batch_size] */
    attn_best best;         /* model selection (score: held-out accuracy); params and last
                               NULL unless keep_best && holdout */
    attn_pool *pool;        /* borrowed; NULL = the caller's thread only */
    attn_replicas replicas; /* the pool's threads' replicas of model */
};

#endif /* ATTN_TRAIN_INTERNAL_H */

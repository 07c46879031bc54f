/* parallel.c -- training steps and evaluations whose pieces do not depend on the thread count
 * (attn_threads.h, docs/numerics.md "Threads").
 *
 * A training batch of B sentences is cut into K = ceil(B / ATTN_MICRO_BATCH) micro-batches of
 * consecutive sentences. Micro-batch k runs forward and backward on a replica whose gradients
 * were zeroed, so its gradient g_k is the same floats whichever thread computes it; the model's
 * gradient is then ((g_0 + g_1) + g_2) + ... elementwise, in k order. With fewer replicas than
 * micro-batches the micro-batches run in waves, and the sum goes on in the same order. The sum
 * zeroes each replica's gradient as it reads it (attn_micro_step's clean), so the replica's next
 * micro-batch starts from zeros without a zeroing sweep of its own. An
 * evaluation's pieces are its batches: each one's logits are those of a serial evaluation. */
#include "train_internal.h"

#include "attn_kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

attn_status attn_replica_slots_grow(attn_error **errs, bool **clean, int n, const char *what,
                                    attn_error *err) {
    attn_error *e = realloc(*errs, (size_t)n * sizeof *e);
    if (!e) return attn_errorf(err, ATTN_ERR_NOMEM, "%s: out of memory", what);
    *errs = e;
    bool *c = realloc(*clean, (size_t)n * sizeof *c);
    if (!c) return attn_errorf(err, ATTN_ERR_NOMEM, "%s: out of memory", what);
    *clean = c;
    return ATTN_OK;
}

attn_status attn_task_errors_make(attn_task_errors *t, int W, const char *what, attn_error *err) {
    *t = (attn_task_errors){calloc((size_t)W, sizeof *t->w), W};
    return t->w ? ATTN_OK : attn_errorf(err, ATTN_ERR_NOMEM, "%s: out of memory", what);
}

void attn_task_errors_free(attn_task_errors *t) {
    free(t->w);
    memset(t, 0, sizeof *t);
}

void attn_task_errors_fail(attn_task_errors *t, int worker, int task, attn_status st,
                           const attn_error *e) {
    struct attn_task_error *w = &t->w[worker];
    if (w->failed && w->task < task) return;
    *w = (struct attn_task_error){*e, task, true};
    w->e.status = st;
}

attn_status attn_task_errors_status(const attn_task_errors *t, attn_error *err) {
    const struct attn_task_error *first = NULL;
    for (int i = 0; i < t->W; i++)
        if (t->w[i].failed && (!first || t->w[i].task < first->task)) first = &t->w[i];
    if (!first) return ATTN_OK;
    if (err) *err = first->e;
    return first->e.status;
}

ATTN_REPLICAS_FUNCTIONS(attn_replicas, attn_model, attn_model_replica, attn_model_free,
                        "model replicas")

/* ---- a training step --------------------------------------------------------------------- */

typedef struct step_ctx {
    attn_replicas *r;
    const attn_batch *b;
    const float *labels;
    float *logits, *d_logits;
    int k0; /* the wave's first micro-batch */
} step_ctx;

/* Micro-batch k0 + task on replica `task` (a replica per task, not per thread: its gradients
 * wait there for the sum). */
static void micro_task(void *vc, int task, int worker) {
    (void)worker;
    step_ctx *c = vc;
    const int k = c->k0 + task, r0 = k * ATTN_MICRO_BATCH;
    const int n = c->b->B - r0 < ATTN_MICRO_BATCH ? c->b->B - r0 : ATTN_MICRO_BATCH;
    attn_model *m = c->r->m[task];
    attn_error *err = &c->r->errs[task];
    const attn_batch sub = {.B = n,
                            .T = c->b->T,
                            .ids = c->b->ids + (size_t)r0 * c->b->T,
                            .lengths = c->b->lengths + r0};
    if (!c->r->clean[task]) attn_model_zero_grad(m); /* else the last sum zeroed them */
    c->r->clean[task] = false;
    err->status = attn_model_forward(m, &sub, c->logits + r0, err);
    if (err->status != ATTN_OK) return;
    memset(c->d_logits + r0, 0, (size_t)n * sizeof(float));
    attn_bce_backward_rows(c->d_logits + r0, 1.0f, c->logits + r0, c->labels + r0, n, c->b->B);
    err->status = attn_model_backward(m, &sub, c->d_logits + r0, err);
}

/* For micro_step.c: replica j's gradients and micro-batch k's logits, which travel
 * with them (the step's loss and accuracy need every row's). */
static float *replica_grads(void *vc, int j) {
    return attn_model_grads(((step_ctx *)vc)->r->m[j]);
}
static int micro_rows(const step_ctx *c, int k) {
    const int r0 = k * ATTN_MICRO_BATCH;
    return c->b->B - r0 < ATTN_MICRO_BATCH ? c->b->B - r0 : ATTN_MICRO_BATCH;
}
static void save_logits(void *vc, int k, void *dst) {
    const step_ctx *c = vc;
    memcpy(dst, c->logits + k * ATTN_MICRO_BATCH, (size_t)micro_rows(c, k) * sizeof(float));
}
static void load_logits(void *vc, int k, const void *src) {
    const step_ctx *c = vc;
    memcpy(c->logits + k * ATTN_MICRO_BATCH, src, (size_t)micro_rows(c, k) * sizeof(float));
}

void attn_piece_range(int task, int n_tasks, size_t n, size_t *lo, size_t *hi) {
    const size_t per = ((n + (size_t)n_tasks - 1) / (size_t)n_tasks + 15) / 16 * 16;
    *lo = (size_t)task * per < n ? (size_t)task * per : n;
    *hi = *lo + per < n ? *lo + per : n;
}

/* attn_add_finite's loop, written once; called with zero_g a constant, so that each caller
 * is one vectorized pass (no test of zero_g inside the loop). */
static inline bool add_finite(float *restrict sum, float *restrict g, size_t n, bool zero_g) {
    uint32_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        const float s = sum[i] + g[i];
        sum[i] = s;
        if (zero_g) g[i] = 0.0f;
        uint32_t bits;
        memcpy(&bits, &s, sizeof bits);
        bad |= (bits & 0x7f800000u) == 0x7f800000u;
    }
    return !bad;
}

bool attn_add_finite(float *restrict sum, float *restrict g, size_t n, bool zero_g) {
    return zero_g ? add_finite(sum, g, n, true) : add_finite(sum, g, n, false);
}

typedef struct sum_ctx {
    float *sum;
    size_t n;
    float *const *g; /* [n_wave] the wave's gradients, micro-batches k0 .. k0 + n_wave - 1 */
    int k0, n_wave, K, n_pieces;
    bool zero_g;                   /* each g[j] that is not sum: +0 once read */
    bool finite[ATTN_MAX_THREADS]; /* [n_pieces] after the last wave: the piece's sum is finite */
} sum_ctx;

static void sum_task(void *vc, int task, int worker) {
    (void)worker;
    sum_ctx *c = vc;
    size_t lo, hi;
    attn_piece_range(task, c->n_pieces, c->n, &lo, &hi);
    const bool last = c->k0 + c->n_wave == c->K; /* the last wave: is the sum finite? */
    bool ok = true;
    for (int j = 0; j < c->n_wave; j++) {
        float *g = c->g[j];
        if (c->k0 + j == 0) {
            if (g != c->sum) { /* else micro-batch 0 was computed in the sum (seq2seq_parallel.c) */
                memcpy(c->sum + lo, g + lo, (hi - lo) * sizeof(float));
                if (c->zero_g) memset(g + lo, 0, (hi - lo) * sizeof(float));
            }
        } else /* the last add decides */
            ok = attn_add_finite(c->sum + lo, g + lo, hi - lo, c->zero_g && g != c->sum);
    }
    if (last) {
        if (c->K == 1) /* no add: check the copy */
            for (size_t i = lo; i < hi; i++) ok &= isfinite(c->sum[i]) != 0;
        c->finite[task] = ok;
    }
}

bool attn_grads_sum_pool(attn_pool *pool, float *sum, size_t n, float *const *g, int k0, int n_wave,
                         int K, bool zero_g) {
    sum_ctx c = {sum, n, g, k0, n_wave, K, attn_pool_threads(pool), zero_g, {0}};
    attn_pool_run(pool, c.n_pieces, sum_task, &c);
    bool finite = true;
    if (k0 + n_wave == K)
        for (int i = 0; i < c.n_pieces; i++) finite &= c.finite[i];
    return finite;
}

attn_status attn_train_forward_backward(attn_model *m, attn_replicas *r, attn_pool *pool,
                                        const attn_batch *b, const float *labels, float *logits,
                                        float *d_logits, bool *finite, attn_error *err) {
    const int K = (b->B + ATTN_MICRO_BATCH - 1) / ATTN_MICRO_BATCH;
    const int threads = attn_pool_threads(pool);
    const int W = K < threads ? K : threads;
    attn_status st = attn_replicas_reserve(r, m, W, err);
    if (st == ATTN_OK) st = attn_model_grads_alloc(m, err);
    if (st != ATTN_OK) return st;
    step_ctx c = {r, b, labels, logits, d_logits, 0};
    /* one process or the ranks of one run: the same sum (micro_step.c) */
    const attn_micro_step s = {K,
                               attn_model_n_params(m),
                               ATTN_MICRO_BATCH * sizeof(float),
                               micro_task,
                               &c,
                               &c.k0,
                               W,
                               r->errs,
                               r->clean,
                               replica_grads,
                               save_logits,
                               load_logits,
                               attn_model_grads(m)};
    bool fin = true;
    st = attn_micro_step_run(pool, &s, &fin, err);
    if (st == ATTN_OK && finite) *finite = fin;
    return st;
}

/* ---- Adam ------------------------------------------------------------------------------------ */

typedef struct adam_ctx {
    attn_adam *opt;
    attn_adam_scalars s;
    float *params;
    const float *grads;
    float *zero; /* NULL, or grads: +0 once read */
    size_t a, n; /* the range [a, a + n) to update */
    int n_pieces;
} adam_ctx;

static void adam_task(void *vc, int task, int worker) {
    (void)worker;
    const adam_ctx *c = vc;
    size_t lo, hi;
    attn_piece_range(task, c->n_pieces, c->n, &lo, &hi);
    lo += c->a, hi += c->a;
    if (c->zero)
        attn_adam_update_zero_grads(c->params + lo, c->opt->m + lo, c->opt->v + lo, c->zero + lo,
                                    hi - lo, &c->s);
    else
        attn_adam_update(c->params + lo, c->opt->m + lo, c->opt->v + lo, c->grads + lo, hi - lo,
                         &c->s);
}

static attn_status adam_step(attn_adam *opt, float *params, const float *grads, float *zero,
                             attn_pool *pool, attn_error *err) {
    const attn_ranks *rk = attn_pool_ranks(pool);
    size_t a = 0, b = opt->n;
    if (rk) attn_rank_range(rk->rank, rk->size, opt->n, &a, &b);
    const adam_ctx c = {opt,   attn_adam_next(opt),    params, grads, zero, a,
                        b - a, attn_pool_threads(pool)};
    attn_pool_run(pool, c.n_pieces, adam_task, (void *)&c);
    return rk ? attn_ranks_share_range(rk, params, opt->n, err) : ATTN_OK;
}

attn_status attn_adam_step_pool(attn_adam *opt, float *params, const float *grads, attn_pool *pool,
                                attn_error *err) {
    return adam_step(opt, params, grads, NULL, pool, err);
}

attn_status attn_adam_step_pool_zero_grads(attn_adam *opt, float *params, float *grads,
                                           attn_pool *pool, bool *zeroed, attn_error *err) {
    /* under ranks only this rank's range would be zeroed: the gradients are left as they are */
    *zeroed = !attn_pool_ranks(pool);
    return adam_step(opt, params, grads, *zeroed ? grads : NULL, pool, err);
}

attn_status attn_adam_share_pool(attn_adam *opt, attn_pool *pool, attn_error *err) {
    const attn_ranks *rk = attn_pool_ranks(pool);
    if (!rk) return ATTN_OK;
    attn_status st = attn_ranks_share_range(rk, opt->m, opt->n, err);
    return st == ATTN_OK ? attn_ranks_share_range(rk, opt->v, opt->n, err) : st;
}

/* ---- evaluation ---------------------------------------------------------------------------- */

typedef struct eval_ctx {
    attn_model *m; /* worker 0's model; worker w > 0 has replica w - 1 */
    attn_replicas *r;
    const attn_batcher *bt;
    int *ids, *lengths;     /* per worker [batch_size * max_len], [batch_size] */
    float *labels, *logits; /* per worker [batch_size] */
    long *correct;          /* [n_batches] */
    attn_task_errors fails; /* the first failed batch's error */
} eval_ctx;

static void eval_task(void *vc, int task, int worker) {
    eval_ctx *c = vc;
    const size_t bs = (size_t)c->bt->batch_size;
    attn_batch b;
    float *labels = c->labels + worker * bs, *logits = c->logits + worker * bs;
    attn_batcher_fill_into(c->bt, task, c->ids + worker * bs * (size_t)c->bt->max_len,
                           c->lengths + worker * bs, labels, &b);
    attn_error e;
    attn_status st =
        attn_model_forward_infer(attn_replicas_worker(c->r, c->m, worker), &b, logits, &e);
    if (st != ATTN_OK) {
        attn_task_errors_fail(&c->fails, worker, task, st, &e);
        return;
    }
    c->correct[task] = attn_count_correct(logits, labels, b.B);
}

attn_status attn_eval_batches_pool(attn_model *m, attn_replicas *r, attn_pool *pool,
                                   const attn_batcher *bt, long *correct, attn_error *err) {
    const int W = attn_pool_threads(pool), nb = bt->n_batches;
    const size_t bs = (size_t)bt->batch_size;
    /* the caller's thread evaluates on m itself: its buffers are warm, and one replica fewer
     * grows its own (page faults that a 1-thread evaluation does not pay twice) */
    attn_status st = attn_replicas_reserve(r, m, W - 1, err);
    if (st != ATTN_OK) return st;
    eval_ctx c = {m,
                  r,
                  bt,
                  malloc(W * bs * (size_t)bt->max_len * sizeof(int)),
                  malloc(W * bs * sizeof(int)),
                  malloc(W * bs * sizeof(float)),
                  malloc(W * bs * sizeof(float)),
                  calloc((size_t)nb, sizeof(long)),
                  {0}};
    if (!c.ids || !c.lengths || !c.labels || !c.logits || !c.correct)
        st = attn_errorf(err, ATTN_ERR_NOMEM, "evaluate: out of memory");
    if (st == ATTN_OK) st = attn_task_errors_make(&c.fails, W, "evaluate", err);
    if (st == ATTN_OK) attn_pool_run(pool, nb, eval_task, &c);
    if (st == ATTN_OK) st = attn_task_errors_status(&c.fails, err);
    *correct = 0;
    for (int i = 0; st == ATTN_OK && i < nb; i++) *correct += c.correct[i];
    free(c.ids);
    free(c.lengths);
    free(c.labels);
    free(c.logits);
    free(c.correct);
    attn_task_errors_free(&c.fails);
    return st;
}

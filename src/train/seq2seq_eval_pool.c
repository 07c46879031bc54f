/* seq2seq_eval_pool.c -- the seq2seq model's held-out measures on a pool of threads, with the
 * same result for every thread count (attn_seq2seq.h, docs/numerics.md "Threads").
 *
 * Pieces: exact match decodes one pair per task (greedy, KV cache), each pair's counts are
 * integers and added up in any order, since integer sums do not round. The teacher-forced loss
 * keeps attn_seq2seq_loss's batches of 32 consecutive pairs: batch k's loss times its rows is one
 * double computed by the same forward whichever thread runs it, and the doubles are added in k
 * order after the run, as the serial loop adds them. The caller's thread decodes on the model,
 * worker w > 0 on a replica of its own (attn_seq2seq_replica: the same floats). */
#include "train_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { LOSS_BATCH = 32 }; /* attn_seq2seq_loss's batch: its pieces */

/* The models of the run's workers: worker 0 runs on m, worker w > 0 on replica w - 1 (made for
 * the call, attn_s2s_replicas_worker); and the first failed task's error. */
typedef struct workers {
    attn_seq2seq *m;
    attn_s2s_replicas reps;
    attn_task_errors fails;
} workers;

static void workers_free(workers *w) {
    attn_s2s_replicas_free(&w->reps);
    attn_task_errors_free(&w->fails);
}

static attn_status workers_make(workers *w, attn_seq2seq *m, attn_pool *pool, const char *what,
                                attn_error *err) {
    memset(w, 0, sizeof *w);
    w->m = m;
    attn_status st = attn_task_errors_make(&w->fails, attn_pool_threads(pool), what, err);
    if (st == ATTN_OK) st = attn_s2s_replicas_reserve(&w->reps, m, w->fails.W - 1, err);
    if (st != ATTN_OK) workers_free(w);
    return st;
}

/* ---- exact match ------------------------------------------------------------------------- */

typedef struct score_ctx {
    workers w;
    const attn_pairs *p;
    int first, max_out;
    int *gen;                   /* per worker [max_out + 1] */
    attn_s2s_pair_score *score; /* [n] */
} score_ctx;

static void score_task(void *vc, int task, int worker) {
    score_ctx *c = vc;
    const attn_pairs *p = c->p;
    const int i = c->first + task, L = p->tgt_lengths[i];
    const int *tgt = p->tgt_ids + p->tgt_offsets[i];
    int *gen = c->gen + (size_t)worker * (c->max_out + 1), n_out = 0;
    attn_error e;
    attn_status st = attn_seq2seq_greedy(attn_s2s_replicas_worker(&c->w.reps, c->w.m, worker),
                                         p->src->ids + p->src->offsets[i], p->src->lengths[i],
                                         c->max_out, true, gen, &n_out, NULL, NULL, &e);
    if (st != ATTN_OK) {
        attn_task_errors_fail(&c->w.fails, worker, task, st, &e);
        return;
    }
    gen[n_out] = ATTN_TGT_EOS; /* the target's words then [EOS], position by position */
    int right = 0;
    bool same = n_out == L;
    for (int t = 0; t <= L; t++) {
        const int want = t < L ? tgt[t] : ATTN_TGT_EOS;
        const bool hit = t <= n_out && gen[t] == want;
        right += hit;
        same = same && hit;
    }
    c->score[task] = (attn_s2s_pair_score){same, right, L + 1};
}

attn_status attn_seq2seq_score_pool(attn_seq2seq *m, const attn_pairs *p, int first, int n,
                                    attn_pool *pool, attn_s2s_pair_score *scores, attn_error *err) {
    if (!m || !p || !scores || first < 0 || n < 0 || first + n > p->src->n)
        return attn_errorf(err, ATTN_ERR_ARG, "evaluate: pairs %d..%d of %d", first, first + n,
                           p ? p->src->n : 0);
    score_ctx c = {.p = p, .first = first, .score = scores};
    c.max_out = attn_seq2seq_config_of(m)->max_tgt_len - 1;
    attn_status st = workers_make(&c.w, m, pool, "evaluate", err);
    if (st != ATTN_OK) return st;
    c.gen = malloc((size_t)c.w.fails.W * (c.max_out + 1) * sizeof *c.gen);
    if (!c.gen) st = attn_errorf(err, ATTN_ERR_NOMEM, "evaluate: out of memory");
    if (st == ATTN_OK) {
        attn_pool_run(pool, n, score_task, &c);
        st = attn_task_errors_status(&c.w.fails, err);
    }
    free(c.gen);
    workers_free(&c.w);
    return st;
}

attn_status attn_seq2seq_evaluate_pool(attn_seq2seq *m, const attn_pairs *p, int first, int n,
                                       attn_pool *pool, attn_s2s_eval *out, attn_error *err) {
    memset(out, 0, sizeof *out);
    if (!p || first < 0 || n < 0 || first + n > p->src->n)
        return attn_errorf(err, ATTN_ERR_ARG, "evaluate: pairs %d..%d of %d", first, first + n,
                           p ? p->src->n : 0);
    attn_s2s_pair_score *s = malloc((size_t)(n ? n : 1) * sizeof *s);
    if (!s) return attn_errorf(err, ATTN_ERR_NOMEM, "evaluate: out of memory");
    attn_status st = attn_seq2seq_score_pool(m, p, first, n, pool, s, err);
    long exact = 0, right = 0, tokens = 0; /* integers: the order of the sum is free */
    for (int i = 0; st == ATTN_OK && i < n; i++) {
        exact += s[i].exact;
        right += s[i].right;
        tokens += s[i].tokens;
    }
    free(s);
    if (st != ATTN_OK) return st;
    out->n = n;
    out->exact = n ? (double)exact / n : NAN;
    out->token_acc = tokens ? (double)right / (double)tokens : NAN;
    return ATTN_OK;
}

/* ---- the teacher-forced loss ------------------------------------------------------------- */

typedef struct loss_ctx {
    workers w;
    const attn_pairs *p;
    int first, n, V;
    attn_s2s_batch_buf *buf; /* [W] one worker's batch */
    double *sum;             /* [n_batches] loss x rows of batch k */
    long *rows;              /* [n_batches] */
} loss_ctx;

/* Batch k = pairs first + 32k .. (at most 32), packed as training packs a batch
 * (attn_s2s_batch_fill: S and T the batch's own longest, rows pair after pair). */
static void loss_task(void *vc, int k, int worker) {
    loss_ctx *c = vc;
    attn_s2s_batch_buf *b = &c->buf[worker];
    const int start = c->first + k * LOSS_BATCH;
    const int B = c->first + c->n - start < LOSS_BATCH ? c->first + c->n - start : LOSS_BATCH;
    attn_s2s_batch_fill(b, c->p, NULL, start, B);
    const attn_s2s_batch batch = {B, b->S, b->T, b->src, b->src_len, b->tgt, b->tgt_len};
    attn_error e;
    attn_status st = attn_seq2seq_forward(attn_s2s_replicas_worker(&c->w.reps, c->w.m, worker),
                                          &batch, b->logits, &e);
    if (st != ATTN_OK) {
        attn_task_errors_fail(&c->w.fails, worker, k, st, &e);
        return;
    }
    c->sum[k] =
        attn_cross_entropy_forward(b->logits, b->labels, b->rows, c->V, ATTN_PAD_ID) * b->rows;
    c->rows[k] = b->rows;
}

static void loss_free(loss_ctx *c) {
    for (int i = 0; c->buf && i < c->w.fails.W; i++) attn_s2s_batch_free(&c->buf[i]);
    free(c->buf);
    free(c->sum);
    free(c->rows);
    workers_free(&c->w);
}

static attn_status loss_alloc(loss_ctx *c, int n_batches, attn_error *err) {
    c->buf = calloc((size_t)c->w.fails.W, sizeof *c->buf);
    c->sum = malloc((size_t)n_batches * sizeof *c->sum);
    c->rows = malloc((size_t)n_batches * sizeof *c->rows);
    if (!c->buf || !c->sum || !c->rows)
        return attn_errorf(err, ATTN_ERR_NOMEM, "loss: out of memory for a batch");
    for (int i = 0; i < c->w.fails.W; i++) {
        attn_status st =
            attn_s2s_batch_alloc(&c->buf[i], c->p, LOSS_BATCH, c->V, false, "loss", err);
        if (st != ATTN_OK) return st;
    }
    return ATTN_OK;
}

attn_status attn_seq2seq_loss_pool(attn_seq2seq *m, const attn_pairs *p, int first, int n,
                                   attn_pool *pool, double *loss, attn_error *err) {
    *loss = NAN;
    if (!m || !p || first < 0 || n < 1 || first + n > p->src->n)
        return attn_errorf(err, ATTN_ERR_ARG, "loss: pairs %d..%d of %d", first, first + n,
                           p ? p->src->n : 0);
    const int n_batches = (n + LOSS_BATCH - 1) / LOSS_BATCH;
    loss_ctx c = {.p = p, .first = first, .n = n};
    c.V = attn_seq2seq_config_of(m)->tgt_vocab;
    attn_status st = workers_make(&c.w, m, pool, "loss", err);
    if (st == ATTN_OK) st = loss_alloc(&c, n_batches, err);
    if (st == ATTN_OK) {
        attn_pool_run(pool, n_batches, loss_task, &c);
        st = attn_task_errors_status(&c.w.fails, err);
    }
    double sum = 0.0; /* in batch order, as the serial loop */
    long rows = 0;
    for (int k = 0; st == ATTN_OK && k < n_batches; k++) {
        sum += c.sum[k];
        rows += c.rows[k];
    }
    if (st == ATTN_OK) *loss = sum / (double)rows;
    loss_free(&c);
    return st;
}

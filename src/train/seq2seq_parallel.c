/* seq2seq_parallel.c -- a seq2seq training step in micro-batches whose boundaries do not depend
 * on the thread count (attn_threads.h, docs/numerics.md "Threads"), as parallel.c does for the
 * classifiers.
 *
 * A batch of B pairs is cut into K = ceil(B / ATTN_MICRO_BATCH) micro-batches of consecutive
 * pairs, each padded to the batch's S and T. Micro-batch k runs forward and backward on a
 * replica whose gradients were zeroed; its d_logits are scaled by 1 / (the whole batch's counted
 * target rows), so g_k is its share of the gradient of the batch's mean, and the model's gradient
 * is ((g_0 + g_1) + g_2) + ... elementwise, in k order (parallel.c's attn_grads_sum_pool). The
 * loss is (s_0 + s_1 + ...) / rows in k order, s_k the micro-batch's summed row losses.
 * Micro-batch 0 runs on the model itself, its gradients zeroed like a replica's: g_0 is then
 * computed where the sum starts (the same floats a replica would hold), instead of in a replica
 * and copied there (at the base size a 177 MB copy per step). Nothing is zeroed in a sweep of
 * its own when it can be avoided: the sum writes +0 into a replica's gradient as it reads it, and
 * Adam into the model's (attn_adam_step_pool_zero_grads); a flag per model says so, and a
 * replica or model without it (new, a failed step, a step over ranks) is zeroed as before. */
#include "train_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

ATTN_REPLICAS_FUNCTIONS(attn_s2s_replicas, attn_seq2seq, attn_seq2seq_replica, attn_seq2seq_free,
                        "seq2seq replicas")

typedef struct s2s_step_ctx {
    attn_seq2seq *model; /* micro-batch 0's; its gradients are the sum's */
    attn_s2s_replicas *r;
    const attn_s2s_batch *b;
    const int *labels;
    float *logits, *d_logits;
    const size_t *row0; /* [K + 1] micro-batch k's rows are [row0[k], row0[k + 1]) */
    int V, n_mean, k0;  /* n_mean: the batch's counted rows */
    double *loss_sum;   /* [K] s_k */
} s2s_step_ctx;

/* Micro-batch k0 + task on replica `task` (its gradients wait there for the sum), micro-batch 0
 * on the model. */
static void micro_task(void *vc, int task, int worker) {
    (void)worker;
    s2s_step_ctx *c = vc;
    const attn_s2s_batch *b = c->b;
    const int k = c->k0 + task, p0 = k * ATTN_MICRO_BATCH;
    const int n = b->B - p0 < ATTN_MICRO_BATCH ? b->B - p0 : ATTN_MICRO_BATCH;
    attn_seq2seq *m = k == 0 ? c->model : c->r->m[task];
    attn_error *err = &c->r->errs[task];
    const size_t row0 = c->row0[k], rows = c->row0[k + 1] - row0, off = row0 * (size_t)c->V;
    const attn_s2s_batch sub = {n,
                                b->S,
                                b->T,
                                b->src_ids + (size_t)p0 * b->S,
                                b->src_lengths + p0,
                                b->tgt_ids + (size_t)p0 * b->T,
                                b->tgt_lengths + p0};
    bool *clean = k == 0 ? &c->r->model_clean : &c->r->clean[task];
    if (!*clean) attn_seq2seq_zero_grad(m); /* else Adam or the last sum zeroed them, reading */
    *clean = false;
    err->status = attn_seq2seq_forward(m, &sub, c->logits + off, err);
    if (err->status != ATTN_OK) return;
    memset(c->d_logits + off, 0, rows * (size_t)c->V * sizeof(float));
    c->loss_sum[k] = attn_cross_entropy_sum_forward_backward(
        c->d_logits + off, 1.0f, c->logits + off, c->labels + row0, (int)rows, c->V, ATTN_PAD_ID,
        c->n_mean);
    err->status = attn_seq2seq_backward(m, &sub, c->d_logits + off, err);
}

/* For micro_step.c: the wave's j-th micro-batch's gradients (replica j's, the model's for
 * micro-batch 0) and micro-batch k's loss sum. */
static float *replica_grads(void *vc, int j) {
    const s2s_step_ctx *c = vc;
    return attn_seq2seq_grads(c->k0 + j == 0 ? c->model : c->r->m[j]);
}
static void save_loss(void *vc, int k, void *dst) {
    memcpy(dst, &((s2s_step_ctx *)vc)->loss_sum[k], sizeof(double));
}
static void load_loss(void *vc, int k, const void *src) {
    memcpy(&((s2s_step_ctx *)vc)->loss_sum[k], src, sizeof(double));
}

/* The waves: micro-batches on the replicas, then their gradients added in k order, on one
 * process or over the ranks of one run (micro_step.c). */
static attn_status run_waves(attn_seq2seq *m, attn_pool *pool, s2s_step_ctx *c, int K, int W,
                             bool *finite, attn_error *err) {
    const attn_micro_step s = {K,
                               attn_seq2seq_n_params(m),
                               sizeof(double),
                               micro_task,
                               c,
                               &c->k0,
                               W,
                               c->r->errs,
                               c->r->clean,
                               replica_grads,
                               save_loss,
                               load_loss,
                               attn_seq2seq_grads(m)};
    return attn_micro_step_run(pool, &s, finite, err);
}

attn_status attn_s2s_forward_backward(attn_seq2seq *m, attn_s2s_replicas *r, attn_pool *pool,
                                      const attn_s2s_batch *b, const int *labels, float *logits,
                                      float *d_logits, double *loss, bool *finite,
                                      attn_error *err) {
    *loss = NAN;
    if (b->B < 1) return attn_errorf(err, ATTN_ERR_ARG, "training step: an empty batch");
    const int K = (b->B + ATTN_MICRO_BATCH - 1) / ATTN_MICRO_BATCH;
    const int threads = attn_pool_threads(pool);
    const int W = K < threads ? K : threads;
    attn_status st = attn_s2s_replicas_reserve(r, m, W, err);
    if (st == ATTN_OK) st = attn_seq2seq_grads_alloc(m, err);
    if (st != ATTN_OK) return st;
    size_t *row0 = malloc((size_t)(K + 1) * sizeof *row0);
    double *loss_sum = malloc((size_t)K * sizeof *loss_sum);
    if (!row0 || !loss_sum) {
        free(row0), free(loss_sum);
        return attn_errorf(err, ATTN_ERR_NOMEM, "training step: out of memory");
    }
    row0[0] = 0;
    for (int k = 0; k < K; k++) {
        row0[k + 1] = row0[k];
        for (int i = k * ATTN_MICRO_BATCH; i < b->B && i < (k + 1) * ATTN_MICRO_BATCH; i++)
            row0[k + 1] += (size_t)b->tgt_lengths[i];
    }
    int n_mean = 0;
    for (size_t i = 0; i < row0[K]; i++) n_mean += labels[i] != ATTN_PAD_ID;
    /* no counted row: nothing is added, whatever the divisor; the loss stays NaN (PyTorch 0/0) */
    s2s_step_ctx c = {.model = m,
                      .r = r,
                      .b = b,
                      .labels = labels,
                      .logits = logits,
                      .d_logits = d_logits,
                      .row0 = row0,
                      .V = attn_seq2seq_config_of(m)->tgt_vocab,
                      .n_mean = n_mean > 0 ? n_mean : 1,
                      .loss_sum = loss_sum};
    bool fin = true;
    st = run_waves(m, pool, &c, K, W, &fin, err);
    if (st == ATTN_OK && n_mean > 0) {
        double sum = 0.0;
        for (int k = 0; k < K; k++) sum += loss_sum[k];
        *loss = sum / n_mean;
    }
    if (finite) *finite = fin;
    free(row0);
    free(loss_sum);
    return st;
}

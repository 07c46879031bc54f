/* train.c -- the training loop: epochs of shuffled, length-bucketed mini-batches; per step
 * zero_grad, forward, mean BCE (attn_bce_forward/backward), backward, NaN/Inf check, Adam.
 * Held-out slice: the LAST cfg.holdout sentences of the training data, or the first
 * cfg.holdout sentences of a separate held-out set (attn_trainer_create_heldout; attn.h).
 * Model selection (cfg.keep_best): the best held-out epoch's parameters (ties: later) are
 * restored after the last epoch.
 * Progress goes through callbacks; the library never prints. */
#include "attn_kernels.h"
#include "train_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

attn_train_config attn_train_config_default(void) {
    attn_train_config c = {0};
    c.epochs = 20;
    c.batch_size = 32;
    c.bucket = 8;
    c.holdout = 500;
    c.keep_best = 1;
    c.eval_batch = 256;
    c.seed = 1;
    c.adam = attn_adam_config_default();
    return c;
}

attn_status attn_train_config_validate(const attn_train_config *c, int n_sentences,
                                       attn_error *err) {
    if (c->epochs < 1 || c->epochs > 1000000)
        return attn_errorf(err, ATTN_ERR_VALUE, "train config: epochs = %d, expected >= 1",
                           c->epochs);
    if (c->batch_size < 1 || c->batch_size > 1 << 20)
        return attn_errorf(err, ATTN_ERR_VALUE, "train config: batch_size = %d, expected >= 1",
                           c->batch_size);
    if (c->bucket < 1 || c->bucket > 1 << 20)
        return attn_errorf(err, ATTN_ERR_VALUE, "train config: bucket = %d, expected >= 1",
                           c->bucket);
    if (c->eval_batch < 1 || c->eval_batch > 1 << 20)
        return attn_errorf(err, ATTN_ERR_VALUE, "train config: eval_batch = %d, expected >= 1",
                           c->eval_batch);
    if (c->keep_best != 0 && c->keep_best != 1)
        return attn_errorf(err, ATTN_ERR_VALUE, "train config: keep_best = %d, expected 0 or 1",
                           c->keep_best);
    if (c->warmup < 0 || c->warmup > ATTN_MAX_WARMUP)
        return attn_errorf(err, ATTN_ERR_VALUE, "train config: warmup = %d, expected 0..%d",
                           c->warmup, ATTN_MAX_WARMUP);
    if (c->holdout < 0 || c->holdout >= n_sentences)
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "train config: holdout = %d of %d sentences leaves none to train on "
                           "(expected 0..%d)",
                           c->holdout, n_sentences, n_sentences - 1);
    return ATTN_OK;
}

void attn_trainer_free(attn_trainer *t) {
    if (!t) return;
    attn_adam_free(t->adam);
    attn_batcher_free(t->train);
    attn_batcher_free(t->holdout);
    free(t->logits);
    free(t->d_logits);
    free(t->best.params);
    free(t->best.last);
    attn_replicas_free(&t->replicas);
    free(t);
}

attn_status attn_trainer_set_pool(attn_trainer *t, attn_pool *pool, attn_error *err) {
    t->pool = pool;
    return attn_replicas_reserve(&t->replicas, t->model, attn_pool_threads(pool), err);
}

attn_status attn_trainer_create(attn_model *model, const attn_dataset *data,
                                const attn_train_config *cfg, attn_trainer **out, attn_error *err) {
    return attn_trainer_create_heldout(model, data, NULL, cfg, out, err);
}

attn_status attn_trainer_create_heldout(attn_model *model, const attn_dataset *data,
                                        const attn_dataset *heldout, const attn_train_config *cfg,
                                        attn_trainer **out, attn_error *err) {
    *out = NULL;
    if (!model || !data || !cfg)
        return attn_errorf(err, ATTN_ERR_ARG, "trainer: model, data and config are required");
    attn_status st;
    if (heldout) { /* train on all of data; the held-out slice is heldout's first sentences */
        attn_train_config c = *cfg;
        c.holdout = 0;
        st = attn_train_config_validate(&c, data->n, err);
        if (st == ATTN_OK && (cfg->holdout < 0 || cfg->holdout > heldout->n))
            st = attn_errorf(err, ATTN_ERR_VALUE,
                             "train config: holdout = %d, but the held-out set has %d sentences",
                             cfg->holdout, heldout->n);
    } else {
        st = attn_train_config_validate(cfg, data->n, err);
    }
    if (st != ATTN_OK) return st;
    attn_trainer *t = calloc(1, sizeof *t);
    if (!t) return attn_errorf(err, ATTN_ERR_NOMEM, "trainer: out of memory");
    t->model = model;
    t->data = data;
    t->cfg = *cfg;
    t->rng = attn_rng_seed(cfg->seed);
    t->heldout_separate = heldout != NULL;
    t->n_train = heldout ? data->n : data->n - cfg->holdout;
    int n_logits = cfg->batch_size > cfg->eval_batch ? cfg->batch_size : cfg->eval_batch;
    t->logits = malloc((size_t)n_logits * sizeof(float));
    t->d_logits = malloc((size_t)cfg->batch_size * sizeof(float));
    if (cfg->keep_best && cfg->holdout > 0) {
        size_t bytes =
            (attn_model_n_params(model) ? attn_model_n_params(model) : 1) * sizeof(float);
        t->best.params = malloc(bytes);
        t->best.last = malloc(bytes);
    }
    if (!t->logits || !t->d_logits ||
        (cfg->keep_best && cfg->holdout > 0 && (!t->best.params || !t->best.last))) {
        attn_trainer_free(t);
        return attn_errorf(err, ATTN_ERR_NOMEM, "trainer: out of memory");
    }
    st = attn_adam_create(attn_model_n_params(model), &cfg->adam, &t->adam, err);
    if (st == ATTN_OK)
        st = attn_batcher_create(data, 0, t->n_train, cfg->batch_size, cfg->bucket, &t->train, err);
    if (st == ATTN_OK && cfg->holdout > 0)
        st = heldout ? attn_batcher_create(heldout, 0, cfg->holdout, cfg->eval_batch, 1,
                                           &t->holdout, err)
                     : attn_batcher_create(data, t->n_train, cfg->holdout, cfg->eval_batch, 1,
                                           &t->holdout, err);
    if (st != ATTN_OK) {
        attn_trainer_free(t);
        return st;
    }
    *out = t;
    return ATTN_OK;
}

int attn_trainer_epoch(const attn_trainer *t) {
    return t->epoch;
}
long attn_trainer_steps(const attn_trainer *t) {
    return t->adam->step;
}
const attn_adam *attn_trainer_adam(const attn_trainer *t) {
    return t->adam;
}

int attn_trainer_best_epoch(const attn_trainer *t, double *acc) {
    if (acc) *acc = t->best.epoch ? t->best.score : NAN;
    return t->best.epoch;
}

int attn_count_correct(const float *logits, const float *labels, int B) {
    int c = 0;
    for (int i = 0; i < B; i++) c += (logits[i] > 0.0f) == (labels[i] > 0.5f);
    return c;
}

/* Accuracy over all batches of b (in their current order) with batch buffers `logits`; with a
 * pool of more than one thread the batches are spread over the replicas r (the same count). */
static attn_status eval_batches(attn_model *m, attn_batcher *b, float *logits, attn_pool *pool,
                                attn_replicas *r, double *acc, attn_error *err) {
    long correct = 0;
    if (attn_pool_threads(pool) > 1) {
        attn_status st = attn_eval_batches_pool(m, r, pool, b, &correct, err);
        if (st != ATTN_OK) return st;
        *acc = (double)correct / b->n;
        return ATTN_OK;
    }
    for (int i = 0; i < b->n_batches; i++) {
        attn_batch batch;
        const float *labels = attn_batcher_fill(b, i, &batch);
        attn_status st = attn_model_forward_infer(m, &batch, logits, err);
        if (st != ATTN_OK) return st;
        correct += attn_count_correct(logits, labels, batch.B);
    }
    *acc = (double)correct / b->n;
    return ATTN_OK;
}

attn_status attn_evaluate_pool(attn_model *m, const attn_dataset *d, int first, int n,
                               int batch_size, attn_pool *pool, double *accuracy, attn_error *err) {
    attn_batcher *b = NULL;
    attn_replicas r = {0};
    attn_status st = attn_batcher_create(d, first, n, batch_size, 1, &b, err);
    if (st != ATTN_OK) return st;
    float *logits = malloc((size_t)batch_size * sizeof(float));
    if (!logits) st = attn_errorf(err, ATTN_ERR_NOMEM, "evaluate: out of memory");
    if (st == ATTN_OK) st = eval_batches(m, b, logits, pool, &r, accuracy, err);
    attn_replicas_free(&r);
    free(logits);
    attn_batcher_free(b);
    return st;
}

attn_status attn_evaluate(attn_model *m, const attn_dataset *d, int first, int n, int batch_size,
                          double *accuracy, attn_error *err) {
    return attn_evaluate_pool(m, d, first, n, batch_size, NULL, accuracy, err);
}

/* Names the step and the first non-finite tensor; params are scanned when the loss is bad
 * (a NaN parameter poisons the loss before any gradient exists). */
static attn_status non_finite(attn_trainer *t, int batch, bool grads, double loss,
                              attn_error *err) {
    attn_error inner = {0};
    if (attn_model_check_finite(t->model, grads, &inner) == ATTN_OK)
        snprintf(inner.msg, sizeof inner.msg, "all parameters finite");
    char what[32];
    if (grads)
        snprintf(what, sizeof what, "non-finite gradient");
    else
        snprintf(what, sizeof what, "loss is %s", isnan(loss) ? "NaN" : "Inf");
    return attn_errorf(err, ATTN_ERR_VALUE, "step %ld (epoch %d, batch %d of %d): %s; %s",
                       t->adam->step + 1, t->epoch + 1, batch + 1, t->train->n_batches, what,
                       inner.msg);
}

/* The learning rate of Adam step `step` (0-based): PyTorch's LambdaLR factor
 * min(1, (step + 1) / warmup) times the base rate, both in double as in Python. */
static double lr_at(const attn_train_config *c, long step) {
    if (c->warmup <= 0) return c->adam.lr;
    const double f = (double)(step + 1) / (double)c->warmup;
    return c->adam.lr * (f < 1.0 ? f : 1.0);
}

/* The loop's context: the trainer, its callbacks and the epoch's stats. */
typedef struct cls_epoch {
    attn_trainer *t;
    const attn_train_callbacks *cb;
    attn_epoch_stats st;
} cls_epoch;

/* One epoch over the training batches; fills loss and train accuracy. */
static attn_status train_epoch(void *ctx, attn_error *err) {
    cls_epoch *e = ctx;
    attn_trainer *t = e->t;
    const attn_train_callbacks *cb = e->cb;
    attn_model *m = t->model;
    attn_batcher *tb = t->train;
    attn_model_set_kernels(m, NULL); /* from here on the values are this process's kernels' */
    attn_batcher_shuffle(tb, &t->rng);
    double loss_sum = 0.0;
    long correct = 0;
    for (int i = 0; i < tb->n_batches; i++) {
        attn_batch batch;
        const float *labels = attn_batcher_fill(tb, i, &batch);
        /* micro-batches on the pool, gradients summed in a fixed order (parallel.c) */
        bool finite;
        attn_status st = attn_train_forward_backward(m, &t->replicas, t->pool, &batch, labels,
                                                     t->logits, t->d_logits, &finite, err);
        if (st != ATTN_OK) return st;
        double l = attn_bce_forward(t->logits, labels, batch.B);
        if (!isfinite(l)) return non_finite(t, i, false, l, err);
        if (!finite) return non_finite(t, i, true, l, err);
        t->adam->cfg.lr = lr_at(&t->cfg, t->adam->step);
        /* Adam by parameter ranges on the pool (parallel.c) */
        st = attn_adam_step_pool(t->adam, attn_model_params(m), attn_model_grads(m), t->pool, err);
        if (st != ATTN_OK) return st;
        loss_sum += l * batch.B;
        correct += attn_count_correct(t->logits, labels, batch.B);
        if (cb && cb->on_step && ((i + 1) % 16 == 0 || i + 1 == tb->n_batches))
            cb->on_step(t->epoch + 1, i + 1, tb->n_batches, cb->user);
    }
    e->st.loss = loss_sum / tb->n;
    e->st.train_acc = (double)correct / tb->n;
    return attn_adam_share_pool(t->adam, t->pool, err); /* over ranks: the whole state */
}

static attn_status score_epoch(void *ctx, double *score, attn_error *err) {
    attn_trainer *t = ((cls_epoch *)ctx)->t;
    attn_status s =
        eval_batches(t->model, t->holdout, t->logits, t->pool, &t->replicas, score, err);
    ((cls_epoch *)ctx)->st.holdout_acc = *score;
    return s;
}

static attn_status report_epoch(void *ctx, const attn_epoch_clock *c, bool *go_on,
                                attn_error *err) {
    (void)err;
    cls_epoch *e = ctx;
    const attn_trainer *t = e->t;
    attn_epoch_stats *st = &e->st;
    st->epoch = t->epoch;
    st->epochs = t->cfg.epochs;
    st->steps = t->adam->step;
    st->sentences_per_s = c->t1 > c->t0 ? t->n_train / (c->t1 - c->t0) : 0.0;
    st->elapsed_s = c->t2 - c->start;
    st->eta_s = st->elapsed_s / (t->epoch - c->first_epoch) * (t->cfg.epochs - t->epoch);
    if (e->cb && e->cb->on_epoch) *go_on = e->cb->on_epoch(st, e->cb->user);
    *st = (attn_epoch_stats){.holdout_acc = NAN};
    return ATTN_OK;
}

attn_status attn_trainer_run(attn_trainer *t, const attn_train_callbacks *cb, attn_error *err) {
    cls_epoch e = {t, cb, {.holdout_acc = NAN}};
    const attn_epoch_ops o = {.ctx = &e,
                              .steps = train_epoch,
                              .report = report_epoch,
                              .score = t->holdout ? score_epoch : NULL,
                              .params = attn_model_params(t->model),
                              .n = attn_model_n_params(t->model),
                              .best = &t->best,
                              .epoch = &t->epoch,
                              .epochs = t->cfg.epochs};
    return attn_epoch_loop(&o, err);
}

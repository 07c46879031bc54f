/* seq2seq_train.c -- teacher-forced training of a seq2seq model with Adam, and exact-match
 * evaluation by greedy decoding (attn_seq2seq.h).
 *
 * Each epoch shuffles the training pairs with the project PRNG (seeded from cfg.seed, the state
 * carried over epochs) and cuts the permutation into batches of batch_size pairs (the last may
 * be smaller). Each step: forward on [BOS] + target, mean cross-entropy over the target words
 * and [EOS] (padding would be ignored like CrossEntropyLoss(ignore_index=0); the packed rows hold
 * none), backward, in micro-batches of ATTN_MICRO_BATCH pairs whose gradients are summed in
 * order (seq2seq_parallel.c: the same bytes on every pool), NaN/Inf check, Adam step
 * (torch.optim.Adam's update, by parameter ranges on the pool).
 * After each epoch the held-out pairs are decoded greedily (KV cache) and scored by exact match
 * (rewrite), or their teacher-forced loss is measured (compose, where a sentence other than the
 * target can be just as right); with keep_best the best epoch's parameters (ties: the later) are
 * put back at the end. */
#include "train_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

attn_s2s_train_config attn_s2s_train_config_default(void) {
    attn_s2s_train_config c = {0};
    c.epochs = 10;
    c.batch_size = 32;
    c.holdout = 500;
    c.keep_best = 1;
    c.seed = 1;
    c.adam = attn_adam_config_default();
    return c;
}

static int src_len(const attn_pairs *p, int i) {
    return p->src->lengths[i];
}

/* ---- evaluation -------------------------------------------------------------------------- */

/* The serial evaluations are the pool versions (seq2seq_eval_pool.c) on the caller's thread. */
attn_status attn_seq2seq_evaluate(attn_seq2seq *m, const attn_pairs *p, int first, int n,
                                  attn_s2s_eval *out, attn_error *err) {
    return attn_seq2seq_evaluate_pool(m, p, first, n, NULL, out, err);
}

attn_status attn_seq2seq_loss(attn_seq2seq *m, const attn_pairs *p, int first, int n, double *loss,
                              attn_error *err) {
    return attn_seq2seq_loss_pool(m, p, first, n, NULL, loss, err);
}

/* ---- one batch (train_internal.h) --------------------------------------------------------- */

void attn_s2s_batch_fill(attn_s2s_batch_buf *b, const attn_pairs *p, const int *order, int first,
                         int B) {
    b->B = B;
    b->S = b->T = 1;
    for (int k = 0; k < B; k++) {
        const int i = order ? order[first + k] : first + k;
        if (src_len(p, i) > b->S) b->S = src_len(p, i);
        if (p->tgt_lengths[i] + 1 > b->T) b->T = p->tgt_lengths[i] + 1;
    }
    b->rows = 0;
    for (int k = 0; k < B; k++) {
        const int i = order ? order[first + k] : first + k, L = p->tgt_lengths[i];
        const int *tgt = p->tgt_ids + p->tgt_offsets[i];
        memcpy(b->src + (size_t)k * b->S, p->src->ids + p->src->offsets[i],
               (size_t)src_len(p, i) * sizeof(int));
        b->src_len[k] = src_len(p, i);
        b->tgt[(size_t)k * b->T] = ATTN_TGT_BOS;
        memcpy(b->tgt + (size_t)k * b->T + 1, tgt, (size_t)L * sizeof(int));
        b->tgt_len[k] = L + 1;
        memcpy(b->labels + b->rows, tgt, (size_t)L * sizeof(int));
        b->labels[b->rows + L] = ATTN_TGT_EOS;
        b->rows += L + 1;
    }
}

void attn_s2s_batch_free(attn_s2s_batch_buf *b) {
    free(b->src), free(b->src_len), free(b->tgt), free(b->tgt_len), free(b->labels);
    free(b->logits), free(b->d_logits);
    memset(b, 0, sizeof *b);
}

attn_status attn_s2s_batch_alloc(attn_s2s_batch_buf *b, const attn_pairs *p, int B, int V,
                                 bool d_logits, const char *what, attn_error *err) {
    int S = 1, T = 1;
    for (int i = 0; i < p->src->n; i++) {
        if (src_len(p, i) > S) S = src_len(p, i);
        if (p->tgt_lengths[i] + 1 > T) T = p->tgt_lengths[i] + 1;
    }
    memset(b, 0, sizeof *b);
    b->src = malloc((size_t)B * S * sizeof(int));
    b->src_len = malloc((size_t)B * sizeof(int));
    b->tgt = malloc((size_t)B * T * sizeof(int));
    b->tgt_len = malloc((size_t)B * sizeof(int));
    b->labels = malloc((size_t)B * T * sizeof(int));
    b->logits = malloc((size_t)B * T * V * sizeof(float));
    if (d_logits) b->d_logits = malloc((size_t)B * T * V * sizeof(float));
    if (!b->src || !b->src_len || !b->tgt || !b->tgt_len || !b->labels || !b->logits ||
        (d_logits && !b->d_logits)) {
        attn_s2s_batch_free(b);
        return attn_errorf(err, ATTN_ERR_NOMEM, "%s: out of memory for a batch", what);
    }
    return ATTN_OK;
}

/* The step's loss and gradient are finite (finite: what the gradient sum found); else the
 * error names the first tensor with a NaN/Inf. */
static attn_status check_finite(attn_seq2seq *m, double loss, bool finite, long step,
                                attn_error *err) {
    if (!isfinite(loss))
        return attn_errorf(err, ATTN_ERR_VALUE, "training: the loss is %g at step %ld", loss, step);
    if (finite) return ATTN_OK;
    const float *g = attn_seq2seq_grads(m);
    for (size_t t = 0; t < attn_seq2seq_tensor_count(m); t++)
        for (size_t j = 0; j < attn_seq2seq_tensor_numel(m, t); j++)
            if (!isfinite(g[attn_seq2seq_tensor_offset(m, t) + j]))
                return attn_errorf(err, ATTN_ERR_VALUE,
                                   "training: the gradient of \"%s\" is not finite at step %ld",
                                   attn_seq2seq_tensor_name(m, t), step);
    return attn_errorf(err, ATTN_ERR_VALUE, "training: the gradient is not finite at step %ld",
                       step);
}

/* The step's threads: the pool (borrowed, NULL: the caller's) and the replicas of the model
 * that run its micro-batches (seq2seq_parallel.c). */
typedef struct s2s_threads {
    attn_pool *pool;
    attn_s2s_replicas reps;
} s2s_threads;

/* One epoch over the shuffled pairs; fills loss and tokens. Each step: the batch's micro-batches
 * on the pool, their gradients summed in order (attn_s2s_forward_backward), the NaN/Inf check,
 * Adam by parameter ranges on the pool: the same bytes for every pool (and, over ranks, Adam's
 * moments whole on every rank at the end). */
static attn_status run_epoch(attn_seq2seq *m, const attn_pairs *p, const int *order,
                             const attn_s2s_train_config *cfg, attn_adam *opt,
                             attn_s2s_batch_buf *b, s2s_threads *th, double *loss, long *tokens,
                             attn_error *err) {
    const int n = p->src->n;
    double sum = 0.0;
    int batches = 0;
    attn_seq2seq_set_kernels(m, NULL); /* from here on the values are this process's kernels' */
    *tokens = 0;
    for (int first = 0; first < n; first += cfg->batch_size) {
        const int B = n - first < cfg->batch_size ? n - first : cfg->batch_size;
        attn_s2s_batch_fill(b, p, order, first, B);
        const attn_s2s_batch batch = {B, b->S, b->T, b->src, b->src_len, b->tgt, b->tgt_len};
        double l = NAN;
        bool finite = false;
        attn_status st = attn_s2s_forward_backward(m, &th->reps, th->pool, &batch, b->labels,
                                                   b->logits, b->d_logits, &l, &finite, err);
        if (st == ATTN_OK) st = check_finite(m, l, finite, opt->step + 1, err);
        if (st != ATTN_OK) return st;
        /* the gradient is not read again: zeroed by Adam's pass, not by the next step's */
        st = attn_adam_step_pool_zero_grads(opt, attn_seq2seq_params(m), attn_seq2seq_grads(m),
                                            th->pool, &th->reps.model_clean, err);
        if (st != ATTN_OK) return st;
        sum += l;
        batches++;
        *tokens += b->rows;
    }
    *loss = batches ? sum / batches : NAN;
    return attn_adam_share_pool(opt, th->pool, err); /* the whole state for checkpoints */
}

/* ---- the loop, its state and resuming -------------------------------------------------- */

void attn_s2s_train_state_clear(attn_s2s_train_state *st) {
    if (!st) return;
    free(st->params), free(st->m), free(st->v), free(st->best_params);
    memset(st, 0, sizeof *st);
}

/* FNV-1a over the pairs' lengths and ids: a resume on other data is refused. */
static uint64_t pairs_fingerprint(const attn_pairs *p) {
    uint64_t h = ATTN_HASH_BASIS;
    for (int i = 0; i < p->src->n; i++) {
        h = attn_hash_step(h, (uint32_t)p->src->lengths[i]);
        for (size_t j = p->src->offsets[i]; j < p->src->offsets[i + 1]; j++)
            h = attn_hash_step(h, (uint32_t)p->src->ids[j]);
        h = attn_hash_step(h, (uint32_t)p->tgt_lengths[i]);
        for (size_t j = p->tgt_offsets[i]; j < p->tgt_offsets[i + 1]; j++)
            h = attn_hash_step(h, (uint32_t)p->tgt_ids[j]);
    }
    return h;
}

typedef struct s2s_run {
    attn_seq2seq *m;
    const attn_pairs *train, *heldout;
    const attn_s2s_train_config *cfg;
    attn_adam *opt;
    attn_s2s_batch_buf b;
    int *order;
    attn_best best; /* score: exact match, or minus the loss; params NULL: no keep_best */
    int epoch;
    attn_rng rng;
    size_t P;
    s2s_threads th;
    const attn_s2s_callbacks *cb;
    const attn_s2s_resume *rs;
    attn_s2s_epoch_stats es; /* the epoch's */
    long tokens;
} s2s_run;

/* The same model blueprint (the fields a state must agree on). */
static bool same_config(const attn_seq2seq_config *a, const attn_seq2seq_config *b) {
    return a->arch == b->arch && a->src_vocab == b->src_vocab && a->tgt_vocab == b->tgt_vocab &&
           a->d_model == b->d_model && a->n_heads == b->n_heads && a->ffn_dim == b->ffn_dim &&
           a->enc_layers == b->enc_layers && a->dec_layers == b->dec_layers &&
           a->max_src_len == b->max_src_len && a->max_tgt_len == b->max_tgt_len &&
           a->norm == b->norm && a->activation == b->activation && a->pos == b->pos &&
           a->task == b->task && a->hidden_size == b->hidden_size &&
           a->bidirectional == b->bidirectional;
}

static attn_status check_state(const s2s_run *r, const attn_s2s_train_state *st, attn_error *err) {
    const attn_s2s_train_config *c = r->cfg, *k = &st->train_cfg;
    if (!same_config(attn_seq2seq_config_of(r->m), &st->model_cfg) || st->n_params != r->P)
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "resume: the checkpoint's model (%zu parameters) is not the model "
                           "being trained (%zu parameters)",
                           st->n_params, r->P);
    if (k->batch_size != c->batch_size || k->holdout != c->holdout ||
        k->keep_best != c->keep_best || k->seed != c->seed || k->adam.lr != c->adam.lr ||
        k->adam.beta1 != c->adam.beta1 || k->adam.beta2 != c->adam.beta2 ||
        k->adam.eps != c->adam.eps || k->adam.weight_decay != c->adam.weight_decay)
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "resume: batch size, holdout, keep_best, seed or Adam settings differ "
                           "from the checkpoint's");
    if (st->n_pairs != r->train->src->n || st->data_fingerprint != pairs_fingerprint(r->train))
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "resume: the checkpoint was trained on other pairs (%d; now %d)",
                           st->n_pairs, r->train->src->n);
    if (st->epoch < 0 || st->epoch > c->epochs || st->adam_step < 0 || !st->params || !st->m ||
        !st->v)
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "resume: the checkpoint has done %d epochs, the run has %d", st->epoch,
                           c->epochs);
    if (st->best_epoch < 0 || st->best_epoch > st->epoch ||
        (st->best_epoch > 0) != (r->best.params != NULL && st->epoch > 0) ||
        (st->best_epoch > 0 && !st->best_params))
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "resume: best_epoch %d does not fit epoch %d with keep_best %d",
                           st->best_epoch, st->epoch, c->keep_best);
    return ATTN_OK;
}

/* Puts the state into the run: parameters, Adam, the generator replayed to its epoch. */
static attn_status restore(s2s_run *r, const attn_s2s_train_state *st, attn_error *err) {
    attn_status s = check_state(r, st, err);
    if (s != ATTN_OK) return s;
    const int n = r->train->src->n;
    for (int e = 0; e < st->epoch; e++) attn_rng_shuffle(&r->rng, r->order, n);
    if (r->rng.state != st->rng_state)
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "resume: the checkpoint's generator state does not follow from its "
                           "seed and epoch");
    memcpy(attn_seq2seq_params(r->m), st->params, r->P * sizeof(float));
    memcpy(r->opt->m, st->m, r->P * sizeof(float));
    memcpy(r->opt->v, st->v, r->P * sizeof(float));
    r->opt->step = st->adam_step;
    r->epoch = st->epoch;
    r->best.epoch = st->best_epoch;
    r->best.score = st->best_epoch > 0 ? st->best_score : -INFINITY;
    if (st->best_epoch > 0) memcpy(r->best.params, st->best_params, r->P * sizeof(float));
    return ATTN_OK;
}

static attn_s2s_train_state state_of(const s2s_run *r) {
    attn_s2s_train_state st;
    memset(&st, 0, sizeof st);
    st.model_cfg = *attn_seq2seq_config_of(r->m);
    st.train_cfg = *r->cfg;
    st.n_pairs = r->train->src->n;
    st.data_fingerprint = pairs_fingerprint(r->train);
    st.epoch = r->epoch;
    st.rng_state = r->rng.state;
    st.adam_step = r->opt->step;
    st.n_params = r->P;
    st.params = attn_seq2seq_params(r->m);
    st.m = r->opt->m;
    st.v = r->opt->v;
    st.best_epoch = r->best.epoch;
    st.best_score = r->best.epoch > 0 ? r->best.score : 0.0;
    st.best_params = r->best.epoch > 0 ? r->best.params : NULL;
    return st;
}

static attn_status steps_epoch(void *ctx, attn_error *err) {
    s2s_run *r = ctx;
    attn_rng_shuffle(&r->rng, r->order, r->train->src->n);
    r->es = (attn_s2s_epoch_stats){r->epoch + 1, r->cfg->epochs, 0, 0, NAN, 0, 0, NAN};
    return run_epoch(r->m, r->train, r->order, r->cfg, r->opt, &r->b, &r->th, &r->es.loss,
                     &r->tokens, err);
}

/* The held-out measure of the epoch into es. */
static attn_status score_epoch(void *ctx, double *score, attn_error *err) {
    s2s_run *r = ctx;
    const int n = r->cfg->holdout;
    attn_pool *pool = r->th.pool; /* the same scores for every pool (seq2seq_eval_pool.c) */
    if (r->train->task == ATTN_TASK_COMPOSE) { /* many right answers: the held-out loss */
        attn_status st =
            attn_seq2seq_loss_pool(r->m, r->heldout, 0, n, pool, &r->es.holdout_loss, err);
        *score = -r->es.holdout_loss;
        return st;
    }
    attn_s2s_eval ev;
    attn_status st = attn_seq2seq_evaluate_pool(r->m, r->heldout, 0, n, pool, &ev, err);
    if (st == ATTN_OK) *score = r->es.holdout_exact = ev.exact;
    return st;
}

/* The epoch's stats to on_epoch, then its state to on_state. */
static attn_status report_epoch(void *ctx, const attn_epoch_clock *c, bool *go_on,
                                attn_error *err) {
    s2s_run *r = ctx;
    r->es.steps = r->opt->step;
    r->es.tokens_per_s = (double)r->tokens / (c->t1 - c->t0);
    r->es.elapsed_s = c->t2 - c->start;
    *go_on = !(r->cb && r->cb->on_epoch) || r->cb->on_epoch(&r->es, r->cb->user);
    if (!r->rs || !r->rs->on_state) return ATTN_OK;
    const attn_s2s_train_state state = state_of(r);
    return r->rs->on_state(&state, r->rs->user, err);
}

attn_status attn_seq2seq_train_pool(attn_seq2seq *m, const attn_pairs *train,
                                    const attn_pairs *heldout, const attn_s2s_train_config *cfg,
                                    const attn_s2s_callbacks *cb, const attn_s2s_resume *rs,
                                    attn_pool *pool, attn_error *err) {
    if (!m || !train || !cfg || cfg->epochs < 0 || cfg->batch_size < 1 || cfg->holdout < 0 ||
        (cfg->holdout > 0 && (!heldout || cfg->holdout > heldout->src->n)))
        return attn_errorf(err, ATTN_ERR_ARG,
                           "training: need a model, pairs, epochs >= 0, batch_size >= 1 and at "
                           "most as many held-out pairs as the held-out set has");
    s2s_run r = {.m = m, .train = train, .heldout = heldout, .cfg = cfg, .cb = cb, .rs = rs};
    r.best.score = -INFINITY;
    r.rng = attn_rng_seed(cfg->seed);
    r.P = attn_seq2seq_n_params(m);
    r.th.pool = pool;
    const int n = train->src->n, V = attn_seq2seq_config_of(m)->tgt_vocab;
    attn_status st = attn_adam_create(r.P, &cfg->adam, &r.opt, err);
    if (st != ATTN_OK) return st;
    st = attn_s2s_batch_alloc(&r.b, train, cfg->batch_size, V, true, "training", err);
    r.order = malloc((size_t)n * sizeof *r.order);
    const bool keep = cfg->keep_best && cfg->holdout > 0;
    r.best.params = keep ? malloc(r.P * sizeof(float)) : NULL;
    if (st == ATTN_OK && (!r.order || (keep && !r.best.params)))
        st = attn_errorf(err, ATTN_ERR_NOMEM, "training: out of memory");
    for (int i = 0; st == ATTN_OK && i < n; i++) r.order[i] = i;
    if (st == ATTN_OK && rs && rs->from) st = restore(&r, rs->from, err);
    /* the epochs all done (a resumed run's too): the best epoch's parameters (ties: the later) */
    const attn_epoch_ops o = {.ctx = &r,
                              .steps = steps_epoch,
                              .report = report_epoch,
                              .score = cfg->holdout > 0 ? score_epoch : NULL,
                              .params = attn_seq2seq_params(m),
                              .n = r.P,
                              .best = &r.best,
                              .epoch = &r.epoch,
                              .epochs = cfg->epochs,
                              .restore_after = true};
    if (st == ATTN_OK) st = attn_epoch_loop(&o, err);
    free(r.best.params);
    free(r.order);
    attn_s2s_replicas_free(&r.th.reps);
    attn_s2s_batch_free(&r.b);
    attn_adam_free(r.opt);
    return st;
}

attn_status attn_seq2seq_train_resume(attn_seq2seq *m, const attn_pairs *train,
                                      const attn_pairs *heldout, const attn_s2s_train_config *cfg,
                                      const attn_s2s_callbacks *cb, const attn_s2s_resume *rs,
                                      attn_error *err) {
    return attn_seq2seq_train_pool(m, train, heldout, cfg, cb, rs, NULL, err);
}

attn_status attn_seq2seq_train(attn_seq2seq *m, const attn_pairs *train, const attn_pairs *heldout,
                               const attn_s2s_train_config *cfg, const attn_s2s_callbacks *cb,
                               attn_error *err) {
    return attn_seq2seq_train_resume(m, train, heldout, cfg, cb, NULL, err);
}

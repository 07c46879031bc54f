/* checkpoint.c -- the training state a checkpoint captures (attn_train_state, attn.h): the
 * model and train configs, a fingerprint of the training data, epochs done, the shuffling
 * PRNG state, Adam's step and moments, the parameters and model selection's state. Giving it
 * out and taking it back, with the checks that a state fits the trainer it is put into.
 * No files here: src/io/checkpoint_json.c writes and reads the state as JSON. */
#include "train_internal.h"

#include <inttypes.h>
#include <string.h>

/* FNV-1a over the labels and ids of the data, so a resume on different data is refused. */
static uint64_t data_fingerprint(const attn_dataset *d) {
    /* not ATTN_HASH_BASIS: the basis with its last digit missing, kept because checkpoints
     * store the fingerprint (another start value would refuse every existing checkpoint) */
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < d->n; i++) {
        h = attn_hash_step(h, (uint64_t)(d->labels[i] + 1));
        h = attn_hash_step(h, (uint64_t)d->lengths[i]);
        for (size_t j = d->offsets[i]; j < d->offsets[i + 1]; j++)
            h = attn_hash_step(h, (unsigned)d->ids[j]);
    }
    return h;
}

attn_status attn_trainer_get_state(const attn_trainer *t, attn_train_state *st, attn_error *err) {
    memset(st, 0, sizeof *st);
    attn_status s = attn_model_check_finite(t->model, false, err);
    if (s != ATTN_OK) return s;
    st->model_cfg = *attn_model_config_of(t->model);
    st->train_cfg = t->cfg;
    st->n_sentences = t->data->n;
    st->data_fingerprint = data_fingerprint(t->data);
    st->holdout_separate = t->heldout_separate;
    st->epoch = t->epoch;
    st->rng_state = t->rng.state;
    st->adam_step = t->adam->step;
    st->n_params = attn_model_n_params(t->model);
    st->params = t->best.restored ? t->best.last : attn_model_params(t->model);
    st->m = t->adam->m;
    st->v = t->adam->v;
    st->best_epoch = t->best.epoch;
    st->best_acc = t->best.epoch ? t->best.score : 0.0;
    st->best_params = t->best.epoch ? t->best.params : NULL;
    return ATTN_OK;
}

static bool same_model_config(const attn_model_config *a, const attn_model_config *b) {
    bool tr = a->arch == ATTN_ARCH_TRANSFORMER;
    return a->arch == b->arch && a->vocab_size == b->vocab_size && a->embed_dim == b->embed_dim &&
           a->n_layers == b->n_layers &&
           (tr ? a->n_heads == b->n_heads && a->ffn_dim == b->ffn_dim && a->max_len == b->max_len &&
                     a->norm == b->norm && a->activation == b->activation && a->pos == b->pos &&
                     a->attn_unscaled == b->attn_unscaled
               : a->hidden_size == b->hidden_size);
}

/* ATTN_OK when st can be put into t; otherwise the first reason, naming `src`. */
static attn_status check_state(const attn_trainer *t, const attn_train_state *st, const char *src,
                               attn_error *err) {
    const attn_model_config *mc = attn_model_config_of(t->model);
    const attn_train_config *tc = &st->train_cfg;
    if (!same_model_config(&st->model_cfg, mc))
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "%s: the checkpoint's %s model differs from the model being trained "
                           "(%s)",
                           src, attn_arch_name(st->model_cfg.arch), attn_arch_name(mc->arch));
    if (tc->batch_size != t->cfg.batch_size || tc->bucket != t->cfg.bucket ||
        tc->holdout != t->cfg.holdout || tc->seed != t->cfg.seed ||
        tc->keep_best != t->cfg.keep_best)
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "%s: batch size, bucket, holdout, seed or keep_best differ from the "
                           "trainer's (checkpoint %d/%d/%d/%" PRIu64 "/%d, trainer "
                           "%d/%d/%d/%" PRIu64 "/%d)",
                           src, tc->batch_size, tc->bucket, tc->holdout, tc->seed, tc->keep_best,
                           t->cfg.batch_size, t->cfg.bucket, t->cfg.holdout, t->cfg.seed,
                           t->cfg.keep_best);
    if (tc->warmup != t->cfg.warmup)
        return attn_errorf(
            err, ATTN_ERR_VALUE,
            "%s: the checkpoint's warm-up (%d steps) differs from the trainer's (%d)", src,
            tc->warmup, t->cfg.warmup);
    if (st->n_sentences != t->data->n || st->data_fingerprint != data_fingerprint(t->data)) {
        attn_errorf(err, ATTN_ERR_VALUE,
                    "%s: the checkpoint was trained on different data (%d sentences, "
                    "fingerprint %016" PRIx64 "; now %d sentences)",
                    src, st->n_sentences, st->data_fingerprint, t->data->n);
        attn_error_detail(err, ATTN_CODE_OTHER_DATA, 0, NULL, NULL);
        return ATTN_ERR_VALUE;
    }
    if (st->holdout_separate != t->heldout_separate)
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "%s: the checkpoint's held-out slice was %s, the trainer's is %s", src,
                           st->holdout_separate ? "a separate set" : "split off the training data",
                           t->heldout_separate ? "a separate set" : "split off the training data");
    if (st->epoch < 0 || st->adam_step < 0)
        return attn_errorf(err, ATTN_ERR_VALUE, "%s: bad epoch %d or adam_step %ld", src, st->epoch,
                           st->adam_step);
    size_t n = attn_model_n_params(t->model);
    if (st->n_params != n || !st->params || !st->m || !st->v)
        return attn_errorf(err, ATTN_ERR_SHAPE,
                           "%s: the checkpoint holds %zu parameters, the model has %zu", src,
                           st->n_params, n);
    int best = st->best_epoch;
    if (best < 0 || best > st->epoch || (best > 0) != (t->best.params && st->epoch > 0) ||
        (best > 0 && !st->best_params))
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "%s: best_epoch %d does not fit epoch %d with keep_best %d", src, best,
                           st->epoch, t->cfg.keep_best);
    if (best > 0 && best < st->epoch && memcmp(st->params, st->best_params, n * sizeof(float)) == 0)
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "%s: params equal best_params of epoch %d at epoch %d: the checkpoint "
                           "was written by an older attn that stored the best epoch's "
                           "parameters in place of the last epoch's, so the run cannot be "
                           "continued exactly; train it again",
                           src, best, st->epoch);
    return ATTN_OK;
}

attn_status attn_trainer_set_state(attn_trainer *t, const attn_train_state *st, const char *source,
                                   attn_error *err) {
    if (!t || !st) return attn_errorf(err, ATTN_ERR_ARG, "trainer: NULL trainer or state");
    attn_status s = check_state(t, st, source ? source : "training state", err);
    if (s != ATTN_OK) return s;
    size_t n = st->n_params;
    /* memmove: st may point at this trainer's own arrays (attn_trainer_get_state) */
    memmove(attn_model_params(t->model), st->params, n * sizeof(float));
    t->best.restored = false;
    memmove(t->adam->m, st->m, n * sizeof(float));
    memmove(t->adam->v, st->v, n * sizeof(float));
    t->adam->step = st->adam_step;
    t->epoch = st->epoch;
    t->rng.state = st->rng_state;
    t->best.epoch = st->best_epoch;
    t->best.score = st->best_acc;
    if (st->best_epoch > 0) memmove(t->best.params, st->best_params, n * sizeof(float));
    return ATTN_OK;
}

/* experiments_train.c -- what the training experiments (path-length, heads, scaling, norm)
 * share: train one model with the library's trainer, recording the loss of every epoch and
 * turning a divergence (NaN/Inf in the loss or a gradient) into a measured result instead of
 * an error; a plain training loop for a model built by the caller; the four test sets;
 * accuracy on them. */
#include "attn_kernels.h"
#include "experiments_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct train_watch {
    const exp_train_spec *spec;
    attn_model *m;
    double *loss;
    attn_status st; /* of the spec's after_epoch */
    attn_error *err;
} train_watch;

static bool on_epoch(const attn_epoch_stats *s, void *user) {
    train_watch *w = user;
    if (s->epoch >= 1 && s->epoch <= w->spec->epochs) w->loss[s->epoch - 1] = s->loss;
    if (w->spec->after_epoch) w->st = w->spec->after_epoch(w->m, s->epoch, w->spec->user, w->err);
    return w->st == ATTN_OK;
}

attn_status exp_train(const exp_train_spec *spec, attn_model **out, double *loss,
                      long *diverged_step, attn_error *err) {
    *out = NULL;
    *diverged_step = -1;
    for (int e = 0; e < spec->epochs; e++) loss[e] = NAN;
    attn_model *m = NULL;
    attn_trainer *t = NULL;
    attn_train_config tc = attn_train_config_default();
    tc.epochs = spec->epochs;
    tc.holdout = 0;
    tc.keep_best = 0;
    tc.seed = spec->seed;
    tc.warmup = spec->warmup;
    if (spec->lr > 0) tc.adam.lr = (float)spec->lr;
    attn_status st = attn_model_create(&spec->cfg, spec->seed, &m, err);
    if (!st) st = attn_trainer_create(m, spec->train, &tc, &t, err);
    if (!st) {
        train_watch w = {spec, m, loss, ATTN_OK, err};
        attn_train_callbacks cb = {.on_epoch = on_epoch, .user = &w};
        attn_error terr = {0};
        st = attn_trainer_run(t, &cb, &terr);
        if (w.st != ATTN_OK) {
            st = w.st;
        } else if (st == ATTN_ERR_VALUE) { /* NaN or Inf: diverged, a result */
            *diverged_step = attn_trainer_steps(t) + 1;
            st = ATTN_OK;
            attn_model_free(m);
            m = NULL;
        } else if (st != ATTN_OK) {
            *err = terr;
        }
    }
    attn_trainer_free(t);
    if (st) {
        attn_model_free(m);
        return st;
    }
    *out = m;
    return ATTN_OK;
}

static const attn_set test_sets[ATTN_N_TEST_SETS] = {ATTN_SET_PLAIN, ATTN_SET_DISTRACTOR,
                                                     ATTN_SET_FILL4, ATTN_SET_FILL8};

attn_status exp_test_sets(int n, uint64_t seed, attn_dataset *sets[ATTN_N_TEST_SETS],
                          attn_error *err) {
    attn_status st = ATTN_OK;
    for (int s = 0; s < ATTN_N_TEST_SETS; s++) sets[s] = NULL;
    for (int s = 0; !st && s < ATTN_N_TEST_SETS; s++)
        st = attn_data_generate(test_sets[s], n, seed, &sets[s], err);
    return st;
}

void exp_test_sets_free(attn_dataset *sets[ATTN_N_TEST_SETS]) {
    for (int s = 0; s < ATTN_N_TEST_SETS; s++) attn_dataset_free(sets[s]), sets[s] = NULL;
}

attn_status exp_accuracy(attn_model *m, attn_dataset *const sets[ATTN_N_TEST_SETS], double *mean,
                         double acc[ATTN_N_TEST_SETS], attn_error *err) {
    double sum = 0.0, a[ATTN_N_TEST_SETS];
    for (int s = 0; s < ATTN_N_TEST_SETS; s++) {
        if (!m) { /* a diverged run: its parameters are unusable, it answers at chance */
            a[s] = 0.5;
        } else {
            attn_status st = attn_evaluate(m, sets[s], 0, sets[s]->n, 256, &a[s], err);
            if (st) return st;
        }
        sum += a[s];
        if (acc) acc[s] = a[s];
    }
    *mean = sum / ATTN_N_TEST_SETS;
    return ATTN_OK;
}

/* Adam (PyTorch's defaults), batches of `batch`, shuffled each epoch with the project PRNG. */
attn_status exp_train_loop(attn_model *m, const attn_dataset *d, int epochs, int batch,
                           uint64_t seed, attn_error *err) {
    int max_len = 1;
    for (int i = 0; i < d->n; i++) max_len = d->lengths[i] > max_len ? d->lengths[i] : max_len;
    attn_adam *opt = NULL;
    int *perm = malloc((size_t)d->n * sizeof *perm);
    int *ids = malloc((size_t)batch * max_len * sizeof *ids);
    int *lengths = malloc((size_t)batch * sizeof *lengths);
    float *logits = malloc((size_t)batch * 3 * sizeof *logits);
    float *labels = logits ? logits + batch : NULL, *d_logits = logits ? logits + 2 * batch : NULL;
    attn_status st = perm && ids && lengths && logits
                         ? ATTN_OK
                         : attn_errorf(err, ATTN_ERR_NOMEM, "training: out of memory");
    if (!st) st = attn_adam_create(attn_model_n_params(m), NULL, &opt, err);
    attn_rng r = attn_rng_seed(seed);
    for (int i = 0; !st && i < d->n; i++) perm[i] = i;
    for (int e = 0; !st && e < epochs; e++) {
        attn_rng_shuffle(&r, perm, d->n);
        for (int first = 0; !st && first < d->n; first += batch) {
            const int B = d->n - first < batch ? d->n - first : batch;
            int T = 1;
            for (int i = 0; i < B; i++)
                T = d->lengths[perm[first + i]] > T ? d->lengths[perm[first + i]] : T;
            memset(ids, 0, (size_t)B * T * sizeof *ids);
            for (int i = 0; i < B; i++) {
                const int s = perm[first + i];
                lengths[i] = d->lengths[s];
                labels[i] = (float)d->labels[s];
                memcpy(ids + (size_t)i * T, d->ids + d->offsets[s],
                       (size_t)lengths[i] * sizeof *ids);
            }
            attn_batch b = {B, T, ids, lengths};
            attn_model_zero_grad(m);
            st = attn_model_forward(m, &b, logits, err);
            memset(d_logits, 0, (size_t)B * sizeof *d_logits);
            attn_bce_backward(d_logits, 1.0f, logits, labels, B);
            if (!st) st = attn_model_backward(m, &b, d_logits, err);
            if (!st) attn_adam_step(opt, attn_model_params(m), attn_model_grads(m));
        }
    }
    attn_adam_free(opt);
    free(perm);
    free(ids);
    free(lengths);
    free(logits);
    return st;
}

/* experiments_train.c -- what the training experiments (path-length, heads, scaling, norm)
 * share: train one model with the library's trainer, recording the loss of every epoch and
 * turning a divergence (NaN/Inf in the loss or a gradient) into a measured result instead of
 * an error; the four test sets; accuracy on them. */
#include "experiments_internal.h"

#include <math.h>
#include <stdio.h>
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

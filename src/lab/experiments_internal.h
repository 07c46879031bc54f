/* experiments_internal.h -- what the experiment files (experiments_*.c) share: recording
 * measurements into a result, the table's run/plot functions, small statistics. */
#ifndef ATTN_EXPERIMENTS_INTERNAL_H
#define ATTN_EXPERIMENTS_INTERNAL_H

#include "attn_experiments.h"
#include "attn_kernels.h"

#include <stdarg.h>

/* Records a number / an array (copied) under name; ATTN_ERR_NOMEM on failure. */
attn_status exp_put(attn_experiment_result *r, const char *name, double value, attn_error *err);
attn_status exp_put_array(attn_experiment_result *r, const char *name, int n, const double *values,
                          attn_error *err);
/* The value of a scalar measurement, NaN when absent. */
double exp_get(const attn_experiment_result *r, const char *name);
/* Sets res->verdict and res->why (printf format). */
void exp_verdict(attn_experiment_result *r, attn_verdict v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* opts->progress, when set. */
void exp_progress(const attn_experiment_opts *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Loads opts->weights_dir/<arch>-seed<seed>.json (attn_weights_load_json). */
attn_status exp_load_weights(const attn_experiment_opts *o, const char *arch, int seed,
                             attn_model **out, attn_error *err);
/* Least-squares slope of log(y) against log(x) over the n points (x, y > 0). */
double exp_loglog_slope(const double *x, const double *y, int n);
/* qsort's comparison of doubles, ascending. */
int exp_cmp_double(const void *a, const void *b);
/* Times run(ctx) repeatedly: at least 3 runs, then on until min_total seconds or max_reps runs;
 * times[0..*n) are the runs' seconds, sorted ascending (times[0] the fastest, times[*n / 2] the
 * median). The first failing run's status is returned. */
attn_status exp_time_runs(attn_status (*run)(void *ctx, attn_error *err), void *ctx,
                          double min_total, int max_reps, double *times, int *n, attn_error *err);
/* run(ctx) once with the sgemm counter set to *counts (zeroed first), then the caller's again. */
attn_status exp_count_products(attn_status (*run)(void *ctx, attn_error *err), void *ctx,
                               attn_flop_counts *counts, attn_error *err);
/* The experiment's independent runs: job(j, out + j * width) for j in 0..n-1 through
 * opts->map (spread over processes by the caller), else one after another here. */
attn_status exp_map(const attn_experiment_opts *o, int n, int width, attn_experiment_job job,
                    void *ctx, double *out, attn_error *err);

/* ---- training (experiments_train.c) ---- */
typedef struct exp_train_spec {
    attn_model_config cfg;
    uint64_t seed;             /* initialisation and shuffling */
    const attn_dataset *train; /* all of it is trained on (no held-out slice, last epoch kept) */
    int epochs, warmup;        /* warm-up in Adam steps, 0 = off */
    double lr;                 /* 0: Adam's default 1e-3 */
    /* after every epoch (may be NULL), e.g. to measure the model during training */
    attn_status (*after_epoch)(attn_model *m, int epoch, void *user, attn_error *err);
    void *user;
} exp_train_spec;
/* Trains a new model: *out the trained model, loss[epochs] each epoch's mean training loss
 * (NaN after a divergence). A divergence (NaN/Inf in the loss or a gradient) is a result, not
 * an error: *out is then NULL and *diverged_step the 1-based Adam step; otherwise -1. */
attn_status exp_train(const exp_train_spec *spec, attn_model **out, double *loss,
                      long *diverged_step, attn_error *err);
/* Trains a model the caller built (any configuration): Adam with PyTorch's defaults, batches of
 * `batch` sentences of d, reshuffled each epoch from seed; every sentence, every epoch. */
attn_status exp_train_loop(attn_model *m, const attn_dataset *d, int epochs, int batch,
                           uint64_t seed, attn_error *err);
/* The four test sets (plain, distractor, fill4, fill8) of n sentences and seed. */
attn_status exp_test_sets(int n, uint64_t seed, attn_dataset *sets[ATTN_N_TEST_SETS],
                          attn_error *err);
void exp_test_sets_free(attn_dataset *sets[ATTN_N_TEST_SETS]);
/* Accuracy on each set (acc may be NULL) and their mean; m NULL (diverged): 0.5 each. */
attn_status exp_accuracy(attn_model *m, attn_dataset *const sets[ATTN_N_TEST_SETS], double *mean,
                         double acc[ATTN_N_TEST_SETS], attn_error *err);

/* ---- the experiments (one file each) ----
 * exp_<name>_run measures into r; exp_<name>_plot draws r's chart at path (.png or .svg);
 * exp_<name>_verdict sets r's verdict and why from the measurements already in r by the
 * experiment's rule (the run calls it last; tests/lab/test_verdicts.c feeds it fixed numbers). */
#define EXP_DECLARE_RUN(name)                                                                      \
    attn_status exp_##name##_run(const attn_experiment_opts *o, attn_experiment_result *r,         \
                                 attn_error *err);                                                 \
    attn_status exp_##name##_plot(const attn_experiment_result *r, const char *path,               \
                                  attn_error *err)
#define EXP_DECLARE(name)                                                                          \
    EXP_DECLARE_RUN(name);                                                                         \
    void exp_##name##_verdict(attn_experiment_result *r)
EXP_DECLARE(convolution);
EXP_DECLARE_RUN(convolution2d); /* its verdict is the run's own */
EXP_DECLARE(embedding);
EXP_DECLARE(parallel);
EXP_DECLARE(equivariance);
EXP_DECLARE(path_length);
EXP_DECLARE(heads);
EXP_DECLARE(scaling);
EXP_DECLARE(norm);
EXP_DECLARE(extrapolation);
#endif

/* experiments_internal.h -- what the experiment files (experiments_*.c) share: recording
 * measurements into a result, the table's run/plot functions, small statistics. */
#ifndef ATTN_EXPERIMENTS_INTERNAL_H
#define ATTN_EXPERIMENTS_INTERNAL_H

#include "attn_experiments.h"

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
/* Loads opts->weights_dir/<arch>-seed<seed>.json through opts->load. */
attn_status exp_load_weights(const attn_experiment_opts *o, const char *arch, int seed,
                             attn_model **out, attn_error *err);
/* Least-squares slope of log(y) against log(x) over the n points (x, y > 0). */
double exp_loglog_slope(const double *x, const double *y, int n);
double exp_seconds(void); /* monotonic clock */

/* ---- the experiments (one file each) ---- */
attn_status exp_convolution_run(const attn_experiment_opts *o, attn_experiment_result *r,
                                attn_error *err);
attn_status exp_convolution_plot(const attn_experiment_result *r, const char *path,
                                 attn_error *err);
attn_status exp_embedding_run(const attn_experiment_opts *o, attn_experiment_result *r,
                              attn_error *err);
attn_status exp_embedding_plot(const attn_experiment_result *r, const char *path, attn_error *err);
attn_status exp_parallel_run(const attn_experiment_opts *o, attn_experiment_result *r,
                             attn_error *err);
attn_status exp_parallel_plot(const attn_experiment_result *r, const char *path, attn_error *err);
attn_status exp_equivariance_run(const attn_experiment_opts *o, attn_experiment_result *r,
                                 attn_error *err);
attn_status exp_equivariance_plot(const attn_experiment_result *r, const char *path,
                                  attn_error *err);

attn_status exp_extrapolation_run(const attn_experiment_opts *o, attn_experiment_result *r,
                                  attn_error *err);
attn_status exp_extrapolation_plot(const attn_experiment_result *r, const char *path,
                                   attn_error *err);
#endif

/* attn_experiments.h -- the write-up's claims as experiments (src/lab/experiments*.c).
 *
 *     const attn_experiment *e = attn_experiment_find("embedding");
 *     attn_experiment_opts o = {.quick = true};              // weights from weights/
 *     attn_experiment_result r;
 *     if (attn_experiment_run(e, &o, &r, &err) == ATTN_OK)
 *         printf("%s: %s\n", attn_verdict_name(r.verdict), r.why);
 *     attn_experiment_result_free(&r);
 *
 * Each experiment states a claim of the write-up, measures it on the course-review task with
 * attn's own kernels and models, and reaches a verdict ("holds", "does not hold", "mixed") from
 * the numbers by a rule that is written in the code and printed with the result (never a
 * verdict written in advance). The measurements are named numbers or arrays of numbers; a chart
 * is drawn from them through attn_plot.h.
 *
 * The table (attn_experiment_count / attn_experiment_at) lists the experiments that are
 * implemented; adding one is a run and a plot function plus one table row in experiments.c.
 *
 * Weights: experiments that look at trained models (embedding, equivariance) read
 * opts->weights_dir/<model>-seed<S>.json themselves (attn_weights_load_json: lab sits above io).
 */
#ifndef ATTN_EXPERIMENTS_H
#define ATTN_EXPERIMENTS_H

#include "attn_io.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum attn_verdict {
    ATTN_VERDICT_HOLDS,
    ATTN_VERDICT_DOES_NOT_HOLD,
    ATTN_VERDICT_MIXED
} attn_verdict;
const char *attn_verdict_name(attn_verdict v); /* "holds", "does not hold", "mixed" */

/* One independent run of an experiment (a seed, a size, a setting): fills out[width]. */
typedef attn_status (*attn_experiment_job)(int job, double *out, void *ctx, attn_error *err);

/* One measurement: a named number (n == 1) or a named array of numbers. */
typedef struct attn_measure {
    char name[64];  /* "max_abs_error", "rnn.batch1.seconds_per_sentence", ... */
    int n;          /* values */
    double *values; /* [n] */
} attn_measure;

typedef struct attn_experiment_result {
    attn_verdict verdict;
    char why[1024]; /* the rule applied to the measured numbers, in words and numbers */
    int n_measures;
    attn_measure *measures; /* [n_measures] in the order they were measured */
    int cap;
    double seconds; /* wall time of the run */
} attn_experiment_result;

typedef struct attn_experiment_opts {
    int seeds;               /* 0: the experiment's default (quick: 1) */
    bool quick;              /* the CI size: seconds, not minutes */
    bool base;               /* parallel-decoder: section 6's base sizes (the others: unused) */
    const char *weights_dir; /* trained weights (<model>-seed<S>.json); NULL: "weights" */
    /* Progress (may be NULL): called between steps with a short description. */
    void (*progress)(const char *what, void *user);
    void *user;
    /* Runs job(j, out + j * width) for j in 0..n-1, jobs that do not depend on each other, and
     * returns the first failure. NULL: one after another in this process. The command sets it
     * to spread them over the ranks of mpirun (each job must give the same numbers wherever it
     * runs); attn_experiment_spreads_runs says which experiments call it. */
    attn_status (*map)(int n, int width, attn_experiment_job job, void *ctx, double *out,
                       void *map_user, attn_error *err);
    void *map_user;
} attn_experiment_opts;

typedef struct attn_experiment {
    const char *name;    /* "convolution" */
    const char *claim;   /* the claim, one paragraph */
    const char *section; /* of the write-up: "§9, §10" */
    const char *source;  /* paper, or "" */
    const char *rule;    /* how the verdict follows from the measurements */
    attn_status (*run)(const attn_experiment_opts *opts, attn_experiment_result *res,
                       attn_error *err);
    /* Draws the result's chart to path (.png or .svg) through attn_plot.h. */
    attn_status (*plot)(const attn_experiment_result *res, const char *path, attn_error *err);
} attn_experiment;

int attn_experiment_count(void);
const attn_experiment *attn_experiment_at(int i);
const attn_experiment *attn_experiment_find(const char *name); /* NULL if unknown */

/* true when e's independent runs go through opts->map (norm, extrapolation, heads): a caller
 * that spreads them runs e on every process; the others gain nothing from more than one. */
bool attn_experiment_spreads_runs(const attn_experiment *e);
/* Runs e into *res (zeroed first; free with attn_experiment_result_free, also on failure). */
attn_status attn_experiment_run(const attn_experiment *e, const attn_experiment_opts *opts,
                                attn_experiment_result *res, attn_error *err);
void attn_experiment_result_free(attn_experiment_result *res);
/* The measurement named `name`, or NULL. */
const attn_measure *attn_experiment_measure(const attn_experiment_result *res, const char *name);

#ifdef __cplusplus
}
#endif
#endif

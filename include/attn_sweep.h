/* attn_sweep.h -- grids of training runs (sweep.c, beside the experiments): every point of a
 * grid of model and training options is trained and evaluated on the four test sets of its
 * seed.
 *
 *     attn_sweep *s;
 *     attn_sweep_create(ATTN_ARCH_TRANSFORMER, "embed-dim=16,32 heads=1,2 seed=1..3",
 *                       "epochs=5", &s, &err);           // 12 points, all checked up front
 *     for (int i = 0; i < attn_sweep_n_points(s); i++)
 *         attn_sweep_run_point(s, i, &res[i], &err);      // independent and deterministic
 *     attn_sweep_summarise(s, res, &sum, &err);          // mean and spread over the seeds
 *     attn_sweep_plot(s, &sum, axis, "acc.png", &err);   // accuracy against one option
 *
 * A grid is "NAME=VALUES ..." (white space between options): VALUES is a comma-separated list
 * (16,32,64; post,pre; 0.001,0.003) where an integer item may be a range A..B (seed=1..10).
 * The options: embed-dim, hidden, heads, ffn-dim, layers, max-len, norm, activation, pos (as
 * `attn train` has them, for the models they apply to), seed, epochs, batch, lr, warmup,
 * train-size, holdout (0: no held-out set, the last epoch is kept). The fixed settings (`set`) use
 * the same syntax with one value each. Points are numbered with the last grid option varying
 * fastest. Each point is a run independent of the others: the same point gives the same bytes
 * wherever and whenever it runs.
 */
#ifndef ATTN_SWEEP_H
#define ATTN_SWEEP_H

#include "attn.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ATTN_SWEEP_MAX_AXES   16
#define ATTN_SWEEP_MAX_POINTS 100000

typedef struct attn_sweep_axis {
    const char *name; /* "embed-dim" (static) */
    int n;            /* values */
    double *values;   /* [n] numbers; a choice (norm, activation, pos) holds its enum value */
    bool fixed;       /* from `set` (one value), not swept */
} attn_sweep_axis;

typedef struct attn_sweep {
    attn_arch arch;
    int n_axes;
    attn_sweep_axis axes[ATTN_SWEEP_MAX_AXES]; /* the grid's in its order, then the fixed */
    int n_points;                              /* product of the grid axes' sizes */
    int test_size;                             /* sentences per test set (1000) */
    int eval_batch;                            /* 1: exact mode */
} attn_sweep;

/* Parses grid and set (may be NULL) for arch and checks every point's model and training
 * configuration; errors (ATTN_ERR_ARG) name the option, the value or the point at fault. */
attn_status attn_sweep_create(attn_arch arch, const char *grid, const char *set, attn_sweep **out,
                              attn_error *err);
void attn_sweep_free(attn_sweep *s);
int attn_sweep_n_points(const attn_sweep *s);
/* The index into s->axes[axis].values that point uses (0 for a fixed axis). */
int attn_sweep_value_index(const attn_sweep *s, int point, int axis);
/* Value k of axis as written on the command line: "32", "pre", "0.001". */
void attn_sweep_value_text(const attn_sweep *s, int axis, int k, char *buf, size_t size);
/* "embed-dim=32 heads=2 seed=3": the point's grid options. */
void attn_sweep_point_name(const attn_sweep *s, int point, char *buf, size_t size);
/* The configurations of a point (the defaults of attn_model_config_default and
 * attn_train_config_default, then the fixed options, then the point's). */
attn_status attn_sweep_point_config(const attn_sweep *s, int point, attn_model_config *mc,
                                    attn_train_config *tc, int *train_size, attn_error *err);

typedef struct attn_sweep_result {
    double acc[ATTN_N_TEST_SETS]; /* plain, distractor, fill4, fill8 */
    size_t n_params;
    double train_s, eval_s; /* wall time: differs from run to run, keep it apart */
} attn_sweep_result;

/* Trains point's model on its seed's training set (the seed's held-out set picks the best
 * epoch) and evaluates it on its seed's four test sets. */
attn_status attn_sweep_run_point(const attn_sweep *s, int point, attn_sweep_result *out,
                                 attn_error *err);

/* The points grouped over the seed: one group per combination of the other grid options. */
typedef struct attn_sweep_group {
    int first_point; /* a point of the group (its options, seed aside) */
    int n_seeds;
    double mean[ATTN_N_TEST_SETS + 1]; /* per test set, then the mean over the four */
    double sd[ATTN_N_TEST_SETS + 1];   /* sample standard deviation over seeds (0: one seed) */
    double lo[ATTN_N_TEST_SETS + 1], hi[ATTN_N_TEST_SETS + 1]; /* range over seeds */
} attn_sweep_group;

typedef struct attn_sweep_summary {
    int n_groups;
    attn_sweep_group *groups; /* [n_groups] in point order */
} attn_sweep_summary;

attn_status attn_sweep_summarise(const attn_sweep *s, const attn_sweep_result *res,
                                 attn_sweep_summary *out, attn_error *err);
void attn_sweep_summary_free(attn_sweep_summary *sum);
/* The accuracy (mean over the four test sets) against the values of grid axis `axis`, one
 * line per combination of the other non-seed options, the seeds' range as a band. */
attn_status attn_sweep_plot(const attn_sweep *s, const attn_sweep_summary *sum, int axis,
                            const char *path, attn_error *err);

#ifdef __cplusplus
}
#endif
#endif

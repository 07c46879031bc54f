/* experiments_extrapolation.c -- do position schemes carry a Transformer past the sentence
 * lengths it was trained on? (the write-up's §4 and §10; Press, Smith, Lewis 2022)
 *
 * For each position scheme (learned, sinusoidal, rope, alibi, none) and seed: the default
 * Transformer (D 32, 2 heads, 2 layers, pre-norm) with max_len 121 is trained on sentences of
 * TRAIN_MIN..TRAIN_MAX words (attn_data_generate_lengths: the task's core clause among filler
 * phrases) and tested on sentences of the training lengths and on two longer ranges. Every
 * model has 121 positions, so `learned` has a row for every test position, but rows past
 * TRAIN_MAX + 1 never receive a gradient: they stay at their initial value (the sinusoid table
 * times 2, docs/transformer-positions.md), which is what it extrapolates with.
 *
 * Verdict (the table row's rule): the drop of a scheme is its accuracy on the training lengths
 * minus its accuracy on the longest range (percentage points, mean over seeds). */
#include "experiments_internal.h"

#include "attn_kernels.h"
#include "attn_plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRAIN_MIN  8
#define TRAIN_MAX  30
#define MAX_WORDS  120
#define N_RANGES   3
#define N_SCHEMES  5
#define DEGRADE_PP 5.0 /* a drop of at least this many points is a degradation */
#define BATCH      32

static const int range_lo[N_RANGES] = {TRAIN_MIN, TRAIN_MAX + 1, 61};
static const int range_hi[N_RANGES] = {TRAIN_MAX, 60, MAX_WORDS};
static const char *const range_label[N_RANGES] = {"8-30 (trained)", "31-60", "61-120"};
static const attn_pos schemes[N_SCHEMES] = {ATTN_POS_LEARNED, ATTN_POS_SINUSOIDAL, ATTN_POS_ROPE,
                                            ATTN_POS_ALIBI, ATTN_POS_NONE};

/* acc[N_RANGES] (percent) of one scheme trained with one seed. */
static attn_status one_model(const attn_experiment_opts *o, attn_pos pos, int seed,
                             const attn_dataset *train_set, attn_dataset *const *tests, double *acc,
                             attn_error *err) {
    attn_model_config cfg = attn_model_config_default(ATTN_ARCH_TRANSFORMER);
    cfg.pos = pos;
    cfg.max_len = MAX_WORDS + 1;
    attn_model *m = NULL;
    exp_progress(o, "extrapolation: training %s, seed %d", attn_pos_name(pos), seed);
    attn_status st = attn_model_create(&cfg, (uint64_t)seed, &m, err);
    if (!st) st = exp_train_loop(m, train_set, o->quick ? 6 : 20, BATCH, (uint64_t)seed, err);
    for (int k = 0; !st && k < N_RANGES; k++) {
        st = attn_evaluate(m, tests[k], 0, tests[k]->n, 64, &acc[k], err);
        acc[k] *= 100.0;
    }
    attn_model_free(m);
    return st;
}

/* One job: the scheme p = job % N_SCHEMES trained with seed 1 + job / N_SCHEMES on that
 * seed's sentences; out[N_RANGES] its accuracies (percent). */
typedef struct extra_jobs {
    const attn_experiment_opts *o;
    int n_train, n_test;
} extra_jobs;

static attn_status extra_job(int job, double *out, void *ctx, attn_error *err) {
    const extra_jobs *c = ctx;
    const int p = job % N_SCHEMES, s = 1 + job / N_SCHEMES;
    attn_dataset *train_set = NULL, *tests[N_RANGES] = {NULL};
    attn_status st =
        attn_data_generate_lengths(c->n_train, (uint64_t)s, TRAIN_MIN, TRAIN_MAX, &train_set, err);
    for (int k = 0; !st && k < N_RANGES; k++) /* another seed: other sentences */
        st = attn_data_generate_lengths(c->n_test, 1000 + (uint64_t)s, range_lo[k], range_hi[k],
                                        &tests[k], err);
    if (!st) st = one_model(c->o, schemes[p], s, train_set, tests, out, err);
    attn_dataset_free(train_set);
    for (int k = 0; k < N_RANGES; k++) attn_dataset_free(tests[k]);
    return st;
}

attn_status exp_extrapolation_run(const attn_experiment_opts *o, attn_experiment_result *r,
                                  attn_error *err) {
    const int seeds = o->seeds > 0 ? o->seeds : o->quick ? 1 : 3;
    const int n_train = o->quick ? 4000 : 8000, n_test = o->quick ? 300 : 2000;
    double mean[N_SCHEMES][N_RANGES] = {{0}}, lo[N_SCHEMES][N_RANGES], hi[N_SCHEMES][N_RANGES];
    const int n_jobs = seeds * N_SCHEMES;
    double *runs = malloc((size_t)n_jobs * N_RANGES * sizeof *runs); /* [seed][scheme][range] */
    if (!runs) return attn_errorf(err, ATTN_ERR_NOMEM, "extrapolation: out of memory");
    extra_jobs jobs = {o, n_train, n_test};
    attn_status st = exp_map(o, n_jobs, N_RANGES, extra_job, &jobs, runs, err);
    for (int s = 1; !st && s <= seeds; s++)
        for (int p = 0; !st && p < N_SCHEMES; p++) {
            const double *acc = runs + ((size_t)(s - 1) * N_SCHEMES + (size_t)p) * N_RANGES;
            for (int k = 0; !st && k < N_RANGES; k++) {
                mean[p][k] += acc[k] / seeds;
                lo[p][k] = s == 1 || acc[k] < lo[p][k] ? acc[k] : lo[p][k];
                hi[p][k] = s == 1 || acc[k] > hi[p][k] ? acc[k] : hi[p][k];
            }
        }
    free(runs);
    if (!st) st = exp_put(r, "seeds", seeds, err);
    if (!st) st = exp_put(r, "train_max_words", TRAIN_MAX, err);
    double drop[N_SCHEMES];
    for (int p = 0; !st && p < N_SCHEMES; p++) {
        char k[64];
        const char *name = attn_pos_name(schemes[p]);
        snprintf(k, sizeof k, "%s.accuracy_percent", name);
        st = exp_put_array(r, k, N_RANGES, mean[p], err);
        snprintf(k, sizeof k, "%s.accuracy_min", name);
        if (!st) st = exp_put_array(r, k, N_RANGES, lo[p], err);
        snprintf(k, sizeof k, "%s.accuracy_max", name);
        if (!st) st = exp_put_array(r, k, N_RANGES, hi[p], err);
        drop[p] = mean[p][0] - mean[p][N_RANGES - 1];
        snprintf(k, sizeof k, "%s.drop_points", name);
        if (!st) st = exp_put(r, k, drop[p], err);
    }
    if (st) return st;
    exp_extrapolation_verdict(r);
    return ATTN_OK;
}

/* holds if the sinusoidal table loses at least DEGRADE_PP points from the training lengths to
 * the longest sentences while rope and alibi both lose less; mixed if one of the two. */
void exp_extrapolation_verdict(attn_experiment_result *r) {
    double drop[N_SCHEMES];
    for (int p = 0; p < N_SCHEMES; p++) {
        char k[64];
        snprintf(k, sizeof k, "%s.drop_points", attn_pos_name(schemes[p]));
        drop[p] = exp_get(r, k);
    }
    const double d_sin = drop[1], d_rope = drop[2], d_alibi = drop[3];
    const bool sin_degrades = d_sin >= DEGRADE_PP;
    const bool rel_hold = d_rope < DEGRADE_PP && d_alibi < DEGRADE_PP;
    exp_verdict(r,
                sin_degrades && rel_hold   ? ATTN_VERDICT_HOLDS
                : sin_degrades || rel_hold ? ATTN_VERDICT_MIXED
                                           : ATTN_VERDICT_DOES_NOT_HOLD,
                "accuracy drop from the training lengths (%d-%d words) to 61-120 words: "
                "sinusoidal %.1f points (%s %.0f), rope %.1f and alibi %.1f (%s %.0f); "
                "learned %.1f, none %.1f",
                TRAIN_MIN, TRAIN_MAX, d_sin, sin_degrades ? ">=" : "<", DEGRADE_PP, d_rope, d_alibi,
                rel_hold ? "both <" : "not both <", DEGRADE_PP, drop[0], drop[4]);
}

attn_status exp_extrapolation_plot(const attn_experiment_result *r, const char *path,
                                   attn_error *err) {
    static const double x[N_RANGES] = {0, 1, 2};
    attn_plot_series s[N_SCHEMES];
    for (int p = 0; p < N_SCHEMES; p++) {
        char k[3][64];
        const char *name = attn_pos_name(schemes[p]);
        snprintf(k[0], sizeof k[0], "%s.accuracy_percent", name);
        snprintf(k[1], sizeof k[1], "%s.accuracy_min", name);
        snprintf(k[2], sizeof k[2], "%s.accuracy_max", name);
        const attn_measure *m[3];
        for (int j = 0; j < 3; j++) {
            m[j] = attn_experiment_measure(r, k[j]);
            if (!m[j] || m[j]->n != N_RANGES)
                return attn_errorf(err, ATTN_ERR_ARG, "extrapolation plot: no '%s' in the result",
                                   k[j]);
        }
        s[p] = (attn_plot_series){name,         N_RANGES,     x,    m[0]->values,
                                  m[1]->values, m[2]->values, true, schemes[p] == ATTN_POS_NONE};
    }
    /* the y title shorter than the plot is high: a long one runs off the canvas */
    const attn_plot pl = {.title = "Trained on 8-30 words, tested on longer sentences (band: "
                                   "min-max over seeds)",
                          .xlabel = "test sentence length (words)",
                          .ylabel = "test accuracy (%)",
                          .key = "bottom left",
                          .n_series = N_SCHEMES,
                          .series = s,
                          .n_x_labels = N_RANGES,
                          .x_labels = range_label};
    return attn_plot_lines(&pl, path, err);
}

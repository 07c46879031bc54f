/* experiments_norm.c -- `attn experiment norm` (write-up §6, Xiong et al. 2020): post-norm
 * Transformers (LayerNorm after each residual sum, the original layout) need a learning-rate
 * warm-up to train as they get deeper; pre-norm ones (LayerNorm inside the residual branch) do
 * not.
 *
 * Measured: Transformers of the write-up's width (D = 32, 2 heads, F = 64) at 2, 6 and 12
 * layers (quick: 2 and 4, too short to learn the task), post- and pre-norm, trained with Adam (lr
 * 1e-3) without and with a linear warm-up over the first 4 epochs (the trainer's --warmup),
 * same data and seed; the mean accuracy over the four test sets and the final training loss of each
 * run. A run that diverges (NaN/Inf) is recorded as accuracy 0.5 and "diverged at step N". */
#include "attn_plot.h"
#include "experiments_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_DEPTHS_MAX 3
static const int depths_full[N_DEPTHS_MAX] = {2, 6, 12};
static const int depths_quick[2] = {2, 4};
#define NEEDS_GAIN 0.05 /* warm-up "needed": it raises the mean accuracy by >= this */

typedef struct norm_run {
    double acc, loss;
    long diverged;
} norm_run;

static attn_status run_one(const attn_experiment_opts *o, const attn_dataset *train,
                           attn_dataset *const tests[ATTN_N_TEST_SETS], attn_norm norm, int layers,
                           int warmup, int epochs, int seed, norm_run *out, attn_error *err) {
    exp_progress(o, "norm: %s-norm, %d layers, warm-up %d, seed %d",
                 norm == ATTN_NORM_POST ? "post" : "pre", layers, warmup, seed);
    exp_train_spec spec = {.cfg = attn_model_config_default(ATTN_ARCH_TRANSFORMER),
                           .seed = (uint64_t)seed,
                           .train = train,
                           .epochs = epochs,
                           .warmup = warmup};
    spec.cfg.norm = norm;
    spec.cfg.n_layers = layers;
    double *loss = malloc((size_t)epochs * sizeof *loss);
    if (!loss) return attn_errorf(err, ATTN_ERR_NOMEM, "norm: out of memory");
    attn_model *m = NULL;
    attn_status st = exp_train(&spec, &m, loss, &out->diverged, err);
    if (!st) st = exp_accuracy(m, tests, &out->acc, NULL, err);
    out->loss = loss[epochs - 1];
    attn_model_free(m);
    free(loss);
    return st;
}

/* The runs, one job each: seed-major, then norm (post, pre), warm-up (off, on), depth. */
typedef struct norm_jobs {
    const attn_experiment_opts *o;
    attn_dataset **tests;
    const int *depths;
    int n_depths, n_train, epochs, warmup;
} norm_jobs;

static attn_status norm_job(int job, double *out, void *ctx, attn_error *err) {
    const norm_jobs *c = ctx;
    const int d = job % c->n_depths, wu = job / c->n_depths % 2, nm = job / c->n_depths / 2 % 2;
    const int s = 1 + job / c->n_depths / 4;
    attn_dataset *train = NULL;
    norm_run run = {0};
    attn_status st = attn_data_generate(ATTN_SET_TRAIN, c->n_train, (uint64_t)s, &train, err);
    if (!st)
        st = run_one(c->o, train, c->tests, nm ? ATTN_NORM_PRE : ATTN_NORM_POST, c->depths[d],
                     wu ? c->warmup : 0, c->epochs, s, &run, err);
    attn_dataset_free(train);
    out[0] = run.acc, out[1] = run.loss, out[2] = (double)run.diverged;
    return st;
}

attn_status exp_norm_run(const attn_experiment_opts *o, attn_experiment_result *r,
                         attn_error *err) {
    const int seeds = o->seeds > 0 ? o->seeds : 1;
    const int n_depths = o->quick ? 2 : 3;
    const int *depths = o->quick ? depths_quick : depths_full;
    const int n_train = o->quick ? 1000 : 4000, epochs = o->quick ? 2 : 10;
    /* A long warm-up: over the first 4 of the 10 epochs (500 of 1250 steps; quick: the first
     * epoch). Xiong et al. warm up over a few thousand steps; one epoch (125 steps) was measured
     * first and was too short to tell anything for 12 layers. */
    const int steps_per_epoch = (n_train + 31) / 32;
    const int warmup = o->quick ? steps_per_epoch : 4 * steps_per_epoch;
    attn_dataset *tests[ATTN_N_TEST_SETS] = {NULL};
    attn_status st = exp_test_sets(o->quick ? 300 : ATTN_TEST_DEFAULT_N, 1, tests, err);
    const int n_jobs = seeds * 4 * n_depths;
    double *runs = malloc((size_t)n_jobs * 3 * sizeof *runs); /* [job][acc, loss, diverged] */
    if (!st && !runs) st = attn_errorf(err, ATTN_ERR_NOMEM, "norm: out of memory");
    norm_jobs jobs = {o, tests, depths, n_depths, n_train, epochs, warmup};
    if (!st) st = exp_map(o, n_jobs, 3, norm_job, &jobs, runs, err);
    /* acc[norm][warm][depth], mean over seeds */
    double acc[2][2][N_DEPTHS_MAX] = {{{0}}}, loss[2][2][N_DEPTHS_MAX] = {{{0}}};
    for (int s = 1, job = 0; !st && s <= seeds; s++)
        for (int nm = 0; !st && nm < 2; nm++)
            for (int wu = 0; !st && wu < 2; wu++)
                for (int d = 0; !st && d < n_depths; d++, job++) {
                    const norm_run run = {runs[3 * job], runs[3 * job + 1],
                                          (long)runs[3 * job + 2]};
                    char k[64];
                    snprintf(k, sizeof k, "%s.L%d.%s.seed%d.", nm ? "pre" : "post", depths[d],
                             wu ? "warmup" : "no_warmup", s);
                    char key[96];
                    snprintf(key, sizeof key, "%saccuracy", k);
                    if (!st) st = exp_put(r, key, run.acc, err);
                    snprintf(key, sizeof key, "%sfinal_loss", k);
                    if (!st) st = exp_put(r, key, run.loss, err);
                    snprintf(key, sizeof key, "%sdiverged_at_step", k);
                    if (!st) st = exp_put(r, key, (double)run.diverged, err);
                    acc[nm][wu][d] += run.acc / seeds;
                    loss[nm][wu][d] += run.loss / seeds;
                }
    free(runs);
    exp_test_sets_free(tests);
    if (st) return st;
    double dd[N_DEPTHS_MAX], gain[2][N_DEPTHS_MAX];
    for (int d = 0; d < n_depths; d++) dd[d] = depths[d];
    st = exp_put_array(r, "layers", n_depths, dd, err);
    if (!st) st = exp_put(r, "seeds", seeds, err);
    if (!st) st = exp_put(r, "warmup_steps", warmup, err);
    if (!st) st = exp_put(r, "epochs", epochs, err);
    if (!st) st = exp_put(r, "train_size", n_train, err);
    static const char *const names[2][2] = {
        {"post.no_warmup.mean_accuracy", "post.warmup.mean_accuracy"},
        {"pre.no_warmup.mean_accuracy", "pre.warmup.mean_accuracy"}};
    for (int nm = 0; !st && nm < 2; nm++) {
        for (int wu = 0; !st && wu < 2; wu++)
            st = exp_put_array(r, names[nm][wu], n_depths, acc[nm][wu], err);
        for (int d = 0; d < n_depths; d++) gain[nm][d] = acc[nm][1][d] - acc[nm][0][d];
        if (!st)
            st = exp_put_array(r, nm ? "pre.warmup_gain" : "post.warmup_gain", n_depths, gain[nm],
                               err);
    }
    if (st) return st;
    double best = 0.0; /* some run must have learnt the task for the gains to mean anything */
    for (int nm = 0; nm < 2; nm++)
        for (int wu = 0; wu < 2; wu++)
            for (int d = 0; d < n_depths; d++) best = fmax(best, acc[nm][wu][d]);
    if (!st) st = exp_put(r, "best_mean_accuracy", best, err);
    if (st) return st;
    exp_norm_verdict(r);
    return ATTN_OK;
}

/* mixed if no run learnt the task (best mean accuracy < 0.75); else holds if warm-up raises
 * post-norm's accuracy by >= NEEDS_GAIN at the deepest depth, by more than at the shallowest,
 * and pre-norm's by less than NEEDS_GAIN at every depth; does not hold if post-norm does not
 * need it and pre-norm does not either; mixed otherwise. */
void exp_norm_verdict(attn_experiment_result *r) {
    const attn_measure *layers = attn_experiment_measure(r, "layers");
    const attn_measure *post = attn_experiment_measure(r, "post.warmup_gain");
    const attn_measure *pre = attn_experiment_measure(r, "pre.warmup_gain");
    const double best = exp_get(r, "best_mean_accuracy");
    if (!(best >= 0.75) || !layers || !post || !pre || layers->n < 1 || post->n != layers->n ||
        pre->n != layers->n) {
        exp_verdict(r, ATTN_VERDICT_MIXED,
                    "no run got past %.3f mean test accuracy (< 0.75): the runs are too short to "
                    "learn the task, so warm-up's effect is not measured (run without --quick)",
                    best);
        return;
    }
    const int deep = layers->n - 1;
    double pre_max = -INFINITY;
    for (int d = 0; d < pre->n; d++) pre_max = fmax(pre_max, pre->values[d]);
    const double *gain0 = post->values;
    const bool post_needs = gain0[deep] >= NEEDS_GAIN;
    const bool grows = gain0[deep] > gain0[0];
    const bool pre_free = pre_max < NEEDS_GAIN;
    exp_verdict(r,
                post_needs && grows && pre_free ? ATTN_VERDICT_HOLDS
                : !post_needs && pre_free       ? ATTN_VERDICT_DOES_NOT_HOLD
                                                : ATTN_VERDICT_MIXED,
                "warm-up changes post-norm's mean test accuracy by %+.3f at %d layers and "
                "%+.3f at %d layers (needed: >= +%.2f at the deepest, and more than at the "
                "shallowest); pre-norm's largest change is %+.3f (not needed: < +%.2f)",
                gain0[0], (int)layers->values[0], gain0[deep], (int)layers->values[deep],
                NEEDS_GAIN, pre_max, NEEDS_GAIN);
}

attn_status exp_norm_plot(const attn_experiment_result *r, const char *path, attn_error *err) {
    static const char *const keys[4] = {"post.no_warmup.mean_accuracy", "post.warmup.mean_accuracy",
                                        "pre.no_warmup.mean_accuracy", "pre.warmup.mean_accuracy"};
    static const char *const titles[4] = {"post-norm, no warm-up", "post-norm, warm-up",
                                          "pre-norm, no warm-up", "pre-norm, warm-up"};
    const attn_measure *L = attn_experiment_measure(r, "layers");
    if (!L) return attn_errorf(err, ATTN_ERR_ARG, "norm plot: no layers in the result");
    attn_plot_series s[4];
    for (int k = 0; k < 4; k++) {
        const attn_measure *m = attn_experiment_measure(r, keys[k]);
        if (!m || m->n != L->n)
            return attn_errorf(err, ATTN_ERR_ARG, "norm plot: no %s in the result", keys[k]);
        s[k] = (attn_plot_series){titles[k], m->n,           L->values,
                                  m->values, .points = true, .dashed = k % 2 == 0};
    }
    const attn_plot p = {.title = "Post-norm vs pre-norm, with and without linear warm-up",
                         .xlabel = "encoder layers",
                         .ylabel = "mean accuracy over the four test sets",
                         .key = "bottom left",
                         .y_min = 0.4,
                         .y_max = 1.0,
                         .n_series = 4,
                         .series = s};
    return attn_plot_lines(&p, path, err);
}

/* experiments.c -- the table of the write-up's claims as experiments (attn_experiments.h) and
 * what every experiment shares: measurements, verdicts, weights, timing, a log-log slope.
 *
 * Adding an experiment: a file experiments_NAME.c with a run function that records its
 * measurements (exp_put / exp_put_array) and sets the verdict from them (exp_verdict, by the
 * rule of its table row), and a plot function that draws them through attn_plot.h; then one row
 * below. Claims that wait for model options not yet in attn (path-length, heads, scaling, norm,
 * extrapolation) are not in the table until they run. */
#include "experiments_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const attn_experiment table[] = {
    {"convolution",
     "A multi-head self-attention layer with a relative position bias, one head per kernel "
     "offset, computes a 1-D convolution of kernel size 3 exactly (in the limit of a sharp "
     "bias); without position information no attention layer can.",
     "§9, §10", "Cordonnier, Loukas, Jaggi 2020",
     "holds if the constructed layer's largest difference from the directly computed "
     "convolution falls to float rounding (<= 1e-5 x max|y|) as the bias sharpens, AND without "
     "positions two positions with equal inputs but different neighbours get the same output "
     "(difference <= 1e-6 x max|y|), so that the best any position-free layer can do has an "
     "error >= half the difference of the convolution's outputs there, which is > 1e-2 x "
     "max|y|; mixed if one part holds; does not hold otherwise",
     exp_convolution_run, exp_convolution_plot},
    {"embedding",
     "An embedding layer is a lookup table, not a normaliser: its rows have whatever length "
     "training gave them, and multiplying a one-hot vector by the matrix is the lookup.",
     "§10", "",
     "holds if one-hot x matrix (attn_sgemm) equals the table's rows bit for bit for every "
     "token of every model, the logit computed from the one-hot rows equals the model's own "
     "bit for bit, AND the trained rows are not normalised (max |norm - 1| > 0.05 and "
     "max/min norm over the words > 1.1 in every model); mixed if only one part holds",
     exp_embedding_run, exp_embedding_plot},
    {"parallel",
     "Recurrent models take one sequential step per word, so their time per sentence grows in "
     "proportion to its length; a Transformer layer handles all words at once, so its time per "
     "sentence grows more slowly than the recurrent models' even though it does more work per "
     "word.",
     "§1, §8", "",
     "from the log-log slope of time per sentence against length (least squares over the "
     "lengths measured): holds if the RNN's and the LSTM's slopes are >= 0.8 at batch 1 and at "
     "batch 256 AND the Transformer's slope at batch 1 is below both recurrent slopes at batch "
     "1 by at least 0.2; mixed if only one part holds",
     exp_parallel_run, exp_parallel_plot},
    {"equivariance",
     "Without position information self-attention is permutation-equivariant and the [CLS] "
     "output permutation-invariant: \"the lecture was not good\" and \"not the lecture was good\" "
     "get the same logit. With positions they need not.",
     "§4, §10", "",
     "holds if, with the position table zeroed (the trained Transformers) and in Transformers "
     "trained without positions, the largest |logit change| over the pair and over shuffled "
     "test sentences is <= 1e-4 (float summation order) and every layer's attention maps are "
     "permuted copies (<= 1e-5), AND with positions the largest change is > 1e-2; mixed if only "
     "one part holds",
     exp_equivariance_run, exp_equivariance_plot},
    {"extrapolation",
     "Fixed sinusoidal position encodings degrade on sentences longer than those seen in "
     "training; relative schemes (RoPE, ALiBi) hold up.",
     "§4, §10", "Press, Smith, Lewis 2022; Su et al. 2021",
     "a scheme's drop is its test accuracy on the training lengths (8-30 words) minus that on "
     "61-120 words (mean over seeds, percentage points); holds if sinusoidal drops by >= 5 "
     "points AND rope and alibi each by < 5; mixed if only one part holds; does not hold "
     "otherwise (learned and none are reported)",
     exp_extrapolation_run, exp_extrapolation_plot},
};
#define N_EXPERIMENTS ((int)(sizeof table / sizeof table[0]))

int attn_experiment_count(void) {
    return N_EXPERIMENTS;
}

const attn_experiment *attn_experiment_at(int i) {
    return i >= 0 && i < N_EXPERIMENTS ? &table[i] : NULL;
}

const attn_experiment *attn_experiment_find(const char *name) {
    for (int i = 0; name && i < N_EXPERIMENTS; i++)
        if (strcmp(table[i].name, name) == 0) return &table[i];
    return NULL;
}

const char *attn_verdict_name(attn_verdict v) {
    switch (v) {
    case ATTN_VERDICT_HOLDS:
        return "holds";
    case ATTN_VERDICT_DOES_NOT_HOLD:
        return "does not hold";
    case ATTN_VERDICT_MIXED:
        return "mixed";
    }
    return "?";
}

/* ---- results --------------------------------------------------------------------------- */

void attn_experiment_result_free(attn_experiment_result *res) {
    if (!res) return;
    for (int i = 0; i < res->n_measures; i++) free(res->measures[i].values);
    free(res->measures);
    memset(res, 0, sizeof *res);
}

attn_status attn_experiment_run(const attn_experiment *e, const attn_experiment_opts *opts,
                                attn_experiment_result *res, attn_error *err) {
    if (!e || !opts || !res) return attn_errorf(err, ATTN_ERR_ARG, "experiment: need e, opts, res");
    memset(res, 0, sizeof *res);
    res->verdict = ATTN_VERDICT_MIXED;
    snprintf(res->why, sizeof res->why, "no verdict reached");
    const double t0 = exp_seconds();
    attn_status st = e->run(opts, res, err);
    res->seconds = exp_seconds() - t0;
    if (st != ATTN_OK) attn_error_append(err, "experiment %s", e->name);
    return st;
}

const attn_measure *attn_experiment_measure(const attn_experiment_result *res, const char *name) {
    for (int i = 0; res && name && i < res->n_measures; i++)
        if (strcmp(res->measures[i].name, name) == 0) return &res->measures[i];
    return NULL;
}

attn_status exp_put_array(attn_experiment_result *r, const char *name, int n, const double *values,
                          attn_error *err) {
    if (strlen(name) >= sizeof r->measures[0].name || n < 1)
        return attn_errorf(err, ATTN_ERR_ARG, "measurement '%s': name too long or no values", name);
    if (r->n_measures == r->cap) {
        const int cap = r->cap ? 2 * r->cap : 16;
        attn_measure *m = realloc(r->measures, (size_t)cap * sizeof *m);
        if (!m) return attn_errorf(err, ATTN_ERR_NOMEM, "out of memory recording '%s'", name);
        r->measures = m;
        r->cap = cap;
    }
    attn_measure *m = &r->measures[r->n_measures];
    m->values = malloc((size_t)n * sizeof *m->values);
    if (!m->values) return attn_errorf(err, ATTN_ERR_NOMEM, "out of memory recording '%s'", name);
    memcpy(m->values, values, (size_t)n * sizeof *values);
    m->n = n;
    snprintf(m->name, sizeof m->name, "%s", name);
    r->n_measures++;
    return ATTN_OK;
}

attn_status exp_put(attn_experiment_result *r, const char *name, double value, attn_error *err) {
    return exp_put_array(r, name, 1, &value, err);
}

double exp_get(const attn_experiment_result *r, const char *name) {
    const attn_measure *m = attn_experiment_measure(r, name);
    return m && m->n == 1 ? m->values[0] : NAN;
}

void exp_verdict(attn_experiment_result *r, attn_verdict v, const char *fmt, ...) {
    r->verdict = v;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof r->why, fmt, ap);
    va_end(ap);
}

void exp_progress(const attn_experiment_opts *o, const char *fmt, ...) {
    if (!o->progress) return;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    o->progress(msg, o->user);
}

attn_status exp_load_weights(const attn_experiment_opts *o, const char *arch, int seed,
                             attn_model **out, attn_error *err) {
    if (!o->load)
        return attn_errorf(err, ATTN_ERR_ARG, "experiment needs trained weights: no loader given");
    char path[1024];
    const char *dir = o->weights_dir ? o->weights_dir : "weights";
    if (snprintf(path, sizeof path, "%s/%s-seed%d.json", dir, arch, seed) >= (int)sizeof path)
        return attn_errorf(err, ATTN_ERR_ARG, "weights directory name too long: %s", dir);
    return o->load(path, out, err);
}

double exp_loglog_slope(const double *x, const double *y, int n) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int i = 0; i < n; i++) {
        const double lx = log(x[i]), ly = log(y[i]);
        sx += lx, sy += ly, sxx += lx * lx, sxy += lx * ly;
    }
    const double den = n * sxx - sx * sx;
    return den != 0.0 ? (n * sxy - sx * sy) / den : NAN;
}

double exp_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

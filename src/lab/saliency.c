/* saliency.c -- the write-up's s1 experiment: how strongly the logit still depends on a word
 * k positions before the last one. For each sentence, one exact-mode forward and the backward
 * of d logit = 1 give g_i = d logit / d x_i for every word (the model's own backward, checked
 * against autograd by tools/explain_torch.py); ratio[k] = |g_{T-1-k}| / |g_{T-1}|. A plain RNN
 * multiplies the gradient by W_hh^T diag(1 - h^2) once per step, so its ratio falls
 * geometrically with k; attention reaches every word in one step, so its curve stays flat. */
#include "attn_lab.h"
#include "attn_plot.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SALIENCY_MAX_N 100000

void attn_saliency_curve_free(attn_saliency_curve *c) {
    if (!c) return;
    free(c->median);
    free(c->p10);
    free(c->p90);
    free(c);
}

attn_status attn_saliency_ratios(attn_model *m, const int *ids, int n_words, double *ratio,
                                 attn_error *err) {
    if (!m || !ids || !ratio || n_words < 1)
        return attn_errorf(err, ATTN_ERR_ARG, "saliency: no model, words or output");
    const attn_batch b = {.B = 1, .T = n_words, .ids = ids, .lengths = &n_words};
    const float one = 1.0f;
    float logit;
    const float *d_x;
    int rows, D;
    attn_status st = attn_model_forward(m, &b, &logit, err);
    attn_model_zero_grad(m);
    if (st == ATTN_OK) st = attn_model_backward(m, &b, &one, err);
    if (st == ATTN_OK) st = attn_model_input(m, NULL, &d_x, &rows, &D, err);
    if (st != ATTN_OK) return st;
    const int w0 = rows - n_words; /* 1 for the Transformer's [CLS] row, else 0 */
    double last = 0.0;
    for (int i = n_words - 1; i >= 0; i--) {
        double sq = 0.0;
        for (int j = 0; j < D; j++) {
            const double g = d_x[(size_t)(w0 + i) * D + j];
            sq += g * g;
        }
        const double norm = sqrt(sq);
        if (i == n_words - 1) last = norm;
        ratio[n_words - 1 - i] = norm; /* divided by the last word's norm below */
    }
    attn_model_zero_grad(m);
    if (!(last > 0.0))
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "saliency: the logit's gradient at the last word is zero");
    for (int k = 0; k < n_words; k++) ratio[k] /= last;
    return ATTN_OK;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The q-quantile of sorted v[n] by linear interpolation (numpy's default "linear"). */
static double quantile(const double *v, int n, double q) {
    const double pos = q * (n - 1);
    const int lo = (int)floor(pos);
    const int hi = lo + 1 < n ? lo + 1 : lo;
    return v[lo] + (pos - lo) * (v[hi] - v[lo]);
}

static attn_status check_opts(const attn_model *m, int T, int n, attn_error *err) {
    if (!m) return attn_errorf(err, ATTN_ERR_ARG, "saliency: no model");
    const attn_model_config *c = attn_model_config_of(m);
    int max_T = ATTN_MAX_WORDS;
    if (c->arch == ATTN_ARCH_TRANSFORMER && c->max_len - 1 < max_T) max_T = c->max_len - 1;
    if (T < 1 || T > max_T)
        return attn_errorf(err, ATTN_ERR_ARG, "saliency: T %d is outside 1..%d", T, max_T);
    if (n < 1 || n > SALIENCY_MAX_N)
        return attn_errorf(err, ATTN_ERR_ARG, "saliency: n %d is outside 1..%d", n, SALIENCY_MAX_N);
    return ATTN_OK;
}

attn_status attn_saliency_curve_compute(attn_model *m, const attn_saliency_opts *opts,
                                        attn_saliency_curve **out, attn_error *err) {
    *out = NULL;
    const int T = opts && opts->T ? opts->T : ATTN_SALIENCY_DEFAULT_T;
    const int n = opts && opts->n ? opts->n : ATTN_SALIENCY_DEFAULT_N;
    attn_status st = check_opts(m, T, n, err);
    if (st != ATTN_OK) return st;
    attn_rng rng = attn_rng_seed(opts ? opts->seed : 0);
    attn_saliency_curve *c = calloc(1, sizeof *c);
    int *ids = malloc((size_t)T * sizeof *ids);
    double *all = malloc((size_t)n * T * sizeof *all); /* [T, n]: distance-major */
    double *row = malloc((size_t)T * sizeof *row);
    if (c) {
        c->T = T;
        c->n = n;
        c->median = malloc((size_t)T * sizeof(double));
        c->p10 = malloc((size_t)T * sizeof(double));
        c->p90 = malloc((size_t)T * sizeof(double));
    }
    if (!c || !ids || !all || !row || !c->median || !c->p10 || !c->p90)
        st = attn_errorf(err, ATTN_ERR_NOMEM, "saliency: out of memory");
    for (int s = 0; st == ATTN_OK && s < n; s++) {
        for (int i = 0; i < T; i++) ids[i] = 2 + (int)attn_rng_below(&rng, ATTN_N_WORDS);
        st = attn_saliency_ratios(m, ids, T, row, err);
        for (int k = 0; st == ATTN_OK && k < T; k++) all[(size_t)k * n + s] = row[k];
    }
    for (int k = 0; st == ATTN_OK && k < T; k++) {
        double *v = all + (size_t)k * n;
        qsort(v, (size_t)n, sizeof *v, cmp_double);
        c->median[k] = quantile(v, n, 0.5);
        c->p10[k] = quantile(v, n, 0.1);
        c->p90[k] = quantile(v, n, 0.9);
    }
    free(ids);
    free(all);
    free(row);
    if (st != ATTN_OK) {
        attn_saliency_curve_free(c);
        return st;
    }
    *out = c;
    return ATTN_OK;
}

/* ---- the chart ------------------------------------------------------------------------------ */

attn_status attn_saliency_plot(const attn_saliency_curve *const *curves, const char *const *names,
                               int n_curves, const char *title, const char *path, attn_error *err) {
    if (!curves || !names || n_curves < 1)
        return attn_errorf(err, ATTN_ERR_ARG, "saliency plot %s: no curves", path ? path : "");
    attn_plot_series *s = calloc((size_t)n_curves, sizeof *s);
    double **x = calloc((size_t)n_curves, sizeof *x);
    attn_status st = s && x ? ATTN_OK : attn_errorf(err, ATTN_ERR_NOMEM, "saliency: out of memory");
    for (int i = 0; st == ATTN_OK && i < n_curves; i++) {
        const attn_saliency_curve *c = curves[i];
        x[i] = malloc((size_t)c->T * sizeof(double));
        if (!x[i]) {
            st = attn_errorf(err, ATTN_ERR_NOMEM, "saliency: out of memory");
            break;
        }
        for (int k = 0; k < c->T; k++) x[i][k] = k;
        s[i] = (attn_plot_series){.title = names[i],
                                  .n = c->T,
                                  .x = x[i],
                                  .y = c->median,
                                  .y_lo = c->p10,
                                  .y_hi = c->p90};
    }
    if (st == ATTN_OK) {
        const attn_plot p = {.title = title ? title
                                            : "Gradient reaching the word k positions before the "
                                              "last (median, 10-90 % band)",
                             .xlabel = "distance k from the last word (words)",
                             .ylabel = "gradient ratio |g_{T-1-k}| / |g_{T-1}|",
                             .log_y = true,
                             .key = "bottom left",
                             .n_series = n_curves,
                             .series = s};
        st = attn_plot_lines(&p, path, err);
    }
    for (int i = 0; x && i < n_curves; i++) free(x[i]);
    free(x);
    free(s);
    return st;
}

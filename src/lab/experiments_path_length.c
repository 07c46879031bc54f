/* experiments_path_length.c -- `attn experiment path-length` (write-up §1): in a recurrent
 * model the gradient from the output to a word k steps back passes through k steps of the
 * recurrence, so it shrinks (or grows) with k; the LSTM's (and GRU's) gates can learn to keep
 * that path open. In self-attention every word is one step from [CLS], so the gradient does
 * not fall with distance -- already before training.
 *
 * Measured for rnn, lstm, gru and transformer (write-up sizes, seed 1), before and after
 * training: the gradient-versus-distance curve (attn_saliency_curve_compute: ratio[k] =
 * |d logit / d x_{T-1-k}| / |d logit / d x_{T-1}| over random sentences of T words, median and
 * 10th/90th percentiles). The number compared is the median ratio at the farthest distance. */
#include "attn_lab.h"
#include "attn_plot.h"
#include "experiments_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_ARCHS 4
static const attn_arch archs[N_ARCHS] = {ATTN_ARCH_RNN, ATTN_ARCH_LSTM, ATTN_ARCH_GRU,
                                         ATTN_ARCH_TRANSFORMER};
#define FLAT 0.1 /* "flat": the farthest word keeps >= 10% of the last word's gradient */

static attn_status put_curve(attn_experiment_result *r, const char *arch, const char *when,
                             const attn_saliency_curve *c, attn_error *err) {
    char k[64];
    attn_status st;
    snprintf(k, sizeof k, "%s.%s.median", arch, when);
    st = exp_put_array(r, k, c->T, c->median, err);
    snprintf(k, sizeof k, "%s.%s.p10", arch, when);
    if (!st) st = exp_put_array(r, k, c->T, c->p10, err);
    snprintf(k, sizeof k, "%s.%s.p90", arch, when);
    if (!st) st = exp_put_array(r, k, c->T, c->p90, err);
    snprintf(k, sizeof k, "%s.%s.farthest", arch, when);
    if (!st) st = exp_put(r, k, c->median[c->T - 1], err);
    return st;
}

attn_status exp_path_length_run(const attn_experiment_opts *o, attn_experiment_result *r,
                                attn_error *err) {
    const int n_train = o->quick ? 3000 : ATTN_TRAIN_DEFAULT_N, epochs = o->quick ? 8 : 10;
    const attn_saliency_opts so = {.T = o->quick ? 30 : ATTN_SALIENCY_DEFAULT_T,
                                   .n = o->quick ? 30 : ATTN_SALIENCY_DEFAULT_N,
                                   .seed = 1};
    attn_dataset *train = NULL;
    attn_status st = attn_data_generate(ATTN_SET_TRAIN, n_train, 1, &train, err);
    for (int a = 0; !st && a < N_ARCHS; a++) {
        const char *name = attn_arch_name(archs[a]);
        exp_progress(o, "path-length: %s", name);
        exp_train_spec spec = {.cfg = attn_model_config_default(archs[a]),
                               .seed = 1,
                               .train = train,
                               .epochs = epochs};
        attn_model *m = NULL;
        attn_saliency_curve *before = NULL, *after = NULL;
        double loss[16];
        long diverged = -1;
        st = attn_model_create(&spec.cfg, 1, &m, err); /* exp_train's initialisation */
        if (!st) st = attn_saliency_curve_compute(m, &so, &before, err);
        attn_model_free(m);
        m = NULL;
        if (!st) st = exp_train(&spec, &m, loss, &diverged, err);
        if (!st && !m)
            st = attn_errorf(err, ATTN_ERR_VALUE, "path-length: %s diverged at step %ld", name,
                             diverged);
        if (!st) st = attn_saliency_curve_compute(m, &so, &after, err);
        if (!st) st = put_curve(r, name, "before", before, err);
        if (!st) st = put_curve(r, name, "after", after, err);
        attn_saliency_curve_free(before);
        attn_saliency_curve_free(after);
        attn_model_free(m);
    }
    attn_dataset_free(train);
    if (!st) st = exp_put(r, "T", so.T, err);
    if (!st) st = exp_put(r, "epochs", epochs, err);
    if (!st) st = exp_put(r, "train_size", n_train, err);
    if (st) return st;
    exp_path_length_verdict(r);
    return ATTN_OK;
}

/* holds if the Transformer's farthest word keeps >= FLAT of the last word's gradient before
 * and after training, and training opens the LSTM's path (its farthest ratio rises, above the
 * RNN's after training); mixed if one of the two. */
void exp_path_length_verdict(attn_experiment_result *r) {
    double far[N_ARCHS][2]; /* rnn 0, lstm 1, gru 2, transformer 3; before, after */
    for (int a = 0; a < N_ARCHS; a++)
        for (int w = 0; w < 2; w++) {
            char k[64];
            snprintf(k, sizeof k, "%s.%s.farthest", attn_arch_name(archs[a]),
                     w ? "after" : "before");
            far[a][w] = exp_get(r, k);
        }
    const int T = (int)exp_get(r, "T");
    const bool attn_flat = far[3][0] >= FLAT && far[3][1] >= FLAT;
    const bool lstm_opens = far[1][1] > far[1][0] && far[1][1] > far[0][1];
    exp_verdict(r,
                attn_flat && lstm_opens   ? ATTN_VERDICT_HOLDS
                : attn_flat || lstm_opens ? ATTN_VERDICT_MIXED
                                          : ATTN_VERDICT_DOES_NOT_HOLD,
                "median gradient ratio of the word %d steps back, before -> after training: "
                "rnn %.2g -> %.2g, lstm %.2g -> %.2g, gru %.2g -> %.2g, transformer %.2g -> "
                "%.2g. Attention flat (>= %.1f before and after): %s; the LSTM's path opens "
                "(after > before and > the RNN's after): %s",
                T - 1, far[0][0], far[0][1], far[1][0], far[1][1], far[2][0], far[2][1], far[3][0],
                far[3][1], FLAT, attn_flat ? "yes" : "no", lstm_opens ? "yes" : "no");
}

attn_status exp_path_length_plot(const attn_experiment_result *r, const char *path,
                                 attn_error *err) {
    attn_plot_series s[2 * N_ARCHS];
    double x[ATTN_MAX_WORDS];
    static char titles[2 * N_ARCHS][48];
    int n = 0;
    for (int a = 0; a < N_ARCHS; a++)
        for (int w = 1; w >= 0; w--) {
            const char *name = attn_arch_name(archs[a]), *when = w ? "after" : "before";
            char k[64];
            snprintf(k, sizeof k, "%s.%s.median", name, when);
            const attn_measure *m = attn_experiment_measure(r, k);
            if (!m || m->n > ATTN_MAX_WORDS)
                return attn_errorf(err, ATTN_ERR_ARG, "path-length plot: no %s in the result", k);
            for (int i = 0; i < m->n; i++) x[i] = i;
            snprintf(titles[n], sizeof titles[n], "%s, %s training", name, when);
            s[n] = (attn_plot_series){titles[n], m->n, x, m->values, .dashed = !w};
            n++;
        }
    const attn_plot p = {.title = "Gradient versus distance, before and after training",
                         .xlabel = "distance k from the last word (words)",
                         .ylabel = "median |dlogit/dx(T-1-k)| / |dlogit/dx(T-1)|",
                         .log_y = true,
                         .key = "bottom left",
                         .n_series = n,
                         .series = s};
    return attn_plot_lines(&p, path, err);
}

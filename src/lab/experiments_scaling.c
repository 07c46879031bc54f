/* experiments_scaling.c -- `attn experiment scaling` (write-up §3): scores are divided by
 * sqrt(d_k) because q.k of two random d_k-dimensional vectors has a standard deviation growing
 * like sqrt(d_k); without the division the softmax saturates (one key takes all the weight),
 * its gradient vanishes and training stalls.
 *
 * Measured: one-head Transformers with d_k = 64 (D = 64, NH = 1, F = 64, 2 layers), the same
 * data, seed and initialisation, trained with the scaling (PyTorch's layer) and without it
 * (attn_model_config.attn_unscaled); after every epoch the mean training loss and the softmax's
 * saturation: over fixed probe sentences (the first of the plain test set), the mean over
 * layers and sentences of the largest attention probability in [CLS]'s row (1 = all weight on
 * one key, 1/S = uniform), also before training; at the end, the mean test accuracy. */
#include "attn_plot.h"
#include "experiments_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_PROBES   50
#define MAX_EPOCHS 64

typedef struct saturation_log {
    const attn_dataset *probes;
    double sat[MAX_EPOCHS + 1]; /* [0] before training */
} saturation_log;

/* Mean over probes and layers of max_j P[CLS, j]. */
static attn_status saturation(attn_model *m, const attn_dataset *probes, double *out,
                              attn_error *err) {
    const int L = attn_model_config_of(m)->n_layers,
              n = probes->n < N_PROBES ? probes->n : N_PROBES;
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        int len = probes->lengths[i];
        attn_batch b = {1, len, probes->ids + probes->offsets[i], &len};
        float logit;
        attn_status st = attn_model_forward(m, &b, &logit, err);
        for (int l = 0; !st && l < L; l++) {
            const float *p;
            int S;
            st = attn_model_attention_probs(m, l, &p, &S, err);
            float mx = 0.0f;
            for (int j = 0; !st && j < S; j++) mx = p[j] > mx ? p[j] : mx; /* head 0, row 0 */
            sum += mx;
        }
        if (st) return st;
    }
    *out = sum / ((double)n * L);
    return ATTN_OK;
}

static attn_status after_epoch(attn_model *m, int epoch, void *user, attn_error *err) {
    saturation_log *log = user;
    return saturation(m, log->probes, &log->sat[epoch], err);
}

attn_status exp_scaling_run(const attn_experiment_opts *o, attn_experiment_result *r,
                            attn_error *err) {
    const int seeds = o->seeds > 0 ? o->seeds : 1;
    const int n_train = o->quick ? 3000 : ATTN_TRAIN_DEFAULT_N, epochs = o->quick ? 8 : 10;
    attn_dataset *tests[ATTN_N_TEST_SETS] = {NULL};
    attn_status st = exp_test_sets(o->quick ? 300 : ATTN_TEST_DEFAULT_N, 1, tests, err);
    double final_loss[2] = {0}, final_sat[2] = {0}, acc[2] = {0};
    for (int s = 1; !st && s <= seeds; s++) {
        attn_dataset *train = NULL;
        st = attn_data_generate(ATTN_SET_TRAIN, n_train, (uint64_t)s, &train, err);
        for (int k = 0; !st && k < 2; k++) {
            exp_progress(o, "scaling: %s, seed %d", k ? "without 1/sqrt(d_k)" : "scaled", s);
            saturation_log log = {.probes = tests[0]};
            exp_train_spec spec = {.cfg = attn_model_config_default(ATTN_ARCH_TRANSFORMER),
                                   .seed = (uint64_t)s,
                                   .train = train,
                                   .epochs = epochs,
                                   .after_epoch = after_epoch,
                                   .user = &log};
            spec.cfg.embed_dim = 64;
            spec.cfg.n_heads = 1;
            spec.cfg.attn_unscaled = k;
            attn_model *m = NULL;
            double loss[MAX_EPOCHS], mean = 0.5;
            long diverged = -1;
            st = attn_model_create(&spec.cfg, spec.seed, &m, err); /* the same init as training's */
            if (!st) st = saturation(m, tests[0], &log.sat[0], err);
            attn_model_free(m);
            m = NULL;
            if (!st) st = exp_train(&spec, &m, loss, &diverged, err);
            if (!st) st = exp_accuracy(m, tests, &mean, NULL, err);
            attn_model_free(m);
            char key[80];
            const char *name = k ? "unscaled" : "scaled";
            snprintf(key, sizeof key, "%s.seed%d.loss_per_epoch", name, s);
            if (!st) st = exp_put_array(r, key, epochs, loss, err);
            snprintf(key, sizeof key, "%s.seed%d.saturation_per_epoch", name, s);
            if (!st) st = exp_put_array(r, key, epochs + 1, log.sat, err);
            snprintf(key, sizeof key, "%s.seed%d.mean_accuracy", name, s);
            if (!st) st = exp_put(r, key, mean, err);
            snprintf(key, sizeof key, "%s.seed%d.diverged_at_step", name, s);
            if (!st) st = exp_put(r, key, (double)diverged, err);
            final_loss[k] += (diverged >= 0 ? NAN : loss[epochs - 1]) / seeds;
            final_sat[k] += log.sat[epochs] / seeds;
            acc[k] += mean / seeds;
        }
        attn_dataset_free(train);
    }
    exp_test_sets_free(tests);
    if (!st) st = exp_put(r, "seeds", seeds, err);
    if (!st) st = exp_put(r, "epochs", epochs, err);
    if (!st) st = exp_put(r, "train_size", n_train, err);
    if (!st) st = exp_put(r, "scaled.final_loss", final_loss[0], err);
    if (!st) st = exp_put(r, "unscaled.final_loss", final_loss[1], err);
    if (!st) st = exp_put(r, "scaled.final_saturation", final_sat[0], err);
    if (!st) st = exp_put(r, "unscaled.final_saturation", final_sat[1], err);
    if (!st) st = exp_put(r, "scaled.mean_accuracy", acc[0], err);
    if (!st) st = exp_put(r, "unscaled.mean_accuracy", acc[1], err);
    if (st) return st;
    exp_scaling_verdict(r);
    return ATTN_OK;
}

/* holds if without the scaling training stalls (final loss not below the scaled one + 0.05, a
 * NaN loss counting as stalled, and mean accuracy lower by >= 0.02) and [CLS]'s attention
 * saturates (its largest probability higher by > 0.05); mixed if one of the two. */
void exp_scaling_verdict(attn_experiment_result *r) {
    const double final_loss[2] = {exp_get(r, "scaled.final_loss"),
                                  exp_get(r, "unscaled.final_loss")};
    const double final_sat[2] = {exp_get(r, "scaled.final_saturation"),
                                 exp_get(r, "unscaled.final_saturation")};
    const double acc[2] = {exp_get(r, "scaled.mean_accuracy"),
                           exp_get(r, "unscaled.mean_accuracy")};
    /* a NaN loss (diverged) counts as stalled */
    const bool stalls = !(final_loss[1] < final_loss[0] + 0.05) && acc[1] <= acc[0] - 0.02;
    const bool saturates = final_sat[1] > final_sat[0] + 0.05;
    exp_verdict(r,
                stalls && saturates   ? ATTN_VERDICT_HOLDS
                : stalls || saturates ? ATTN_VERDICT_MIXED
                                      : ATTN_VERDICT_DOES_NOT_HOLD,
                "without 1/sqrt(d_k) the final training loss is %.4f against %.4f with it and the "
                "mean test accuracy %.3f against %.3f (stalls: loss higher by >= 0.05 and "
                "accuracy lower by >= 0.02: %s); [CLS]'s largest attention probability ends at "
                "%.3f against %.3f (saturates: higher by > 0.05: %s)",
                final_loss[1], final_loss[0], acc[1], acc[0], stalls ? "yes" : "no", final_sat[1],
                final_sat[0], saturates ? "yes" : "no");
}

attn_status exp_scaling_plot(const attn_experiment_result *r, const char *path, attn_error *err) {
    const attn_measure *ls = attn_experiment_measure(r, "scaled.seed1.loss_per_epoch");
    const attn_measure *lu = attn_experiment_measure(r, "unscaled.seed1.loss_per_epoch");
    const attn_measure *ss = attn_experiment_measure(r, "scaled.seed1.saturation_per_epoch");
    const attn_measure *su = attn_experiment_measure(r, "unscaled.seed1.saturation_per_epoch");
    if (!ls || !lu || !ss || !su || ls->n != lu->n || ss->n != ls->n + 1 || su->n != ss->n)
        return attn_errorf(err, ATTN_ERR_ARG, "scaling plot: no loss curves in the result");
    double x[MAX_EPOCHS + 1];
    for (int i = 0; i <= ls->n; i++) x[i] = i;
    const attn_plot_series s[4] = {
        {"training loss, q.k / sqrt(d_k)", ls->n, x + 1, ls->values, .points = true},
        {"training loss, q.k unscaled", lu->n, x + 1, lu->values, .points = true, .dashed = true},
        {"[CLS] max attention probability, scaled", ss->n, x, ss->values, .points = false},
        {"[CLS] max attention probability, unscaled", su->n, x, su->values, .dashed = true}};
    const attn_plot p = {.title = "One head, d_k = 64: with and without the 1/sqrt(d_k)",
                         .xlabel = "epoch (0 = before training)",
                         .ylabel = "mean BCE loss / max attention probability",
                         .key = "center right",
                         .y_min = 0.0,
                         .y_max = 1.05,
                         .n_series = 4,
                         .series = s};
    return attn_plot_lines(&p, path, err);
}

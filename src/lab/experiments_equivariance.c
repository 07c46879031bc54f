/* experiments_equivariance.c -- `attn experiment equivariance` (write-up §4, §10): without
 * position information self-attention is permutation-equivariant, so the [CLS] output -- and
 * the logit -- is invariant to the order of the words.
 *
 * Why: without positions the first layer's input rows are the words' embeddings; attention
 * scores, softmax, the weighted sum, LayerNorm and the feed-forward treat every row alike, so
 * permuting the words permutes every layer's rows (and the attention maps' rows and columns)
 * and leaves the [CLS] row, which the head reads, unchanged. In float the sums over keys run in
 * another order, so "unchanged" means within summation-order rounding.
 *
 * Measured on
 *   1. the trained Transformers of weights/ with their positions, then made position-free
 *      (attn_model_remove_positions: the same tensors in a model with pos = none): the pair "the
 * food was not good" / "not the food was good" (logits and every layer's attention maps,
 * compared after undoing the permutation) and the plain test set with each sentence's words
 * shuffled (largest logit change, fraction of predictions that change);
 *   2. Transformers trained without positions (created with pos = none), against the same
 *      training with positions: the same invariance, and what order is worth on the
 *      four test sets. */
#include "attn_lab.h"
#include "attn_kernels.h"
#include "attn_plot.h"
#include "experiments_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAIR_A "the food was not good"
#define PAIR_B "not the food was good"
/* PAIR_B's word k is PAIR_A's word pair_perm[k] */
static const int pair_perm[5] = {3, 0, 1, 2, 4};
#define EVAL_BATCH 250

/* ---- measurements ------------------------------------------------------------------------ */

typedef struct invariance {
    double pair_logit[2];   /* logits of PAIR_A, PAIR_B */
    double pair_change;     /* |logit(A) - logit(B)| */
    double pair_attention;  /* largest difference of the attention maps after un-permuting */
    double shuffle_change;  /* largest |logit change| over the shuffled test sentences */
    double shuffle_flipped; /* fraction of predictions that changed */
    double *changes;        /* [n] |logit change| per sentence (for the chart), sorted */
    int n;
} invariance;

static attn_status forward_sentence(attn_model *m, const char *text, int *ids, int *n, float *logit,
                                    attn_error *err) {
    attn_status st = attn_tokenize(text, ids, ATTN_MAX_WORDS, n, err);
    attn_batch b = {1, *n, ids, n};
    if (!st) st = attn_model_forward(m, &b, logit, err);
    return st;
}

/* The pair: logits, and every layer's attention maps compared under the permutation. */
static attn_status measure_pair(attn_model *m, invariance *v, attn_error *err) {
    const attn_model_config *c = attn_model_config_of(m);
    const int S = 6, NH = c->n_heads;
    int ids[ATTN_MAX_WORDS], n = 0;
    float la, lb, *probs_a = malloc((size_t)c->n_layers * NH * S * S * sizeof *probs_a);
    if (!probs_a) return attn_errorf(err, ATTN_ERR_NOMEM, "equivariance: out of memory");
    attn_status st = forward_sentence(m, PAIR_A, ids, &n, &la, err);
    for (int l = 0; !st && l < c->n_layers; l++) {
        const float *p;
        int s;
        st = attn_model_attention_probs(m, l, &p, &s, err);
        if (!st) memcpy(probs_a + (size_t)l * NH * S * S, p, (size_t)NH * S * S * sizeof *p);
    }
    if (!st) st = forward_sentence(m, PAIR_B, ids, &n, &lb, err);
    v->pair_attention = 0.0;
    /* token index of B (0 = [CLS]) -> token index of A */
    const int map[6] = {0,
                        1 + pair_perm[0],
                        1 + pair_perm[1],
                        1 + pair_perm[2],
                        1 + pair_perm[3],
                        1 + pair_perm[4]};
    for (int l = 0; !st && l < c->n_layers; l++) {
        const float *pb;
        int s;
        st = attn_model_attention_probs(m, l, &pb, &s, err);
        for (int h = 0; !st && h < NH; h++)
            for (int q = 0; q < S; q++)
                for (int k = 0; k < S; k++) {
                    const float a = probs_a[(((size_t)l * NH + h) * S + map[q]) * S + map[k]];
                    const float b = pb[((size_t)h * S + q) * S + k];
                    v->pair_attention = fmax(v->pair_attention, fabs((double)a - b));
                }
    }
    free(probs_a);
    v->pair_logit[0] = la, v->pair_logit[1] = lb;
    v->pair_change = fabs((double)la - lb);
    return st;
}

/* Logits of d's sentences, each with its words in the order given by `shuffled`. */
static attn_status logits_of(attn_model *m, const attn_dataset *d, const int *words, float *logits,
                             attn_error *err) {
    int *ids = malloc((size_t)EVAL_BATCH * ATTN_MAX_WORDS * sizeof *ids);
    if (!ids) return attn_errorf(err, ATTN_ERR_NOMEM, "equivariance: out of memory");
    attn_status st = ATTN_OK;
    for (int first = 0; !st && first < d->n; first += EVAL_BATCH) {
        const int B = d->n - first < EVAL_BATCH ? d->n - first : EVAL_BATCH;
        int T = 1;
        for (int i = 0; i < B; i++) T = d->lengths[first + i] > T ? d->lengths[first + i] : T;
        memset(ids, 0, (size_t)B * T * sizeof *ids);
        for (int i = 0; i < B; i++)
            memcpy(ids + (size_t)i * T, words + d->offsets[first + i],
                   (size_t)d->lengths[first + i] * sizeof *ids);
        attn_batch b = {B, T, ids, d->lengths + first};
        st = attn_model_forward(m, &b, logits + first, err);
    }
    free(ids);
    return st;
}

/* The test sentences with their words shuffled: largest change, flipped predictions. */
static attn_status measure_shuffled(attn_model *m, const attn_dataset *d, const int *shuffled,
                                    invariance *v, attn_error *err) {
    float *la = malloc((size_t)d->n * sizeof *la), *lb = malloc((size_t)d->n * sizeof *lb);
    v->changes = malloc((size_t)d->n * sizeof *v->changes);
    attn_status st = la && lb && v->changes
                         ? ATTN_OK
                         : attn_errorf(err, ATTN_ERR_NOMEM, "equivariance: out of memory");
    if (!st) st = logits_of(m, d, d->ids, la, err);
    if (!st) st = logits_of(m, d, shuffled, lb, err);
    v->shuffle_change = v->shuffle_flipped = 0.0;
    v->n = st ? 0 : d->n;
    for (int i = 0; i < v->n; i++) {
        v->changes[i] = fabs((double)la[i] - lb[i]);
        v->shuffle_change = fmax(v->shuffle_change, v->changes[i]);
        v->shuffle_flipped += ((la[i] > 0.0f) != (lb[i] > 0.0f)) / (double)d->n;
    }
    if (v->n) qsort(v->changes, (size_t)v->n, sizeof *v->changes, exp_cmp_double);
    free(la);
    free(lb);
    return st;
}

static attn_status measure(attn_model *m, const attn_dataset *d, const int *shuffled, invariance *v,
                           attn_error *err) {
    attn_status st = measure_pair(m, v, err);
    if (!st) st = measure_shuffled(m, d, shuffled, v, err);
    return st;
}

/* Records v under prefix; the sorted changes only when keep_curve. */
static attn_status put_invariance(attn_experiment_result *r, const char *prefix,
                                  const invariance *v, bool keep_curve, attn_error *err) {
    char k[64];
    attn_status st = ATTN_OK;
#define PUT(suffix, value)                                                                         \
    do {                                                                                           \
        snprintf(k, sizeof k, "%s.%s", prefix, suffix);                                            \
        if (!st) st = exp_put(r, k, value, err);                                                   \
    } while (0)
    PUT("pair_logit_a", v->pair_logit[0]);
    PUT("pair_logit_b", v->pair_logit[1]);
    PUT("pair_logit_change", v->pair_change);
    PUT("pair_attention_difference", v->pair_attention);
    PUT("shuffled_max_logit_change", v->shuffle_change);
    PUT("shuffled_fraction_flipped", v->shuffle_flipped);
#undef PUT
    snprintf(k, sizeof k, "%s.shuffled_logit_changes_sorted", prefix);
    if (!st && keep_curve) st = exp_put_array(r, k, v->n, v->changes, err);
    return st;
}

/* ---- the experiment ---------------------------------------------------------------------- */

/* Each test sentence's words shuffled (a permutation that moves at least one word when the
 * sentence has two different words). */
static attn_status shuffle_words(const attn_dataset *d, int **out, attn_error *err) {
    int *w = malloc(d->offsets[d->n] * sizeof *w);
    if (!w) return attn_errorf(err, ATTN_ERR_NOMEM, "equivariance: out of memory");
    memcpy(w, d->ids, d->offsets[d->n] * sizeof *w);
    attn_rng r = attn_rng_seed(7);
    for (int i = 0; i < d->n; i++) {
        int *s = w + d->offsets[i];
        for (int tries = 0; tries < 8; tries++) {
            attn_rng_shuffle(&r, s, d->lengths[i]);
            if (memcmp(s, d->ids + d->offsets[i], (size_t)d->lengths[i] * sizeof *s) != 0) break;
        }
    }
    *out = w;
    return ATTN_OK;
}

static const attn_set test_sets[ATTN_N_TEST_SETS] = {ATTN_SET_PLAIN, ATTN_SET_DISTRACTOR,
                                                     ATTN_SET_FILL4, ATTN_SET_FILL8};

/* Part 2 for one seed: train with and without positions, measure both. */
static attn_status trained_pair(const attn_experiment_opts *o, int seed, const attn_dataset *test,
                                const int *shuffled, invariance *without, invariance *with,
                                double acc[2][ATTN_N_TEST_SETS], attn_error *err) {
    const int n_train = o->quick ? 2000 : ATTN_TRAIN_DEFAULT_N, epochs = o->quick ? 3 : 20;
    attn_dataset *train = NULL;
    attn_status st = attn_data_generate(ATTN_SET_TRAIN, n_train, (uint64_t)seed, &train, err);
    for (int k = 0; !st && k < 2; k++) {
        exp_progress(o, "equivariance: training seed %d %s positions", seed,
                     k ? "with" : "without");
        attn_model_config cfg = attn_model_config_default(ATTN_ARCH_TRANSFORMER);
        if (k == 0) cfg.pos = ATTN_POS_NONE;
        attn_model *m = NULL;
        st = attn_model_create(&cfg, (uint64_t)seed, &m, err);
        if (!st) st = exp_train_loop(m, train, epochs, 32, (uint64_t)seed, err);
        if (!st) st = measure(m, test, shuffled, k ? with : without, err);
        for (int s = 0; !st && s < ATTN_N_TEST_SETS; s++) {
            attn_dataset *t = NULL;
            st = attn_data_generate(test_sets[s], o->quick ? 500 : ATTN_TEST_DEFAULT_N,
                                    (uint64_t)seed, &t, err);
            if (!st) st = attn_evaluate(m, t, 0, t->n, 256, &acc[k][s], err);
            attn_dataset_free(t);
        }
        attn_model_free(m);
    }
    attn_dataset_free(train);
    return st;
}

attn_status exp_equivariance_run(const attn_experiment_opts *o, attn_experiment_result *r,
                                 attn_error *err) {
    const int seeds = o->seeds > 0 ? o->seeds : o->quick ? 1 : 3;
    attn_dataset *test = NULL;
    int *shuffled = NULL;
    attn_status st =
        attn_data_generate(ATTN_SET_PLAIN, o->quick ? 200 : ATTN_TEST_DEFAULT_N, 1, &test, err);
    if (!st) st = shuffle_words(test, &shuffled, err);
    /* worst cases over seeds: largest change without positions, smallest with */
    double none_max = 0.0, none_attn = 0.0, pos_min = INFINITY;
    for (int s = 1; !st && s <= seeds; s++) {
        invariance removed = {0}, kept = {0}, t_none = {0}, t_pos = {0};
        double acc[2][ATTN_N_TEST_SETS] = {{0}};
        attn_model *m = NULL;
        char prefix[64];
        exp_progress(o, "equivariance: weights seed %d", s);
        st = exp_load_weights(o, "transformer", s, &m, err);
        if (!st) st = measure(m, test, shuffled, &kept, err);
        if (!st) st = attn_model_remove_positions(&m, err);
        if (!st) st = measure(m, test, shuffled, &removed, err);
        attn_model_free(m);
        if (!st) st = trained_pair(o, s, test, shuffled, &t_none, &t_pos, acc, err);
        snprintf(prefix, sizeof prefix, "weights_seed%d.positions_removed", s);
        if (!st) st = put_invariance(r, prefix, &removed, s == 1, err);
        snprintf(prefix, sizeof prefix, "weights_seed%d.with_positions", s);
        if (!st) st = put_invariance(r, prefix, &kept, s == 1, err);
        snprintf(prefix, sizeof prefix, "trained_seed%d.without_positions", s);
        if (!st) st = put_invariance(r, prefix, &t_none, s == 1, err);
        snprintf(prefix, sizeof prefix, "trained_seed%d.with_positions", s);
        if (!st) st = put_invariance(r, prefix, &t_pos, s == 1, err);
        snprintf(prefix, sizeof prefix, "trained_seed%d.without_positions.accuracy", s);
        if (!st) st = exp_put_array(r, prefix, ATTN_N_TEST_SETS, acc[0], err);
        snprintf(prefix, sizeof prefix, "trained_seed%d.with_positions.accuracy", s);
        if (!st) st = exp_put_array(r, prefix, ATTN_N_TEST_SETS, acc[1], err);
        const invariance *none[2] = {&removed, &t_none}, *pos[2] = {&kept, &t_pos};
        for (int k = 0; k < 2; k++) {
            none_max = fmax(none_max, fmax(none[k]->pair_change, none[k]->shuffle_change));
            none_attn = fmax(none_attn, none[k]->pair_attention);
            pos_min = fmin(pos_min, fmax(pos[k]->pair_change, pos[k]->shuffle_change));
        }
        free(removed.changes);
        free(kept.changes);
        free(t_none.changes);
        free(t_pos.changes);
    }
    attn_dataset_free(test);
    free(shuffled);
    if (!st) st = exp_put(r, "seeds", seeds, err);
    if (!st) st = exp_put(r, "without_positions.max_logit_change", none_max, err);
    if (!st) st = exp_put(r, "without_positions.max_attention_difference", none_attn, err);
    if (!st) st = exp_put(r, "with_positions.min_of_max_logit_change", pos_min, err);
    if (st) return st;
    exp_equivariance_verdict(r);
    return ATTN_OK;
}

/* holds if without positions every model is invariant (logit change <= 1e-4, attention maps
 * <= 1e-5 apart under permutation) and with positions every model's order matters (its
 * largest logit change > 1e-2); mixed if one of the two. */
void exp_equivariance_verdict(attn_experiment_result *r) {
    const double none_max = exp_get(r, "without_positions.max_logit_change");
    const double none_attn = exp_get(r, "without_positions.max_attention_difference");
    const double pos_min = exp_get(r, "with_positions.min_of_max_logit_change");
    const bool invariant = none_max <= 1e-4 && none_attn <= 1e-5;
    const bool order_matters = pos_min > 1e-2;
    exp_verdict(r,
                invariant && order_matters   ? ATTN_VERDICT_HOLDS
                : invariant || order_matters ? ATTN_VERDICT_MIXED
                                             : ATTN_VERDICT_DOES_NOT_HOLD,
                "without positions the logit moved by at most %.3g (%s 1e-4) and the attention "
                "maps by %.3g (%s 1e-5) under permutation; with positions by at least %.3g in "
                "every model (%s 1e-2)",
                none_max, none_max <= 1e-4 ? "<=" : ">", none_attn, none_attn <= 1e-5 ? "<=" : ">",
                pos_min, pos_min > 1e-2 ? ">" : "<=");
}

attn_status exp_equivariance_plot(const attn_experiment_result *r, const char *path,
                                  attn_error *err) {
    static const char *const keys[4] = {
        "weights_seed1.with_positions", "trained_seed1.with_positions",
        "weights_seed1.positions_removed", "trained_seed1.without_positions"};
    static const char *const titles[4] = {
        "weights/ seed 1, with positions", "trained here, with positions",
        "weights/ seed 1, positions removed (pos none)", "trained here without positions"};
    attn_plot_series s[4];
    double *x = NULL, *y[4] = {NULL};
    int n = 0;
    attn_status st = ATTN_OK;
    for (int k = 0; k < 4 && !st; k++) {
        char key[96];
        snprintf(key, sizeof key, "%s.shuffled_logit_changes_sorted", keys[k]);
        const attn_measure *m = attn_experiment_measure(r, key);
        if (!m) continue;
        if (!x) {
            x = malloc((size_t)m->n * sizeof *x);
            if (!x) break;
            for (int i = 0; i < m->n; i++) x[i] = 100.0 * (i + 1) / m->n;
        }
        y[n] = malloc((size_t)m->n * sizeof *y[n]);
        if (!y[n]) break;
        /* a log axis has no 0: an exact zero is drawn at 1e-9 (the chart says so) */
        for (int i = 0; i < m->n; i++) y[n][i] = m->values[i] > 1e-9 ? m->values[i] : 1e-9;
        s[n] = (attn_plot_series){titles[k], m->n, x, y[n], .dashed = k >= 2};
        n++;
    }
    if (n == 0)
        st = attn_errorf(err, ATTN_ERR_ARG, "equivariance plot: no logit changes in the result");
    else if (!x || !y[n - 1])
        st = attn_errorf(err, ATTN_ERR_NOMEM, "equivariance plot: out of memory");
    if (!st) {
        const attn_plot p = {.title = "|logit change| when a test sentence's words are shuffled",
                             .xlabel = "test sentences, sorted by change (percent)",
                             .ylabel = "|logit(shuffled) - logit(original)| (0 drawn at 10^{-9})",
                             .log_y = true,
                             .key = "top left",
                             .n_series = n,
                             .series = s};
        st = attn_plot_lines(&p, path, err);
    }
    free(x);
    for (int k = 0; k < 4; k++) free(y[k]);
    return st;
}

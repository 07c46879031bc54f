/* experiments_decoder_length.c -- `attn experiment looking-back` (write-up §1, §6; Bahdanau,
 * Cho, Bengio 2015, Fig. 2): an encoder-decoder that squeezes the source into one vector falls
 * off with the source's length; one that looks back at every source word (additive attention,
 * or the Transformer's cross-attention) holds.
 *
 * The trained seq2seq-gru, seq2seq-attn and seq2seq-transformer of each seed decode the four
 * rewrite test sets of their seed greedily (attn_seq2seq_evaluate: exact match of the whole
 * target); the pairs are binned by source length (1-10, 11-20, .., 51+ words; the fill8 set
 * brings the 41-60-word sources). The number compared is each model's drop: exact match on
 * 1-10-word sources minus exact match on sources of 41 words or more, pooled over the seeds. */
#include "attn_plot.h"
#include "experiments_decoder.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_MODELS  3
#define N_BINS    6
#define BIN_WORDS 10
#define LONG_BIN  4 /* bins 4 and 5: 41 words or more */
#define MAX_SEEDS 16
#define FALLS     10.0 /* the single vector falls off: drop >= 10 points */
#define HOLDS     5.0  /* attention holds: drop < 5 points */
#define LEARNT    50.0 /* a model below 50 % exact match on short sources has not learnt the task */
static const char *const models[N_MODELS] = {"seq2seq-gru", "seq2seq-attn", "seq2seq-transformer"};
static const char *const titles[N_MODELS] = {
    "seq2seq-gru (one vector)", "seq2seq-attn (additive attention)", "seq2seq-transformer"};

static int bin_of(int words) {
    const int b = (words - 1) / BIN_WORDS;
    return b < N_BINS - 1 ? b : N_BINS - 1;
}

typedef struct length_counts {
    double pairs[MAX_SEEDS][N_BINS], exact[MAX_SEEDS][N_BINS];
} length_counts;

static attn_status score_seed(const attn_experiment_opts *o, int a, int seed, int n,
                              length_counts *c, bool *here, attn_error *err) {
    attn_seq2seq *m = NULL;
    attn_pairs *sets[ATTN_N_TEST_SETS] = {0};
    attn_status st = exp_s2s_model(o, models[a], seed, &m, here, err);
    if (!st) st = exp_s2s_test_sets(n, (uint64_t)seed, sets, err);
    exp_progress(o, "looking-back: %s seed %d", models[a], seed);
    for (int k = 0; !st && k < ATTN_N_TEST_SETS; k++)
        for (int i = 0; !st && i < sets[k]->src->n; i++) {
            attn_s2s_eval ev;
            st = attn_seq2seq_evaluate(m, sets[k], i, 1, &ev, err);
            const int b = bin_of(sets[k]->src->lengths[i]);
            c->pairs[seed - 1][b]++;
            c->exact[seed - 1][b] += !st && ev.exact == 1.0;
        }
    exp_s2s_test_sets_free(sets);
    attn_seq2seq_free(m);
    return st;
}

/* Pooled exact match (%) of bins [b0, b1] over the seeds; NaN without pairs. */
static double pooled(const length_counts *c, int seeds, int b0, int b1) {
    double p = 0, e = 0;
    for (int s = 0; s < seeds; s++)
        for (int b = b0; b <= b1; b++) p += c->pairs[s][b], e += c->exact[s][b];
    return p > 0 ? 100.0 * e / p : NAN;
}

static attn_status put_model(attn_experiment_result *r, int a, const length_counts *c, int seeds,
                             attn_error *err) {
    double centre[N_BINS], mean[N_BINS], lo[N_BINS], hi[N_BINS], pairs[N_BINS];
    int n = 0;
    for (int b = 0; b < N_BINS; b++) {
        double p = 0, mn = INFINITY, mx = -INFINITY;
        for (int s = 0; s < seeds; s++) {
            p += c->pairs[s][b];
            if (c->pairs[s][b] > 0) {
                const double v = 100.0 * c->exact[s][b] / c->pairs[s][b];
                mn = fmin(mn, v), mx = fmax(mx, v);
            }
        }
        if (p == 0) continue;
        centre[n] = b * BIN_WORDS + 5.5; /* the last bin, 51+, drawn at 55.5 */
        mean[n] = pooled(c, seeds, b, b), lo[n] = mn, hi[n] = mx, pairs[n] = p;
        n++;
    }
    char k[64];
    attn_status st = ATTN_OK;
    if (a == 0 && n > 0) st = exp_put_array(r, "source_words_bin_centre", n, centre, err);
    if (!st && a == 0 && n > 0) st = exp_put_array(r, "pairs_per_bin", n, pairs, err);
    snprintf(k, sizeof k, "%s.exact_percent", models[a]);
    if (!st && n > 0) st = exp_put_array(r, k, n, mean, err);
    snprintf(k, sizeof k, "%s.exact_percent_min_seed", models[a]);
    if (!st && n > 0) st = exp_put_array(r, k, n, lo, err);
    snprintf(k, sizeof k, "%s.exact_percent_max_seed", models[a]);
    if (!st && n > 0) st = exp_put_array(r, k, n, hi, err);
    const double shrt = pooled(c, seeds, 0, 0), lng = pooled(c, seeds, LONG_BIN, N_BINS - 1);
    snprintf(k, sizeof k, "%s.short_exact_percent", models[a]);
    if (!st && !isnan(shrt)) st = exp_put(r, k, shrt, err);
    snprintf(k, sizeof k, "%s.long_exact_percent", models[a]);
    if (!st && !isnan(lng)) st = exp_put(r, k, lng, err);
    snprintf(k, sizeof k, "%s.drop_points", models[a]);
    if (!st && !isnan(shrt - lng)) st = exp_put(r, k, shrt - lng, err);
    return st;
}

attn_status exp_looking_back_run(const attn_experiment_opts *o, attn_experiment_result *r,
                                 attn_error *err) {
    const int seeds = o->seeds > 0 ? (o->seeds < MAX_SEEDS ? o->seeds : MAX_SEEDS)
                      : o->quick   ? 1
                                   : 3;
    const int n = o->quick ? 100 : ATTN_TEST_DEFAULT_N;
    length_counts *c = calloc(1, sizeof *c);
    attn_status st = c ? ATTN_OK : attn_errorf(err, ATTN_ERR_NOMEM, "looking-back: out of memory");
    double trained_here = 0;
    for (int a = 0; !st && a < N_MODELS; a++) {
        memset(c, 0, sizeof *c);
        for (int s = 1; !st && s <= seeds; s++) {
            bool here = false;
            st = score_seed(o, a, s, n, c, &here, err);
            trained_here += here;
        }
        if (!st) st = put_model(r, a, c, seeds, err);
    }
    free(c);
    if (!st) st = exp_put(r, "seeds", seeds, err);
    if (!st) st = exp_put(r, "pairs_per_test_set", n, err);
    if (!st) st = exp_put(r, "models_trained_here", trained_here, err);
    if (st) return st;
    exp_looking_back_verdict(r);
    return ATTN_OK;
}

/* holds if seq2seq-gru's exact match drops by >= 10 points from 1-10-word sources to sources of
 * 41+ words AND seq2seq-attn's and seq2seq-transformer's each by < 5 points; mixed if one part
 * holds; mixed without a verdict when a model is below 50 % on the short sources. */
void exp_looking_back_verdict(attn_experiment_result *r) {
    double drop[N_MODELS], shrt[N_MODELS], lng[N_MODELS];
    for (int a = 0; a < N_MODELS; a++) {
        char k[64];
        snprintf(k, sizeof k, "%s.drop_points", models[a]);
        drop[a] = exp_get(r, k);
        snprintf(k, sizeof k, "%s.short_exact_percent", models[a]);
        shrt[a] = exp_get(r, k);
        snprintf(k, sizeof k, "%s.long_exact_percent", models[a]);
        lng[a] = exp_get(r, k);
    }
    const bool falls = drop[0] >= FALLS, holds = drop[1] < HOLDS && drop[2] < HOLDS;
    for (int a = 0; a < N_MODELS; a++)
        if (!(shrt[a] >= LEARNT)) {
            exp_verdict(r, ATTN_VERDICT_MIXED,
                        "no verdict: %s reaches only %.1f%% exact match on 1-10-word sources "
                        "(< %.0f%%: it has not learnt the task, as a --quick model trained here); "
                        "drops: seq2seq-gru %.1f, seq2seq-attn %.1f, seq2seq-transformer %.1f "
                        "points",
                        models[a], shrt[a], LEARNT, drop[0], drop[1], drop[2]);
            return;
        }
    exp_verdict(r,
                falls && holds   ? ATTN_VERDICT_HOLDS
                : falls || holds ? ATTN_VERDICT_MIXED
                                 : ATTN_VERDICT_DOES_NOT_HOLD,
                "exact match on 1-10-word sources -> 41+ words: seq2seq-gru %.1f%% -> %.1f%% "
                "(drop %.1f points, %s 10), seq2seq-attn %.1f%% -> %.1f%% (%.1f), "
                "seq2seq-transformer %.1f%% -> %.1f%% (%.1f) (%s 5)",
                shrt[0], lng[0], drop[0], falls ? ">=" : "<", shrt[1], lng[1], drop[1], shrt[2],
                lng[2], drop[2], holds ? "both <" : "not both <");
}

attn_status exp_looking_back_plot(const attn_experiment_result *r, const char *path,
                                  attn_error *err) {
    const attn_measure *x = attn_experiment_measure(r, "source_words_bin_centre");
    if (!x) return attn_errorf(err, ATTN_ERR_ARG, "looking-back plot: no bins in the result");
    attn_plot_series s[N_MODELS];
    int n = 0;
    for (int a = 0; a < N_MODELS; a++) {
        char k[3][64];
        snprintf(k[0], sizeof k[0], "%s.exact_percent", models[a]);
        snprintf(k[1], sizeof k[1], "%s.exact_percent_min_seed", models[a]);
        snprintf(k[2], sizeof k[2], "%s.exact_percent_max_seed", models[a]);
        const attn_measure *y = attn_experiment_measure(r, k[0]);
        const attn_measure *lo = attn_experiment_measure(r, k[1]);
        const attn_measure *hi = attn_experiment_measure(r, k[2]);
        if (!y || y->n != x->n) continue;
        const bool band = lo && hi && lo->n == x->n && hi->n == x->n && exp_get(r, "seeds") > 1;
        s[n++] = (attn_plot_series){titles[a],
                                    x->n,
                                    x->values,
                                    y->values,
                                    band ? lo->values : NULL,
                                    band ? hi->values : NULL,
                                    .points = true};
    }
    if (n == 0) return attn_errorf(err, ATTN_ERR_ARG, "looking-back plot: no exact matches");
    char title[160];
    snprintf(title, sizeof title,
             "Exact match against source length (rewrite test sets, %g seed%s)",
             exp_get(r, "seeds"), exp_get(r, "seeds") > 1 ? "s, band: range over seeds" : "");
    const attn_plot p = {.title = title,
                         .xlabel = "source length (words; bins of 10, the last 51+)",
                         .ylabel = "exact match (%)",
                         .key = "bottom left",
                         .y_min = 0,
                         .y_max = 102,
                         .n_series = n,
                         .series = s};
    return attn_plot_lines(&p, path, err);
}

/* experiments_decoder_align.c -- `attn experiment alignment` (write-up §6, §7; Bahdanau, Cho,
 * Bengio 2015, Fig. 3): the decoder's attention over the source is an alignment -- for each
 * word it writes, it looks most at the source word that word comes from.
 *
 * The rewrite generator knows where each target word comes from (attn_pairs.align): the
 * subject, the negation and the adjective are copied from their source positions, and the
 * polarity word ("positive"/"negative") comes from the first adjective, the word that decides
 * it. Each test pair is run teacher forced ([BOS] + its target) through the trained models and
 * attn_seq2seq_maps gives the cross-attention the forward used; decoder row t writes target word
 * t, so the measurement is how often the argmax over the source of row t is align[t] -- for
 * seq2seq-attn's additive attention, for each layer and head of seq2seq-transformer and for the
 * mean of each layer's heads, over all target words, the copied ones and the polarity word. */
#include "attn_plot.h"
#include "experiments_decoder.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_MODELS  2
#define MAX_MAPS  (ATTN_TRANSFORMER_MAX_LAYERS * 9) /* heads per layer + the layer's mean */
#define MAX_HEADS 8
#define ALIGNS    0.8 /* "aligns": the most-attended source word is the right one >= 80 % */
#define N_KINDS   3
static const char *const models[N_MODELS] = {"seq2seq-attn", "seq2seq-transformer"};
static const char *const kinds[N_KINDS] = {"all", "copied", "polarity"};

typedef struct align_counts {
    int n_maps;               /* the model's maps: L x (NH heads [+ the mean if NH > 1]) */
    char names[MAX_MAPS][32]; /* "L0.H1", "L1.mean", "alignment" */
    double hit[MAX_MAPS][N_KINDS], words[N_KINDS];
    double chance; /* sum over target words of 1 / n_src */
} align_counts;

static int argmax(const float *row, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (row[i] > row[best]) best = i;
    return best;
}

/* One pair: the maps of [BOS] + target, each row t < n_tgt scored against align[t]. */
static attn_status score_pair(attn_seq2seq *m, const attn_pairs *p, int i, int L, int NH,
                              float *cross, float *mean, align_counts *c, attn_error *err) {
    int n_src, dec[ATTN_S2S_MAX_TGT + 1];
    const int *src = exp_pair_source(p, i, &n_src);
    const int n_tgt = p->tgt_lengths[i], n_dec = n_tgt + 1;
    dec[0] = ATTN_TGT_BOS;
    memcpy(dec + 1, p->tgt_ids + p->tgt_offsets[i], (size_t)n_tgt * sizeof *dec);
    attn_status st = attn_seq2seq_maps(m, src, n_src, dec, n_dec, cross, NULL, err);
    if (st != ATTN_OK) return st;
    const int *align = p->align + p->tgt_offsets[i];
    const size_t map = (size_t)n_dec * n_src;
    for (int t = 0; t < n_tgt; t++) {
        const int tok = dec[t + 1];
        const int kind = tok == ATTN_TGT_POSITIVE || tok == ATTN_TGT_NEGATIVE ? 2 : 1;
        c->words[0]++, c->words[kind]++;
        c->chance += 1.0 / n_src;
        int k = 0;
        for (int l = 0; l < L; l++) {
            for (int j = 0; j < n_src; j++) mean[j] = 0.0f;
            for (int h = 0; h < NH; h++) {
                const float *row = cross + ((size_t)l * NH + h) * map + (size_t)t * n_src;
                for (int j = 0; j < n_src; j++) mean[j] += row[j] / (float)NH;
                const bool hit = argmax(row, n_src) == align[t];
                c->hit[k][0] += hit, c->hit[k][kind] += hit;
                k++;
            }
            if (NH > 1) {
                const bool hit = argmax(mean, n_src) == align[t];
                c->hit[k][0] += hit, c->hit[k][kind] += hit;
                k++;
            }
        }
    }
    return ATTN_OK;
}

static attn_status align_model(const attn_experiment_opts *o, int a, int n, align_counts *c,
                               attn_error *err) {
    attn_seq2seq *m = NULL;
    attn_pairs *sets[ATTN_N_TEST_SETS] = {0};
    float *cross = NULL, *mean = NULL;
    int L = 0, NH = 0;
    bool self = false;
    attn_status st = exp_s2s_model(o, models[a], 1, &m, NULL, err);
    if (!st && !attn_seq2seq_map_shape(m, &L, &NH, &self))
        st = attn_errorf(err, ATTN_ERR_VALUE, "alignment: %s has no attention maps", models[a]);
    if (!st && (L * (NH + 1) > MAX_MAPS || NH > MAX_HEADS))
        st = attn_errorf(err, ATTN_ERR_VALUE, "alignment: %d layers x %d heads, at most %d maps", L,
                         NH, MAX_MAPS);
    if (!st) st = exp_s2s_test_sets(n, 1, sets, err);
    if (!st) {
        const size_t S = ATTN_MAX_WORDS, T = ATTN_S2S_MAX_TGT + 1;
        cross = malloc((size_t)L * NH * T * S * sizeof *cross);
        mean = malloc(S * sizeof *mean);
        if (!cross || !mean) st = attn_errorf(err, ATTN_ERR_NOMEM, "alignment: out of memory");
    }
    c->n_maps = 0;
    for (int l = 0; !st && l < L; l++) {
        for (int h = 0; h < NH; h++)
            snprintf(c->names[c->n_maps++], sizeof c->names[0],
                     NH == 1 && L == 1 ? "alignment" : "L%d.H%d", l, h);
        if (NH > 1) snprintf(c->names[c->n_maps++], sizeof c->names[0], "L%d.mean", l);
    }
    exp_progress(o, "alignment: %s", models[a]);
    for (int k = 0; !st && k < ATTN_N_TEST_SETS; k++)
        for (int i = 0; !st && i < sets[k]->src->n; i++)
            st = score_pair(m, sets[k], i, L, NH, cross, mean, c, err);
    free(cross);
    free(mean);
    exp_s2s_test_sets_free(sets);
    attn_seq2seq_free(m);
    return st;
}

static attn_status put_model(attn_experiment_result *r, int a, const align_counts *c,
                             attn_error *err) {
    char key[64];
    attn_status st = ATTN_OK;
    int best = -1;
    for (int k = 0; !st && k < c->n_maps; k++) {
        for (int kind = 0; !st && kind < N_KINDS; kind++) {
            snprintf(key, sizeof key, "%s.%s.%s", models[a], c->names[k], kinds[kind]);
            if (c->words[kind] > 0) st = exp_put(r, key, c->hit[k][kind] / c->words[kind], err);
        }
        if (!strstr(c->names[k], "mean") && (best < 0 || c->hit[k][0] > c->hit[best][0])) best = k;
    }
    if (st || best < 0) return st;
    int l = 0, h = 0;
    sscanf(c->names[best], "L%d.H%d", &l, &h);
    snprintf(key, sizeof key, "%s.best.share", models[a]);
    st = exp_put(r, key, c->hit[best][0] / c->words[0], err);
    snprintf(key, sizeof key, "%s.best.layer", models[a]);
    if (!st) st = exp_put(r, key, l, err);
    snprintf(key, sizeof key, "%s.best.head", models[a]);
    if (!st) st = exp_put(r, key, h, err);
    snprintf(key, sizeof key, "%s.target_words", models[a]);
    if (!st) st = exp_put(r, key, c->words[0], err);
    snprintf(key, sizeof key, "%s.chance_share", models[a]);
    if (!st) st = exp_put(r, key, c->chance / c->words[0], err);
    return st;
}

attn_status exp_alignment_run(const attn_experiment_opts *o, attn_experiment_result *r,
                              attn_error *err) {
    const int n = o->quick ? 25 : 250;
    align_counts *c = malloc(sizeof *c);
    attn_status st = c ? ATTN_OK : attn_errorf(err, ATTN_ERR_NOMEM, "alignment: out of memory");
    for (int a = 0; !st && a < N_MODELS; a++) {
        memset(c, 0, sizeof *c);
        st = align_model(o, a, n, c, err);
        if (!st) st = put_model(r, a, c, err);
    }
    free(c);
    if (!st) st = exp_put(r, "pairs", 4.0 * n, err);
    if (st) return st;
    exp_alignment_verdict(r);
    return ATTN_OK;
}

/* holds if seq2seq-attn's most-attended source word is the one the target word comes from for
 * >= 80 % of the target words AND so is that of the Transformer's best head; mixed if one. */
void exp_alignment_verdict(attn_experiment_result *r) {
    const double attn = exp_get(r, "seq2seq-attn.best.share");
    const double tf = exp_get(r, "seq2seq-transformer.best.share");
    const bool a_ok = attn >= ALIGNS, t_ok = tf >= ALIGNS;
    exp_verdict(r,
                a_ok && t_ok   ? ATTN_VERDICT_HOLDS
                : a_ok || t_ok ? ATTN_VERDICT_MIXED
                               : ATTN_VERDICT_DOES_NOT_HOLD,
                "the most-attended source word is the one the target word comes from: "
                "seq2seq-attn %.1f%% of the target words (%s 80%%), seq2seq-transformer's best "
                "head (layer %g, head %g, from 1) %.1f%% (%s 80%%); chance about %.1f%%",
                100 * attn, a_ok ? ">=" : "<", exp_get(r, "seq2seq-transformer.best.layer") + 1,
                exp_get(r, "seq2seq-transformer.best.head") + 1, 100 * tf, t_ok ? ">=" : "<",
                100 * exp_get(r, "seq2seq-transformer.chance_share"));
}

attn_status exp_alignment_plot(const attn_experiment_result *r, const char *path, attn_error *err) {
    /* the maps present in the result, in order: seq2seq-attn's, then the Transformer's */
    const char *cats[MAX_MAPS + 1];
    char names[MAX_MAPS + 1][48];
    double values[N_KINDS][MAX_MAPS + 1];
    int n = 0;
    for (int i = 0; i < r->n_measures && n < MAX_MAPS + 1; i++) {
        const char *name = r->measures[i].name;
        const size_t len = strlen(name);
        if (len < 4 || strcmp(name + len - 4, ".all") != 0 || strncmp(name, "seq2seq-", 8) != 0)
            continue;
        char stem[64];
        snprintf(stem, sizeof stem, "%.*s", (int)(len - 4), name);
        for (int k = 0; k < N_KINDS; k++) {
            char key[80];
            snprintf(key, sizeof key, "%s.%s", stem, kinds[k]);
            values[k][n] = 100.0 * exp_get(r, key);
            if (isnan(values[k][n])) values[k][n] = 0.0;
        }
        const bool tf = strncmp(stem, "seq2seq-transformer.", 20) == 0;
        int l = 0, h = 0; /* the measurements count from 0, the chart from 1 */
        if (!tf)
            snprintf(names[n], sizeof names[n], "seq2seq-attn");
        else if (sscanf(stem + 20, "L%d.H%d", &l, &h) == 2)
            snprintf(names[n], sizeof names[n], "L%d H%d", l + 1, h + 1);
        else if (sscanf(stem + 20, "L%d", &l) == 1)
            snprintf(names[n], sizeof names[n], "L%d mean", l + 1);
        cats[n] = names[n];
        n++;
    }
    if (n == 0) return attn_errorf(err, ATTN_ERR_ARG, "alignment plot: no shares in the result");
    double flat[N_KINDS * (MAX_MAPS + 1)];
    for (int k = 0; k < N_KINDS; k++)
        for (int i = 0; i < n; i++) flat[k * n + i] = values[k][i];
    static const char *const series[N_KINDS] = {"every target word",
                                                "copied words (subject, negation, adjective)",
                                                "the polarity word (from the adjective)"};
    char title[192];
    snprintf(title, sizeof title,
             "How often the most-attended source word is the one the target word comes from "
             "(seed 1; chance %.0f %%)",
             100 * exp_get(r, "seq2seq-transformer.chance_share"));
    const attn_bars b = {.title = title,
                         .xlabel = "seq2seq-attn; seq2seq-transformer: layer L, head H (from 1)",
                         .ylabel = "target words (%)",
                         .n_categories = n,
                         .categories = cats,
                         .n_series = N_KINDS,
                         .series_titles = series,
                         .values = flat,
                         .y_min = 0,
                         .y_max = 105};
    return attn_plot_bars(&b, path, err);
}

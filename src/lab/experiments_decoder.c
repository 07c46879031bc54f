/* experiments_decoder.c -- what the decoder experiments share (experiments_decoder.h) and
 * `attn experiment causal-mask` (write-up §6): the causal mask keeps a prediction from peeking
 * at the answer.
 *
 * Teacher forcing feeds the decoder [BOS] w1 .. wn; row t predicts word t + 1 and, with the
 * mask, reads rows 0 .. t only. So changing the decoder's input after position i must leave
 * every logit of rows 0 .. i bit for bit as it was, and without the mask (the same weights, the
 * self-attention run over every row: attn_seq2seq_set_causal_mask) those rows change. Measured
 * on the trained seq2seq-transformer (seed 1) over the rewrite test pairs (targets of up to 4
 * words: positions 0 .. 3), and on a freshly initialised one over random 15-word decoder
 * inputs (positions 0 .. 14): for every pair and every i, the words after i are replaced by
 * other random target tokens. */
#include "attn_plot.h"
#include "experiments_decoder.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- shared ---------------------------------------------------------------------------------- */

static attn_status train_quick(const char *arch, int seed, attn_seq2seq **out, attn_error *err) {
    attn_s2s_arch a;
    attn_status st = attn_s2s_arch_from_name(arch, &a, err);
    if (st != ATTN_OK) return st;
    const attn_seq2seq_config cfg = attn_seq2seq_config_default(a);
    attn_s2s_train_config tc = attn_s2s_train_config_default();
    tc.epochs = EXP_S2S_QUICK_EPOCHS;
    tc.holdout = 0;
    tc.seed = (uint64_t)seed;
    attn_pairs *train = NULL;
    attn_seq2seq *m = NULL;
    st = attn_pairs_generate(ATTN_TASK_REWRITE, ATTN_SET_TRAIN, EXP_S2S_QUICK_TRAIN, (uint64_t)seed,
                             &train, err);
    if (st == ATTN_OK) st = attn_seq2seq_create(&cfg, (uint64_t)seed, &m, err);
    if (st == ATTN_OK) st = attn_seq2seq_train(m, train, NULL, &tc, NULL, err);
    attn_pairs_free(train);
    if (st != ATTN_OK) {
        attn_seq2seq_free(m);
        return st;
    }
    *out = m;
    return ATTN_OK;
}

attn_status exp_s2s_model(const attn_experiment_opts *o, const char *arch, int seed,
                          attn_seq2seq **out, bool *trained_here, attn_error *err) {
    char path[1024];
    const char *dir = o->weights_dir ? o->weights_dir : "weights";
    if (trained_here) *trained_here = false;
    if (snprintf(path, sizeof path, "%s/%s-seed%d.json", dir, arch, seed) >= (int)sizeof path)
        return attn_errorf(err, ATTN_ERR_ARG, "weights directory name too long: %s", dir);
    if (o->quick && access(path, R_OK) != 0) {
        exp_progress(o, "%s seed %d: no %s, training a small one (%d epochs, %d pairs)", arch, seed,
                     path, EXP_S2S_QUICK_EPOCHS, EXP_S2S_QUICK_TRAIN);
        if (trained_here) *trained_here = true;
        return train_quick(arch, seed, out, err);
    }
    attn_status st = attn_seq2seq_load_json(path, out, err);
    if (st != ATTN_OK)
        attn_error_append(err, "(made by `attn reproduce --task rewrite --out %s`)", dir);
    return st;
}

attn_status exp_s2s_test_sets(int n, uint64_t seed, attn_pairs *sets[ATTN_N_TEST_SETS],
                              attn_error *err) {
    static const attn_set which[ATTN_N_TEST_SETS] = {ATTN_SET_PLAIN, ATTN_SET_DISTRACTOR,
                                                     ATTN_SET_FILL4, ATTN_SET_FILL8};
    attn_status st = ATTN_OK;
    for (int k = 0; k < ATTN_N_TEST_SETS; k++) sets[k] = NULL;
    for (int k = 0; st == ATTN_OK && k < ATTN_N_TEST_SETS; k++)
        st = attn_pairs_generate(ATTN_TASK_REWRITE, which[k], n, seed, &sets[k], err);
    if (st != ATTN_OK) exp_s2s_test_sets_free(sets);
    return st;
}

void exp_s2s_test_sets_free(attn_pairs *sets[ATTN_N_TEST_SETS]) {
    for (int k = 0; k < ATTN_N_TEST_SETS; k++) {
        attn_pairs_free(sets[k]);
        sets[k] = NULL;
    }
}

const int *exp_pair_source(const attn_pairs *p, int i, int *n) {
    *n = p->src->lengths[i];
    return p->src->ids + p->src->offsets[i];
}

uint32_t exp_ulp_distance(float a, float b) {
    if (a == b) return 0;
    int32_t ia, ib;
    memcpy(&ia, &a, sizeof ia);
    memcpy(&ib, &b, sizeof ib);
    /* map the sign-magnitude bit patterns onto one ordered integer line */
    const int64_t la = ia < 0 ? (int64_t)INT32_MIN - ia : ia,
                  lb = ib < 0 ? (int64_t)INT32_MIN - ib : ib;
    const int64_t d = la > lb ? la - lb : lb - la;
    return d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
}

/* ---- causal-mask ----------------------------------------------------------------------------- */

#define RANDOM_T   16 /* decoder rows of the random inputs: [BOS] + 15 words (max_tgt_len) */
#define MAX_POS    (RANDOM_T - 1)
#define CHANGED_OK 0.9 /* "they change": at least 90 % of the rows */

typedef struct mask_counts {
    double compared[MAX_POS], identical[MAX_POS]; /* logits of rows <= i, by i */
    double rows, rows_changed;                    /* rows <= i, those with a logit changed */
    double later_rows, later_changed;             /* rows > i, those with a logit changed */
    double max_change;                            /* largest |logit change| at rows <= i */
} mask_counts;

/* Compares the forward of dec[T] with that of dec changed after each i, into c. */
static attn_status compare_changes(attn_seq2seq *m, const int *src, int n_src, const int *dec,
                                   int T, attn_rng *rng, float *base, float *changed,
                                   mask_counts *c, attn_error *err) {
    const int Vt = attn_seq2seq_config_of(m)->tgt_vocab;
    int alt[RANDOM_T];
    attn_s2s_batch b = {1, n_src, T, src, &n_src, dec, &T};
    attn_status st = attn_seq2seq_forward(m, &b, base, err);
    for (int i = 0; st == ATTN_OK && i + 1 < T; i++) {
        memcpy(alt, dec, (size_t)T * sizeof *alt);
        for (int t = i + 1; t < T; t++) /* another token of the target vocabulary, not [PAD] */
            alt[t] = 1 + (dec[t] - 1 + 1 + (int)attn_rng_below(rng, (uint64_t)(Vt - 2))) % (Vt - 1);
        b.tgt_ids = alt;
        st = attn_seq2seq_forward(m, &b, changed, err);
        for (int t = 0; st == ATTN_OK && t < T; t++) {
            int same = 0;
            for (int v = 0; v < Vt; v++) {
                const size_t k = (size_t)t * Vt + v;
                same += memcmp(&base[k], &changed[k], sizeof(float)) == 0;
                if (t <= i) c->max_change = fmax(c->max_change, fabs(base[k] - changed[k]));
            }
            if (t <= i) {
                c->compared[i] += Vt, c->identical[i] += same;
                c->rows++, c->rows_changed += same < Vt;
            } else {
                c->later_rows++, c->later_changed += same < Vt;
            }
        }
    }
    return st;
}

/* Every test pair (n per set) of m, or n_random random inputs of RANDOM_T rows. */
static attn_status mask_model(attn_seq2seq *m, attn_pairs *const sets[ATTN_N_TEST_SETS],
                              int n_random, mask_counts *c, attn_error *err) {
    const int Vt = attn_seq2seq_config_of(m)->tgt_vocab;
    float *base = malloc((size_t)RANDOM_T * Vt * sizeof *base);
    float *changed = malloc((size_t)RANDOM_T * Vt * sizeof *changed);
    attn_status st =
        base && changed ? ATTN_OK : attn_errorf(err, ATTN_ERR_NOMEM, "causal-mask: out of memory");
    attn_rng rng = attn_rng_seed(7);
    int dec[RANDOM_T];
    for (int k = 0; sets && st == ATTN_OK && k < ATTN_N_TEST_SETS; k++)
        for (int i = 0; st == ATTN_OK && i < sets[k]->src->n; i++) {
            int n_src;
            const int *src = exp_pair_source(sets[k], i, &n_src);
            const int n_tgt = sets[k]->tgt_lengths[i];
            dec[0] = ATTN_TGT_BOS;
            memcpy(dec + 1, sets[k]->tgt_ids + sets[k]->tgt_offsets[i],
                   (size_t)n_tgt * sizeof *dec);
            st = compare_changes(m, src, n_src, dec, n_tgt + 1, &rng, base, changed, c, err);
        }
    for (int j = 0; st == ATTN_OK && j < n_random; j++) {
        int src[20];
        for (int s = 0; s < 20; s++) src[s] = 2 + (int)attn_rng_below(&rng, ATTN_N_WORDS);
        dec[0] = ATTN_TGT_BOS;
        for (int t = 1; t < RANDOM_T; t++) dec[t] = 1 + (int)attn_rng_below(&rng, (uint64_t)Vt - 1);
        st = compare_changes(m, src, 20, dec, RANDOM_T, &rng, base, changed, c, err);
    }
    free(base);
    free(changed);
    return st;
}

static attn_status put_counts(attn_experiment_result *r, const char *model, const char *mode,
                              const mask_counts *c, attn_error *err) {
    char k[64];
    double compared = 0, identical = 0, share[MAX_POS];
    int n_pos = 0;
    for (int i = 0; i < MAX_POS; i++) {
        compared += c->compared[i], identical += c->identical[i];
        if (c->compared[i] > 0) share[n_pos++] = 100.0 * c->identical[i] / c->compared[i];
    }
    snprintf(k, sizeof k, "%s.%s.compared_logits", model, mode);
    attn_status st = exp_put(r, k, compared, err);
    snprintf(k, sizeof k, "%s.%s.identical_logits", model, mode);
    if (!st) st = exp_put(r, k, identical, err);
    snprintf(k, sizeof k, "%s.%s.rows", model, mode);
    if (!st) st = exp_put(r, k, c->rows, err);
    snprintf(k, sizeof k, "%s.%s.rows_changed", model, mode);
    if (!st) st = exp_put(r, k, c->rows_changed, err);
    snprintf(k, sizeof k, "%s.%s.later_rows", model, mode);
    if (!st) st = exp_put(r, k, c->later_rows, err);
    snprintf(k, sizeof k, "%s.%s.later_rows_changed", model, mode);
    if (!st) st = exp_put(r, k, c->later_changed, err);
    snprintf(k, sizeof k, "%s.%s.max_abs_change", model, mode);
    if (!st) st = exp_put(r, k, c->max_change, err);
    snprintf(k, sizeof k, "%s.%s.identical_percent_by_position", model, mode);
    if (!st && n_pos > 0) st = exp_put_array(r, k, n_pos, share, err);
    return st;
}

attn_status exp_causal_mask_run(const attn_experiment_opts *o, attn_experiment_result *r,
                                attn_error *err) {
    const int n_pairs = o->quick ? 25 : 250, n_random = o->quick ? 10 : 100;
    attn_pairs *sets[ATTN_N_TEST_SETS] = {0};
    attn_seq2seq *trained = NULL, *fresh = NULL;
    bool here = false;
    attn_status st = exp_s2s_model(o, "seq2seq-transformer", 1, &trained, &here, err);
    const attn_seq2seq_config cfg = attn_seq2seq_config_default(ATTN_S2S_TRANSFORMER);
    if (!st) st = attn_seq2seq_create(&cfg, 1, &fresh, err);
    if (!st) st = exp_s2s_test_sets(n_pairs, 1, sets, err);
    for (int masked = 1; !st && masked >= 0; masked--) {
        const char *mode = masked ? "masked" : "unmasked";
        mask_counts ct = {0}, cr = {0};
        exp_progress(o, "causal-mask: %s, trained model", mode);
        st = attn_seq2seq_set_causal_mask(trained, masked, err);
        if (!st) st = attn_seq2seq_set_causal_mask(fresh, masked, err);
        if (!st) st = mask_model(trained, sets, 0, &ct, err);
        exp_progress(o, "causal-mask: %s, untrained model", mode);
        if (!st) st = mask_model(fresh, NULL, n_random, &cr, err);
        if (!st) st = put_counts(r, "trained", mode, &ct, err);
        if (!st) st = put_counts(r, "untrained", mode, &cr, err);
    }
    if (!st) st = exp_put(r, "trained_here", here, err);
    if (!st) st = exp_put(r, "test_pairs", 4.0 * n_pairs, err);
    if (!st) st = exp_put(r, "random_inputs", n_random, err);
    exp_s2s_test_sets_free(sets);
    attn_seq2seq_free(trained);
    attn_seq2seq_free(fresh);
    if (st) return st;
    exp_causal_mask_verdict(r);
    return ATTN_OK;
}

/* holds if with the mask every logit at rows <= i stays bit-identical (both models) while
 * >= 90 % of the rows after i change (the change reached the decoder), AND without the mask
 * >= 90 % of the rows <= i change (both models); mixed if one part holds. */
void exp_causal_mask_verdict(attn_experiment_result *r) {
    static const char *const models[2] = {"trained", "untrained"};
    double cmp[2], same[2], later[2], later_ch[2], rows[2], rows_ch[2];
    bool masked_ok = true, unmasked_ok = true;
    for (int i = 0; i < 2; i++) {
        char k[64];
        snprintf(k, sizeof k, "%s.masked.compared_logits", models[i]);
        cmp[i] = exp_get(r, k);
        snprintf(k, sizeof k, "%s.masked.identical_logits", models[i]);
        same[i] = exp_get(r, k);
        snprintf(k, sizeof k, "%s.masked.later_rows", models[i]);
        later[i] = exp_get(r, k);
        snprintf(k, sizeof k, "%s.masked.later_rows_changed", models[i]);
        later_ch[i] = exp_get(r, k);
        snprintf(k, sizeof k, "%s.unmasked.rows", models[i]);
        rows[i] = exp_get(r, k);
        snprintf(k, sizeof k, "%s.unmasked.rows_changed", models[i]);
        rows_ch[i] = exp_get(r, k);
        masked_ok = masked_ok && cmp[i] > 0 && same[i] == cmp[i] && later[i] > 0 &&
                    later_ch[i] >= CHANGED_OK * later[i];
        unmasked_ok = unmasked_ok && rows[i] > 0 && rows_ch[i] >= CHANGED_OK * rows[i];
    }
    exp_verdict(r,
                masked_ok && unmasked_ok   ? ATTN_VERDICT_HOLDS
                : masked_ok || unmasked_ok ? ATTN_VERDICT_MIXED
                                           : ATTN_VERDICT_DOES_NOT_HOLD,
                "with the mask, logits at positions <= i bit-identical after the words after i "
                "changed: trained %.0f / %.0f, untrained %.0f / %.0f (%s), while the rows after "
                "i changed: %.0f / %.0f and %.0f / %.0f (%s 90%%); without the mask, rows at "
                "positions <= i changed: trained %.0f / %.0f, untrained %.0f / %.0f (%s 90%%)",
                same[0], cmp[0], same[1], cmp[1],
                same[0] == cmp[0] && same[1] == cmp[1] ? "all" : "not all", later_ch[0], later[0],
                later_ch[1], later[1],
                later_ch[0] >= CHANGED_OK * later[0] && later_ch[1] >= CHANGED_OK * later[1]
                    ? ">="
                    : "not both >=",
                rows_ch[0], rows[0], rows_ch[1], rows[1], unmasked_ok ? ">=" : "not both >=");
}

attn_status exp_causal_mask_plot(const attn_experiment_result *r, const char *path,
                                 attn_error *err) {
    static const char *const models[2] = {"trained", "untrained"};
    static const char *const modes[2] = {"masked", "unmasked"};
    static const char *const categories[4] = {"trained, with the mask", "trained, without",
                                              "untrained, with the mask", "untrained, without"};
    static const char *const series[2] = {"rows at positions <= i (before the change)",
                                          "rows after i (where the words changed)"};
    double values[2][4]; /* [series][category]: rows with every logit bit-identical, % */
    for (int m = 0; m < 2; m++)
        for (int k = 0; k < 2; k++) {
            char key[64];
            double v[4];
            static const char *const what[4] = {"rows", "rows_changed", "later_rows",
                                                "later_rows_changed"};
            for (int j = 0; j < 4; j++) {
                snprintf(key, sizeof key, "%s.%s.%s", models[m], modes[k], what[j]);
                v[j] = exp_get(r, key);
                if (!(v[j] >= 0))
                    return attn_errorf(err, ATTN_ERR_ARG, "causal-mask plot: no %s", key);
            }
            values[0][2 * m + k] = v[0] > 0 ? 100.0 * (v[0] - v[1]) / v[0] : 0.0;
            values[1][2 * m + k] = v[2] > 0 ? 100.0 * (v[2] - v[3]) / v[2] : 0.0;
        }
    const attn_bars b = {.title = "Change the target words after position i: which decoder "
                                  "rows keep every logit bit for bit?",
                         .xlabel = "model and causal mask",
                         .ylabel = "rows with every logit bit-identical (%)",
                         .n_categories = 4,
                         .categories = categories,
                         .n_series = 2,
                         .series_titles = series,
                         .values = &values[0][0],
                         .y_min = 0,
                         .y_max = 110};
    return attn_plot_bars(&b, path, err);
}

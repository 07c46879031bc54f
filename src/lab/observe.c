/* observe.c -- the write-up's s7 observations measured on a model and a set of sentences:
 * where the Transformer's [CLS] attends in each layer (on the deciding word? on the
 * distractor's adjective? how sharp?) and how the recurrent models' probability after each
 * word moves (at the deciding words, across fillers, near 50 %). Word roles come from the
 * vocabulary's categories (attn_lab.h). Exact mode, batch 1. */
#include "attn_lab.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool is_category(int id, const char *cat) {
    const char *c = attn_vocab_category(id);
    return c && strcmp(c, cat) == 0;
}

static bool is_adjective(int id) {
    return is_category(id, "positive") || is_category(id, "negative");
}

/* The roles in words[0..n): first negation, first adjective, the adjective after it (-1: none). */
typedef struct roles {
    int negation, adjective, distractor_adj;
} roles;

static roles find_roles(const int *w, int n) {
    roles r = {-1, -1, -1};
    for (int i = 0; i < n; i++) {
        if (r.negation < 0 && r.adjective < 0 && is_category(w[i], "negation")) r.negation = i;
        if (is_adjective(w[i])) {
            if (r.adjective < 0)
                r.adjective = i;
            else if (r.distractor_adj < 0)
                r.distractor_adj = i;
        }
    }
    return r;
}

/* ---- the Transformer's [CLS] attention ----------------------------------------------------- */

typedef struct attn_acc {
    double deciding[ATTN_OBS_MAX_LAYERS], avg90[ATTN_OBS_MAX_LAYERS], head90[ATTN_OBS_MAX_LAYERS];
    double core90[ATTN_OBS_MAX_LAYERS], distr[ATTN_OBS_MAX_LAYERS], distr_max[ATTN_OBS_MAX_LAYERS];
    double max[ATTN_OBS_MAX_LAYERS], entropy[ATTN_OBS_MAX_LAYERS];
} attn_acc;

/* Layer l's [CLS] rows: probs [NH, S, S]; the heads' average into row [S]. */
static void mean_row(const float *probs, int NH, int S, double *row) {
    for (int k = 0; k < S; k++) row[k] = 0.0;
    for (int h = 0; h < NH; h++)
        for (int k = 0; k < S; k++) row[k] += probs[(size_t)h * S * S + k] / (double)NH;
}

/* The largest weight one head gives key `key` (-1: none), and whether every head puts >= 0.9
 * on one of the keys a or b. */
static double head_max(const float *probs, int NH, int S, int key) {
    double m = 0.0;
    for (int h = 0; key >= 0 && h < NH; h++) m = fmax(m, probs[(size_t)h * S * S + key]);
    return m;
}

static bool heads_on_core(const float *probs, int NH, int S, int a, int b) {
    for (int h = 0; h < NH; h++) {
        const float *cls = probs + (size_t)h * S * S;
        if (!((a >= 0 && cls[a] >= 0.9f) || (b >= 0 && cls[b] >= 0.9f))) return false;
    }
    return true;
}

static void layer_stats(const float *p, int NH, int S, const roles *r, double *row, int l,
                        attn_acc *a) {
    const int decide = r->negation >= 0 ? r->negation : r->adjective;
    const int key = decide >= 0 ? 1 + decide : -1; /* [CLS] is key 0 */
    mean_row(p, NH, S, row);
    double top = 0.0, ent = 0.0;
    for (int k = 0; k < S; k++) {
        top = fmax(top, row[k]);
        if (row[k] > 0.0) ent -= row[k] * log(row[k]);
    }
    a->max[l] += top;
    a->entropy[l] += ent;
    if (key >= 0) {
        a->deciding[l] += row[key];
        a->avg90[l] += row[key] >= 0.9;
        a->head90[l] += head_max(p, NH, S, key) >= 0.9;
    }
    a->core90[l] += heads_on_core(p, NH, S, r->negation >= 0 ? 1 + r->negation : -1,
                                  r->adjective >= 0 ? 1 + r->adjective : -1);
    if (r->distractor_adj >= 0) {
        a->distr[l] += row[1 + r->distractor_adj];
        a->distr_max[l] = fmax(a->distr_max[l], row[1 + r->distractor_adj]);
    }
}

static attn_status attention_one(attn_model *m, const int *w, int n, double *row, attn_acc *a,
                                 attn_error *err) {
    const attn_model_config *c = attn_model_config_of(m);
    const attn_batch b = {.B = 1, .T = n, .ids = w, .lengths = &n};
    float logit;
    attn_status st = attn_model_forward(m, &b, &logit, err);
    const roles r = find_roles(w, n);
    for (int l = 0; st == ATTN_OK && l < c->n_layers && l < ATTN_OBS_MAX_LAYERS; l++) {
        const float *p;
        int S;
        st = attn_model_attention_probs(m, l, &p, &S, err);
        if (st == ATTN_OK) layer_stats(p, c->n_heads, S, &r, row, l, a);
    }
    return st;
}

attn_status attn_observe_attention(attn_model *m, const attn_dataset *d, attn_attention_obs *out,
                                   attn_error *err) {
    if (!m || !d || d->n < 1 || attn_model_config_of(m)->arch != ATTN_ARCH_TRANSFORMER)
        return attn_errorf(err, ATTN_ERR_ARG,
                           "observe attention: needs a transformer and sentences");
    double *row = malloc((size_t)attn_model_config_of(m)->max_len * sizeof *row);
    if (!row) return attn_errorf(err, ATTN_ERR_NOMEM, "observe attention: out of memory");
    attn_acc a;
    memset(&a, 0, sizeof a);
    int n_distr = 0;
    attn_status st = ATTN_OK;
    for (int s = 0; st == ATTN_OK && s < d->n; s++) {
        const int *w = d->ids + d->offsets[s];
        st = attention_one(m, w, d->lengths[s], row, &a, err);
        n_distr += find_roles(w, d->lengths[s]).distractor_adj >= 0;
    }
    free(row);
    if (st != ATTN_OK) return st;
    memset(out, 0, sizeof *out);
    out->n = d->n;
    out->n_distractor = n_distr;
    out->n_layers = attn_model_config_of(m)->n_layers;
    if (out->n_layers > ATTN_OBS_MAX_LAYERS) out->n_layers = ATTN_OBS_MAX_LAYERS;
    for (int l = 0; l < out->n_layers; l++) {
        out->deciding_mean[l] = a.deciding[l] / d->n;
        out->deciding_avg90[l] = a.avg90[l] / d->n;
        out->deciding_head90[l] = a.head90[l] / d->n;
        out->core_head90[l] = a.core90[l] / d->n;
        out->distractor_mean[l] = n_distr ? a.distr[l] / n_distr : NAN;
        out->distractor_max[l] = n_distr ? a.distr_max[l] : NAN;
        out->mean_max[l] = a.max[l] / d->n;
        out->mean_entropy[l] = a.entropy[l] / d->n;
    }
    return ATTN_OK;
}

/* ---- the recurrent models' probability after each word ------------------------------------ */

typedef struct prefix_acc {
    double decide, filler, half, within;
    long n_decide, n_filler, n_prefix;
} prefix_acc;

static attn_status prefixes_one(attn_model *m, const int *w, int n, prefix_acc *a,
                                attn_error *err) {
    const roles r = find_roles(w, n);
    double prev = NAN;
    for (int i = 1; i <= n; i++) {
        const attn_batch b = {.B = 1, .T = i, .ids = w, .lengths = &i};
        float logit;
        attn_status st = attn_model_forward(m, &b, &logit, err);
        if (st != ATTN_OK) return st;
        const double p = 1.0 / (1.0 + exp(-(double)logit));
        const int at = i - 1; /* the word just read */
        a->half += fabs(p - 0.5);
        a->within += fabs(p - 0.5) <= 0.1;
        a->n_prefix++;
        if (at > 0 && (at == r.negation || at == r.adjective)) {
            a->decide += fabs(p - prev);
            a->n_decide++;
        } else if (at > 0 && r.adjective >= 0 && at > r.adjective && is_category(w[at], "filler")) {
            a->filler += fabs(p - prev);
            a->n_filler++;
        }
        prev = p;
    }
    return ATTN_OK;
}

attn_status attn_observe_prefixes(attn_model *m, const attn_dataset *d, attn_prefix_obs *out,
                                  attn_error *err) {
    if (!m || !d || d->n < 1 || attn_model_config_of(m)->arch == ATTN_ARCH_TRANSFORMER)
        return attn_errorf(err, ATTN_ERR_ARG,
                           "observe prefixes: needs a recurrent model and sentences");
    prefix_acc a = {0};
    for (int s = 0; s < d->n; s++) {
        attn_status st = prefixes_one(m, d->ids + d->offsets[s], d->lengths[s], &a, err);
        if (st != ATTN_OK) return st;
    }
    out->n = d->n;
    out->mean_step_deciding = a.n_decide ? a.decide / a.n_decide : NAN;
    out->mean_step_filler = a.n_filler ? a.filler / a.n_filler : NAN;
    out->mean_dist_half = a.half / a.n_prefix;
    out->frac_within_10 = a.within / a.n_prefix;
    return ATTN_OK;
}

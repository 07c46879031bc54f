/* lessons.c -- the write-up's s3 and s4 measured: why attention scores are divided by
 * sqrt(d_k) (random N(0,1) queries and keys, softmax through the engine's kernel), the
 * sinusoid position table and its dot products, and what a permutation of the words does to
 * a Transformer with and without position information. */
#include "attn_lab.h"
#include "attn_kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- s3: scaling ------------------------------------------------------------------------- */

typedef struct moments {
    double n, sum, sq;
} moments;

/* One d_k: n_trials rows of n_keys scores, unscaled [0] and scaled [1]. */
static void scaling_one(int d_k, int n_keys, int n_trials, attn_rng *rng, float *q, float *k,
                        float *s, float *p, attn_scaling_row *row) {
    moments m[2] = {{0}};
    double max_sum[2] = {0}, pq_sum[2] = {0};
    const float scale = 1.0f / sqrtf((float)d_k);
    for (int t = 0; t < n_trials; t++) {
        for (int i = 0; i < d_k; i++) q[i] = (float)attn_rng_normal(rng);
        for (size_t i = 0; i < (size_t)n_keys * d_k; i++) k[i] = (float)attn_rng_normal(rng);
        /* s[j] = q . k_j : [1, d_k] . [n_keys, d_k]^T */
        attn_sgemm(s, q, k, 1, n_keys, d_k, false, true, 1.0f, 0.0f, ATTN_OP_QK, ATTN_PASS_FORWARD);
        for (int v = 0; v < 2; v++) {
            if (v == 1)
                for (int j = 0; j < n_keys; j++) s[j] *= scale;
            attn_softmax_forward(p, s, 1, n_keys, n_keys);
            double top = 0.0;
            for (int j = 0; j < n_keys; j++) {
                m[v].n += 1;
                m[v].sum += s[j];
                m[v].sq += (double)s[j] * s[j];
                top = fmax(top, p[j]);
                pq_sum[v] += (double)p[j] * (1.0 - p[j]);
            }
            max_sum[v] += top;
        }
    }
    row->d_k = d_k;
    for (int v = 0; v < 2; v++) {
        const double mean = m[v].sum / m[v].n;
        row->score_std[v] = sqrt(fmax(0.0, m[v].sq / m[v].n - mean * mean));
        row->max_prob[v] = max_sum[v] / n_trials;
        row->mean_pq[v] = pq_sum[v] / m[v].n;
    }
}

attn_status attn_lesson_scaling(int n_keys, int n_trials, uint64_t seed,
                                attn_scaling_row rows[ATTN_SCALING_N_DK], attn_error *err) {
    if (n_keys < 2 || n_keys > 4096 || n_trials < 1 || n_trials > 1000000)
        return attn_errorf(err, ATTN_ERR_ARG,
                           "lesson scaling: n_keys %d (2..4096) or n_trials %d (1..1000000)",
                           n_keys, n_trials);
    const int max_dk = 4 << (ATTN_SCALING_N_DK - 1); /* 512 */
    float *q = malloc((size_t)max_dk * sizeof *q);
    float *k = malloc((size_t)n_keys * max_dk * sizeof *k);
    float *s = malloc((size_t)n_keys * sizeof *s);
    float *p = malloc((size_t)n_keys * sizeof *p);
    attn_status st = q && k && s && p
                         ? ATTN_OK
                         : attn_errorf(err, ATTN_ERR_NOMEM, "lesson scaling: out of memory");
    attn_rng rng = attn_rng_seed(seed);
    for (int i = 0; st == ATTN_OK && i < ATTN_SCALING_N_DK; i++)
        scaling_one(4 << i, n_keys, n_trials, &rng, q, k, s, p, &rows[i]);
    free(q);
    free(k);
    free(s);
    free(p);
    return st;
}

/* ---- s4: the sinusoid table ----------------------------------------------------------------- */

attn_status attn_sinusoid_table(double *pe, int P, int D, attn_error *err) {
    if (!pe || P < 1 || D < 2 || D % 2)
        return attn_errorf(err, ATTN_ERR_ARG, "sinusoid: P %d >= 1 and an even D %d >= 2", P, D);
    for (int p = 0; p < P; p++)
        for (int i = 0; i < D / 2; i++) {
            const double w = pow(10000.0, -(2.0 * i) / D); /* frequency of pair i */
            pe[(size_t)p * D + 2 * i] = sin(p * w);
            pe[(size_t)p * D + 2 * i + 1] = cos(p * w);
        }
    return ATTN_OK;
}

static double dot(const double *a, const double *b, int D) {
    double s = 0.0;
    for (int i = 0; i < D; i++) s += a[i] * b[i];
    return s;
}

attn_status attn_sinusoid_dots(int P, int D, double *dots, double *max_dev, attn_error *err) {
    if (!dots || !max_dev || P < 1 || D < 2 || D % 2)
        return attn_errorf(err, ATTN_ERR_ARG, "sinusoid: P %d >= 1 and an even D %d >= 2", P, D);
    double *pe = malloc((size_t)P * D * sizeof *pe);
    if (!pe) return attn_errorf(err, ATTN_ERR_NOMEM, "sinusoid: out of memory");
    attn_sinusoid_table(pe, P, D, err);
    double dev = 0.0;
    for (int d = 0; d < P; d++) {
        dots[d] = dot(pe, pe + (size_t)d * D, D);
        for (int p = 1; p + d < P; p++)
            dev = fmax(dev, fabs(dot(pe + (size_t)p * D, pe + (size_t)(p + d) * D, D) - dots[d]));
    }
    *max_dev = dev;
    free(pe);
    return ATTN_OK;
}

/* ---- s4: permutations ---------------------------------------------------------------------- */

/* The one place that makes a Transformer without position information: a model of the same
 * configuration with pos = none (ATTN_POS_NONE: nothing is added to the word embeddings), every
 * other tensor copied by name. */
attn_status attn_model_remove_positions(attn_model **m, attn_error *err) {
    if (!m || !*m || attn_model_config_of(*m)->arch != ATTN_ARCH_TRANSFORMER)
        return attn_errorf(err, ATTN_ERR_ARG, "remove positions: not a transformer");
    attn_model_config cfg = *attn_model_config_of(*m);
    if (cfg.pos == ATTN_POS_NONE) return ATTN_OK;
    cfg.pos = ATTN_POS_NONE;
    attn_model *out = NULL;
    attn_status st = attn_model_create(&cfg, 0, &out, err);
    for (size_t i = 0; !st && i < attn_model_tensor_count(out); i++) {
        const long t = attn_model_tensor_find(*m, attn_model_tensor_name(out, i));
        if (t < 0 || attn_model_tensor_numel(*m, (size_t)t) != attn_model_tensor_numel(out, i))
            st = attn_errorf(err, ATTN_ERR_ARG, "remove positions: no tensor %s of that shape",
                             attn_model_tensor_name(out, i));
        else
            memcpy(attn_model_params(out) + attn_model_tensor_offset(out, i),
                   attn_model_params(*m) + attn_model_tensor_offset(*m, (size_t)t),
                   attn_model_tensor_numel(out, i) * sizeof(float));
    }
    if (st) {
        attn_model_free(out);
        return st;
    }
    attn_model_free(*m);
    *m = out;
    return ATTN_OK;
}

/* One sentence: logit, every layer's attention [L, NH, S, S] and d logit / d x [S, D]. */
typedef struct observed {
    float logit;
    float *attn, *grad;
} observed;

static attn_status observe(attn_model *m, const int *ids, int n, observed *o, attn_error *err) {
    const attn_model_config *c = attn_model_config_of(m);
    const int S = n + 1;
    const size_t per_layer = (size_t)c->n_heads * S * S;
    o->attn = malloc(per_layer * c->n_layers * sizeof(float));
    o->grad = malloc((size_t)S * c->embed_dim * sizeof(float));
    if (!o->attn || !o->grad)
        return attn_errorf(err, ATTN_ERR_NOMEM, "equivariance: out of memory");
    const attn_batch b = {.B = 1, .T = n, .ids = ids, .lengths = &n};
    const float one = 1.0f;
    attn_status st = attn_model_forward(m, &b, &o->logit, err);
    for (int l = 0; st == ATTN_OK && l < c->n_layers; l++) {
        const float *p;
        int s;
        st = attn_model_attention_probs(m, l, &p, &s, err);
        if (st == ATTN_OK) memcpy(o->attn + per_layer * l, p, per_layer * sizeof(float));
    }
    attn_model_zero_grad(m);
    if (st == ATTN_OK) st = attn_model_backward(m, &b, &one, err);
    const float *d_x;
    if (st == ATTN_OK) st = attn_model_input(m, NULL, &d_x, NULL, NULL, err);
    if (st == ATTN_OK) memcpy(o->grad, d_x, (size_t)S * c->embed_dim * sizeof(float));
    attn_model_zero_grad(m);
    return st;
}

/* Row r of the permuted sentence's tokens is row map(r) of the original ([CLS] stays). */
static int map_row(const int *perm, int r) {
    return r == 0 ? 0 : 1 + perm[r - 1];
}

static void compare(const attn_model_config *c, int n, const int *perm, const observed *a,
                    const observed *b, attn_equivariance *out) {
    const int S = n + 1, NH = c->n_heads, Dm = c->embed_dim;
    out->attention_dev = out->grad_dev = 0.0;
    for (int l = 0; l < c->n_layers; l++)
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < S; i++)
                for (int j = 0; j < S; j++) {
                    const size_t base = ((size_t)l * NH + h) * S;
                    const float pb = b->attn[(base + i) * S + j];
                    const float pa = a->attn[(base + map_row(perm, i)) * S + map_row(perm, j)];
                    out->attention_dev = fmax(out->attention_dev, fabs((double)pb - pa));
                }
    for (int i = 0; i < S; i++)
        for (int j = 0; j < Dm; j++) {
            const float gb = b->grad[(size_t)i * Dm + j];
            const float ga = a->grad[(size_t)map_row(perm, i) * Dm + j];
            out->grad_dev = fmax(out->grad_dev, fabs((double)gb - ga));
        }
    out->logit = a->logit;
    out->logit_permuted = b->logit;
    out->logit_dev = fabs((double)a->logit - b->logit);
}

attn_status attn_equivariance_measure(attn_model *m, const int *ids, int n, const int *perm,
                                      attn_equivariance *out, attn_error *err) {
    if (!m || attn_model_config_of(m)->arch != ATTN_ARCH_TRANSFORMER)
        return attn_errorf(err, ATTN_ERR_ARG, "equivariance: not a transformer");
    if (!ids || !perm || n < 1 || n > attn_model_config_of(m)->max_len - 1)
        return attn_errorf(err, ATTN_ERR_ARG, "equivariance: %d words", n);
    int *pids = malloc((size_t)n * sizeof *pids);
    char *seen = calloc((size_t)n, 1);
    attn_status st =
        pids && seen ? ATTN_OK : attn_errorf(err, ATTN_ERR_NOMEM, "equivariance: out of memory");
    for (int i = 0; st == ATTN_OK && i < n; i++) {
        if (perm[i] < 0 || perm[i] >= n || seen[perm[i]])
            st = attn_errorf(err, ATTN_ERR_ARG, "equivariance: perm is not a permutation of 0..%d",
                             n - 1);
        else
            seen[perm[i]] = 1, pids[i] = ids[perm[i]];
    }
    observed a = {0}, b = {0};
    if (st == ATTN_OK) st = observe(m, ids, n, &a, err);
    if (st == ATTN_OK) st = observe(m, pids, n, &b, err);
    if (st == ATTN_OK) compare(attn_model_config_of(m), n, perm, &a, &b, out);
    free(a.attn);
    free(a.grad);
    free(b.attn);
    free(b.grad);
    free(pids);
    free(seen);
    return st;
}

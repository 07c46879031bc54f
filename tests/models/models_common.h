/* models_common.h -- helpers shared by tests/models/test_{rnn,lstm,transformer}.c (header-only,
 * static functions, each used by all three; test_rnn.c and test_lstm.c share their whole suite
 * through recurrent_tests.h): whole-model finite differences, PyTorch golden logits
 * (bit-identical on the golden's OpenBLAS core, within GOLDEN_LOGIT_TOL elsewhere:
 * tu_golden_exact) and gradients from weights/golden/, padding invariance. */
#ifndef ATTN_MODELS_COMMON_H
#define ATTN_MODELS_COMMON_H

#include "model_internal.h"
#include "test_util.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- small batches ---------------------------------------------------------------------- */

/* A padded batch of 3 sentences of different lengths (T = 5) over ids 2..V-1. */
#define MC_B 3
#define MC_T 5
typedef struct mc_batch {
    int ids[MC_B * MC_T];
    int lengths[MC_B];
    attn_batch b;
} mc_batch;

static void mc_batch_make(mc_batch *mb, int V, attn_rng *r) {
    static const int lengths[MC_B] = {5, 2, 3};
    for (int i = 0; i < MC_B; i++) {
        mb->lengths[i] = lengths[i];
        for (int t = 0; t < MC_T; t++)
            mb->ids[i * MC_T + t] =
                t < lengths[i] ? 2 + (int)attn_rng_below(r, (uint32_t)(V - 2)) : ATTN_PAD_ID;
    }
    mb->b = (attn_batch){.B = MC_B, .T = MC_T, .ids = mb->ids, .lengths = mb->lengths};
}

/* ---- finite differences over every parameter tensor ------------------------------------ */

typedef struct mc_fd_ctx {
    attn_model *m;
    const attn_batch *b;
    const float *r; /* [B] random weights of the scalar loss */
} mc_fd_ctx;

/* L = sum_b r_b * logit_b, in double. */
static double mc_fd_loss(void *p) {
    mc_fd_ctx *c = p;
    float logits[64];
    attn_error err;
    ck_assert_int_eq(attn_model_forward(c->m, c->b, logits, &err), ATTN_OK);
    double L = 0.0;
    for (int i = 0; i < c->b->B; i++) L += (double)c->r[i] * logits[i];
    return L;
}

/* Adds U(-a, a) to every parameter so that no bias or LayerNorm weight sits at its init. */
static void mc_perturb(attn_model *m, float a, attn_rng *r) {
    float *p = attn_model_params(m);
    for (size_t i = 0; i < attn_model_n_params(m); i++) p[i] += attn_rng_uniform_range(r, -a, a);
}

/* Perturbs m's parameters (mc_perturb by 0.1), makes an mc_batch over m's vocabulary, and checks
 * the analytic gradient of L (backward with d_logits = r) against central differences for every
 * tensor of the model, named by its state_dict key. All randomness comes from rng_seed. */
static void mc_fd_check_model(attn_model *m, uint64_t rng_seed, float step, double atol,
                              double rtol) {
    attn_rng rng = attn_rng_seed(rng_seed);
    mc_perturb(m, 0.1f, &rng);
    mc_batch mb;
    mc_batch_make(&mb, attn_model_config_of(m)->vocab_size, &rng);
    const attn_batch *b = &mb.b;
    float r[64];
    attn_error err;
    for (int i = 0; i < b->B; i++) r[i] = attn_rng_uniform_range(&rng, -1.0f, 1.0f);
    float logits[64];
    ck_assert_int_eq(attn_model_forward(m, b, logits, &err), ATTN_OK);
    attn_model_zero_grad(m);
    ck_assert_int_eq(attn_model_backward(m, b, r, &err), ATTN_OK);
    size_t n = attn_model_n_params(m);
    float *grads = malloc(n * sizeof *grads);
    ck_assert_ptr_nonnull(grads);
    memcpy(grads, attn_model_grads(m), n * sizeof *grads);
    mc_fd_ctx ctx = {m, b, r};
    for (size_t i = 0; i < attn_model_tensor_count(m); i++) {
        size_t off = attn_model_tensor_offset(m, i);
        tu_check_grad(attn_model_tensor_name(m, i), mc_fd_loss, &ctx, attn_model_params(m) + off,
                      grads + off, attn_model_tensor_numel(m, i), step, atol, rtol);
    }
    free(grads);
}

/* ---- golden files ------------------------------------------------------------------------- */

static attn_model *mc_load_weights(const char *name, const char *kind) {
    char rel[256];
    snprintf(rel, sizeof rel, "weights/golden/%s.%s.json", name, kind);
    attn_model *m = NULL;
    attn_error err = {0};
    attn_status st = attn_weights_load_json(tu_source_path(rel), &m, &err);
    ck_assert_msg(st == ATTN_OK, "%s: %s", rel, err.msg);
    return m;
}

/* Golden logits made on another CPU class (another OpenBLAS core, see tu_golden_exact):
 * relative error at most GOLDEN_LOGIT_REL, absolute below |logit| = GOLDEN_LOGIT_FLOOR. A logit
 * is a sum of terms of order 1-10, so near 0 another core's rounding shows as an absolute error
 * (measured: 7.5e-8 at a trained RNN's logit of -7.1e-4, Cooperlake's kernels against
 * Haswell's goldens, 1.05e-4 relative): below 1e-3 the bound is 1e-4 * 1e-3 absolute. */
#define GOLDEN_LOGIT_REL   1e-4
#define GOLDEN_LOGIT_FLOOR 1e-3
#define GOLDEN_LOGIT_TOL   "1e-4 relative (absolute floor 1e-5)"

/* Runs every item of <name>.logits.json at batch 1 and returns got/want arrays (caller frees);
 * *exact says whether the golden was made on this machine's OpenBLAS core (bit-identity
 * defined) or elsewhere (check within GOLDEN_LOGIT_TOL). */
static size_t mc_golden_logits(const char *name, float **got_out, float **want_out, bool *exact) {
    attn_model *m = mc_load_weights(name, "weights");
    char rel[256];
    snprintf(rel, sizeof rel, "weights/golden/%s.logits.json", name);
    cJSON *j = tu_load_source_json(rel);
    *exact = tu_golden_exact(j, rel, GOLDEN_LOGIT_TOL);
    cJSON *items = cJSON_GetObjectItemCaseSensitive(j, "items");
    ck_assert(cJSON_IsArray(items));
    size_t n = (size_t)cJSON_GetArraySize(items);
    ck_assert_uint_ge(n, 1);
    float *got = malloc(n * sizeof *got), *want = malloc(n * sizeof *want);
    ck_assert(got && want);
    size_t k = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, items) {
        const cJSON *ids = cJSON_GetObjectItemCaseSensitive(it, "ids");
        int T = cJSON_GetArraySize(ids), wid[ATTN_MAX_WORDS];
        ck_assert(T >= 1 && T <= ATTN_MAX_WORDS);
        for (int t = 0; t < T; t++) wid[t] = cJSON_GetArrayItem(ids, t)->valueint;
        attn_batch b = {.B = 1, .T = T, .ids = wid, .lengths = &T};
        attn_error err;
        ck_assert_int_eq(attn_model_forward(m, &b, &got[k], &err), ATTN_OK);
        want[k] = (float)cJSON_GetObjectItemCaseSensitive(it, "logit")->valuedouble;
        k++;
    }
    cJSON_Delete(j);
    attn_model_free(m);
    *got_out = got;
    *want_out = want;
    return n;
}

/* <name>'s golden logits at batch 1: bit-identical on the golden's machine class, within
 * GOLDEN_LOGIT_TOL elsewhere. */
static void mc_assert_golden_logits(const char *name) {
    float *got, *want;
    bool exact;
    size_t n = mc_golden_logits(name, &got, &want, &exact);
    char what[128];
    snprintf(what, sizeof what, "%s golden logits (batch 1)", name);
    tu_assert_golden(what, got, want, n, exact, GOLDEN_LOGIT_REL, GOLDEN_LOGIT_FLOOR);
    free(got);
    free(want);
}

/* The golden gradient batch: ids, lengths, labels, loss. */
typedef struct mc_grad_batch {
    int B, T;
    int *ids, *lengths;
    float *labels;
    double loss;
    attn_batch b;
} mc_grad_batch;

static void mc_grad_batch_load(const char *name, mc_grad_batch *g) {
    char rel[256];
    snprintf(rel, sizeof rel, "weights/golden/%s.grad_batch.json", name);
    cJSON *j = tu_load_source_json(rel);
    g->B = tu_json_int(j, "B");
    g->T = tu_json_int(j, "T");
    g->loss = tu_json_double(j, "loss");
    ck_assert(g->B >= 1 && g->B <= 64 && g->T >= 1);
    size_t n_ids, n_lengths, n_labels;
    g->ids = tu_json_ints(j, "ids", &n_ids);
    g->lengths = tu_json_ints(j, "lengths", &n_lengths);
    g->labels = tu_json_floats(j, "labels", &n_labels);
    ck_assert_uint_eq(n_ids, (size_t)g->B * g->T);
    ck_assert_uint_eq(n_lengths, (size_t)g->B);
    ck_assert_uint_eq(n_labels, (size_t)g->B);
    g->b = (attn_batch){.B = g->B, .T = g->T, .ids = g->ids, .lengths = g->lengths};
    cJSON_Delete(j);
}

static void mc_grad_batch_free(mc_grad_batch *g) {
    free(g->ids);
    free(g->lengths);
    free(g->labels);
}

/* Relative tolerance for golden gradients, and the floor below which an element is judged on
 * absolute error: GOLDEN_GRAD_FLOOR times the tensor's largest |gradient|. Small elements are
 * sums with heavy cancellation (the key bias's gradient is exactly 0 in exact arithmetic:
 * softmax ignores a constant shift), so their own relative error says nothing; measured
 * max abs err / max|grad| is 0.9e-7 .. 7.2e-7 per tensor against PyTorch (1 thread). */
#define GOLDEN_GRAD_REL   1e-5
#define GOLDEN_GRAD_FLOOR 0.25
#define GOLDEN_LOSS_REL   1e-6

/* Mean-BCE loss and every parameter gradient against PyTorch autograd on the padded batch. */
static void mc_golden_grads(const char *name) {
    attn_model *m = mc_load_weights(name, "weights");
    attn_model *want = mc_load_weights(name, "grads");
    mc_grad_batch g;
    mc_grad_batch_load(name, &g);
    float logits[64], d_logits[64] = {0};
    attn_error err;
    ck_assert_int_eq(attn_model_forward(m, &g.b, logits, &err), ATTN_OK);
    double loss = attn_bce_forward(logits, g.labels, g.B);
    double rel = fabs(loss - g.loss) / fabs(g.loss);
    printf("  %s loss %.9g golden %.9g rel %.3g\n", name, loss, g.loss, rel);
    ck_assert_msg(rel <= GOLDEN_LOSS_REL, "%s: loss %.9g vs golden %.9g (rel %.3g)", name, loss,
                  g.loss, rel);
    attn_bce_backward(d_logits, 1.0f, logits, g.labels, g.B);
    attn_model_zero_grad(m);
    ck_assert_int_eq(attn_model_backward(m, &g.b, d_logits, &err), ATTN_OK);
    ck_assert_uint_eq(attn_model_tensor_count(m), attn_model_tensor_count(want));
    for (size_t i = 0; i < attn_model_tensor_count(m); i++) {
        ck_assert_str_eq(attn_model_tensor_name(m, i), attn_model_tensor_name(want, i));
        size_t n = attn_model_tensor_numel(m, i);
        const float *w = attn_model_params(want) + attn_model_tensor_offset(want, i);
        const float *got = attn_model_grads(m) + attn_model_tensor_offset(m, i);
        double wmax = 0.0;
        for (size_t j = 0; j < n; j++) wmax = fmax(wmax, fabs(w[j]));
        double emax = 0.0;
        for (size_t j = 0; j < n; j++) emax = fmax(emax, fabs((double)got[j] - w[j]));
        printf("  %-44s max|grad| %.3g, max abs err / max|grad| %.3g\n",
               attn_model_tensor_name(m, i), wmax, emax / wmax);
        tu_assert_close(attn_model_tensor_name(m, i), got, w, n, GOLDEN_GRAD_REL,
                        fmax(GOLDEN_GRAD_FLOOR * wmax, 1e-30));
    }
    mc_grad_batch_free(&g);
    attn_model_free(want);
    attn_model_free(m);
}

/* ---- padding invariance -------------------------------------------------------------------- */

/* A padded batch of n generated training sentences (the task's real length spread). */
static void mc_batch_generate(mc_grad_batch *g, int n, uint64_t seed) {
    attn_dataset *d = tu_train_data(n, seed);
    g->B = n;
    g->T = 1;
    for (int i = 0; i < n; i++)
        if (d->lengths[i] > g->T) g->T = d->lengths[i];
    g->ids = calloc((size_t)n * g->T, sizeof *g->ids);
    g->lengths = malloc((size_t)n * sizeof *g->lengths);
    g->labels = malloc((size_t)n * sizeof *g->labels);
    ck_assert(g->ids && g->lengths && g->labels);
    for (int i = 0; i < n; i++) {
        g->lengths[i] = d->lengths[i];
        g->labels[i] = (float)d->labels[i];
        memcpy(g->ids + (size_t)i * g->T, d->ids + d->offsets[i],
               (size_t)d->lengths[i] * sizeof *g->ids);
    }
    g->loss = 0.0;
    g->b = (attn_batch){.B = g->B, .T = g->T, .ids = g->ids, .lengths = g->lengths};
    attn_dataset_free(d);
}

/* Each sentence of a padded batch of 8 generated sentences (seed 5) alone (batch 1) vs inside
 * the batch: logits within max_ulp ULP of the largest |logit|; gradients of sum_b r_b logit_b
 * accumulated sentence by sentence vs in one batch within GOLDEN_GRAD_REL (rounding of differently
 * shaped GEMMs only). */
static void mc_padding_invariance(attn_model *m, uint32_t max_ulp) {
    const char *name = attn_arch_name(attn_model_config_of(m)->arch);
    mc_grad_batch gb;
    mc_batch_generate(&gb, 8, 5);
    const mc_grad_batch *g = &gb;
    attn_error err;
    float batched[64], single[64], r[64];
    attn_rng rng = attn_rng_seed(7);
    for (int i = 0; i < g->B; i++) r[i] = attn_rng_uniform_range(&rng, -1.0f, 1.0f);
    size_t n = attn_model_n_params(m);
    float *sum_single = malloc(n * sizeof(float));
    ck_assert_ptr_nonnull(sum_single);
    /* one sentence at a time, grads accumulating across calls */
    attn_model_zero_grad(m);
    for (int i = 0; i < g->B; i++) {
        attn_batch b1 = {.B = 1,
                         .T = g->lengths[i],
                         .ids = g->ids + (size_t)i * g->T,
                         .lengths = &g->lengths[i]};
        ck_assert_int_eq(attn_model_forward(m, &b1, &single[i], &err), ATTN_OK);
        ck_assert_int_eq(attn_model_backward(m, &b1, &r[i], &err), ATTN_OK);
    }
    memcpy(sum_single, attn_model_grads(m), n * sizeof(float));
    attn_model_zero_grad(m);
    ck_assert_int_eq(attn_model_forward(m, &g->b, batched, &err), ATTN_OK);
    ck_assert_int_eq(attn_model_backward(m, &g->b, r, &err), ATTN_OK);
    tu_compare c = tu_compare_floats(batched, single, (size_t)g->B);
    /* The deviations in ULPs of the batch's largest |logit|: a logit near 0 is the difference of
     * larger terms, and its own ULP (measured: -0.0017, 160 of its ULPs, OpenBLAS SkylakeX) says
     * nothing about the rounding of those terms. */
    float scale = 0.0f;
    for (int i = 0; i < g->B; i++) scale = fmaxf(scale, fabsf(single[i]));
    const double ulp = (double)nextafterf(scale, INFINITY) - scale;
    double dev = 0.0;
    for (int i = 0; i < g->B; i++) dev = fmax(dev, fabs((double)batched[i] - single[i]) / ulp);
    printf("  %s padded (B=%d, T=%d) vs batch 1 logits: identical %zu/%d, max %.0f ULP of the "
           "largest |logit| %.3g (own ULP %u)\n",
           name, g->B, g->T, c.n_equal, g->B, dev, (double)scale, c.max_ulp);
    ck_assert_msg(dev <= max_ulp,
                  "%s: a padded-batch logit is %.0f ULP (of |logit| %.3g) from batch 1 (logit "
                  "%zu: %.9g vs %.9g)",
                  name, dev, (double)scale, c.worst, (double)batched[c.worst],
                  (double)single[c.worst]);
    for (size_t i = 0; i < attn_model_tensor_count(m); i++) {
        size_t off = attn_model_tensor_offset(m, i), k = attn_model_tensor_numel(m, i);
        double wmax = 0.0;
        for (size_t j = 0; j < k; j++) wmax = fmax(wmax, fabs(sum_single[off + j]));
        char what[128];
        snprintf(what, sizeof what, "batched %s", attn_model_tensor_name(m, i));
        tu_assert_close(what, attn_model_grads(m) + off, sum_single + off, k, GOLDEN_GRAD_REL,
                        fmax(GOLDEN_GRAD_FLOOR * wmax, 1e-30));
    }
    free(sum_single);
    mc_grad_batch_free(&gb);
}

#endif /* ATTN_MODELS_COMMON_H */

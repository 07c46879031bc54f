/* experiments_embedding.c -- `attn experiment embedding` (write-up §10): an embedding layer is a
 * lookup table, not a normaliser.
 *
 * For the trained models in weights/ (RNN, LSTM, Transformer; seeds 1..N):
 *   1. the L2 norm of every row of "embedding.weight" [V, E]: training leaves them at whatever
 *      length served the task (nothing divides them by their norm);
 *   2. one-hot x matrix: I[V, V] . table through attn_sgemm (OpenBLAS) against the table's rows,
 *      compared bit for bit (a product with exactly one 1 and zeros elsewhere adds only exact
 *      zeros to the one product that is the row itself);
 *   3. the model's first-layer input built from one-hot rows (+ the position table for the
 *      Transformer, added as the model adds it), compared bit for bit with the rows the model's
 *      own lookup built, then run through the model (attn_model_forward_embedded): the logit is
 *      compared bit for bit with the model's. */
#include "attn_kernels.h"
#include "attn_plot.h"
#include "experiments_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const archs[] = {"rnn", "lstm", "transformer"};
#define N_ARCH            3
#define N_CHECK_SENTENCES 20 /* of the plain test set, besides the pair of the write-up */

/* Differing float values (compared as bits) among n. */
static long bits_differ(const float *a, const float *b, size_t n) {
    long d = 0;
    for (size_t i = 0; i < n; i++) d += memcmp(&a[i], &b[i], sizeof(float)) != 0;
    return d;
}

typedef struct onehot_check {
    long table_values; /* one-hot . table values differing from the table's */
    long input_values; /* first-layer input values differing from the model's */
    long logits;       /* sentences whose logit differs */
    long sentences;    /* checked */
} onehot_check;

/* Step 3 for one sentence ids[0..n). table [V, E]; onehot_rows: [n+1, V] work; x: [n+1, E]. */
static attn_status check_sentence(attn_model *m, const float *table, const int *ids, int n,
                                  float *onehot_rows, float *x, onehot_check *c, attn_error *err) {
    const attn_model_config *cfg = attn_model_config_of(m);
    const bool tf = cfg->arch == ATTN_ARCH_TRANSFORMER;
    const int V = cfg->vocab_size, E = cfg->embed_dim, rows = tf ? n + 1 : n;
    attn_batch b = {1, n, ids, &n};
    float logit, logit_onehot;
    attn_status st = attn_model_forward(m, &b, &logit, err);
    const float *x_model = NULL;
    int n_rows = 0, width = 0;
    if (!st) st = attn_model_input(m, &x_model, NULL, &n_rows, &width, err);
    if (st) return st;
    if (n_rows != rows || width != E)
        return attn_errorf(err, ATTN_ERR_SHAPE, "embedding: model input is [%d, %d], want [%d, %d]",
                           n_rows, width, rows, E);
    memset(onehot_rows, 0, (size_t)rows * V * sizeof *onehot_rows);
    for (int r = 0; r < rows; r++) /* the Transformer's row 0 is [CLS] */
        onehot_rows[(size_t)r * V + (tf ? (r == 0 ? ATTN_CLS_ID : ids[r - 1]) : ids[r])] = 1.0f;
    attn_matmul_nn(x, onehot_rows, table, rows, E, V, 0.0f, ATTN_OP_INPUT, ATTN_PASS_FORWARD);
    if (tf) { /* + pos_embedding[s], as the model adds it */
        const long p = attn_model_tensor_find(m, "pos_embedding");
        const float *pos = attn_model_params(m) + attn_model_tensor_offset(m, (size_t)p);
        attn_add_forward(x, x, pos, (size_t)rows * E);
    }
    c->input_values += bits_differ(x, x_model, (size_t)rows * E);
    st = attn_model_forward_embedded(m, x, n, &logit_onehot, err);
    if (st) return st;
    c->logits += memcmp(&logit, &logit_onehot, sizeof logit) != 0;
    c->sentences++;
    return ATTN_OK;
}

/* Steps 1-3 for one model; norms [V] receives the row norms. */
static attn_status measure_model(attn_model *m, const attn_dataset *sentences, double *norms,
                                 onehot_check *c, attn_error *err) {
    const long ti = attn_model_tensor_find(m, "embedding.weight");
    if (ti < 0) return attn_errorf(err, ATTN_ERR_VALUE, "embedding: model has no embedding.weight");
    int shape[4];
    attn_model_tensor_shape(m, (size_t)ti, shape);
    const int V = shape[0], E = shape[1];
    const float *table = attn_model_params(m) + attn_model_tensor_offset(m, (size_t)ti);
    for (int v = 0; v < V; v++) {
        double s = 0.0;
        for (int e = 0; e < E; e++)
            s += (double)table[(size_t)v * E + e] * table[(size_t)v * E + e];
        norms[v] = sqrt(s);
    }
    const int max_rows = ATTN_MAX_WORDS + 1;
    const size_t n_onehot = (size_t)(V > max_rows ? V : max_rows) * V;
    float *onehot = calloc(n_onehot, sizeof *onehot);
    float *prod = malloc((size_t)(V > max_rows ? V : max_rows) * E * sizeof *prod);
    attn_status st = ATTN_OK;
    if (!onehot || !prod) st = attn_errorf(err, ATTN_ERR_NOMEM, "embedding: out of memory");
    if (!st) { /* step 2: I . table */
        for (int v = 0; v < V; v++) onehot[(size_t)v * V + v] = 1.0f;
        attn_matmul_nn(prod, onehot, table, V, E, V, 0.0f, ATTN_OP_INPUT, ATTN_PASS_FORWARD);
        c->table_values += bits_differ(prod, table, (size_t)V * E);
    }
    for (int i = 0; !st && i < sentences->n; i++)
        st = check_sentence(m, table, sentences->ids + sentences->offsets[i], sentences->lengths[i],
                            onehot, prod, c, err);
    static const char *const pair[2] = {"the food was not good", "not the food was good"};
    for (int i = 0; !st && i < 2; i++) {
        int ids[8], n = 0;
        st = attn_tokenize(pair[i], ids, 8, &n, err);
        if (!st) st = check_sentence(m, table, ids, n, onehot, prod, c, err);
    }
    free(onehot);
    free(prod);
    return st;
}

/* The median word-row norm of a freshly created model of m's config (PyTorch's N(0, 1) init,
 * about sqrt(E)): where training started from. */
static attn_status init_median(const attn_model *m, double *median, attn_error *err) {
    attn_model *fresh = NULL;
    attn_status st = attn_model_create(attn_model_config_of(m), 1, &fresh, err);
    const long ti = st ? -1 : attn_model_tensor_find(fresh, "embedding.weight");
    if (!st && ti < 0) st = attn_errorf(err, ATTN_ERR_VALUE, "embedding: no embedding.weight");
    if (!st) {
        int shape[4];
        attn_model_tensor_shape(fresh, (size_t)ti, shape);
        const float *t = attn_model_params(fresh) + attn_model_tensor_offset(fresh, (size_t)ti);
        double norms[ATTN_VOCAB_SIZE];
        const int W = shape[0] - 2 < ATTN_VOCAB_SIZE ? shape[0] - 2 : ATTN_VOCAB_SIZE;
        for (int v = 0; v < W; v++) {
            double s = 0.0;
            for (int e = 0; e < shape[1]; e++) {
                const double x = t[(size_t)(v + 2) * shape[1] + e];
                s += x * x;
            }
            norms[v] = sqrt(s);
        }
        qsort(norms, (size_t)W, sizeof *norms, exp_cmp_double);
        *median = norms[W / 2];
    }
    attn_model_free(fresh);
    return st;
}

attn_status exp_embedding_run(const attn_experiment_opts *o, attn_experiment_result *r,
                              attn_error *err) {
    const int seeds = o->seeds > 0 ? o->seeds : o->quick ? 1 : 3;
    attn_dataset *sentences = NULL; /* the first sentences of the plain test set */
    attn_status st = attn_data_generate(ATTN_SET_PLAIN, N_CHECK_SENTENCES, 1, &sentences, err);
    double norms[ATTN_VOCAB_SIZE], sorted[ATTN_VOCAB_SIZE];
    for (int a = 0; !st && a < N_ARCH; a++) {
        double dev_min = INFINITY, ratio_min = INFINITY, lo = INFINITY, hi = 0.0, med = 0.0;
        double init_med = 0.0;
        onehot_check c = {0};
        for (int s = 1; !st && s <= seeds; s++) {
            exp_progress(o, "embedding: %s seed %d", archs[a], s);
            attn_model *m = NULL;
            st = exp_load_weights(o, archs[a], s, &m, err);
            if (!st && attn_model_config_of(m)->vocab_size != ATTN_VOCAB_SIZE)
                st = attn_errorf(err, ATTN_ERR_SHAPE, "embedding: %s seed %d has V = %d", archs[a],
                                 s, attn_model_config_of(m)->vocab_size);
            if (!st) st = measure_model(m, sentences, norms, &c, err);
            if (!st && s == 1) st = init_median(m, &init_med, err);
            attn_model_free(m);
            if (st) break;
            /* the words' rows (2..V-1): [PAD] and [CLS] are not words */
            const int W = ATTN_VOCAB_SIZE - 2;
            double dev = 0.0;
            for (int v = 0; v < W; v++) {
                sorted[v] = norms[v + 2];
                dev = fmax(dev, fabs(sorted[v] - 1.0));
            }
            qsort(sorted, (size_t)W, sizeof *sorted, exp_cmp_double);
            dev_min = fmin(dev_min, dev);
            ratio_min = fmin(ratio_min, sorted[W - 1] / sorted[0]);
            lo = fmin(lo, sorted[0]);
            hi = fmax(hi, sorted[W - 1]);
            if (s == 1) {
                med = sorted[W / 2];
                char name[64];
                snprintf(name, sizeof name, "%s.seed1.row_norms", archs[a]);
                st = exp_put_array(r, name, ATTN_VOCAB_SIZE, norms, err);
            }
        }
        if (st) break;
        char name[64];
#define PUT(suffix, value)                                                                         \
    do {                                                                                           \
        snprintf(name, sizeof name, "%s.%s", archs[a], suffix);                                    \
        if (!st) st = exp_put(r, name, value, err);                                                \
    } while (0)
        PUT("word_norm_min", lo);
        PUT("word_norm_median_seed1", med);
        PUT("word_norm_max", hi);
        PUT("word_norm_median_at_init", init_med);
        PUT("max_abs_norm_minus_1", dev_min);
        PUT("norm_max_over_min", ratio_min);
        PUT("onehot_table_values_differing", (double)c.table_values);
        PUT("onehot_input_values_differing", (double)c.input_values);
        PUT("onehot_logits_differing", (double)c.logits);
        PUT("sentences_checked", (double)c.sentences);
#undef PUT
    }
    attn_dataset_free(sentences);
    if (!st) st = exp_put(r, "seeds", seeds, err);
    if (st) return st;
    exp_embedding_verdict(r);
    return ATTN_OK;
}

/* holds if the one-hot product reproduces the lookup bit for bit in every model (table values,
 * first-layer inputs, logits) and even the most uniform model's word rows are not normalised
 * (norms off 1 by > 0.05 and max/min > 1.1); mixed if one of the two. From the per-model
 * measurements: their sums and the most normalised-looking model's numbers. */
void exp_embedding_verdict(attn_experiment_result *r) {
    double worst_dev = INFINITY, worst_ratio = INFINITY; /* the most normalised-looking model */
    double table = 0.0, input = 0.0, logits = 0.0, sentences = 0.0;
    for (int a = 0; a < N_ARCH; a++) {
        char name[64];
#define GET(suffix) (snprintf(name, sizeof name, "%s.%s", archs[a], suffix), exp_get(r, name))
        worst_dev = fmin(worst_dev, GET("max_abs_norm_minus_1"));
        worst_ratio = fmin(worst_ratio, GET("norm_max_over_min"));
        table += GET("onehot_table_values_differing");
        input += GET("onehot_input_values_differing");
        logits += GET("onehot_logits_differing");
        sentences += GET("sentences_checked");
#undef GET
    }
    const bool lookup = table == 0.0 && input == 0.0 && logits == 0.0;
    const bool not_normalised = worst_dev > 0.05 && worst_ratio > 1.1;
    exp_verdict(r,
                lookup && not_normalised   ? ATTN_VERDICT_HOLDS
                : lookup || not_normalised ? ATTN_VERDICT_MIXED
                                           : ATTN_VERDICT_DOES_NOT_HOLD,
                "one-hot x matrix: %.0f table values, %.0f input values and %.0f of %.0f logits "
                "differ in their bits; the rows are %snormalised: in the most uniform model the "
                "word rows' norms still differ from 1 by up to %.3g (%s 0.05) and max/min = %.3g "
                "(%s 1.1)",
                table, input, logits, sentences, not_normalised ? "not " : "", worst_dev,
                worst_dev > 0.05 ? ">" : "<=", worst_ratio, worst_ratio > 1.1 ? ">" : "<=");
}

attn_status exp_embedding_plot(const attn_experiment_result *r, const char *path, attn_error *err) {
    attn_plot_series s[N_ARCH + 1];
    double ids[ATTN_VOCAB_SIZE], ones[ATTN_VOCAB_SIZE];
    char titles[N_ARCH][64];
    int n = 0;
    for (int v = 0; v < ATTN_VOCAB_SIZE; v++) ids[v] = v, ones[v] = 1.0;
    for (int a = 0; a < N_ARCH; a++) {
        char name[64];
        snprintf(name, sizeof name, "%s.seed1.row_norms", archs[a]);
        const attn_measure *m = attn_experiment_measure(r, name);
        if (!m || m->n != ATTN_VOCAB_SIZE) continue;
        snprintf(titles[n], sizeof titles[n], "%s (seed 1)", archs[a]);
        s[n] = (attn_plot_series){titles[n], m->n, ids, m->values, .points = true};
        n++;
    }
    if (n == 0) return attn_errorf(err, ATTN_ERR_ARG, "embedding plot: no row norms in the result");
    s[n++] = (attn_plot_series){"unit length", ATTN_VOCAB_SIZE, ids, ones, .dashed = true};
    const attn_plot p = {.title = "Row norms of the trained embedding tables (weights/)",
                         .xlabel = "token id (0 [PAD], 1 [CLS], then the 89 words)",
                         .ylabel = "L2 norm of the embedding row",
                         .key = "top right",
                         .y_max = 10,
                         .n_series = n,
                         .series = s};
    return attn_plot_lines(&p, path, err);
}

/* experiments_parallel.c -- `attn experiment parallel` (write-up §1, §8): sequential steps
 * against parallel work.
 *
 * An RNN or LSTM computes h_t from h_{t-1}: a sentence of T words is T sequential steps (one
 * small product h . W_hh^T each), whatever the hardware. A Transformer layer computes all T
 * positions with a few large products (Q, K, V for all rows at once, then T x T scores): 2 layers
 * are 2 sequential steps, the work per layer grows like T (projections, FFN) plus T^2
 * (attention). The experiment times the models' own forward (attn_model_forward, one BLAS
 * thread, random ids, all sentences of the batch of the same length) for lengths from 1 to 80
 * words at batch 1 and 256, counts the multiply-adds of one forward with the sgemm counter and
 * the sequential recurrent products (calls of the recurrent sgemm), and fits the log-log slope of
 * time per sentence against length: 1 means proportional to length. Timings are medians of
 * repeated forwards after one warm-up. */
#include "attn_kernels.h"
#include "attn_plot.h"
#include "experiments_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const attn_arch archs[] = {ATTN_ARCH_RNN, ATTN_ARCH_LSTM, ATTN_ARCH_TRANSFORMER};
#define N_ARCH 3
static const int batches[] = {1, 256};
#define N_BATCH 2
static const int lengths_full[] = {1, 2, 4, 8, 16, 32, 64, 80};
static const int lengths_quick[] = {2, 8, 32, 80};
#define MAX_LENGTHS 8
#define MAX_REPS    101

typedef struct timing {
    double seconds;   /* median seconds per forward */
    double madds;     /* multiply-adds of one forward */
    double recurrent; /* sequential recurrent products of one forward */
} timing;

typedef struct forward_run {
    attn_model *m;
    const attn_batch *batch;
    float *logits;
} forward_run;

static attn_status run_forward(void *ctx, attn_error *err) {
    const forward_run *f = ctx;
    return attn_model_forward(f->m, f->batch, f->logits, err);
}

static attn_status time_forward(attn_model *m, int B, int T, double min_total, timing *t,
                                attn_error *err) {
    int *ids = malloc((size_t)B * T * sizeof *ids), *lengths = malloc((size_t)B * sizeof *lengths);
    float *logits = malloc((size_t)B * sizeof *logits);
    double *times = malloc(MAX_REPS * sizeof *times);
    attn_status st = ATTN_OK;
    if (!ids || !lengths || !logits || !times)
        st = attn_errorf(err, ATTN_ERR_NOMEM, "parallel: out of memory for batch %d x %d", B, T);
    attn_rng r = attn_rng_seed((uint64_t)B * 1000 + (uint64_t)T);
    for (int i = 0; !st && i < B * T; i++) ids[i] = 2 + (int)attn_rng_below(&r, ATTN_N_WORDS);
    for (int b = 0; !st && b < B; b++) lengths[b] = T;
    const attn_batch batch = {B, T, ids, lengths};
    forward_run run = {m, &batch, logits};
    attn_flop_counts c = {0};
    if (!st) st = exp_count_products(run_forward, &run, &c, err); /* warm-up (grows the arena) */
    t->madds = t->recurrent = 0.0;
    for (int op = 0; op < ATTN_OP_COUNT; op++) t->madds += (double)c.fwd_madds[op];
    t->recurrent = (double)c.calls[ATTN_OP_RECURRENT];
    int n = 0;
    if (!st) st = exp_time_runs(run_forward, &run, min_total, MAX_REPS, times, &n, err);
    if (!st) t->seconds = times[n / 2];
    free(ids);
    free(lengths);
    free(logits);
    free(times);
    return st;
}

attn_status exp_parallel_run(const attn_experiment_opts *o, attn_experiment_result *r,
                             attn_error *err) {
    const int *lengths = o->quick ? lengths_quick : lengths_full;
    const int nL = o->quick ? 4 : 8;
    const double min_total = o->quick ? 0.02 : 0.25; /* seconds of timed forwards per point */
    double L[MAX_LENGTHS], per_sentence[MAX_LENGTHS], madds[MAX_LENGTHS], steps[MAX_LENGTHS];
    double rate[MAX_LENGTHS];
    double slope[N_ARCH][N_BATCH];
    for (int i = 0; i < nL; i++) L[i] = lengths[i];
    attn_status st = exp_put_array(r, "lengths", nL, L, err);
    for (int a = 0; !st && a < N_ARCH; a++) {
        const attn_model_config cfg = attn_model_config_default(archs[a]);
        attn_model *m = NULL;
        st = attn_model_create(&cfg, 1, &m, err);
        const char *name = attn_arch_name(archs[a]);
        char key[64];
        for (int bi = 0; !st && bi < N_BATCH; bi++) {
            for (int i = 0; !st && i < nL; i++) {
                exp_progress(o, "parallel: %s batch %d length %d", name, batches[bi], lengths[i]);
                timing t = {0};
                st = time_forward(m, batches[bi], lengths[i], min_total, &t, err);
                per_sentence[i] = t.seconds / batches[bi];
                madds[i] = t.madds / batches[bi];
                rate[i] = t.madds / t.seconds;
                steps[i] = archs[a] == ATTN_ARCH_TRANSFORMER ? cfg.n_layers : t.recurrent;
            }
            if (st) break;
            slope[a][bi] = exp_loglog_slope(L, per_sentence, nL);
            snprintf(key, sizeof key, "%s.batch%d.seconds_per_sentence", name, batches[bi]);
            st = exp_put_array(r, key, nL, per_sentence, err);
            snprintf(key, sizeof key, "%s.batch%d.slope", name, batches[bi]);
            if (!st) st = exp_put(r, key, slope[a][bi], err);
            /* how much of the machine each model uses: multiply-adds per second */
            snprintf(key, sizeof key, "%s.batch%d.madds_per_second", name, batches[bi]);
            if (!st) st = exp_put_array(r, key, nL, rate, err);
            if (!st && bi == 0) {
                snprintf(key, sizeof key, "%s.madds_per_sentence", name);
                st = exp_put_array(r, key, nL, madds, err);
                snprintf(key, sizeof key, "%s.work_slope", name);
                if (!st) st = exp_put(r, key, exp_loglog_slope(L, madds, nL), err);
                snprintf(key, sizeof key, "%s.sequential_steps", name);
                if (!st) st = exp_put_array(r, key, nL, steps, err);
            }
        }
        attn_model_free(m);
    }
    if (st) return st;
    exp_parallel_verdict(r);
    return ATTN_OK;
}

/* holds if both recurrent models' time per sentence grows about linearly with the length
 * (log-log slope >= 0.8 at batch 1 and 256) and the Transformer's at batch 1 is flatter by at
 * least 0.2 than the smaller recurrent slope; mixed if one of the two. */
void exp_parallel_verdict(attn_experiment_result *r) {
    double slope[N_ARCH][N_BATCH];
    for (int a = 0; a < N_ARCH; a++)
        for (int bi = 0; bi < N_BATCH; bi++) {
            char key[64];
            snprintf(key, sizeof key, "%s.batch%d.slope", attn_arch_name(archs[a]), batches[bi]);
            slope[a][bi] = exp_get(r, key);
        }
    /* archs[0] rnn, [1] lstm, [2] transformer; batches[0] = 1, [1] = 256 */
    const bool recurrent_linear =
        slope[0][0] >= 0.8 && slope[1][0] >= 0.8 && slope[0][1] >= 0.8 && slope[1][1] >= 0.8;
    const bool tf_flatter = slope[2][0] <= fmin(slope[0][0], slope[1][0]) - 0.2;
    exp_verdict(r,
                recurrent_linear && tf_flatter   ? ATTN_VERDICT_HOLDS
                : recurrent_linear || tf_flatter ? ATTN_VERDICT_MIXED
                                                 : ATTN_VERDICT_DOES_NOT_HOLD,
                "slopes of time per sentence against length: RNN %.2f / %.2f, LSTM %.2f / %.2f "
                "at batch 1 / 256 (%s 0.8); Transformer %.2f at batch 1 (%s the recurrent "
                "minimum %.2f - 0.2) and %.2f at batch 256, its work growing with slope %.2f",
                slope[0][0], slope[0][1], slope[1][0], slope[1][1],
                recurrent_linear ? "all >=" : "not all >=", slope[2][0], tf_flatter ? "<=" : ">",
                fmin(slope[0][0], slope[1][0]), slope[2][1], exp_get(r, "transformer.work_slope"));
}

attn_status exp_parallel_plot(const attn_experiment_result *r, const char *path, attn_error *err) {
    const attn_measure *L = attn_experiment_measure(r, "lengths");
    if (!L) return attn_errorf(err, ATTN_ERR_ARG, "parallel plot: no lengths in the result");
    attn_plot_series s[N_ARCH * N_BATCH];
    char titles[N_ARCH * N_BATCH][64];
    double us[N_ARCH * N_BATCH][MAX_LENGTHS];
    int n = 0;
    for (int bi = 0; bi < N_BATCH; bi++)
        for (int a = 0; a < N_ARCH; a++) {
            char key[64];
            snprintf(key, sizeof key, "%s.batch%d.seconds_per_sentence", attn_arch_name(archs[a]),
                     batches[bi]);
            const attn_measure *m = attn_experiment_measure(r, key);
            if (!m || m->n != L->n || m->n > MAX_LENGTHS) continue;
            for (int i = 0; i < m->n; i++) us[n][i] = 1e6 * m->values[i];
            snprintf(titles[n], sizeof titles[n], "%s, batch %d (slope %.2f)",
                     attn_arch_name(archs[a]), batches[bi],
                     exp_loglog_slope(L->values, m->values, m->n));
            s[n] = (attn_plot_series){titles[n], m->n,           L->values,
                                      us[n],     .points = true, .dashed = bi == 1};
            n++;
        }
    if (n == 0) return attn_errorf(err, ATTN_ERR_ARG, "parallel plot: no timings in the result");
    const attn_plot p = {.title =
                             "Time per sentence against length (attn's forward, 1 thread, median)",
                         .xlabel = "sentence length (words)",
                         .ylabel = "time per sentence (microseconds)",
                         .log_x = true,
                         .log_y = true,
                         .key = "top left",
                         .n_series = n,
                         .series = s};
    return attn_plot_lines(&p, path, err);
}

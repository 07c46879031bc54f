/* threads.c -- one run on N threads against the same run on 1: Transformer training
 * throughput, batched evaluation (batch 256) and explain with 64 integrated-gradient steps,
 * each as a speed-up ratio (the targets of issue 22: >= 1.7x, >= 1.8x, >= 1.7x at 2 threads),
 * after checking that the N-thread result is byte-identical to the 1-thread one. Medians of
 * --reps repetitions; prints ratios, asserts nothing about timings (a MISS does not fail).
 *
 *   build/bench/threads [--threads N] [--reps R] [--quick] [-h|--help]
 *
 * Exit status: 0 ok, 1 runtime error or results differing between thread counts, 2 usage.
 */
#include "attn.h"
#include "attn_kernels.h"
#include "attn_threads.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *what, const attn_error *err) {
    fprintf(stderr, "threads: %s: %s\n", what, err ? err->msg : "failed");
    exit(1);
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct bench_cfg {
    int threads, reps, train_n, eval_n, explain_n;
} bench_cfg;

/* ---- training ----------------------------------------------------------------------------- */

static bool on_epoch(const attn_epoch_stats *st, void *user) {
    *(double *)user = st->sentences_per_s;
    return true;
}

/* One epoch of the default Transformer (seed 1, no held-out slice) on d; sentences/s; the
 * weights into params. */
static double train_once(const attn_dataset *d, attn_pool *pool, float *params) {
    attn_model_config mc = attn_model_config_default(ATTN_ARCH_TRANSFORMER);
    attn_train_config cfg = attn_train_config_default();
    cfg.epochs = 1;
    cfg.holdout = 0;
    attn_model *m = NULL;
    attn_trainer *t = NULL;
    attn_error err;
    double rate = 0.0;
    attn_train_callbacks cb = {on_epoch, NULL, &rate};
    if (attn_model_create(&mc, 1, &m, &err) != ATTN_OK) die("model", &err);
    if (attn_trainer_create(m, d, &cfg, &t, &err) != ATTN_OK) die("trainer", &err);
    if (attn_trainer_set_pool(t, pool, &err) != ATTN_OK) die("pool", &err);
    if (attn_trainer_run(t, &cb, &err) != ATTN_OK) die("training", &err);
    memcpy(params, attn_model_params(m), attn_model_n_params(m) * sizeof(float));
    attn_trainer_free(t);
    attn_model_free(m);
    return rate;
}

/* ---- evaluation ----------------------------------------------------------------------------- */

static double eval_once(attn_model *m, const attn_dataset *d, attn_pool *pool, double *acc) {
    attn_error err;
    double t0 = now_s();
    if (attn_evaluate_pool(m, d, 0, d->n, 256, pool, acc, &err) != ATTN_OK) die("evaluate", &err);
    return d->n / (now_s() - t0);
}

/* ---- explain -------------------------------------------------------------------------------- */

/* Explains the first n sentences of d with 64 integrated-gradient steps; sentences/s; the
 * integrated gradients one after the other into ig. */
static double explain_once(attn_model *m, const attn_dataset *d, int n, attn_pool *pool,
                           float *ig) {
    const attn_explain_opts o = {.ig_steps = 64};
    attn_error err;
    double t0 = now_s();
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        attn_explanation *e = NULL;
        if (attn_explain_pool(m, d->ids + d->offsets[i], d->lengths[i], &o, pool, &e, &err) !=
            ATTN_OK)
            die("explain", &err);
        memcpy(ig + k, e->integrated_gradients, (size_t)d->lengths[i] * sizeof(float));
        k += (size_t)d->lengths[i];
        attn_explanation_free(e);
    }
    return n / (now_s() - t0);
}

/* ---- the table --------------------------------------------------------------------------- */

typedef struct row {
    const char *name, *unit;
    double target, rate[2]; /* [0] 1 thread, [1] N threads: medians */
    bool identical;
} row;

static void print_row(const row *r, int threads) {
    const double ratio = r->rate[1] / r->rate[0];
    printf("%-34s %10.1f %10.1f %8.2fx  >= %.1fx %-4s  %s\n", r->name, r->rate[0], r->rate[1],
           ratio, r->target, ratio >= r->target ? "PASS" : "MISS",
           r->identical ? "identical" : "DIFFERENT");
    (void)threads;
}

static void usage(FILE *f) {
    fprintf(f, "Usage: threads [--threads N] [--reps R] [--quick]\n"
               "\n"
               "Speed-up of one run on N threads (default 2) over the same run on 1 thread:\n"
               "Transformer training (one epoch of 8000 sentences), batched evaluation\n"
               "(Transformer and LSTM, batch 256, 8000 sentences) and explain with 64\n"
               "integrated-gradient steps (Transformer, 40 sentences). Each N-thread result is\n"
               "checked byte for byte against the 1-thread one. Medians of R runs (default 3).\n"
               "--quick: smaller sets and one repetition (a smoke test; the ratios mean little).\n"
               "Run on a quiet machine: other processes on the cores distort the ratios.\n"
               "\n"
               "Exit status: 0 ok (a MISSed target does not fail the run), 1 runtime error or\n"
               "results that differ between thread counts, 2 usage error.\n");
}

static int parse(int argc, char **argv, bench_cfg *c) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--quick") == 0) {
            c->reps = 1;
            c->train_n = 1000;
            c->eval_n = 1024;
            c->explain_n = 8;
        } else if ((strcmp(argv[i], "--threads") == 0 || strcmp(argv[i], "--reps") == 0) &&
                   i + 1 < argc) {
            char *end;
            long v = strtol(argv[i + 1], &end, 10);
            const bool thr = strcmp(argv[i], "--threads") == 0;
            if (*end || v < (thr ? 2 : 1) || v > (thr ? ATTN_MAX_THREADS : 100)) {
                fprintf(stderr, "threads: %s needs an integer in %d..%d, got '%s'\n", argv[i],
                        thr ? 2 : 1, thr ? ATTN_MAX_THREADS : 100, argv[i + 1]);
                return 2;
            }
            *(thr ? &c->threads : &c->reps) = (int)v;
            i++;
        } else {
            fprintf(stderr,
                    "threads: unknown option or missing value '%s'\nTry 'threads --help'.\n",
                    argv[i]);
            return 2;
        }
    }
    return -1;
}

int main(int argc, char **argv) {
    bench_cfg c = {2, 3, 8000, 8000, 40};
    int rc = parse(argc, argv, &c);
    if (rc >= 0) return rc;
    attn_set_num_threads(1); /* one BLAS thread per product; the pool's threads are the others */
    attn_error err;
    attn_pool *pool = NULL;
    if (attn_pool_create(c.threads, &pool, &err) != ATTN_OK) die("pool", &err);
    attn_dataset *train = NULL, *test = NULL;
    if (attn_data_generate(ATTN_SET_TRAIN, c.train_n, 1, &train, &err) != ATTN_OK)
        die("data", &err);
    if (attn_data_generate(ATTN_SET_DISTRACTOR, c.eval_n, 2, &test, &err) != ATTN_OK)
        die("data", &err);
    printf("# threads: 1 vs %d threads on %d cores, OpenBLAS %s kernels, one BLAS thread per "
           "product; medians of %d\n",
           c.threads, attn_cores(), attn_blas_corename(), c.reps);
    printf("%-34s %10s %10s %9s  %-12s %s\n", "run (sentences/s)", "1 thread",
           c.threads == 2 ? "2 threads" : "N threads", "speed-up", "target", "bytes");
    double *t[2];
    t[0] = malloc((size_t)c.reps * sizeof(double));
    t[1] = malloc((size_t)c.reps * sizeof(double));
    attn_model_config tc = attn_model_config_default(ATTN_ARCH_TRANSFORMER);
    const size_t np = attn_model_config_n_params(&tc);
    float *w[2] = {malloc(np * sizeof(float)), malloc(np * sizeof(float))};
    size_t words = 0;
    for (int i = 0; i < c.explain_n; i++) words += (size_t)test->lengths[i];
    float *ig[2] = {malloc(words * sizeof(float)), malloc(words * sizeof(float))};
    if (!t[0] || !t[1] || !w[0] || !w[1] || !ig[0] || !ig[1]) die("out of memory", NULL);
    int failures = 0;

    row tr = {"transformer training", "", 1.7, {0, 0}, true};
    for (int k = 0; k < 2; k++)
        for (int r = 0; r < c.reps; r++) t[k][r] = train_once(train, k ? pool : NULL, w[k]);
    tr.rate[0] = median(t[0], c.reps);
    tr.rate[1] = median(t[1], c.reps);
    tr.identical = memcmp(w[0], w[1], np * sizeof(float)) == 0;
    print_row(&tr, c.threads);
    failures += !tr.identical;

    static const attn_arch eval_archs[] = {ATTN_ARCH_TRANSFORMER, ATTN_ARCH_LSTM};
    for (int a = 0; a < 2; a++) {
        attn_model_config mc = attn_model_config_default(eval_archs[a]);
        attn_model *m = NULL;
        if (attn_model_create(&mc, 1, &m, &err) != ATTN_OK) die("model", &err);
        char name[64];
        snprintf(name, sizeof name, "%s eval, batch 256", attn_arch_name(eval_archs[a]));
        row ev = {name, "", 1.8, {0, 0}, true};
        double acc[2];
        for (int k = 0; k < 2; k++)
            for (int r = 0; r < c.reps; r++) t[k][r] = eval_once(m, test, k ? pool : NULL, &acc[k]);
        ev.rate[0] = median(t[0], c.reps);
        ev.rate[1] = median(t[1], c.reps);
        ev.identical = acc[0] == acc[1];
        print_row(&ev, c.threads);
        failures += !ev.identical;
        attn_model_free(m);
    }

    attn_model *m = NULL;
    if (attn_model_create(&tc, 1, &m, &err) != ATTN_OK) die("model", &err);
    row ex = {"transformer explain, 64 IG steps", "", 1.7, {0, 0}, true};
    for (int k = 0; k < 2; k++)
        for (int r = 0; r < c.reps; r++)
            t[k][r] = explain_once(m, test, c.explain_n, k ? pool : NULL, ig[k]);
    ex.rate[0] = median(t[0], c.reps);
    ex.rate[1] = median(t[1], c.reps);
    ex.identical = memcmp(ig[0], ig[1], words * sizeof(float)) == 0;
    print_row(&ex, c.threads);
    failures += !ex.identical;
    attn_model_free(m);

    free(t[0]);
    free(t[1]);
    free(w[0]);
    free(w[1]);
    free(ig[0]);
    free(ig[1]);
    attn_dataset_free(train);
    attn_dataset_free(test);
    attn_pool_free(pool);
    if (failures) fprintf(stderr, "threads: %d results differ between thread counts\n", failures);
    return failures ? 1 : 0;
}

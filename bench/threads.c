/* threads.c -- one run on N threads against the same run on 1: Transformer training
 * throughput, batched evaluation (batch 256) and explain with 64 integrated-gradient steps,
 * each as a speed-up ratio (the targets of issue 22: >= 1.7x, >= 1.8x, >= 1.7x at 2 threads),
 * and the seq2seq-transformer's training and greedy evaluation (no target),
 * after checking that the N-thread result is byte-identical to the 1-thread one. The 1- and
 * N-thread runs alternate, so each pair sees the same machine; the speed-up is the median of
 * the --reps pairs' ratios; asserts nothing about timings (a MISS does not fail).
 * Then the load-independent part: each run once more on a measuring pool (attn_threads.h),
 * whose CPU-time trace gives the serial share and the speed-up the pieces allow, and the wall
 * time one pool run costs beyond its work.
 *
 *   build/bench/threads [--threads N] [--reps R] [--only ROWS] [--at T [--one-cpu]] [--quick]
 *
 * Exit status: 0 ok, 1 runtime error or results differing between thread counts, 2 usage.
 */
#include "attn.h"
#include "attn_kernels.h"
#include "attn_seq2seq.h"
#include "attn_threads.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench_time.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *what, const attn_error *err) {
    fprintf(stderr, "threads: %s: %s\n", what, err ? err->msg : "failed");
    exit(1);
}

typedef struct bench_cfg {
    int threads, reps, train_n, eval_n, explain_n, s2s_train_n, s2s_eval_n;
    unsigned rows; /* bit k: run row k (--only) */
    int at;        /* --at T: only the T-thread runs (0: both, compared) */
    bool one_cpu;  /* --one-cpu: --at T's runs on the measuring pool (every task on one thread) */
} bench_cfg;

static const char *const ROW_KEYS[] = {"train", "eval", "lstm", "explain", "s2s-train", "s2s-eval"};
enum { N_ROW_KEYS = sizeof ROW_KEYS / sizeof ROW_KEYS[0] };

/* ---- training ----------------------------------------------------------------------------- */

static bool on_epoch(const attn_epoch_stats *st, void *user) {
    *(double *)user = st->sentences_per_s;
    return true;
}

/* One epoch of the default Transformer (seed 1, no held-out slice) on d; sentences/s; the
 * weights into params. */
static double train_once(const attn_dataset *d, attn_pool *pool, void *params) {
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

static double eval_once(attn_model *m, const attn_dataset *d, attn_pool *pool, void *acc_out) {
    double *acc = acc_out;
    attn_error err;
    double t0 = now_s();
    if (attn_evaluate_pool(m, d, 0, d->n, 256, pool, acc, &err) != ATTN_OK) die("evaluate", &err);
    return d->n / (now_s() - t0);
}

/* ---- explain -------------------------------------------------------------------------------- */

/* Explains the first n sentences of d with 64 integrated-gradient steps; sentences/s; the
 * integrated gradients one after the other into ig. */
static double explain_once(attn_model *m, const attn_dataset *d, int n, attn_pool *pool,
                           void *ig_out) {
    float *ig = ig_out;
    const attn_explain_opts o = {.ig_steps = 64};
    attn_error err;
    double t0 = now_s();
    size_t k = 0;
    attn_explainer *x = NULL;
    if (attn_explainer_create(m, pool, &x, &err) != ATTN_OK) die("explain", &err);
    for (int i = 0; i < n; i++) {
        attn_explanation *e = NULL;
        if (attn_explainer_run(x, d->ids + d->offsets[i], d->lengths[i], &o, &e, &err) != ATTN_OK)
            die("explain", &err);
        memcpy(ig + k, e->integrated_gradients, (size_t)d->lengths[i] * sizeof(float));
        k += (size_t)d->lengths[i];
        attn_explanation_free(e);
    }
    attn_explainer_free(x);
    return n / (now_s() - t0);
}

/* ---- seq2seq ------------------------------------------------------------------------------ */

static bool s2s_on_epoch(const attn_s2s_epoch_stats *st, void *user) {
    (void)st;
    (void)user;
    return true;
}

/* The default seq2seq-transformer (rewrite, seed 1) trained for `epochs` on p, no held-out
 * scoring; *m receives it. */
static void s2s_trained(const attn_pairs *p, int epochs, attn_pool *pool, attn_seq2seq **m) {
    attn_seq2seq_config mc = attn_seq2seq_config_default(ATTN_S2S_TRANSFORMER);
    attn_seq2seq_config_set_task(&mc, ATTN_TASK_REWRITE);
    attn_s2s_train_config cfg = attn_s2s_train_config_default();
    cfg.epochs = epochs;
    cfg.holdout = 0;
    attn_error err;
    const attn_s2s_callbacks cb = {s2s_on_epoch, NULL};
    if (attn_seq2seq_create(&mc, 1, m, &err) != ATTN_OK) die("seq2seq model", &err);
    if (attn_seq2seq_train_pool(*m, p, NULL, &cfg, &cb, NULL, pool, &err) != ATTN_OK)
        die("seq2seq training", &err);
}

/* One epoch of seq2seq training on p; pairs/s; the weights into params. */
static double s2s_train_once(const attn_pairs *p, attn_pool *pool, void *params) {
    attn_seq2seq *m = NULL;
    const double t0 = now_s();
    s2s_trained(p, 1, pool, &m);
    const double rate = p->src->n / (now_s() - t0);
    memcpy(params, attn_seq2seq_params(m), attn_seq2seq_n_params(m) * sizeof(float));
    attn_seq2seq_free(m);
    return rate;
}

/* Greedy decoding (KV cache) of every pair of p, scored by exact match; pairs/s; the scores
 * (an attn_s2s_eval) into out. */
static double s2s_eval_once(attn_seq2seq *m, const attn_pairs *p, attn_pool *pool, void *out) {
    attn_error err;
    const double t0 = now_s();
    if (attn_seq2seq_evaluate_pool(m, p, 0, p->src->n, pool, out, &err) != ATTN_OK)
        die("seq2seq evaluation", &err);
    return p->src->n / (now_s() - t0);
}

/* The default rewrite seq2seq-transformer's parameters, in bytes. */
static size_t s2s_params_bytes(void) {
    attn_seq2seq_config mc = attn_seq2seq_config_default(ATTN_S2S_TRANSFORMER);
    attn_seq2seq_config_set_task(&mc, ATTN_TASK_REWRITE);
    attn_seq2seq *m = NULL;
    attn_error err;
    if (attn_seq2seq_create(&mc, 1, &m, &err) != ATTN_OK) die("seq2seq model", &err);
    const size_t n = attn_seq2seq_n_params(m) * sizeof(float);
    attn_seq2seq_free(m);
    return n;
}

/* ---- the table --------------------------------------------------------------------------- */

typedef struct row {
    const char *name;
    double target, rate[2]; /* [0] 1 thread, [1] N threads: medians */
    double speedup;         /* median of the pairs' ratios */
    bool identical;
    double cpu1;               /* CPU time of the 1-thread run (median) */
    double cpu_ratio;          /* process CPU time, N-thread run over 1-thread run (medians) */
    attn_pool_trace one, many; /* the measuring pool's (1 thread posing as N) and the real pool's */
} row;

static void print_row(const row *r) {
    const double ratio = r->speedup;
    char target[32] = "-";
    if (r->target > 0)
        snprintf(target, sizeof target, ">= %.1fx %-4s", r->target,
                 ratio >= r->target ? "PASS" : "MISS");
    printf("%-34s %10.1f %10.1f %8.2fx  %-12s  %s\n", r->name, r->rate[0], r->rate[1], ratio,
           target, r->identical ? "identical" : "DIFFERENT");
}

/* The load-independent half, from CPU times: the share of the run no other thread can take
 * (outside the pool's tasks, of the 1-thread run's time), the speed-up that share allows
 * (Amdahl), the one the pieces allow (the measuring run's time over its serial part plus its
 * tasks' CPU times scheduled on N threads), the CPU time of the N-thread path's work done on one
 * thread over the 1-thread run's (replicas, the split itself: > 1 costs speed-up) and the CPU
 * time of the same tasks on N real threads over one (contention, caches). The last two compare
 * separate runs: on a loaded machine they move by tens of percent from run to run. */
static void print_share(const row *r, int threads) {
    const attn_pool_trace *o = &r->one, *m = &r->many;
    const double s = r->cpu1 > 0 ? o->serial_s / r->cpu1 : 0.0;
    const double amdahl = 1.0 / (s + (1.0 - s) / threads);
    const double sched = o->serial_s + o->span_s > 0 ? o->caller_s / (o->serial_s + o->span_s) : 0;
    printf("%-34s %7.1f %% %9.2fx %9.2fx %10.2f %10.2f %10.2f %8ld\n", r->name, 100.0 * s, amdahl,
           sched, r->cpu1 > 0 ? o->caller_s / r->cpu1 : 0.0,
           o->task_s > 0 ? m->task_s / o->task_s : 0.0, r->cpu_ratio, o->runs);
}

static double thread_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void usage(FILE *f) {
    fprintf(
        f, "Usage: threads [--threads N] [--reps R] [--only ROWS] [--at T [--one-cpu]] [--quick]\n"
           "\n"
           "Speed-up of one run on N threads (default 2) over the same run on 1 thread:\n"
           "Transformer training (one epoch of 8000 sentences), batched evaluation\n"
           "(Transformer and LSTM, batch 256, 32000 sentences) and explain with 64\n"
           "integrated-gradient steps (Transformer, 160 sentences); and the seq2seq-transformer's\n"
           "training (one epoch of 4000 rewrite pairs, batches of 32 in micro-batches of 16)\n"
           "and greedy evaluation (4000 distractor pairs, KV cache, a model trained 1 epoch),\n"
           "in pairs/s, without a target. Each N-thread result is\n"
           "checked byte for byte against the 1-thread one (and the run on a measuring pool).\n"
           "The 1- and N-thread runs alternate (1, N, 1, N, ...); the speed-up is the median\n"
           "of the R pairs' ratios (default R = 3). Then, from CPU times (valid on a busy\n"
           "machine): the serial share of each run, the speed-up it allows (Amdahl) and the\n"
           "one its pieces allow, the process CPU time of the N-thread run over the 1-thread\n"
           "one, and the wall-time cost of one pool run.\n"
           "--only ROWS: a comma-separated subset of train,eval,lstm,explain,s2s-train,s2s-eval.\n"
           "--at T: only the T-thread runs (T = 1: no pool), R of them, with their wall and\n"
           "process CPU times and nothing compared (for perf stat / perf record).\n"
           "--one-cpu: with --at T, the T-thread path with every task on the calling thread\n"
           "(the measuring pool): its extra work without the threads.\n"
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
            c->s2s_train_n = 500;
            c->s2s_eval_n = 500;
        } else if (strcmp(argv[i], "--one-cpu") == 0) {
            c->one_cpu = true;
        } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            c->rows = 0;
            char buf[64];
            snprintf(buf, sizeof buf, "%s", argv[++i]);
            for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
                 tok = strtok_r(NULL, ",", &save)) {
                int k = 0;
                while (k < N_ROW_KEYS && strcmp(tok, ROW_KEYS[k]) != 0) k++;
                if (k == N_ROW_KEYS) {
                    fprintf(stderr,
                            "threads: --only takes train,eval,lstm,explain,s2s-train,s2s-eval "
                            "(comma-separated), got '%s'\n",
                            tok);
                    return 2;
                }
                c->rows |= 1u << k;
            }
            if (!c->rows) {
                fprintf(stderr, "threads: --only needs at least one row\n");
                return 2;
            }
        } else if ((strcmp(argv[i], "--threads") == 0 || strcmp(argv[i], "--reps") == 0 ||
                    strcmp(argv[i], "--at") == 0) &&
                   i + 1 < argc) {
            char *end;
            long v = strtol(argv[i + 1], &end, 10);
            const bool thr = strcmp(argv[i], "--threads") == 0, at = strcmp(argv[i], "--at") == 0;
            const long lo = thr ? 2 : 1, hi = thr || at ? ATTN_MAX_THREADS : 100;
            if (*end || v < lo || v > hi) {
                fprintf(stderr, "threads: %s needs an integer in %ld..%ld, got '%s'\n", argv[i], lo,
                        hi, argv[i + 1]);
                return 2;
            }
            *(thr ? &c->threads : at ? &c->at : &c->reps) = (int)v;
            i++;
        } else {
            fprintf(stderr,
                    "threads: unknown option or missing value '%s'\nTry 'threads --help'.\n",
                    argv[i]);
            return 2;
        }
    }
    if (c->one_cpu && c->at < 2) {
        fprintf(stderr, "threads: --one-cpu needs --at T with T >= 2 (the T-thread path)\n");
        return 2;
    }
    return -1;
}

/* ---- the pool's own cost ------------------------------------------------------------------ */

/* A task that spins for *(double *)ctx seconds of wall time. */
static void wait_task(void *ctx, int task, int worker) {
    (void)task;
    (void)worker;
    const double t0 = now_s(), d = *(const double *)ctx;
    while (now_s() - t0 < d) {
    }
}

/* Microseconds a pool run of one 20-us task per thread takes beyond the 20 us (median of 5
 * passes of 2,000 runs): waking the threads and waiting for the last one. */
static double pool_overhead_us(attn_pool *pool) {
    double d = 20e-6, v[5];
    for (int r = 0; r < 5; r++) {
        const double t0 = now_s();
        for (int i = 0; i < 2000; i++) attn_pool_run(pool, attn_pool_threads(pool), wait_task, &d);
        v[r] = (now_s() - t0) / 2000 * 1e6 - 20.0;
    }
    return bench_median(v, 5);
}

typedef struct workload {
    const char *name;
    double target;
    int kind; /* 0 training, 1 evaluation, 2 explain, 3 seq2seq training, 4 seq2seq evaluation */
    attn_model *m;
    size_t out_bytes; /* the result compared between thread counts */
} workload;

typedef struct bench_data {
    const attn_dataset *train, *test;
    int explain_n;
    const attn_pairs *s2s_train, *s2s_test; /* NULL unless their rows run */
    attn_seq2seq *s2s;                      /* the model the s2s-eval row decodes with */
} bench_data;

/* One run of w on pool (NULL: the caller's thread); sentences/s; the result into out. */
static double run_work(const workload *w, const bench_data *d, attn_pool *pool, void *out) {
    if (w->kind == 0) return train_once(d->train, pool, out);
    if (w->kind == 1) return eval_once(w->m, d->test, pool, out);
    if (w->kind == 3) return s2s_train_once(d->s2s_train, pool, out);
    if (w->kind == 4) return s2s_eval_once(d->s2s, d->s2s_test, pool, out);
    return explain_once(w->m, d->test, d->explain_n, pool, out);
}

static double process_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One timed run: sentences/s, and the process's CPU time (every thread's) into *cpu. */
static double timed_run(const workload *w, const bench_data *d, attn_pool *pool, void *out,
                        double *cpu) {
    const double c0 = process_cpu_s();
    const double rate = run_work(w, d, pool, out);
    *cpu = process_cpu_s() - c0;
    return rate;
}

/* --at T: R runs of each selected row on T threads, nothing compared. */
static void run_at(const bench_cfg *c, const workload *works, int n_work, const bench_data *bd,
                   attn_pool *pool, attn_pool *measuring, char *out) {
    if (c->one_cpu) pool = measuring;
    printf("# threads: the runs on %d thread%s only%s, OpenBLAS %s kernels, %d repetitions\n",
           c->at, c->at == 1 ? "" : "s", c->one_cpu ? " (every task on the calling thread)" : "",
           attn_blas_corename(), c->reps);
    printf("%-34s %12s %10s %10s\n", "run", "sentences/s", "wall s", "cpu s");
    for (int k = 0; k < n_work; k++) {
        if (!(c->rows >> k & 1)) continue;
        for (int i = 0; i < c->reps; i++) {
            double cpu;
            const double t0 = now_s();
            const double rate = timed_run(&works[k], bd, c->at > 1 ? pool : NULL, out, &cpu);
            printf("%-34s %12.1f %10.3f %10.3f\n", works[k].name, rate, now_s() - t0, cpu);
        }
    }
}

int main(int argc, char **argv) {
    bench_cfg c = {2, 3, 8000, 32000, 160, 4000, 4000, 0x3fu, 0, false};
    int rc = parse(argc, argv, &c);
    if (rc >= 0) return rc;
    attn_set_num_threads(1); /* one BLAS thread per product; the pool's threads are the others */
    attn_error err;
    attn_pool *pool = NULL, *measuring = NULL;
    if (attn_pool_create(c.at > 1 ? c.at : c.threads, &pool, &err) != ATTN_OK) die("pool", &err);
    if (attn_pool_create_measuring(c.at > 1 ? c.at : c.threads, &measuring, &err) != ATTN_OK)
        die("pool", &err);
    attn_dataset *train = NULL, *test = NULL;
    if (attn_data_generate(ATTN_SET_TRAIN, c.train_n, 1, &train, &err) != ATTN_OK)
        die("data", &err);
    if (attn_data_generate(ATTN_SET_DISTRACTOR, c.eval_n, 2, &test, &err) != ATTN_OK)
        die("data", &err);
    attn_pairs *s2s_train = NULL, *s2s_test = NULL;
    attn_seq2seq *s2s = NULL;
    if (c.rows & 0x30u) {
        if (attn_pairs_generate(ATTN_TASK_REWRITE, ATTN_SET_TRAIN, c.s2s_train_n, 1, &s2s_train,
                                &err) != ATTN_OK ||
            attn_pairs_generate(ATTN_TASK_REWRITE, ATTN_SET_DISTRACTOR, c.s2s_eval_n, 2, &s2s_test,
                                &err) != ATTN_OK)
            die("seq2seq data", &err);
        if (c.rows & 0x20u) s2s_trained(s2s_train, 1, NULL, &s2s);
    }
    const bench_data bd = {train, test, c.explain_n, s2s_train, s2s_test, s2s};
    attn_model_config tc = attn_model_config_default(ATTN_ARCH_TRANSFORMER);
    attn_model_config lc = attn_model_config_default(ATTN_ARCH_LSTM);
    attn_model *tf = NULL, *lstm = NULL;
    if (attn_model_create(&tc, 1, &tf, &err) != ATTN_OK) die("model", &err);
    if (attn_model_create(&lc, 1, &lstm, &err) != ATTN_OK) die("model", &err);
    size_t words = 0;
    for (int i = 0; i < c.explain_n; i++) words += (size_t)test->lengths[i];
    const workload works[] = {
        {"transformer training", 1.7, 0, NULL, attn_model_config_n_params(&tc) * sizeof(float)},
        {"transformer eval, batch 256", 1.8, 1, tf, sizeof(double)},
        {"lstm eval, batch 256", 1.8, 1, lstm, sizeof(double)},
        {"transformer explain, 64 IG steps", 1.7, 2, tf, words * sizeof(float)},
        {"seq2seq training", 0.0, 3, NULL, s2s_params_bytes()},
        {"seq2seq greedy eval", 0.0, 4, NULL, sizeof(attn_s2s_eval)},
    };
    enum { N_WORK = sizeof works / sizeof works[0] };
    size_t most = 0;
    for (int k = 0; k < N_WORK; k++) most = works[k].out_bytes > most ? works[k].out_bytes : most;
    double *t[2] = {malloc((size_t)c.reps * sizeof(double)),
                    malloc((size_t)c.reps * sizeof(double))};
    double *cpu[2] = {malloc((size_t)c.reps * sizeof(double)),
                      malloc((size_t)c.reps * sizeof(double))};
    double *ratio = malloc((size_t)c.reps * sizeof(double));
    double *tcpu = malloc((size_t)c.reps * sizeof(double));
    char *out[3] = {malloc(most), malloc(most), malloc(most)};
    if (!t[0] || !t[1] || !cpu[0] || !cpu[1] || !ratio || !tcpu || !out[0] || !out[1] || !out[2])
        die("out of memory", NULL);

    int failures = 0;
    if (c.at) {
        run_at(&c, works, N_WORK, &bd, pool, measuring, out[0]);
        goto done;
    }
    printf("# threads: 1 vs %d threads on %d cores, OpenBLAS %s kernels (%s build), one BLAS "
           "thread per product; %d pairs of runs (1, %d, 1, %d, ...): median rates, median of the "
           "pairs' speed-ups\n",
           c.threads, attn_cores(), attn_blas_corename(), attn_blas_threading(), c.reps, c.threads,
           c.threads);
    printf("%-34s %10s %10s %9s  %-12s %s\n", "run (sentences/s; seq2seq: pairs/s)", "1 thread",
           c.threads == 2 ? "2 threads" : "N threads", "speed-up", "target", "bytes");
    row rows[N_WORK];
    for (int k = 0; k < N_WORK; k++) {
        const workload *w = &works[k];
        row *r = &rows[k];
        *r = (row){w->name, w->target, {0, 0}, 0.0, true, 0.0, 0.0, {0}, {0}};
        if (!(c.rows >> k & 1)) continue;
        for (int i = 0; i < c.reps; i++) { /* interleaved: a pair sees the same machine */
            const double c0 = thread_cpu_s();
            t[0][i] = timed_run(w, &bd, NULL, out[0], &cpu[0][i]);
            tcpu[i] = thread_cpu_s() - c0;
            attn_pool_trace_start(pool);
            t[1][i] = timed_run(w, &bd, pool, out[1], &cpu[1][i]);
            r->many = attn_pool_trace_read(pool);
            ratio[i] = t[1][i] / t[0][i];
            r->identical &= memcmp(out[0], out[1], w->out_bytes) == 0;
        }
        r->cpu1 = bench_median(tcpu, c.reps);
        r->cpu_ratio = bench_median(cpu[1], c.reps) / bench_median(cpu[0], c.reps);
        attn_pool_trace_start(measuring);
        run_work(w, &bd, measuring, out[2]);
        r->one = attn_pool_trace_read(measuring);
        r->rate[0] = bench_median(t[0], c.reps);
        r->rate[1] = bench_median(t[1], c.reps);
        r->speedup = bench_median(ratio, c.reps);
        r->identical &= memcmp(out[0], out[2], w->out_bytes) == 0;
        print_row(r);
        failures += !r->identical;
    }
    printf("\n# where the time goes, from CPU times (independent of other load): the share of the "
           "1-thread run that is serial in the %d-thread one, the speed-up it allows (Amdahl), "
           "the speed-up the pieces allow (their CPU times scheduled on %d threads), the "
           "%d-thread path's CPU time on one thread over the 1-thread run's, the tasks' CPU time "
           "on %d real threads over one, the %d-thread runs' process CPU time (all threads, "
           "waiting included) over the 1-thread runs' (1.00 = no cost), pool runs\n",
           c.threads, c.threads, c.threads, c.threads, c.threads);
    printf("%-34s %9s %10s %10s %10s %10s %10s %8s\n", "run", "serial", "amdahl", "tasks",
           "path cpu", "task cpu", "cpu N/1", "runs");
    for (int k = 0; k < N_WORK; k++)
        if (c.rows >> k & 1) print_share(&rows[k], c.threads);
    printf("\npool run of %d tasks of 20 us: %.1f us beyond the work (waking, waiting; wall "
           "time)\n",
           c.threads, pool_overhead_us(pool));

done:
    free(t[0]);
    free(t[1]);
    free(cpu[0]);
    free(cpu[1]);
    free(ratio);
    free(tcpu);
    for (int i = 0; i < 3; i++) free(out[i]);
    attn_model_free(tf);
    attn_model_free(lstm);
    attn_dataset_free(train);
    attn_dataset_free(test);
    attn_seq2seq_free(s2s);
    attn_pairs_free(s2s_train);
    attn_pairs_free(s2s_test);
    attn_pool_free(pool);
    attn_pool_free(measuring);
    if (failures) fprintf(stderr, "threads: %d results differ between thread counts\n", failures);
    return failures ? 1 : 0;
}

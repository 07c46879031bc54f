/* kernels.c -- what the pinned kernels cost: training and inference of each model under the
 * pinned kernels (OpenBLAS's Haswell table, 1 BLAS thread: the same bytes on every AVX2 CPU)
 * and under the native ones (OpenBLAS's own choice for this CPU), in one run, switching in
 * between (attn_kernels_select, include/attn_kernelset.h), and the ratio. Training: one epoch
 * of a fresh model (seed 1) on the first --train-size sentences of the training set, batch 32,
 * no held-out slice. Inference: exact mode (one sentence per forward) over --infer sentences
 * of the fill4 test set. Each measurement is the best of --reps, the two modes alternating, so
 * that a load change on the machine hits both alike. Prints a table and, with --csv, one row
 * per measurement with the kernels record. Asserts nothing about timings.
 *
 *   build/bench/kernels [--train-size N] [--infer N] [--reps R] [--native-threads T]
 *                       [--csv FILE] [-h|--help]
 * Exit status: 0 ok, 1 runtime error, 2 usage error.
 */
#include "attn.h"
#include "attn_kernels.h"
#include "attn_kernelset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct opts {
    int train_size, infer, reps, native_threads;
    const char *csv;
} opts;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void usage(FILE *f) {
    fprintf(f,
            "Usage: kernels [--train-size N] [--infer N] [--reps R] [--native-threads T]\n"
            "               [--csv FILE]\n"
            "\n"
            "Training and inference of the RNN, the LSTM and the Transformer under the pinned\n"
            "kernels (OpenBLAS's Haswell kernels, 1 BLAS thread) and the native ones (OpenBLAS's\n"
            "own choice), in one run; sentences/s for each and pinned / native. Then the\n"
            "one-row products of a batch-1 recurrent step (h[1,H].W_hh^T, H = 32) and a 1x1x1\n"
            "product (the cost of a call), ns per call, against the 2048^3 sgemm ceiling.\n"
            "\n"
            "Options:\n"
            "  --train-size N      training sentences, one epoch, batch 32 (default 2000)\n"
            "  --infer N           fill4 test sentences, one per forward (default 500)\n"
            "  --reps R            best of R, the modes alternating (default 3)\n"
            "  --native-threads T  BLAS threads of the native runs (default 1, as attn's\n"
            "                      commands run them: then only the kernels differ)\n"
            "  --csv FILE          one row per measurement, with the kernels record\n"
            "  -h, --help          print this help and exit\n"
            "\n"
            "Exit status: 0 ok, 1 runtime error, 2 usage error.\n");
}

/* argv[*i]'s integer value in [lo, hi] into *out; false (after a message) otherwise. */
static bool int_value(int argc, char **argv, int *i, int lo, int hi, int *out) {
    const char *name = argv[*i];
    char *end = NULL;
    long v = *i + 1 < argc ? strtol(argv[++*i], &end, 10) : 0;
    if (!end || *end || v < lo || v > hi) {
        fprintf(stderr, "kernels: %s needs an integer in %d..%d\n", name, lo, hi);
        return false;
    }
    *out = (int)v;
    return true;
}

static int parse(int argc, char **argv, opts *o) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool ok = true;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--train-size"))
            ok = int_value(argc, argv, &i, 32, 1000000, &o->train_size);
        else if (!strcmp(a, "--infer"))
            ok = int_value(argc, argv, &i, 1, 1000000, &o->infer);
        else if (!strcmp(a, "--reps"))
            ok = int_value(argc, argv, &i, 1, 100, &o->reps);
        else if (!strcmp(a, "--native-threads"))
            ok = int_value(argc, argv, &i, 1, 1024, &o->native_threads);
        else if (!strcmp(a, "--csv") && i + 1 < argc)
            o->csv = argv[++i];
        else {
            fprintf(stderr, "kernels: unknown option or missing value '%s' (see --help)\n", a);
            return 2;
        }
        if (!ok) return 2;
    }
    return -1;
}

/* Seconds for one epoch of a fresh model of `arch` on d. */
static bool time_train(attn_arch arch, const attn_dataset *d, double *secs, attn_error *err) {
    attn_model_config mc = attn_model_config_default(arch);
    attn_train_config cfg = attn_train_config_default();
    cfg.epochs = 1;
    cfg.holdout = 0;
    attn_model *m = NULL;
    attn_trainer *t = NULL;
    bool ok = attn_model_create(&mc, 1, &m, err) == ATTN_OK &&
              attn_trainer_create(m, d, &cfg, &t, err) == ATTN_OK;
    double t0 = now_s();
    ok = ok && attn_trainer_run(t, NULL, err) == ATTN_OK;
    *secs = now_s() - t0;
    attn_trainer_free(t);
    attn_model_free(m);
    return ok;
}

/* Seconds for the forward of every sentence of d, one at a time. */
static bool time_infer(attn_arch arch, const attn_dataset *d, double *secs, attn_error *err) {
    attn_model_config mc = attn_model_config_default(arch);
    attn_model *m = NULL;
    if (attn_model_create(&mc, 1, &m, err) != ATTN_OK) return false;
    bool ok = true;
    double t0 = now_s();
    for (int i = 0; ok && i < d->n; i++) {
        attn_batch b = {
            .B = 1, .T = d->lengths[i], .ids = d->ids + d->offsets[i], .lengths = &d->lengths[i]};
        float logit;
        ok = attn_model_forward(m, &b, &logit, err) == ATTN_OK;
    }
    *secs = now_s() - t0;
    attn_model_free(m);
    return ok;
}

static void select_mode(attn_kernels_mode mode, const opts *o) {
    attn_kernels_select(mode);
    if (mode == ATTN_KERNELS_NATIVE) attn_set_num_threads(o->native_threads);
}

/* Nanoseconds per call of c[1,n] = a[1,k].b[n,k]^T + c (the recurrent step's product), best of
 * reps rounds of `calls` calls. */
static double one_row_ns(int n, int k, int calls, int reps) {
    float *a = calloc((size_t)k, sizeof *a), *b = calloc((size_t)n * k, sizeof *b);
    float *c = calloc((size_t)n, sizeof *c);
    double best = 1e300;
    for (int r = 0; a && b && c && r < reps; r++) {
        double t0 = now_s();
        for (int i = 0; i < calls; i++)
            attn_matmul_nt(c, a, b, 1, n, k, 1.0f, ATTN_OP_OTHER, ATTN_PASS_FORWARD);
        double ns = (now_s() - t0) * 1e9 / calls;
        if (ns < best) best = ns;
    }
    free(a), free(b), free(c);
    return best;
}

/* GFLOP/s of one 2048^3 product, best of reps. */
static double ceiling_gflops(int reps) {
    const int n = 2048;
    float *a = calloc((size_t)n * n, sizeof *a), *b = calloc((size_t)n * n, sizeof *b);
    float *c = calloc((size_t)n * n, sizeof *c);
    double best = 1e300;
    for (int r = 0; a && b && c && r < reps; r++) {
        double t0 = now_s();
        attn_matmul_nt(c, a, b, n, n, n, 0.0f, ATTN_OP_OTHER, ATTN_PASS_FORWARD);
        double s = now_s() - t0;
        if (s < best) best = s;
    }
    free(a), free(b), free(c);
    return best < 1e300 ? 2.0 * n * n * (double)n / best * 1e-9 : 0;
}

/* The batch-1 step's products on both kernel sets: where the small models' time goes. */
static void one_row_table(const opts *o) {
    static const struct {
        const char *what;
        int n, k;
    } shapes[] = {{"1x1x1 (a call)", 1, 1},
                  {"rnn step 1x32x32", 32, 32},
                  {"gru step 1x96x32", 96, 32},
                  {"lstm step 1x128x32", 128, 32}};
    double ceiling[2];
    for (int md = 0; md < 2; md++) {
        select_mode((attn_kernels_mode)md, o);
        ceiling[md] = ceiling_gflops(o->reps);
    }
    printf("\none-row products, ns per call (GFLOP/s, %% of the 2048^3 ceiling: pinned %.1f, "
           "native %.1f GFLOP/s)\n",
           ceiling[0], ceiling[1]);
    printf("%-20s %22s %22s %8s\n", "product", "pinned", "native", "pinned/native");
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        double ns[2];
        for (int md = 0; md < 2; md++) {
            select_mode((attn_kernels_mode)md, o);
            ns[md] = one_row_ns(shapes[i].n, shapes[i].k, 20000, o->reps);
        }
        const double flop = 2.0 * shapes[i].n * shapes[i].k;
        printf("%-20s %8.0f (%5.2f, %4.1f%%) %8.0f (%5.2f, %4.1f%%) %8.2fx\n", shapes[i].what,
               ns[0], flop / ns[0], 100 * flop / ns[0] / ceiling[0], ns[1], flop / ns[1],
               100 * flop / ns[1] / ceiling[1], ns[1] / ns[0]);
    }
}

static void csv_row(FILE *csv, const char *work, attn_arch arch, double secs, int n) {
    if (!csv) return;
    attn_kernels_info k;
    attn_kernels_info_get(&k);
    fprintf(csv, "%s,%s,%s,%s,%s,%d,%s,%.6f,%.1f\n", work, attn_arch_name(arch), k.mode, k.openblas,
            k.blas_core, k.blas_threads, k.cpu_path, secs, n / secs);
}

int main(int argc, char **argv) {
    opts o = {2000, 500, 3, 1, NULL};
    int rc = parse(argc, argv, &o);
    if (rc >= 0) return rc;
    attn_error err;
    attn_dataset *train = NULL, *test = NULL;
    if (attn_data_generate(ATTN_SET_TRAIN, o.train_size, 1, &train, &err) != ATTN_OK ||
        attn_data_generate(ATTN_SET_FILL4, o.infer, 1, &test, &err) != ATTN_OK) {
        fprintf(stderr, "kernels: %s\n", err.msg);
        return 1;
    }
    FILE *csv = o.csv ? fopen(o.csv, "w") : NULL;
    if (o.csv && !csv) {
        fprintf(stderr, "kernels: cannot write %s\n", o.csv);
        return 1;
    }
    if (csv)
        fputs("work,model,mode,openblas,blas_core,blas_threads,cpu_path,seconds,sent_per_s\n", csv);
    char names[2][160];
    for (int md = 0; md < 2; md++) {
        select_mode((attn_kernels_mode)md, &o);
        attn_kernels_info k;
        attn_kernels_info_get(&k);
        attn_kernels_info_describe(&k, names[md], sizeof names[md]);
    }
    printf("pinned: %s\nnative: %s\n\n", names[0], names[1]);
    printf("%-12s %-6s %14s %14s %8s\n", "model", "work", "pinned sent/s", "native sent/s",
           "pinned/native");
    const attn_arch archs[3] = {ATTN_ARCH_RNN, ATTN_ARCH_LSTM, ATTN_ARCH_TRANSFORMER};
    for (int a = 0; a < 3; a++) {
        for (int w = 0; w < 2; w++) {
            double best[2] = {1e300, 1e300};
            for (int r = 0; r < o.reps; r++) {
                for (int md = 0; md < 2; md++) {
                    select_mode((attn_kernels_mode)md, &o);
                    double s = 0;
                    bool ok = w == 0 ? time_train(archs[a], train, &s, &err)
                                     : time_infer(archs[a], test, &s, &err);
                    if (!ok) {
                        fprintf(stderr, "kernels: %s\n", err.msg);
                        return 1;
                    }
                    csv_row(csv, w == 0 ? "train" : "infer", archs[a], s,
                            w == 0 ? o.train_size : o.infer);
                    if (s < best[md]) best[md] = s;
                }
            }
            const int n = w == 0 ? o.train_size : o.infer;
            printf("%-12s %-6s %14.0f %14.0f %8.2fx\n", attn_arch_name(archs[a]),
                   w == 0 ? "train" : "infer", n / best[0], n / best[1], best[1] / best[0]);
        }
    }
    one_row_table(&o);
    attn_kernels_select(ATTN_KERNELS_PINNED);
    attn_dataset_free(train);
    attn_dataset_free(test);
    if (csv && fclose(csv) != 0) {
        fprintf(stderr, "kernels: error writing %s\n", o.csv);
        return 1;
    }
    return 0;
}

/* train_speed.c -- training throughput: one epoch of each of the four classifiers on the default
 * training set (seed 1, 7,500 training + 500 held-out sentences, batch 32, BLAS on one thread), in
 * sentences per second, with the FLOP rate from the sgemm accountant and the fraction of this
 * machine's sgemm ceiling (a 2048^3 sgemm measured in the same run). With --torch it also runs
 * tools/train_torch.py --bench and prints attn / PyTorch. Prints ratios; asserts nothing about
 * timings.
 *
 *   build/bench/train_speed [--torch] [--epochs N] [--model rnn|lstm|transformer|gru]
 *                           [--source DIR] [--attn PATH] [-h|--help]
 * --model times one model only, for profiling: no sgemm ceiling (printed as -), no --torch.
 * Exit status: 0 ok, 1 runtime error, 2 usage error (see --help).
 */
#include "attn.h"
#include "attn_kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define N_ARCHS 4 /* rnn, lstm, transformer, gru: attn_arch's order */

typedef struct result {
    double sent_per_s, epoch_s, gflops;
} result;

static bool on_epoch(const attn_epoch_stats *st, void *user) {
    result *r = user;
    if (st->sentences_per_s > r->sent_per_s) r->sent_per_s = st->sentences_per_s;
    return true;
}

static uint64_t total_madds(const attn_flop_counts *c) {
    uint64_t s = 0;
    for (int i = 0; i < ATTN_OP_COUNT; i++) s += c->fwd_madds[i] + c->bwd_madds[i];
    return s;
}

/* Best of `reps` 2048^3 sgemm runs in GFLOP/s, after checking one output element. */
static double sgemm_ceiling(int reps) {
    const int N = 2048;
    float *a = malloc((size_t)N * N * sizeof(float)), *b = malloc((size_t)N * N * sizeof(float));
    float *c = malloc((size_t)N * N * sizeof(float));
    if (!a || !b || !c) {
        fprintf(stderr, "train_speed: out of memory\n");
        exit(1);
    }
    attn_rng r = attn_rng_seed(1);
    for (size_t i = 0; i < (size_t)N * N; i++) {
        a[i] = attn_rng_uniform_range(&r, -1, 1);
        b[i] = attn_rng_uniform_range(&r, -1, 1);
    }
    double best = 0;
    for (int rep = 0; rep < reps; rep++) {
        double t0 = now_s();
        attn_sgemm(c, a, b, N, N, N, false, false, 1.0f, 0.0f, ATTN_OP_OTHER, ATTN_PASS_FORWARD);
        double t = now_s() - t0;
        if (2.0 * N * N * (double)N / t / 1e9 > best) best = 2.0 * N * N * (double)N / t / 1e9;
    }
    double want = 0;
    for (int k = 0; k < N; k++) want += (double)a[5 * N + k] * b[(size_t)k * N + 7];
    if (fabs(want - c[5 * N + 7]) > 1e-3 * (1 + fabs(want))) {
        fprintf(stderr, "train_speed: sgemm check failed (%g vs %g)\n", c[5 * N + 7], want);
        exit(1);
    }
    free(a);
    free(b);
    free(c);
    return best;
}

static void usage(FILE *f) {
    fprintf(
        f, "Usage: train_speed [--torch] [--epochs N] [--model ARCH] [--source DIR] [--attn PATH]\n"
           "\n"
           "Training throughput: one epoch (or N) of each model on the default training set\n"
           "(seed 1, batch 32, BLAS on 1 thread) in sentences/s, GFLOP/s and fraction of this\n"
           "machine's 2048^3 sgemm ceiling measured in the same run.\n"
           "\n"
           "Options:\n"
           "  --torch         also run tools/train_torch.py --bench (PyTorch via\n"
           "                  /usr/bin/python3) on the same data and print attn / PyTorch\n"
           "  --epochs N      epochs per model, N >= 1 (default 1)\n"
           "  --model ARCH    time one model only (rnn, lstm, transformer or gru), for profiling:\n"
           "                  no sgemm ceiling (printed as -), --torch is ignored\n"
           "  --source DIR    source tree with tools/train_torch.py (default $ATTN_SOURCE_DIR,\n"
           "                  else two levels above this program)\n"
           "  --attn PATH     the attn program train_torch.py compares with (default\n"
           "                  ../attn next to this program)\n"
           "  -h, --help      print this help and exit\n"
           "\n"
           "Exit status: 0 ok, 1 runtime error (data, model, sgemm check, PyTorch run),\n"
           "2 usage error (unknown option, missing or bad value).\n");
}

int main(int argc, char **argv) {
    bool torch = false;
    int epochs = 1;
    const char *source = getenv("ATTN_SOURCE_DIR"), *attn_bin = NULL;
    int only = -1; /* --model: the one arch to time */
    for (int i = 1; i < argc; i++) {
        const bool has_value = i + 1 < argc;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--torch") == 0) {
            torch = true;
        } else if (strcmp(argv[i], "--epochs") == 0 && has_value) {
            char *end;
            long e = strtol(argv[++i], &end, 10);
            if (*end != '\0' || e < 1 || e > 1000000) {
                fprintf(stderr, "train_speed: --epochs needs an integer >= 1, got '%s'\n", argv[i]);
                return 2;
            }
            epochs = (int)e;
        } else if (strcmp(argv[i], "--source") == 0 && has_value) {
            source = argv[++i];
        } else if (strcmp(argv[i], "--attn") == 0 && has_value) {
            attn_bin = argv[++i];
        } else if (strcmp(argv[i], "--model") == 0 && has_value) {
            attn_arch arch;
            attn_error aerr;
            if (attn_arch_from_name(argv[++i], &arch, &aerr) != ATTN_OK) {
                fprintf(stderr, "train_speed: %s\n", aerr.msg);
                return 2;
            }
            only = (int)arch;
        } else {
            const bool known = strcmp(argv[i], "--epochs") == 0 ||
                               strcmp(argv[i], "--source") == 0 || strcmp(argv[i], "--attn") == 0 ||
                               strcmp(argv[i], "--model") == 0;
            if (known)
                fprintf(stderr, "train_speed: %s needs a value\n", argv[i]);
            else
                fprintf(stderr, "train_speed: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    /* The build tree puts this program in build/bench/ and attn in build/. */
    char exe[4096] = "", dflt_attn[4200], dflt_src[4200];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    snprintf(dflt_attn, sizeof dflt_attn, "%s/../attn", exe);
    snprintf(dflt_src, sizeof dflt_src, "%s/../..", exe);
    if (!attn_bin) attn_bin = dflt_attn;
    if (!source) source = dflt_src;

    attn_set_num_threads(1);
    attn_error err;
    attn_dataset *d = NULL;
    if (attn_data_generate(ATTN_SET_TRAIN, ATTN_TRAIN_DEFAULT_N, 1, &d, &err) != ATTN_OK) {
        fprintf(stderr, "train_speed: %s\n", err.msg);
        return 1;
    }
    double ceiling = only >= 0 ? NAN : sgemm_ceiling(3); /* --model: profile the model only */
    if (only >= 0)
        printf("sgemm 2048^3: not measured (--model)\n\n");
    else
        printf("sgemm 2048^3, 1 thread: %.1f GFLOP/s (the ceiling)\n\n", ceiling);
    printf("%-12s %12s %10s %10s %10s\n", "model", "sentences/s", "epoch s", "GFLOP/s",
           "of ceiling");
    result res[N_ARCHS] = {{0}};
    for (int a = 0; a < N_ARCHS; a++) {
        if (only >= 0 && a != only) continue;
        attn_model_config mc = attn_model_config_default((attn_arch)a);
        attn_model *m = NULL;
        attn_trainer *t = NULL;
        attn_train_config cfg = attn_train_config_default();
        cfg.epochs = epochs;
        attn_flop_counts counts;
        memset(&counts, 0, sizeof counts);
        if (attn_model_create(&mc, 1, &m, &err) != ATTN_OK ||
            attn_trainer_create(m, d, &cfg, &t, &err) != ATTN_OK) {
            fprintf(stderr, "train_speed: %s\n", err.msg);
            return 1;
        }
        attn_train_callbacks cb = {on_epoch, NULL, &res[a]};
        attn_flops_set_counter(&counts);
        double t0 = now_s();
        attn_status st = attn_trainer_run(t, &cb, &err);
        double secs = now_s() - t0;
        attn_flops_set_counter(NULL);
        if (st != ATTN_OK) {
            fprintf(stderr, "train_speed: %s\n", err.msg);
            return 1;
        }
        /* the counts include the held-out evaluation, and so does the time */
        res[a].epoch_s = secs / epochs;
        res[a].gflops = 2.0 * (double)total_madds(&counts) / secs / 1e9;
        printf("%-12s %12.0f %10.3f %10.2f", attn_arch_name((attn_arch)a), res[a].sent_per_s,
               res[a].epoch_s, res[a].gflops);
        if (only >= 0)
            printf("%10s\n", "-");
        else
            printf("%9.1f%%\n", 100.0 * res[a].gflops / ceiling);
        attn_trainer_free(t);
        attn_model_free(m);
    }
    attn_dataset_free(d);
    if (!torch || only >= 0) return 0;

    char cmd[12000];
    snprintf(cmd, sizeof cmd,
             "OPENBLAS_NUM_THREADS=1 /usr/bin/python3 '%s/tools/train_torch.py' --bench "
             "--models rnn,gru,lstm,transformer --threads 1 --attn '%s'",
             source, attn_bin);
    printf("\nrunning: %s\n", cmd);
    fflush(stdout);
    FILE *p = popen(cmd, "r");
    if (!p) {
        fprintf(stderr, "train_speed: cannot run python\n");
        return 1;
    }
    char line[512], name[64];
    double torch_sps[N_ARCHS] = {0};
    double v;
    while (fgets(line, sizeof line, p)) {
        if (sscanf(line, "BENCH %63s %lf", name, &v) != 2) continue;
        for (int a = 0; a < N_ARCHS; a++)
            if (strcmp(name, attn_arch_name((attn_arch)a)) == 0) torch_sps[a] = v;
    }
    if (pclose(p) != 0) {
        fprintf(stderr, "train_speed: tools/train_torch.py --bench failed\n");
        return 1;
    }
    printf("\n%-12s %14s %14s %10s\n", "model", "attn sent/s", "PyTorch sent/s", "ratio");
    for (int a = 0; a < N_ARCHS; a++)
        printf("%-12s %14.0f %14.0f %9.1fx\n", attn_arch_name((attn_arch)a), res[a].sent_per_s,
               torch_sps[a], torch_sps[a] > 0 ? res[a].sent_per_s / torch_sps[a] : NAN);
    return 0;
}

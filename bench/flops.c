/* flops.c -- the write-up's cost table, measured: where the multiply-adds and the time of a
 * ViT-Base encoder layer go at 224 px (n = 197) and 1024 px (n = 4097), the machine's sgemm
 * ceiling, naive vs blocked (online-softmax) attention at n = 4097 with peak memory, the three
 * sentiment models' FLOP tables, and (--torch) attn vs PyTorch in the same run.
 *
 * Method (STYLE.md section 14): validate first (blocked == naive, finite output, counted ==
 * analytic multiply-adds, exactly), then time: warm-up, several reps, median. Multiply-adds come
 * from attn_sgemm's counter. Peak memory: each variant runs in a fresh exec of this program
 * (hidden --child-layer mode) and reports VmHWM from /proc/self/status, which exec resets.
 *
 * Usage: build/bench/flops [--quick] [--torch] [--out DIR] [--src DIR] [-h|--help]
 * Exit status: 0 ok, 1 runtime error (validation, memory, files), 2 usage error.
 * Writes DIR/flops.md, DIR/flops.csv, DIR/nn_share.dat and (with gnuplot) DIR/nn_share.svg;
 * DIR defaults to results/ beside the program (build/bench/results), never the source tree.
 */
#include "vit_layer.h"

#include "attn.h"
#include "attn_kernels.h"

#include <errno.h>
#include <immintrin.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "bench_time.h"

#define VIT_D   768
#define VIT_NH  12
#define VIT_F   3072
#define N_SHORT 197  /* 224 px: 14 x 14 patches + [CLS] */
#define N_LONG  4097 /* 1024 px: 64 x 64 patches + [CLS] */

/* ---- output: stdout and the Markdown file together ---------------------------------------- */

static FILE *md_file;
static FILE *csv_file;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    if (md_file) {
        va_start(ap, fmt);
        vfprintf(md_file, fmt, ap);
        va_end(ap);
    }
}

static long vm_kb(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long kb = -1;
    size_t len = strlen(field);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, field, len) == 0 && line[len] == ':')
            kb = strtol(line + len + 1, NULL, 10);
    fclose(f);
    return kb;
}

static void *xmalloc(size_t bytes) {
    void *p = malloc(bytes);
    if (!p) {
        fprintf(stderr, "flops: out of memory (%zu bytes)\n", bytes);
        exit(1);
    }
    return p;
}

/* ---- the ceiling -------------------------------------------------------------------------- */

/* GFLOP/s of attn_sgemm on an s x s x s product (median of reps). */
static double sgemm_gflops(int s, int reps) {
    const size_t nn = (size_t)s * s;
    float *a = xmalloc(nn * sizeof *a), *b = xmalloc(nn * sizeof *b), *c = xmalloc(nn * sizeof *c);
    attn_rng r = attn_rng_seed(1);
    for (size_t i = 0; i < nn; i++) {
        a[i] = attn_rng_uniform_range(&r, -1, 1);
        b[i] = attn_rng_uniform_range(&r, -1, 1);
    }
    double t[16];
    attn_sgemm(c, a, b, s, s, s, false, false, 1, 0, ATTN_OP_OTHER,
               ATTN_PASS_FORWARD); /* warm-up */
    for (int i = 0; i < reps; i++) {
        double t0 = vit_now();
        attn_sgemm(c, a, b, s, s, s, false, false, 1, 0, ATTN_OP_OTHER, ATTN_PASS_FORWARD);
        t[i] = vit_now() - t0;
    }
    free(a), free(b), free(c);
    return 2.0 * (double)s * s * s / bench_median(t, reps) / 1e9;
}

/* Register-resident AVX2 FMA loop: 12 independent chains hide the FMA latency. One thread. */
static double fma_peak_gflops(long iters) {
    __m256 acc[12];
    for (int i = 0; i < 12; i++) acc[i] = _mm256_set1_ps(0.001f * (float)i);
    const __m256 mul = _mm256_set1_ps(0.999999f), add = _mm256_set1_ps(1e-7f);
    double t0 = vit_now();
    for (long it = 0; it < iters; it++)
        for (int i = 0; i < 12; i++) acc[i] = _mm256_fmadd_ps(acc[i], mul, add);
    double dt = vit_now() - t0;
    float sink[8];
    __m256 s = acc[0];
    for (int i = 1; i < 12; i++) s = _mm256_add_ps(s, acc[i]);
    _mm256_storeu_ps(sink, s);
    if (sink[0] == 12345.678f) printf(" "); /* keeps the loop alive */
    return (double)iters * 12 * 8 * 2 / dt / 1e9;
}

/* ---- the layer, timed per stage ------------------------------------------------------------ */

typedef struct layer_run {
    int n, threads;
    bool blocked;
    uint64_t counted[ATTN_OP_COUNT], analytic[ATTN_OP_COUNT];
    double stage_ms[VIT_ST_COUNT]; /* median over reps */
    double total_ms;               /* median over reps */
} layer_run;

/* Counted run (first forward, also the warm-up), then reps timed per stage. Exits non-zero if
 * counted != analytic or the output is not finite. */
static void run_layer(layer_run *res, const vit_layer *L, int n, int reps, int warmup) {
    vit_work w;
    if (!vit_work_init(&w, L, n, VIT_PATH_AUTO)) {
        fprintf(stderr, "flops: out of memory for n = %d\n", n);
        exit(1);
    }
    const size_t nd = (size_t)n * L->D;
    float *x = xmalloc(nd * sizeof *x), *y = xmalloc(nd * sizeof *y);
    attn_rng r = attn_rng_seed(42);
    for (size_t i = 0; i < nd; i++) x[i] = attn_rng_uniform_range(&r, -1, 1);

    attn_flop_counts fc = {0};
    attn_flops_set_counter(&fc);
    vit_layer_forward(y, x, L, &w, n, NULL);
    attn_flops_set_counter(NULL);
    for (size_t i = 0; i < nd; i++)
        if (!isfinite(y[i])) {
            fprintf(stderr, "flops: VALIDATION FAILED: n = %d: y[%zu] = %g\n", n, i, y[i]);
            exit(1);
        }
    res->n = n;
    res->blocked = vit_uses_blocked(w.path, n);
    memcpy(res->counted, fc.fwd_madds, sizeof res->counted);
    vit_layer_madds(res->analytic, n, L->D, L->F);
    for (int t = 0; t < ATTN_OP_COUNT; t++)
        if (res->counted[t] != res->analytic[t] || fc.bwd_madds[t] != 0) {
            fprintf(stderr,
                    "flops: VALIDATION FAILED: n = %d, tag %s: counted %llu multiply-adds, "
                    "analytic %llu\n",
                    n, attn_op_name((attn_op)t), (unsigned long long)res->counted[t],
                    (unsigned long long)res->analytic[t]);
            exit(1);
        }
    for (int i = 1; i < warmup; i++) vit_layer_forward(y, x, L, &w, n, NULL);

    double *st = xmalloc((size_t)reps * VIT_ST_COUNT * sizeof *st),
           *tot = xmalloc((size_t)reps * sizeof *tot);
    for (int rep = 0; rep < reps; rep++) {
        double s[VIT_ST_COUNT] = {0};
        double t0 = vit_now();
        vit_layer_forward(y, x, L, &w, n, s);
        tot[rep] = vit_now() - t0;
        for (int k = 0; k < VIT_ST_COUNT; k++) st[(size_t)k * reps + rep] = s[k];
    }
    res->total_ms = 1e3 * bench_median(tot, reps);
    for (int k = 0; k < VIT_ST_COUNT; k++)
        res->stage_ms[k] = 1e3 * bench_median(st + (size_t)k * reps, reps);
    free(st), free(tot), free(x), free(y);
    vit_work_free(&w);
}

/* Blocked and naive layers agree at an n just above ATTN_ATTENTION_BLOCKED_ABOVE (several tiles,
 * a partial one; the naive layer keeps its probabilities). Exits non-zero otherwise. */
static void validate_paths(const vit_layer *L, int n) {
    vit_work wn, wb;
    if (!vit_work_init(&wn, L, n, VIT_PATH_NAIVE) || !vit_work_init(&wb, L, n, VIT_PATH_AUTO)) {
        fprintf(stderr, "flops: out of memory\n");
        exit(1);
    }
    const size_t nd = (size_t)n * L->D;
    float *x = xmalloc(nd * sizeof *x), *yn = xmalloc(nd * sizeof *yn),
          *yb = xmalloc(nd * sizeof *yb);
    attn_rng r = attn_rng_seed(9);
    for (size_t i = 0; i < nd; i++) x[i] = attn_rng_uniform_range(&r, -1, 1);
    vit_layer_forward(yn, x, L, &wn, n, NULL);
    vit_layer_forward(yb, x, L, &wb, n, NULL);
    double worst = 0.0;
    for (size_t i = 0; i < nd; i++) {
        double e = fabs((double)yb[i] - yn[i]) / fmax(fabs((double)yn[i]), 1.0);
        if (!(e <= worst)) worst = e; /* NaN propagates into worst */
    }
    say("Validation: blocked vs naive layer output at n = %d (tile %d): max error %.2e relative "
        "(floor 1) %s\n",
        n, ATTN_ATTENTION_TILE, worst, worst <= 1e-5 ? "<= 1e-5, ok" : "> 1e-5, FAILED");
    free(x), free(yn), free(yb);
    vit_work_free(&wn);
    vit_work_free(&wb);
    if (!(worst <= 1e-5)) exit(1);
}

/* ---- the per-op table ------------------------------------------------------------------- */

typedef struct op_row {
    const char *name;
    int stage;          /* vit_stage */
    attn_op tag1, tag2; /* ATTN_OP_COUNT = none */
    int path;           /* 0 both, 1 naive only, 2 blocked only */
} op_row;

static const op_row op_rows[] = {
    {"layernorm x2", VIT_ST_LAYERNORM, ATTN_OP_COUNT, ATTN_OP_COUNT, 0},
    {"qkv proj", VIT_ST_QKV, ATTN_OP_QKV, ATTN_OP_COUNT, 0},
    {"split/merge heads", VIT_ST_SPLIT, ATTN_OP_COUNT, ATTN_OP_COUNT, 0},
    {"naive q.k^T+softmax+a.v", VIT_ST_ATTENTION, ATTN_OP_QK, ATTN_OP_AV, 1},
    {"blocked q.k^T+softmax+a.v", VIT_ST_ATTENTION, ATTN_OP_QK, ATTN_OP_AV, 2},
    {"out proj", VIT_ST_OUT_PROJ, ATTN_OP_OUT_PROJ, ATTN_OP_COUNT, 0},
    {"mlp up (fc1)", VIT_ST_FFN_UP, ATTN_OP_FFN_UP, ATTN_OP_COUNT, 0},
    {"gelu", VIT_ST_GELU, ATTN_OP_COUNT, ATTN_OP_COUNT, 0},
    {"mlp down (fc2)", VIT_ST_FFN_DOWN, ATTN_OP_FFN_DOWN, ATTN_OP_COUNT, 0},
    {"residual adds", VIT_ST_ADD, ATTN_OP_COUNT, ATTN_OP_COUNT, 0},
};
#define N_OP_ROWS ((int)(sizeof op_rows / sizeof op_rows[0]))

static uint64_t tag_sum(const uint64_t *m, attn_op a, attn_op b) {
    return (a < ATTN_OP_COUNT ? m[a] : 0) + (b < ATTN_OP_COUNT ? m[b] : 0);
}

static void fmt_madds(char *buf, size_t len, uint64_t m) {
    if (m == 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.3f G", (double)m / 1e9);
}

static void print_row(const layer_run *R, double ceiling, const char *name, uint64_t an,
                      uint64_t co, double ms, uint64_t total_madds, double total_ms) {
    char a[32], c[32], gf[32] = "-", fr[32] = "-";
    fmt_madds(a, sizeof a, an);
    fmt_madds(c, sizeof c, co);
    if (co && ms > 0) {
        double g = 2.0 * (double)co / (ms * 1e-3) / 1e9;
        snprintf(gf, sizeof gf, "%.1f", g);
        snprintf(fr, sizeof fr, "%.0f %%", 100.0 * g / ceiling);
    }
    say("| %-32s | %11s | %11s | %6.1f %% | %9.3f | %5.1f %% | %7s | %6s |\n", name, a, c,
        total_madds ? 100.0 * (double)co / (double)total_madds : 0.0, ms,
        total_ms > 0 ? 100.0 * ms / total_ms : 0.0, gf, fr);
    if (csv_file)
        fprintf(csv_file, "layer,%d,%d,%s,\"%s\",%llu,%llu,%.6f,%.6f,%.6f,%.3f,%.4f\n", R->n,
                R->threads, R->blocked ? "blocked" : "naive", name, (unsigned long long)an,
                (unsigned long long)co, total_madds ? (double)co / (double)total_madds : 0.0, ms,
                total_ms > 0 ? ms / total_ms : 0.0,
                co && ms > 0 ? 2.0 * (double)co / (ms * 1e-3) / 1e9 : 0.0,
                co && ms > 0 ? 2.0 * (double)co / (ms * 1e-3) / 1e9 / ceiling : 0.0);
}

/* Returns the fraction of the ceiling reached by the projections + MLP together. */
static double print_layer_table(const layer_run *R, double ceiling) {
    uint64_t total = 0;
    for (int t = 0; t < ATTN_OP_COUNT; t++) total += R->counted[t];
    double stage_sum = 0.0;
    for (int k = 0; k < VIT_ST_COUNT; k++) stage_sum += R->stage_ms[k];
    say("\n### ViT-Base layer, n = %d (%s attention, %d thread%s)\n\n", R->n,
        R->blocked ? "blocked" : "naive", R->threads, R->threads > 1 ? "s" : "");
    say("| op | analytic madds | counted madds | share of madds | time ms | share of time | "
        "GFLOP/s | of ceiling |\n");
    say("|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < N_OP_ROWS; i++) {
        const op_row *o = &op_rows[i];
        if ((o->path == 1 && R->blocked) || (o->path == 2 && !R->blocked)) continue;
        print_row(R, ceiling, o->name, tag_sum(R->analytic, o->tag1, o->tag2),
                  tag_sum(R->counted, o->tag1, o->tag2), R->stage_ms[o->stage], total, stage_sum);
    }
    /* the write-up's three groups */
    const double proj_ms = R->stage_ms[VIT_ST_QKV] + R->stage_ms[VIT_ST_OUT_PROJ];
    const double mlp_ms = R->stage_ms[VIT_ST_FFN_UP] + R->stage_ms[VIT_ST_FFN_DOWN];
    const double nn_ms = R->stage_ms[VIT_ST_ATTENTION];
    const uint64_t proj_a = tag_sum(R->analytic, ATTN_OP_QKV, ATTN_OP_OUT_PROJ);
    const uint64_t mlp_a = tag_sum(R->analytic, ATTN_OP_FFN_UP, ATTN_OP_FFN_DOWN);
    const uint64_t nn_a = tag_sum(R->analytic, ATTN_OP_QK, ATTN_OP_AV);
    print_row(R, ceiling, "**projections (qkv+out) 4nd^2**", proj_a,
              tag_sum(R->counted, ATTN_OP_QKV, ATTN_OP_OUT_PROJ), proj_ms, total, stage_sum);
    print_row(R, ceiling, "**mlp (fc1+fc2) 8nd^2**", mlp_a,
              tag_sum(R->counted, ATTN_OP_FFN_UP, ATTN_OP_FFN_DOWN), mlp_ms, total, stage_sum);
    print_row(R, ceiling, "**n x n (qk+av) 2n^2d, +softmax**", nn_a,
              tag_sum(R->counted, ATTN_OP_QK, ATTN_OP_AV), nn_ms, total, stage_sum);
    print_row(R, ceiling, "**layer total**", total, total, R->total_ms, total, R->total_ms);
    const double nn_share = 100.0 * (double)nn_a / (double)total;
    say("\nn x n share of the layer's multiply-adds: **%.1f %%** (n / (6d + n) = %d / %d); "
        "counted == analytic for every tag.\n",
        nn_share, R->n, 6 * VIT_D + R->n);
    const double pm_g = 2.0 * (double)(proj_a + mlp_a) / ((proj_ms + mlp_ms) * 1e-3) / 1e9;
    return pm_g / ceiling;
}

/* ---- variants in fresh processes (time + peak memory) ---------------------------------- */

typedef struct proc_result {
    bool ok;
    double median_s;
    long base_kb, peak_kb;
} proc_result;

static char self_exe[4096];

/* Hidden mode: --child-layer N PATH(naive|blocked|auto) THREADS REPS WARMUP; naive keeps the
 * probabilities, blocked and auto do not (the kernel then goes blocked above
 * ATTN_ATTENTION_BLOCKED_ABOVE tokens). */
static int child_layer(int n, const char *path_name, int threads, int reps, int warmup) {
    vit_path path = strcmp(path_name, "naive") == 0 ? VIT_PATH_NAIVE : VIT_PATH_AUTO;
    attn_set_num_threads(threads);
    vit_layer L;
    vit_work w;
    if (!vit_layer_init(&L, VIT_D, VIT_NH, VIT_F, 1)) return 1;
    const size_t nd = (size_t)n * VIT_D;
    float *x = xmalloc(nd * sizeof *x), *y = xmalloc(nd * sizeof *y);
    attn_rng r = attn_rng_seed(42);
    for (size_t i = 0; i < nd; i++) x[i] = attn_rng_uniform_range(&r, -1, 1);
    const long base_kb = vm_kb("VmRSS"); /* weights + input */
    if (!vit_work_init(&w, &L, n, path)) return 1;
    double *t = xmalloc((size_t)reps * sizeof *t);
    for (int i = 0; i < warmup + reps; i++) {
        double t0 = vit_now();
        vit_layer_forward(y, x, &L, &w, n, NULL);
        if (i >= warmup) t[i - warmup] = vit_now() - t0;
    }
    for (size_t i = 0; i < nd; i++)
        if (!isfinite(y[i])) return 1;
    printf("attn n=%d threads=%d median_s=%.6f base_kb=%ld peak_kb=%ld\n", n, threads,
           bench_median(t, reps), base_kb, vm_kb("VmHWM"));
    free(t), free(x), free(y);
    vit_work_free(&w);
    vit_layer_free(&L);
    return 0;
}

static proc_result spawn_layer(int n, const char *path, int threads, int reps, int warmup) {
    proc_result pr = {0};
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' --child-layer %d %s %d %d %d", self_exe, n, path, threads, reps,
             warmup);
    fflush(stdout);
    FILE *p = popen(cmd, "r");
    if (!p) return pr;
    char line[512];
    while (fgets(line, sizeof line, p)) {
        int nn, th;
        if (sscanf(line, "attn n=%d threads=%d median_s=%lf base_kb=%ld peak_kb=%ld", &nn, &th,
                   &pr.median_s, &pr.base_kb, &pr.peak_kb) == 5)
            pr.ok = true;
    }
    if (pclose(p) != 0) pr.ok = false;
    return pr;
}

/* ---- the sentiment models --------------------------------------------------------------- */

/* Analytic forward multiply-adds per tag of a default model on one sentence of T words. */
static void model_madds(uint64_t m[ATTN_OP_COUNT], const attn_model_config *c, int T) {
    memset(m, 0, ATTN_OP_COUNT * sizeof *m);
    const uint64_t t = (uint64_t)T, E = (uint64_t)c->embed_dim, H = (uint64_t)c->hidden_size;
    if (c->arch == ATTN_ARCH_RNN || c->arch == ATTN_ARCH_LSTM) {
        const uint64_t G = c->arch == ATTN_ARCH_LSTM ? 4 * H : H; /* gate rows */
        m[ATTN_OP_INPUT] = t * E * G;
        m[ATTN_OP_RECURRENT] = t * H * G;
        m[ATTN_OP_HEAD] = H;
    } else {
        const uint64_t n = t + 1, D = E, F = (uint64_t)c->ffn_dim, L = (uint64_t)c->n_layers;
        m[ATTN_OP_QKV] = L * 3 * n * D * D;
        m[ATTN_OP_QK] = L * n * n * D;
        m[ATTN_OP_AV] = L * n * n * D;
        m[ATTN_OP_OUT_PROJ] = L * n * D * D;
        m[ATTN_OP_FFN_UP] = L * n * D * F;
        m[ATTN_OP_FFN_DOWN] = L * n * F * D;
        m[ATTN_OP_HEAD] = D; /* the [CLS] row only */
    }
}

static void models_table(const int *Ts, int n_T) {
    say("\n## The three sentiment models (default configs, batch 1, forward)\n\n");
    say("| model | T | tag | analytic madds | counted madds | share "
        "|\n|---|---:|---|---:|---:|---:|\n");
    bool any_fail = false, any_diff = false;
    for (int a = 0; a <= ATTN_ARCH_TRANSFORMER; a++) {
        attn_model_config cfg = attn_model_config_default((attn_arch)a);
        for (int ti = 0; ti < n_T; ti++) {
            const int T = Ts[ti];
            uint64_t an[ATTN_OP_COUNT], co[ATTN_OP_COUNT] = {0};
            model_madds(an, &cfg, T);
            bool have = false;
            attn_model *m = NULL;
            attn_error err = {0};
            if (attn_model_create(&cfg, 1, &m, &err) == ATTN_OK) {
                int ids[ATTN_MAX_WORDS];
                attn_rng r = attn_rng_seed((uint64_t)T);
                for (int i = 0; i < T; i++) ids[i] = 2 + (int)attn_rng_below(&r, ATTN_N_WORDS);
                attn_batch b = {.B = 1, .T = T, .ids = ids, .lengths = &T};
                float logit = 0.0f;
                attn_flop_counts fc = {0};
                attn_flops_set_counter(&fc);
                attn_status st = attn_model_forward(m, &b, &logit, &err);
                attn_flops_set_counter(NULL);
                if (st == ATTN_OK && isfinite(logit)) {
                    have = true;
                    memcpy(co, fc.fwd_madds, sizeof co);
                }
            }
            if (!have) {
                any_fail = true;
                fprintf(stderr, "flops: %s forward unavailable: %s\n", attn_arch_name((attn_arch)a),
                        err.msg[0] ? err.msg : "non-finite logit");
            }
            attn_model_free(m);
            uint64_t tot_a = 0, tot_c = 0;
            for (int t = 0; t < ATTN_OP_COUNT; t++) tot_a += an[t], tot_c += co[t];
            for (int t = 0; t < ATTN_OP_COUNT; t++) {
                if (!an[t] && !co[t]) continue;
                char cs[32];
                if (have)
                    snprintf(cs, sizeof cs, "%llu%s", (unsigned long long)co[t],
                             co[t] == an[t] ? "" : " (!)");
                else
                    snprintf(cs, sizeof cs, "n/a");
                any_diff |= have && co[t] != an[t];
                say("| %s | %d | %s | %llu | %s | %.1f %% |\n", attn_arch_name((attn_arch)a), T,
                    attn_op_name((attn_op)t), (unsigned long long)an[t], cs,
                    100.0 * (double)an[t] / (double)tot_a);
                if (csv_file)
                    fprintf(csv_file, "model,%d,1,%s,%s,%llu,%llu,%.6f,,,,\n", T,
                            attn_arch_name((attn_arch)a), attn_op_name((attn_op)t),
                            (unsigned long long)an[t], (unsigned long long)co[t],
                            (double)an[t] / (double)tot_a);
            }
            if (a == ATTN_ARCH_TRANSFORMER)
                say("| transformer | %d | **n x n share** | | | **%.1f %%** |\n", T,
                    100.0 * (double)(an[ATTN_OP_QK] + an[ATTN_OP_AV]) / (double)tot_a);
            say("| %s | %d | **total** | %llu | %s%llu | 100 %% |\n", attn_arch_name((attn_arch)a),
                T, (unsigned long long)tot_a, have ? "" : "n/a ",
                have ? (unsigned long long)tot_c : 0ULL);
        }
    }
    if (any_fail)
        say("\nNote: some model forwards failed in this build; their counted column is n/a.\n");
    if (any_diff)
        say("\nNote: rows marked (!) differ from the analytic formula (see the model source).\n");
}

/* ---- PyTorch ------------------------------------------------------------------------------ */

typedef struct torch_result {
    bool ok;
    int n, threads;
    double median_s;
    long base_kb, peak_kb;
} torch_result;

static int run_torch(const char *src, bool quick, torch_result *res, int max_res) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 '%s/tools/bench_torch.py' --n %d %d --threads 1 2%s", src, N_SHORT,
             N_LONG, quick ? " --quick" : "");
    printf("\nRunning PyTorch: %s\n", cmd);
    fflush(stdout);
    FILE *p = popen(cmd, "r");
    if (!p) return 0;
    char line[512];
    int k = 0;
    while (fgets(line, sizeof line, p) && k < max_res) {
        torch_result *t = &res[k];
        int reps;
        double mn;
        if (sscanf(line,
                   "torch n=%d threads=%d reps=%d median_s=%lf min_s=%lf base_kb=%ld peak_kb=%ld",
                   &t->n, &t->threads, &reps, &t->median_s, &mn, &t->base_kb, &t->peak_kb) == 7) {
            t->ok = true;
            k++;
        }
    }
    if (pclose(p) != 0) fprintf(stderr, "flops: bench_torch.py exited with an error\n");
    return k;
}

/* buf = a + b; exits on overflow (paths only). */
static void join(char *buf, size_t len, const char *a, const char *b) {
    if (snprintf(buf, len, "%s%s", a, b) >= (int)len) {
        fprintf(stderr, "flops: path too long: %s%s\n", a, b);
        exit(1);
    }
}

/* ---- chart ------------------------------------------------------------------------------ */

static void write_chart(const char *out, const char *src) {
    char path[4096], marks[4096], svg[4096];
    join(path, sizeof path, out, "/nn_share.dat");
    join(marks, sizeof marks, out, "/nn_share_marks.dat");
    join(svg, sizeof svg, out, "/nn_share.svg");
    FILE *f = fopen(path, "w"), *g = fopen(marks, "w");
    if (!f || !g) {
        fprintf(stderr, "flops: cannot write %s: %s\n", path, strerror(errno));
        if (f) fclose(f);
        if (g) fclose(g);
        return;
    }
    fprintf(f, "# n  nn_share_percent (d = %d: 2n^2d / (12nd^2 + 2n^2d) = n / (6d + n))\n", VIT_D);
    for (int i = 0; i <= 112; i++) { /* 64 .. 8192, 16 points per octave */
        int n = (int)lround(64.0 * pow(2.0, i / 16.0));
        fprintf(f, "%d %.4f\n", n, 100.0 * vit_nn_share(n, VIT_D));
    }
    fprintf(g,
            "# n  share  label\n%d %.4f \"224 px: n = %d, %.1f %%\"\n%d %.4f \"1024 px: n = %d, "
            "%.1f %%\"\n",
            N_SHORT, 100.0 * vit_nn_share(N_SHORT, VIT_D), N_SHORT,
            100.0 * vit_nn_share(N_SHORT, VIT_D), N_LONG, 100.0 * vit_nn_share(N_LONG, VIT_D),
            N_LONG, 100.0 * vit_nn_share(N_LONG, VIT_D));
    fclose(f);
    fclose(g);
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
        say("\nNote: gnuplot not found; chart data left in %s (plot with bench/plot_share.gp).\n",
            path);
        return;
    }
    char cmd[16384];
    if (snprintf(
            cmd, sizeof cmd,
            "gnuplot -e \"datafile='%s'; marksfile='%s'; outfile='%s'\" '%s/bench/plot_share.gp'",
            path, marks, svg, src) >= (int)sizeof cmd ||
        system(cmd) != 0)
        say("\nNote: gnuplot failed; chart data left in %s.\n", path);
    else
        say("\n![n x n share of a ViT-Base layer's multiply-adds vs n](nn_share.svg)\n");
}

/* ---- main ------------------------------------------------------------------------------ */

static void usage(FILE *f) {
    fprintf(f,
            "Usage: flops [--quick] [--torch] [--out DIR] [--src DIR]\n"
            "\n"
            "The cost table of a ViT-Base encoder layer (n = %d and %d): sgemm ceiling,\n"
            "multiply-adds and time per op, naive vs blocked attention with peak memory, the\n"
            "sentiment models' FLOP tables, and targets. Validates first (blocked == naive,\n"
            "counted == analytic multiply-adds); writes flops.md, flops.csv, nn_share.dat and\n"
            "(with gnuplot) nn_share.svg.\n"
            "\n"
            "Options:\n"
            "  --quick     few reps (smoke test; the timings are noisy)\n"
            "  --torch     also run tools/bench_torch.py (PyTorch 1.13 via /usr/bin/python3)\n"
            "              and compare time and peak memory at 1 and 2 threads\n"
            "  --out DIR   results directory (default: results/ beside this program,\n"
            "              build/bench/results; the committed ones are bench/results)\n"
            "  --src DIR   source tree (default: . if it has tools/bench_torch.py, else the\n"
            "              directory two levels above this program)\n"
            "  -h, --help  print this help and exit\n"
            "\n"
            "Exit status: 0 ok (a MISSed target does not fail the run), 1 runtime error\n"
            "(validation failed, out of memory, cannot write results), 2 usage error.\n",
            N_SHORT, N_LONG);
}

static bool file_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

int main(int argc, char **argv) {
    if (argc >= 7 && strcmp(argv[1], "--child-layer") == 0)
        return child_layer(atoi(argv[2]), argv[3], atoi(argv[4]), atoi(argv[5]), atoi(argv[6]));
    bool quick = false, torch = false;
    const char *out = NULL, *src = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            quick = true;
        else if (strcmp(argv[i], "--torch") == 0)
            torch = true;
        else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
            out = argv[++i];
        else if (strcmp(argv[i], "--src") == 0 && i + 1 < argc)
            src = argv[++i];
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--out") == 0 || strcmp(argv[i], "--src") == 0) {
            fprintf(stderr, "flops: %s needs a value\n", argv[i]);
            usage(stderr);
            return 2;
        } else {
            fprintf(stderr, "flops: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    ssize_t len = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
    if (len <= 0) {
        fprintf(stderr, "flops: cannot resolve /proc/self/exe\n");
        return 1;
    }
    self_exe[len] = '\0';
    static char src_buf[4096], out_buf[4096];
    if (!src) {
        if (file_exists("tools/bench_torch.py")) {
            src = ".";
        } else { /* build/bench/flops -> build/.. */
            snprintf(src_buf, sizeof src_buf, "%s", self_exe);
            for (int up = 0; up < 3; up++) {
                char *s = strrchr(src_buf, '/');
                if (s) *s = '\0';
            }
            src = src_buf;
        }
    }
    if (!out) { /* beside this program (build/bench/results), never into the source tree */
        snprintf(out_buf, sizeof out_buf, "%s", self_exe);
        char *slash = strrchr(out_buf, '/');
        if (slash) *slash = '\0';
        if (strlen(out_buf) + sizeof "/results" > sizeof out_buf) {
            fprintf(stderr, "flops: path too long: %s/results\n", out_buf);
            return 1;
        }
        strcat(out_buf, "/results");
        out = out_buf;
    }
    if (mkdir(out, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "flops: cannot create %s: %s\n", out, strerror(errno));
        return 1;
    }
    char path[4096];
    join(path, sizeof path, out, "/flops.md");
    md_file = fopen(path, "w");
    join(path, sizeof path, out, "/flops.csv");
    csv_file = fopen(path, "w");
    if (!md_file || !csv_file) {
        fprintf(stderr, "flops: cannot write results in %s: %s\n", out, strerror(errno));
        return 1;
    }
    fprintf(csv_file, "section,n,threads,path,row,analytic_madds,counted_madds,madds_share,"
                      "time_ms,time_share,gflops,ceiling_frac\n");
    { /* the kernels record: path = attn's elementwise path, row = OpenBLAS, its kernels, mode */
        attn_kernels_info k;
        attn_kernels_info_get(&k);
        fprintf(csv_file, "kernels,0,%d,%s,\"OpenBLAS %s %s %s\",,,,,,,\n", k.blas_threads,
                k.cpu_path, k.openblas, k.blas_core, k.mode);
    }

    const int reps_short = quick ? 3 : 20, reps_long = quick ? 1 : 3;
    const int warm_short = quick ? 1 : 3, warm_long = 1;

    /* machine */
    char cpu[256] = "unknown CPU";
    FILE *ci = fopen("/proc/cpuinfo", "r");
    if (ci) {
        char line[512];
        while (fgets(line, sizeof line, ci))
            if (strncmp(line, "model name", 10) == 0) {
                char *c = strchr(line, ':');
                if (c) snprintf(cpu, sizeof cpu, "%s", c + 2);
                cpu[strcspn(cpu, "\n")] = '\0';
                break;
            }
        fclose(ci);
    }
    say("# attn cost table: ViT-Base encoder layer (d = %d, %d heads, MLP %d, pre-norm, GELU, "
        "batch 1)\n\n",
        VIT_D, VIT_NH, VIT_F);
    say("Machine: %s, %ld cores. Mode: %s. Times are medians (%d reps at n = %d, %d at n = %d) "
        "after warm-up.\n\n",
        cpu, sysconf(_SC_NPROCESSORS_ONLN), quick ? "--quick (smoke test, noisy)" : "full",
        reps_short, N_SHORT, reps_long, N_LONG);

    /* (b) ceiling */
    const int gs = quick ? 1024 : 2048, greps = quick ? 2 : 3;
    attn_set_num_threads(1);
    const double ceil1 = sgemm_gflops(gs, greps);
    attn_set_num_threads(2);
    const double ceil2 = sgemm_gflops(gs, greps);
    attn_set_num_threads(1);
    const double fma1 = fma_peak_gflops(quick ? 20000000L : 100000000L);
    say("## Ceiling\n\n| measure | GFLOP/s |\n|---|---:|\n");
    say("| sgemm %d^3 (OpenBLAS via attn_sgemm), 1 thread | %.1f |\n", gs, ceil1);
    say("| sgemm %d^3, 2 threads | %.1f |\n", gs, ceil2);
    say("| register-resident AVX2 FMA loop, 1 thread | %.1f |\n", fma1);
    say("\nEvery \"of ceiling\" below is relative to the sgemm ceiling at the same thread count "
        "(1 thread: %.1f GFLOP/s).\n\n",
        ceil1);
    fprintf(csv_file, "ceiling,%d,1,sgemm,sgemm,,,,,,%.3f,1\n", gs, ceil1);
    fprintf(csv_file, "ceiling,%d,2,sgemm,sgemm,,,,,,%.3f,1\n", gs, ceil2);
    fprintf(csv_file, "ceiling,0,1,fma,fma loop,,,,,,%.3f,%.4f\n", fma1, fma1 / ceil1);

    /* (a) validate, then the per-op tables at 1 thread */
    vit_layer L;
    if (!vit_layer_init(&L, VIT_D, VIT_NH, VIT_F, 1)) {
        fprintf(stderr, "flops: out of memory\n");
        return 1;
    }
    say("## ViT-Base layer: where the multiply-adds and the time go\n\n");
    validate_paths(&L, ATTN_ATTENTION_BLOCKED_ABOVE + 76);
    layer_run rs = {0}, rl = {0};
    rs.threads = rl.threads = 1;
    run_layer(&rs, &L, N_SHORT, reps_short, warm_short);
    const double pm_frac = print_layer_table(&rs, ceil1);
    run_layer(&rl, &L, N_LONG, reps_long, warm_long);
    print_layer_table(&rl, ceil1);
    /* the blocked attention's own rate: its 2n^2d multiply-adds (softmax as overhead) */
    const double attn_ms = rl.blocked ? rl.stage_ms[VIT_ST_ATTENTION] : 0.0;
    const double attn_frac = attn_ms > 0
                                 ? 2.0 * (double)tag_sum(rl.counted, ATTN_OP_QK, ATTN_OP_AV) /
                                       (attn_ms * 1e-3) / 1e9 / ceil1
                                 : 0.0;
    say("\nBlocked attention at n = %d: %.1f %% of the 1-thread sgemm ceiling (q.k^T and a.v "
        "multiply-adds over the fused q.k^T+softmax+a.v time).\n",
        N_LONG, 100.0 * attn_frac);
    vit_layer_free(&L);

    /* naive vs blocked at n = 4097, and attn at both thread counts, in fresh processes */
    say("\n## Naive vs blocked attention at n = %d (fresh process each; peak = VmHWM)\n\n", N_LONG);
    proc_result pn = spawn_layer(N_LONG, "naive", 1, reps_long, warm_long);
    proc_result pb = spawn_layer(N_LONG, "blocked", 1, reps_long, warm_long);
    say("| path | layer time ms | peak RSS MB | above weights+input MB |\n|---|---:|---:|---:|\n");
    const proc_result *pv[2] = {&pn, &pb};
    const char *pname[2] = {"naive (probs NH x n x n kept)", "blocked (tile 256, online softmax)"};
    for (int i = 0; i < 2; i++) {
        if (!pv[i]->ok) {
            say("| %s | failed | | |\n", pname[i]);
            continue;
        }
        say("| %s | %.1f | %.1f | %.1f |\n", pname[i], 1e3 * pv[i]->median_s,
            pv[i]->peak_kb / 1024.0, (pv[i]->peak_kb - pv[i]->base_kb) / 1024.0);
        fprintf(csv_file, "paths,%d,1,%s,layer,,,,%.3f,,,\n", N_LONG, i ? "blocked" : "naive",
                1e3 * pv[i]->median_s);
    }

    proc_result attn_p[2][2]; /* [n short/long][threads 1/2] */
    attn_p[0][0] = spawn_layer(N_SHORT, "auto", 1, reps_short, warm_short);
    attn_p[0][1] = spawn_layer(N_SHORT, "auto", 2, reps_short, warm_short);
    attn_p[1][0] = pb;
    attn_p[1][1] = spawn_layer(N_LONG, "auto", 2, reps_long, warm_long);

    /* (c) the sentiment models */
    const int Ts[2] = {12, 50};
    models_table(Ts, 2);

    /* (d) PyTorch side by side */
    torch_result tr[8] = {0};
    int n_tr = torch ? run_torch(src, quick, tr, 8) : 0;
    say("\n## attn vs PyTorch 1.13 (nn.TransformerEncoderLayer, eval, no_grad)\n\n");
    say("| n | threads | attn ms | PyTorch ms | PyTorch / attn | attn peak MB | PyTorch peak MB | "
        "attn / PyTorch memory |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    const int ns[2] = {N_SHORT, N_LONG};
    double speed[2][2] = {{0}}, mem[2][2] = {{0}};
    for (int i = 0; i < 2; i++)
        for (int t = 0; t < 2; t++) {
            const proc_result *a = &attn_p[i][t];
            const torch_result *p = NULL;
            for (int k = 0; k < n_tr; k++)
                if (tr[k].n == ns[i] && tr[k].threads == t + 1) p = &tr[k];
            char am[32] = "failed", pm[32] = "-", ratio[32] = "-", ap[32] = "-", pp[32] = "-",
                 mr[32] = "-";
            if (a->ok) {
                snprintf(am, sizeof am, "%.1f", 1e3 * a->median_s);
                snprintf(ap, sizeof ap, "%.0f", a->peak_kb / 1024.0);
            }
            if (p) {
                snprintf(pm, sizeof pm, "%.1f", 1e3 * p->median_s);
                snprintf(pp, sizeof pp, "%.0f", p->peak_kb / 1024.0);
            }
            if (a->ok && p) {
                speed[i][t] = p->median_s / a->median_s;
                mem[i][t] = (double)a->peak_kb / (double)p->peak_kb;
                snprintf(ratio, sizeof ratio, "%.2fx", speed[i][t]);
                snprintf(mr, sizeof mr, "%.2f", mem[i][t]);
            }
            say("| %d | %d | %s | %s | %s | %s | %s | %s |\n", ns[i], t + 1, am, pm, ratio, ap, pp,
                mr);
            fprintf(csv_file, "torch,%d,%d,%s,layer,,,,%.3f,%.3f,%.4f,%.4f\n", ns[i], t + 1,
                    ns[i] > ATTN_ATTENTION_BLOCKED_ABOVE ? "blocked" : "naive",
                    a->ok ? 1e3 * a->median_s : 0.0, p ? 1e3 * p->median_s : 0.0, speed[i][t],
                    mem[i][t]);
        }
    if (!torch) say("\n(PyTorch columns: run with --torch.)\n");

    /* targets */
    say("\n## Targets\n\n");
    if (torch && n_tr > 0) {
        say("- %s n = %d: attn layer time <= PyTorch's at 1 thread (PyTorch / attn = %.2fx)\n",
            speed[0][0] >= 1.0 ? "PASS" : "MISS", N_SHORT, speed[0][0]);
    } else {
        say("- n/a  n = %d: attn layer time <= PyTorch's at 1 thread (run with --torch)\n",
            N_SHORT);
    }
    say("- %s n = %d: projections + MLP at >= 70 %% of the 1-thread sgemm ceiling (%.0f %%)\n",
        pm_frac >= 0.7 ? "PASS" : "MISS", N_SHORT, 100.0 * pm_frac);
    say("- %s n = %d: blocked attention at >= 80 %% of the 1-thread sgemm ceiling (%.0f %%)\n",
        attn_frac >= 0.8 ? "PASS" : "MISS", N_LONG, 100.0 * attn_frac);
    for (int t = 0; t < 2; t++) {
        if (torch && n_tr > 0) {
            say("- %s n = %d, %d thread%s: attn >= 2x faster than PyTorch (%.2fx)\n",
                speed[1][t] >= 2.0 ? "PASS" : "MISS", N_LONG, t + 1, t ? "s" : "", speed[1][t]);
            say("- %s n = %d, %d thread%s: attn peak memory <= 1/5 of PyTorch's (%.2f)\n",
                mem[1][t] > 0 && mem[1][t] <= 0.2 ? "PASS" : "MISS", N_LONG, t + 1, t ? "s" : "",
                mem[1][t]);
        } else {
            say("- n/a  n = %d, %d thread%s: speed and memory vs PyTorch (run with --torch)\n",
                N_LONG, t + 1, t ? "s" : "");
        }
    }

    /* (e) chart */
    write_chart(out, src);
    say("\nResults: %s/flops.md, %s/flops.csv\n", out, out);
    fclose(md_file);
    fclose(csv_file);
    return 0;
}

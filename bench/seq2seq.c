/* seq2seq.c -- seq2seq-transformer speed, attn against PyTorch, in one run.
 *
 * The questions: how many target tokens per second does attn train the default
 * seq2seq-transformer (docs/decoder.md) on the rewrite task, against PyTorch 1.13 training
 * nn.Transformer on the same pairs at the same batch; and how many tokens per second does greedy
 * generation at batch 1 produce -- attn with the KV cache, attn recomputing the decoder over the
 * prefix, and PyTorch's greedy loop (tools/seq2seq_models.greedy, which recomputes too)?
 *
 * Method (STYLE.md section 14): one BLAS thread on both sides. Training: epochs of --train-size
 * rewrite pairs of seed 1 (attn_pairs_generate, the pairs `attn data --task rewrite` prints), batch
 * 32, Adam, from the seed-1 initialisation, through attn_seq2seq_train (shuffled as `attn train`
 * does); PyTorch trains on the same pairs, in file order, batch 32 (tools/bench_seq2seq.py
 * --pairs); each side times --train-reps epochs (one after the other on the same model: the same
 * work each), the median. Target tokens = target words + [EOS]. The multiply-adds of attn's epoch
 * come from the attn_sgemm counter, over the 2048^3 sgemm of this run: the fraction of the ceiling.
 * --size base also times the step in steady state: one training call of 1 + max(2, --train-reps)
 * epochs at 1 and at 2 threads from the seed-1 initialisation, the epochs after the first timed
 * (the first makes Adam's moments, replicas and buffers), both runs' parameters compared byte
 * for byte; its 1-thread fraction of the ceiling is the PASS/MISS (bench/README.md).
 * Generation: the model after one more epoch (so that outputs have their trained length), on
 * --sources sources of the four test sets; every source decoded greedily up to max_tgt_len - 1
 * words; tokens = steps taken ([EOS] included); attn in-process (model loaded once), PyTorch
 * in its process (model loaded once); medians of --reps passes. Validation first: the
 * recomputing decoder's tokens equal PyTorch's loop's for every source (it is bit-identical by
 * design), and the cached decoder's agreement with it is printed. Ratios are judged by CPU time
 * (process CPU time, which other processes on a shared machine disturb less); wall time is
 * printed too.
 *
 * KV-cache generation at a fixed length (--gen-len N; by default max_tgt_len - 1 at --size base,
 * where a barely trained model would stop at [EOS] at once, so that the rows above time one
 * step): every source decoded to exactly N words ([EOS] out of the argmax until then, `attn
 * generate --min-len N --max-len N`), attn at batch 1 and at --gen-batch B (8;
 * attn_seq2seq_greedy_batch) against PyTorch's cached loops (tools/seq2seq_models.greedy_cached
 * and greedy_batch) and the same step under TorchScript (tools/bench_generate_torch.py), whose
 * words must be attn's; tokens per second and ratios per token, by CPU time.
 *
 * Usage: build/bench/seq2seq [--torch] [--quick] [--train-size N] [--sources N] [--reps R]
 *                            [--src DIR] [--size small|base] [--gen-len N] [--gen-batch B]
 * Exit codes: 0 ok (a MISSed target does not fail the run), 1 validation or runtime failure,
 * 2 usage. */
#include "attn.h"
#include "attn_kernels.h"
#include "attn_seq2seq.h"
#include "attn_threads.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "bench_time.h"

#define TARGET_TRAIN        5.0  /* training >= 5x PyTorch (issue: the decoder) */
#define TARGET_GEN          10.0 /* cached generation >= 10x PyTorch's greedy loop */
#define MAX_N               100000
#define TARGET_BASE_CEILING 80.0 /* --size base: training >= 80 % of the sgemm ceiling */

typedef struct options {
    const char *src;
    int train_size, sources, reps, train_reps;
    int profile; /* --profile N: N training epochs only (0: the full benchmark) */
    bool torch;
    bool base;     /* --size base: section 6's base model (d_model 512, 8 heads, FFN 2048, 6 + 6) */
    int gen_len;   /* --gen-len N: the KV-cache rows' fixed decode length (-1: the size's) */
    int gen_batch; /* --gen-batch B: their batch (default 8) */
} options;

typedef struct timing {
    double wall, cpu; /* seconds: medians over passes for generation */
} timing;

/* Best of `reps` 2048^3 sgemm runs in GFLOP/s by process CPU time (the training's fraction of
 * it is by CPU time too), after checking one output element. */
static double sgemm_ceiling(int reps) {
    const int N = 2048;
    float *a = malloc((size_t)N * N * sizeof(float)), *b = malloc((size_t)N * N * sizeof(float));
    float *c = malloc((size_t)N * N * sizeof(float));
    double best = NAN;
    if (a && b && c) {
        attn_rng r = attn_rng_seed(1);
        for (size_t i = 0; i < (size_t)N * N; i++) {
            a[i] = attn_rng_uniform_range(&r, -1, 1);
            b[i] = attn_rng_uniform_range(&r, -1, 1);
        }
        best = 0;
        for (int rep = 0; rep < reps; rep++) {
            double t0 = bench_now_s(CLOCK_PROCESS_CPUTIME_ID); /* CPU time, as the training's */
            attn_sgemm(c, a, b, N, N, N, false, false, 1.0f, 0.0f, ATTN_OP_OTHER,
                       ATTN_PASS_FORWARD);
            double g = 2.0 * N * N * (double)N / (bench_now_s(CLOCK_PROCESS_CPUTIME_ID) - t0) / 1e9;
            if (g > best) best = g;
        }
        double want = 0;
        for (int k = 0; k < N; k++) want += (double)a[5 * N + k] * b[(size_t)k * N + 7];
        if (fabs(want - c[5 * N + 7]) > 1e-3 * (1 + fabs(want))) best = NAN;
    }
    free(a);
    free(b);
    free(c);
    return best;
}

/* ---- data ------------------------------------------------------------------------------- */

/* The sources of the four test sets of seed 1, n_each each, as one list of pairs' sources. */
typedef struct sources {
    int n;
    attn_pairs *sets[ATTN_N_TEST_SETS];
} sources;

static const int *source_of(const sources *s, int i, int *len) {
    int per = s->sets[0]->src->n;
    const attn_dataset *d = s->sets[i / per]->src;
    int k = i % per;
    *len = d->lengths[k];
    return d->ids + d->offsets[k];
}

static long target_tokens(const attn_pairs *p) {
    long t = 0;
    for (int i = 0; i < p->src->n; i++) t += p->tgt_lengths[i] + 1; /* + [EOS] */
    return t;
}

/* pairs: "src ids<TAB>target ids" per line; sources: "src ids" per line. */
static bool write_files(const attn_pairs *train, const sources *s, const char *pairs_path,
                        const char *src_path) {
    FILE *f = fopen(pairs_path, "w"), *g = fopen(src_path, "w");
    bool ok = f && g;
    for (int i = 0; ok && i < train->src->n; i++) {
        const attn_dataset *d = train->src;
        for (int t = 0; t < d->lengths[i]; t++)
            fprintf(f, "%s%d", t ? " " : "", d->ids[d->offsets[i] + (size_t)t]);
        fputc('\t', f);
        for (int t = 0; t < train->tgt_lengths[i]; t++)
            fprintf(f, "%s%d", t ? " " : "", train->tgt_ids[train->tgt_offsets[i] + (size_t)t]);
        fputc('\n', f);
    }
    for (int i = 0; ok && i < s->n; i++) {
        int len;
        const int *ids = source_of(s, i, &len);
        for (int t = 0; t < len; t++) fprintf(g, "%s%d", t ? " " : "", ids[t]);
        fputc('\n', g);
    }
    if (f && fclose(f) != 0) ok = false;
    if (g && fclose(g) != 0) ok = false;
    return ok;
}

/* ---- attn side -------------------------------------------------------------------------- */

/* One pass of greedy decoding over all sources: tokens (steps) in *tokens, the words of source
 * i in out[i * max_out ..], their count in n_out[i]. */
static bool gen_pass(attn_seq2seq *m, const sources *s, bool cache, int max_out, int *out,
                     int *n_out, long *tokens) {
    attn_error err;
    *tokens = 0;
    for (int i = 0; i < s->n; i++) {
        int len, steps = 0;
        const int *ids = source_of(s, i, &len);
        if (attn_seq2seq_greedy(m, ids, len, max_out, cache, out + (size_t)i * max_out, &n_out[i],
                                NULL, &steps, &err) != ATTN_OK) {
            fprintf(stderr, "seq2seq: generate: %s\n", err.msg);
            return false;
        }
        *tokens += steps;
    }
    return true;
}

static bool same_tokens(const int *a, const int *na, const int *b, const int *nb, int i,
                        int max_out) {
    return na[i] == nb[i] && memcmp(a + (size_t)i * max_out, b + (size_t)i * max_out,
                                    sizeof(int) * (size_t)na[i]) == 0;
}

/* ---- PyTorch side ----------------------------------------------------------------------- */

typedef struct torch_result {
    timing train, gen;
    long gen_tokens;
} torch_result;

/* Runs tools/bench_seq2seq.py on the same pairs, sources and weights; its tokens per source go
 * to gen_path. */
static bool torch_run(const options *o, const char *dir, torch_result *r) {
    char cmd[8192];
    snprintf(
        cmd, sizeof cmd,
        "OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 /usr/bin/python3 '%s/tools/bench_seq2seq.py' "
        "--pairs '%s/pairs.txt' --sources-file '%s/sources.txt' --weights '%s/w.json' "
        "--gen-out '%s/torch_gen.txt' --reps %d --train-reps %d --vocab-size %d%s",
        o->src, dir, dir, dir, dir, o->reps, o->train_reps, ATTN_VOCAB_SIZE,
        o->base ? " --config '{\"d_model\": 512, \"n_heads\": 8, \"ffn_dim\": 2048, "
                  "\"enc_layers\": 6, \"dec_layers\": 6}'"
                : "");
    FILE *p = popen(cmd, "r");
    if (!p) return false;
    char line[1024];
    int got = 0;
    while (fgets(line, sizeof line, p)) {
        if (sscanf(line, "torch train seconds=%lf cpu=%lf", &r->train.wall, &r->train.cpu) == 2)
            got |= 1;
        if (sscanf(line, "torch greedy tokens=%ld seconds=%lf cpu=%lf", &r->gen_tokens,
                   &r->gen.wall, &r->gen.cpu) == 3)
            got |= 2;
    }
    int rc = pclose(p);
    if (rc != 0 || got != 3) {
        fprintf(stderr, "seq2seq: %s failed (exit %d)\n", cmd, rc);
        return false;
    }
    return true;
}

/* Reads n lines of token ids (torch_gen.txt) into out/n_out (max_out per source). */
static bool read_tokens(const char *path, int n, int max_out, int *out, int *n_out) {
    FILE *f = fopen(path, "r");
    if (!f) return false;
    char line[4096];
    int i = 0;
    while (i < n && fgets(line, sizeof line, f)) {
        char *p = line, *end;
        n_out[i] = 0;
        for (long v = strtol(p, &end, 10); end != p; v = strtol(p, &end, 10)) {
            if (n_out[i] < max_out) out[(size_t)i * max_out + n_out[i]] = (int)v;
            n_out[i]++;
            p = end;
        }
        i++;
    }
    fclose(f);
    return i == n;
}

/* ---- main ------------------------------------------------------------------------------- */

static void usage(FILE *f) {
    fprintf(f,
            "Usage: seq2seq [--torch] [--quick] [--train-size N] [--sources N] [--reps R]\n"
            "               [--train-reps E] [--src DIR] [--profile N] [--size small|base]\n"
            "               [--gen-len N] [--gen-batch B]\n\n"
            "seq2seq-transformer on the rewrite task, one BLAS thread: training target\n"
            "tokens/s (median epoch, batch 32) and greedy generation tokens/s at batch 1 with the\n"
            "KV cache and recomputing, with --torch against PyTorch on the same pairs, sources\n"
            "and weights (tools/bench_seq2seq.py), ratios by CPU time.\n\n"
            "  --torch         also run PyTorch (/usr/bin/python3) and print the ratios\n"
            "  --quick         smoke test: --train-size 300 --sources 40 --reps 1\n"
            "                  --train-reps 1\n"
            "  --train-size N  training pairs (default 4000)\n"
            "  --sources N     generation sources, from the four test sets (default 200)\n"
            "  --reps R        generation passes, median (default 3)\n"
            "  --train-reps E  timed training epochs on each side, median (default 3)\n"
            "  --src DIR       source tree with tools/ (default .)\n"
            "  --size base     section 6's base model (d_model 512, 8 heads, FFN 2048, 6 + 6\n"
            "                  layers); its defaults: --train-size 64 --sources 8 --reps 1\n"
            "                  --train-reps 1 (default: small, the seq2seq-transformer's default)\n"
            "  --gen-len N     KV-cache generation at a fixed length: N words per source\n"
            "                  ([EOS] out of the argmax until N, attn generate --min-len N\n"
            "                  --max-len N), batch 1 and --gen-batch, against PyTorch's\n"
            "                  cached loop and TorchScript (tools/bench_generate_torch.py);\n"
            "                  0: none (default: max_tgt_len - 1 with --size base, else 0)\n"
            "  --gen-batch B   the batch of those rows (default 8)\n"
            "  --profile N     only N training epochs, nothing else (no ceiling, no\n"
            "                  generation, no PyTorch): the workload for perf record\n"
            "  -h, --help      this text\n\n"
            "Exit codes: 0 ok (a MISSed target does not fail the run), 1 validation or\n"
            "runtime failure, 2 usage.\n");
}

static int parse(int argc, char **argv, options *o) {
    *o = (options){.src = ".", .gen_len = -1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int *num = NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--torch") == 0) {
            o->torch = true;
        } else if (strcmp(a, "--quick") == 0) {
            o->train_size = 300;
            o->sources = 40;
            o->reps = 1;
            o->train_reps = 1;
        } else if (strcmp(a, "--src") == 0 && v) {
            o->src = argv[++i];
        } else if (strcmp(a, "--train-size") == 0 && v) {
            num = &o->train_size;
        } else if (strcmp(a, "--sources") == 0 && v) {
            num = &o->sources;
        } else if (strcmp(a, "--reps") == 0 && v) {
            num = &o->reps;
        } else if (strcmp(a, "--train-reps") == 0 && v) {
            num = &o->train_reps;
        } else if (strcmp(a, "--size") == 0 && v) {
            o->base = strcmp(argv[++i], "base") == 0;
            if (!o->base && strcmp(argv[i], "small") != 0) {
                fprintf(stderr, "seq2seq: --size '%s': expected small or base\n", argv[i]);
                return 2;
            }
        } else if (strcmp(a, "--profile") == 0 && v) {
            num = &o->profile;
        } else if (strcmp(a, "--gen-len") == 0 && v) {
            char *end;
            long x = strtol(argv[++i], &end, 10);
            if (*end || x < 0 || x > ATTN_S2S_MAX_TGT) {
                fprintf(stderr, "seq2seq: --gen-len '%s': expected 0..%d\n", argv[i],
                        ATTN_S2S_MAX_TGT);
                return 2;
            }
            o->gen_len = (int)x;
        } else if (strcmp(a, "--gen-batch") == 0 && v) {
            num = &o->gen_batch;
        } else {
            fprintf(stderr, "seq2seq: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
        if (num) {
            char *end;
            long x = strtol(argv[++i], &end, 10);
            if (*end || x < 1 || x > MAX_N) {
                fprintf(stderr, "seq2seq: %s '%s': expected 1..%d\n", a, argv[i], MAX_N);
                return 2;
            }
            *num = (int)x;
        }
    }
    /* the defaults of the size, where not given */
    if (!o->train_size) o->train_size = o->base ? 64 : 4000;
    if (!o->sources) o->sources = o->base ? 8 : 200;
    if (!o->reps) o->reps = o->base ? 1 : 3;
    if (!o->train_reps) o->train_reps = o->base ? 1 : 3;
    if (!o->gen_batch) o->gen_batch = 8;
    return -1;
}

static void print_ratio(const char *what, const timing *attn, const timing *torch, double target) {
    const double r = torch->cpu / attn->cpu;
    printf("%s: %.2fx by CPU time, %.2fx by wall time", what, r, torch->wall / attn->wall);
    if (target > 0)
        printf("  %s (target >= %.0fx by CPU time)", r >= target ? "PASS" : "MISS", target);
    printf("\n");
}

typedef struct run {
    attn_pairs *train;
    sources src;
    attn_seq2seq *m;
    int *gen[3], *n_gen[3]; /* cached, recomputed, PyTorch */
    char dir[64];
} run;

static void run_free(run *r) {
    attn_pairs_free(r->train);
    for (int k = 0; k < ATTN_N_TEST_SETS; k++) attn_pairs_free(r->src.sets[k]);
    attn_seq2seq_free(r->m);
    for (int k = 0; k < 3; k++) {
        free(r->gen[k]);
        free(r->n_gen[k]);
    }
    if (r->dir[0]) {
        const char *files[] = {"pairs.txt",
                               "sources.txt",
                               "w.json",
                               "torch_gen.txt",
                               "fixed.eager.b1.txt",
                               "fixed.eager.bB.txt",
                               "fixed.torchscript.b1.txt",
                               "fixed.torchscript.bB.txt"};
        char path[128];
        for (int k = 0; k < (int)(sizeof files / sizeof *files); k++) {
            snprintf(path, sizeof path, "%s/%s", r->dir, files[k]);
            remove(path);
        }
        rmdir(r->dir);
    }
}

static bool train_epoch(run *r, timing *tm, uint64_t *madds) {
    attn_s2s_train_config tc = attn_s2s_train_config_default();
    tc.epochs = 1;
    tc.holdout = 0;
    tc.keep_best = 0;
    attn_error err;
    attn_flop_counts fc;
    memset(&fc, 0, sizeof fc);
    if (madds) attn_flops_set_counter(&fc);
    double w0 = bench_now_s(CLOCK_MONOTONIC), c0 = bench_now_s(CLOCK_PROCESS_CPUTIME_ID);
    attn_status st = attn_seq2seq_train(r->m, r->train, NULL, &tc, NULL, &err);
    double c1 = bench_now_s(CLOCK_PROCESS_CPUTIME_ID), w1 = bench_now_s(CLOCK_MONOTONIC);
    attn_flops_set_counter(NULL);
    if (st != ATTN_OK) {
        fprintf(stderr, "seq2seq: train: %s\n", err.msg);
        return false;
    }
    if (tm) *tm = (timing){w1 - w0, c1 - c0};
    if (madds) {
        *madds = 0;
        for (int t = 0; t < ATTN_OP_COUNT; t++) *madds += fc.fwd_madds[t] + fc.bwd_madds[t];
    }
    return true;
}

/* n epochs one after the other; *tm the medians of their wall and CPU times, *madds the
 * multiply-adds of one (every epoch does the same products). */
static bool train_epochs(run *r, int n, timing *tm, uint64_t *madds) {
    double *wall = malloc(2 * sizeof(double) * (size_t)n), *cpu = wall ? wall + n : NULL;
    bool ok = wall != NULL;
    for (int e = 0; ok && e < n; e++) {
        timing t;
        ok = train_epoch(r, &t, e == 0 ? madds : NULL);
        if (ok) wall[e] = t.wall, cpu[e] = t.cpu;
    }
    if (ok) *tm = (timing){bench_median(wall, n), bench_median(cpu, n)};
    free(wall);
    return ok;
}

/* ---- --size base: the training step in steady state, 1 and 2 threads ---------------------- */

#define STEADY_MAX_EPOCHS 64

/* Per epoch of one training call: CPU and wall time, multiply-adds (the calling thread's). */
typedef struct steady_clock {
    int n;
    double cpu0, wall0; /* the previous epoch's end (the call's start for the first) */
    uint64_t madds0;
    attn_flop_counts fc;
    double cpu[STEADY_MAX_EPOCHS], wall[STEADY_MAX_EPOCHS];
    uint64_t madds[STEADY_MAX_EPOCHS];
} steady_clock;

static uint64_t madds_of(const attn_flop_counts *fc) {
    uint64_t s = 0;
    for (int t = 0; t < ATTN_OP_COUNT; t++) s += fc->fwd_madds[t] + fc->bwd_madds[t];
    return s;
}

static bool steady_on_epoch(const attn_s2s_epoch_stats *st, void *user) {
    (void)st;
    steady_clock *c = user;
    const double cpu = bench_now_s(CLOCK_PROCESS_CPUTIME_ID), wall = bench_now_s(CLOCK_MONOTONIC);
    const uint64_t madds = madds_of(&c->fc);
    if (c->n < STEADY_MAX_EPOCHS) {
        c->cpu[c->n] = cpu - c->cpu0;
        c->wall[c->n] = wall - c->wall0;
        c->madds[c->n] = madds - c->madds0;
        c->n++;
    }
    c->cpu0 = cpu, c->wall0 = wall, c->madds0 = madds;
    return true;
}

/* What train_steady measured: the epochs after the first, summed (every epoch has the same
 * steps and target tokens; the shuffle changes which pairs share a micro-batch, so the
 * multiply-adds move by a fraction of a percent). */
typedef struct steady_result {
    double cpu, wall, first_cpu; /* seconds: the timed epochs; the first epoch (with the setup) */
    uint64_t madds;              /* of the timed epochs (the 1-thread run's: the same products) */
    int epochs;                  /* timed */
} steady_result;

/* A fresh seed-1 model of cfg trained 1 + reps epochs in one attn_seq2seq_train_pool call on
 * `threads` threads (the pool; 1: none), holdout 0: the first epoch also makes the optimizer's
 * moments, the replicas and the buffers, the later ones are the training step as `attn train
 * --epochs N` runs it. Its parameters after training go to *params (the caller frees them). */
static bool train_steady(const attn_seq2seq_config *cfg, const attn_pairs *train, int threads,
                         int reps, steady_result *res, float **params) {
    attn_error err;
    attn_seq2seq *m = NULL;
    attn_pool *pool = NULL;
    steady_clock *c = calloc(1, sizeof *c);
    bool ok = c && attn_seq2seq_create(cfg, 1, &m, &err) == ATTN_OK &&
              (threads < 2 || attn_pool_create(threads, &pool, &err) == ATTN_OK);
    if (ok) {
        attn_s2s_train_config tc = attn_s2s_train_config_default();
        tc.epochs = 1 + reps;
        tc.holdout = 0;
        tc.keep_best = 0;
        const attn_s2s_callbacks cb = {steady_on_epoch, c};
        attn_flops_set_counter(&c->fc);
        c->cpu0 = bench_now_s(CLOCK_PROCESS_CPUTIME_ID), c->wall0 = bench_now_s(CLOCK_MONOTONIC);
        ok = attn_seq2seq_train_pool(m, train, NULL, &tc, &cb, NULL, pool, &err) == ATTN_OK &&
             c->n == tc.epochs;
        attn_flops_set_counter(NULL);
        if (!ok) fprintf(stderr, "seq2seq: train (%d threads): %s\n", threads, err.msg);
    } else {
        fprintf(stderr, "seq2seq: %s\n", c ? err.msg : "out of memory");
    }
    if (ok) {
        *res = (steady_result){0, 0, c->cpu[0], 0, reps};
        for (int e = 1; e <= reps; e++)
            res->cpu += c->cpu[e], res->wall += c->wall[e], res->madds += c->madds[e];
        const size_t n = attn_seq2seq_n_params(m);
        *params = malloc(n * sizeof(float));
        ok = *params != NULL;
        if (ok) memcpy(*params, attn_seq2seq_params(m), n * sizeof(float));
    }
    attn_pool_free(pool);
    attn_seq2seq_free(m);
    free(c);
    return ok;
}

/* The base training step at 1 and 2 threads against the sgemm ceiling (per core, by CPU time;
 * at 2 threads also by wall against twice it), and whether both thread counts end with the same
 * parameter bytes. 0: ok, 1: failure. */
static int base_steady(const options *o, const attn_seq2seq_config *cfg, const attn_pairs *train,
                       size_t n_params, long tokens, double ceiling) {
    const int reps = o->train_reps > 2 ? o->train_reps : 2, counts[2] = {1, 2};
    steady_result res[2];
    float *params[2] = {NULL, NULL};
    bool ok = true;
    for (int i = 0; ok && i < 2; i++)
        ok = train_steady(cfg, train, counts[i], reps, &res[i], &params[i]);
    if (ok) {
        printf("training step, steady state: one call of 1 + %d epochs, the %d after the first "
               "timed (the first makes Adam's moments, replicas, buffers: %.3f s CPU at 1 "
               "thread)\n",
               reps, reps, res[0].first_cpu);
        for (int i = 0; i < 2; i++) {
            const double gf = 2.0 * (double)res[0].madds / res[i].cpu / 1e9;
            const double gw = 2.0 * (double)res[0].madds / res[i].wall / 1e9;
            printf("training step attn, %d thread%s: %8.0f target tokens/s by CPU time, %8.0f by "
                   "wall; %.2f GFLOP/s by CPU time, %.1f%% of the sgemm ceiling (per core)",
                   counts[i], counts[i] > 1 ? "s" : " ", tokens * reps / res[i].cpu,
                   tokens * reps / res[i].wall, gf, 100.0 * gf / ceiling);
            if (counts[i] > 1)
                printf("; by wall %.1f%% of %d x the ceiling", 100.0 * gw / (counts[i] * ceiling),
                       counts[i]);
            printf("\n");
        }
        const bool same = memcmp(params[0], params[1], n_params * sizeof(float)) == 0;
        printf("training step validate: parameters after %d epochs at 1 and 2 threads: %s\n",
               1 + reps, same ? "byte-identical" : "DIFFERENT");
        const double frac = 100.0 * 2.0 * (double)res[0].madds / res[0].cpu / 1e9 / ceiling;
        printf("%s training step (1 thread, steady state) at >= %.0f%% of the sgemm ceiling by "
               "CPU time (%.1f%%)\n",
               frac >= TARGET_BASE_CEILING ? "PASS" : "MISS", TARGET_BASE_CEILING, frac);
        if (!same) {
            fprintf(stderr, "seq2seq: 1 and 2 threads trained different parameters\n");
            ok = false;
        }
    }
    free(params[0]);
    free(params[1]);
    return ok ? 0 : 1;
}

/* Medians of o->reps passes of each decoder, alternating; tokens in *tokens. */
static bool time_generation(run *r, const options *o, int max_out, timing tm[2], long *tokens) {
    double *v = malloc(sizeof(double) * 4 * (size_t)o->reps);
    bool ok = v != NULL;
    for (int rep = 0; ok && rep < o->reps; rep++)
        for (int k = 0; ok && k < 2; k++) {
            double w0 = bench_now_s(CLOCK_MONOTONIC), c0 = bench_now_s(CLOCK_PROCESS_CPUTIME_ID);
            ok = gen_pass(r->m, &r->src, k == 0, max_out, r->gen[k], r->n_gen[k], &tokens[k]);
            v[(2 * k + 1) * o->reps + rep] = bench_now_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
            v[2 * k * o->reps + rep] = bench_now_s(CLOCK_MONOTONIC) - w0;
        }
    for (int k = 0; ok && k < 2; k++)
        tm[k] = (timing){bench_median(v + 2 * k * o->reps, o->reps),
                         bench_median(v + (2 * k + 1) * o->reps, o->reps)};
    free(v);
    return ok;
}

/* ---- KV-cache generation at a fixed length (--gen-len) -------------------------------------
 * Every source decoded to exactly N words ([EOS] out of the argmax at the first N steps, at most
 * N words: attn_seq2seq_greedy_min / _batch with min_out = max_out = N), so that at any size,
 * trained or not, each source is N decoder steps and the tokens per second are a decoding
 * loop's. attn: batch 1 (attn_seq2seq_greedy_min, cache) and batch B (attn_seq2seq_greedy_batch
 * on the sources B at a time, in order), in-process; PyTorch: tools/bench_generate_torch.py on
 * the same weights and sources (seq2seq_models.greedy_cached / greedy_batch, and the step
 * under torch.jit.script), whose words must be attn's source for source. */

/* One pass over the sources at batch B (1: one at a time); words of source i at out[i * N ..]. */
static bool fixed_pass(attn_seq2seq *m, const sources *s, int N, int B, int *out, int *n_out,
                       long *tokens) {
    attn_error err;
    const int *src[64];
    int len[64], steps[64];
    *tokens = 0;
    for (int i0 = 0; i0 < s->n; i0 += B) {
        const int k = s->n - i0 < B ? s->n - i0 : B;
        for (int j = 0; j < k; j++) src[j] = source_of(s, i0 + j, &len[j]);
        const attn_status st =
            B == 1 ? attn_seq2seq_greedy_min(m, src[0], len[0], N, N, true, out + (size_t)i0 * N,
                                             &n_out[i0], NULL, &steps[0], &err)
                   : attn_seq2seq_greedy_batch(m, k, src, len, N, N, out + (size_t)i0 * N,
                                               &n_out[i0], NULL, steps, &err);
        if (st != ATTN_OK) {
            fprintf(stderr, "seq2seq: generate: %s\n", err.msg);
            return false;
        }
        for (int j = 0; j < k; j++) *tokens += steps[j];
    }
    return true;
}

typedef struct fixed_row {
    const char *who; /* "attn", "torch eager", "torch torchscript" */
    int batch;
    timing t;
    long tokens;
    bool have;
} fixed_row;

/* Medians of o->reps passes at batch B after an untimed one. */
static bool fixed_time(run *r, const options *o, int N, int B, int *out, int *n_out,
                       fixed_row *row) {
    double *v = malloc(2 * sizeof(double) * (size_t)o->reps);
    bool ok = v != NULL && fixed_pass(r->m, &r->src, N, B, out, n_out, &row->tokens);
    for (int rep = 0; ok && rep < o->reps; rep++) {
        double w0 = bench_now_s(CLOCK_MONOTONIC), c0 = bench_now_s(CLOCK_PROCESS_CPUTIME_ID);
        ok = fixed_pass(r->m, &r->src, N, B, out, n_out, &row->tokens);
        v[o->reps + rep] = bench_now_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
        v[rep] = bench_now_s(CLOCK_MONOTONIC) - w0;
    }
    if (ok) {
        row->t = (timing){bench_median(v, o->reps), bench_median(v + o->reps, o->reps)};
        row->have = true;
    }
    free(v);
    return ok;
}

/* tools/bench_generate_torch.py on r->dir's weights and sources: its rows (eager batch 1 and B,
 * torchscript batch 1 and B, or why not in why[]). */
static bool fixed_torch(const options *o, const run *r, int N, fixed_row rows[4], char *why,
                        size_t why_len) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 /usr/bin/python3 "
             "'%s/tools/bench_generate_torch.py' --weights '%s/w.json' --sources-file "
             "'%s/sources.txt' --out '%s/fixed' --min-len %d --max-len %d --batch %d --reps %d "
             "--vocab-size %d",
             o->src, r->dir, r->dir, r->dir, N, N, o->gen_batch, o->reps, ATTN_VOCAB_SIZE);
    FILE *p = popen(cmd, "r");
    if (!p) return false;
    char line[1024], mode[32];
    while (fgets(line, sizeof line, p)) {
        int batch;
        fixed_row x = {0};
        if (sscanf(line, "torch %31s batch=%d tokens=%ld seconds=%lf cpu=%lf", mode, &batch,
                   &x.tokens, &x.t.wall, &x.t.cpu) == 5) {
            const int k = (strcmp(mode, "torchscript") == 0) * 2 + (batch != 1);
            rows[k].tokens = x.tokens, rows[k].t = x.t, rows[k].have = true;
        } else if (strncmp(line, "torch torchscript unavailable: ", 31) == 0) {
            snprintf(why, why_len, "%.300s", line + 31);
            why[strcspn(why, "\n")] = 0;
        }
    }
    const int rc = pclose(p);
    if (rc != 0 || !rows[0].have || !rows[1].have) {
        fprintf(stderr, "seq2seq: %s failed (exit %d)\n", cmd, rc);
        return false;
    }
    /* the files name batch B by its number: rename to the fixed names run_free removes */
    for (int k = 0; k < 2; k++) {
        char from[160], to[160];
        const char *mode_k = k ? "torchscript" : "eager";
        snprintf(from, sizeof from, "%s/fixed.%s.b%d.txt", r->dir, mode_k, o->gen_batch);
        snprintf(to, sizeof to, "%s/fixed.%s.bB.txt", r->dir, mode_k);
        if (o->gen_batch != 1) rename(from, to);
    }
    return true;
}

static int same_count(const int *a, const int *na, const int *b, const int *nb, int n, int N) {
    int same = 0;
    for (int i = 0; i < n; i++) same += same_tokens(a, na, b, nb, i, N);
    return same;
}

static void fixed_print(const fixed_row *x) {
    printf("generation %-18s batch %d: %8.0f tokens/s by CPU time, %8.0f by wall (%ld tokens)\n",
           x->who, x->batch, x->tokens / x->t.cpu, x->tokens / x->t.wall, x->tokens);
}

/* The section: attn's rows, then (--torch) PyTorch's, the tokens compared and the ratios. */
static int fixed_generation(const options *o, run *r, int max_out) {
    const int N = o->gen_len < 0 ? (o->base ? max_out : 0) : o->gen_len;
    if (N == 0) return 0;
    if (N > max_out || o->gen_batch > 64) {
        fprintf(stderr, "seq2seq: --gen-len %d (at most %d) or --gen-batch %d (at most 64)\n", N,
                max_out, o->gen_batch);
        return 2;
    }
    const size_t n = (size_t)r->src.n;
    int *out = malloc(sizeof(int) * n * N * 6), *n_out = calloc(n * 6, sizeof(int));
    if (!out || !n_out) {
        free(out), free(n_out);
        fprintf(stderr, "seq2seq: out of memory\n");
        return 1;
    }
    /* words: 0 attn b1, 1 attn bB, 2 eager b1, 3 eager bB, 4 torchscript b1, 5 torchscript bB */
    fixed_row rows[2] = {{.who = "attn", .batch = 1}, {.who = "attn", .batch = o->gen_batch}};
    printf("generation, KV cache, fixed length: %d sources, %d words each ([EOS] out of the argmax "
           "until %d: attn generate --min-len %d --max-len %d), medians of %d passes\n",
           r->src.n, N, N, N, N, o->reps);
    int code = 0;
    for (int k = 0; k < 2 && code == 0; k++)
        if (!fixed_time(r, o, N, rows[k].batch, out + k * n * N, n_out + k * n, &rows[k])) code = 1;
    for (int k = 0; k < 2 && code == 0; k++) fixed_print(&rows[k]);
    if (code == 0)
        printf("generation validate: attn batch %d vs batch 1: %d/%d sources the same words\n",
               o->gen_batch, same_count(out, n_out, out + n * N, n_out + n, r->src.n, N), r->src.n);
    char why[400] = "";
    fixed_row tr[4] = {{.who = "torch cached loop", .batch = 1},
                       {.who = "torch cached loop", .batch = o->gen_batch},
                       {.who = "torchscript cached", .batch = 1},
                       {.who = "torchscript cached", .batch = o->gen_batch}};
    if (code == 0 && o->torch && !fixed_torch(o, r, N, tr, why, sizeof why)) code = 1;
    if (code == 0 && o->torch) {
        const char *mode[2] = {"eager", "torchscript"};
        for (int k = 0; k < 4 && code == 0; k++) {
            if (!tr[k].have) continue;
            char path[160];
            snprintf(path, sizeof path, "%s/fixed.%s.b%s.txt", r->dir, mode[k / 2],
                     k % 2 && o->gen_batch != 1 ? "B" : "1");
            int *w = out + (size_t)(2 + k) * n * N, *nw = n_out + (size_t)(2 + k) * n;
            if (!read_tokens(path, r->src.n, N, w, nw)) {
                fprintf(stderr, "seq2seq: cannot read %s\n", path);
                code = 1;
                break;
            }
            const int same =
                same_count(out + (size_t)(k % 2) * n * N, n_out + (k % 2) * n, w, nw, r->src.n, N);
            printf("generation validate: attn batch %d vs %s batch %d: %d/%d sources the same "
                   "words\n",
                   tr[k].batch, tr[k].who, tr[k].batch, same, r->src.n);
            if (same != r->src.n && k < 2) {
                fprintf(stderr, "seq2seq: attn's cached decoding and PyTorch's cached loop "
                                "disagree\n");
                code = 1;
            }
        }
        for (int k = 0; k < 4 && code == 0; k++)
            if (tr[k].have) fixed_print(&tr[k]);
        if (code == 0 && !tr[2].have)
            printf("generation torchscript: not measured: %s\n", why[0] ? why : "no result");
        for (int k = 0; k < 4 && code == 0; k++) {
            if (!tr[k].have) continue;
            char what[96];
            snprintf(what, sizeof what, "generation attn cached / %s, batch %d", tr[k].who,
                     tr[k].batch);
            const timing a = {rows[k % 2].t.wall / rows[k % 2].tokens,
                              rows[k % 2].t.cpu / rows[k % 2].tokens};
            const timing t = {tr[k].t.wall / tr[k].tokens, tr[k].t.cpu / tr[k].tokens};
            print_ratio(what, &a, &t, 0);
        }
    }
    if (code == 0) {
        const timing a1 = {rows[0].t.wall / rows[0].tokens, rows[0].t.cpu / rows[0].tokens};
        const timing aB = {rows[1].t.wall / rows[1].tokens, rows[1].t.cpu / rows[1].tokens};
        char what[64];
        snprintf(what, sizeof what, "generation attn batch %d / attn batch 1", o->gen_batch);
        print_ratio(what, &aB, &a1, 0);
    }
    free(out);
    free(n_out);
    return code;
}

static int bench(const options *o, run *r) {
    attn_error err;
    attn_seq2seq_config cfg = attn_seq2seq_config_default(ATTN_S2S_TRANSFORMER);
    if (o->base) /* as `attn reproduce --task rewrite --size base` */
        cfg.d_model = 512, cfg.n_heads = 8, cfg.ffn_dim = 2048, cfg.enc_layers = 6,
        cfg.dec_layers = 6;
    const int per = (o->sources + ATTN_N_TEST_SETS - 1) / ATTN_N_TEST_SETS;
    static const attn_set sets[ATTN_N_TEST_SETS] = {ATTN_SET_PLAIN, ATTN_SET_DISTRACTOR,
                                                    ATTN_SET_FILL4, ATTN_SET_FILL8};
    if (attn_pairs_generate(ATTN_TASK_REWRITE, ATTN_SET_TRAIN, o->train_size, 1, &r->train, &err) !=
            ATTN_OK ||
        attn_seq2seq_create(&cfg, 1, &r->m, &err) != ATTN_OK) {
        fprintf(stderr, "seq2seq: %s\n", err.msg);
        return 1;
    }
    for (int k = 0; k < ATTN_N_TEST_SETS; k++)
        if (attn_pairs_generate(ATTN_TASK_REWRITE, sets[k], per, 1, &r->src.sets[k], &err) !=
            ATTN_OK) {
            fprintf(stderr, "seq2seq: %s\n", err.msg);
            return 1;
        }
    r->src.n = o->sources;
    const int max_out = cfg.max_tgt_len - 1;
    for (int k = 0; k < 3; k++) {
        r->gen[k] = malloc(sizeof(int) * (size_t)r->src.n * (size_t)max_out);
        r->n_gen[k] = calloc((size_t)r->src.n, sizeof(int));
        if (!r->gen[k] || !r->n_gen[k]) {
            fprintf(stderr, "seq2seq: out of memory\n");
            return 1;
        }
    }
    printf("seq2seq: seq2seq-transformer (D %d, %d heads, F %d, %d+%d layers, %s-norm), 1 thread, "
           "BLAS %s\n",
           cfg.d_model, cfg.n_heads, cfg.ffn_dim, cfg.enc_layers, cfg.dec_layers,
           cfg.norm == ATTN_NORM_PRE ? "pre" : "post", attn_blas_corename());
    if (o->profile > 0) { /* training epochs alone, for a profiler */
        for (int e = 0; e < o->profile; e++) {
            timing tp;
            if (!train_epoch(r, &tp, NULL)) return 1;
            printf("profile epoch %d: %.3f s CPU, %.3f s wall\n", e + 1, tp.cpu, tp.wall);
        }
        return 0;
    }
    const double ceiling = sgemm_ceiling(3);
    printf("sgemm 2048^3, 1 thread: %.1f GFLOP/s by CPU time (the ceiling)\n", ceiling);

    /* training: the timed epochs, then one more for a model with real output lengths */
    const long tokens = target_tokens(r->train);
    timing tt;
    uint64_t madds = 0;
    if (!train_epochs(r, o->train_reps, &tt, &madds)) return 1;
    const double gflops = 2.0 * (double)madds / tt.cpu / 1e9;
    printf("training: %d pairs of seed 1, median of %d epochs, batch 32, %ld target tokens ([EOS] "
           "included)\n",
           r->train->src->n, o->train_reps, tokens);
    printf("training attn : %8.0f target tokens/s by CPU time (%.3f s), %8.0f by wall (%.3f s); "
           "%.2f GFLOP/s, %.1f%% of the sgemm ceiling\n",
           tokens / tt.cpu, tt.cpu, tokens / tt.wall, tt.wall, gflops, 100.0 * gflops / ceiling);
    /* issue 33: the products dominate at this size; judged on the step in steady state */
    if (o->base && base_steady(o, &cfg, r->train, attn_seq2seq_n_params(r->m), tokens, ceiling))
        return 1;
    if (!train_epoch(r, NULL, NULL)) return 1;

    /* generation */
    timing tg[2];
    long gen_tokens[2];
    if (!time_generation(r, o, max_out, tg, gen_tokens)) return 1;
    int agree = 0;
    for (int i = 0; i < r->src.n; i++)
        agree += same_tokens(r->gen[0], r->n_gen[0], r->gen[1], r->n_gen[1], i, max_out);
    printf("generation: %d sources of the four test sets, batch 1, greedy, up to %d words, "
           "medians of %d passes\n",
           r->src.n, max_out, o->reps);
    printf("generation validate: cached vs recomputing decoder: %d/%d sources the same tokens\n",
           agree, r->src.n);
    const char *names[2] = {"cached   ", "recompute"};
    for (int k = 0; k < 2; k++)
        printf("generation attn %s: %8.0f tokens/s by CPU time, %8.0f by wall (%ld tokens)\n",
               names[k], gen_tokens[k] / tg[k].cpu, gen_tokens[k] / tg[k].wall, gen_tokens[k]);
    if (!o->torch) return fixed_generation(o, r, max_out);

    /* PyTorch on the same pairs, sources and weights */
    snprintf(r->dir, sizeof r->dir, "/tmp/attn-bench-seq2seq-XXXXXX");
    char pairs[128], srcs[128], w[128], gen[128];
    if (!mkdtemp(r->dir)) {
        r->dir[0] = 0;
        fprintf(stderr, "seq2seq: cannot create a temporary directory\n");
        return 1;
    }
    snprintf(pairs, sizeof pairs, "%s/pairs.txt", r->dir);
    snprintf(srcs, sizeof srcs, "%s/sources.txt", r->dir);
    snprintf(w, sizeof w, "%s/w.json", r->dir);
    snprintf(gen, sizeof gen, "%s/torch_gen.txt", r->dir);
    if (!write_files(r->train, &r->src, pairs, srcs) ||
        attn_seq2seq_save_json(r->m, false, true, w, &err) != ATTN_OK) {
        fprintf(stderr, "seq2seq: cannot write the files for PyTorch in %s\n", r->dir);
        return 1;
    }
    torch_result tr;
    if (!torch_run(o, r->dir, &tr)) return 1;
    if (!read_tokens(gen, r->src.n, max_out, r->gen[2], r->n_gen[2])) {
        fprintf(stderr, "seq2seq: cannot read %s\n", gen);
        return 1;
    }
    int same = 0;
    for (int i = 0; i < r->src.n; i++)
        same += same_tokens(r->gen[1], r->n_gen[1], r->gen[2], r->n_gen[2], i, max_out);
    printf("generation validate: recomputing decoder vs PyTorch's greedy loop: %d/%d sources the "
           "same tokens\n",
           same, r->src.n);
    if (same != r->src.n) {
        fprintf(stderr, "seq2seq: the recomputing decoder and PyTorch's loop disagree\n");
        return 1;
    }
    printf("training torch: %8.0f target tokens/s by CPU time (%.3f s), %8.0f by wall (%.3f s)\n",
           tokens / tr.train.cpu, tr.train.cpu, tokens / tr.train.wall, tr.train.wall);
    printf("generation torch loop     : %8.0f tokens/s by CPU time, %8.0f by wall (%ld tokens)\n",
           tr.gen_tokens / tr.gen.cpu, tr.gen_tokens / tr.gen.wall, tr.gen_tokens);
    /* the ratio targets are the default size's */
    print_ratio("training attn / PyTorch", &tt, &tr.train, o->base ? 0 : TARGET_TRAIN);
    /* per token: the token counts are equal (same tokens), but divide anyway */
    timing pt[3];
    for (int k = 0; k < 2; k++)
        pt[k] = (timing){tg[k].wall / gen_tokens[k], tg[k].cpu / gen_tokens[k]};
    pt[2] = (timing){tr.gen.wall / tr.gen_tokens, tr.gen.cpu / tr.gen_tokens};
    print_ratio("generation attn cached / PyTorch loop", &pt[0], &pt[2], o->base ? 0 : TARGET_GEN);
    print_ratio("generation attn recomputing / PyTorch loop", &pt[1], &pt[2], 0);
    print_ratio("generation attn cached / attn recomputing", &pt[0], &pt[1], 0);
    return fixed_generation(o, r, max_out);
}

int main(int argc, char **argv) {
    options o;
    int code = parse(argc, argv, &o);
    if (code >= 0) return code;
    bench_one_blas_thread(argv);
    run r;
    memset(&r, 0, sizeof r);
    code = bench(&o, &r);
    run_free(&r);
    return code;
}

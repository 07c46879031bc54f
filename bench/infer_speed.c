/* infer_speed.c -- batched inference speed of the four classifiers, attn vs PyTorch in one run.
 *
 * The question: how many sentences per second does a batch-256 eval of the RNN, the GRU, the
 * LSTM and the Transformer take, against PyTorch 1.13's batched eval of the same weights on the
 * same sentences (the reference module of tools/attn_models.py, eval mode, no_grad, one thread)?
 *
 * Method (STYLE.md section 14): the four test sets of seed 1 (plain, distractor, fill4, fill8,
 * n sentences each, as `attn eval --set all`) are cut into consecutive batches padded to their
 * longest sentence (attn's evaluation batcher). Validation first: every batched logit is
 * within BATCH_REL of the same sentence's batch-1 logit (exact mode), and with --torch within
 * BATCH_REL of PyTorch's batched logit. Then timing: warm-up passes, timed passes over all
 * sentences; wall-clock median and min and the median of the thread's CPU time per pass are
 * reported (the CPU time is what other processes on a busy machine disturb least, so the
 * target is judged on it). Model forward only, tokenizing and batching excluded on both
 * sides. Multiply-adds per pass come from attn_sgemm's counter. One BLAS thread
 * (OPENBLAS_NUM_THREADS=1, set by re-executing when unset).
 *
 * Weights: DIR/weights/M-seed1.json; a model without committed weights (the GRU) is timed on its
 * seed-1 initialisation (attn_model_create, written to a temporary file for PyTorch): the
 * arithmetic per sentence does not depend on the values.
 *
 * --dump DIR writes the sentences (DIR/ids.txt, token ids, one sentence per line) and the
 * logits of attn's last timed pass (DIR/M.attn.f32, float32 in sentence order, host byte
 * order; a model without committed weights also gets DIR/M.weights.json, the initialisation
 * timed) for bench/peers.sh, which runs other engines on the same sentences.
 *
 * Usage: build/bench/infer_speed [--model rnn|gru|lstm|transformer|all] [--torch] [--quick]
 * [--batch B]
 *        [--n N] [--reps R] [--src DIR] [--dump DIR]
 * Exit codes: 0 ok (targets are reported, not enforced), 1 validation or runtime failure,
 * 2 usage. */
#include "attn.h"
#include "attn_kernels.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "bench_time.h"

#define BATCH_REL     1e-5 /* |batched - reference| <= BATCH_REL * max(1, |reference|) */
#define TARGET_RATIO  2.0  /* the target: >= 2x PyTorch's batched eval */
#define MAX_SENTENCES 100000

typedef struct options {
    const char *model, *src, *dump;
    int batch, n, reps, warmup;
    bool torch;
} options;

/* All sentences of the run and their batches. */
typedef struct corpus {
    int n;            /* sentences */
    int *lengths;     /* [n] */
    size_t *offsets;  /* [n+1] into ids */
    int *ids;         /* [offsets[n]] */
    int n_batches;    /* ceil(n / batch) */
    int *batch_ids;   /* [n_batches * batch * max_len] padded rows, batch by batch */
    size_t *batch_at; /* [n_batches] offset of each batch in batch_ids */
    int *batch_t;     /* [n_batches] T of each batch */
} corpus;

/* Times of one side: wall median and min, CPU-time median, seconds per pass. */
typedef struct timing {
    double med, min, cpu;
} timing;

static void corpus_free(corpus *c) {
    free(c->lengths);
    free(c->offsets);
    free(c->ids);
    free(c->batch_ids);
    free(c->batch_at);
    free(c->batch_t);
    memset(c, 0, sizeof *c);
}

/* Appends data set d to c (sentences, then nothing else). */
static bool corpus_append(corpus *c, const attn_dataset *d) {
    int n = c->n + d->n;
    size_t words = (c->n ? c->offsets[c->n] : 0) + d->offsets[d->n];
    int *lengths = realloc(c->lengths, (size_t)n * sizeof *lengths);
    if (lengths) c->lengths = lengths;
    size_t *offsets = realloc(c->offsets, (size_t)(n + 1) * sizeof *offsets);
    if (offsets) c->offsets = offsets;
    int *ids = realloc(c->ids, words * sizeof *ids);
    if (ids) c->ids = ids;
    if (!lengths || !offsets || !ids) return false;
    if (c->n == 0) c->offsets[0] = 0;
    size_t at = c->offsets[c->n];
    memcpy(c->ids + at, d->ids, d->offsets[d->n] * sizeof *ids);
    for (int i = 0; i < d->n; i++) {
        c->lengths[c->n + i] = d->lengths[i];
        c->offsets[c->n + i + 1] = at + d->offsets[i + 1];
    }
    c->n = n;
    return true;
}

/* Consecutive chunks of `batch` sentences, each padded with [PAD] to its longest. */
static bool corpus_batch(corpus *c, int batch) {
    c->n_batches = (c->n + batch - 1) / batch;
    c->batch_at = malloc((size_t)c->n_batches * sizeof *c->batch_at);
    c->batch_t = malloc((size_t)c->n_batches * sizeof *c->batch_t);
    size_t total = 0;
    for (int k = 0; c->batch_t && k < c->n_batches; k++) {
        int T = 1;
        for (int i = k * batch; i < c->n && i < (k + 1) * batch; i++)
            if (c->lengths[i] > T) T = c->lengths[i];
        c->batch_t[k] = T;
        total += (size_t)batch * T;
    }
    c->batch_ids = malloc(total * sizeof *c->batch_ids);
    if (!c->batch_at || !c->batch_t || !c->batch_ids) return false;
    size_t at = 0;
    for (int k = 0; k < c->n_batches; k++) {
        c->batch_at[k] = at;
        for (int r = 0; r < batch; r++) {
            int i = k * batch + r, *row = c->batch_ids + at + (size_t)r * c->batch_t[k];
            for (int t = 0; t < c->batch_t[k]; t++)
                row[t] = i < c->n && t < c->lengths[i] ? c->ids[c->offsets[i] + t] : ATTN_PAD_ID;
        }
        at += (size_t)batch * c->batch_t[k];
    }
    return true;
}

static bool corpus_make(corpus *c, const options *o) {
    static const attn_set sets[ATTN_N_TEST_SETS] = {ATTN_SET_PLAIN, ATTN_SET_DISTRACTOR,
                                                    ATTN_SET_FILL4, ATTN_SET_FILL8};
    memset(c, 0, sizeof *c);
    for (int s = 0; s < ATTN_N_TEST_SETS; s++) {
        attn_dataset *d = NULL;
        attn_error err;
        if (attn_data_generate(sets[s], o->n, 1, &d, &err) != ATTN_OK) {
            fprintf(stderr, "infer_speed: %s\n", err.msg);
            return false;
        }
        bool ok = corpus_append(c, d);
        attn_dataset_free(d);
        if (!ok) return false;
    }
    return corpus_batch(c, o->batch);
}

/* ---- attn side -------------------------------------------------------------------------- */

/* One pass over all batches; logits[n]. A forward no backward follows, as evaluation runs it. */
static bool run_pass(attn_model *m, const corpus *c, int batch, float *logits) {
    attn_error err;
    for (int k = 0; k < c->n_batches; k++) {
        int B = c->n - k * batch < batch ? c->n - k * batch : batch;
        attn_batch b = {.B = B,
                        .T = c->batch_t[k],
                        .ids = c->batch_ids + c->batch_at[k],
                        .lengths = c->lengths + (size_t)k * batch};
        if (attn_model_forward_infer(m, &b, logits + (size_t)k * batch, &err) != ATTN_OK) {
            fprintf(stderr, "infer_speed: forward: %s\n", err.msg);
            return false;
        }
    }
    return true;
}

/* Exact mode: one sentence per forward. */
static bool run_single(attn_model *m, const corpus *c, float *logits) {
    attn_error err;
    for (int i = 0; i < c->n; i++) {
        attn_batch b = {
            .B = 1, .T = c->lengths[i], .ids = c->ids + c->offsets[i], .lengths = &c->lengths[i]};
        if (attn_model_forward(m, &b, &logits[i], &err) != ATTN_OK) {
            fprintf(stderr, "infer_speed: forward: %s\n", err.msg);
            return false;
        }
    }
    return true;
}

/* Largest |got - want| / max(1, |want|) and how many are bit-identical. */
static double worst_rel(const float *got, const float *want, int n, int *identical) {
    double worst = 0.0;
    *identical = 0;
    for (int i = 0; i < n; i++) {
        double e = fabs((double)got[i] - want[i]) / fmax(1.0, fabs((double)want[i]));
        if (!(e <= worst)) worst = e; /* NaN propagates */
        *identical += memcmp(&got[i], &want[i], sizeof(float)) == 0;
    }
    return worst;
}

/* o->reps timed passes after o->warmup. */
static bool time_passes(attn_model *m, const corpus *c, const options *o, float *logits,
                        timing *tm) {
    double *t = malloc(2 * (size_t)o->reps * sizeof *t), *cpu = t + o->reps;
    if (!t) return false;
    for (int r = 0; r < o->warmup + o->reps; r++) {
        double t0 = bench_now_s(CLOCK_MONOTONIC), c0 = bench_now_s(CLOCK_THREAD_CPUTIME_ID);
        if (!run_pass(m, c, o->batch, logits)) {
            free(t);
            return false;
        }
        if (r >= o->warmup) {
            t[r - o->warmup] = bench_now_s(CLOCK_MONOTONIC) - t0;
            cpu[r - o->warmup] = bench_now_s(CLOCK_THREAD_CPUTIME_ID) - c0;
        }
    }
    tm->med = bench_median(t, o->reps);
    tm->min = t[0];
    tm->cpu = bench_median(cpu, o->reps);
    free(t);
    return true;
}

/* ---- PyTorch side ----------------------------------------------------------------------- */

static bool write_ids(const corpus *c, const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) return false;
    for (int i = 0; i < c->n; i++)
        for (int t = 0; t < c->lengths[i]; t++)
            fprintf(f, "%d%c", c->ids[c->offsets[i] + t], t + 1 < c->lengths[i] ? ' ' : '\n');
    return fclose(f) == 0;
}

static bool read_logits(const char *path, float *logits, int n) {
    FILE *f = fopen(path, "r");
    if (!f) return false;
    int i = 0;
    while (i < n && fscanf(f, "%f", &logits[i]) == 1) i++;
    fclose(f);
    return i == n;
}

/* Writes n bytes of data to dir/name through a temporary file renamed into place (no half-written
 * file on failure). */
static bool write_file_atomic(const char *dir, const char *name, const void *data, size_t n) {
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    bool ok = f && fwrite(data, 1, n, f) == n;
    if (f) ok = fclose(f) == 0 && ok;
    ok = ok && rename(tmp, path) == 0;
    if (!ok) {
        fprintf(stderr, "infer_speed: --dump: cannot write %s\n", path);
        remove(tmp);
    }
    return ok;
}

/* --dump: DIR/ids.txt, the sentences as token ids. */
static bool dump_ids(const corpus *c, const char *dir) {
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/ids.txt", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    bool ok = write_ids(c, tmp) && rename(tmp, path) == 0;
    if (!ok) {
        fprintf(stderr, "infer_speed: --dump: cannot write %s\n", path);
        remove(tmp);
    }
    return ok;
}

/* Reads "torch ... median_s=X min_s=Y cpu_median_s=Z" from the script's output. */
static bool parse_torch_line(const char *line, timing *tm) {
    const char *m = strstr(line, " median_s="), *n = strstr(line, " min_s="),
               *c = strstr(line, " cpu_median_s=");
    return strncmp(line, "torch ", 6) == 0 && m && n && c &&
           sscanf(m, " median_s=%lf", &tm->med) == 1 && sscanf(n, " min_s=%lf", &tm->min) == 1 &&
           sscanf(c, " cpu_median_s=%lf", &tm->cpu) == 1;
}

/* Runs tools/bench_infer_torch.py on the same sentences; fills its times and logits[n]. */
static bool torch_run(const options *o, const char *weights, const corpus *c, float *logits,
                      timing *tm) {
    char ids_path[] = "/tmp/attn_infer_ids_XXXXXX", out_path[] = "/tmp/attn_infer_logits_XXXXXX";
    int fd1 = mkstemp(ids_path), fd2 = fd1 < 0 ? -1 : mkstemp(out_path);
    if (fd1 >= 0) close(fd1);
    if (fd2 >= 0) close(fd2);
    bool ok = fd1 >= 0 && fd2 >= 0 && write_ids(c, ids_path);
    if (ok) {
        char cmd[8192];
        snprintf(cmd, sizeof cmd,
                 "/usr/bin/python3 '%s/tools/bench_infer_torch.py' --weights '%s' --ids '%s' "
                 "--batch %d --reps %d --warmup %d --threads 1 --logits '%s'",
                 o->src, weights, ids_path, o->batch, o->reps, o->warmup, out_path);
        fflush(stdout);
        FILE *p = popen(cmd, "r");
        char line[512];
        bool found = false;
        while (p && fgets(line, sizeof line, p)) found = parse_torch_line(line, tm) || found;
        ok = p && pclose(p) == 0 && found && read_logits(out_path, logits, c->n);
        if (!ok) fprintf(stderr, "infer_speed: %s failed\n", cmd);
    }
    if (fd1 >= 0) unlink(ids_path);
    if (fd2 >= 0) unlink(out_path);
    return ok;
}

/* ---- one model -------------------------------------------------------------------------- */

static void print_timing(const char *arch, const char *who, const timing *tm, int n) {
    printf("%-5s %-5s: %8.0f sentences/s  (per pass of %d: median %.6f s, min %.6f s, "
           "CPU median %.6f s)\n",
           arch, who, n / tm->med, n, tm->med, tm->min, tm->cpu);
}

/* Validates batched logits against batch 1 and counts one pass's multiply-adds. */
static bool validate_attn(attn_model *m, const corpus *c, const options *o, const char *arch,
                          float *batched, float *single, uint64_t *madds) {
    if (!run_pass(m, c, o->batch, batched) || !run_single(m, c, single)) return false;
    int same = 0;
    double e = worst_rel(batched, single, c->n, &same);
    printf("%-5s validate: batch %d vs batch 1: %d/%d identical, worst rel %.2g (<= %.0e)\n", arch,
           o->batch, same, c->n, e, BATCH_REL);
    attn_flop_counts fc = {0};
    attn_flops_set_counter(&fc);
    bool ok = e <= BATCH_REL && run_pass(m, c, o->batch, batched);
    attn_flops_set_counter(NULL);
    *madds = 0;
    for (int t = 0; t < ATTN_OP_COUNT; t++) *madds += fc.fwd_madds[t];
    return ok;
}

/* PyTorch's run, its logits validated against attn's batched ones, and the ratios. */
static bool compare_torch(const options *o, const char *arch, const char *weights, const corpus *c,
                          const float *batched, float *scratch, const timing *mine) {
    timing tm;
    if (!torch_run(o, weights, c, scratch, &tm)) return false;
    int same = 0;
    double e = worst_rel(batched, scratch, c->n, &same);
    printf("%-5s validate: attn vs PyTorch batched: %d/%d identical, worst rel %.2g (<= %.0e)\n",
           arch, same, c->n, e, BATCH_REL);
    if (!(e <= BATCH_REL)) return false;
    print_timing(arch, "torch", &tm, c->n);
    const double ratio = tm.cpu / mine->cpu;
    printf("%-5s attn / PyTorch: %.2fx by CPU time, %.2fx by wall median, %.2fx by wall min  "
           "%s (target >= %.1fx by CPU time)\n",
           arch, ratio, tm.med / mine->med, tm.min / mine->min,
           ratio >= TARGET_RATIO ? "PASS" : "MISS", TARGET_RATIO);
    return true;
}

/* Validates and times one architecture (and PyTorch's run of it with --torch). */
static bool bench_model(const options *o, const char *arch, const corpus *c) {
    char weights[4096];
    snprintf(weights, sizeof weights, "%s/weights/%s-seed1.json", o->src, arch);
    attn_model *m = NULL;
    attn_error err;
    char tmp_weights[] = "/tmp/infer_speed_XXXXXX";
    bool tmp_made = false;
    if (access(weights, R_OK) != 0) {
        /* no committed weights: the seed-1 initialisation, in a file PyTorch can load */
        attn_arch a;
        int fd = mkstemp(tmp_weights);
        if (fd < 0) {
            fprintf(stderr, "infer_speed: cannot create %s\n", tmp_weights);
            return false;
        }
        close(fd);
        tmp_made = true;
        attn_model_config mc;
        if (attn_arch_from_name(arch, &a, &err) == ATTN_OK &&
            (mc = attn_model_config_default(a), attn_model_create(&mc, 1, &m, &err) == ATTN_OK) &&
            attn_weights_save_json(m, false, tmp_weights, &err) == ATTN_OK) {
            printf("%-5s weights: %s missing, timing the seed-1 initialisation\n", arch, weights);
            if (o->dump) { /* the same initialisation for the other engines */
                char kept[4096];
                snprintf(kept, sizeof kept, "%s/%s.weights.json", o->dump, arch);
                if (attn_weights_save_json(m, false, kept, &err) != ATTN_OK) {
                    fprintf(stderr, "infer_speed: %s: %s\n", arch, err.msg);
                    attn_model_free(m);
                    remove(tmp_weights);
                    return false;
                }
            }
            snprintf(weights, sizeof weights, "%s", tmp_weights);
        } else {
            fprintf(stderr, "infer_speed: %s: %s\n", arch, err.msg);
            attn_model_free(m);
            remove(tmp_weights);
            return false;
        }
    } else if (attn_weights_load_json(weights, &m, &err) != ATTN_OK) {
        fprintf(stderr, "infer_speed: %s (run from the source tree or pass --src)\n", err.msg);
        return false;
    }
    float *batched = malloc((size_t)c->n * sizeof(float));
    float *scratch = malloc((size_t)c->n * sizeof(float));
    uint64_t madds = 0;
    timing tm;
    bool ok = batched && scratch && validate_attn(m, c, o, arch, batched, scratch, &madds) &&
              time_passes(m, c, o, batched, &tm);
    if (ok) {
        print_timing(arch, "attn", &tm, c->n);
        printf("%-5s attn : %.1f M multiply-adds per pass (attn_sgemm counter), %.2f GFLOP/s\n",
               arch, 1e-6 * (double)madds, 2e-9 * (double)madds / tm.med);
    }
    if (ok && o->dump) {
        char name[64];
        snprintf(name, sizeof name, "%s.attn.f32", arch);
        ok = write_file_atomic(o->dump, name, batched, (size_t)c->n * sizeof(float));
    }
    if (ok && o->torch) ok = compare_torch(o, arch, weights, c, batched, scratch, &tm);
    if (!ok) fprintf(stderr, "infer_speed: %s: validation or run failed\n", arch);
    free(batched);
    free(scratch);
    attn_model_free(m);
    if (tmp_made) remove(tmp_weights);
    return ok;
}

/* ---- main ------------------------------------------------------------------------------- */

static void usage(FILE *f) {
    fprintf(f, "Usage: infer_speed [--model rnn|gru|lstm|transformer|all] [--torch] [--quick]\n"
               "                   [--batch B] [--n N] [--reps R] [--src DIR] [--dump DIR]\n\n"
               "Batched eval speed (sentences/s) of the four classifiers on the four test sets,\n"
               "validated against batch 1 (and PyTorch) first.\n\n"
               "  --model M  rnn, gru, lstm, transformer or all (default all); weights\n"
               "             DIR/weights/M-seed1.json (missing: the seed-1 initialisation)\n"
               "  --torch    also time PyTorch (tools/bench_infer_torch.py via /usr/bin/python3)\n"
               "             and print the attn / PyTorch ratio measured in this run\n"
               "  --quick    smoke test: --n 100 --reps 3\n"
               "  --batch B  sentences per forward (default 256)\n"
               "  --n N      sentences per test set (default 1000)\n"
               "  --reps R   timed passes (default 9), after 2 warm-up passes\n"
               "  --src DIR  source tree (default .)\n"
               "  --dump DIR write DIR/ids.txt (the sentences) and DIR/M.attn.f32 (attn's logits,\n"
               "             float32) for bench/peers.sh; DIR must exist\n"
               "  -h, --help this text\n\n"
               "Exit codes: 0 ok, 1 validation or runtime failure, 2 usage.\n");
}

/* Parses argv into o; returns -1 to go on, else the exit code. */
static int parse(int argc, char **argv, options *o) {
    *o = (options){.model = "all", .src = ".", .batch = 256, .n = 1000, .reps = 9, .warmup = 2};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int *num = NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--torch") == 0) {
            o->torch = true;
        } else if (strcmp(a, "--quick") == 0) {
            o->n = 100;
            o->reps = 3;
        } else if (strcmp(a, "--model") == 0 && v) {
            o->model = argv[++i];
        } else if (strcmp(a, "--src") == 0 && v) {
            o->src = argv[++i];
        } else if (strcmp(a, "--dump") == 0 && v) {
            o->dump = argv[++i];
        } else if (strcmp(a, "--batch") == 0 && v) {
            num = &o->batch;
        } else if (strcmp(a, "--n") == 0 && v) {
            num = &o->n;
        } else if (strcmp(a, "--reps") == 0 && v) {
            num = &o->reps;
        } else {
            fprintf(stderr, "infer_speed: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
        if (num) {
            char *end;
            long x = strtol(argv[++i], &end, 10);
            if (*end || x < 1 || x > MAX_SENTENCES) {
                fprintf(stderr, "infer_speed: %s '%s': expected 1..%d\n", a, argv[i],
                        MAX_SENTENCES);
                return 2;
            }
            *num = (int)x;
        }
    }
    if (strcmp(o->model, "rnn") && strcmp(o->model, "gru") && strcmp(o->model, "lstm") &&
        strcmp(o->model, "transformer") && strcmp(o->model, "all")) {
        fprintf(stderr, "infer_speed: --model '%s': expected rnn, gru, lstm, transformer or all\n",
                o->model);
        return 2;
    }
    return -1;
}

int main(int argc, char **argv) {
    options o;
    int code = parse(argc, argv, &o);
    if (code >= 0) return code;
    bench_one_blas_thread(argv);
    corpus c;
    if (!corpus_make(&c, &o)) {
        fprintf(stderr, "infer_speed: out of memory or bad data\n");
        corpus_free(&c);
        return 1;
    }
    if (o.dump && !dump_ids(&c, o.dump)) {
        corpus_free(&c);
        return 1;
    }
    printf("infer_speed: %d sentences (4 test sets x %d), batch %d, 1 thread, BLAS %s\n", c.n, o.n,
           o.batch, attn_blas_corename());
    static const char *const archs[] = {"rnn", "gru", "lstm", "transformer"};
    bool ok = true;
    for (int a = 0; a < 4; a++) {
        if (strcmp(o.model, "all") && strcmp(o.model, archs[a])) continue;
        ok = bench_model(&o, archs[a], &c) && ok;
    }
    corpus_free(&c);
    return ok ? 0 : 1;
}

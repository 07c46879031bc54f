/* peers_seq2seq.c -- attn's side of bench/peers.sh for the seq2seq models: greedy decoding at
 * batch 1, tokens per second, and the tokens and per-step logits the other engines are compared
 * against.
 *
 * Loads --weights (an attn-seq2seq-weights-v1 file: weights/seq2seq-ARCH-seed1.json), draws the
 * sources of the four rewrite test sets of seed 1 (--n each, the pairs `attn data --task rewrite
 * --set plain|distractor|fill4|fill8` prints), and decodes every source alone with
 * attn_seq2seq_greedy and the KV cache (as `attn generate`), up to max_tgt_len - 1 words; --reps
 * timed passes after one untimed one, the wall-clock median and the median of the process's CPU
 * time per pass. Tokens = steps taken ([EOS] included). Library default kernels, one thread.
 *
 * Writes DIR/s2s.ids.txt (the sources, ids per line), DIR/NAME.attn.tok (each source's output
 * words, ids per line) and DIR/NAME.attn.f32 (every step's logits, float32 host order, source
 * by source, step by step) and prints one line for bench/peers_table.py:
 *   peer name=attn sources=100 tokens=1077 reps=2 median_s=0.02 cpu_median_s=0.02
 *
 * Usage: build/bench/peers_seq2seq --weights FILE --name NAME --dump DIR [--n N] [--reps R]
 * Exit codes: 0 ok, 1 runtime error, 2 usage. */
#include "attn.h"
#include "attn_seq2seq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "bench_time.h"

#define MAX_N    10000
#define MAX_REPS 1000

static int parse_int(const char *s, int lo, int hi, int *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > hi) return 0;
    *out = (int)v;
    return 1;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: peers_seq2seq --weights FILE --name NAME --dump DIR [--n N] [--reps R]\n"
            "  --n N     sources per test set (1..%d, default 25)\n"
            "  --reps R  timed passes (1..%d, default 2)\n",
            MAX_N, MAX_REPS);
}

typedef struct run {
    attn_seq2seq *m;
    attn_pairs *sets[ATTN_N_TEST_SETS];
    int *out, *n_out, *n_steps;
    float *logits;
} run;

static void run_free(run *r) {
    attn_seq2seq_free(r->m);
    for (int k = 0; k < ATTN_N_TEST_SETS; k++) attn_pairs_free(r->sets[k]);
    free(r->out);
    free(r->n_out);
    free(r->n_steps);
    free(r->logits);
}

/* Writes the sources, the output words and the logits of the last pass. */
static int write_outputs(const run *r, const char *dir, const char *name, int n, int max_out,
                         int vt) {
    char p_ids[4096], p_tok[4096], p_f32[4096];
    snprintf(p_ids, sizeof p_ids, "%s/s2s.ids.txt", dir);
    snprintf(p_tok, sizeof p_tok, "%s/%s.attn.tok", dir, name);
    snprintf(p_f32, sizeof p_f32, "%s/%s.attn.f32", dir, name);
    FILE *fi = fopen(p_ids, "w"), *ft = fopen(p_tok, "w"), *ff = fopen(p_f32, "wb");
    int ok = fi && ft && ff;
    for (int i = 0; ok && i < n; i++) {
        const attn_dataset *d = r->sets[i / (n / ATTN_N_TEST_SETS)]->src;
        int k = i % (n / ATTN_N_TEST_SETS);
        for (int t = 0; t < d->lengths[k]; t++)
            fprintf(fi, "%s%d", t ? " " : "", d->ids[d->offsets[k] + (size_t)t]);
        fputc('\n', fi);
        for (int t = 0; t < r->n_out[i]; t++)
            fprintf(ft, "%s%d", t ? " " : "", r->out[(size_t)i * max_out + t]);
        fputc('\n', ft);
        size_t cnt = (size_t)r->n_steps[i] * (size_t)vt;
        if (fwrite(r->logits + (size_t)i * (max_out + 1) * vt, sizeof(float), cnt, ff) != cnt)
            ok = 0;
    }
    if (fi && fclose(fi) != 0) ok = 0;
    if (ft && fclose(ft) != 0) ok = 0;
    if (ff && fclose(ff) != 0) ok = 0;
    if (!ok) fprintf(stderr, "peers_seq2seq: cannot write %s, %s or %s\n", p_ids, p_tok, p_f32);
    return ok;
}

static int bench(run *r, const char *weights, const char *name, const char *dir, int per,
                 int reps) {
    attn_error err;
    static const attn_set sets[ATTN_N_TEST_SETS] = {ATTN_SET_PLAIN, ATTN_SET_DISTRACTOR,
                                                    ATTN_SET_FILL4, ATTN_SET_FILL8};
    if (attn_seq2seq_load_json(weights, &r->m, &err) != ATTN_OK) {
        fprintf(stderr, "peers_seq2seq: %s: %s\n", weights, err.msg);
        return 1;
    }
    for (int k = 0; k < ATTN_N_TEST_SETS; k++)
        if (attn_pairs_generate(ATTN_TASK_REWRITE, sets[k], per, 1, &r->sets[k], &err) != ATTN_OK) {
            fprintf(stderr, "peers_seq2seq: %s\n", err.msg);
            return 1;
        }
    const attn_seq2seq_config *cfg = attn_seq2seq_config_of(r->m);
    const int n = per * ATTN_N_TEST_SETS, max_out = cfg->max_tgt_len - 1, vt = cfg->tgt_vocab;
    r->out = malloc(sizeof(int) * (size_t)n * (size_t)max_out);
    r->n_out = calloc((size_t)n, sizeof(int));
    r->n_steps = calloc((size_t)n, sizeof(int));
    r->logits = malloc(sizeof(float) * (size_t)n * (size_t)(max_out + 1) * (size_t)vt);
    if (!r->out || !r->n_out || !r->n_steps || !r->logits) {
        fprintf(stderr, "peers_seq2seq: out of memory\n");
        return 1;
    }
    double walls[MAX_REPS], cpus[MAX_REPS];
    long tokens = 0;
    for (int rep = 0; rep < reps + 1; rep++) {
        double t0 = bench_now_s(CLOCK_MONOTONIC), c0 = bench_now_s(CLOCK_PROCESS_CPUTIME_ID);
        tokens = 0;
        for (int i = 0; i < n; i++) {
            const attn_dataset *d = r->sets[i / per]->src;
            const int *ids = d->ids + d->offsets[i % per];
            if (attn_seq2seq_greedy(r->m, ids, d->lengths[i % per], max_out, true,
                                    r->out + (size_t)i * max_out, &r->n_out[i],
                                    r->logits + (size_t)i * (max_out + 1) * vt, &r->n_steps[i],
                                    &err) != ATTN_OK) {
                fprintf(stderr, "peers_seq2seq: source %d: %s\n", i + 1, err.msg);
                return 1;
            }
            tokens += r->n_steps[i];
        }
        if (rep > 0) {
            walls[rep - 1] = bench_now_s(CLOCK_MONOTONIC) - t0;
            cpus[rep - 1] = bench_now_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
        }
    }
    if (!write_outputs(r, dir, name, n, max_out, vt)) return 1;
    printf("peer name=attn sources=%d tokens=%ld reps=%d median_s=%.6f cpu_median_s=%.6f\n", n,
           tokens, reps, bench_median(walls, reps), bench_median(cpus, reps));
    return 0;
}

int main(int argc, char **argv) {
    const char *weights = NULL, *name = NULL, *dir = NULL;
    int per = 25, reps = 2;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (v && strcmp(a, "--weights") == 0) {
            weights = v;
        } else if (v && strcmp(a, "--name") == 0) {
            name = v;
        } else if (v && strcmp(a, "--dump") == 0) {
            dir = v;
        } else if (v && strcmp(a, "--n") == 0) {
            if (!parse_int(v, 1, MAX_N, &per)) {
                fprintf(stderr, "peers_seq2seq: --n takes 1..%d, not '%s'\n", MAX_N, v);
                return 2;
            }
        } else if (v && strcmp(a, "--reps") == 0) {
            if (!parse_int(v, 1, MAX_REPS, &reps)) {
                fprintf(stderr, "peers_seq2seq: --reps takes 1..%d, not '%s'\n", MAX_REPS, v);
                return 2;
            }
        } else {
            fprintf(stderr, "peers_seq2seq: unknown option or missing value '%s'\n", a);
            usage(stderr);
            return 2;
        }
        i++;
    }
    if (!weights || !name || !dir) {
        usage(stderr);
        return 2;
    }
    bench_one_blas_thread(argv);
    run r;
    memset(&r, 0, sizeof r);
    int code = bench(&r, weights, name, dir, per, reps);
    run_free(&r);
    return code;
}

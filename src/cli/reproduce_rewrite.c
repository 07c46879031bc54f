/* reproduce_rewrite.c -- `attn reproduce --task rewrite`: the three seq2seq models for seeds
 * 1..N (cmd_reproduce.c parses the options and hands over), in -j worker processes or, under
 * mpirun, one run after another over every rank; exact match per test set and by source length
 * per model (the Bahdanau picture, docs/decoder.md). */
#define _DEFAULT_SOURCE /* realpath */
#include "attn_seq2seq.h"
#include "reproduce_cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <unistd.h>

#define MAX_SEEDS   CLI_REPRO_S2S_MAX_SEEDS
#define N_MODELS    3
#define N_BUCKETS   6 /* source words 1-10, ..., 41-50, 51+ */
#define BUCKET_WORD 10

static const attn_set SETS[ATTN_N_TEST_SETS] = {ATTN_SET_PLAIN, ATTN_SET_DISTRACTOR, ATTN_SET_FILL4,
                                                ATTN_SET_FILL8};
/* Table order: one vector, attention, the Transformer; and each model's default epochs (the GRU
 * models are measured at these, docs/decoder.md). */
static const attn_s2s_arch MODELS[N_MODELS] = {ATTN_S2S_GRU, ATTN_S2S_ATTN, ATTN_S2S_TRANSFORMER};
static const int DEFAULT_EPOCHS[N_MODELS] = {10, 4, 10};

typedef struct seed_result {
    bool ok;
    double set_exact[ATTN_N_TEST_SETS];
    long b_pairs[N_BUCKETS], b_exact[N_BUCKETS];
    size_t n_params;
} seed_result;

typedef struct repro {
    int seeds, epochs, train_size, test_size, holdout; /* epochs 0: each model's default */
    bool want[N_MODELS];
    bool base;       /* --size base: the seq2seq-transformer at the write-up's base sizes */
    attn_norm norm;  /* --norm: the seq2seq-transformer's LayerNorm placement */
    attn_pool *pool; /* under mpirun: every run spans the ranks (else NULL: worker processes) */
    const char *out;
    seed_result r[N_MODELS][MAX_SEEDS];
    int job_model[N_MODELS * MAX_SEEDS], job_seed[N_MODELS * MAX_SEEDS]; /* seed 0-based */
    int failed;
} repro;

static int epochs_of(const repro *o, int model) {
    return o->epochs > 0 ? o->epochs : o->base ? 1 : DEFAULT_EPOCHS[model];
}

/* The model of a run: each arch's default, or §6's base Transformer (d_model 512, 8 heads, FFN
 * 2048, 6 encoder and 6 decoder layers; 44 M parameters at the task's vocabularies). */
static attn_seq2seq_config model_of(const repro *o, int model) {
    attn_seq2seq_config mc = attn_seq2seq_config_default(MODELS[model]);
    if (o->base) mc.d_model = 512, mc.n_heads = 8, mc.ffn_dim = 2048, mc.enc_layers = 6;
    if (o->base) mc.dec_layers = 6;
    if (MODELS[model] == ATTN_S2S_TRANSFORMER) mc.norm = o->norm;
    return mc;
}

/* DIR/<model>-seed<S>.json; at the base size DIR/<model>-base-seed<S>.safetensors (mapped in
 * milliseconds where the JSON text would be 600 MB). */
static void weights_path(const repro *o, const char *dir, int model, uint64_t s, char *path,
                         size_t size) {
    snprintf(path, size, "%s/%s%s-seed%llu.%s", dir, attn_s2s_arch_name(MODELS[model]),
             o->base ? "-base" : "", (unsigned long long)s, o->base ? "safetensors" : "json");
}

/* Trains model `model` for seed s, writes its weights, scores the test sets. */
/* One stderr line per epoch of a run, so that minutes of training are not silent. */
typedef struct epoch_note {
    const char *model;
    uint64_t seed;
} epoch_note;

static bool note_epoch(const attn_s2s_epoch_stats *st, void *user) {
    const epoch_note *n = user;
    char held[64] = "no held-out pairs";
    if (!isnan(st->holdout_exact))
        snprintf(held, sizeof held, "held-out exact match %.1f%%", 100.0 * st->holdout_exact);
    fprintf(stderr, "  %s seed %llu: epoch %d/%d, loss %.4f, %s (%.1f s)\n", n->model,
            (unsigned long long)n->seed, st->epoch, st->epochs, st->loss, held, st->elapsed_s);
    return true;
}

static attn_status run_seed(const repro *o, int model, uint64_t s, seed_result *r,
                            attn_error *err) {
    attn_pairs *train = NULL, *held = NULL;
    attn_seq2seq *m = NULL;
    attn_s2s_train_config tc = attn_s2s_train_config_default();
    tc.epochs = epochs_of(o, model);
    tc.holdout = o->holdout;
    if (MODELS[model] != ATTN_S2S_TRANSFORMER) tc.adam.lr = ATTN_S2S_RNN_LR;
    tc.seed = s;
    const attn_seq2seq_config mc = model_of(o, model);
    char path[4096];
    weights_path(o, o->out, model, s, path, sizeof path);
    attn_status st =
        attn_pairs_generate(ATTN_TASK_REWRITE, ATTN_SET_TRAIN, o->train_size, s, &train, err);
    if (st == ATTN_OK && tc.holdout > 0)
        st = attn_pairs_generate(ATTN_TASK_REWRITE, ATTN_SET_HOLDOUT, tc.holdout, s, &held, err);
    if (st == ATTN_OK) st = attn_seq2seq_create(&mc, s, &m, err);
    if (st == ATTN_OK && cli_mpi_root()) /* a base-size epoch takes minutes: say what runs */
        fprintf(stderr, "  %s seed %llu: %zu parameters, %d epoch%s of %d pairs, %d held out\n",
                attn_s2s_arch_name(MODELS[model]), (unsigned long long)s, attn_seq2seq_n_params(m),
                tc.epochs, tc.epochs == 1 ? "" : "s", o->train_size, tc.holdout);
    epoch_note note = {attn_s2s_arch_name(MODELS[model]), s};
    const attn_s2s_callbacks cb = {note_epoch, &note};
    if (st == ATTN_OK) st = attn_seq2seq_train_pool(m, train, held, &tc, &cb, NULL, o->pool, err);
    const bool writes = cli_mpi_root(); /* over ranks: rank 0 writes and scores */
    if (st == ATTN_OK && writes)
        st = o->base ? attn_seq2seq_save_safetensors(m, path, err)
                     : attn_seq2seq_save_json(m, false, false, path, err);
    for (int k = 0; st == ATTN_OK && writes && o->test_size > 0 && k < ATTN_N_TEST_SETS; k++) {
        attn_pairs *t = NULL;
        st = attn_pairs_generate(ATTN_TASK_REWRITE, SETS[k], o->test_size, s, &t, err);
        long exact = 0;
        for (int i = 0; st == ATTN_OK && i < t->src->n; i++) {
            attn_s2s_eval ev;
            st = attn_seq2seq_evaluate(m, t, i, 1, &ev, err);
            const int len = t->src->lengths[i];
            const int b =
                len > BUCKET_WORD * (N_BUCKETS - 1) ? N_BUCKETS - 1 : (len - 1) / BUCKET_WORD;
            exact += ev.exact == 1.0;
            r->b_pairs[b]++, r->b_exact[b] += ev.exact == 1.0;
        }
        if (st == ATTN_OK) r->set_exact[k] = (double)exact / t->src->n;
        attn_pairs_free(t);
    }
    if (m) r->n_params = attn_seq2seq_n_params(m);
    attn_seq2seq_free(m);
    attn_pairs_free(train);
    attn_pairs_free(held);
    if (st == ATTN_OK && writes)
        fprintf(stderr,
                "  %s seed %llu: plain %.1f%%, distractor %.1f%%, fill4 %.1f%%, fill8 %.1f%% -> "
                "%s\n",
                attn_s2s_arch_name(MODELS[model]), (unsigned long long)s, 100 * r->set_exact[0],
                100 * r->set_exact[1], 100 * r->set_exact[2], 100 * r->set_exact[3], path);
    return st;
}

/* ---- the worker pool: job j trains job_model[j] for seed job_seed[j] + 1 --------------------- */

static int job_run(cli_pool *p, int job, void *ctx) {
    const repro *o = ctx;
    seed_result r;
    memset(&r, 0, sizeof r);
    attn_error err;
    attn_set_num_threads(1);
    if (run_seed(o, o->job_model[job], (uint64_t)o->job_seed[job] + 1, &r, &err) != ATTN_OK) {
        cli_fail("reproduce", &err);
        return CLI_ERROR;
    }
    char line[1024];
    int n = snprintf(line, sizeof line, "%zu", r.n_params);
    for (int k = 0; k < ATTN_N_TEST_SETS; k++)
        n += snprintf(line + n, sizeof line - (size_t)n, " %.17g", r.set_exact[k]);
    for (int b = 0; b < N_BUCKETS; b++)
        n += snprintf(line + n, sizeof line - (size_t)n, " %ld %ld", r.b_pairs[b], r.b_exact[b]);
    cli_pool_send(p, "%s", line);
    return CLI_OK;
}

static void job_line(int job, const char *line, void *ctx) {
    repro *o = ctx;
    seed_result *r = &o->r[o->job_model[job]][o->job_seed[job]];
    char *end;
    r->n_params = (size_t)strtoull(line, &end, 10);
    for (int k = 0; k < ATTN_N_TEST_SETS; k++) r->set_exact[k] = strtod(end, &end);
    for (int b = 0; b < N_BUCKETS; b++) {
        r->b_pairs[b] = strtol(end, &end, 10);
        r->b_exact[b] = strtol(end, &end, 10);
    }
    r->ok = true;
}

static void job_exit(int job, int status, void *ctx) {
    repro *o = ctx;
    if (status != 0 || !o->r[o->job_model[job]][o->job_seed[job]].ok) o->failed++;
}

/* ---- under mpirun: the runs one after another, each over every rank ------------------------- */

/* Every rank trains each run's share of micro-batches (the same bytes as one process: attn
 * train's range-owner step, docs/mpi.md); rank 0 writes the weights and scores the test sets. */
static int run_over_ranks(repro *o, int n) {
    int threads = 1;
    int rc = cli_train_threads_start("reproduce", &threads, &o->pool);
    if (rc >= 0) return rc;
    attn_set_num_threads(1);
    for (int j = 0; j < n && rc < 0; j++) {
        seed_result *r = &o->r[o->job_model[j]][o->job_seed[j]];
        attn_error err;
        if (run_seed(o, o->job_model[j], (uint64_t)o->job_seed[j] + 1, r, &err) != ATTN_OK)
            rc = cli_fail("reproduce", &err);
        r->ok = rc < 0;
    }
    attn_pool_free(o->pool);
    o->pool = NULL;
    return rc < 0 ? CLI_OK : rc;
}

/* ---- tables --------------------------------------------------------------------------------- */

/* "99.2-100%" (or "100%" when every seed agrees) of xs[n]; "-" for none. */
static void range_text(char *buf, size_t size, const double *xs, int n) {
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++) lo = fmin(lo, xs[i]), hi = fmax(hi, xs[i]);
    char a[24], b[24];
    snprintf(a, sizeof a, "%.1f", 100 * lo);
    snprintf(b, sizeof b, "%.1f", 100 * hi);
    if (n == 0 || isnan(lo))
        snprintf(buf, size, "-");
    else if (strcmp(a, b) == 0)
        snprintf(buf, size, "%s%%", a);
    else
        snprintf(buf, size, "%s-%s%%", a, b);
}

/* The label and one cell per wanted model, columns of 21, no trailing blanks. */
static void print_cells(const repro *o, const char *label, char cells[N_MODELS][64]) {
    char line[256];
    int n = snprintf(line, sizeof line, "%-28s", label);
    for (int k = 0; k < N_MODELS; k++)
        if (o->want[k] && n < (int)sizeof line)
            n += snprintf(line + n, sizeof line - (size_t)n, " %-20s", cells[k]);
    while (n > 0 && line[n - 1] == ' ') line[--n] = '\0';
    puts(line);
}

static void print_row(const repro *o, const char *label, double (*value)(const seed_result *, int),
                      int arg) {
    char cells[N_MODELS][64];
    for (int k = 0; k < N_MODELS; k++) {
        double xs[MAX_SEEDS];
        for (int s = 0; s < o->seeds; s++) xs[s] = value(&o->r[k][s], arg);
        range_text(cells[k], sizeof cells[k], xs, o->seeds);
    }
    print_cells(o, label, cells);
}

static double set_value(const seed_result *r, int k) {
    return r->set_exact[k];
}
static double bucket_value(const seed_result *r, int b) {
    return r->b_pairs[b] ? (double)r->b_exact[b] / r->b_pairs[b] : NAN;
}

static void print_tables(const repro *o) {
    char cells[N_MODELS][64];
    for (int k = 0; k < N_MODELS; k++)
        snprintf(cells[k], sizeof cells[k], "%s", attn_s2s_arch_name(MODELS[k]));
    char size[32], header[64];
    cli_fmt_thousands(size, sizeof size, (size_t)o->test_size);
    snprintf(header, sizeof header, "Test set (%s pairs each)", size);
    print_cells(o, header, cells);
    for (int k = 0; k < ATTN_N_TEST_SETS; k++) print_row(o, attn_set_name(SETS[k]), set_value, k);
    for (int k = 0; k < N_MODELS; k++) snprintf(cells[k], 64, "%zu", o->r[k][0].n_params);
    print_cells(o, "parameters", cells);
    for (int k = 0; k < N_MODELS; k++) snprintf(cells[k], 64, "%d", epochs_of(o, k));
    print_cells(o, "epochs", cells);
    printf("\nExact match by source length (the four test sets together, %d seed%s)\n", o->seeds,
           o->seeds > 1 ? "s" : "");
    int first = 0;
    while (first < N_MODELS && !o->want[first]) first++;
    for (int b = 0; b < N_BUCKETS; b++) {
        long pairs = 0; /* the same pairs for every model */
        for (int s = 0; s < o->seeds; s++) pairs += o->r[first][s].b_pairs[b];
        if (!pairs) continue;
        char label[48];
        if (b == N_BUCKETS - 1)
            snprintf(label, sizeof label, "%d+ words (%ld)", BUCKET_WORD * b + 1, pairs);
        else
            snprintf(label, sizeof label, "%d-%d words (%ld)", BUCKET_WORD * b + 1,
                     BUCKET_WORD * (b + 1), pairs);
        print_row(o, label, bucket_value, b);
    }
}

/* "seq2seq-gru,seq2seq-attn" -> want[]; the exit code on error, else -1. */
/* "identical to weights/: 9/9": each run's weights against weights/<model>-seed<S>.json, byte
 * for byte, when the run used the settings they were made with (each model's default epochs and
 * training size) and wrote somewhere else. */
static void compare_with_committed(const repro *o) {
    char a[PATH_MAX], b[PATH_MAX];
    if (realpath(o->out, a) && realpath("weights", b) && strcmp(a, b) == 0) return;
    if (o->base) {
        printf("identical to weights/: not compared (weights/ holds no base-size runs)\n");
        return;
    }
    if (o->epochs != 0 || o->train_size != ATTN_TRAIN_DEFAULT_N ||
        o->holdout != attn_s2s_train_config_default().holdout || o->norm != ATTN_NORM_PRE) {
        printf("identical to weights/: not compared (weights/ was made with each model's default "
               "--epochs, --train-size, --holdout and --norm)\n");
        return;
    }
    int same = 0, compared = 0;
    for (int k = 0; k < N_MODELS; k++)
        for (int s = 0; s < o->seeds && o->want[k]; s++) {
            char mine[4096], theirs[256];
            const char *name = attn_s2s_arch_name(MODELS[k]);
            snprintf(theirs, sizeof theirs, "weights/%s-seed%d.json", name, s + 1);
            snprintf(mine, sizeof mine, "%s/%s-seed%d.json", o->out, name, s + 1);
            if (access(theirs, R_OK) != 0) continue;
            compared++;
            same += cli_same_bytes(mine, theirs);
        }
    printf("identical to weights/: %d/%d\n", same, compared);
}

static int parse_models(const char *list, bool want[N_MODELS]) {
    memset(want, 0, N_MODELS * sizeof *want);
    char buf[256];
    if (snprintf(buf, sizeof buf, "%s", list) >= (int)sizeof buf)
        return cli_usage_error("reproduce", "--models: a list of at most %d bytes",
                               (int)sizeof buf - 1);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        attn_s2s_arch a;
        attn_error err;
        if (attn_s2s_arch_from_name(tok, &a, &err) != ATTN_OK)
            return cli_usage_error("reproduce", "--models: %s", err.msg);
        for (int k = 0; k < N_MODELS; k++) {
            if (MODELS[k] == a && want[k])
                return cli_usage_error("reproduce", "--models: \"%s\" given twice", tok);
            want[k] = want[k] || MODELS[k] == a;
        }
    }
    for (int k = 0; k < N_MODELS; k++)
        if (want[k]) return -1;
    return cli_usage_error("reproduce", "--models: no model named");
}

/* The wanted runs, the longest (the Transformer's) first, in -j workers or over the ranks;
 * then rank 0 prints the tables. */
static int run_jobs(repro *o, int workers) {
    int n = 0;
    for (int k = N_MODELS - 1; k >= 0; k--)
        for (int s = 0; s < o->seeds && o->want[k]; s++) o->job_model[n] = k, o->job_seed[n++] = s;
    if (cli_mpi_size() > 1) {
        const int rc = run_over_ranks(o, n);
        if (rc != CLI_OK) return cli_train_end(rc);
    } else {
        const cli_pool_hooks h = {job_run, job_line, job_exit, NULL, o};
        if (!cli_pool_run(n, workers, &h)) {
            cli_message("reproduce", "cannot start workers: %s", strerror(errno));
            return CLI_ERROR;
        }
    }
    if (!cli_mpi_root()) return CLI_OK; /* rank 0 prints */
    if (o->failed) {
        cli_message("reproduce", "%d run%s failed", o->failed, o->failed > 1 ? "s" : "");
        return CLI_ERROR;
    }
    print_tables(o);
    cli_print_kernels(); /* what the workers ran on: they inherit this process's selection */
    compare_with_committed(o);
    return cli_train_end(CLI_OK); /* over ranks: the exchanges' cost */
}

/* The options as cmd_reproduce.c parsed them, checked; then the runs. */
int cli_reproduce_rewrite(const cli_repro_args *a) {
    static repro o; /* large: the results table */
    memset(&o, 0, sizeof o);
    o.seeds = a->seeds, o.train_size = a->train_size, o.test_size = a->test_size;
    o.holdout = a->holdout, o.out = a->out;
    o.epochs = cli_given(a->spec, "--epochs") ? a->epochs : 0; /* 0: each model's default */
    const char *size = a->size ? a->size : "small", *norm = a->norm ? a->norm : "pre";
    if (strcmp(size, "small") != 0 && strcmp(size, "base") != 0)
        return cli_usage_error("reproduce", "--size %s: expected small or base", size);
    o.base = strcmp(size, "base") == 0;
    if (strcmp(norm, "pre") != 0 && strcmp(norm, "post") != 0)
        return cli_usage_error("reproduce", "--norm %s: expected pre or post", norm);
    o.norm = strcmp(norm, "post") == 0 ? ATTN_NORM_POST : ATTN_NORM_PRE;
    const char *models = a->models ? a->models
                         : o.base  ? "seq2seq-transformer"
                                   : "seq2seq-gru,seq2seq-attn,seq2seq-transformer";
    int rc = parse_models(models, o.want);
    if (rc >= 0) return rc;
    if (o.base && (o.want[0] || o.want[1]))
        return cli_usage_error("reproduce", "--size base: only seq2seq-transformer has a base "
                                            "size (--models seq2seq-transformer)");
    if ((rc = cli_reproduce_open_out(a)) != CLI_OK) return rc;
    return run_jobs(&o, a->workers);
}

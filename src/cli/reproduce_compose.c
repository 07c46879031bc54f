/* reproduce_compose.c -- `attn reproduce --task compose`: the seq2seq-transformer on the compose
 * task for seeds 1..N in -j worker processes (cmd_reproduce.c parses the options and hands
 * over), its samples judged by the grammar parser. */
#include "reproduce_cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SEEDS CLI_REPRO_S2S_MAX_SEEDS

typedef struct seed_result {
    bool ok;
    cli_compose_result r;
    size_t n_params;
} seed_result;

typedef struct compose_runs {
    const cli_repro_args *a;
    attn_model *classifier; /* NULL: none */
    seed_result r[MAX_SEEDS];
    int failed;
} compose_runs;

/* Trains seed s, writes its weights when --out is given, scores it. */
static int run_seed(const compose_runs *c, uint64_t s, seed_result *out) {
    const cli_repro_args *a = c->a;
    const char *dir = a->out;
    attn_error err;
    attn_pairs *train = NULL, *held = NULL;
    attn_seq2seq *m = NULL;
    attn_s2s_train_config tc = attn_s2s_train_config_default();
    tc.epochs = a->epochs;
    tc.holdout = a->holdout;
    tc.seed = s;
    tc.adam.lr = ATTN_COMPOSE_LR;
    attn_seq2seq_config mc = attn_seq2seq_config_default(ATTN_S2S_TRANSFORMER);
    attn_seq2seq_config_set_task(&mc, ATTN_TASK_COMPOSE);
    char path[4096] = "";
    if (dir)
        snprintf(path, sizeof path, "%s/compose-seq2seq-transformer-seed%llu.json", dir,
                 (unsigned long long)s);
    attn_status st =
        attn_pairs_generate(ATTN_TASK_COMPOSE, ATTN_SET_TRAIN, a->train_size, s, &train, &err);
    if (st == ATTN_OK && tc.holdout > 0)
        st = attn_pairs_generate(ATTN_TASK_COMPOSE, ATTN_SET_HOLDOUT, tc.holdout, s, &held, &err);
    if (st == ATTN_OK) st = attn_seq2seq_create(&mc, s, &m, &err);
    if (st == ATTN_OK) st = attn_seq2seq_train(m, train, held, &tc, NULL, &err);
    if (st == ATTN_OK && dir) st = attn_seq2seq_save_json(m, false, false, path, &err);
    int rc = st == ATTN_OK ? cli_compose_report("reproduce", m, s, a->test_size, train,
                                                c->classifier, &out->r)
                           : cli_fail("reproduce", &err);
    if (m) out->n_params = attn_seq2seq_n_params(m);
    attn_seq2seq_free(m);
    attn_pairs_free(train);
    attn_pairs_free(held);
    if (rc != CLI_OK) return rc;
    char buf[256];
    cli_compose_tally_text(&out->r.tally, buf, sizeof buf);
    fprintf(stderr, "  compose seq2seq-transformer seed %llu: %s%s%s\n", (unsigned long long)s, buf,
            dir ? " -> " : "", path);
    return CLI_OK;
}

/* "a-b" (or "a" when every seed agrees) of xs[n] with fmt ("%.1f%%", "%.4f"). */
static void range_text(char *buf, size_t size, const double *xs, int n, const char *fmt) {
    double lo = INFINITY, hi = -INFINITY; /* fmin and fmax skip NaN (nothing to measure) */
    for (int i = 0; i < n; i++) lo = fmin(lo, xs[i]), hi = fmax(hi, xs[i]);
    if (lo > hi) {
        snprintf(buf, size, "n/a");
        return;
    }
    char a[32], b[32];
    snprintf(a, sizeof a, fmt, lo);
    snprintf(b, sizeof b, fmt, hi);
    if (strcmp(a, b) == 0)
        snprintf(buf, size, "%s", a);
    else
        snprintf(buf, size, "%s - %s", a, b);
}

static void print_table(const seed_result *r, int seeds, const char *classifier) {
    static const attn_set sets[ATTN_N_TEST_SETS] = {ATTN_SET_PLAIN, ATTN_SET_DISTRACTOR,
                                                    ATTN_SET_FILL4, ATTN_SET_FILL8};
    char buf[96], label[64];
    double xs[MAX_SEEDS];
    printf("Compose (%d seed%s)                       seq2seq-transformer\n", seeds,
           seeds > 1 ? "s" : "");
    for (int k = 0; k < ATTN_N_TEST_SETS; k++) {
        for (int s = 0; s < seeds; s++) xs[s] = r[s].r.set_loss[k];
        range_text(buf, sizeof buf, xs, seeds, "%.4f");
        snprintf(label, sizeof label, "loss per target token, %s", attn_set_name(sets[k]));
        printf("%-40s %s\n", label, buf);
    }
    const char *names[4] = {"samples grammatical", "  with the polarity asked",
                            "  with the subject asked", "  novel (not a training sentence)"};
    for (int q = 0; q < 4; q++) {
        for (int s = 0; s < seeds; s++) {
            const cli_compose_tally *t = &r[s].r.tally;
            const long v = q == 0   ? t->grammatical
                           : q == 1 ? t->polarity
                           : q == 2 ? t->subject
                                    : t->novel;
            xs[s] = 100.0 * (double)v / (double)t->samples;
        }
        range_text(buf, sizeof buf, xs, seeds, "%.1f%%");
        printf("%-40s %s\n", names[q], buf);
    }
    if (classifier) {
        for (int q = 0; q < 2; q++) {
            for (int s = 0; s < seeds; s++) {
                const cli_compose_tally *t = &r[s].r.tally;
                const long of = q ? t->grammatical : t->samples;
                xs[s] = of ? 100.0 * (double)(q ? t->classifier_parse : t->classifier_asked) /
                                 (double)of
                           : NAN;
            }
            range_text(buf, sizeof buf, xs, seeds, "%.1f%%");
            printf("%-40s %s\n",
                   q ? "  classifier agrees with the parse" : "classifier reads the polarity asked",
                   buf);
        }
        printf("%-40s %s\n", "classifier", classifier);
    }
    printf("%-40s %ld per seed (%d per source, temperature 1)\n", "samples", r[0].r.tally.samples,
           CLI_COMPOSE_PER_SOURCE);
    printf("%-40s %zu\n", "parameters", r[0].n_params);
}

/* ---- the worker pool: job j is seed j + 1 ---------------------------------------------------- */

static int job_run(cli_pool *p, int job, void *ctx) {
    const compose_runs *c = ctx;
    seed_result r;
    memset(&r, 0, sizeof r);
    attn_set_num_threads(1);
    const int rc = run_seed(c, (uint64_t)job + 1, &r);
    if (rc != CLI_OK) return rc;
    const cli_compose_tally *t = &r.r.tally;
    cli_pool_send(p, "%zu %.17g %.17g %.17g %.17g %ld %ld %ld %ld %ld %ld %ld %ld", r.n_params,
                  r.r.set_loss[0], r.r.set_loss[1], r.r.set_loss[2], r.r.set_loss[3], t->samples,
                  t->grammatical, t->polarity, t->subject, t->novel, t->classifier_asked,
                  t->classifier_parse, t->classified);
    return CLI_OK;
}

static void job_line(int job, const char *line, void *ctx) {
    compose_runs *c = ctx;
    seed_result *r = &c->r[job];
    cli_compose_tally *t = &r->r.tally;
    char *end;
    r->n_params = (size_t)strtoull(line, &end, 10);
    for (int k = 0; k < ATTN_N_TEST_SETS; k++) r->r.set_loss[k] = strtod(end, &end);
    long *counts[8] = {&t->samples, &t->grammatical,      &t->polarity,         &t->subject,
                       &t->novel,   &t->classifier_asked, &t->classifier_parse, &t->classified};
    for (int q = 0; q < 8; q++) *counts[q] = strtol(end, &end, 10);
    r->ok = true;
}

static void job_exit(int job, int status, void *ctx) {
    compose_runs *c = ctx;
    if (status != 0 || !c->r[job].ok) c->failed++;
}

/* --classifier into c->classifier (its vocabulary must be the built-in one). -1, else the exit
 * code after the message. */
static int load_classifier(compose_runs *c) {
    const char *path = c->a->classifier;
    const attn_vocab *vocab = NULL;
    if (!path) return -1;
    const int rc = cli_load_weights("reproduce", path, &c->classifier, &vocab);
    if (rc >= 0) return rc;
    const bool builtin = attn_vocab_is_builtin(vocab);
    attn_vocab_free(vocab);
    if (builtin) return -1;
    attn_model_free(c->classifier);
    c->classifier = NULL;
    return cli_usage_error("reproduce",
                           "--classifier %s has its own vocabulary; the samples are words of the "
                           "built-in one",
                           path);
}

/* The options as cmd_reproduce.c parsed them; the seeds in -j workers, then the table. */
int cli_reproduce_compose(const cli_repro_args *a) {
    static compose_runs c; /* the results of every seed */
    memset(&c, 0, sizeof c);
    c.a = a;
    int rc = load_classifier(&c);
    if (rc >= 0) return rc;
    if ((rc = cli_reproduce_open_out(a)) != CLI_OK || !cli_mpi_root()) {
        attn_model_free(c.classifier); /* under mpirun rank 0 alone runs the seeds */
        return rc;
    }
    const cli_pool_hooks h = {job_run, job_line, job_exit, NULL, &c};
    rc = CLI_OK;
    if (!cli_pool_run(a->seeds, a->workers, &h))
        rc = cli_runtime_error("reproduce", "cannot start workers: %s", strerror(errno));
    else if (c.failed)
        rc = cli_runtime_error("reproduce", "%d run%s failed", c.failed, c.failed > 1 ? "s" : "");
    if (rc == CLI_OK) print_table(c.r, a->seeds, a->classifier);
    if (rc == CLI_OK) cli_print_kernels();
    attn_model_free(c.classifier);
    return rc;
}

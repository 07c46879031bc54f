/* runs.c -- "train and evaluate a run", the unit of the write-up's table, shared by
 * `attn reproduce` (trains, writes DIR/<model>-seed<S>.json) and `attn eval --table` (loads
 * it). Every run is a job of the worker pool: BLAS on one thread per process, so a run gives
 * bit-identical weights and accuracies however many run at once. */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct runs_ctx {
    const char *cmd;
    const cli_run_settings *s;
    cli_run_result *runs;
    int n;
    bool tty;
} runs_ctx;

typedef struct epoch_ctx {
    cli_pool *pool;
} epoch_ctx;

static bool send_epoch(const attn_epoch_stats *st, void *user) {
    epoch_ctx *e = user;
    cli_pool_send(e->pool, "E %d", st->epoch);
    return true;
}

/* Trains the run's model on its seed's data and writes it to path. */
static attn_status train_run(const cli_run_settings *s, const cli_run_result *r, const char *path,
                             cli_pool *pool, attn_pool *threads, attn_model **m, attn_error *err) {
    attn_dataset *train = NULL, *heldout = NULL;
    attn_trainer *t = NULL;
    attn_model_config mc = attn_model_config_default(r->arch);
    attn_train_config cfg = attn_train_config_default();
    cfg.epochs = s->epochs;
    cfg.seed = (uint64_t)r->seed;
    epoch_ctx e = {pool};
    attn_train_callbacks cb = {send_epoch, NULL, &e};
    attn_status st = attn_data_generate(ATTN_SET_TRAIN, s->train_size, cfg.seed, &train, err);
    if (st == ATTN_OK && cfg.holdout > 0)
        st = attn_data_generate(ATTN_SET_HOLDOUT, cfg.holdout, cfg.seed, &heldout, err);
    if (st == ATTN_OK) st = attn_model_create(&mc, cfg.seed, m, err);
    if (st == ATTN_OK) st = attn_trainer_create_heldout(*m, train, heldout, &cfg, &t, err);
    if (st == ATTN_OK) st = attn_trainer_set_pool(t, threads, err);
    if (st == ATTN_OK) st = attn_trainer_run(t, &cb, err);
    if (st == ATTN_OK) st = attn_weights_save_json(*m, false, path, err);
    attn_trainer_free(t);
    attn_dataset_free(train);
    attn_dataset_free(heldout);
    return st;
}

static attn_status load_run(const cli_run_result *r, const char *path, attn_model **m,
                            attn_error *err) {
    attn_status st = attn_weights_load_json(path, m, err);
    if (st == ATTN_OK && attn_model_config_of(*m)->arch != r->arch)
        st = attn_errorf(err, ATTN_ERR_VALUE, "%s holds a %s model", path,
                         attn_arch_name(attn_model_config_of(*m)->arch));
    return st;
}

/* The whole run of one (model, seed), in a worker process. */
static int run_job(cli_pool *pool, int job, void *user) {
    const runs_ctx *c = user;
    const cli_run_result *r = &c->runs[job];
    attn_error err = {0};
    attn_model *m = NULL;
    double acc[ATTN_N_TEST_SETS] = {0}, t0 = attn_seconds(), t1;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-seed%d.json", c->s->dir, attn_arch_name(r->arch), r->seed);
    /* this process's threads (made after the fork); the results do not depend on them */
    attn_pool *threads = NULL;
    attn_status st = c->s->threads > 1 ? attn_pool_create(c->s->threads, &threads, &err) : ATTN_OK;
    if (st == ATTN_OK)
        st = c->s->train ? train_run(c->s, r, path, pool, threads, &m, &err)
                         : load_run(r, path, &m, &err);
    t1 = attn_seconds();
    for (int s = 0; s < ATTN_N_TEST_SETS && st == ATTN_OK; s++) {
        attn_dataset *test = NULL;
        st = attn_data_generate(cli_test_sets[s], ATTN_TEST_DEFAULT_N, (uint64_t)r->seed, &test,
                                &err);
        if (st == ATTN_OK)
            st = attn_evaluate_pool(m, test, 0, test->n, c->s->batch, threads, &acc[s], &err);
        attn_dataset_free(test);
    }
    if (st == ATTN_OK)
        cli_pool_send(pool, "R %.9f %.9f %.9f %.9f %zu %.3f %.3f", acc[0], acc[1], acc[2], acc[3],
                      attn_model_n_params(m), t1 - t0, attn_seconds() - t1);
    else
        cli_pool_send(pool, "F %s", err.msg);
    attn_model_free(m);
    attn_pool_free(threads);
    return st == ATTN_OK ? 0 : 1;
}

static void print_done(const runs_ctx *c, const cli_run_result *r) {
    if (!c->s->progress) return;
    if (c->tty) fprintf(stderr, "\r\033[K");
    fprintf(stderr,
            "  %-11s seed %d: plain %.1f%%, distractor %.1f%%, fill4 %.1f%%, fill8 %.1f%% "
            "(train %.1f s, eval %.1f s)\n",
            attn_arch_name(r->arch), r->seed, 100 * r->acc[0], 100 * r->acc[1], 100 * r->acc[2],
            100 * r->acc[3], r->train_s, r->eval_s);
}

static void on_line(int job, const char *line, void *user) {
    runs_ctx *c = user;
    cli_run_result *r = &c->runs[job];
    if (line[0] == 'E') {
        sscanf(line + 1, "%d", &r->epoch);
    } else if (line[0] == 'R') {
        r->ok = sscanf(line + 1, "%lf %lf %lf %lf %zu %lf %lf", &r->acc[0], &r->acc[1], &r->acc[2],
                       &r->acc[3], &r->n_params, &r->train_s, &r->eval_s) == 7;
        if (r->ok)
            print_done(c, r);
        else
            snprintf(r->msg, sizeof r->msg, "garbled result line from the worker");
    } else if (line[0] == 'F') {
        snprintf(r->msg, sizeof r->msg, "%s", line[1] == ' ' ? line + 2 : line + 1);
    }
}

static void on_exit_job(int job, int status, void *user) {
    cli_run_result *r = &((runs_ctx *)user)->runs[job];
    if (r->ok || r->msg[0]) return;
    cli_pool_exit_reason(status, r->msg, sizeof r->msg);
}

/* "reproduce: 3/9 done, 12 s, running (model-seed:epoch) lstm-s1:4 rnn-s2:7" */
static void on_tick(double elapsed, void *user) {
    const runs_ctx *c = user;
    if (!c->s->progress || !c->tty) return;
    int done = 0;
    char running[256] = "";
    size_t used = 0;
    for (int i = 0; i < c->n; i++) {
        const cli_run_result *r = &c->runs[i];
        if (r->ok || r->msg[0])
            done++;
        else if (r->epoch > 0 && used < sizeof running - 40)
            used += (size_t)snprintf(running + used, sizeof running - used, " %s-s%d:%d",
                                     attn_arch_name(r->arch), r->seed, r->epoch);
    }
    fprintf(stderr, "\r%s: %d/%d done, %.0f s, running (model-seed:epoch)%s\033[K", c->cmd, done,
            c->n, elapsed, running);
    fflush(stderr);
}

void cli_runs_local(const char *cmd, const cli_run_settings *s, cli_run_result *runs, int n) {
    runs_ctx c = {cmd, s, runs, n, isatty(fileno(stderr)) == 1};
    cli_pool_hooks h = {run_job, on_line, on_exit_job, on_tick, &c};
    attn_set_num_threads(1); /* bit-identical runs on any core count */
    int workers = s->workers < n ? s->workers : n;
    if (n > 0 && !cli_pool_run(n, workers > 0 ? workers : 1, &h)) {
        for (int i = 0; i < n; i++)
            snprintf(runs[i].msg, sizeof runs[i].msg, "cannot start the worker pool");
        return;
    }
    if (s->progress && c.tty) fprintf(stderr, "\r\033[K");
}

int cli_parse_models(const char *cmd, const char *list, const char *dir, bool want[CLI_MAX_ARCH]) {
    for (int a = 0; a < CLI_MAX_ARCH; a++) want[a] = a < CLI_N_ARCH;
    if (!list) { /* the write-up's three, and the GRU where its weights are */
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s-seed1.json", dir ? dir : ".",
                 attn_arch_name(ATTN_ARCH_GRU));
        want[ATTN_ARCH_GRU] = dir && stat(path, &st) == 0;
        return -1;
    }
    char buf[256];
    if (snprintf(buf, sizeof buf, "%s", list) >= (int)sizeof buf)
        return cli_usage_error(cmd, "--models: list too long");
    for (int a = 0; a < CLI_MAX_ARCH; a++) want[a] = false;
    int n = 0;
    for (char *save = NULL, *name = strtok_r(buf, ",", &save); name;
         name = strtok_r(NULL, ",", &save), n++) {
        attn_arch a;
        if (attn_arch_from_name(name, &a, NULL) != ATTN_OK || (int)a >= CLI_MAX_ARCH)
            return cli_usage_error(cmd,
                                   "--models: unknown model \"%s\" (expected rnn, gru, lstm "
                                   "or transformer, comma-separated)",
                                   name);
        if (want[a]) return cli_usage_error(cmd, "--models: \"%s\" given twice", name);
        want[a] = true;
    }
    if (n == 0) return cli_usage_error(cmd, "--models: no model given");
    return -1;
}

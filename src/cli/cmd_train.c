/* cmd_train.c -- `attn train` (one model with Adam, progress per epoch, checkpoints) and
 * `attn reproduce` (RNN, LSTM and Transformer for several seeds in parallel worker processes,
 * then the write-up's accuracy table). Training runs BLAS on one thread, so the same command
 * gives bit-identical weights on any machine of the same kind; reproduce parallelises across
 * runs with fork(). */
#include "attn_kernels.h"
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void fmt_duration(char *buf, size_t n, double s) {
    if (!isfinite(s) || s < 0) s = 0;
    if (s < 60)
        snprintf(buf, n, "%.1fs", s);
    else if (s < 3600)
        snprintf(buf, n, "%dm%02ds", (int)s / 60, (int)s % 60);
    else
        snprintf(buf, n, "%dh%02dm", (int)s / 3600, ((int)s / 60) % 60);
}

/* ==== attn train ============================================================================ */

static void train_usage(void) {
    printf("Usage: attn train --model rnn|lstm|transformer --seed S [OPTIONS]\n\n"
           "Trains one model with Adam (PyTorch's defaults) on the course-review task and\n"
           "writes its weights as attn-weights-v1 JSON. The same command gives bit-identical\n"
           "weights on every run (BLAS runs on one thread).\n\n"
           "Options:\n"
           "  --model NAME        rnn, lstm or transformer (required unless --resume)\n"
           "  --seed S            seed of the data, the initialisation and the shuffling\n"
           "                      (default 1)\n"
           "  --epochs N          epochs (default 20); 0 writes the initial weights of the\n"
           "                      seed (or the --init weights) without training\n"
           "  --batch-size N      sentences per step (default 32)\n"
           "  --lr X              Adam learning rate (default 1e-3)\n"
           "  --train-size N      generated training sentences (default %d)\n"
           "  --holdout N         held-out sentences reported as held-out accuracy (default\n"
           "                      500; 0 = none): the generated holdout set of the seed (the\n"
           "                      training distribution, disjoint from the training set),\n"
           "                      or with --data the last N sentences of the file\n"
           "  --keep-best 0|1     1 (default): model selection, the weights written are those\n"
           "                      of the epoch with the best held-out accuracy (ties: the\n"
           "                      later epoch); 0: those of the last epoch\n"
           "  --bucket K          sort chunks of K batches by length (default 8; 1 = off)\n"
           "  --data FILE.tsv     train on a TSV file (label<TAB>sentence) instead\n"
           "  --init W.json       start from these weights (e.g. exported from PyTorch)\n"
           "  --out W.json        where to write the weights (default <model>-seed<S>.json)\n"
           "  --checkpoint C.json save the full training state after every epoch\n"
           "  --resume C.json     continue a checkpointed run (model, seed and settings come\n"
           "                      from the checkpoint; --epochs may extend it)\n"
           "  --log FILE.jsonl    one JSON line per epoch with the progress numbers\n\n"
           "Progress (epoch, loss, accuracies, speed, ETA) goes to stderr, one line per\n"
           "epoch. On NaN/Inf the error names the step and tensor, nothing is written and the\n"
           "exit code is 1.\n",
           ATTN_TRAIN_DEFAULT_N);
}

typedef struct train_progress {
    bool tty;
    FILE *log;
    const char *checkpoint;
    attn_trainer *trainer;
    attn_error err; /* a failed checkpoint or log write */
    bool failed;
} train_progress;

static void train_on_step(int epoch, int step, int steps, void *user) {
    const train_progress *p = user;
    if (!p->tty) return;
    fprintf(stderr, "\repoch %d: step %d/%d\033[K", epoch, step, steps);
    fflush(stderr);
}

static bool train_on_epoch(const attn_epoch_stats *st, void *user) {
    train_progress *p = user;
    char el[32], eta[32], ho[32];
    fmt_duration(el, sizeof el, st->elapsed_s);
    fmt_duration(eta, sizeof eta, st->eta_s);
    if (isnan(st->holdout_acc))
        snprintf(ho, sizeof ho, "-");
    else
        snprintf(ho, sizeof ho, "%.1f%%", 100.0 * st->holdout_acc);
    fprintf(stderr,
            "%sepoch %*d/%d  loss %.4f  train %.1f%%  held-out %s  %.0f sent/s  elapsed %s  "
            "ETA %s%s",
            p->tty ? "\r" : "", st->epochs >= 10 ? 2 : 1, st->epoch, st->epochs, st->loss,
            100.0 * st->train_acc, ho, st->sentences_per_s, el, eta, p->tty ? "\033[K\n" : "\n");
    if (p->log) {
        fprintf(p->log,
                "{\"epoch\": %d, \"epochs\": %d, \"steps\": %ld, \"loss\": %.9g, "
                "\"train_acc\": %.9g, \"holdout_acc\": ",
                st->epoch, st->epochs, st->steps, st->loss, st->train_acc);
        if (isnan(st->holdout_acc))
            fprintf(p->log, "null");
        else
            fprintf(p->log, "%.9g", st->holdout_acc);
        fprintf(p->log, ", \"sentences_per_s\": %.6g, \"elapsed_s\": %.6g, \"eta_s\": %.6g}\n",
                st->sentences_per_s, st->elapsed_s, st->eta_s);
        fflush(p->log);
    }
    if (p->checkpoint &&
        attn_trainer_save_checkpoint(p->trainer, p->checkpoint, &p->err) != ATTN_OK) {
        p->failed = true;
        return false;
    }
    return true;
}

/* attn train --epochs 0: the fresh model of the seed (or the --init weights), written untrained. */
static int write_initial_weights(const char *cmd, const attn_model_config *mc, uint64_t seed,
                                 const char *init_path, const char *out_path) {
    attn_error err = {0};
    attn_model *model = NULL;
    attn_status st = attn_model_create(mc, seed, &model, &err);
    if (st == ATTN_OK && init_path) st = attn_weights_load_into(model, init_path, &err);
    if (st == ATTN_OK) st = attn_weights_save_json(model, false, out_path, &err);
    attn_model_free(model);
    if (st != ATTN_OK) return cli_fail(cmd, &err);
    fprintf(stderr, "attn train: wrote %s (initial weights of seed %llu, not trained)\n", out_path,
            (unsigned long long)seed);
    return CLI_OK;
}

int cmd_train(int argc, char **argv) {
    const char *cmd = "train";
    if (cli_wants_help(argc, argv)) {
        train_usage();
        return CLI_OK;
    }
    const char *model_name = NULL, *data_path = NULL, *init_path = NULL, *out_path = NULL;
    const char *ckpt_path = NULL, *resume_path = NULL, *log_path = NULL;
    uint64_t seed = 1;
    bool seed_given = false, epochs_given = false, train_size_given = false;
    int train_size = ATTN_TRAIN_DEFAULT_N;
    attn_train_config cfg = attn_train_config_default();
    for (int i = 1; i < argc; i++) {
        bool matched = false;
        const char *v;
#define OPT(name) ((v = cli_opt_value(cmd, argc, argv, &i, name, &matched)) != NULL || matched)
        if (OPT("--model")) {
            model_name = v;
        } else if (OPT("--seed")) {
            if (!v || !cli_parse_u64(cmd, "--seed", v, &seed)) goto bad_value;
            seed_given = true;
        } else if (OPT("--epochs")) {
            if (!v || !cli_parse_int(cmd, "--epochs", v, 0, 100000, &cfg.epochs)) goto bad_value;
            epochs_given = true;
        } else if (OPT("--batch-size")) {
            if (!v || !cli_parse_int(cmd, "--batch-size", v, 1, 1 << 16, &cfg.batch_size))
                goto bad_value;
        } else if (OPT("--lr")) {
            float lr;
            if (!v || !cli_parse_float(cmd, "--lr", v, &lr)) goto bad_value;
            cfg.adam.lr = strtod(v, NULL); /* the decimal value, as Python would hold it */
            if (!(cfg.adam.lr > 0)) return cli_usage_error(cmd, "--lr must be positive");
        } else if (OPT("--train-size")) {
            if (!v || !cli_parse_int(cmd, "--train-size", v, 2, 10000000, &train_size))
                goto bad_value;
            train_size_given = true;
        } else if (OPT("--holdout")) {
            if (!v || !cli_parse_int(cmd, "--holdout", v, 0, 10000000, &cfg.holdout))
                goto bad_value;
        } else if (OPT("--keep-best")) {
            if (!v || !cli_parse_int(cmd, "--keep-best", v, 0, 1, &cfg.keep_best)) goto bad_value;
        } else if (OPT("--bucket")) {
            if (!v || !cli_parse_int(cmd, "--bucket", v, 1, 1 << 16, &cfg.bucket)) goto bad_value;
        } else if (OPT("--data")) {
            data_path = v;
        } else if (OPT("--init")) {
            init_path = v;
        } else if (OPT("--out")) {
            out_path = v;
        } else if (OPT("--checkpoint")) {
            ckpt_path = v;
        } else if (OPT("--resume")) {
            resume_path = v;
        } else if (OPT("--log")) {
            log_path = v;
        } else {
            return cli_usage_error(cmd, "unknown option '%s'", argv[i]);
        }
#undef OPT
        if (!v) return CLI_USAGE; /* cli_opt_value named the missing value */
        continue;
    bad_value: /* the missing value or the parse error was printed */
        return CLI_USAGE;
    }

    attn_error err = {0};
    attn_model_config mc;
    if (resume_path) {
        attn_train_config saved;
        int n_saved = 0;
        if (attn_checkpoint_peek(resume_path, &mc, &saved, &n_saved, &err) != ATTN_OK)
            return cli_fail(cmd, &err);
        if (model_name && strcmp(model_name, attn_arch_name(mc.arch)) != 0)
            return cli_usage_error(cmd, "--model %s, but %s holds a %s model", model_name,
                                   resume_path, attn_arch_name(mc.arch));
        if (init_path) return cli_usage_error(cmd, "--init and --resume exclude each other");
        if (epochs_given && cfg.epochs == 0)
            return cli_usage_error(cmd, "--epochs 0 writes initial weights; not with --resume");
        if (epochs_given) saved.epochs = cfg.epochs;
        if (!train_size_given) train_size = n_saved; /* the same generated data */
        cfg = saved;
        seed = cfg.seed;
    } else {
        if (!model_name) return cli_usage_error(cmd, "--model is required");
        attn_arch arch;
        if (attn_arch_from_name(model_name, &arch, &err) != ATTN_OK)
            return cli_usage_error(cmd, "%s", err.msg);
        mc = attn_model_config_default(arch);
        cfg.seed = seed;
    }
    (void)seed_given;
    char default_out[64];
    if (!out_path) {
        snprintf(default_out, sizeof default_out, "%s-seed%llu.json", attn_arch_name(mc.arch),
                 (unsigned long long)seed);
        out_path = default_out;
    }

    if (cfg.epochs == 0) return write_initial_weights(cmd, &mc, seed, init_path, out_path);

    attn_set_num_threads(1); /* bit-identical training on any core count */
    int rc = CLI_ERROR;
    attn_dataset *data = NULL, *heldout = NULL;
    attn_model *model = NULL;
    attn_trainer *trainer = NULL;
    FILE *log = NULL;
    attn_status st;
    if (data_path) {
        st = attn_dataset_read_tsv(data_path, &data, &err);
    } else {
        st = attn_data_generate(ATTN_SET_TRAIN, train_size, seed, &data, &err);
        if (st == ATTN_OK && cfg.holdout > 0)
            st = attn_data_generate(ATTN_SET_HOLDOUT, cfg.holdout, seed, &heldout, &err);
    }
    if (st == ATTN_OK) st = attn_model_create(&mc, seed, &model, &err);
    if (st == ATTN_OK && init_path) st = attn_weights_load_into(model, init_path, &err);
    if (st == ATTN_OK) st = attn_trainer_create_heldout(model, data, heldout, &cfg, &trainer, &err);
    if (st == ATTN_OK && resume_path) st = attn_trainer_load_checkpoint(trainer, resume_path, &err);
    if (st != ATTN_OK) {
        rc = cli_fail(cmd, &err);
        goto done;
    }
    if (log_path && !(log = fopen(log_path, resume_path ? "a" : "w"))) {
        fprintf(stderr, "attn train: %s: cannot open: %s\n", log_path, strerror(errno));
        goto done;
    }
    train_progress prog = {.tty = isatty(fileno(stderr)) == 1,
                           .log = log,
                           .checkpoint = ckpt_path,
                           .trainer = trainer};
    fprintf(stderr,
            "attn train: %s, %zu parameters, %d training + %d held-out sentences, "
            "%d epochs from epoch %d, batch %d, lr %g, seed %llu\n",
            attn_arch_name(mc.arch), attn_model_n_params(model),
            heldout ? data->n : data->n - cfg.holdout, cfg.holdout, cfg.epochs,
            attn_trainer_epoch(trainer) + 1, cfg.batch_size, cfg.adam.lr, (unsigned long long)seed);
    attn_train_callbacks cb = {train_on_epoch, train_on_step, &prog};
    st = attn_trainer_run(trainer, &cb, &err);
    if (st != ATTN_OK) {
        if (prog.tty) fprintf(stderr, "\n");
        rc = cli_fail(cmd, &err);
        goto done;
    }
    if (prog.failed) {
        rc = cli_fail(cmd, &prog.err);
        goto done;
    }
    if (attn_weights_save_json(model, false, out_path, &err) != ATTN_OK) {
        rc = cli_fail(cmd, &err);
        goto done;
    }
    double best_acc = 0.0;
    int best_epoch = attn_trainer_best_epoch(trainer, &best_acc);
    if (best_epoch > 0)
        fprintf(stderr, "attn train: kept epoch %d (best held-out accuracy %.1f%%)\n", best_epoch,
                100.0 * best_acc);
    fprintf(stderr, "attn train: wrote %s\n", out_path);
    rc = CLI_OK;
done:
    if (log) fclose(log);
    attn_trainer_free(trainer);
    attn_model_free(model);
    attn_dataset_free(data);
    attn_dataset_free(heldout);
    return rc;
}

/* ==== attn reproduce ======================================================================== */

static void reproduce_usage(void) {
    printf("Usage: attn reproduce [--seeds N] [-j N] [--out DIR] [--epochs N] [--train-size N]\n"
           "\n"
           "Trains the RNN, the LSTM and the Transformer for seeds 1..N (default 3) in\n"
           "parallel worker processes (BLAS on one thread each), evaluates every run on the\n"
           "four %d-sentence test sets of its seed (plain, distractor, fill4, fill8) in exact\n"
           "mode (one sentence per forward, as PyTorch), and prints the write-up's table:\n"
           "accuracy range across seeds per test set and model, parameter counts, wall time.\n\n"
           "Options:\n"
           "  --seeds N       seeds 1..N (default 3)\n"
           "  -j N            worker processes (default: the number of cores)\n"
           "  --out DIR       weights/<model>-seed<S>.json and reproduce.json go here\n"
           "                  (default weights)\n"
           "  --epochs N      epochs per run (default 20)\n"
           "  --train-size N  training sentences per seed, the last 500 held out (default %d)\n"
           "                  Each run keeps the weights of its epoch with the best held-out\n"
           "                  accuracy (ties: the later epoch), as attn train --keep-best 1.\n"
           "  --eval-batch N  sentences per forward in the evaluation (default 1 = exact)\n",
           ATTN_TEST_DEFAULT_N, ATTN_TRAIN_DEFAULT_N);
}

#define N_ARCH    CLI_N_ARCH
#define MAX_SEEDS 100

typedef struct job {
    attn_arch arch;
    int seed;
    pid_t pid;
    int state; /* 0 waiting, 1 running, 2 done, 3 failed */
    int epoch;
    double acc[ATTN_N_TEST_SETS];
    double holdout_acc;
    size_t n_params;
    double train_s, eval_s;
    char msg[512];
} job;

typedef struct repro_opts {
    int seeds, jobs, epochs, train_size, eval_batch;
    const char *out_dir;
} repro_opts;

typedef struct worker_ctx {
    int fd, job;
} worker_ctx;

/* One line per write(): pipe writes up to PIPE_BUF bytes are atomic, so workers' lines never
 * interleave. */
static void send_line(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void send_line(int fd, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (n > (int)sizeof buf - 2) n = (int)sizeof buf - 2;
    for (int i = 0; i < n; i++)
        if (buf[i] == '\n') buf[i] = ' ';
    buf[n++] = '\n';
    ssize_t w;
    do w = write(fd, buf, (size_t)n);
    while (w < 0 && errno == EINTR);
}

static bool worker_on_epoch(const attn_epoch_stats *st, void *user) {
    const worker_ctx *w = user;
    send_line(w->fd, "E %d %d %.6f %.6f", w->job, st->epoch, st->loss, st->holdout_acc);
    return true;
}

/* The whole run of one (model, seed) in a worker process; reports through the pipe. */
static int run_worker(const repro_opts *o, const job *jb, int idx, int fd) {
    attn_error err = {0};
    attn_dataset *train = NULL, *test = NULL, *heldout = NULL;
    attn_model *m = NULL;
    attn_trainer *t = NULL;
    double acc[ATTN_N_TEST_SETS] = {0}, t0 = now_s(), t1 = t0;
    char path[4096];
    attn_model_config mc = attn_model_config_default(jb->arch);
    attn_train_config cfg = attn_train_config_default();
    cfg.epochs = o->epochs;
    cfg.seed = (uint64_t)jb->seed;
    worker_ctx w = {fd, idx};
    attn_train_callbacks cb = {worker_on_epoch, NULL, &w};
    attn_status st = attn_data_generate(ATTN_SET_TRAIN, o->train_size, cfg.seed, &train, &err);
    if (st == ATTN_OK && cfg.holdout > 0)
        st = attn_data_generate(ATTN_SET_HOLDOUT, cfg.holdout, cfg.seed, &heldout, &err);
    if (st == ATTN_OK) st = attn_model_create(&mc, cfg.seed, &m, &err);
    if (st == ATTN_OK) st = attn_trainer_create_heldout(m, train, heldout, &cfg, &t, &err);
    if (st == ATTN_OK) st = attn_trainer_run(t, &cb, &err);
    if (st == ATTN_OK) {
        t1 = now_s();
        snprintf(path, sizeof path, "%s/%s-seed%d.json", o->out_dir, attn_arch_name(jb->arch),
                 jb->seed);
        st = attn_weights_save_json(m, false, path, &err);
    }
    for (int s = 0; s < ATTN_N_TEST_SETS && st == ATTN_OK; s++) {
        st = attn_data_generate(cli_test_sets[s], ATTN_TEST_DEFAULT_N, cfg.seed, &test, &err);
        if (st == ATTN_OK) st = attn_evaluate(m, test, 0, test->n, o->eval_batch, &acc[s], &err);
        attn_dataset_free(test);
        test = NULL;
    }
    if (st == ATTN_OK)
        send_line(fd, "R %d %.9f %.9f %.9f %.9f %zu %.3f %.3f", idx, acc[0], acc[1], acc[2], acc[3],
                  attn_model_n_params(m), t1 - t0, now_s() - t1);
    else
        send_line(fd, "F %d %s", idx, err.msg);
    attn_trainer_free(t);
    attn_model_free(m);
    attn_dataset_free(train);
    attn_dataset_free(heldout);
    return st == ATTN_OK ? 0 : 1;
}

/* Handles one line from a worker; returns the job index it finished (done or failed), or -1. */
static int handle_line(job *jobs, int n_jobs, char *line) {
    char kind = line[0];
    int idx = -1, consumed = 0;
    if (sscanf(line + 1, "%d%n", &idx, &consumed) != 1 || idx < 0 || idx >= n_jobs) return -1;
    job *j = &jobs[idx];
    const char *rest = line + 1 + consumed;
    if (kind == 'E') {
        double loss;
        sscanf(rest, "%d %lf %lf", &j->epoch, &loss, &j->holdout_acc);
        return -1;
    }
    if (kind == 'R') {
        if (sscanf(rest, "%lf %lf %lf %lf %zu %lf %lf", &j->acc[0], &j->acc[1], &j->acc[2],
                   &j->acc[3], &j->n_params, &j->train_s, &j->eval_s) == 7) {
            j->state = 2;
            return idx;
        }
        snprintf(j->msg, sizeof j->msg, "garbled result line");
        j->state = 3;
        return idx;
    }
    if (kind == 'F') {
        snprintf(j->msg, sizeof j->msg, "%s", rest[0] == ' ' ? rest + 1 : rest);
        j->state = 3;
        return idx;
    }
    return -1;
}

typedef struct pipe_reader {
    int fd;
    job *jobs;
    int n_jobs;
    bool tty;
    char buf[8192];
    size_t have;
} pipe_reader;

/* Waits up to timeout_ms for worker output, handles the complete lines read and reports
 * finished runs; returns the bytes read (0 if none). */
static ssize_t pump(pipe_reader *p, int timeout_ms) {
    struct pollfd pfd = {p->fd, POLLIN, 0};
    if (poll(&pfd, 1, timeout_ms) <= 0 || !(pfd.revents & POLLIN)) return 0;
    ssize_t r = read(p->fd, p->buf + p->have, sizeof p->buf - 1 - p->have);
    if (r <= 0) return 0;
    p->have += (size_t)r;
    p->buf[p->have] = 0;
    char *line = p->buf, *nl;
    while ((nl = strchr(line, '\n'))) {
        *nl = 0;
        int done = handle_line(p->jobs, p->n_jobs, line);
        if (done >= 0) {
            const job *j = &p->jobs[done];
            if (p->tty) fprintf(stderr, "\r\033[K");
            if (j->state == 2)
                fprintf(stderr,
                        "  %-11s seed %d: plain %.1f%%, distractor %.1f%%, fill4 %.1f%%, "
                        "fill8 %.1f%% (train %.1fs, eval %.1fs)\n",
                        attn_arch_name(j->arch), j->seed, 100 * j->acc[0], 100 * j->acc[1],
                        100 * j->acc[2], 100 * j->acc[3], j->train_s, j->eval_s);
            else
                fprintf(stderr, "  %-11s seed %d: FAILED: %s\n", attn_arch_name(j->arch), j->seed,
                        j->msg);
        }
        line = nl + 1;
    }
    p->have = (size_t)(p->buf + p->have - line);
    memmove(p->buf, line, p->have);
    if (p->have == sizeof p->buf - 1) p->have = 0; /* an overlong line: drop it */
    return r;
}

static void print_status(const job *jobs, int n_jobs, double elapsed, bool tty) {
    if (!tty) return;
    int done = 0;
    char running[256] = "";
    size_t used = 0;
    for (int i = 0; i < n_jobs; i++) {
        if (jobs[i].state >= 2) done++;
        if (jobs[i].state == 1 && used < sizeof running - 40)
            used += (size_t)snprintf(running + used, sizeof running - used, " %s-s%d:%d",
                                     attn_arch_name(jobs[i].arch), jobs[i].seed, jobs[i].epoch);
    }
    fprintf(stderr, "\rreproduce: %d/%d done, %.0fs, running (model-seed:epoch)%s\033[K", done,
            n_jobs, elapsed, running);
    fflush(stderr);
}

/* reproduce.json, written atomically (path.tmp, fsync, rename). */
static int write_report(const repro_opts *o, const job *jobs, int n_jobs, double wall,
                        const char *path) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "attn reproduce: %s: cannot create: %s\n", tmp, strerror(errno));
        return CLI_ERROR;
    }
    fprintf(f,
            "{\n  \"epochs\": %d,\n  \"train_size\": %d,\n  \"seeds\": %d,\n"
            "  \"workers\": %d,\n  \"eval_batch\": %d,\n  \"wall_seconds\": %.3f,\n"
            "  \"runs\": [\n",
            o->epochs, o->train_size, o->seeds, o->jobs, o->eval_batch, wall);
    for (int i = 0; i < n_jobs; i++) {
        const job *j = &jobs[i];
        fprintf(f, "    {\"model\": \"%s\", \"seed\": %d, \"params\": %zu, ",
                attn_arch_name(j->arch), j->seed, j->n_params);
        fprintf(f, "\"train_seconds\": %.3f, \"eval_seconds\": %.3f, \"accuracy\": {", j->train_s,
                j->eval_s);
        for (int s = 0; s < ATTN_N_TEST_SETS; s++)
            fprintf(f, "%s\"%s\": %.6f", s ? ", " : "", attn_set_name(cli_test_sets[s]), j->acc[s]);
        fprintf(f, "}, \"weights\": \"%s/%s-seed%d.json\"}%s\n", o->out_dir,
                attn_arch_name(j->arch), j->seed, i + 1 < n_jobs ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
    bool ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        fprintf(stderr, "attn reproduce: %s: write failed: %s\n", path, strerror(errno));
        remove(tmp);
        return CLI_ERROR;
    }
    return CLI_OK;
}

/* Stores an option's string value; true, so it chains like the cli_parse_* helpers. */
static bool set_str(const char **dst, const char *v) {
    *dst = v;
    return true;
}

int cmd_reproduce(int argc, char **argv) {
    const char *cmd = "reproduce";
    if (cli_wants_help(argc, argv)) {
        reproduce_usage();
        return CLI_OK;
    }
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    repro_opts o = {.seeds = 3,
                    .jobs = ncpu > 0 ? (int)ncpu : 1,
                    .epochs = 20,
                    .train_size = ATTN_TRAIN_DEFAULT_N,
                    .eval_batch = 1,
                    .out_dir = "weights"};
    for (int i = 1; i < argc; i++) {
        bool m = false;
        const char *v;
        bool ok = true;
#define ROPT(name) ((v = cli_opt_value(cmd, argc, argv, &i, name, &m)) != NULL || m)
        if (ROPT("--seeds"))
            ok = v && cli_parse_int(cmd, "--seeds", v, 1, MAX_SEEDS, &o.seeds);
        else if (ROPT("-j"))
            ok = v && cli_parse_int(cmd, "-j", v, 1, 1024, &o.jobs);
        else if (ROPT("--out"))
            ok = (v != NULL) && set_str(&o.out_dir, v);
        else if (ROPT("--epochs"))
            ok = v && cli_parse_int(cmd, "--epochs", v, 1, 100000, &o.epochs);
        else if (ROPT("--train-size"))
            ok = v && cli_parse_int(cmd, "--train-size", v, 501, 10000000, &o.train_size);
        else if (ROPT("--eval-batch"))
            ok = v && cli_parse_int(cmd, "--eval-batch", v, 1, 100000, &o.eval_batch);
        else if (strncmp(argv[i], "-j", 2) == 0 && argv[i][2])
            ok = cli_parse_int(cmd, "-j", argv[i] + 2, 1, 1024, &o.jobs);
        else
            return cli_usage_error(cmd, "unknown option '%s'", argv[i]);
#undef ROPT
        if (!ok) return CLI_USAGE;
    }
    if (mkdir(o.out_dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "attn reproduce: %s: cannot create directory: %s\n", o.out_dir,
                strerror(errno));
        return CLI_ERROR;
    }

    /* Longest runs first so the last worker to finish is a short one. */
    int n_jobs = N_ARCH * o.seeds;
    job *jobs = calloc((size_t)n_jobs, sizeof *jobs);
    if (!jobs) {
        fprintf(stderr, "attn reproduce: out of memory\n");
        return CLI_ERROR;
    }
    static const attn_arch order[N_ARCH] = {ATTN_ARCH_TRANSFORMER, ATTN_ARCH_LSTM, ATTN_ARCH_RNN};
    for (int a = 0, k = 0; a < N_ARCH; a++)
        for (int s = 1; s <= o.seeds; s++, k++) {
            jobs[k].arch = order[a];
            jobs[k].seed = s;
            jobs[k].holdout_acc = NAN;
        }
    if (o.jobs > n_jobs) o.jobs = n_jobs;

    int fds[2];
    if (pipe(fds) != 0) {
        fprintf(stderr, "attn reproduce: pipe: %s\n", strerror(errno));
        free(jobs);
        return CLI_ERROR;
    }
    attn_set_num_threads(1);
    bool tty = isatty(fileno(stderr)) == 1;
    fprintf(stderr,
            "attn reproduce: %d runs (rnn, lstm, transformer x seeds 1..%d), %d epochs, "
            "%d training sentences, %d worker%s\n",
            n_jobs, o.seeds, o.epochs, o.train_size, o.jobs, o.jobs == 1 ? "" : "s");
    fflush(stderr);
    double start = now_s();
    int next = 0, running = 0, finished = 0;
    pipe_reader pp = {.fd = fds[0], .jobs = jobs, .n_jobs = n_jobs, .tty = tty};
    while (finished < n_jobs) {
        while (running < o.jobs && next < n_jobs) {
            fflush(NULL);
            pid_t pid = fork();
            if (pid < 0) {
                fprintf(stderr, "\nattn reproduce: fork: %s\n", strerror(errno));
                jobs[next].state = 3;
                snprintf(jobs[next].msg, sizeof jobs[next].msg, "fork failed");
                next++;
                finished++;
                continue;
            }
            if (pid == 0) {
                close(fds[0]);
                _exit(run_worker(&o, &jobs[next], next, fds[1]));
            }
            jobs[next].pid = pid;
            jobs[next].state = 1;
            next++;
            running++;
        }
        pump(&pp, 250);
        /* Reap finished workers; one that died without a result line has failed. */
        int status;
        pid_t pid;
        while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
            for (int i = 0; i < n_jobs; i++) {
                if (jobs[i].pid != pid) continue;
                jobs[i].pid = 0;
                running--;
                finished++;
                while (pump(&pp, 0) > 0) {
                } /* its result line was written before it exited */
                if (jobs[i].state == 1) {
                    jobs[i].state = 3;
                    snprintf(jobs[i].msg, sizeof jobs[i].msg, "worker exited (status %d)", status);
                }
            }
        }
        print_status(jobs, n_jobs, now_s() - start, tty);
    }
    double wall = now_s() - start;
    close(fds[0]);
    close(fds[1]);
    if (tty) fprintf(stderr, "\r\033[K");

    /* The table: rows = test sets, columns = models, cells = range across seeds. */
    int failures = 0;
    cli_run_result results[N_ARCH * MAX_SEEDS];
    for (int i = 0; i < n_jobs; i++) {
        failures += jobs[i].state != 2;
        results[i] = (cli_run_result){.arch = jobs[i].arch,
                                      .seed = jobs[i].seed,
                                      .ok = jobs[i].state == 2,
                                      .n_params = jobs[i].n_params};
        memcpy(results[i].acc, jobs[i].acc, sizeof results[i].acc);
    }
    cli_print_results_table(stdout, results, n_jobs);
    char wall_s[32];
    fmt_duration(wall_s, sizeof wall_s, wall);
    printf("\nTotal wall time: %s (%.1f s; %d runs of %d epochs on %d workers)\n", wall_s, wall,
           n_jobs, o.epochs, o.jobs);
    char report[4096];
    snprintf(report, sizeof report, "%s/reproduce.json", o.out_dir);
    int rc = write_report(&o, jobs, n_jobs, wall, report);
    if (rc == CLI_OK) fprintf(stderr, "attn reproduce: wrote %s and the weights\n", report);
    if (failures) {
        fprintf(stderr, "attn reproduce: %d of %d runs failed\n", failures, n_jobs);
        rc = CLI_ERROR;
    }
    free(jobs);
    return rc;
}

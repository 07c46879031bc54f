/* cmd_sweep.c -- `attn sweep`: trains and evaluates every point of a grid of options
 * (attn_sweep.h) on worker processes and, under mpirun, on every rank (points r, r+N, ...);
 * rank 0 gathers the results in point order and writes DIR/runs.jsonl (one line per run),
 * DIR/summary.md (mean and spread over seeds; also on stdout) and one chart per swept option,
 * only when every run succeeded. No timing enters those bytes: they are the same for any -j and
 * any number of ranks. */
#include "attn_plot.h"
#include "attn_sweep.h"
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char about[] =
    "Trains model M at every point of the grid and evaluates it on the four test sets of its\n"
    "seed (plain, distractor, fill4, fill8): one line of JSON per run, a table of the mean and\n"
    "spread over seeds per point, and a chart of accuracy against each swept option.\n"
    "Runs go to -j worker processes; under `mpirun -np N attn sweep ...` also to N ranks\n"
    "(docs/mpi.md). The output is the same, byte for byte, for any -j and any N.";

static const char notes[] =
    "GRID and SETTINGS are NAME=VALUES words: VALUES a comma-separated list, an integer item\n"
    "may be a range A..B (seed=1..10); SETTINGS give one value each. The names: embed-dim,\n"
    "hidden (rnn, lstm, gru), heads, ffn-dim, max-len, norm (post|pre), activation (relu|gelu),\n"
    "pos (learned|sinusoidal|none|rope|alibi) (transformer), layers, seed, epochs, batch, lr,\n"
    "warmup, train-size, holdout (0: none, the last epoch is kept); what is not given keeps\n"
    "`attn train`'s default (seed 1; the seed's 500 held-out sentences pick the best epoch).\n"
    "Every point is checked before any run starts.\n\n"
    "Writes DIR/runs.jsonl ({\"run\", \"point\", \"model\", \"options\", \"parameters\",\n"
    "\"accuracy\": {set: fraction}, \"mean_accuracy\"}), DIR/summary.md, DIR/accuracy-vs-NAME.png\n"
    "per swept option (seed aside; the band is the range over seeds) and DIR/timings.tsv (wall\n"
    "times, which differ from run to run). Nothing is written when a run fails; its message\n"
    "names the run and, under mpirun, the rank and host it failed on.\n\n"
    "Example: attn sweep --model transformer --grid 'embed-dim=16,32 heads=1,2 seed=1..5'\n"
    "         --epochs 5 --out runs/sweep";

typedef struct sweep_args {
    const char *model, *grid, *set, *out;
    int epochs, workers, test_size, eval_batch;
} sweep_args;

/* One run's result as it travels from a worker (pipe) and a rank (MPI) to rank 0. */
typedef struct run_msg {
    bool ok;
    attn_sweep_result r;
    char msg[512];
} run_msg;

typedef struct sweep_ctx {
    const attn_sweep *s;
    const int *points; /* [n] this rank's points */
    run_msg *msgs;     /* [n] */
    int n, n_total;
} sweep_ctx;

static int run_job(cli_pool *pool, int job, void *user) {
    const sweep_ctx *c = user;
    attn_sweep_result r;
    attn_error err = {0};
    attn_status st = attn_sweep_run_point(c->s, c->points[job], &r, &err);
    if (st == ATTN_OK)
        cli_pool_send(pool, "R %a %a %a %a %zu %a %a", r.acc[0], r.acc[1], r.acc[2], r.acc[3],
                      r.n_params, r.train_s, r.eval_s);
    else
        cli_pool_send(pool, "F %s", err.msg);
    return st == ATTN_OK ? 0 : 1;
}

static void on_line(int job, const char *line, void *user) {
    const sweep_ctx *c = user;
    run_msg *m = &c->msgs[job];
    attn_sweep_result *r = &m->r;
    if (line[0] == 'R') {
        m->ok = sscanf(line + 1, "%la %la %la %la %zu %la %la", &r->acc[0], &r->acc[1], &r->acc[2],
                       &r->acc[3], &r->n_params, &r->train_s, &r->eval_s) == 7;
        if (!m->ok) snprintf(m->msg, sizeof m->msg, "garbled result line from the worker");
        char name[256];
        attn_sweep_point_name(c->s, c->points[job], name, sizeof name);
        if (m->ok)
            cli_message("sweep", "run %d/%d %s: mean accuracy %.1f%% (train %.1f s)",
                        c->points[job] + 1, c->n_total, name,
                        25 * (r->acc[0] + r->acc[1] + r->acc[2] + r->acc[3]), r->train_s);
    } else if (line[0] == 'F') {
        snprintf(m->msg, sizeof m->msg, "%s", line[1] == ' ' ? line + 2 : line + 1);
    }
}

static void on_exit_job(int job, int status, void *user) {
    run_msg *m = &((sweep_ctx *)user)->msgs[job];
    if (m->ok || m->msg[0]) return;
    cli_pool_exit_reason(status, m->msg, sizeof m->msg);
}

/* This rank's points on its workers, then every result to rank 0 (into all[], point order). */
static void run_points(const attn_sweep *s, int workers, run_msg *all) {
    const int n = attn_sweep_n_points(s);
    int *points = calloc((size_t)n + 1, sizeof *points), k = 0;
    run_msg *msgs = calloc((size_t)n + 1, sizeof *msgs);
    cli_blob *blobs = calloc((size_t)n + 1, sizeof *blobs);
    if (!points || !msgs || !blobs) {
        cli_message("sweep", "out of memory");
        abort(); /* under mpirun the other ranks would wait for this one forever */
    }
    for (int i = 0; i < n; i++)
        if (cli_mpi_mine(i)) points[k++] = i;
    sweep_ctx c = {s, points, msgs, k, n};
    cli_pool_hooks h = {run_job, on_line, on_exit_job, NULL, &c};
    attn_set_num_threads(1); /* the same bytes on any core count */
    if (k > 0 && !cli_pool_run(k, workers < k ? workers : k, &h))
        for (int j = 0; j < k; j++) snprintf(msgs[j].msg, sizeof msgs[j].msg, "no worker pool");
    char where[128];
    cli_mpi_where(where, sizeof where);
    for (int j = 0; j < k; j++) {
        if (!msgs[j].ok && cli_mpi_on()) {
            size_t len = strlen(msgs[j].msg);
            snprintf(msgs[j].msg + len, sizeof msgs[j].msg - len, " (%s)", where);
        }
        cli_blob *b = &blobs[points[j]];
        b->data = malloc(sizeof msgs[j]);
        if (!b->data) abort();
        memcpy(b->data, &msgs[j], sizeof msgs[j]);
        b->len = sizeof msgs[j];
    }
    cli_mpi_gather(blobs, n);
    for (int i = 0; i < n && cli_mpi_root(); i++) {
        if (blobs[i].len == sizeof all[i])
            memcpy(&all[i], blobs[i].data, sizeof all[i]);
        else
            all[i] = (run_msg){.ok = false, .msg = "no result came back from its rank"};
    }
    cli_blobs_free(blobs, n);
    free(msgs);
    free(points);
}

static void json_option(attn_json_writer *w, const attn_sweep *s, int point, int a) {
    char v[64];
    attn_sweep_value_text(s, a, attn_sweep_value_index(s, point, a), v, sizeof v);
    attn_json_key(w, s->axes[a].name);
    const char *end;
    strtod(v, (char **)&end);
    if (*end == 0 && v[0]) /* a number as a number (its text as given), a choice as a string */
        attn_json_raw(w, v, strlen(v));
    else
        attn_json_string(w, v);
}

static void write_jsonl(FILE *f, const attn_sweep *s, const run_msg *runs) {
    for (int i = 0; i < attn_sweep_n_points(s); i++) {
        const attn_sweep_result *r = &runs[i].r;
        char name[512];
        attn_sweep_point_name(s, i, name, sizeof name);
        attn_json_writer w;
        attn_json_writer_init(&w, f);
        attn_json_begin_object(&w);
        attn_json_field_int(&w, "run", i + 1);
        attn_json_field_string(&w, "point", name);
        attn_json_field_string(&w, "model", attn_arch_name(s->arch));
        attn_json_begin_object_field(&w, "options");
        for (int a = 0; a < s->n_axes; a++) json_option(&w, s, i, a);
        attn_json_end_object(&w);
        attn_json_field_uint(&w, "parameters", r->n_params);
        attn_json_field_int(&w, "test_size", s->test_size);
        attn_json_begin_object_field(&w, "accuracy");
        double mean = 0;
        for (int k = 0; k < ATTN_N_TEST_SETS; k++) {
            attn_json_key(&w, attn_set_name(cli_test_sets[k]));
            attn_json_digits(&w, r->acc[k], 10);
            mean += r->acc[k] / ATTN_N_TEST_SETS;
        }
        attn_json_end_object(&w);
        attn_json_key(&w, "mean_accuracy");
        attn_json_digits(&w, mean, 10);
        attn_json_end_object(&w);
        attn_json_writer_finish(&w, NULL); /* f is a memory stream: as for save()'s other files */
        fputc('\n', f);
    }
}

/* The Markdown table: one row per point of the grid without the seed. */
static void write_summary(FILE *f, const attn_sweep *s, const attn_sweep_summary *sum) {
    int widths[ATTN_SWEEP_MAX_AXES];
    fputs("|", f);
    for (int a = 0; a < s->n_axes; a++) {
        if (s->axes[a].fixed || strcmp(s->axes[a].name, "seed") == 0) continue;
        widths[a] = (int)strlen(s->axes[a].name) < 6 ? 6 : (int)strlen(s->axes[a].name);
        fprintf(f, " %-*s |", widths[a], s->axes[a].name);
    }
    fputs(" seeds |", f);
    for (int k = 0; k <= ATTN_N_TEST_SETS; k++)
        fprintf(f, " %-13s |", k < ATTN_N_TEST_SETS ? attn_set_name(cli_test_sets[k]) : "mean");
    fputs("\n|", f);
    for (int a = 0; a < s->n_axes; a++)
        if (!s->axes[a].fixed && strcmp(s->axes[a].name, "seed") != 0)
            fprintf(f, "-%.*s-|", widths[a], "--------------------------------");
    fputs("------:|", f);
    for (int k = 0; k <= ATTN_N_TEST_SETS; k++) fputs("--------------:|", f);
    fputs("\n", f);
    for (int g = 0; g < sum->n_groups; g++) {
        const attn_sweep_group *gr = &sum->groups[g];
        fputs("|", f);
        for (int a = 0; a < s->n_axes; a++) {
            if (s->axes[a].fixed || strcmp(s->axes[a].name, "seed") == 0) continue;
            char v[64];
            attn_sweep_value_text(s, a, attn_sweep_value_index(s, gr->first_point, a), v, sizeof v);
            fprintf(f, " %-*s |", widths[a], v);
        }
        fprintf(f, " %5d |", gr->n_seeds);
        for (int k = 0; k <= ATTN_N_TEST_SETS; k++) {
            char cell[32];
            snprintf(cell, sizeof cell, "%.1f \xc2\xb1 %.1f%%", 100 * gr->mean[k],
                     100 * gr->sd[k]); /* plus-minus: 2 bytes, 1 column */
            fprintf(f, " %14s |", cell);
        }
        fputs("\n", f);
    }
    fputs("\nCells: mean \xc2\xb1 sample standard deviation over the seeds, in %.\n", f);
}

/* Writes text (made by fn) to path atomically; false after saying why. */
static bool save(const char *path, void (*fn)(FILE *, const void *, const void *), const void *a,
                 const void *b) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return cli_runtime_error("sweep", "out of memory"), false;
    fn(f, a, b);
    attn_error err = {0};
    bool ok = fclose(f) == 0 && attn_write_file_atomic(path, text, len, &err) == ATTN_OK;
    if (!ok) cli_fail("sweep", &err);
    free(text);
    return ok;
}

static void jsonl_fn(FILE *f, const void *s, const void *runs) {
    write_jsonl(f, s, runs);
}
static void summary_fn(FILE *f, const void *s, const void *sum) {
    write_summary(f, s, sum);
}
static void timings_fn(FILE *f, const void *s, const void *runs) {
    const run_msg *r = runs;
    fputs("run\ttrain_s\teval_s\n", f);
    for (int i = 0; i < attn_sweep_n_points(s); i++)
        fprintf(f, "%d\t%.3f\t%.3f\n", i + 1, r[i].r.train_s, r[i].r.eval_s);
}

/* Rank 0, every run done: the files, the table on stdout, the charts. */
static int report(const sweep_args *o, const attn_sweep *s, const run_msg *runs) {
    attn_sweep_result *res = calloc((size_t)attn_sweep_n_points(s) + 1, sizeof *res);
    if (!res) return cli_runtime_error("sweep", "out of memory");
    for (int i = 0; i < attn_sweep_n_points(s); i++) res[i] = runs[i].r;
    attn_sweep_summary sum;
    attn_error err = {0};
    int rc = attn_sweep_summarise(s, res, &sum, &err) == ATTN_OK ? CLI_OK : cli_fail("sweep", &err);
    free(res);
    if (rc != CLI_OK) return rc;
    char path[4096];
    snprintf(path, sizeof path, "%s/runs.jsonl", o->out);
    bool ok = save(path, jsonl_fn, s, runs);
    snprintf(path, sizeof path, "%s/summary.md", o->out);
    ok = ok && save(path, summary_fn, s, &sum);
    snprintf(path, sizeof path, "%s/timings.tsv", o->out);
    ok = ok && save(path, timings_fn, s, runs);
    if (ok) write_summary(stdout, s, &sum);
    for (int a = 0; ok && a < s->n_axes; a++) {
        if (s->axes[a].fixed || strcmp(s->axes[a].name, "seed") == 0) continue;
        snprintf(path, sizeof path, "%s/accuracy-vs-%s.png", o->out, s->axes[a].name);
        if (attn_sweep_plot(s, &sum, a, path, &err) == ATTN_OK)
            printf("chart: %s\n", path);
        else
            ok = cli_fail("sweep", &err) == CLI_OK;
    }
    attn_sweep_summary_free(&sum);
    return ok ? CLI_OK : CLI_ERROR;
}

/* mkdir -p for DIR (two levels are enough for runs/sweep). */
static int make_dir(const char *dir) {
    char parent[4096];
    snprintf(parent, sizeof parent, "%s", dir);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) {
        *slash = 0;
        if (mkdir(parent, 0777) != 0 && errno != EEXIST)
            return cli_runtime_error("sweep", "--out %s: %s", parent, strerror(errno));
    }
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return cli_runtime_error("sweep", "--out %s: %s", dir, strerror(errno));
    char probe[4096];
    snprintf(probe, sizeof probe, "%s/runs.jsonl", dir);
    return cli_check_dest("sweep", "--out", probe);
}

/* Creates the grid from the options, runs every point and reports; the exit code. */
static int run_sweep(const sweep_args *o) {
    int rc;
    if (!o->model) return cli_usage_error("sweep", "--model M is required");
    if (!o->grid) return cli_usage_error("sweep", "--grid GRID is required");
    attn_arch arch;
    attn_error err = {0};
    if (attn_arch_from_name(o->model, &arch, &err) != ATTN_OK)
        return cli_usage_error("sweep", "--model: %s", err.msg);
    char set[4096], epochs[32] = ""; /* --epochs N is the setting epochs=N */
    if (o->epochs) snprintf(epochs, sizeof epochs, " epochs=%d", o->epochs);
    if (snprintf(set, sizeof set, "%s%s", o->set ? o->set : "", epochs) >= (int)sizeof set)
        return cli_usage_error("sweep", "--set: too long");
    attn_sweep *s = NULL;
    attn_status st = attn_sweep_create(arch, o->grid, set, &s, &err);
    if (st == ATTN_ERR_ARG) return cli_usage_error("sweep", "%s", err.msg);
    if (st != ATTN_OK) return cli_fail("sweep", &err);
    s->test_size = o->test_size;
    s->eval_batch = o->eval_batch;
    const int n = attn_sweep_n_points(s);
    rc = cli_mpi_root() ? make_dir(o->out) : CLI_OK;
    if ((rc = cli_mpi_agree(rc)) != CLI_OK) { /* rank 0 has said why */
        attn_sweep_free(s);
        return rc;
    }
    if (cli_mpi_root())
        cli_message("sweep", "%d %s of %s, %d %s%s, into %s/", n, cli_plural(n, "run", "runs"),
                    attn_arch_name(arch), o->workers, cli_plural(o->workers, "worker", "workers"),
                    cli_mpi_on() ? " per rank" : "", o->out);
    run_msg *runs = calloc((size_t)n + 1, sizeof *runs);
    if (!runs) {
        attn_sweep_free(s);
        return cli_runtime_error("sweep", "out of memory");
    }
    const double start = attn_seconds();
    run_points(s, o->workers, runs);
    rc = CLI_OK;
    int failed = 0;
    for (int i = 0; i < n && cli_mpi_root(); i++) {
        if (runs[i].ok) continue;
        char name[512];
        attn_sweep_point_name(s, i, name, sizeof name);
        cli_message("sweep", "run %d (%s) failed: %s", i + 1, name, runs[i].msg);
        failed++;
    }
    if (failed) {
        cli_message("sweep", "%d of %d runs failed; nothing written", failed, n);
        rc = CLI_ERROR;
    } else if (cli_mpi_root()) {
        rc = report(o, s, runs);
        char took[32];
        cli_fmt_duration(took, sizeof took, attn_seconds() - start);
        if (rc == CLI_OK) cli_message("sweep", "%d runs in %s; wrote %s/", n, took, o->out);
    }
    free(runs);
    attn_sweep_free(s);
    return rc;
}

int cmd_sweep(int argc, char **argv) {
    sweep_args o = {
        NULL, NULL, NULL, "runs/sweep", 0, cli_mpi_on() ? 1 : cli_n_cores(), ATTN_TEST_DEFAULT_N,
        1};
    cli_opt opts[] = {
        {"--model", "M", CLI_OPT_STR, &o.model, .def = "", .help = "rnn, lstm, gru or transformer"},
        {"--grid", "GRID", CLI_OPT_STR, &o.grid, .def = "",
         .help = "the options to sweep: 'embed-dim=16,32,64 heads=1,2,4 seed=1..10'"},
        {"--set", "SETTINGS", CLI_OPT_STR, &o.set, .def = "",
         .help = "fixed options for every run: 'layers=1 lr=0.003'"},
        {"--epochs", "N", CLI_OPT_INT, &o.epochs, 1, 100000, .def = "20",
         .help = "epochs per run (the setting epochs=N)"},
        {"--out", "DIR", CLI_OPT_STR, &o.out, .help = "where the results go"},
        {"-j", "N", CLI_OPT_INT, &o.workers, 1, 1024,
         .def = "the number of cores; 1 per rank under mpirun", .help = "worker processes"},
        {"--test-size", "N", CLI_OPT_INT, &o.test_size, 1, ATTN_DATA_MAX_N,
         .help = "sentences per test set"},
        {"--eval-batch", "B", CLI_OPT_INT, &o.eval_batch, 1, 4096,
         .help = "sentences per forward pass in the evaluation; 1 is exact mode"},
    };
    cli_spec spec =
        CLI_SPEC("sweep",
                 "--model M --grid GRID [--set SETTINGS] [--epochs N] [--out DIR] [-j N] "
                 "[--test-size N] [--eval-batch B]",
                 about, NULL, notes, opts);
    int rc = cli_parse(&spec, argc, argv, NULL, NULL);
    if (rc >= 0) return rc;
    return run_sweep(&o);
}

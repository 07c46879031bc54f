/* rank_runs.c -- what the commands spread over MPI ranks (ranks.c): the table's runs of
 * `attn reproduce` and `attn eval --table`, and the independent runs inside an experiment
 * (attn_experiment_opts.map). Every rank runs its share (runs r, r+N, ...); the results travel
 * as blobs of bytes (the same binary on every host: structs are sent as they are). Also
 * cli_runs_execute, which runs the table's runs over the ranks or on this process's workers
 * (runs.c). */
#include "attn_experiments.h"
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The whole file at path into a new blob; false when it cannot be read. */
static bool read_file(const char *path, const void *head, size_t head_len, cli_blob *b) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    bool ok = fseek(f, 0, SEEK_END) == 0;
    long len = ok ? ftell(f) : -1;
    ok = len >= 0 && fseek(f, 0, SEEK_SET) == 0;
    b->data = ok ? malloc(head_len + (size_t)len + 1) : NULL;
    if (b->data) {
        memcpy(b->data, head, head_len);
        ok = fread(b->data + head_len, 1, (size_t)len, f) == (size_t)len;
        b->len = head_len + (size_t)len;
    }
    fclose(f);
    return ok && b->data;
}

/* A run's blob: its cli_run_result, then (trained) its weights file's bytes. */
static void pack_run(const cli_run_settings *staged, cli_run_result *r, cli_blob *b) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-seed%d.json", staged->dir, attn_arch_name(r->arch), r->seed);
    if (staged->train && r->ok) {
        if (!read_file(path, r, sizeof *r, b)) {
            r->ok = false;
            snprintf(r->msg, sizeof r->msg, "cannot read back %.150s: %.60s", path,
                     strerror(errno));
            free(b->data);
            b->data = NULL;
        }
    }
    if (staged->train) unlink(path);
    if (!b->data) {
        b->data = malloc(sizeof *r);
        if (b->data) memcpy(b->data, r, sizeof *r);
        b->len = b->data ? sizeof *r : 0;
    }
}

/* Rank 0 after the gather: the results in place, and (all ok, trained) every weights file
 * written, each atomically; a failed run leaves every file unwritten. */
static void unpack_runs(const cli_run_settings *s, cli_run_result *runs, cli_blob *blobs, int n) {
    bool all_ok = true;
    for (int j = 0; j < n; j++) {
        if (blobs[j].len < sizeof runs[j]) {
            runs[j].ok = false;
            snprintf(runs[j].msg, sizeof runs[j].msg, "no result came back from its rank");
        } else {
            memcpy(&runs[j], blobs[j].data, sizeof runs[j]);
        }
        all_ok = all_ok && runs[j].ok;
    }
    if (!s->train || !all_ok) return;
    for (int j = 0; j < n; j++) {
        char path[4096];
        attn_error err = {0};
        snprintf(path, sizeof path, "%s/%s-seed%d.json", s->dir, attn_arch_name(runs[j].arch),
                 runs[j].seed);
        if (attn_write_file_atomic(path, blobs[j].data + sizeof runs[j],
                                   blobs[j].len - sizeof runs[j], &err) != ATTN_OK) {
            runs[j].ok = false;
            snprintf(runs[j].msg, sizeof runs[j].msg, "%.250s", err.msg);
        }
    }
}

void cli_mpi_runs(const char *cmd, const cli_run_settings *s, cli_run_result *runs, int n) {
    cli_blob *blobs = calloc((size_t)n + 1, sizeof *blobs);
    cli_run_result *mine = calloc((size_t)n + 1, sizeof *mine);
    char where[128], stage[] = "/tmp/attn-runs-XXXXXX";
    cli_mpi_where(where, sizeof where);
    if (!blobs || !mine) {
        cli_message(cmd, "%s: out of memory", where);
        abort(); /* the others would wait for this rank forever: mpirun ends them all */
    }
    int k = 0;
    for (int j = 0; j < n; j++)
        if (cli_mpi_mine(j)) mine[k++] = runs[j];
    cli_run_settings staged = *s;
    staged.progress = s->progress && cli_mpi_size() == 1;
    bool staging = !s->train || mkdtemp(stage);
    if (s->train) staged.dir = stage;
    if (staging) cli_runs_local(cmd, &staged, mine, k);
    for (int i = 0, j = 0; j < n; j++) {
        if (!cli_mpi_mine(j)) continue;
        cli_run_result *r = &mine[i++];
        if (!staging) {
            r->ok = false;
            snprintf(r->msg, sizeof r->msg, "cannot make a directory in /tmp: %s", strerror(errno));
        } else if (!r->ok) {
            /* the failing rank names itself; the run is named by whoever prints it */
            size_t len = strlen(r->msg);
            snprintf(r->msg + len, sizeof r->msg - len, " (%s)", where);
        }
        pack_run(&staged, r, &blobs[j]);
    }
    if (s->train && staging) rmdir(stage);
    cli_mpi_gather(blobs, n);
    if (cli_mpi_root()) unpack_runs(s, runs, blobs, n);
    cli_blobs_free(blobs, n);
    free(mine);
}

/* ---- the runs inside an experiment --------------------------------------------------------- */

/* A job's blob: its status, its error message, then its `width` numbers. */
typedef struct job_head {
    attn_status st;
    char msg[sizeof(((attn_error *)0)->msg)];
} job_head;

/* Under mpirun the runs are spread over the ranks (rank_runs.c) and rank 0 reports. */
int cli_runs_execute(const char *cmd, const cli_run_settings *s, cli_run_result *runs, int n) {
    if (cli_mpi_on())
        cli_mpi_runs(cmd, s, runs, n);
    else
        cli_runs_local(cmd, s, runs, n);
    if (!cli_mpi_root()) return 0;
    int failures = 0;
    for (int i = 0; i < n; i++) {
        if (runs[i].ok) continue;
        failures++;
        cli_message(cmd, "%s seed %d failed: %s", attn_arch_name(runs[i].arch), runs[i].seed,
                    runs[i].msg);
    }
    return failures;
}

attn_status cli_mpi_experiment_map(int n, int width, attn_experiment_job job, void *ctx,
                                   double *out, void *user, attn_error *err) {
    (void)user;
    /* the numbers start at a multiple of 8 bytes: the job writes them in place */
    const size_t head = (sizeof(job_head) + sizeof(double) - 1) / sizeof(double) * sizeof(double);
    const size_t size = head + (size_t)width * sizeof(double);
    cli_blob *blobs = calloc((size_t)n + 1, sizeof *blobs);
    if (!blobs) return attn_errorf(err, ATTN_ERR_NOMEM, "out of memory");
    char where[128];
    cli_mpi_where(where, sizeof where);
    for (int j = 0; j < n; j++) {
        if (!cli_mpi_mine(j)) continue;
        blobs[j].data = calloc(1, size);
        if (!blobs[j].data) abort(); /* see cli_mpi_runs */
        blobs[j].len = size;
        job_head h = {0};
        attn_error e = {0};
        h.st = job(j, (double *)(void *)(blobs[j].data + head), ctx, &e);
        if (h.st != ATTN_OK) snprintf(h.msg, sizeof h.msg, "%.3900s (%.120s)", e.msg, where);
        memcpy(blobs[j].data, &h, sizeof h);
    }
    cli_mpi_share(blobs, n);
    attn_status st = ATTN_OK;
    for (int j = 0; j < n && st == ATTN_OK; j++) {
        job_head h;
        if (blobs[j].len != size) {
            st = attn_errorf(err, ATTN_ERR_IO, "run %d of %d: no result came back", j + 1, n);
            break;
        }
        memcpy(&h, blobs[j].data, sizeof h);
        if (h.st != ATTN_OK)
            st = attn_errorf(err, h.st, "run %d of %d failed: %s", j + 1, n, h.msg);
        else
            memcpy(out + (size_t)j * (size_t)width, blobs[j].data + head,
                   (size_t)width * sizeof(double));
    }
    cli_blobs_free(blobs, n);
    return st;
}

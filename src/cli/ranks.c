/* ranks.c -- runs spread over the ranks of `mpirun -np N attn ...` (Open MPI), the one file
 * that calls MPI. The unit is the run: rank r takes runs r, r+N, r+2N, ...; their results come
 * back to rank 0 (or to every rank) in run order, so what rank 0 prints and writes is the same,
 * byte for byte, for any N. Rank 0 alone prints (the others' stdout goes to /dev/null) and
 * writes files, after everything has been gathered.
 *
 * Built without MPI (ATTN_HAVE_MPI unset) or started without mpirun, attn is one rank of one
 * and none of this changes anything. */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef ATTN_HAVE_MPI
#include <mpi.h>
#endif

static int g_rank = 0, g_size = 1;
static bool g_on = false;

bool cli_mpi_on(void) {
    return g_on;
}
int cli_mpi_size(void) {
    return g_size;
}
bool cli_mpi_root(void) {
    return g_rank == 0;
}
bool cli_mpi_mine(int job) {
    return job % g_size == g_rank;
}

void cli_blobs_free(cli_blob *b, int n) {
    for (int i = 0; b && i < n; i++) free(b[i].data);
    free(b);
}

#ifdef ATTN_HAVE_MPI

/* Open MPI's launchers (mpirun, srun --mpi=pmix) set one of these in every rank. */
static bool launched_by_mpirun(void) {
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i])) return true;
    return false;
}

void cli_mpi_start(int *argc, char ***argv) {
    if (!launched_by_mpirun()) return;
    if (MPI_Init(argc, argv) != MPI_SUCCESS) return; /* MPI's handler has aborted already */
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    g_on = true;
    if (g_rank != 0 && !freopen("/dev/null", "w", stdout))
        cli_message(NULL, "rank %d: cannot silence stdout: %s", g_rank, strerror(errno));
}

/* Waits for every rank without spinning a core: a rank that finished early sleeps while the
 * others still train (a blocking MPI call would poll at 100% CPU). */
static void quiet_barrier(void) {
    MPI_Request req;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    for (int done = 0;;) {
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (done) return;
        nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
    }
}

int cli_mpi_agree(int rc) {
    if (!g_on) return rc;
    quiet_barrier();
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return rc;
}

int cli_mpi_finish(int rc) {
    if (!g_on) return rc;
    quiet_barrier();
    int worst = rc;
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return worst;
}

/* One blob from its owner to `to` (a rank) or to every rank (to < 0). */
static void move_blob(cli_blob *b, int owner, int to, int tag) {
    uint64_t len = b->len;
    if (to < 0) {
        MPI_Bcast(&len, 1, MPI_UINT64_T, owner, MPI_COMM_WORLD);
    } else if (g_rank == owner) {
        MPI_Send(&len, 1, MPI_UINT64_T, to, tag, MPI_COMM_WORLD);
    } else {
        MPI_Recv(&len, 1, MPI_UINT64_T, owner, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    if (g_rank != owner) {
        free(b->data);
        b->data = malloc(len ? (size_t)len : 1);
        b->len = (size_t)len;
        if (!b->data) MPI_Abort(MPI_COMM_WORLD, CLI_ERROR); /* cannot receive: stop every rank */
    }
    /* in pieces: MPI counts are int */
    for (uint64_t off = 0; off < len;) {
        int chunk = len - off > (1u << 30) ? 1 << 30 : (int)(len - off);
        char *at = b->data + off;
        if (to < 0)
            MPI_Bcast(at, chunk, MPI_BYTE, owner, MPI_COMM_WORLD);
        else if (g_rank == owner)
            MPI_Send(at, chunk, MPI_BYTE, to, tag, MPI_COMM_WORLD);
        else
            MPI_Recv(at, chunk, MPI_BYTE, owner, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        off += (uint64_t)chunk;
    }
}

/* Every owner sends its blobs in run order and rank 0 receives them in run order, so a send
 * always meets its receive: no deadlock whatever N. */
void cli_mpi_gather(cli_blob *blobs, int n) {
    if (!g_on) return;
    quiet_barrier();
    for (int j = 0; j < n; j++) {
        int owner = j % g_size;
        if (owner == 0 || (g_rank != 0 && g_rank != owner)) continue;
        move_blob(&blobs[j], owner, 0, j % 32768);
    }
}

void cli_mpi_share(cli_blob *blobs, int n) {
    if (!g_on) return;
    quiet_barrier();
    for (int j = 0; j < n; j++) move_blob(&blobs[j], j % g_size, -1, 0);
}

void cli_mpi_where(char *buf, size_t size) {
    char host[MPI_MAX_PROCESSOR_NAME] = "this host";
    int len = 0;
    if (g_on) MPI_Get_processor_name(host, &len);
    snprintf(buf, size, "rank %d on %s", g_rank, host);
}

/* ---- one training run over the ranks (attn_ranks, docs/mpi.md) ---------------------------- */

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* What the exchanges of this run cost (rank 0 reports it at the end: cli_train_end). */
static struct {
    double start_s, in_exchange_s;
    unsigned long long calls, bytes_in; /* collectives, and the bytes this rank received */
} g_cost;

/* MPI counts are ints: n[q] = counts[q], at[q] = displs[q] in `what`s, or an error. */
static attn_status int_counts(const size_t *counts, const size_t *displs, int *n, int *at,
                              attn_error *err) {
    for (int q = 0; q < g_size; q++) {
        if (counts[q] > INT_MAX || displs[q] > INT_MAX)
            return attn_errorf(err, ATTN_ERR_ARG,
                               "gradient exchange: a block of %zu units at %zu is beyond MPI's "
                               "int counts (rank %d)",
                               counts[q], displs[q], g_rank);
        n[q] = (int)counts[q], at[q] = (int)displs[q];
    }
    return ATTN_OK;
}

/* Waits for req without spinning a core (a rank waiting for a slower one sleeps). */
static attn_status wait_for(MPI_Request *req, int rc, double t0, attn_error *err) {
    for (int done = 0; rc == MPI_SUCCESS && !done;) {
        rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (!done) nanosleep(&(struct timespec){0, 20 * 1000}, NULL);
    }
    g_cost.in_exchange_s += now_s() - t0;
    g_cost.calls++;
    if (rc != MPI_SUCCESS)
        return attn_errorf(err, ATTN_ERR_IO, "gradient exchange: MPI error %d (rank %d)", rc,
                           g_rank);
    return ATTN_OK;
}

/* attn_ranks.allgather, in units of `unit` bytes. */
static attn_status mpi_allgather(void *ctx, void *buf, size_t unit, const size_t *counts,
                                 const size_t *displs, attn_error *err) {
    (void)ctx;
    const double t0 = now_s();
    int *n = malloc(2 * (size_t)g_size * sizeof *n);
    if (!n) return attn_errorf(err, ATTN_ERR_NOMEM, "gradient exchange: out of memory");
    int *at = n + g_size;
    attn_status st = int_counts(counts, displs, n, at, err);
    if (st == ATTN_OK && unit > INT_MAX)
        st = attn_errorf(err, ATTN_ERR_ARG, "gradient exchange: a unit of %zu bytes", unit);
    if (st != ATTN_OK) {
        free(n);
        return st;
    }
    MPI_Datatype type;
    MPI_Type_contiguous((int)unit, MPI_BYTE, &type);
    MPI_Type_commit(&type);
    MPI_Request req;
    int rc = MPI_Iallgatherv(MPI_IN_PLACE, 0, type, buf, n, at, type, MPI_COMM_WORLD, &req);
    st = wait_for(&req, rc, t0, err);
    MPI_Type_free(&type);
    for (int q = 0; q < g_size; q++)
        if (q != g_rank) g_cost.bytes_in += counts[q] * unit;
    free(n);
    return st;
}

/* attn_ranks.alltoall, in floats. */
static attn_status mpi_alltoall(void *ctx, const float *send, const size_t *scounts,
                                const size_t *sdispls, float *recv, const size_t *rcounts,
                                const size_t *rdispls, attn_error *err) {
    (void)ctx;
    const double t0 = now_s();
    int *n = malloc(4 * (size_t)g_size * sizeof *n);
    if (!n) return attn_errorf(err, ATTN_ERR_NOMEM, "gradient exchange: out of memory");
    int *sat = n + g_size, *rn = sat + g_size, *rat = rn + g_size;
    attn_status st = int_counts(scounts, sdispls, n, sat, err);
    if (st == ATTN_OK) st = int_counts(rcounts, rdispls, rn, rat, err);
    if (st == ATTN_OK) {
        MPI_Request req;
        int rc =
            MPI_Ialltoallv(send, n, sat, MPI_FLOAT, recv, rn, rat, MPI_FLOAT, MPI_COMM_WORLD, &req);
        st = wait_for(&req, rc, t0, err);
        for (int q = 0; q < g_size; q++)
            if (q != g_rank) g_cost.bytes_in += rcounts[q] * sizeof(float);
    }
    free(n);
    return st;
}

static attn_ranks g_ranks;
static const char *g_cmd = "train"; /* the command whose run spans the ranks */

/* When a rank dies, mpirun ends the others with SIGTERM: rank 0, the one whose stderr is seen,
 * says what that means for the run's files before it goes (write(2): async-signal-safe). */
static void rank0_stopped(int sig) {
    static const char msg[] =
        "attn train: rank 0 stopped by SIGTERM from mpirun: a rank ended (mpirun's message says "
        "which, and how) or the run was interrupted; every file of the run is whole (written "
        "to a temporary and renamed): go on from the last --checkpoint with --resume, on any "
        "number of ranks\n";
    ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)ignored;
    _exit(128 + sig);
}

int cli_train_threads_start(const char *cmd, int *threads, attn_pool **pool) {
    int rc = cli_threads_start(cmd, threads, pool);
    if (rc >= 0 || !g_on || g_size < 2) return rc;
    attn_error err = {0};
    if (!*pool && attn_pool_create(1, pool, &err) != ATTN_OK) return cli_fail(cmd, &err);
    g_ranks = (attn_ranks){g_rank, g_size, mpi_allgather, mpi_alltoall, NULL};
    g_cmd = cmd;
    g_cost.start_s = now_s();
    attn_pool_set_ranks(*pool, &g_ranks);
    /* rank 0 reports: every rank meets the same errors, and a micro-batch's error reaches it */
    if (g_rank != 0 && !freopen("/dev/null", "w", stderr)) return CLI_ERROR;
    if (g_rank == 0) signal(SIGTERM, rank0_stopped);
    return -1;
}

/* "attn train: 2 ranks, 96 exchanges (gradient pieces, parameters), 1.4 GB received by rank 0,
 * 3.1 s in them (moving and waiting for the other ranks), 12 % of the run's 25.8 s" on rank 0's
 * stderr. */
static void report_exchanges(void) {
    if (!g_cost.calls || g_rank != 0) return;
    const double run_s = now_s() - g_cost.start_s;
    fprintf(stderr,
            "attn %s: %d ranks, %llu exchanges (gradient pieces, parameters), %.1f MB received "
            "by rank 0, %.2f s in them (moving and waiting for the other ranks), %.0f %% of the "
            "run's %.1f s\n",
            g_cmd, g_size, g_cost.calls, (double)g_cost.bytes_in / 1e6, g_cost.in_exchange_s,
            run_s > 0 ? 100 * g_cost.in_exchange_s / run_s : 0, run_s);
}

int cli_train_end(int rc) {
    if (g_on && rc == CLI_OK) report_exchanges();
    if (!g_on || rc == CLI_OK) return rc;
    /* a rank that stops alone would leave the others in the next exchange: stop every rank */
    fflush(stdout);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, rc);
    return rc;
}

#else /* built without MPI: one rank */

int cli_train_threads_start(const char *cmd, int *threads, attn_pool **pool) {
    return cli_threads_start(cmd, threads, pool);
}
int cli_train_end(int rc) {
    return rc;
}

void cli_mpi_start(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
}
int cli_mpi_agree(int rc) {
    return rc;
}
int cli_mpi_finish(int rc) {
    return rc;
}
void cli_mpi_gather(cli_blob *blobs, int n) {
    (void)blobs;
    (void)n;
}
void cli_mpi_share(cli_blob *blobs, int n) {
    (void)blobs;
    (void)n;
}
void cli_mpi_where(char *buf, size_t size) {
    snprintf(buf, size, "rank 0");
}

#endif

/* threads.c -- `--threads N` and ATTN_THREADS: one pool of threads per run (attn_threads.h).
 * The thread count decides only how fast a run goes: every piece of work is cut the same way
 * for every N (docs/numerics.md, "Threads"). */
#include "cli.h"

#include <stdlib.h>

int cli_threads_resolve(const char *cmd, int *threads) {
    if (*threads > 0) return -1;
    const char *s = getenv("ATTN_THREADS");
    if (s && *s) {
        char *end;
        long n = strtol(s, &end, 10);
        if (*end || n < 1 || n > ATTN_MAX_THREADS)
            return cli_usage_error(cmd, "ATTN_THREADS='%s': expected a whole number 1..%d", s,
                                   ATTN_MAX_THREADS);
        *threads = (int)n;
        return -1;
    }
    *threads = attn_threads_default();
    return -1;
}

int cli_threads_start(const char *cmd, int *threads, attn_pool **pool) {
    *pool = NULL;
    int rc = cli_threads_resolve(cmd, threads);
    if (rc >= 0) return rc;
    attn_set_num_threads(1); /* one BLAS thread per product: the pool's threads are the others */
    if (*threads == 1) return -1;
    attn_error err = {0};
    if (attn_pool_create(*threads, pool, &err) != ATTN_OK) return cli_fail(cmd, &err);
    return -1;
}

int cli_threads_split(const char *cmd, int n_runs, bool workers_given, int *workers, int *threads) {
    const char *env = getenv("ATTN_THREADS");
    if (*threads == 0 && env && *env) {
        int rc = cli_threads_resolve(cmd, threads);
        if (rc >= 0) return rc;
    }
    const int cores = cli_n_cores();
    if (!workers_given) *workers = *threads > 0 ? cores / *threads : cores;
    if (*workers > n_runs) *workers = n_runs;
    if (*workers < 1) *workers = 1;
    if (*threads == 0) *threads = cores / *workers > 1 ? cores / *workers : 1;
    return -1;
}

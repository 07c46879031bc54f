/* threads.c -- `--threads N` and ATTN_THREADS: one pool of threads per run (attn_threads.h).
 * The thread count decides only how fast a run goes: every piece of work is cut the same way
 * for every N (docs/numerics.md, "Threads"). */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

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

/* ---- sentences in blocks ------------------------------------------------------------------- */

#define BLOCK 512 /* items computed in parallel before their results are printed in order */

typedef struct block {
    const cli_par_spec *s;
    char *text[BLOCK];
    const char *where[BLOCK];
    int index[BLOCK];
    bool nul[BLOCK]; /* a line holding a NUL byte: refused, never computed */
    unsigned char *slots;
    int n;
} block;

static void compute_task(void *ctx, int i, int worker) {
    block *b = ctx;
    if (!b->nul[i])
        b->s->compute(b->s->ctx, worker, b->text[i], b->slots + (size_t)i * b->s->slot_size);
}

/* Computes the block on the pool, prints its results in order; returns the failures. */
static int flush(block *b, attn_pool *pool) {
    attn_pool_run(pool, b->n, compute_task, b);
    int failed = 0;
    for (int i = 0; i < b->n; i++) {
        if (b->nul[i]) {
            cli_message(b->s->cmd, "line %d: NUL byte in line", b->index[i]);
            failed++;
        } else {
            failed += !b->s->emit(b->s->ctx, b->text[i], b->where[i], b->index[i],
                                  b->slots + (size_t)i * b->s->slot_size);
        }
        if (b->where[i][0] == 'l') free(b->text[i]); /* stdin lines are copies */
    }
    b->n = 0;
    return failed;
}

static void add(block *b, char *text, const char *where, int index, bool nul) {
    b->text[b->n] = text;
    b->where[b->n] = where;
    b->index[b->n] = index;
    b->nul[b->n] = nul;
    b->n++;
}

int cli_run_sentences_pool(const cli_par_spec *s, char **args, int n_args, attn_pool *pool) {
    block *b = calloc(1, sizeof *b);
    if (b) b->slots = calloc(BLOCK, s->slot_size);
    if (!b || !b->slots) {
        free(b);
        fprintf(stderr, "attn %s: out of memory\n", s->cmd);
        return CLI_ERROR;
    }
    b->s = s;
    int failed = 0, n = n_args, line_no = 0;
    bool oom = false;
    for (int i = 0; i < n_args; i++) {
        add(b, args[i], "sentence", i + 1, false);
        if (b->n == BLOCK) failed += flush(b, pool);
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while (n_args == 0 && !oom && (len = getline(&line, &cap, stdin)) >= 0) {
        line_no++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        const bool nul = strlen(line) != (size_t)len; /* as the TSV reader: never a cut line */
        if (!nul && !s->keep_blank && strspn(line, " \t") == (size_t)len) continue; /* blank */
        char *copy = strdup(line);
        if (!copy) {
            oom = true;
            break;
        }
        n++;
        add(b, copy, "line", line_no, nul);
        if (b->n == BLOCK) failed += flush(b, pool);
    }
    free(line);
    failed += flush(b, pool);
    free(b->slots);
    free(b);
    int rc = CLI_OK;
    if (oom) {
        fprintf(stderr, "attn %s: out of memory reading line %d\n", s->cmd, line_no);
        rc = CLI_ERROR;
    }
    return cli_lines_finish(s->cmd, s->verb, failed, n) == CLI_OK ? rc : CLI_ERROR;
}

int cli_lines_finish(const char *cmd, const char *verb, int failed, int n) {
    int rc = CLI_OK;
    if (fflush(stdout) != 0) {
        fprintf(stderr, "attn %s: cannot write the output\n", cmd);
        rc = CLI_ERROR;
    }
    if (failed) {
        fprintf(stderr, "attn %s: %d of %d %s not %s\n", cmd, failed, n,
                cli_plural(n, "sentence", "sentences"), verb);
        rc = CLI_ERROR;
    }
    return rc;
}

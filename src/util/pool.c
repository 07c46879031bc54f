/* pool.c -- a fixed set of threads made once per run (attn_threads.h). attn_pool_run hands out
 * task indices from a shared counter; the caller's thread works too (worker 0) and returns when
 * every task has finished. Which worker runs which task varies from run to run: callers make the
 * result a function of the task alone. */
#include "attn_threads.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

struct attn_pool {
    int n_threads; /* workers, the caller's thread included */
    pthread_t *tid;
    int started; /* threads actually started (workers 1..started) */
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    /* the current job, guarded by lock */
    long generation; /* bumped for every attn_pool_run */
    attn_pool_fn fn;
    void *ctx;
    int n_tasks, next_task, running; /* running: workers inside the current job */
    int finished;                    /* tasks finished */
    bool quit;
};

typedef struct worker_arg {
    attn_pool *p;
    int worker;
} worker_arg;

/* Takes tasks of the current job until none is left; called with the lock held. */
static void work(attn_pool *p, int worker) {
    while (p->next_task < p->n_tasks) {
        int task = p->next_task++;
        attn_pool_fn fn = p->fn;
        void *ctx = p->ctx;
        pthread_mutex_unlock(&p->lock);
        fn(ctx, task, worker);
        pthread_mutex_lock(&p->lock);
        if (++p->finished == p->n_tasks) pthread_cond_broadcast(&p->done);
    }
}

static void *worker_main(void *arg) {
    worker_arg *a = arg;
    attn_pool *p = a->p;
    const int worker = a->worker;
    free(a);
    long seen = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->quit && p->generation == seen) pthread_cond_wait(&p->wake, &p->lock);
        if (p->quit) break;
        seen = p->generation;
        work(p, worker);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

int attn_cores(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

int attn_threads_default(void) {
    const char *s = getenv("ATTN_THREADS");
    if (s && *s) {
        char *end;
        long n = strtol(s, &end, 10);
        if (*end == 0 && n >= 1 && n <= ATTN_MAX_THREADS) return (int)n;
    }
    int n = attn_cores();
    return n < ATTN_MAX_THREADS ? n : ATTN_MAX_THREADS;
}

attn_status attn_pool_create(int n_threads, attn_pool **out, attn_error *err) {
    *out = NULL;
    if (n_threads < 1 || n_threads > ATTN_MAX_THREADS)
        return attn_errorf(err, ATTN_ERR_ARG, "threads = %d, expected 1..%d", n_threads,
                           ATTN_MAX_THREADS);
    attn_pool *p = calloc(1, sizeof *p);
    if (!p) return attn_errorf(err, ATTN_ERR_NOMEM, "thread pool: out of memory");
    p->n_threads = n_threads;
    p->tid = calloc((size_t)n_threads, sizeof *p->tid);
    if (!p->tid || pthread_mutex_init(&p->lock, NULL) != 0) {
        free(p->tid);
        free(p);
        return attn_errorf(err, ATTN_ERR_NOMEM, "thread pool: out of memory");
    }
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    for (int w = 1; w < n_threads; w++) {
        worker_arg *a = malloc(sizeof *a);
        if (!a) break;
        *a = (worker_arg){p, w};
        if (pthread_create(&p->tid[w], NULL, worker_main, a) != 0) {
            free(a);
            break;
        }
        p->started = w;
    }
    if (p->started != n_threads - 1) {
        int started = p->started;
        attn_pool_free(p);
        return attn_errorf(err, ATTN_ERR_IO, "thread pool: could start only %d of %d threads",
                           started + 1, n_threads);
    }
    *out = p;
    return ATTN_OK;
}

void attn_pool_free(attn_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->lock);
    p->quit = true;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (int w = 1; w <= p->started; w++) pthread_join(p->tid[w], NULL);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->lock);
    free(p->tid);
    free(p);
}

int attn_pool_threads(const attn_pool *p) {
    return p ? p->n_threads : 1;
}

void attn_pool_run(attn_pool *p, int n_tasks, attn_pool_fn fn, void *ctx) {
    if (n_tasks <= 0) return;
    if (!p || p->n_threads == 1 || n_tasks == 1) {
        for (int i = 0; i < n_tasks; i++) fn(ctx, i, 0);
        return;
    }
    pthread_mutex_lock(&p->lock);
    p->fn = fn;
    p->ctx = ctx;
    p->n_tasks = n_tasks;
    p->next_task = 0;
    p->finished = 0;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    work(p, 0);
    while (p->finished < p->n_tasks) pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

/* pool.c -- a fixed set of threads made once per run (attn_threads.h). attn_pool_run hands out
 * task indices from a shared counter; the caller's thread works too (worker 0) and returns when
 * every task has finished. Which worker runs which task varies from run to run: callers make the
 * result a function of the task alone.
 *
 * Waiting: a thread that runs out of work spins for a few tens of microseconds (SPIN pause
 * instructions) before it sleeps on a condition variable, so that the short serial gaps between
 * the runs of a training step (the loss, Adam) do not cost a sleep and a wake-up each. */
#include "attn_threads.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

/* Pause instructions a waiting thread spins before sleeping (some tens of us on current x86);
 * under AMD's default pause filter (3000 pauses in a row) so that a spinning virtual CPU does not
 * exit to the hypervisor. */
#define SPIN 2000

struct attn_pool {
    int n_threads; /* workers, the caller's thread included */
    pthread_t *tid;
    int started; /* threads actually started (workers 1..started) */
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    /* the current job, guarded by lock (generation and finished also read by spinners) */
    long generation; /* bumped for every attn_pool_run */
    attn_pool_fn fn;
    void *ctx;
    int n_tasks, next_task, running; /* running: workers inside the current job */
    int finished;                    /* tasks finished */
    bool quit;
    /* measuring (attn_pool_trace_start) */
    bool measuring; /* attn_pool_create_measuring: every task on the caller's thread */
    bool tracing;
    double trace_t0, inside_s;
    attn_pool_trace trace;
    double *free_at; /* measuring: [n_threads] simulated finish times within a run */
};

typedef struct worker_arg {
    attn_pool *p;
    int worker;
} worker_arg;

static double thread_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Takes tasks of the current job until none is left; called with the lock held. */
static void work(attn_pool *p, int worker) {
    while (p->next_task < p->n_tasks) {
        int task = p->next_task++;
        attn_pool_fn fn = p->fn;
        void *ctx = p->ctx;
        const bool tracing = p->tracing;
        pthread_mutex_unlock(&p->lock);
        const double t0 = tracing ? thread_cpu_s() : 0.0;
        fn(ctx, task, worker);
        const double dt = tracing ? thread_cpu_s() - t0 : 0.0;
        pthread_mutex_lock(&p->lock);
        p->trace.task_s += dt;
        p->trace.tasks += tracing;
        __atomic_store_n(&p->finished, p->finished + 1, __ATOMIC_RELEASE);
        if (p->finished == p->n_tasks) pthread_cond_broadcast(&p->done);
    }
}

/* Spins until *v differs from `old` or SPIN pauses have passed; true if it changed. */
static bool spin_while_equal(const long *v, long old) {
    for (int i = 0; i < SPIN; i++) {
        if (__atomic_load_n(v, __ATOMIC_ACQUIRE) != old) return true;
        CPU_RELAX();
    }
    return false;
}

static void *worker_main(void *arg) {
    worker_arg *a = arg;
    attn_pool *p = a->p;
    const int worker = a->worker;
    free(a);
    long seen = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        if (!p->quit && p->generation == seen) {
            pthread_mutex_unlock(&p->lock);
            spin_while_equal(&p->generation, seen);
            pthread_mutex_lock(&p->lock);
        }
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

attn_status attn_pool_create_measuring(int n_threads, attn_pool **out, attn_error *err) {
    *out = NULL;
    if (n_threads < 1 || n_threads > ATTN_MAX_THREADS)
        return attn_errorf(err, ATTN_ERR_ARG, "threads = %d, expected 1..%d", n_threads,
                           ATTN_MAX_THREADS);
    attn_pool *p = calloc(1, sizeof *p);
    if (p) p->free_at = calloc((size_t)n_threads, sizeof *p->free_at);
    if (p) p->tid = calloc(1, sizeof *p->tid);
    if (!p || !p->free_at || !p->tid || pthread_mutex_init(&p->lock, NULL) != 0) {
        if (p) free(p->free_at);
        if (p) free(p->tid);
        free(p);
        return attn_errorf(err, ATTN_ERR_NOMEM, "thread pool: out of memory");
    }
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    p->n_threads = n_threads;
    p->measuring = true;
    *out = p;
    return ATTN_OK;
}

void attn_pool_trace_start(attn_pool *p) {
    if (!p) return;
    p->trace = (attn_pool_trace){0};
    p->inside_s = 0.0;
    p->tracing = true;
    p->trace_t0 = thread_cpu_s();
}

attn_pool_trace attn_pool_trace_read(attn_pool *p) {
    if (!p || !p->tracing) return (attn_pool_trace){0};
    attn_pool_trace t = p->trace;
    t.caller_s = thread_cpu_s() - p->trace_t0;
    t.serial_s = t.caller_s - p->inside_s;
    return t;
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
    free(p->free_at);
    free(p->tid);
    free(p);
}

int attn_pool_threads(const attn_pool *p) {
    return p ? p->n_threads : 1;
}

/* A measuring pool's run: each task on the caller's thread, given to the simulated worker that
 * is free first. */
static void run_measuring(attn_pool *p, int n_tasks, attn_pool_fn fn, void *ctx) {
    for (int w = 0; w < p->n_threads; w++) p->free_at[w] = 0.0;
    for (int i = 0; i < n_tasks; i++) {
        int w = 0;
        for (int v = 1; v < p->n_threads; v++)
            if (p->free_at[v] < p->free_at[w]) w = v;
        const double t0 = p->tracing ? thread_cpu_s() : 0.0;
        fn(ctx, i, w);
        const double dt = p->tracing ? thread_cpu_s() - t0 : 0.0;
        p->free_at[w] += dt;
        p->trace.task_s += dt;
        p->trace.tasks += p->tracing;
    }
    double span = 0.0;
    for (int w = 0; w < p->n_threads; w++) span = p->free_at[w] > span ? p->free_at[w] : span;
    p->trace.span_s += span;
}

static void run_threads(attn_pool *p, int n_tasks, attn_pool_fn fn, void *ctx) {
    pthread_mutex_lock(&p->lock);
    p->fn = fn;
    p->ctx = ctx;
    p->n_tasks = n_tasks;
    p->next_task = 0;
    p->finished = 0;
    __atomic_store_n(&p->generation, p->generation + 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&p->wake);
    work(p, 0);
    if (p->finished < p->n_tasks) { /* the others are finishing their last tasks: spin first */
        pthread_mutex_unlock(&p->lock);
        for (int i = 0; i < SPIN && __atomic_load_n(&p->finished, __ATOMIC_ACQUIRE) < n_tasks; i++)
            CPU_RELAX();
        pthread_mutex_lock(&p->lock);
    }
    while (p->finished < p->n_tasks) pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

void attn_pool_run(attn_pool *p, int n_tasks, attn_pool_fn fn, void *ctx) {
    if (n_tasks <= 0) return;
    const double t0 = p && p->tracing ? thread_cpu_s() : 0.0;
    if (p && p->measuring) {
        run_measuring(p, n_tasks, fn, ctx);
    } else if (!p || p->n_threads == 1 || n_tasks == 1) {
        for (int i = 0; i < n_tasks; i++) fn(ctx, i, 0);
        if (p && p->tracing) {
            p->trace.task_s += thread_cpu_s() - t0;
            p->trace.tasks += n_tasks;
        }
    } else {
        run_threads(p, n_tasks, fn, ctx);
    }
    if (p && p->tracing) {
        p->inside_s += thread_cpu_s() - t0;
        p->trace.runs++;
    }
}

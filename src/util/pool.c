/* pool.c -- a fixed set of threads made once per run (attn_threads.h). attn_pool_run hands out
 * task indices from a shared counter; the caller's thread works too (worker 0) and returns when
 * every task has finished. Which worker runs which task varies from run to run: callers make the
 * result a function of the task alone.
 *
 * Taking a task takes no lock: a run is published as one word (run number, task count, next
 * task) and a thread claims a task with a compare-and-swap on it; finishing one is an atomic
 * add. Task 0 is the caller's, published as taken. The mutex and condition variables are only
 * for sleeping: a thread that runs out of work spins for up to SPIN pause instructions (~105 us
 * measured on the 2-core EPYC) before it sleeps, so that the short serial gaps between the runs
 * of a training step (the loss, Adam) do not cost a sleep and a wake-up each, and the caller
 * wakes sleepers only when there are some. (With a mutex around every task taken and finished
 * the threads also met there: bench/README.md, "Where the 2-thread runs' extra CPU goes".) */
#include "attn_threads.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

/* Pause instructions a waiting thread spins before sleeping (~52 ns each on the EPYC: ~105 us);
 * under AMD's default pause filter (3000 pauses in a row) so that a spinning virtual CPU does not
 * exit to the hypervisor. */
#define SPIN 2000

/* One worker's share of a trace, on its own cache line (no sharing between workers). */
typedef struct worker_trace {
    _Alignas(64) double task_s; /* CPU time in tasks */
    long tasks;
} worker_trace;

struct attn_pool {
    int n_threads; /* workers, the caller's thread included */
    pthread_t *tid;
    int started;          /* threads actually started (workers 1..started) */
    pthread_mutex_t lock; /* only for sleeping and waking: taking a task takes no lock */
    pthread_cond_t wake, done;
    /* the current run, written by the caller before it publishes the run in `ticket` and not
     * changed until every one of its tasks has finished */
    attn_pool_fn fn;
    void *ctx;
    int base;       /* the run's first task (runs of more than MAX_RUN tasks go in pieces) */
    uint32_t run;   /* the caller's count of runs */
    bool measuring; /* attn_pool_create_measuring: every task on the caller's thread */
    bool tracing;
    const attn_ranks *ranks; /* attn_pool_set_ranks (borrowed), NULL: none */
    /* run number << 32 | tasks << 16 | next task: one word, so that a thread that claims a task
     * with a compare-and-swap knows it belongs to the run it saw (its own cache line) */
    _Alignas(64) uint64_t ticket;
    _Alignas(64) int finished; /* tasks of the current run finished */
    int sleepers;              /* workers asleep on `wake` (or about to be) */
    int caller_waiting;        /* the caller asleep on `done` (or about to be) */
    bool quit;
    /* measuring (attn_pool_trace_start) */
    double trace_t0, inside_s;
    attn_pool_trace trace;
    double *free_at;   /* measuring: [n_threads] simulated finish times within a run */
    worker_trace *per; /* [n_threads] */
};

/* Tasks in one published run: the ticket's fields are 16 bits. */
#define MAX_RUN 0xffff

typedef struct worker_arg {
    attn_pool *p;
    int worker;
} worker_arg;

static double thread_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The next task of run `run`, or -1 when it has none left (or a later run was published);
 * *n its task count. */
static int claim(attn_pool *p, uint32_t run, int *n) {
    uint64_t v = __atomic_load_n(&p->ticket, __ATOMIC_ACQUIRE);
    for (;;) {
        const uint32_t tasks = (uint32_t)(v >> 16) & MAX_RUN, next = (uint32_t)v & MAX_RUN;
        if ((uint32_t)(v >> 32) != run || next >= tasks) return -1;
        if (__atomic_compare_exchange_n(&p->ticket, &v, v + 1, true, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            *n = (int)tasks;
            return (int)next;
        }
    }
}

/* Runs `task` (if >= 0; a run of n tasks), then takes tasks of run `run` until none is left. The
 * run's fn, ctx and base cannot change while a task of it is claimed and unfinished. */
static void work(attn_pool *p, int worker, uint32_t run, int task, int n) {
    for (; task >= 0; task = claim(p, run, &n)) {
        const bool tracing = p->tracing;
        const double t0 = tracing ? thread_cpu_s() : 0.0;
        p->fn(p->ctx, p->base + task, worker);
        if (tracing) {
            p->per[worker].task_s += thread_cpu_s() - t0;
            p->per[worker].tasks++;
        }
        /* the last task wakes the caller if it went to sleep (seq_cst on both sides: either it
         * sees the count or this thread sees it waiting) */
        if (__atomic_add_fetch(&p->finished, 1, __ATOMIC_SEQ_CST) == n &&
            __atomic_load_n(&p->caller_waiting, __ATOMIC_SEQ_CST)) {
            pthread_mutex_lock(&p->lock);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->lock);
        }
    }
}

static uint32_t current_run(const attn_pool *p) {
    return (uint32_t)(__atomic_load_n(&p->ticket, __ATOMIC_SEQ_CST) >> 32);
}

/* Spins until a run after `seen` is published or SPIN pauses have passed; true if one was. */
static bool spin_for_run(const attn_pool *p, uint32_t seen) {
    for (int i = 0; i < SPIN; i++) {
        if ((uint32_t)(__atomic_load_n(&p->ticket, __ATOMIC_ACQUIRE) >> 32) != seen) return true;
        CPU_RELAX();
    }
    return false;
}

static void *worker_main(void *arg) {
    worker_arg *a = arg;
    attn_pool *p = a->p;
    const int worker = a->worker;
    free(a);
    uint32_t seen = 0;
    for (;;) {
        if (!spin_for_run(p, seen)) {
            pthread_mutex_lock(&p->lock);
            __atomic_add_fetch(&p->sleepers, 1, __ATOMIC_SEQ_CST);
            while (!p->quit && current_run(p) == seen) pthread_cond_wait(&p->wake, &p->lock);
            __atomic_sub_fetch(&p->sleepers, 1, __ATOMIC_SEQ_CST);
            pthread_mutex_unlock(&p->lock);
        }
        if (__atomic_load_n(&p->quit, __ATOMIC_ACQUIRE)) break;
        seen = current_run(p);
        int n = 0;
        const int task = claim(p, seen, &n);
        work(p, worker, seen, task, n);
    }
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

/* A zeroed pool (its atomics on their own cache lines: aligned) with n_threads per-worker trace
 * slots and a lock; NULL when out of memory. */
static attn_pool *pool_alloc(int n_threads) {
    attn_pool *p = aligned_alloc(_Alignof(attn_pool), sizeof *p);
    if (!p) return NULL;
    memset(p, 0, sizeof *p);
    const size_t per = (size_t)n_threads * sizeof *p->per;
    p->per = aligned_alloc(_Alignof(worker_trace), per);
    p->tid = calloc((size_t)n_threads, sizeof *p->tid);
    if (!p->per || !p->tid || pthread_mutex_init(&p->lock, NULL) != 0) {
        free(p->per);
        free(p->tid);
        free(p);
        return NULL;
    }
    memset(p->per, 0, per);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    p->n_threads = n_threads;
    return p;
}

attn_status attn_pool_create(int n_threads, attn_pool **out, attn_error *err) {
    *out = NULL;
    if (n_threads < 1 || n_threads > ATTN_MAX_THREADS)
        return attn_errorf(err, ATTN_ERR_ARG, "threads = %d, expected 1..%d", n_threads,
                           ATTN_MAX_THREADS);
    attn_pool *p = pool_alloc(n_threads);
    if (!p) return attn_errorf(err, ATTN_ERR_NOMEM, "thread pool: out of memory");
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
    attn_pool *p = pool_alloc(n_threads);
    if (p) p->free_at = calloc((size_t)n_threads, sizeof *p->free_at);
    if (!p || !p->free_at) {
        attn_pool_free(p);
        return attn_errorf(err, ATTN_ERR_NOMEM, "thread pool: out of memory");
    }
    p->measuring = true;
    *out = p;
    return ATTN_OK;
}

void attn_pool_trace_start(attn_pool *p) {
    if (!p) return;
    p->trace = (attn_pool_trace){0};
    for (int w = 0; w < p->n_threads; w++) p->per[w].task_s = 0.0, p->per[w].tasks = 0;
    p->inside_s = 0.0;
    p->tracing = true;
    p->trace_t0 = thread_cpu_s();
}

attn_pool_trace attn_pool_trace_read(attn_pool *p) {
    if (!p || !p->tracing) return (attn_pool_trace){0};
    attn_pool_trace t = p->trace;
    for (int w = 0; w < p->n_threads; w++) t.task_s += p->per[w].task_s, t.tasks += p->per[w].tasks;
    t.caller_s = thread_cpu_s() - p->trace_t0;
    t.serial_s = t.caller_s - p->inside_s;
    return t;
}

void attn_pool_free(attn_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->lock);
    __atomic_store_n(&p->quit, true, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (int w = 1; w <= p->started; w++) pthread_join(p->tid[w], NULL);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->lock);
    free(p->free_at);
    free(p->per);
    free(p->tid);
    free(p);
}

int attn_pool_threads(const attn_pool *p) {
    return p ? p->n_threads : 1;
}

void attn_pool_set_ranks(attn_pool *p, const attn_ranks *r) {
    p->ranks = r;
}

const attn_ranks *attn_pool_ranks(const attn_pool *p) {
    return p && p->ranks && p->ranks->size > 1 ? p->ranks : NULL;
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

/* Publishes tasks base .. base + n_tasks - 1 (n_tasks <= MAX_RUN), works on them and returns
 * when all have finished. */
static void run_threads(attn_pool *p, int base, int n_tasks, attn_pool_fn fn, void *ctx) {
    p->fn = fn;
    p->ctx = ctx;
    p->base = base;
    __atomic_store_n(&p->finished, 0, __ATOMIC_RELAXED);
    const uint32_t run = ++p->run;
    /* task 0 is the caller's (published as taken): the same thread runs the same task from run
     * to run when the others are awake, so a training step's micro-batch 0 and its replica stay
     * in one core's caches */
    __atomic_store_n(&p->ticket, (uint64_t)run << 32 | (uint64_t)n_tasks << 16 | 1,
                     __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&p->sleepers, __ATOMIC_SEQ_CST)) { /* else they spin and see it */
        pthread_mutex_lock(&p->lock);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->lock);
    }
    work(p, 0, run, 0, n_tasks);
    /* the others are finishing their last tasks: spin first, then sleep */
    for (int i = 0; i < SPIN && __atomic_load_n(&p->finished, __ATOMIC_ACQUIRE) < n_tasks; i++)
        CPU_RELAX();
    if (__atomic_load_n(&p->finished, __ATOMIC_ACQUIRE) < n_tasks) {
        pthread_mutex_lock(&p->lock);
        __atomic_store_n(&p->caller_waiting, 1, __ATOMIC_SEQ_CST);
        while (__atomic_load_n(&p->finished, __ATOMIC_SEQ_CST) < n_tasks)
            pthread_cond_wait(&p->done, &p->lock);
        __atomic_store_n(&p->caller_waiting, 0, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&p->lock);
    }
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
        for (int base = 0; base < n_tasks; base += MAX_RUN)
            run_threads(p, base, n_tasks - base < MAX_RUN ? n_tasks - base : MAX_RUN, fn, ctx);
    }
    if (p && p->tracing) {
        p->inside_s += thread_cpu_s() - t0;
        p->trace.runs++;
    }
}

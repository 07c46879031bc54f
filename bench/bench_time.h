/* bench_time.h -- the clocks and the median every benchmark here reports (header-only: CMake
 * builds every C file in bench/ as its own program).
 *
 *   bench_now_s(CLOCK_MONOTONIC): wall seconds; bench_now_s(CLOCK_THREAD_CPUTIME_ID): this
 *   thread's CPU seconds (which other processes on a busy machine disturb less).
 *   bench_median(v, n): the median of v[n] (sorts v in place; the mean of the middle two for
 *   even n).
 *   bench_one_blas_thread(argv): the one BLAS thread the single-thread timings assume. OpenBLAS
 *   reads OPENBLAS_NUM_THREADS when it loads, so without it the program runs itself again with it
 *   set to 1 (idle worker threads of a larger pool would spin beside the timed thread; PyTorch's
 *   side gets the same variable), then sets attn's count to 1.
 */
#ifndef ATTN_BENCH_TIME_H
#define ATTN_BENCH_TIME_H

#include "attn_kernels.h"

#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static inline double bench_now_s(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static inline double bench_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static inline void bench_one_blas_thread(char **argv) {
    if (!getenv("OPENBLAS_NUM_THREADS")) {
        setenv("OPENBLAS_NUM_THREADS", "1", 1);
        execv("/proc/self/exe", argv);
    }
    attn_set_num_threads(1);
}

#endif

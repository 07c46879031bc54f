/* bench_time.h -- the clocks and the median every benchmark here reports (header-only: CMake
 * builds every C file in bench/ as its own program).
 *
 *   bench_now_s(CLOCK_MONOTONIC): wall seconds; bench_now_s(CLOCK_THREAD_CPUTIME_ID): this
 *   thread's CPU seconds (which other processes on a busy machine disturb less).
 *   bench_median(v, n): the median of v[n] (sorts v in place; the mean of the middle two for
 *   even n).
 */
#ifndef ATTN_BENCH_TIME_H
#define ATTN_BENCH_TIME_H

#include <stdlib.h>
#include <time.h>

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

#endif

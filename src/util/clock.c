/* clock.c -- the one monotonic clock every room times with (attn_util.h). */
#include "attn_util.h"

#include <time.h>

double attn_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

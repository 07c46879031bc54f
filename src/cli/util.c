/* util.c -- small helpers the commands share: the clock, durations, plurals, the atomic file
 * write and the set names. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double cli_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void cli_fmt_duration(char *buf, size_t n, double s) {
    if (!isfinite(s) || s < 0) s = 0;
    if (s < 60)
        snprintf(buf, n, "%.1f s", s);
    else if (s < 3600)
        snprintf(buf, n, "%dm%02ds", (int)s / 60, (int)s % 60);
    else
        snprintf(buf, n, "%dh%02dm", (int)s / 3600, ((int)s / 60) % 60);
}

const char *cli_plural(int n, const char *one, const char *many) {
    return n == 1 ? one : many;
}

attn_status cli_write_atomic(const char *path, const char *text, size_t len, attn_error *err) {
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 5);
    if (!tmp) return attn_errorf(err, ATTN_ERR_NOMEM, "%s: out of memory", path);
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp", 5);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        attn_errorf(err, ATTN_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
        free(tmp);
        return ATTN_ERR_IO;
    }
    bool ok = fwrite(text, 1, len, f) == len && fflush(f) == 0 && fsync(fileno(f)) == 0;
    int saved = errno;
    if (fclose(f) != 0 && ok) {
        ok = false;
        saved = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = false;
        saved = errno;
    }
    if (!ok) {
        remove(tmp);
        attn_errorf(err, ATTN_ERR_IO,
                    "%s: writing %s failed: %s (the old file, if any, is untouched)", path, tmp,
                    strerror(saved));
    }
    free(tmp);
    return ok ? ATTN_OK : ATTN_ERR_IO;
}

bool cli_sets_from_name(const char *name, attn_set *sets, int *n) {
    if (strcmp(name, "all") == 0) {
        memcpy(sets, cli_test_sets, sizeof cli_test_sets);
        *n = ATTN_N_TEST_SETS;
        return true;
    }
    attn_error err;
    *n = attn_set_from_name(name, &sets[0], &err) == ATTN_OK;
    return *n == 1;
}

int cli_set_default_n(attn_set s) {
    return s == ATTN_SET_TRAIN     ? ATTN_TRAIN_DEFAULT_N
           : s == ATTN_SET_HOLDOUT ? ATTN_HOLDOUT_DEFAULT_N
                                   : ATTN_TEST_DEFAULT_N;
}

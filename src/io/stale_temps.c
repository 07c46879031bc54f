/* stale_temps.c -- the temporaries a killed writer left beside its output (io_internal.h). The
 * atomic writer (io_common.c) names them NAME.tmp.PID.N.XXXXXX: the writer's process id, a
 * per-process serial number and 6 hex digits of the clock. A kill -9 between creating one and
 * renaming it leaves it behind; the next write to NAME removes those whose process is gone. */
#include "io_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Decimal digits at *s, at least one; *s moves past them; false if none. */
static bool skip_digits(const char **s, long *value) {
    const char *p = *s;
    long v = 0;
    while (*p >= '0' && *p <= '9' && v < LONG_MAX / 10) v = v * 10 + (*p++ - '0');
    if (p == *s || (*p >= '0' && *p <= '9')) return false;
    *value = v;
    *s = p;
    return true;
}

/* The PID of entry when it is base + ".tmp.PID.N.XXXXXX" (XXXXXX: 6 lowercase hex digits), else
 * 0. */
static long temp_pid(const char *entry, const char *base, size_t base_len) {
    if (strncmp(entry, base, base_len) != 0 || strncmp(entry + base_len, ".tmp.", 5) != 0) return 0;
    const char *s = entry + base_len + 5;
    long pid = 0, serial = 0;
    if (!skip_digits(&s, &pid) || *s++ != '.' || !skip_digits(&s, &serial) || *s++ != '.') return 0;
    for (int i = 0; i < 6; i++, s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f'))) return 0;
    return *s == '\0' && pid > 0 ? pid : 0;
}

/* Whether process pid is gone (signal 0 reaches no process). A process of another user counts
 * as alive (EPERM), as does this one. */
static bool process_gone(long pid) {
    if (pid > INT_MAX) return true; /* no process has such an id */
    if (pid == (long)getpid()) return false;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

void attn_io_remove_stale_temps(const char *path) {
    char dir[PATH_MAX];
    attn_path_dir(path, dir, sizeof dir);
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    const size_t base_len = strlen(base);
    DIR *d = opendir(dir);
    if (!d) return; /* best effort: the write itself reports a directory it cannot use */
    const int dfd = dirfd(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        const long pid = temp_pid(e->d_name, base, base_len);
        struct stat sb;
        if (pid > 0 && process_gone(pid) &&
            fstatat(dfd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode))
            unlinkat(dfd, e->d_name, 0);
    }
    closedir(d);
}

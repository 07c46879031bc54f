/* lock.c -- advisory locks (flock) on a run's outputs, so that a second `attn train`,
 * `reproduce`, `figures` or `experiment` writing the same file or directory is refused at once
 * instead of interleaving its log or mixing its results with the first run's. A directory is
 * locked itself; a file through PATH.lock beside it (the file is replaced by rename, so its own
 * inode would not do), removed when the run ends. The kernel drops every lock when the
 * process ends, kill -9 included; a PATH.lock left by one is taken over by the next run. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_LOCK_FILES 8

static char *lock_files[MAX_LOCK_FILES];
static int n_lock_files;
static pid_t lock_owner;

static void remove_lock_files(void) {
    if (getpid() != lock_owner) return; /* a forked worker exiting */
    for (int i = 0; i < n_lock_files; i++) unlink(lock_files[i]);
}

static int refused(const char *cmd, const char *opt, const char *path) {
    return cli_runtime_error(cmd,
                             "%s %s: another attn run is writing there (it holds the lock); wait "
                             "for it to finish or choose another %s",
                             opt, path, opt);
}

/* Under mpirun every rank runs the same command: only rank 0 writes, so only it locks. */
static bool secondary_rank(void) {
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v && strcmp(v, "0") != 0) return true;
    }
    return false;
}

static int lock_file(const char *cmd, const char *opt, const char *path) {
    if (n_lock_files == MAX_LOCK_FILES) return cli_runtime_error(cmd, "too many outputs to lock");
    const size_t n = strlen(path) + 6;
    char *lp = malloc(n);
    if (!lp) return cli_runtime_error(cmd, "out of memory");
    snprintf(lp, n, "%s.lock", path);
    for (;;) {
        const int fd = open(lp, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0) {
            const int e = errno;
            free(lp);
            return cli_runtime_error(cmd, "%s %s: cannot create its lock file: %s", opt, path,
                                     strerror(e));
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            close(fd);
            free(lp);
            return refused(cmd, opt, path);
        }
        struct stat held, named;
        if (fstat(fd, &held) == 0 && stat(lp, &named) == 0 && held.st_ino == named.st_ino &&
            held.st_dev == named.st_dev)
            break; /* fd stays open until the process ends */
        close(fd); /* the previous holder removed it meanwhile: take the new one */
    }
    if (n_lock_files == 0) {
        lock_owner = getpid();
        atexit(remove_lock_files);
    }
    lock_files[n_lock_files++] = lp;
    return CLI_OK;
}

int cli_lock_output(const char *cmd, const char *opt, const char *path) {
    if (secondary_rank()) return CLI_OK;
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return lock_file(cmd, opt, path);
    const int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return cli_runtime_error(cmd, "%s %s: %s", opt, path, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        close(fd);
        return refused(cmd, opt, path);
    }
    return CLI_OK; /* fd stays open until the process ends */
}

int cli_check_plot_name(const char *cmd, const char *opt, const char *path) {
    const size_t n = strlen(path);
    if ((n > 4 && strcmp(path + n - 4, ".png") == 0) ||
        (n > 4 && strcmp(path + n - 4, ".svg") == 0))
        return cli_check_dest(cmd, opt, path);
    return cli_usage_error(cmd, "%s %s: the file name must end in .png or .svg", opt, path);
}

/* plot_files.c -- the gnuplot driver's temporary files (beside the destination) and its run
 * of gnuplot: the script's messages captured into the error message, the chart checked
 * (complete PNG or SVG), synced and renamed over the destination; nothing left behind on
 * failure (plot.c writes the scripts). */
#include "plot_files.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* ---- temporary files ------------------------------------------------------------------- */

static bool make_tmp(char **name, const char *path, const char *stem) {
    const size_t n = strlen(path) + strlen(stem) + 16;
    if (!(*name = malloc(n))) return false;
    snprintf(*name, n, "%s.%s.tmpXXXXXX", path, stem);
    int fd = mkstemp(*name);
    if (fd < 0) {
        free(*name);
        *name = NULL;
        return false;
    }
    close(fd);
    return true;
}

static void remove_tmp(char **name) {
    if (*name) remove(*name);
    free(*name);
    *name = NULL;
}

static void files_close(plot_files *f) {
    if (f->data_f) fclose(f->data_f);
    if (f->script_f) fclose(f->script_f);
    f->data_f = f->script_f = NULL;
}

static void files_remove(plot_files *f) {
    files_close(f);
    remove_tmp(&f->data);
    remove_tmp(&f->script);
    remove_tmp(&f->log);
    remove_tmp(&f->out_tmp);
}

attn_status plot_files_open(plot_files *f, const char *path, attn_error *err) {
    memset(f, 0, sizeof *f);
    if (!make_tmp(&f->data, path, "data") || !make_tmp(&f->script, path, "gp") ||
        !make_tmp(&f->log, path, "log") || !make_tmp(&f->out_tmp, path, "out")) {
        attn_status st = attn_errorf(err, ATTN_ERR_IO, "plot %s: cannot write beside it: %s", path,
                                     strerror(errno));
        files_remove(f);
        return st;
    }
    f->data_f = fopen(f->data, "w");
    f->script_f = fopen(f->script, "w");
    if (!f->data_f || !f->script_f) {
        files_remove(f);
        return attn_errorf(err, ATTN_ERR_IO, "plot %s: cannot open a temporary file", path);
    }
    return ATTN_OK;
}

bool plot_ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* ---- running gnuplot ------------------------------------------------------------------- */

/* gnuplot's pngcairo and svg terminals exit 0 after a short write (a full disk, a file size
 * limit), so the chart is checked before it replaces anything: a PNG must end with its IEND
 * chunk, an SVG with </svg>; then it is synced to disk. */
static attn_status check_output(const char *tmp, const char *path, attn_error *err) {
    static const unsigned char iend[12] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xAE, 0x42, 0x60, 0x82};
    const bool png = plot_ends_with(path, ".png");
    int fd = open(tmp, O_RDWR);
    if (fd < 0)
        return attn_errorf(err, ATTN_ERR_IO, "plot %s: gnuplot wrote nothing: %s", path,
                           strerror(errno));
    struct stat st = {0};
    unsigned char tail[64] = {0};
    const off_t want = png ? 12 : (off_t)sizeof tail;
    bool ok = fstat(fd, &st) == 0 && st.st_size >= 12;
    size_t n = 0;
    if (ok) {
        const off_t at = st.st_size > want ? st.st_size - want : 0;
        const ssize_t got = pread(fd, tail, (size_t)(st.st_size - at), at);
        ok = got == st.st_size - at;
        n = ok ? (size_t)got : 0;
    }
    if (ok && png) {
        ok = memcmp(tail, iend, sizeof iend) == 0;
    } else if (ok) { /* the last non-space characters are </svg> */
        while (n > 0 && (tail[n - 1] == '\n' || tail[n - 1] == ' ' || tail[n - 1] == '\r')) n--;
        ok = n >= 6 && memcmp(tail + n - 6, "</svg>", 6) == 0;
    }
    const bool synced = ok && fsync(fd) == 0;
    close(fd);
    if (!ok)
        return attn_errorf(err, ATTN_ERR_IO,
                           "plot %s: gnuplot's output is incomplete (%lld bytes, no %s end; "
                           "disk full or a file size limit?)",
                           path, (long long)st.st_size, png ? "PNG IEND" : "</svg>");
    if (!synced)
        return attn_errorf(err, ATTN_ERR_IO, "plot %s: cannot sync it to disk: %s", path,
                           strerror(errno));
    return ATTN_OK;
}

static attn_status run_gnuplot(plot_files *f, const char *path, attn_error *err) {
    if (fflush(f->data_f) || ferror(f->data_f) || fflush(f->script_f) || ferror(f->script_f))
        return attn_errorf(err, ATTN_ERR_IO, "plot %s: cannot write a temporary file", path);
    files_close(f);
    posix_spawn_file_actions_t acts;
    posix_spawn_file_actions_init(&acts);
    posix_spawn_file_actions_addopen(&acts, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&acts, 1, f->log, O_WRONLY | O_TRUNC, 0);
    posix_spawn_file_actions_adddup2(&acts, 1, 2);
    char *argv[] = {"gnuplot", f->script, NULL};
    pid_t pid;
    int rc = posix_spawnp(&pid, "gnuplot", &acts, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&acts);
    if (rc != 0)
        return attn_errorf(err, ATTN_ERR_IO, "plot %s: cannot run gnuplot: %s", path, strerror(rc));
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return attn_errorf(err, ATTN_ERR_IO, "plot %s: waiting for gnuplot: %s", path,
                               strerror(errno));
    char msg[600] = "";
    FILE *log = fopen(f->log, "r");
    if (log) {
        size_t n = fread(msg, 1, sizeof msg - 1, log);
        msg[n] = '\0';
        fclose(log);
    }
    bool failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0 || strstr(msg, "rror");
    if (failed) {
        for (char *c = msg; *c; c++)
            if (*c == '\n') *c = ' ';
        return attn_errorf(err, ATTN_ERR_IO, "plot %s: gnuplot failed: %s", path,
                           msg[0] ? msg : "no message");
    }
    attn_status st = check_output(f->out_tmp, path, err);
    if (st != ATTN_OK) return st;
    mode_t mask = umask(0); /* mkstemp made it 0600: give it a normal file's mode */
    umask(mask);
    chmod(f->out_tmp, 0666 & ~mask);
    if (rename(f->out_tmp, path) != 0)
        return attn_errorf(err, ATTN_ERR_IO, "plot %s: rename failed: %s", path, strerror(errno));
    free(f->out_tmp);
    f->out_tmp = NULL;
    return ATTN_OK;
}

bool attn_plot_available(void) {
    const char *paths = getenv("PATH");
    if (!paths) return false;
    char dir[4096];
    while (*paths) {
        size_t n = strcspn(paths, ":");
        if (n > 0 && n < sizeof dir - 16) {
            memcpy(dir, paths, n);
            snprintf(dir + n, sizeof dir - n, "/gnuplot");
            if (access(dir, X_OK) == 0) return true;
        }
        paths += n + (paths[n] == ':');
    }
    return false;
}

attn_status plot_finish(plot_files *f, const char *path, attn_status st, attn_error *err) {
    if (st == ATTN_OK) st = run_gnuplot(f, path, err);
    files_remove(f);
    return st;
}

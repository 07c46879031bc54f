/* cli_harness.h -- running the built attn binary ($ATTN_BINARY) from a Check test: a child
 * process (fork/exec, stdout/stderr captured to temp files, exit status via waitpid), files in
 * a per-suite temp directory, and assertions on exit codes and messages. Shared by the
 * tests/cli suites. */
#ifndef ATTN_TEST_CLI_HARNESS_H
#define ATTN_TEST_CLI_HARNESS_H

#include "test_util.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- running the binary --------------------------------------------------------------------- */

static char tmp_dir[64]; /* created in main, removed after the suite */
/* Working directory of the next runs (NULL: the test's own). */
static const char *child_cwd;

typedef struct run_result {
    int code;  /* exit status, or 128 + signal */
    char *out; /* captured stdout (NUL-terminated) */
    char *err; /* captured stderr */
} run_result;

/* text (NUL-terminated) to path, created or truncated. */
static inline void write_file(const char *path, const char *text) {
    tu_write_file(path, text, strlen(text));
}

/* tmp_dir/name in a static ring of buffers (a few may be live at once). */
static inline const char *tmp_path(const char *name) {
    static char bufs[8][256];
    static int next;
    char *b = bufs[next++ % 8];
    snprintf(b, sizeof bufs[0], "%s/%s", tmp_dir, name);
    return b;
}

/* Runs `attn args...` (NULL-terminated argv after the program name) with stdin_text (NULL:
 * /dev/null) on stdin. */
static inline run_result run_argv(const char *stdin_text, char **args) {
    const char *bin = getenv("ATTN_BINARY");
    ck_assert_msg(bin && *bin, "ATTN_BINARY is not set (run through ctest)");
    static int serial;
    char in_path[256], out_path[256], err_path[256];
    int id = serial++;
    snprintf(in_path, sizeof in_path, "%s/.stdin%d.%d", tmp_dir, (int)getpid(), id);
    snprintf(out_path, sizeof out_path, "%s/.stdout%d.%d", tmp_dir, (int)getpid(), id);
    snprintf(err_path, sizeof err_path, "%s/.stderr%d.%d", tmp_dir, (int)getpid(), id);
    if (stdin_text) write_file(in_path, stdin_text);
    char *argv[64];
    int argc = 0;
    argv[argc++] = (char *)bin;
    for (int i = 0; args[i]; i++) {
        ck_assert(argc < 63);
        argv[argc++] = args[i];
    }
    argv[argc] = NULL;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    ck_assert_msg(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        int in = open(stdin_text ? in_path : "/dev/null", O_RDONLY);
        int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (in < 0 || out < 0 || err < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
            _exit(125);
        if (child_cwd && chdir(child_cwd) != 0) _exit(125);
        /* the kernels of this test (pinned unless $ATTN_KERNELS says): the goldens hold them,
         * whatever the command's own default (src/cli/kernels_policy.c) */
        if (!getenv("ATTN_KERNELS") && setenv("ATTN_KERNELS", "pinned", 1) != 0) _exit(125);
        execv(bin, argv);
        _exit(126);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) ck_assert_msg(errno == EINTR, "waitpid failed");
    run_result r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = tu_read_file(out_path, NULL);
    r.err = tu_read_file(err_path, NULL);
    ck_assert_msg(r.out && r.err, "cannot read the captured output of %s", bin);
    ck_assert_msg(r.code != 125 && r.code != 126, "cannot run %s", bin);
    unlink(in_path);
    unlink(out_path);
    unlink(err_path);
    return r;
}

/* run(stdin_text, "cmd", "--opt", value, ..., NULL) */
static inline run_result run(const char *stdin_text, ...) {
    char *args[64];
    int n = 0;
    va_list ap;
    va_start(ap, stdin_text);
    for (const char *a; (a = va_arg(ap, const char *)) != NULL;) {
        ck_assert(n < 63);
        args[n++] = (char *)a;
    }
    va_end(ap);
    args[n] = NULL;
    return run_argv(stdin_text, args);
}

static inline void run_free(run_result *r) {
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

/* Asserts the exit code and that stderr contains every fragment (NULL-terminated list). */
static inline void expect(const run_result *r, const char *what, int code, ...) {
    ck_assert_msg(r->code == code, "%s: exit code %d, expected %d; stderr: %s", what, r->code, code,
                  r->err);
    va_list ap;
    va_start(ap, code);
    for (const char *frag; (frag = va_arg(ap, const char *)) != NULL;)
        ck_assert_msg(strstr(r->err, frag) != NULL, "%s: stderr does not mention '%s': %s", what,
                      frag, r->err);
    va_end(ap);
}

static inline const char *golden(const char *name) {
    static char bufs[4][512];
    static int next;
    char *b = bufs[next++ % 4];
    char rel[128];
    snprintf(rel, sizeof rel, "weights/golden/%s.weights.json", name);
    snprintf(b, sizeof bufs[0], "%s", tu_source_path(rel));
    return b;
}

/* Copy of `src` with the first occurrence of `from` replaced by `to`, written to tmp_dir/name;
 * returns the new path. */
static inline const char *edit_copy(const char *src, const char *from, const char *to,
                                    const char *name) {
    char *text = tu_read_text(src);
    char *out = tu_replace_once(text, src, from, to);
    const char *path = tmp_path(name);
    write_file(path, out);
    free(out);
    free(text);
    return path;
}

static inline bool files_equal(const char *a, const char *b) {
    size_t na, nb;
    char *ta = tu_read_file(a, &na), *tb = tu_read_file(b, &nb);
    bool same = ta && tb && na == nb && memcmp(ta, tb, na) == 0;
    free(ta);
    free(tb);
    return same;
}

static inline bool exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}
/* Sum over the tensors of a weights JSON of the product of their shapes (independent of attn). */
static inline long count_params_in_file(const char *path) {
    cJSON *j = tu_load_json(path);
    const cJSON *tensors = cJSON_GetObjectItemCaseSensitive(j, "tensors"), *t;
    long total = 0;
    cJSON_ArrayForEach(t, tensors) {
        const cJSON *shape = cJSON_GetObjectItemCaseSensitive(t, "shape"), *d;
        long numel = 1;
        cJSON_ArrayForEach(d, shape) numel *= d->valueint;
        total += numel;
    }
    cJSON_Delete(j);
    return total;
}

/* ---- the temp dir --------------------------------------------------------------------------- */

/* Runs suite s inside a fresh temporary folder (tmp_dir) and removes the folder after; the
 * process exit code (what every CLI test's main returns). */
__attribute__((unused)) static int cli_run_suite_in_tmp(Suite *s) {
    return tu_run_suite_in_tmp(s, tmp_dir, sizeof tmp_dir, "cli");
}

#endif

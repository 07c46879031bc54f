/* test_stale_temps.c -- src/io/stale_temps.c: a write to NAME removes the temporaries a killed
 * writer left beside it (NAME.tmp.PID.N.XXXXXX with PID no live process) and nothing else: not
 * a live process's temporary (this one's, init's), not another output's, not a name that only
 * looks like one, not a directory. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[256];

static const char *in_dir(const char *name) {
    static char bufs[4][2048];
    static int next;
    char *buf = bufs[next++ % 4];
    snprintf(buf, 2048, "%s/%s", dir, name);
    return buf;
}

static bool exists(const char *name) {
    struct stat sb;
    return lstat(in_dir(name), &sb) == 0;
}

/* A process id that was just in use and is now gone (a child that exited, reaped). */
static long dead_pid(void) {
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) _exit(0);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    return (long)pid;
}

START_TEST(test_write_removes_a_killed_runs_temporaries_only) {
    const long dead = dead_pid(), self = (long)getpid();
    char stale[2][128], kept[8][128];
    snprintf(stale[0], sizeof stale[0], "ck.json.tmp.%ld.0.00ab12", dead);
    snprintf(stale[1], sizeof stale[1], "ck.json.tmp.%ld.17.fffff0", dead);
    snprintf(kept[0], sizeof kept[0], "ck.json.tmp.%ld.0.00ab12", self);     /* alive: this one */
    snprintf(kept[1], sizeof kept[1], "ck.json.tmp.1.0.00ab12");             /* alive: init */
    snprintf(kept[2], sizeof kept[2], "w.json.tmp.%ld.0.00ab12", dead);      /* another output */
    snprintf(kept[3], sizeof kept[3], "ck.json.tmp.%ld.0.00AB12", dead);     /* not lowercase hex */
    snprintf(kept[4], sizeof kept[4], "ck.json.tmp.%ld.0.00ab12.bak", dead); /* a suffix */
    snprintf(kept[5], sizeof kept[5], "ck.json.tmp.%ld.x.00ab12", dead);     /* no serial */
    snprintf(kept[6], sizeof kept[6], "xck.json.tmp.%ld.0.00ab12", dead);    /* another name */
    snprintf(kept[7], sizeof kept[7], "notes.txt");
    for (int i = 0; i < 2; i++) tu_write_file(in_dir(stale[i]), "{\"half", 6);
    for (int i = 0; i < 8; i++) tu_write_file(in_dir(kept[i]), "keep", 4);
    char subdir[128]; /* a directory of the pattern is not a temporary */
    snprintf(subdir, sizeof subdir, "ck.json.tmp.%ld.1.000000", dead);
    ck_assert_int_eq(mkdir(in_dir(subdir), 0700), 0);
    attn_error err;
    ck_assert_msg(attn_write_file_atomic(in_dir("ck.json"), "{}\n", 3, &err) == ATTN_OK, "%s",
                  err.msg);
    for (int i = 0; i < 2; i++) ck_assert_msg(!exists(stale[i]), "%s is still there", stale[i]);
    for (int i = 0; i < 8; i++) ck_assert_msg(exists(kept[i]), "%s was removed", kept[i]);
    ck_assert(exists(subdir));
    size_t len = 0;
    char *text = tu_read_file(in_dir("ck.json"), &len);
    ck_assert(text && len == 3 && memcmp(text, "{}\n", 3) == 0);
    free(text);
    /* the writer's own temporary is gone too: only the files above and ck.json remain */
    for (int i = 0; i < 8; i++) remove(in_dir(kept[i]));
    rmdir(in_dir(subdir));
    remove(in_dir("ck.json"));
    ck_assert_int_eq(rmdir(dir), 0);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
}
END_TEST

int main(void) {
    Suite *s = suite_create("stale_temps");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_write_removes_a_killed_runs_temporaries_only);
    suite_add_tcase(s, tc);
    return tu_run_suite_in_tmp(s, dir, sizeof dir, "stale_temps");
}

/* test_cli_faults.c -- what `attn` does with hostile destinations and faults on the write side:
 * devices and symlinks as --out, extending a finished keep-best run, the log after a resume,
 * write errors (/dev/full), missing directories, two runs sharing a checkpoint, and hostile
 * input (NUL bytes, control bytes, extra TSV columns, quotes in a reproduce directory). */
#define _DEFAULT_SOURCE /* mknod, makedev */
#include "cli_harness.h"

#include <sys/sysmacros.h>

#define SMALL "--train-size", "300", "--holdout", "50"

/* Runs `attn args...` with stdout on `out_path` (e.g. /dev/full) and stderr on a file; returns
 * the exit code and the stderr text in *err_text (caller frees). */
static int run_stdout_to(const char *out_path, char **err_text, char **args) {
    const char *bin = getenv("ATTN_BINARY");
    ck_assert(bin && *bin);
    const char *err_path = tmp_path(".stderr-fault");
    char *argv[32];
    int argc = 0;
    argv[argc++] = (char *)bin;
    for (int i = 0; args[i]; i++) argv[argc++] = args[i];
    argv[argc] = NULL;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        int in = open("/dev/null", O_RDONLY);
        int out = open(out_path, O_WRONLY);
        int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (in < 0 || out < 0 || err < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
            _exit(125);
        execv(bin, argv);
        _exit(126);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) ck_assert(errno == EINTR);
    *err_text = tu_read_file(err_path, NULL);
    ck_assert(*err_text);
    ck_assert(WIFEXITED(status));
    return WEXITSTATUS(status);
}

/* The number of entries in tmp_dir/dir whose name contains `frag`. */
static int count_entries(const char *dir, const char *frag) {
    DIR *d = opendir(dir);
    ck_assert(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) n += strstr(e->d_name, frag) != NULL;
    closedir(d);
    return n;
}

/* ---- 1: devices and symlinks ----------------------------------------------------------------- */

START_TEST(test_out_to_device_kept) {
    /* A character device made here (the null device's numbers): written in place, not replaced
     * by a regular file. Needs root (mknod); /dev/null itself is checked as well. */
    const char *dev = tmp_path("nulldev");
    bool have_dev = mknod(dev, S_IFCHR | 0666, makedev(1, 3)) == 0;
    const char *targets[] = {"/dev/null", dev};
    for (int i = 0; i < (have_dev ? 2 : 1); i++) {
        run_result r =
            run(NULL, "train", "--model", "rnn", "--epochs", "0", "--out", targets[i], NULL);
        expect(&r, "train --out DEVICE", 0, NULL);
        run_free(&r);
        struct stat st;
        ck_assert_int_eq(stat(targets[i], &st), 0);
        ck_assert_msg(S_ISCHR(st.st_mode), "%s is no longer a device", targets[i]);
    }
    ck_assert_int_eq(count_entries(tmp_dir, "nulldev.tmp"), 0);
    /* /dev/full: the write error is caught. */
    run_result r =
        run(NULL, "train", "--model", "rnn", "--epochs", "0", "--out", "/dev/full", NULL);
    expect(&r, "train --out /dev/full", 1, "/dev/full", "No space left", NULL);
    run_free(&r);
    /* A directory is refused with a clear error. */
    const char *dir = tmp_path("outdir");
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    r = run(NULL, "train", "--model", "rnn", "--epochs", "0", "--out", dir, NULL);
    expect(&r, "train --out DIR", 1, dir, "is a directory", NULL);
    run_free(&r);
    rmdir(dir);
}
END_TEST

START_TEST(test_out_symlink_followed) {
    const char *target = tmp_path("target.json");
    write_file(target, "old\n");
    ck_assert_int_eq(symlink("target.json", tmp_path("link.json")), 0); /* relative target */
    const char *link = tmp_path("link.json");
    run_result r = run(NULL, "train", "--model", "rnn", "--epochs", "0", "--out", link, NULL);
    expect(&r, "train --out LINK", 0, NULL);
    run_free(&r);
    struct stat st;
    ck_assert_int_eq(lstat(link, &st), 0);
    ck_assert_msg(S_ISLNK(st.st_mode), "the link was replaced by a file");
    ck_assert_int_eq(count_params_in_file(target), 3089); /* the target got the weights */
    /* A checkpoint through a link: the same. */
    ck_assert_int_eq(symlink("ck-target.json", tmp_path("ck-link.json")), 0); /* dangling */
    r = run(NULL, "train", "--model", "rnn", "--epochs", "1", SMALL, "--checkpoint",
            tmp_path("ck-link.json"), "--out", tmp_path("w-link.json"), NULL);
    expect(&r, "train --checkpoint LINK", 0, NULL);
    run_free(&r);
    ck_assert_int_eq(lstat(tmp_path("ck-link.json"), &st), 0);
    ck_assert(S_ISLNK(st.st_mode));
    ck_assert(exists(tmp_path("ck-target.json")));
}
END_TEST

/* ---- 6: extending a finished run, the log after a resume --------------------------------------
 */

/* train --epochs 2 --checkpoint, resume to 4, against --epochs 4 straight: the same bytes. The
 * seed and sizes are chosen so that the best held-out epoch (1) is not the last (2). */
START_TEST(test_resume_after_keep_best_equals_straight_run) {
    const char *kb = _i ? "1" : "0";
    char ck[300], part[300], resumed[300], straight[300];
    snprintf(ck, sizeof ck, "%s", tmp_path(_i ? "kb1-ck.json" : "kb0-ck.json"));
    snprintf(part, sizeof part, "%s", tmp_path(_i ? "kb1-2.json" : "kb0-2.json"));
    snprintf(resumed, sizeof resumed, "%s", tmp_path(_i ? "kb1-r4.json" : "kb0-r4.json"));
    snprintf(straight, sizeof straight, "%s", tmp_path(_i ? "kb1-s4.json" : "kb0-s4.json"));
#define RUN_OPTS                                                                                   \
    "--model", "rnn", "--seed", "2", "--train-size", "1000", "--holdout", "100", "--keep-best", kb
    run_result r =
        run(NULL, "train", RUN_OPTS, "--epochs", "2", "--checkpoint", ck, "--out", part, NULL);
    expect(&r, "train 2 epochs", 0, NULL);
    run_free(&r);
    if (_i) { /* the case that went wrong: the best epoch is not the last */
        cJSON *j = tu_load_json(ck);
        ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(j, "epoch")->valueint, 2);
        ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(j, "best_epoch")->valueint, 1);
        cJSON_Delete(j);
    }
    r = run(NULL, "train", "--resume", ck, "--epochs", "4", "--out", resumed, NULL);
    expect(&r, "resume to 4 epochs", 0, NULL);
    run_free(&r);
    r = run(NULL, "train", RUN_OPTS, "--epochs", "4", "--out", straight, NULL);
    expect(&r, "train 4 epochs straight", 0, NULL);
    run_free(&r);
#undef RUN_OPTS
    ck_assert_msg(files_equal(resumed, straight),
                  "keep-best %s: 2 epochs + resume to 4 differ from 4 straight", kb);
}
END_TEST

/* The epochs of the log's lines, in order, as "1,2,3". */
static void log_epochs(const char *path, char *buf, size_t n) {
    char *text = tu_read_text(path);
    buf[0] = '\0';
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        int e = 0;
        ck_assert_msg(sscanf(line, "{\"epoch\": %d,", &e) == 1, "bad log line: %s", line);
        snprintf(buf + strlen(buf), n - strlen(buf), "%s%d", buf[0] ? "," : "", e);
    }
    free(text);
}

START_TEST(test_log_no_duplicate_epochs_after_resume) {
    /* A kill after epoch 3 was logged but before its checkpoint: the checkpoint of epoch 2 (a
     * copy), a log of epochs 1..3; resuming it must log epochs 3 and 4 once. */
    const char *ck = tmp_path("log-ck.json"), *ck2 = tmp_path("log-ck2.json");
    const char *log = tmp_path("run.jsonl"), *out = tmp_path("log-w.json");
    run_result r = run(NULL, "train", "--model", "rnn", "--epochs", "2", SMALL, "--checkpoint", ck,
                       "--log", log, "--out", out, NULL);
    expect(&r, "train 2 epochs", 0, NULL);
    run_free(&r);
    char *saved = tu_read_text(ck);
    write_file(ck2, saved);
    free(saved);
    r = run(NULL, "train", "--resume", ck, "--epochs", "3", "--log", log, "--out", out, NULL);
    expect(&r, "resume to 3", 0, NULL);
    run_free(&r);
    char epochs[128];
    log_epochs(log, epochs, sizeof epochs);
    ck_assert_str_eq(epochs, "1,2,3");
    r = run(NULL, "train", "--resume", ck2, "--epochs", "4", "--log", log, "--out", out, NULL);
    expect(&r, "resume the epoch-2 checkpoint to 4", 0, NULL);
    run_free(&r);
    log_epochs(log, epochs, sizeof epochs);
    ck_assert_str_eq(epochs, "1,2,3,4");
}
END_TEST

/* ---- 7: write errors, missing directories ------------------------------------------------------
 */

START_TEST(test_write_error_dev_full_exit_1) {
    run_result r = run(NULL, "train", "--model", "rnn", "--epochs", "1", SMALL, "--log",
                       "/dev/full", "--out", tmp_path("full-w.json"), NULL);
    expect(&r, "train --log /dev/full", 1, "/dev/full", NULL);
    run_free(&r);
    const char *w = golden("rnn");
    char *cmds[][12] = {
        {"eval", "--weights", (char *)w, "--set", "plain", "--n", "20", NULL},
        {"info", "--weights", (char *)w, NULL},
        {"flops", "--model", "rnn", NULL},
        {"vocab", NULL},
        {"data", "--set", "plain", "--n", "20", NULL},
        {"predict", "--weights", (char *)w, "great course", NULL},
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char *err = NULL;
        int code = run_stdout_to("/dev/full", &err, cmds[i]);
        ck_assert_msg(code == 1, "attn %s > /dev/full: exit %d, stderr %s", cmds[i][0], code, err);
        ck_assert_msg(strstr(err, "No space left") || strstr(err, "cannot write") ||
                          strstr(err, "error writing"),
                      "attn %s > /dev/full: %s", cmds[i][0], err);
        free(err);
    }
}
END_TEST

START_TEST(test_missing_out_dir_before_training) {
    /* 1000 epochs on 8000 sentences would run for many minutes: the error must come first. */
    /* (a file: --out creates a missing directory, so its directory must be impossible) */
    write_file(tmp_path("missing-dir"), "");
    const char *missing = tmp_path("missing-dir/x.json");
    const char *ok_out = tmp_path("ok-w.json");
    const char *opts[] = {"--out", "--checkpoint", "--log"};
    for (int i = 0; i < 3; i++) {
        const char *out = i == 0 ? missing : ok_out;
        run_result r = run(NULL, "train", "--model", "lstm", "--epochs", "1000", "--out", out,
                           i == 0 ? NULL : opts[i], missing, NULL);
        expect(&r, "train with a missing directory", 1, opts[i], "missing-dir", NULL);
        ck_assert_msg(strstr(r.err, "epoch 1") == NULL, "training started: %s", r.err);
        run_free(&r);
    }
    ck_assert(!exists(ok_out));
}
END_TEST

/* ---- 8: two runs sharing a checkpoint ---------------------------------------------------------
 * The second of two concurrent runs is refused by the lock on the checkpoint (lock.c): each run
 * either finishes or exits 1 saying so, at least one finishes, and the checkpoint is whole. */

START_TEST(test_concurrent_checkpoint_unique_tmp) {
    const char *bin = getenv("ATTN_BINARY");
    const char *ck = tmp_path("shared-ck.json");
    pid_t pids[2];
    for (int k = 0; k < 2; k++) {
        char out[300];
        snprintf(out, sizeof out, "%s/shared-w%d.json", tmp_dir, k);
        fflush(stdout);
        fflush(stderr);
        pids[k] = fork();
        ck_assert(pids[k] >= 0);
        if (pids[k] == 0) {
            char err_path[300];
            snprintf(err_path, sizeof err_path, "%s/shared-err%d.txt", tmp_dir, k);
            int null = open("/dev/null", O_RDWR);
            int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
            if (null < 0 || err < 0 || dup2(null, 1) < 0 || dup2(err, 2) < 0) _exit(125);
            execl(bin, bin, "train", "--model", "rnn", "--epochs", "6", "--train-size", "200",
                  "--holdout", "20", "--batch", "8", "--checkpoint", ck, "--out", out, (char *)0);
            _exit(126);
        }
    }
    int finished = 0;
    for (int k = 0; k < 2; k++) {
        int status = 0;
        while (waitpid(pids[k], &status, 0) < 0) ck_assert(errno == EINTR);
        char err_path[300];
        snprintf(err_path, sizeof err_path, "%s/shared-err%d.txt", tmp_dir, k);
        char *err = tu_read_file(err_path, NULL);
        ck_assert_ptr_nonnull(err);
        const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        ck_assert_msg(ok || (WIFEXITED(status) && WEXITSTATUS(status) == 1 &&
                             strstr(err, "another attn run")),
                      "run %d sharing a checkpoint failed (status %d): %s", k, status, err);
        finished += ok;
        free(err);
        remove(err_path);
    }
    ck_assert_int_ge(finished, 1);
    ck_assert_int_eq(count_entries(tmp_dir, "shared-ck.json.tmp"), 0);
    cJSON *j = tu_load_json(ck); /* a whole checkpoint, not a mix */
    ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(j, "epoch")->valueint, 6);
    cJSON_Delete(j);
}
END_TEST

/* ---- 9: hostile input -------------------------------------------------------------------------
 */

START_TEST(test_predict_nul_rejected) {
    const char *in_path = tmp_path("nul.txt");
    tu_write_file(in_path, "great course\0 boring\ngreat course\n", 34);
    const char *bin = getenv("ATTN_BINARY");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' predict --weights '%s' --format tsv < '%s' > '%s' 2> '%s'", bin,
             golden("rnn"), in_path, tmp_path("nul.out"), tmp_path("nul.err"));
    int status = system(cmd);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 1);
    char *out = tu_read_text(tmp_path("nul.out")), *err = tu_read_text(tmp_path("nul.err"));
    ck_assert_msg(strstr(err, "line 1") && strstr(err, "NUL"), "%s", err);
    /* line 2 is still classified; line 1 is not (cut at the NUL) */
    ck_assert_msg(strchr(out, '\n') == strrchr(out, '\n'), "one result expected: %s", out);
    ck_assert(strstr(out, "\tgreat course\n"));
    free(out);
    free(err);
}
END_TEST

START_TEST(test_control_bytes_escaped) {
    run_result r = run(NULL, "predict", "--weights", golden("rnn"), "great\x1b[31mcourse", NULL);
    expect(&r, "predict with an escape byte", 1, "\\x1b", NULL);
    ck_assert_msg(strchr(r.err, '\x1b') == NULL, "a raw escape byte reached stderr");
    run_free(&r);
    /* a file name with control bytes, in a library error and in a usage error */
    const char *bad = tmp_path("no\x1b]0;pwned\x07such.json");
    r = run(NULL, "info", "--weights", bad, NULL);
    expect(&r, "info of a missing file with control bytes", 1, "\\x1b]0;pwned\\x07", NULL);
    ck_assert(strchr(r.err, '\x1b') == NULL && strchr(r.err, '\x07') == NULL);
    run_free(&r);
    r = run(NULL, "eval", "--bogus\r\x1b[2J", NULL);
    expect(&r, "unknown option with control bytes", 2, "\\x0d\\x1b[2J", NULL);
    ck_assert(strchr(r.err, '\x1b') == NULL && strchr(r.err, '\r') == NULL);
    run_free(&r);
}
END_TEST

START_TEST(test_tsv_extra_column_rejected) {
    const char *tsv = tmp_path("extra.tsv");
    write_file(tsv, "1\tgreat course\n0\tboring course\tgreat\n");
    run_result r = run(NULL, "eval", "--weights", golden("rnn"), "--data", tsv, NULL);
    expect(&r, "eval of a TSV with 3 columns", 1, "extra.tsv:2", "columns", NULL);
    run_free(&r);
}
END_TEST

START_TEST(test_reproduce_json_quotes_in_path) {
    const char *dir = tmp_path("re\"po\\rt");
    run_result r = run(NULL, "reproduce", "--seeds", "1", "--epochs", "1", "--train-size", "60",
                       "--out", dir, "-j", "1", NULL);
    expect(&r, "reproduce into a directory with quotes", 0, NULL);
    run_free(&r);
    char path[512];
    snprintf(path, sizeof path, "%s/reproduce.json", dir);
    cJSON *j = tu_load_json(path);
    ck_assert_msg(j, "%s is not valid JSON", path);
    const cJSON *runs = cJSON_GetObjectItemCaseSensitive(j, "runs");
    ck_assert_int_eq(cJSON_GetArraySize(runs), 3);
    const cJSON *run0 = cJSON_GetArrayItem(runs, 0);
    const cJSON *weights = cJSON_GetObjectItemCaseSensitive(run0, "weights");
    ck_assert(cJSON_IsString(weights));
    char wpath[600];
    snprintf(wpath, sizeof wpath, "%s/%s", dir, weights->valuestring);
    ck_assert_msg(exists(wpath), "%s missing", wpath);
    ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(j, "epochs")->valueint, 1);
    cJSON_Delete(j);
}
END_TEST

static Suite *faults_suite(void) {
    Suite *s = suite_create("cli_faults");
    TCase *tc = tcase_create("cli_faults");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_out_to_device_kept);
    tcase_add_test(tc, test_out_symlink_followed);
    tcase_add_loop_test(tc, test_resume_after_keep_best_equals_straight_run, 0, 2);
    tcase_add_test(tc, test_log_no_duplicate_epochs_after_resume);
    tcase_add_test(tc, test_write_error_dev_full_exit_1);
    tcase_add_test(tc, test_missing_out_dir_before_training);
    tcase_add_test(tc, test_concurrent_checkpoint_unique_tmp);
    tcase_add_test(tc, test_predict_nul_rejected);
    tcase_add_test(tc, test_control_bytes_escaped);
    tcase_add_test(tc, test_tsv_extra_column_rejected);
    tcase_add_test(tc, test_reproduce_json_quotes_in_path);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return cli_run_suite_in_tmp(faults_suite());
}

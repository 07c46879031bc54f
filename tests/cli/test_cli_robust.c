/* test_cli_robust.c -- the CLI against a careless or concurrent user: an empty --out is
 * refused everywhere; a second run writing the same outputs as a running one (simulated by
 * holding its lock here) is refused at once; argument mistakes are found before the work;
 * `attn figures` removes what a killed run left in its directory. */
#include "cli_harness.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

START_TEST(test_cli_empty_out_refused) {
    static const char *const cmds[][6] = {
        {"lesson", "scaling", "--out", "", NULL},
        {"train", "--model", "rnn", "--epochs", "0", NULL},
        {"reproduce", "--models", "rnn", "--seeds", "1", NULL},
        {"figures", "--quick", NULL},
        {"experiment", "scaling", NULL},
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char *args[10];
        int n = 0;
        for (int k = 0; cmds[i][k]; k++) args[n++] = (char *)cmds[i][k];
        if (i > 0) { /* lesson's --out '' is already in its list */
            args[n++] = "--out";
            args[n++] = "";
        }
        args[n] = NULL;
        run_result r = run_argv(NULL, args);
        expect(&r, cmds[i][0], 2, "--out", "''", NULL);
        run_free(&r);
    }
}
END_TEST

/* Holds an flock on path (a directory itself, a file through path.lock) as a running attn
 * would; returns the descriptor. */
static int hold_lock(const char *path, bool dir) {
    char lp[300];
    snprintf(lp, sizeof lp, "%s.lock", path);
    int fd = dir ? open(path, O_RDONLY | O_DIRECTORY) : open(lp, O_RDWR | O_CREAT, 0644);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(flock(fd, LOCK_EX | LOCK_NB), 0);
    return fd;
}

START_TEST(test_cli_concurrent_runs_refused) {
    const char *dir = tmp_path("busy");
    ck_assert_int_eq(mkdir(dir, 0777), 0);
    int fd = hold_lock(dir, true);
    run_result r = run(NULL, "reproduce", "--out", dir, "--models", "rnn", "--seeds", "1",
                       "--epochs", "1", "--train-size", "8", NULL);
    expect(&r, "reproduce", 1, "--out", dir, "another attn run", NULL);
    run_free(&r);
    r = run(NULL, "experiment", "embedding", "--out", dir, NULL);
    expect(&r, "experiment", 1, "--out", dir, "another attn run", NULL);
    run_free(&r);
    r = run(NULL, "figures", "--quick", "--out", dir, NULL);
    expect(&r, "figures", 1, "--out", dir, "another attn run", NULL);
    run_free(&r);
    close(fd);
    const char *w = tmp_path("w.json"), *log = tmp_path("train.jsonl");
    fd = hold_lock(log, false);
    r = run(NULL, "train", "--model", "rnn", "--epochs", "0", "--out", w, "--log", log, NULL);
    expect(&r, "train --log", 1, "--log", log, "another attn run", NULL);
    ck_assert_msg(access(w, F_OK) != 0, "the refused run wrote %s", w);
    run_free(&r);
    close(fd);
    /* the lock is released: the run goes ahead, and leaves no lock file */
    r = run(NULL, "train", "--model", "rnn", "--epochs", "0", "--out", w, NULL);
    expect(&r, "train after the lock", 0, NULL);
    run_free(&r);
    char lp[300];
    snprintf(lp, sizeof lp, "%s.lock", w);
    ck_assert_msg(access(lp, F_OK) != 0, "%s left behind", lp);
}
END_TEST

START_TEST(test_cli_argument_checks_before_work) {
    double t0 = now_s();
    run_result r = run(NULL, "experiment", "path-length", "--plot", tmp_path("p.txt"), NULL);
    expect(&r, "experiment --plot p.txt", 2, "--plot", ".png or .svg", NULL);
    run_free(&r);
    r = run(NULL, "experiment", "path-length", "--out", "/dev/null", NULL);
    expect(&r, "experiment --out /dev/null", 1, "--out /dev/null", "is not a directory", NULL);
    run_free(&r);
    ck_assert_msg(now_s() - t0 < 5.0, "refused only after %.1f s of work", now_s() - t0);
    r = run(NULL, "saliency", "--model", "rnn", "--plot", tmp_path("x.txt"), NULL);
    expect(&r, "saliency --plot x.txt", 2, "--plot", ".png or .svg", NULL);
    ck_assert_msg(r.out[0] == '\0', "printed its table before refusing: %s", r.out);
    run_free(&r);
}
END_TEST

/* A real option's message says the range it takes: 5e-324 and 1e-320 (subnormal) are below it,
 * 3.5e38 (beyond float32) above it; the bounds themselves are taken (then checked by the
 * command: --top-p at most 1). */
START_TEST(test_cli_real_option_range_named) {
    const char *w = tu_source_path("weights/seq2seq-transformer-seed1.json");
    static const char *const cases[][2] = {
        {"--top-p", "5e-324"}, {"--temperature", "1e-320"}, {"--temperature", "3.5e38"}};
    for (int i = 0; i < 3; i++) {
        run_result r =
            run(NULL, "generate", "--weights", w, cases[i][0], cases[i][1], "the exam", NULL);
        expect(&r, cases[i][1], 2, cases[i][0],
               "a number from 2.2250738585072014e-308 to 3.4028234663852886e+38", NULL);
        run_free(&r);
    }
    run_result r = run(NULL, "generate", "--weights", w, "--top-p", "2.2250738585072014e-308",
                       "--temperature", "3.4028234663852886e+38", "the exam was clear", NULL);
    expect(&r, "the bounds", 0, NULL);
    run_free(&r);
}
END_TEST

/* explain's work on a recurrent model grows with the square of the length: bounded words */
START_TEST(test_cli_explain_words_bounded) {
    static char sentence[1002 * 5];
    sentence[0] = '\0';
    for (int i = 0; i < 1001; i++) strcat(sentence, "good ");
    char w[512];
    snprintf(w, sizeof w, "%s", tu_source_path("weights/lstm-seed1.json"));
    const double t0 = now_s();
    run_result r = run(NULL, "explain", "--weights", w, "--ig-steps", "0", sentence, NULL);
    expect(&r, "explain 1,001 words", 1, "1001 words", "--max-words 1000", NULL);
    run_free(&r);
    ck_assert_msg(now_s() - t0 < 5.0, "refused only after %.1f s", now_s() - t0);
    r = run(NULL, "explain", "--weights", w, "--ig-steps", "0", "--max-words", "0", "good", NULL);
    expect(&r, "--max-words 0", 2, "--max-words", NULL);
    run_free(&r);
}
END_TEST

/* --max-words raised: a sentence whose explanation would need more memory than --max-memory
 * (default 2048 MiB) is refused at once, naming its words and the bytes, before allocating;
 * --max-memory moves the limit both ways */
START_TEST(test_cli_explain_memory_bounded) {
    const size_t n = 200000;
    char *line = malloc(n * 5 + 2);
    ck_assert_ptr_nonnull(line);
    for (size_t i = 0; i < n; i++) memcpy(line + 5 * i, "good ", 5);
    memcpy(line + 5 * n, "\n", 2);
    char w[512];
    snprintf(w, sizeof w, "%s", tu_source_path("weights/lstm-seed1.json"));
    const double t0 = now_s();
    run_result r =
        run(line, "explain", "--weights", w, "--max-words", "1048576", "--threads", "1", NULL);
    expect(&r, "explain 200,000 words", 1, "200000 words", "bytes", "--max-memory", NULL);
    run_free(&r);
    ck_assert_msg(now_s() - t0 < 5.0, "refused only after %.1f s", now_s() - t0);
    line[5 * 500 - 1] = '\0'; /* 500 words: 1.8 MB without integrated gradients */
    r = run(NULL, "explain", "--weights", w, "--ig-steps", "0", "--max-memory", "1", line, NULL);
    expect(&r, "explain 500 words --max-memory 1", 1, "500 words", "1048576 bytes", NULL);
    run_free(&r);
    r = run(NULL, "explain", "--weights", w, "--ig-steps", "0", "--max-memory", "2", line, NULL);
    expect(&r, "explain 500 words --max-memory 2", 0, NULL);
    run_free(&r);
    r = run(NULL, "explain", "--weights", w, "--max-memory", "0", "good", NULL);
    expect(&r, "--max-memory 0", 2, "--max-memory", NULL);
    run_free(&r);
    free(line);
}
END_TEST

static int count_files(const char *dir) {
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

START_TEST(test_cli_figures_removes_litter) {
    const char *dir = tmp_path("figs");
    ck_assert_int_eq(mkdir(dir, 0777), 0);
    static const char *const litter[] = {"index.md.partial", "s2-attend.md.capture",
                                         "s1-gradient.png.tmpAb3dEf",
                                         "s1-gradient.svg.gp.tmpQ1w2E3", "keep.png"};
    char p[300];
    for (int i = 0; i < 5; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, litter[i]);
        write_file(p, "x");
    }
    /* no weights: the run fails at once, after tidying */
    run_result r =
        run(NULL, "figures", "--quick", "--out", dir, "--weights", tmp_path("none"), NULL);
    expect(&r, "figures without weights", 1, NULL);
    run_free(&r);
    ck_assert_int_eq(count_files(dir), 1);
    snprintf(p, sizeof p, "%s/keep.png", dir);
    ck_assert_int_eq(access(p, F_OK), 0);
}
END_TEST

int main(void) {
    Suite *s = suite_create("cli_robust");
    TCase *tc = tcase_create("cli_robust");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_cli_empty_out_refused);
    tcase_add_test(tc, test_cli_concurrent_runs_refused);
    tcase_add_test(tc, test_cli_argument_checks_before_work);
    tcase_add_test(tc, test_cli_real_option_range_named);
    tcase_add_test(tc, test_cli_figures_removes_litter);
    tcase_add_test(tc, test_cli_explain_words_bounded);
    tcase_add_test(tc, test_cli_explain_memory_bounded);
    suite_add_tcase(s, tc);
    return cli_run_suite_in_tmp(s);
}

/* test_cli_threads.c -- `--threads N` changes the speed, never the bytes: the weights of
 * `attn train` and `attn reproduce`, and the output of `eval`, `predict` and `explain` (with
 * integrated gradients), are the same files for 1, 2, 3 and 4 threads and for ATTN_THREADS;
 * bad thread counts are usage errors naming the option or the variable. */
#include "cli_harness.h"

static const char *const sentences =
    "the course was not great\n"
    "the teacher seemed really helpful but the exam was not clear\n"
    "the seminar is quite interesting\n"
    "the textbook seemed useless but the lecture was good\n";

/* attn train MODEL with --threads n (0: none given) into tmp/<model>-<n>.json. */
static const char *train(const char *model, int n) {
    char name[64], threads[16];
    snprintf(name, sizeof name, "%s-%d.json", model, n);
    snprintf(threads, sizeof threads, "%d", n);
    const char *out = tmp_path(name);
    run_result r = n ? run(NULL, "train", "--model", model, "--epochs", "2", "--train-size", "300",
                           "--holdout", "41", "--threads", threads, "--out", out, NULL)
                     : run(NULL, "train", "--model", model, "--epochs", "2", "--train-size", "300",
                           "--holdout", "41", "--out", out, NULL);
    expect(&r, "train", 0, NULL);
    run_free(&r);
    return out;
}

START_TEST(test_train_same_weights_for_every_thread_count) {
    static const char *const models[] = {"transformer", "lstm", "rnn"};
    for (int m = 0; m < 3; m++) {
        const char *one = train(models[m], 1);
        for (int n = 2; n <= 4; n++)
            ck_assert_msg(files_equal(train(models[m], n), one),
                          "%s: weights with --threads %d differ from --threads 1", models[m], n);
        setenv("ATTN_THREADS", "3", 1);
        ck_assert_msg(files_equal(train(models[m], 0), one), "%s: ATTN_THREADS=3 differs",
                      models[m]);
        unsetenv("ATTN_THREADS");
    }
}
END_TEST

/* The stdout of `attn ARGS... --threads n` with stdin_text. */
static char *output_with(const char *stdin_text, char **args, int n) {
    char *argv[32], threads[16];
    int k = 0;
    for (; args[k]; k++) argv[k] = args[k];
    snprintf(threads, sizeof threads, "%d", n);
    argv[k++] = "--threads";
    argv[k++] = threads;
    argv[k] = NULL;
    run_result r = run_argv(stdin_text, argv);
    expect(&r, args[0], 0, NULL);
    free(r.err);
    ck_assert(r.out[0] != '\0');
    return r.out;
}

START_TEST(test_eval_predict_explain_same_for_every_thread_count) {
    const char *w = train("transformer", 1), *lstm = train("lstm", 1);
    char *cmds[][12] = {
        {"eval", "--weights", (char *)w, "--set", "all", "--n", "150", "--batch", "16", NULL},
        {"eval", "--weights", (char *)lstm, "--set", "fill8", "--n", "150", NULL},
        {"predict", "--weights", (char *)w, "--format", "json", NULL},
        {"explain", "--weights", (char *)w, "--format", "json", "--ig-steps", "40", NULL},
        {"explain", "--weights", (char *)lstm, "--format", "json", NULL},
    };
    for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
        char *one = output_with(sentences, cmds[c], 1);
        for (int n = 2; n <= 4; n++) {
            char *out = output_with(sentences, cmds[c], n);
            ck_assert_msg(strcmp(out, one) == 0, "%s #%zu: --threads %d prints\n%s\nnot\n%s",
                          cmds[c][0], c, n, out, one);
            free(out);
        }
        free(one);
    }
}
END_TEST

START_TEST(test_reproduce_same_weights_for_every_thread_count) {
    const char *dirs[2] = {tmp_path("rep1"), tmp_path("rep2")};
    for (int i = 0; i < 2; i++) {
        run_result r = run(NULL, "reproduce", "--out", dirs[i], "--seeds", "1", "--epochs", "1",
                           "--train-size", "200", "--threads", i ? "2" : "1", NULL);
        expect(&r, "reproduce", 0, i ? "x 2 threads" : "x 1 thread", NULL);
        run_free(&r);
    }
    static const char *const files[] = {"rnn-seed1.json", "lstm-seed1.json",
                                        "transformer-seed1.json"};
    for (int f = 0; f < 3; f++) {
        char a[512], b[512];
        snprintf(a, sizeof a, "%s/%s", dirs[0], files[f]);
        snprintf(b, sizeof b, "%s/%s", dirs[1], files[f]);
        ck_assert_msg(files_equal(a, b), "reproduce %s differs between 1 and 2 threads", files[f]);
    }
}
END_TEST

START_TEST(test_bad_thread_counts) {
    run_result r = run(NULL, "train", "--model", "rnn", "--threads", "0", NULL);
    expect(&r, "--threads 0", 2, "--threads", NULL);
    run_free(&r);
    r = run(sentences, "predict", "--weights", "w.json", "--threads", "many", NULL);
    expect(&r, "--threads many", 2, "--threads", NULL);
    run_free(&r);
    const char *w = train("rnn", 1);
    setenv("ATTN_THREADS", "two", 1);
    r = run(sentences, "predict", "--weights", w, NULL);
    expect(&r, "ATTN_THREADS=two", 2, "ATTN_THREADS", NULL);
    run_free(&r);
    setenv("ATTN_THREADS", "0", 1);
    r = run(NULL, "eval", "--weights", w, "--set", "plain", NULL);
    expect(&r, "ATTN_THREADS=0", 2, "ATTN_THREADS", NULL);
    run_free(&r);
    unsetenv("ATTN_THREADS");
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("cli/threads");
    TCase *tc = tcase_create("threads");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_train_same_weights_for_every_thread_count);
    tcase_add_test(tc, test_eval_predict_explain_same_for_every_thread_count);
    tcase_add_test(tc, test_reproduce_same_weights_for_every_thread_count);
    tcase_add_test(tc, test_bad_thread_counts);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return cli_run_suite_in_tmp(suite());
}

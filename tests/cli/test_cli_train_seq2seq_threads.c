/* test_cli_train_seq2seq_threads.c -- `attn train` on a seq2seq task with `--threads N`: the
 * weights, the checkpoints, the losses printed and the test-set report are the same bytes for 1,
 * 2 and 3 threads and for ATTN_THREADS; a run checkpointed on one thread and resumed on two ends
 * with the weights of an uninterrupted two-thread run; bad thread counts are usage errors. */
#include "cli_harness.h"

/* The epoch lines of stderr without their speed and time (which differ run to run). */
static char *losses_of(const char *err) {
    char *out = calloc(strlen(err) + 1, 1);
    ck_assert_ptr_nonnull(out);
    for (const char *line = strstr(err, "epoch "); line; line = strstr(line + 1, "\nepoch ")) {
        if (*line == '\n') line++;
        const char *speed = strstr(line, " target tokens/s");
        ck_assert_ptr_nonnull(speed);
        while (speed > line && speed[-1] != ' ') speed--; /* the tokens/s figure too */
        strncat(out, line, (size_t)(speed - line));
        strcat(out, "\n");
    }
    return out;
}

typedef struct s2s_run {
    char *weights, *checkpoint;
    char *losses, *report; /* the epoch lines' losses; stdout up to "wrote" */
} s2s_run;

/* attn train of a small seq2seq-transformer on rewrite, --threads n (0: none given), into
 * tmp/<tag>.json with a checkpoint tmp/<tag>.ckpt; extra: "--epochs", "1" or NULL. */
static s2s_run train(const char *tag, int n, const char *epochs, const char *resume) {
    char name[64], ckpt[64], threads[16];
    snprintf(name, sizeof name, "%s.json", tag);
    snprintf(ckpt, sizeof ckpt, "%s.ckpt", tag);
    snprintf(threads, sizeof threads, "%d", n);
    s2s_run s = {strdup(tmp_path(name)), strdup(tmp_path(ckpt)), NULL, NULL}; /* tmp_path's ring */
    char *args[40] = {"train",   "--epochs",     (char *)epochs, "--out",
                      s.weights, "--checkpoint", s.checkpoint};
    int k = 7;
    if (resume) {
        args[k++] = "--resume";
        args[k++] = (char *)resume;
    } else {
        const char *model[] = {"--model",      "seq2seq-transformer",
                               "--task",       "rewrite",
                               "--embed-dim",  "16",
                               "--heads",      "2",
                               "--ffn",        "16",
                               "--layers",     "1",
                               "--dec-layers", "1",
                               "--train-size", "300",
                               "--holdout",    "20"};
        for (size_t i = 0; i < sizeof model / sizeof model[0]; i++) args[k++] = (char *)model[i];
    }
    if (n) {
        args[k++] = "--threads";
        args[k++] = threads;
    }
    args[k] = NULL;
    run_result r = run_argv(NULL, args);
    expect(&r, tag, 0, NULL);
    ck_assert_msg(strstr(r.out, "wrote") != NULL, "%s: no weights written:\n%s", tag, r.out);
    s.losses = losses_of(r.err);
    ck_assert_msg(strstr(s.losses, "loss ") != NULL, "%s: no epoch line in\n%s", tag, r.err);
    *strstr(r.out, "wrote") = '\0';
    s.report = r.out;
    free(r.err);
    return s;
}

static void s2s_free(s2s_run *s) {
    free(s->weights);
    free(s->checkpoint);
    free(s->losses);
    free(s->report);
}

START_TEST(test_seq2seq_train_same_bytes_for_every_thread_count) {
    s2s_run one = train("t1", 1, "2", NULL);
    ck_assert_ptr_nonnull(strstr(one.losses, "epoch 2/2  loss "));
    for (int n = 2; n <= 4; n++) {
        if (tu_small() && n != 3) continue; /* the sanitizer stage: 1 against 3 threads only */
        char tag[16];
        snprintf(tag, sizeof tag, "t%d", n);
        if (n == 4) setenv("ATTN_THREADS", "3", 1); /* no --threads: the variable's 3 */
        s2s_run s = train(tag, n == 4 ? 0 : n, "2", NULL);
        unsetenv("ATTN_THREADS");
        ck_assert_msg(files_equal(s.weights, one.weights), "%s: weights differ from --threads 1",
                      tag);
        ck_assert_msg(files_equal(s.checkpoint, one.checkpoint),
                      "%s: checkpoint differs from --threads 1", tag);
        ck_assert_msg(strcmp(s.losses, one.losses) == 0, "%s: losses\n%s\nnot\n%s", tag, s.losses,
                      one.losses);
        ck_assert_msg(strcmp(s.report, one.report) == 0, "%s: report\n%s\nnot\n%s", tag, s.report,
                      one.report);
        s2s_free(&s);
    }
    /* one epoch on one thread, then the second on two: the two-thread run's bytes */
    s2s_run half = train("half", 1, "1", NULL);
    s2s_run rest = train("rest", 2, "2", half.checkpoint);
    ck_assert_msg(files_equal(rest.weights, one.weights), "resumed on 2 threads: weights differ");
    ck_assert_msg(files_equal(rest.checkpoint, one.checkpoint),
                  "resumed on 2 threads: checkpoint differs");
    ck_assert_msg(!files_equal(half.checkpoint, one.checkpoint), "epoch 1's checkpoint is the end");
    s2s_free(&half);
    s2s_free(&rest);
    s2s_free(&one);
}
END_TEST

START_TEST(test_seq2seq_train_bad_thread_counts) {
    static const char *const bad[] = {"0", "abc", "-1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        run_result r = run(NULL, "train", "--model", "seq2seq-transformer", "--task", "rewrite",
                           "--threads", bad[i], NULL);
        expect(&r, bad[i], 2, "--threads", NULL);
        run_free(&r);
    }
    setenv("ATTN_THREADS", "two", 1);
    run_result r = run(NULL, "train", "--model", "seq2seq-gru", "--task", "rewrite", NULL);
    unsetenv("ATTN_THREADS");
    expect(&r, "ATTN_THREADS=two", 2, "ATTN_THREADS", NULL);
    run_free(&r);
    r = run(NULL, "train", "--model", "seq2seq-transformer", "--help", NULL);
    expect(&r, "--help", 0, NULL);
    ck_assert_msg(strstr(r.out, "--threads N") && strstr(r.out, "micro-batches of 16 pairs"),
                  "--help does not explain --threads:\n%s", r.out);
    run_free(&r);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("cli/train_seq2seq_threads");
    TCase *tc = tcase_create("threads");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_seq2seq_train_same_bytes_for_every_thread_count);
    tcase_add_test(tc, test_seq2seq_train_bad_thread_counts);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return cli_run_suite_in_tmp(suite());
}

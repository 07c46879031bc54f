/* test_cli_consistency.c -- the attn command as a new user tries it: --resume refuses
 * settings that contradict the checkpoint, predict reports every bad line and still classifies
 * the good ones, reproduce writes to runs/ (never to the committed weights/) and says whether
 * its weights equal weights/, eval --table reads what reproduce wrote, and set names are the
 * same in every command. */
#include "cli_harness.h"

#define TINY "--train-size", "120", "--holdout", "20"

/* A 1-epoch RNN run of seed 2 with a checkpoint; returns the checkpoint's path. */
static const char *tiny_checkpoint(void) {
    static char ck[256]; /* tmp_path's buffers are a small ring */
    snprintf(ck, sizeof ck, "%s", tmp_path("resume-ck.json"));
    run_result r = run(NULL, "train", "--model", "rnn", "--seed", "2", "--epochs", "1", TINY,
                       "--checkpoint", ck, "--out", tmp_path("resume-w.json"), NULL);
    expect(&r, "tiny train with checkpoint", 0, NULL);
    run_free(&r);
    return ck;
}

typedef struct resume_case {
    const char *args[4];
    const char *fragments[3];
} resume_case;

/* A generated run's held-out set is a separate one (500 sentences by default), so a training set
 * smaller than it is fine, and so is resuming its checkpoint: the same weights as the straight
 * run (the checkpoint reader once measured the held-out set against the training sentences). */
START_TEST(test_resume_small_train_size) {
    const char *ck = tmp_path("small-ck.json"), *w1 = tmp_path("small-w1.json");
    run_result r = run(NULL, "train", "--model", "rnn", "--epochs", "1", "--train-size", "64",
                       "--checkpoint", ck, "--out", w1, NULL);
    expect(&r, "train --train-size 64 with a checkpoint", 0, NULL);
    run_free(&r);
    const char *resumed = tmp_path("small-resumed.json");
    r = run(NULL, "train", "--resume", ck, "--epochs", "2", "--out", resumed, NULL);
    expect(&r, "resume of the --train-size 64 checkpoint", 0, NULL);
    run_free(&r);
    const char *straight = tmp_path("small-straight.json");
    r = run(NULL, "train", "--model", "rnn", "--epochs", "2", "--train-size", "64", "--out",
            straight, NULL);
    expect(&r, "the straight 2-epoch run", 0, NULL);
    run_free(&r);
    ck_assert_msg(files_equal(resumed, straight), "resumed and straight weights differ");
}
END_TEST

START_TEST(test_resume_contradictions_are_usage_errors) {
    const char *ck = tiny_checkpoint();
    const resume_case cases[] = {
        {{"--lr", "0.01"}, {"--lr 0.01", "lr 0.001"}},
        {{"--batch", "16"}, {"--batch 16", "batch 32"}},
        {{"--seed", "3"}, {"--seed 3", "seed 2"}},
        {{"--model", "lstm"}, {"--model lstm", "rnn"}},
        {{"--train-size", "300"}, {"--train-size 300", "120"}},
        {{"--holdout", "50"}, {"--holdout 50", "20"}},
        {{"--keep-best", "0"}, {"--keep-best 0"}},
        {{"--bucket", "2"}, {"--bucket 2", "bucket 8"}},
        {{"--epochs", "1"}, {"--epochs 1", "already done 1 epoch"}},
        {{NULL}, {"done all 1 epoch", "--epochs"}},
        {{"--init", golden("rnn")}, {"--init"}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char *args[10] = {"train", "--resume", (char *)ck};
        int n = 3;
        for (int i = 0; i < 4 && cases[c].args[i]; i++) args[n++] = (char *)cases[c].args[i];
        if (cases[c].args[0] && strcmp(cases[c].args[0], "--epochs") != 0) {
            args[n++] = "--epochs";
            args[n++] = "2";
        }
        args[n++] = "--out";
        args[n++] = (char *)tmp_path("resume-never.json");
        run_result r = run_argv(NULL, args);
        char what[128];
        snprintf(what, sizeof what, "train --resume %s", cases[c].args[0] ? cases[c].args[0] : "");
        expect(&r, what, 2, cases[c].fragments[0], cases[c].fragments[1], cases[c].fragments[2],
               NULL);
        run_free(&r);
    }
    ck_assert(!exists(tmp_path("resume-never.json")));
    /* other data: the checkpoint's data fingerprint refuses it, naming --data */
    run_result d = run(NULL, "data", "--n", "150", "--seed", "2", NULL);
    expect(&d, "data --n 150", 0, NULL);
    const char *tsv = tmp_path("resume.tsv");
    write_file(tsv, d.out);
    run_free(&d);
    run_result r = run(NULL, "train", "--resume", ck, "--epochs", "2", "--data", tsv, "--out",
                       tmp_path("resume-never.json"), NULL);
    expect(&r, "train --resume --data other.tsv", 2, "--data", "different data", NULL);
    run_free(&r);
    /* the checkpoint's own values may be repeated; a longer run continues it */
    r = run(NULL, "train", "--resume", ck, "--epochs", "2", "--lr", "1e-3", "--seed", "2",
            "--batch", "32", "--model", "rnn", "--train-size", "120", "--out",
            tmp_path("resume-ok.json"), NULL);
    expect(&r, "train --resume with the checkpoint's values", 0, "from epoch 2 of 2", NULL);
    run_free(&r);
    ck_assert(exists(tmp_path("resume-ok.json")));
}
END_TEST

START_TEST(test_predict_reports_every_bad_line) {
    const char *in = "the lecture was good\n"
                     "the lectur was good\n"
                     "\n"
                     "\xe2\x80\x9cthe exam\xe2\x80\x9d was (very) \"boring\"!\n"
                     "the course was gret\n"
                     "the seminar was fun\n";
    run_result r = run(in, "predict", "--weights", golden("rnn"), "--format", "tsv", NULL);
    expect(&r, "predict with two bad lines", 1, "line 2:", "'lectur'", "'lecture'",
           "line 5:", "'gret'", "'great'", "2 of 5 sentences not classified", NULL);
    /* the good lines (1, 4 and 6) are classified, in order; quotes and brackets are no words */
    int lines = 0;
    for (const char *p = r.out; (p = strchr(p, '\n')); p++) lines++;
    ck_assert_int_eq(lines, 3);
    const char *a = strstr(r.out, "the lecture was good"), *b = strstr(r.out, "boring"),
               *c = strstr(r.out, "the seminar was fun");
    ck_assert_msg(a && b && c && a < b && b < c, "%s", r.out);
    run_free(&r);
}
END_TEST

/* The "identical to weights/: ..." line of reproduce's output. */
static const char *identical_line(const char *out) {
    const char *p = strstr(out, "identical to weights/: ");
    ck_assert_msg(p != NULL, "reproduce does not compare with weights/: %s", out);
    return p;
}

START_TEST(test_reproduce_writes_runs_and_compares_with_weights) {
    /* a scratch "repository": reproduce runs there, as scripts/reproduce.sh does at the root */
    char root[256];
    snprintf(root, sizeof root, "%s/repo", tmp_dir);
    ck_assert_int_eq(mkdir(root, 0700), 0);
    child_cwd = root;
    run_result r = run(NULL, "reproduce", "--seeds", "1", "--epochs", "1", "--train-size", "150",
                       "-j", "2", NULL);
    expect(&r, "reproduce, no weights/", 0, "seed 1)", "1 epoch,", "into runs/", NULL);
    ck_assert_ptr_null(strstr(r.err, "1 epochs"));
    ck_assert_ptr_nonnull(strstr(r.out, "Total wall time: "));
    ck_assert_ptr_nonnull(strstr(r.out, "(3 runs of 1 epoch on 2 workers x ")); /* x threads */
    ck_assert_ptr_nonnull(strstr(identical_line(r.out), "not compared"));
    run_free(&r);
    char path[512];
    snprintf(path, sizeof path, "%s/runs/reproduce.json", root);
    char *report = tu_read_text(path);
    ck_assert_msg(strstr(report, "\"blas_core\"") && !strstr(report, "seconds"), "%s", report);
    /* the kernels record: what decides the bytes (pinned by default, one BLAS thread per run) */
    ck_assert_msg(strstr(report, "\"kernels\": {\"mode\": \"pinned\", \"openblas\": \"") &&
                      strstr(report, "\"blas_threads\": 1, \"cpu_path\": \""),
                  "%s", report);
    free(report);
    /* a committed weights/ made on "another core": one file equal, one not */
    char weights[300], cmd[2048];
    snprintf(weights, sizeof weights, "%s/weights", root);
    ck_assert_int_eq(mkdir(weights, 0700), 0);
    snprintf(cmd, sizeof cmd,
             "cp %s/runs/rnn-seed1.json %s/ && sed 's/\"data\": \\[/\"data\": [1e-3,/' "
             "%s/runs/lstm-seed1.json > %s/lstm-seed1.json && sed 's/\"blas_core\": \"[^\"]*\"/"
             "\"blas_core\": \"OtherCore\"/' %s/runs/reproduce.json > %s/reproduce.json",
             root, weights, root, weights, root, weights);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(path, sizeof path, "%s/lstm-seed1.json", weights);
    char *before = tu_read_text(path);
    r = run(NULL, "reproduce", "--seeds", "1", "--epochs", "1", "--train-size", "150", NULL);
    expect(&r, "reproduce, weights/ present", 0, NULL);
    const char *line = identical_line(r.out);
    const char *want = "identical to weights/: 1/2 (not like with like: weights/ made with "
                       "OpenBLAS ";
    ck_assert_msg(strncmp(line, want, strlen(want)) == 0 && strstr(line, " OtherCore, 1 thread") &&
                      strstr(line, "products round differently"),
                  "%s", line);
    run_free(&r);
    /* the same kernels record: a difference is a difference, said as such */
    snprintf(cmd, sizeof cmd, "cp %s/runs/reproduce.json %s/reproduce.json", root, weights);
    ck_assert_int_eq(system(cmd), 0);
    r = run(NULL, "reproduce", "--seeds", "1", "--epochs", "1", "--train-size", "150", NULL);
    expect(&r, "reproduce, weights/ with the same kernels", 0, NULL);
    line = identical_line(r.out);
    ck_assert_msg(strncmp(line, "identical to weights/: 1/2 (both made with OpenBLAS ", 52) == 0,
                  "%s", line);
    run_free(&r);
    /* another --epochs: not compared, and weights/ is never touched without --out weights */
    r = run(NULL, "reproduce", "--seeds", "1", "--epochs", "2", "--train-size", "150", NULL);
    expect(&r, "reproduce --epochs 2", 0, NULL);
    ck_assert_ptr_nonnull(strstr(identical_line(r.out), "not compared"));
    run_free(&r);
    char *after = tu_read_text(path);
    ck_assert_str_eq(before, after);
    free(before);
    free(after);
    /* eval --table reads what reproduce wrote */
    r = run(NULL, "eval", "--table", "runs", "--seeds", "1", NULL);
    expect(&r, "eval --table runs", 0, NULL);
    ck_assert_ptr_nonnull(strstr(r.out, "| parameters | 3,089"));
    run_free(&r);
    r = run(NULL, "eval", "--table", "runs", "--seeds", "2", NULL);
    expect(&r, "eval --table, seed 2 missing", 1, "runs/rnn-seed2.json", NULL);
    run_free(&r);
    child_cwd = NULL;
}
END_TEST

START_TEST(test_set_names_everywhere) {
    /* all = the four test sets, in data and eval; holdout has 500 sentences in both */
    run_result r = run(NULL, "data", "--set", "all", NULL);
    expect(&r, "data --set all", 0, NULL);
    int lines = 0;
    for (const char *p = r.out; (p = strchr(p, '\n')); p++) lines++;
    ck_assert_int_eq(lines, 4 * ATTN_TEST_DEFAULT_N);
    run_free(&r);
    r = run(NULL, "eval", "--weights", golden("rnn"), "--set", "holdout", "--batch", "64", NULL);
    expect(&r, "eval --set holdout", 0, NULL);
    ck_assert_ptr_nonnull(strstr(r.out, "/500)"));
    run_free(&r);
    r = run(NULL, "data", "--set", "bogus", NULL);
    expect(&r, "data --set bogus", 2, "train, holdout, plain, distractor, fill4, fill8 or all",
           NULL);
    run_free(&r);
    r = run(NULL, "eval", "--weights", golden("rnn"), "--set", "bogus", NULL);
    expect(&r, "eval --set bogus", 2, "train, holdout, plain, distractor, fill4, fill8 or all",
           NULL);
    run_free(&r);
}
END_TEST

static Suite *consistency_suite(void) {
    Suite *s = suite_create("cli_consistency");
    TCase *tc = tcase_create("cli_consistency");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_resume_contradictions_are_usage_errors);
    tcase_add_test(tc, test_resume_small_train_size);
    tcase_add_test(tc, test_predict_reports_every_bad_line);
    tcase_add_test(tc, test_set_names_everywhere);
    suite_add_tcase(s, tc);
    /* Four reproduce runs: tagged "nosan", the sanitizer build leaves them out (CK_EXCLUDE_TAGS,
     * CMakeLists.txt); there cli/test_cli_faults runs reproduce and io/test_report_json the
     * report reader; the release stage runs every case. */
    TCase *reproduce = tcase_create("cli_consistency_reproduce");
    tcase_set_timeout(reproduce, 120);
    tcase_set_tags(reproduce, "nosan");
    tcase_add_test(reproduce, test_reproduce_writes_runs_and_compares_with_weights);
    suite_add_tcase(s, reproduce);
    return s;
}

int main(void) {
    return cli_run_suite_in_tmp(consistency_suite());
}

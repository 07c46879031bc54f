/* test_cli_train.c -- `attn train` as a user meets it: tiny runs give loadable, reproducible
 * weights, --epochs 0 writes the initial weights, the held-out set is the seed's holdout set,
 * and a failing run never leaves a partial or changed --out file (atomic writes). */
#include "cli_harness.h"

/* ---- train writes atomically ----------------------------------------------------------------- */

#define TINY_TRAIN "--train-size", "120", "--epochs", "1", "--holdout", "20"

START_TEST(test_train_tiny_run_writes_loadable_weights) {
    static const char *const models[] = {"rnn", "lstm", "transformer"};
    static const long want[] = {3089, 7889, 22689};
    char name[64];
    snprintf(name, sizeof name, "tiny-%s.json", models[_i]);
    const char *out = tmp_path(name);
    run_result r = run(NULL, "train", "--model", models[_i], TINY_TRAIN, "--out", out, NULL);
    expect(&r, "tiny train", 0, NULL);
    run_free(&r);
    ck_assert_int_eq(count_params_in_file(out), want[_i]);
    r = run(NULL, "info", "--weights", out, NULL);
    expect(&r, "info of trained weights", 0, NULL);
    run_free(&r);
    char tmp_name[300];
    snprintf(tmp_name, sizeof tmp_name, "%s.tmp", out);
    ck_assert(!exists(tmp_name));
    /* The same command gives the same bytes; --init from PyTorch-format weights changes them. */
    snprintf(name, sizeof name, "tiny-%s-again.json", models[_i]);
    const char *again = tmp_path(name);
    r = run(NULL, "train", "--model", models[_i], TINY_TRAIN, "--out", again, NULL);
    expect(&r, "tiny train again", 0, NULL);
    run_free(&r);
    ck_assert_msg(files_equal(out, again), "two identical train runs wrote different files");
    snprintf(name, sizeof name, "tiny-%s-init.json", models[_i]);
    const char *tuned = tmp_path(name);
    r = run(NULL, "train", "--model", models[_i], "--init", golden(models[_i]), TINY_TRAIN, "--out",
            tuned, NULL);
    expect(&r, "tiny train --init", 0, NULL);
    run_free(&r);
    ck_assert(!files_equal(out, tuned));
    ck_assert_int_eq(count_params_in_file(tuned), want[_i]);
}
END_TEST

/* --epochs 0 writes the untrained model of the seed: the same bytes for the same seed, others for
 * another seed, and --init W passes W through unchanged; not with --resume. */
START_TEST(test_train_epochs_zero_writes_initial_weights) {
    char a[300], b[300], c[300], d[300];
    snprintf(a, sizeof a, "%s", tmp_path("init-a.json"));
    snprintf(b, sizeof b, "%s", tmp_path("init-b.json"));
    snprintf(c, sizeof c, "%s", tmp_path("init-c.json"));
    snprintf(d, sizeof d, "%s", tmp_path("init-d.json"));
    run_result r = run(NULL, "train", "--model", "transformer", "--seed", "3", "--epochs", "0",
                       "--out", a, NULL);
    expect(&r, "train --epochs 0", 0, "initial weights of seed 3, not trained", NULL);
    run_free(&r);
    ck_assert_int_eq(count_params_in_file(a), 22689);
    r = run(NULL, "train", "--model", "transformer", "--seed", "3", "--epochs", "0", "--out", b,
            NULL);
    expect(&r, "train --epochs 0 again", 0, NULL);
    run_free(&r);
    ck_assert_msg(files_equal(a, b), "two --epochs 0 runs of one seed wrote different files");
    r = run(NULL, "train", "--model", "transformer", "--seed", "4", "--epochs", "0", "--out", c,
            NULL);
    expect(&r, "train --epochs 0 --seed 4", 0, NULL);
    run_free(&r);
    ck_assert(!files_equal(a, c));
    r = run(NULL, "train", "--model", "transformer", "--seed", "4", "--epochs", "0", "--init", a,
            "--out", d, NULL);
    expect(&r, "train --epochs 0 --init", 0, NULL);
    run_free(&r);
    ck_assert_msg(files_equal(a, d), "--epochs 0 --init changed the weights");
    const char *ckpt = tmp_path("init-ckpt.json");
    r = run(NULL, "train", "--model", "rnn", TINY_TRAIN, "--checkpoint", ckpt, "--out", b, NULL);
    expect(&r, "tiny train with checkpoint", 0, NULL);
    run_free(&r);
    /* the checkpoint records the kernels its numbers came from (pinned, one BLAS thread) */
    char *text = tu_read_text(ckpt);
    ck_assert_msg(strstr(text, "\"kernels\":{\"mode\":\"pinned\",\"openblas\":\"") &&
                      strstr(text, "\"blas_threads\":1,\"cpu_path\":\""),
                  "no kernels record in %s", ckpt);
    free(text);
    r = run(NULL, "train", "--resume", ckpt, "--epochs", "0", NULL);
    expect(&r, "--resume --epochs 0", 2, "--epochs 0", NULL);
    run_free(&r);
}
END_TEST

/* attn data --set holdout: 500 sentences by default, none of them in the seed's training set;
 * attn train trains on all --train-size sentences and holds out --holdout others. */
START_TEST(test_holdout_set_and_train_split) {
    run_result t = run(NULL, "data", "--seed", "2", NULL);
    expect(&t, "data train", 0, NULL);
    run_result h = run(NULL, "data", "--set", "holdout", "--seed", "2", NULL);
    expect(&h, "data holdout", 0, NULL);
    size_t tl = strlen(t.out);
    char *train = malloc(tl + 2);
    ck_assert(train != NULL);
    train[0] = '\n';
    memcpy(train + 1, t.out, tl + 1);
    int lines = 0;
    char needle[1024];
    for (const char *p = h.out; *p; lines++) {
        const char *e = strchr(p, '\n');
        ck_assert(e != NULL && (size_t)(e - p) < sizeof needle - 3);
        snprintf(needle, sizeof needle, "\n%.*s\n", (int)(e - p), p);
        if (lines < 100) ck_assert_msg(!strstr(train, needle), "in the training set:%s", needle);
        p = e + 1;
    }
    ck_assert_int_eq(lines, 500);
    free(train);
    run_free(&t);
    run_free(&h);
    run_result r = run(NULL, "train", "--model", "rnn", TINY_TRAIN, "--out",
                       tmp_path("tiny-split.json"), NULL);
    expect(&r, "tiny train", 0, NULL);
    ck_assert_msg(strstr(r.err, "120 training + 20 held-out") != NULL, "%s", r.err);
    run_free(&r);
}
END_TEST

START_TEST(test_train_failing_out_leaves_nothing) {
    /* --out under a file, where its directory cannot be made (a missing one is created). */
    const char *dir = tmp_path("a-file");
    write_file(dir, "");
    char out[300];
    snprintf(out, sizeof out, "%s/w.json", dir);
    run_result r = run(NULL, "train", "--model", "rnn", TINY_TRAIN, "--out", out, NULL);
    expect(&r, "train --out under a file", 1, dir, NULL);
    run_free(&r);
    ck_assert(!exists(out));
    /* --out naming an existing directory: the rename fails, no .tmp is left behind. */
    const char *isdir = tmp_path("isdir.json");
    ck_assert_int_eq(mkdir(isdir, 0700), 0);
    r = run(NULL, "train", "--model", "rnn", TINY_TRAIN, "--out", isdir, NULL);
    expect(&r, "train --out naming a directory", 1, isdir, NULL);
    run_free(&r);
    char tmp_name[300];
    snprintf(tmp_name, sizeof tmp_name, "%s.tmp", isdir);
    ck_assert_msg(!exists(tmp_name), "%s was left behind", tmp_name);
    rmdir(isdir);
}
END_TEST

START_TEST(test_train_failure_keeps_existing_out) {
    /* An existing --out survives a run that fails (bad --init: NaN, wrong shape, wrong arch). */
    const char *out = tmp_path("keep.json");
    char *orig = tu_read_text(golden("rnn"));
    write_file(out, orig);
    const char *nan_path = edit_copy(golden("rnn"), "\"data\":[", "\"data\":[NaN,", "nan2.json");
    const char *shape = edit_copy(golden("rnn"), "\"head.weight\":{\"shape\":[1, 32]",
                                  "\"head.weight\":{\"shape\":[32, 1]", "shape3.json");
    const char *inits[] = {nan_path, shape, golden("transformer")};
    const char *culprits[] = {"embedding.weight", "head.weight", "transformer"};
    /* a bad file is a runtime error; --model rnn against a transformer file a usage error */
    const int codes[] = {1, 1, 2};
    for (int i = 0; i < 3; i++) {
        run_result r = run(NULL, "train", "--model", "rnn", "--init", inits[i], TINY_TRAIN, "--out",
                           out, NULL);
        expect(&r, "train with a bad --init", codes[i], inits[i], culprits[i], NULL);
        run_free(&r);
        char *now = tu_read_file(out, NULL);
        ck_assert_msg(now && strcmp(now, orig) == 0, "a failed train run changed --out");
        free(now);
    }
    free(orig);
}
END_TEST

static Suite *train_suite(void) {
    Suite *s = suite_create("cli_train");
    TCase *tc = tcase_create("cli_train");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_train_tiny_run_writes_loadable_weights, 0, 3);
    tcase_add_test(tc, test_train_epochs_zero_writes_initial_weights);
    tcase_add_test(tc, test_holdout_set_and_train_split);
    tcase_add_test(tc, test_train_failing_out_leaves_nothing);
    tcase_add_test(tc, test_train_failure_keeps_existing_out);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return cli_run_suite_in_tmp(train_suite());
}

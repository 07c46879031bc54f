/* test_cli_checkpoint_safetensors.c -- attn train --checkpoint C.safetensors (issue 33): for a
 * classifier and a seq2seq model, one epoch with the checkpoint in safetensors and one with it
 * in JSON write the same weights; each checkpoint resumed to a second epoch gives weights
 * cmp-identical to the other's and to two epochs straight, and the checkpoint the resumed run
 * writes is cmp-identical to the straight run's; predict, generate and info given a
 * checkpoint (either format, either family) say it is one and what to pass instead. */
#include "cli_harness.h"

/* One family's round: opts are the training options without --epochs, --checkpoint, --out. */
static void round_trip(const char *tag, const char *const *opts, int n_opts) {
    char name[8][300];
    const char *what[8] = {"ck.json",      "ck.safetensors", "w1-json.json",     "w1-st.json",
                           "w2-json.json", "w2-st.json",     "w2-straight.json", ""};
    for (int k = 0; k < 7; k++) {
        char f[64];
        snprintf(f, sizeof f, "%s-%s", tag, what[k]);
        snprintf(name[k], sizeof name[k], "%s", tmp_path(f));
    }
    const char *ckj = name[0], *cks = name[1];
    char *args[32];
    /* one epoch, the checkpoint in JSON, then in safetensors */
    for (int fmt = 0; fmt < 2; fmt++) {
        int a = 0;
        args[a++] = "train";
        for (int i = 0; i < n_opts; i++) args[a++] = (char *)opts[i];
        args[a++] = "--epochs";
        args[a++] = "1";
        args[a++] = "--checkpoint";
        args[a++] = (char *)(fmt ? cks : ckj);
        args[a++] = "--out";
        args[a++] = name[2 + fmt];
        args[a] = NULL;
        run_result r = run_argv(NULL, args);
        expect(&r, fmt ? "one epoch, safetensors checkpoint" : "one epoch, JSON checkpoint", 0,
               NULL);
        run_free(&r);
    }
    ck_assert_msg(files_equal(name[2], name[3]), "%s: the checkpoint's format changed the run",
                  tag);
    /* the safetensors checkpoint is one (its first bytes: the header length, then '{') */
    size_t len = 0;
    char *bytes = tu_read_file(cks, &len);
    ck_assert(bytes && len > 16 && bytes[7] == 0 && bytes[8] == '{');
    ck_assert_ptr_nonnull(strstr(bytes + 8, "checkpoint-v1"));
    free(bytes);
    /* each resumed to 2 epochs, writing a checkpoint of its own */
    char ck_after[2][300];
    for (int fmt = 0; fmt < 2; fmt++) {
        char f[64];
        snprintf(f, sizeof f, "%s-ck2-%s.safetensors", tag, fmt ? "st" : "json");
        snprintf(ck_after[fmt], sizeof ck_after[fmt], "%s", tmp_path(f));
        run_result r = run(NULL, "train", "--resume", fmt ? cks : ckj, "--epochs", "2",
                           "--checkpoint", ck_after[fmt], "--out", name[4 + fmt], NULL);
        expect(&r, "resume to 2 epochs", 0, NULL);
        run_free(&r);
    }
    /* two epochs straight */
    char ck_straight[300];
    {
        char f[64];
        snprintf(f, sizeof f, "%s-ck2-straight.safetensors", tag);
        snprintf(ck_straight, sizeof ck_straight, "%s", tmp_path(f));
        int a = 0;
        args[a++] = "train";
        for (int i = 0; i < n_opts; i++) args[a++] = (char *)opts[i];
        args[a++] = "--epochs";
        args[a++] = "2";
        args[a++] = "--checkpoint";
        args[a++] = ck_straight;
        args[a++] = "--out";
        args[a++] = name[6];
        args[a] = NULL;
        run_result r = run_argv(NULL, args);
        expect(&r, "two epochs straight", 0, NULL);
        run_free(&r);
    }
    ck_assert_msg(files_equal(name[4], name[5]),
                  "%s: resumed from safetensors differs from resumed from JSON", tag);
    ck_assert_msg(files_equal(name[5], name[6]),
                  "%s: resumed from safetensors differs from 2 epochs straight", tag);
    ck_assert_msg(!files_equal(name[3], name[6]), "%s: epoch 1 = epoch 2", tag);
    ck_assert_msg(files_equal(ck_after[1], ck_straight) && files_equal(ck_after[0], ck_straight),
                  "%s: the resumed run's checkpoint differs from the straight run's", tag);

    /* a checkpoint where weights are wanted: named as one, with what to pass */
    const char *cmds[] = {"predict", "generate", "info"};
    for (int fmt = 0; fmt < 2; fmt++)
        for (int c = 0; c < 3; c++) {
            run_result r =
                run("the course was good\n", cmds[c], "--weights", fmt ? cks : ckj, NULL);
            expect(&r, cmds[c], 1, fmt ? cks : ckj, "holds a training checkpoint",
                   "not weights: resume it with attn train --resume", "(--out)", NULL);
            run_free(&r);
        }
}

START_TEST(test_classifier) {
    const char *opts[] = {"--model", "rnn",       "--seed", "2",           "--train-size",
                          "120",     "--holdout", "20",     "--keep-best", "0"};
    round_trip("rnn", opts, (int)(sizeof opts / sizeof opts[0]));
}
END_TEST

START_TEST(test_seq2seq) {
    const char *opts[] = {"--model", "seq2seq-gru",  "--task", "rewrite",   "--hidden",
                          "8",       "--embed-dim",  "8",      "--seed",    "3",
                          "--quiet", "--train-size", "60",     "--holdout", "10"};
    round_trip("s2s", opts, (int)(sizeof opts / sizeof opts[0]));
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("cli_checkpoint_safetensors");
    TCase *tc = tcase_create("cli_checkpoint_safetensors");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_classifier);
    tcase_add_test(tc, test_seq2seq);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return cli_run_suite_in_tmp(suite());
}

/* test_cli_verdicts.c -- honest verdicts from the command line: attn train and attn eval put
 * the majority-class baseline and a 95 % interval beside an accuracy and warn when a model is
 * not distinguishable from chance (a file of random labels, made here, is never in the
 * repository); the built-in task gets no warning. --data's held-out set is drawn by a seeded
 * shuffle, not the file's last lines; --out creates its directory; train without --out writes
 * under runs/. And the learner's messages: explain with nothing to explain, a mistyped
 * experiment, a weights file that is not JSON, the help of train and reproduce. */
#include "cli_harness.h"

static const char *const words[] = {"the",   "summit", "trail", "view",  "was",     "stunning",
                                    "muddy", "steep",  "quiet", "long",  "cold",    "lake",
                                    "ridge", "path",   "warm",  "short", "crowded", "forest"};

/* n lines of six words drawn by a small LCG from `seed`; labels random (sorted: the first half
 * 0, the rest 1). */
static const char *random_tsv(const char *name, int n, unsigned seed, bool sorted) {
    static char path[4][256];
    static int next;
    char *p = path[next++ % 4];
    snprintf(p, sizeof path[0], "%s", tmp_path(name));
    size_t cap = (size_t)n * 128, len = 0;
    char *text = malloc(cap);
    ck_assert(text);
    unsigned x = seed;
    for (int i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        int label = sorted ? i >= n / 2 : (int)((x >> 16) & 1u);
        len += (size_t)snprintf(text + len, cap - len, "%d\t", label);
        for (int w = 0; w < 6; w++) {
            x = x * 1103515245u + 12345u;
            len += (size_t)snprintf(text + len, cap - len, "%s%s", w ? " " : "",
                                    words[(x >> 16) % (sizeof words / sizeof words[0])]);
        }
        len += (size_t)snprintf(text + len, cap - len, "\n");
    }
    write_file(p, text);
    free(text);
    return p;
}

START_TEST(test_random_labels_warned) {
    const char *train = random_tsv("random-train.tsv", 120, 7, false);
    const char *test = random_tsv("random-test.tsv", 60, 99, false);
    const char *w = tmp_path("made/by/train/r.json"); /* --out creates made/by/train */
    run_result r =
        run(NULL, "train", "--model", "transformer", "--data", train, "--vocab-from-data",
            "--holdout", "40", "--epochs", "4", "--batch", "16", "--embed-dim", "8", "--heads", "1",
            "--ffn-dim", "16", "--layers", "1", "--out", w, NULL);
    expect(&r, "train on random labels", 0, "held-out accuracy", "majority-class baseline",
           "95 % interval", "not distinguishable from chance", NULL);
    ck_assert(exists(w));
    run_free(&r);
    r = run(NULL, "eval", "--weights", w, "--data", test, NULL);
    expect(&r, "eval on random labels", 0, "not distinguishable from chance", NULL);
    ck_assert_msg(strstr(r.out, "(") && strstr(r.out, "/60), 95 % interval ") &&
                      strstr(r.out, "majority-class baseline"),
                  "eval's line: %s", r.out);
    run_free(&r);
}
END_TEST

START_TEST(test_builtin_task_not_warned) {
    char w[512];
    snprintf(w, sizeof w, "%s", tu_source_path("weights/transformer-seed1.json"));
    run_result r = run(NULL, "eval", "--weights", w, "--set", "plain", "--n",
                       tu_small() ? "100" : "400", "--batch", "32", NULL);
    expect(&r, "eval the built-in task", 0, NULL);
    ck_assert_msg(strstr(r.out, "majority-class baseline") != NULL, "%s", r.out);
    ck_assert_msg(strstr(r.err, "chance") == NULL, "a warning on the built-in task: %s", r.err);
    run_free(&r);
}
END_TEST

/* A file sorted by label: its last 20 lines are all positive, so a held-out set of the last
 * lines would have a 100 % baseline; the shuffled one holds both labels. */
START_TEST(test_heldout_is_shuffled) {
    const char *data = random_tsv("sorted.tsv", 80, 3, true);
    run_result r = run(NULL, "train", "--model", "rnn", "--data", data, "--vocab-from-data",
                       "--holdout", "20", "--epochs", "1", "--out", tmp_path("s.json"), NULL);
    expect(&r, "train on a sorted file", 0, "majority-class baseline", NULL);
    ck_assert_msg(strstr(r.err, "baseline 100.0 %") == NULL, "held-out = the last lines: %s",
                  r.err);
    run_free(&r);
}
END_TEST

START_TEST(test_default_out_under_runs) {
    child_cwd = tmp_dir;
    run_result r = run(NULL, "train", "--model", "rnn", "--epochs", "0", NULL);
    child_cwd = NULL;
    expect(&r, "train without --out", 0, "runs/rnn-seed1.json", NULL);
    ck_assert(exists(tmp_path("runs/rnn-seed1.json")));
    run_free(&r);
}
END_TEST

START_TEST(test_learner_messages) {
    run_result r = run("", "explain", "--weights", golden("rnn"), NULL);
    expect(&r, "explain, empty stdin", 2, "no sentence", NULL);
    run_free(&r);
    r = run(NULL, "experiment", "haeds", NULL);
    expect(&r, "experiment haeds", 2, "did you mean 'heads'?", NULL);
    run_free(&r);
    r = run(NULL, "experiment", "zzzzzzzzzzzzzz", NULL);
    expect(&r, "experiment zzz...", 2, "unknown experiment", NULL);
    ck_assert_msg(strstr(r.err, "did you mean") == NULL, "%s", r.err);
    run_free(&r);
    write_file(tmp_path("notes.txt"), "these are my notes, not weights\n");
    r = run(NULL, "predict", "--weights", tmp_path("notes.txt"), "the lecture was good", NULL);
    expect(&r, "predict with a text file", 1, "not a JSON or safetensors weights file", NULL);
    ck_assert_msg(strstr(r.err, "nest") == NULL, "parser jargon: %s", r.err);
    run_free(&r);
    r = run(NULL, "train", "--help", NULL);
    expect(&r, "train --help", 0, NULL);
    ck_assert_msg(strstr(r.out, "seq2seq-transformer") && strstr(r.out, "--task rewrite|compose") &&
                      strstr(r.out, "runs/<model>-seed<S>.json"),
                  "%s", r.out);
    run_free(&r);
    r = run(NULL, "train", "--task", "rewrite", "--help", NULL);
    expect(&r, "train --task rewrite --help", 0, NULL);
    ck_assert_msg(strstr(r.out, "--ffn-dim") && strstr(r.out, "old name of --ffn-dim"), "%s",
                  r.out);
    run_free(&r);
    r = run(NULL, "data", "--set", "plain", "--n", "50", "--stats", NULL);
    expect(&r, "data --stats", 0, "plain (seed 1): 50 sentences", NULL);
    ck_assert_msg(r.out[0] == 0, "data --stats printed the sentences: %.200s", r.out);
    run_free(&r);
    r = run(NULL, "reproduce", "--help", NULL);
    expect(&r, "reproduce --help", 0, NULL);
    ck_assert_msg(strstr(r.out, "--task rewrite") && strstr(r.out, "--task compose") &&
                      !strstr(r.out, "another OpenBLAS core"),
                  "%s", r.out);
    run_free(&r);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("cli/verdicts");
    TCase *tc = tcase_create("verdicts");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_random_labels_warned);
    tcase_add_test(tc, test_builtin_task_not_warned);
    tcase_add_test(tc, test_heldout_is_shuffled);
    tcase_add_test(tc, test_default_out_under_runs);
    tcase_add_test(tc, test_learner_messages);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return cli_run_suite_in_tmp(suite());
}

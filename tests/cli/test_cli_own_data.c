/* test_cli_own_data.c -- your own data and words from the command line: attn train --data
 * --vocab-from-data [--min-count N] (the vocabulary's order, stored in the weights file),
 * --init with a file's own vocabulary, every bad TSV line reported with its number, and
 * unknown words read as [UNK] by predict, eval and explain where the vocabulary has it. */
#include "cli_harness.h"

/* A small file whose word counts are known: "the" 6, "was" 6, "tea" 3, "cake" 3, "good" 3,
 * "bad" 3, "not" 2, "quite" 1, "zesty" 1. */
static const char small_tsv[] = "1\tthe tea was good\n"
                                "0\tthe tea was bad\n"
                                "1\tThe cake was good!\n"
                                "0\tthe cake was bad\n"
                                "0\tthe tea was not good\n"
                                "1\tthe cake was not quite bad zesty\n";

/* (its own buffer: tmp_path's ring is reused after 8 calls) */
static const char *small_file(void) {
    static char path[256];
    snprintf(path, sizeof path, "%s", tmp_path("small.tsv"));
    write_file(path, small_tsv);
    return path;
}

/* The "vocab" array of a weights file, as one space-separated string. */
static void file_vocab(const char *path, char *buf, size_t n) {
    cJSON *j = tu_load_json(path);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "vocab"), *t;
    ck_assert_msg(cJSON_IsArray(v), "%s has no vocab", path);
    buf[0] = 0;
    cJSON_ArrayForEach(t, v) {
        if (buf[0]) strncat(buf, " ", n - strlen(buf) - 1);
        strncat(buf, t->valuestring, n - strlen(buf) - 1);
    }
    cJSON_Delete(j);
}

START_TEST(test_vocab_order_and_min_count) {
    const char *data = small_file();
    run_result r = run(NULL, "train", "--model", "rnn", "--data", data, "--vocab-from-data",
                       "--holdout", "2", "--epochs", "0", "--out", tmp_path("v1.json"), NULL);
    expect(&r, "vocab-from-data", 0, "vocabulary of 12 tokens", NULL);
    run_free(&r);
    char got[512];
    file_vocab(tmp_path("v1.json"), got, sizeof got);
    /* most frequent first, equal counts in byte order */
    ck_assert_str_eq(got, "[PAD] [CLS] [UNK] the was bad cake good tea not quite zesty");
    r = run(NULL, "train", "--model", "transformer", "--data", data, "--vocab-from-data",
            "--min-count", "3", "--holdout", "2", "--epochs", "0", "--out", tmp_path("v3.json"),
            NULL);
    expect(&r, "--min-count 3", 0, "vocabulary of 9 tokens", "3 rarer words are read as [UNK]",
           NULL);
    run_free(&r);
    file_vocab(tmp_path("v3.json"), got, sizeof got);
    ck_assert_str_eq(got, "[PAD] [CLS] [UNK] the was bad cake good tea");
    ck_assert_int_eq(count_params_in_file(tmp_path("v3.json")),
                     /* embedding 9 x 32 instead of 91 x 32: 82 x 32 fewer parameters */
                     count_params_in_file(golden("transformer")) - 82 * 32);
}
END_TEST

START_TEST(test_train_deterministic_and_readable) {
    const char *data = small_file();
    for (int i = 0; i < 2; i++) {
        run_result r = run(NULL, "train", "--model", "lstm", "--data", data, "--vocab-from-data",
                           "--holdout", "2", "--epochs", "3", "--batch", "2", "--out",
                           tmp_path(i ? "b.json" : "a.json"), NULL);
        expect(&r, "train", 0, NULL);
        run_free(&r);
    }
    ck_assert(files_equal(tmp_path("a.json"), tmp_path("b.json")));
    /* the words go through the file's vocabulary: an unknown one reads as [UNK] = id 2 */
    run_result w = run(NULL, "predict", "--weights", tmp_path("a.json"), "--format", "tsv",
                       "the coffee was good", NULL);
    expect(&w, "predict with an unknown word", 0, "1 word in 1 sentence read as [UNK]", NULL);
    run_result ids = run(NULL, "predict", "--weights", tmp_path("a.json"), "--format", "tsv",
                         "--ids", "3 2 4 7", NULL);
    expect(&ids, "predict --ids", 0, NULL);
    /* label, probability and logit equal the ids' (the last column differs: words vs ids) */
    ck_assert_int_eq(strrchr(w.out, '\t') - w.out, strrchr(ids.out, '\t') - ids.out);
    ck_assert_msg(strncmp(w.out, ids.out, (size_t)(strrchr(w.out, '\t') - w.out)) == 0, "%s vs %s",
                  w.out, ids.out);
    run_free(&w);
    run_free(&ids);
    /* eval --data: unknown words counted in one warning */
    write_file(tmp_path("test.tsv"), "1\tthe coffee was good\n0\tthe scone was very bad\n"
                                     "1\tthe tea was good\n");
    run_result e =
        run(NULL, "eval", "--weights", tmp_path("a.json"), "--data", tmp_path("test.tsv"), NULL);
    expect(&e, "eval", 0, "3 words in 2 sentences read as [UNK]", NULL);
    ck_assert_msg(strstr(e.out, "(") && strstr(e.out, "/3)"), "%s", e.out);
    run_free(&e);
    run_result x =
        run(NULL, "explain", "--weights", tmp_path("a.json"), "the coffee was good", NULL);
    expect(&x, "explain", 0, "sentence 1: 1 word in 1 sentence read as [UNK]", NULL);
    ck_assert_msg(strstr(x.out, "[UNK]"), "%s", x.out);
    run_free(&x);
}
END_TEST

START_TEST(test_builtin_vocab_still_refuses_unknown_words) {
    /* the built-in vocabulary has no [UNK]: today's error, the line named */
    run_result r = run(NULL, "predict", "--weights", golden("lstm"), "the lecture was yummy", NULL);
    expect(&r, "predict", 1, "unknown word 'yummy'", NULL);
    run_free(&r);
    write_file(tmp_path("u.tsv"), "1\tthe lecture was good\n0\tthe lecture was yucky\n");
    r = run(NULL, "eval", "--weights", golden("lstm"), "--data", tmp_path("u.tsv"), NULL);
    expect(&r, "eval", 1, "u.tsv:2: unknown word 'yucky'", NULL);
    run_free(&r);
}
END_TEST

START_TEST(test_every_bad_line_reported) {
    /* 25 bad lines of four kinds among good ones: the first 20 each with its number, then the
     * count; nothing is written */
    char text[8192] = "";
    int bad_lines[25], n_bad = 0, line = 0;
    for (int i = 0; i < 40; i++) {
        line++;
        if (i % 8 == 0) {
            strcat(text, "1\tthe lecture was good\n");
            continue;
        }
        const char *bad[] = {"2\tthe lecture was good\n", "1 the lecture was good\n",
                             "0\tthe\texam was bad\n", "1\t!!!\n"};
        if (n_bad < 25) {
            strcat(text, bad[n_bad % 4]);
            bad_lines[n_bad++] = line;
        } else {
            strcat(text, "0\tthe exam was bad\n");
        }
    }
    write_file(tmp_path("bad.tsv"), text);
    run_result r =
        run(NULL, "train", "--model", "rnn", "--data", tmp_path("bad.tsv"), "--vocab-from-data",
            "--holdout", "1", "--epochs", "1", "--out", tmp_path("never.json"), NULL);
    expect(&r, "bad lines", 1, "bad label '2'", "missing tab", "more than 2 tab-separated",
           "empty sentence", "and 5 more bad lines (25 in all)", NULL);
    for (int i = 0; i < 25; i++) {
        char frag[64];
        snprintf(frag, sizeof frag, "bad.tsv:%d: ", bad_lines[i]);
        if (i < 20)
            ck_assert_msg(strstr(r.err, frag), "line %d not named: %s", bad_lines[i], r.err);
        else
            ck_assert_msg(!strstr(r.err, frag), "line %d listed past 20: %s", bad_lines[i], r.err);
    }
    ck_assert(!exists(tmp_path("never.json")));
    run_free(&r);
    /* the reader without --vocab-from-data reports them all too */
    r = run(NULL, "eval", "--weights", golden("rnn"), "--data", tmp_path("bad.tsv"), NULL);
    expect(&r, "eval bad lines", 1, "bad.tsv:2: bad label", "bad.tsv:3: missing tab", "(25 in all)",
           NULL);
    run_free(&r);
}
END_TEST

START_TEST(test_init_uses_the_files_vocabulary) {
    const char *data = small_file();
    run_result r = run(NULL, "train", "--model", "gru", "--data", data, "--vocab-from-data",
                       "--holdout", "2", "--epochs", "1", "--out", tmp_path("start.json"), NULL);
    expect(&r, "first run", 0, NULL);
    run_free(&r);
    /* words outside the built-in 89 ("tea", "cake", "zesty") are the file's own: fine */
    r = run(NULL, "train", "--init", tmp_path("start.json"), "--data", data, "--holdout", "2",
            "--epochs", "2", "--out", tmp_path("more.json"), NULL);
    expect(&r, "--init with its own vocabulary", 0, NULL);
    run_free(&r);
    char a[512], b[512];
    file_vocab(tmp_path("start.json"), a, sizeof a);
    file_vocab(tmp_path("more.json"), b, sizeof b);
    ck_assert_str_eq(a, b);
    /* --epochs 0 writes the --init weights unchanged */
    r = run(NULL, "train", "--init", tmp_path("start.json"), "--data", data, "--epochs", "0",
            "--out", tmp_path("same.json"), NULL);
    expect(&r, "--init --epochs 0", 0, NULL);
    run_free(&r);
    ck_assert(files_equal(tmp_path("start.json"), tmp_path("same.json")));
    /* generated data is in the built-in words: refused */
    r = run(NULL, "train", "--init", tmp_path("start.json"), "--epochs", "1", "--out",
            tmp_path("x.json"), NULL);
    expect(&r, "--init own vocabulary without --data", 2, "has its own vocabulary (12 tokens)",
           "--data", NULL);
    run_free(&r);
}
END_TEST

START_TEST(test_resume_rebuilds_the_vocabulary) {
    const char *data = small_file();
    run_result r =
        run(NULL, "train", "--model", "rnn", "--data", data, "--vocab-from-data", "--holdout", "2",
            "--batch", "2", "--epochs", "3", "--out", tmp_path("straight.json"), NULL);
    expect(&r, "straight", 0, NULL);
    run_free(&r);
    r = run(NULL, "train", "--model", "rnn", "--data", data, "--vocab-from-data", "--holdout", "2",
            "--batch", "2", "--epochs", "2", "--checkpoint", tmp_path("c.json"), "--out",
            tmp_path("part.json"), NULL);
    expect(&r, "part", 0, NULL);
    run_free(&r);
    r = run(NULL, "train", "--resume", tmp_path("c.json"), "--data", data, "--epochs", "3", "--out",
            tmp_path("resumed.json"), NULL);
    expect(&r, "resume without --vocab-from-data", 2, "vocabulary of its own (12 tokens)", NULL);
    run_free(&r);
    r = run(NULL, "train", "--resume", tmp_path("c.json"), "--data", data, "--vocab-from-data",
            "--min-count", "2", "--epochs", "3", "--out", tmp_path("resumed.json"), NULL);
    expect(&r, "resume with another --min-count", 2, "makes 10 tokens", NULL);
    run_free(&r);
    r = run(NULL, "train", "--resume", tmp_path("c.json"), "--data", data, "--vocab-from-data",
            "--epochs", "3", "--out", tmp_path("resumed.json"), NULL);
    expect(&r, "resume", 0, NULL);
    run_free(&r);
    ck_assert(files_equal(tmp_path("straight.json"), tmp_path("resumed.json")));
}
END_TEST

START_TEST(test_usage_errors) {
    const char *data = small_file();
    struct {
        const char *what, *args[8], *frag;
    } cases[] = {
        {"no --data", {"--model", "rnn", "--vocab-from-data"}, "needs --data"},
        {"--min-count alone",
         {"--model", "rnn", "--data", data, "--min-count", "2"},
         "--min-count goes with --vocab-from-data"},
        {"--min-count 0", {"--model", "rnn", "--min-count", "0"}, "1..1000000"},
        {"with --init",
         {"--init", golden("rnn"), "--data", data, "--vocab-from-data"},
         "exclude each other"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *args[12] = {"train"};
        int n = 1;
        for (int k = 0; cases[i].args[k]; k++) args[n++] = (char *)cases[i].args[k];
        args[n] = NULL;
        run_result r = run_argv(NULL, args);
        expect(&r, cases[i].what, 2, cases[i].frag, NULL);
        run_free(&r);
    }
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("cli/own_data");
    TCase *tc = tcase_create("own_data");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_vocab_order_and_min_count);
    tcase_add_test(tc, test_train_deterministic_and_readable);
    tcase_add_test(tc, test_builtin_vocab_still_refuses_unknown_words);
    tcase_add_test(tc, test_every_bad_line_reported);
    tcase_add_test(tc, test_init_uses_the_files_vocabulary);
    tcase_add_test(tc, test_resume_rebuilds_the_vocabulary);
    tcase_add_test(tc, test_usage_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return cli_run_suite_in_tmp(suite());
}

/* test_cli_vocab.c -- the commands with a weights file that carries its own vocabulary, and
 * `attn predict --ids`. The file is a committed model with the built-in words renamed ("helpful"
 * -> "nuttig", ...): the same ids, so every logit must equal the built-in file's for the renamed
 * sentence -- byte for byte, and the built-in path itself is checked against PyTorch elsewhere
 * (tests/cli/test_cli.c, io/crosscheck_torch; io/vocab_torch checks own vocabularies live). */
#include "cli_harness.h"

/* Renamed words: (built-in, own). */
static const char *const renames[][2] = {
    {"helpful", "nuttig"}, {"lecture", "vorlesung"}, {"not", "niet"}, {"boring", "saai"}};
#define N_RENAMES (sizeof renames / sizeof renames[0])

/* The committed weights `name` (weights/NAME.json) with a "vocab" of the built-in words, renamed
 * as above (and the last token replaced by extra_vocab when given), written to tmp_dir/out. */
static const char *own_vocab_file(const char *name, const char *out, const char *extra_vocab) {
    char rel[128];
    snprintf(rel, sizeof rel, "weights/%s.json", name);
    char *text = tu_read_text(tu_source_path(rel));
    char vocab[4096] = "\"vocab\": [";
    for (int id = 0; id < ATTN_VOCAB_SIZE; id++) {
        const char *w = attn_vocab_word(id);
        for (size_t r = 0; r < N_RENAMES; r++)
            if (strcmp(w, renames[r][0]) == 0) w = renames[r][1];
        if (extra_vocab && id == ATTN_VOCAB_SIZE - 1) w = extra_vocab;
        strcat(vocab, id ? ", \"" : "\"");
        strcat(vocab, w);
        strcat(vocab, "\"");
    }
    strcat(vocab, "],\n\"tensors\"");
    char *edited = tu_replace_once(text, rel, "\"tensors\"", vocab);
    const char *path = tmp_path(out);
    write_file(path, edited);
    free(edited);
    free(text);
    return path;
}

static const char *builtin_file(const char *name) {
    static char buf[2][512];
    static int next;
    char rel[128];
    snprintf(rel, sizeof rel, "weights/%s.json", name);
    char *b = buf[next++ % 2];
    snprintf(b, sizeof buf[0], "%s", tu_source_path(rel));
    return b;
}

/* Number of "logit=" fields in text, each compared byte for byte with the other output's. */
static int count_logits(const char *text) {
    int n = 0;
    for (const char *p = text; (p = strstr(p, "logit=")) != NULL; p++) n++;
    return n;
}

static void expect_same_logits(const char *what, const char *a, const char *b) {
    int n = count_logits(a);
    ck_assert_msg(n > 0 && n == count_logits(b), "%s: %d vs %d logits", what, n, count_logits(b));
    const char *pa = a, *pb = b;
    for (int i = 0; i < n; i++) {
        pa = strstr(pa, "logit=");
        pb = strstr(pb, "logit=");
        size_t la = strcspn(pa, " \n"), lb = strcspn(pb, " \n");
        ck_assert_msg(la == lb && memcmp(pa, pb, la) == 0, "%s: line %d: %.*s vs %.*s", what, i + 1,
                      (int)la, pa, (int)lb, pb);
        pa += la;
        pb += lb;
    }
}

/* ---- predict: words through the file's vocabulary, and --ids --------------------------------- */

START_TEST(test_predict_own_vocab_words_and_ids) {
    const char *archs[] = {"rnn-seed1", "lstm-seed1", "transformer-seed1"};
    for (size_t a = 0; a < 3; a++) {
        const char *own = own_vocab_file(archs[a], "own.json", NULL);
        run_result mine = run(NULL, "predict", "--weights", own, "the vorlesung was niet saai",
                              "Honestly, the Vorlesung was very nuttig!", NULL);
        run_result ref =
            run(NULL, "predict", "--weights", builtin_file(archs[a]), "the lecture was not boring",
                "Honestly, the Lecture was very helpful!", NULL);
        expect(&mine, "predict own vocab", 0, NULL);
        expect(&ref, "predict built-in", 0, NULL);
        expect_same_logits(archs[a], mine.out, ref.out);
        /* the same sentences as ids: 55 = honestly, 2 = the, 3 = lecture, ... */
        char ids[2][64];
        snprintf(ids[0], sizeof ids[0], "%d %d %d %d %d", attn_vocab_id("the"),
                 attn_vocab_id("lecture"), attn_vocab_id("was"), attn_vocab_id("not"),
                 attn_vocab_id("boring"));
        snprintf(ids[1], sizeof ids[1], "%d  %d %d %d\t%d %d", attn_vocab_id("honestly"),
                 attn_vocab_id("the"), attn_vocab_id("lecture"), attn_vocab_id("was"),
                 attn_vocab_id("very"), attn_vocab_id("helpful"));
        char stdin_text[160];
        snprintf(stdin_text, sizeof stdin_text, "%s\n%s\n", ids[0], ids[1]);
        run_result by_ids = run(stdin_text, "predict", "--ids", "--weights", own, NULL);
        expect(&by_ids, "predict --ids", 0, NULL);
        expect_same_logits(archs[a], by_ids.out, ref.out);
        ck_assert_msg(strstr(by_ids.out, "  2 3 11 15 32\n"), "ids echoed: %s", by_ids.out);
        run_free(&mine);
        run_free(&ref);
        run_free(&by_ids);
    }
}
END_TEST

START_TEST(test_predict_ids_json) {
    run_result r = run(NULL, "predict", "--ids", "--format", "json", "--weights",
                       builtin_file("lstm-seed1"), "2 3 11 22", NULL);
    expect(&r, "predict --ids json", 0, NULL);
    ck_assert_msg(strncmp(r.out, "{\"ids\": [2, 3, 11, 22], \"label\": ", 33) == 0, "%s", r.out);
    run_free(&r);
}
END_TEST

START_TEST(test_predict_ids_errors_name_the_line) {
    const char *in = "2 3 11 22\n2 91\n2 x3\n\n  \t \n-1 2\n99999999999999999999\n2 3 11 23\n";
    run_result r = run(in, "predict", "--ids", "--weights", builtin_file("lstm-seed1"), NULL);
    expect(&r, "predict --ids bad lines", 1,
           "line 2: token 2: id 91 is out of range: the vocabulary has 91 tokens (ids 0..90)",
           "line 3: token 2 'x3' is not a token id (a whole number 0..90)",
           "line 4: no token ids (empty line)", "line 5: no token ids (empty line)",
           "line 6: token 1 '-1' is not a token id",
           "line 7: token 1: id 99999999999999999999 is out of range",
           "6 of 8 sentences not classified", NULL);
    /* the good lines are still classified, in order */
    ck_assert_msg(strstr(r.out, "  2 3 11 22\n") && strstr(r.out, "  2 3 11 23\n"), "%s", r.out);
    run_free(&r);
    /* as arguments: named by their number */
    r = run(NULL, "predict", "--ids", "--weights", builtin_file("lstm-seed1"), "2 3", "", "7 q",
            NULL);
    expect(&r, "predict --ids bad arguments", 1, "sentence 2: no token ids",
           "sentence 3: token 2 'q'", NULL);
    run_free(&r);
}
END_TEST

START_TEST(test_predict_ids_count_limit) {
    /* the Transformer takes max_len - 1 = 80 ids after [CLS]: 81 is the model's error, named */
    char line[81 * 3 + 2] = "";
    for (int i = 0; i < 81; i++) strcat(line, "2 ");
    strcat(line, "\n");
    run_result r =
        run(line, "predict", "--ids", "--weights", builtin_file("transformer-seed1"), NULL);
    expect(&r, "predict --ids 81 ids", 1, "line 1:", "81", NULL);
    run_free(&r);
    line[80 * 2] = '\n';
    line[80 * 2 + 1] = '\0';
    r = run(line, "predict", "--ids", "--weights", builtin_file("transformer-seed1"), NULL);
    expect(&r, "predict --ids 80 ids", 0, NULL);
    run_free(&r);
}
END_TEST

START_TEST(test_predict_unknown_word_own_vocab) {
    const char *own = own_vocab_file("lstm-seed1", "own.json", NULL);
    /* the built-in word is unknown now; the message points at the file's vocabulary */
    run_result r = run(NULL, "predict", "--weights", own, "the lecture was nutig", NULL);
    expect(&r, "predict unknown word", 1, "unknown word 'lecture' at position 2",
           "closest vocabulary word: 'course'", "'attn vocab --weights' lists it", NULL);
    run_free(&r);
    r = run(NULL, "predict", "--weights", own, "the vorlesung was nutig", NULL);
    expect(&r, "predict typo", 1, "position 4", "closest vocabulary word: 'nuttig'", NULL);
    run_free(&r);
}
END_TEST

/* An unknown word on the task's vocabulary: the nearest by spelling and the words of the class
 * its place takes (src/data/suggest.c), in predict's and explain's messages alike; the spelling
 * alone ("is" for "pizza") was all they gave before. */
START_TEST(test_unknown_word_by_category) {
    run_result r = run(NULL, "predict", "--weights", builtin_file("transformer-seed1"),
                       "the pizza was good", NULL);
    expect(&r, "predict pizza", 1, "unknown word 'pizza' at position 2",
           "closest vocabulary word: 'is'; by its place (after 'the', before 'was') a subject "
           "noun: exam, course, seminar, lecture, teacher, ...",
           NULL);
    run_free(&r);
    r = run(NULL, "explain", "--weights", builtin_file("lstm-seed1"), "the lecture was stunning",
            NULL);
    expect(&r, "explain stunning", 1, "unknown word 'stunning' at position 4",
           "an adjective: positive engaging, inspiring, fun, interesting, useful, ... or "
           "negative boring, confusing, terrible, dull, useless, ...",
           NULL);
    run_free(&r);
    r = run(NULL, "predict", "--weights", builtin_file("rnn-seed1"),
            "the lecture was good because the food was bad", NULL);
    expect(&r, "predict because", 1, "a conjunction: but, while, though, whereas, although", NULL);
    run_free(&r);
    /* no place to read (one word): the spelling only */
    r = run(NULL, "predict", "--weights", builtin_file("rnn-seed1"), "pizza", NULL);
    expect(&r, "predict pizza alone", 1, "(closest vocabulary word: 'is'; 'attn vocab' lists",
           NULL);
    run_free(&r);
}
END_TEST

START_TEST(test_bad_vocab_file_refused) {
    const char *bad = own_vocab_file("lstm-seed1", "bad.json", "the"); /* "the" twice */
    run_result r = run(NULL, "predict", "--weights", bad, "the vorlesung was nuttig", NULL);
    expect(&r, "predict bad vocab", 1, bad, "vocab[90] 'the' duplicates vocab[2]", NULL);
    run_free(&r);
    r = run(NULL, "vocab", "--weights", bad, NULL);
    expect(&r, "vocab bad vocab", 1, "duplicates vocab[2]", NULL);
    run_free(&r);
}
END_TEST

/* ---- vocab, info, eval, explain, grad ------------------------------------------------------- */

START_TEST(test_vocab_lists_the_files_vocabulary) {
    const char *own = own_vocab_file("rnn-seed1", "own.json", "End");
    run_result r = run(NULL, "vocab", "--weights", own, NULL);
    expect(&r, "vocab --weights", 0, NULL);
    ck_assert_msg(strstr(r.out, "\n22   nuttig       word\n"), "%s", r.out);
    ck_assert_msg(strstr(r.out, "\n0    [PAD]        special\n"), "%s", r.out);
    ck_assert_msg(strstr(r.out, "\n90   End          ids-only\n"), "%s", r.out);
    run_free(&r);
    r = run(NULL, "vocab", "--json", "--weights", own, NULL);
    expect(&r, "vocab --json --weights", 0, NULL);
    cJSON *j = cJSON_Parse(r.out);
    ck_assert_ptr_nonnull(j);
    ck_assert_int_eq(cJSON_GetObjectItem(j, "vocab_size")->valueint, 91);
    ck_assert_str_eq(cJSON_GetObjectItem(j, "source")->valuestring, "file");
    const cJSON *t = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "words"), 3);
    ck_assert_str_eq(cJSON_GetObjectItem(t, "word")->valuestring, "vorlesung");
    cJSON_Delete(j);
    run_free(&r);
    /* a file without a vocabulary lists the built-in one, as plain `attn vocab` does */
    run_result plain = run(NULL, "vocab", NULL);
    r = run(NULL, "vocab", "--weights", builtin_file("rnn-seed1"), NULL);
    expect(&r, "vocab --weights built-in", 0, NULL);
    ck_assert_str_eq(r.out, plain.out);
    run_free(&r);
    run_free(&plain);
}
END_TEST

START_TEST(test_info_shows_vocabulary) {
    const char *own = own_vocab_file("lstm-seed1", "own.json", NULL);
    run_result r = run(NULL, "info", "--weights", own, NULL);
    expect(&r, "info own", 0, NULL);
    ck_assert_msg(strstr(r.out, "vocabulary   its own, 91 tokens\n"), "%s", r.out);
    run_free(&r);
    r = run(NULL, "info", "--weights", builtin_file("lstm-seed1"), NULL);
    expect(&r, "info built-in", 0, NULL);
    ck_assert_msg(strstr(r.out, "vocabulary   built-in course-review, 91 tokens\n"), "%s", r.out);
    run_free(&r);
}
END_TEST

START_TEST(test_eval_tsv_own_vocab) {
    const char *own = own_vocab_file("lstm-seed1", "own.json", NULL);
    write_file(tmp_path("own.tsv"), "0\tthe vorlesung was niet nuttig\n1\tthe exam was great\n"
                                    "0\tthe vorlesung was saai\n");
    write_file(tmp_path("ref.tsv"), "0\tthe lecture was not helpful\n1\tthe exam was great\n"
                                    "0\tthe lecture was boring\n");
    run_result mine = run(NULL, "eval", "--weights", own, "--data", tmp_path("own.tsv"), NULL);
    run_result ref = run(NULL, "eval", "--weights", builtin_file("lstm-seed1"), "--data",
                         tmp_path("ref.tsv"), NULL);
    expect(&mine, "eval own", 0, NULL);
    expect(&ref, "eval ref", 0, NULL);
    ck_assert_msg(strstr(mine.out, "accuracy 100.00 % (3/3)"), "%s", mine.out);
    ck_assert_str_eq(strstr(mine.out, "accuracy"), strstr(ref.out, "accuracy"));
    run_free(&mine);
    run_free(&ref);
    /* the built-in words are unknown to the file's vocabulary: named with file and line */
    run_result r = run(NULL, "eval", "--weights", own, "--data", tmp_path("ref.tsv"), NULL);
    expect(&r, "eval own with built-in words", 1, "ref.tsv:1: unknown word 'lecture'", NULL);
    run_free(&r);
    r = run(NULL, "eval", "--weights", own, "--set", "plain", NULL);
    expect(&r, "eval --set own", 1, "has its own vocabulary (91 tokens)", "--data FILE.tsv", NULL);
    run_free(&r);
}
END_TEST

START_TEST(test_explain_names_own_tokens) {
    const char *own = own_vocab_file("transformer-seed1", "own.json", NULL);
    run_result r = run(NULL, "explain", "--format", "json", "--weights", own,
                       "the vorlesung was niet nuttig", NULL);
    expect(&r, "explain own", 0, NULL);
    ck_assert_msg(strstr(r.out, "\"tokens\": [\"[CLS]\", \"the\", \"vorlesung\", \"was\", "
                                "\"niet\", \"nuttig\"]"),
                  "%s", r.out);
    run_free(&r);
}
END_TEST

START_TEST(test_grad_keeps_vocab) {
    const char *own = own_vocab_file("rnn-seed1", "own.json", NULL);
    write_file(tmp_path("g.tsv"), "0\tthe vorlesung was niet nuttig\n");
    run_result r = run(NULL, "grad", "--weights", own, "--data", tmp_path("g.tsv"), "--out",
                       tmp_path("g.json"), NULL);
    expect(&r, "grad own", 0, NULL);
    run_free(&r);
    r = run(NULL, "vocab", "--weights", tmp_path("g.json"), NULL);
    expect(&r, "vocab of the gradients", 0, NULL);
    ck_assert_msg(strstr(r.out, "\n22   nuttig       word\n"), "%s", r.out);
    run_free(&r);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("cli/vocab");
    TCase *tc = tcase_create("vocab");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_predict_own_vocab_words_and_ids);
    tcase_add_test(tc, test_predict_ids_json);
    tcase_add_test(tc, test_unknown_word_by_category);
    tcase_add_test(tc, test_predict_ids_errors_name_the_line);
    tcase_add_test(tc, test_predict_ids_count_limit);
    tcase_add_test(tc, test_predict_unknown_word_own_vocab);
    tcase_add_test(tc, test_bad_vocab_file_refused);
    tcase_add_test(tc, test_vocab_lists_the_files_vocabulary);
    tcase_add_test(tc, test_info_shows_vocabulary);
    tcase_add_test(tc, test_eval_tsv_own_vocab);
    tcase_add_test(tc, test_explain_names_own_tokens);
    tcase_add_test(tc, test_grad_keeps_vocab);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return cli_run_suite_in_tmp(suite());
}

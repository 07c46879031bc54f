/* test_tokenizer.c -- attn_tokenize (case, punctuation, errors) and attn_dataset_read_tsv
 * (errors name file:line). */
#include "data_internal.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *EXAMPLE = "honestly the lecture was not very helpful in the winter semester "
                             "according to my friends although the coffee was great";

START_TEST(test_example_sentence) {
    int ids[ATTN_MAX_WORDS], n = 0;
    attn_error err;
    ck_assert_msg(attn_tokenize(EXAMPLE, ids, ATTN_MAX_WORDS, &n, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_int_eq(n, 20);
    ck_assert_int_eq(ids[0], attn_vocab_id("honestly"));
    ck_assert_int_eq(ids[1], 2); /* "the" */
    ck_assert_int_eq(ids[5], attn_vocab_id("very"));
    ck_assert_str_eq(attn_vocab_word(ids[19]), "great");
}
END_TEST

START_TEST(test_case_and_punctuation) {
    int ids[8], n = 0;
    attn_error err;
    ck_assert_msg(attn_tokenize("  The Lecture,  WAS:\tnot helpful!? . ", ids, 8, &n, &err) ==
                      ATTN_OK,
                  "%s", err.msg);
    ck_assert_int_eq(n, 5);
    const char *want[] = {"the", "lecture", "was", "not", "helpful"};
    for (int i = 0; i < 5; i++) ck_assert_str_eq(attn_vocab_word(ids[i]), want[i]);
    /* exactly max_ids words is fine */
    ck_assert_int_eq(attn_tokenize("the lecture was good", ids, 4, &n, &err), ATTN_OK);
    ck_assert_int_eq(n, 4);
}
END_TEST

START_TEST(test_unknown_word) {
    int ids[8], n = -1;
    attn_error err;
    ck_assert_int_eq(attn_tokenize("the lecture was helpfull", ids, 8, &n, &err), ATTN_ERR_VALUE);
    ck_assert_int_eq(err.status, ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "'helpfull'"), "word missing: %s", err.msg);
    ck_assert_msg(strstr(err.msg, "position 4"), "position missing: %s", err.msg);
    ck_assert_msg(strstr(err.msg, "'helpful'"), "suggestion missing: %s", err.msg);
    ck_assert_int_eq(n, 0);
    /* upper case is folded before the suggestion; position counts words, not tokens */
    ck_assert_int_eq(attn_tokenize("the Lectur ! was", ids, 8, &n, &err), ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "'lectur'") && strstr(err.msg, "position 2") &&
                      strstr(err.msg, "'lecture'"),
                  "%s", err.msg);
    ck_assert_int_eq(attn_tokenize("the coffe was great", ids, 8, &n, &err), ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "'coffee'"), "%s", err.msg);
    /* special tokens are not words */
    ck_assert_int_eq(attn_tokenize("[CLS] the", ids, 8, &n, &err), ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "position 1"), "%s", err.msg);
    /* a very long word is reported truncated, without overflow */
    char longw[300];
    memset(longw, 'x', sizeof longw - 1);
    longw[sizeof longw - 1] = '\0';
    ck_assert_int_eq(attn_tokenize(longw, ids, 8, &n, &err), ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "position 1"), "%s", err.msg);
}
END_TEST

START_TEST(test_empty_and_too_long) {
    int ids[ATTN_MAX_WORDS], n = -1;
    attn_error err;
    ck_assert_int_eq(attn_tokenize("", ids, ATTN_MAX_WORDS, &n, &err), ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "empty"), "%s", err.msg);
    ck_assert_int_eq(attn_tokenize(" \t .,!? ", ids, ATTN_MAX_WORDS, &n, &err), ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "empty"), "%s", err.msg);

    char s[81 * 4 + 1] = "";
    for (int i = 0; i < 81; i++) strcat(s, "the ");
    ck_assert_int_eq(attn_tokenize(s, ids, ATTN_MAX_WORDS, &n, &err), ATTN_ERR_VALUE);
    /* the caller's limit, not an internal macro name */
    ck_assert_msg(strstr(err.msg, "81 words") && strstr(err.msg, "80") && !strstr(err.msg, "ATTN_"),
                  "%s", err.msg);
    s[80 * 4] = '\0'; /* 80 words fit */
    ck_assert_int_eq(attn_tokenize(s, ids, ATTN_MAX_WORDS, &n, &err), ATTN_OK);
    ck_assert_int_eq(n, 80);
    ck_assert_int_eq(attn_tokenize(NULL, ids, 8, &n, &err), ATTN_ERR_ARG);
}
END_TEST

/* ---- TSV reader ---------------------------------------------------------------------------- */

static char *write_tmp(const char *content) {
    static char path[64];
    strcpy(path, "/tmp/attn_test_tsv_XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fputs(content, f);
    fclose(f);
    return path;
}

static void expect_tsv_error(const char *content, attn_status want, const char *fragment) {
    char *path = write_tmp(content);
    attn_dataset *d = (attn_dataset *)0x1;
    attn_error err;
    ck_assert_int_eq(attn_dataset_read_tsv(path, &d, &err), want);
    ck_assert_ptr_null(d);
    ck_assert_msg(strstr(err.msg, path), "file missing: %s", err.msg);
    ck_assert_msg(strstr(err.msg, fragment), "want '%s' in: %s", fragment, err.msg);
    unlink(path);
}

START_TEST(test_quotes_and_brackets) {
    /* Typographic and ASCII quotes and brackets go like .,!?;: do; a token of only those is
     * dropped, so the word positions of the messages stay word counts. */
    int ids[16], n = 0;
    attn_error err;
    const char *s = "\xe2\x80\x9cthe lecture\xe2\x80\x9d was (very) \"good\" 'really' "
                    "[great] {fun} \xe2\x80\x98"
                    "clear\xe2\x80\x99 \xc2\xab ( )";
    ck_assert_msg(attn_tokenize(s, ids, 16, &n, &err) == ATTN_OK, "%s", err.msg);
    const char *want[] = {"the",    "lecture", "was", "very", "good",
                          "really", "great",   "fun", "clear"};
    ck_assert_int_eq(n, 9);
    for (int i = 0; i < 9; i++) ck_assert_str_eq(attn_vocab_word(ids[i]), want[i]);
    /* other non-letters still make an unknown word, named as typed */
    ck_assert_int_eq(attn_tokenize("the lecture was good-ish", ids, 16, &n, &err), ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "'good-ish'") && strstr(err.msg, "position 4"), "%s", err.msg);
}
END_TEST

START_TEST(test_vocab_id_lookup) {
    /* The hash lookup finds every word at its table position and nothing else. */
    for (int id = 0; id < ATTN_VOCAB_SIZE; id++)
        ck_assert_int_eq(attn_vocab_id(attn_vocab_word(id)), id);
    const char *absent[] = {"", "th", "thee", "Lecture", "lecture ", "helpfull", "[pad]", "zzz"};
    for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++)
        ck_assert_msg(attn_vocab_id(absent[i]) == -1, "'%s' found", absent[i]);
    ck_assert_int_eq(attn_vocab_id(NULL), -1);
}
END_TEST

START_TEST(test_tsv_ok) {
    char *path = write_tmp("0\tthe lecture was not good\r\n1\tHonestly, the exam was great!\n\n");
    attn_dataset *d = NULL;
    attn_error err;
    ck_assert_msg(attn_dataset_read_tsv(path, &d, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_int_eq(d->n, 2);
    ck_assert_int_eq(d->labels[0], 0);
    ck_assert_int_eq(d->labels[1], 1);
    ck_assert_int_eq(d->lengths[0], 5);
    ck_assert_int_eq(d->lengths[1], 5);
    ck_assert_uint_eq(d->offsets[2], 10);
    ck_assert_str_eq(d->texts[1], "honestly the exam was great");
    ck_assert_int_eq(d->ids[d->offsets[1]], attn_vocab_id("honestly"));
    attn_dataset_free(d);
    unlink(path);
}
END_TEST

START_TEST(test_tsv_errors) {
    expect_tsv_error("1\tthe lecture was good\n2\tthe lecture was bad\n", ATTN_ERR_PARSE,
                     ":2: bad label '2'");
    expect_tsv_error("1 the lecture was good\n", ATTN_ERR_PARSE, ":1: missing tab");
    expect_tsv_error("1\tthe lecture was good\n\n0\tthe lecture was baad\n", ATTN_ERR_VALUE,
                     ":3: unknown word 'baad' at position 4");
    expect_tsv_error("1\tthe lecture was good\n0\t\n", ATTN_ERR_VALUE, ":2: empty sentence");
    expect_tsv_error("", ATTN_ERR_PARSE, "no sentences");
    attn_dataset *d = NULL;
    attn_error err;
    ck_assert_int_eq(attn_dataset_read_tsv("/nonexistent/x.tsv", &d, &err), ATTN_ERR_IO);
    ck_assert_msg(strstr(err.msg, "/nonexistent/x.tsv"), "%s", err.msg);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("tokenizer");
    TCase *tc = tcase_create("tokenizer");
    tcase_add_test(tc, test_example_sentence);
    tcase_add_test(tc, test_case_and_punctuation);
    tcase_add_test(tc, test_unknown_word);
    tcase_add_test(tc, test_empty_and_too_long);
    tcase_add_test(tc, test_quotes_and_brackets);
    tcase_add_test(tc, test_vocab_id_lookup);
    tcase_add_test(tc, test_tsv_ok);
    tcase_add_test(tc, test_tsv_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return tu_run_suite(suite());
}

/* test_explain_json.c -- the explain request (attn_explain_request_parse) is read by the strict
 * reader, so what that reader refuses is refused here too, as ATTN_ERR_PARSE with the byte, line
 * and column: a key given twice (the server answers 400 malformed_json for it), invalid UTF-8
 * in a string, \u0000; the one string escaper every JSON writer uses; the predict object. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void expect_refused(const char *text, const char *why, const char *where) {
    attn_explain_request r;
    attn_error err = {0};
    ck_assert_msg(attn_explain_request_parse(text, strlen(text), &r, &err) == ATTN_ERR_PARSE,
                  "accepted %s", text);
    ck_assert(r.sentence == NULL && r.n_models == 0);
    ck_assert_msg(strstr(err.msg, why) && strstr(err.msg, where), "%s: \"%s\" lacks %s / %s", text,
                  err.msg, why, where);
}

START_TEST(test_request_duplicate_keys) {
    expect_refused("{\"sentence\": \"a\", \"sentence\": \"b\"}", "duplicate key",
                   "byte 18 (line 1, column 19)");
    expect_refused("{\"sentence\": \"a\",\n \"models\": [], \"models\": [\"rnn\"]}",
                   "duplicate key", "line 2, column 16");
    expect_refused("{\"sentence\": \"a\", \"sent\\u0065nce\": \"b\"}", "duplicate key", "byte 18");
    /* one name in two objects is not a duplicate */
    attn_explain_request r;
    attn_error err = {0};
    const char *ok = "{\"sentence\": \"good\", \"models\": [\"rnn\"]}";
    ck_assert_msg(attn_explain_request_parse(ok, strlen(ok), &r, &err) == ATTN_OK, "%s", err.msg);
    attn_explain_request_clear(&r);
}
END_TEST

START_TEST(test_request_invalid_utf8) {
    expect_refused("{\"sentence\": \"caf\xe9\"}", "invalid UTF-8", "byte 17 (line 1, column 18)");
    expect_refused("{\"sentence\": \"\xed\xa0\x80\"}", "invalid UTF-8", "byte 14");
    expect_refused("{\"sentence\": \"a\\u0000\"}", "NUL", "byte 21");
    attn_explain_request r;
    attn_error err = {0};
    const char *ok = "{\"sentence\": \"caf\xc3\xa9\"}";
    ck_assert_msg(attn_explain_request_parse(ok, strlen(ok), &r, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_str_eq(r.sentence, "caf\xc3\xa9");
    attn_explain_request_clear(&r);
}
END_TEST

START_TEST(test_escaper) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ck_assert_ptr_nonnull(f);
    /* quote, backslash, control bytes, DEL, UTF-8 kept, a surrogate, an overlong form, a byte
     * beyond U+10FFFF and a cut sequence each replaced byte by byte */
    attn_json_write_string(
        f, "a\"b\\c\n\x01\x7f \xc3\xa9\xe2\x80\x9c \xed\xa0\x80 \xc0\xaf \xf4\x90 \xe2\x82");
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_str_eq(text, "\"a\\\"b\\\\c\\u000a\\u0001\\u007f \xc3\xa9\xe2\x80\x9c "
                           "\\ufffd\\ufffd\\ufffd \\ufffd\\ufffd \\ufffd\\ufffd \\ufffd\\ufffd\"");
    free(text);
}
END_TEST

START_TEST(test_prediction_json) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ck_assert_ptr_nonnull(f);
    attn_prediction_write_json(f, "a \"b\"", NULL, 0, -0.5f, 0.3775406687981454);
    fputc('\n', f);
    const int ids[] = {3, 11, 15};
    attn_prediction_write_json(f, NULL, ids, 3, 2.25f, 0.9046505351008906);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_str_eq(text, "{\"sentence\": \"a \\\"b\\\"\", \"label\": 0, \"probability\": "
                           "0.377540669, \"logit\": -0.5}\n{\"ids\": [3, 11, 15], \"label\": 1, "
                           "\"probability\": 0.904650535, \"logit\": 2.25}");
    free(text);
}
END_TEST

int main(void) {
    Suite *s = suite_create("io/explain_json");
    TCase *tc = tcase_create("explain_json");
    tcase_add_test(tc, test_request_duplicate_keys);
    tcase_add_test(tc, test_request_invalid_utf8);
    tcase_add_test(tc, test_escaper);
    tcase_add_test(tc, test_prediction_json);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}

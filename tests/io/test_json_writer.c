/* test_json_writer.c -- the JSON writer (src/io/json_writer.c): nested objects and arrays get
 * ", " between values and ": " after keys and nowhere else; strings and keys are escaped; the
 * numbers are printf's "%.9g"/"%.*f"/"%.*g" text; the text parses back (cJSON) to the same values;
 * a misuse (an unbalanced end, a key in an array, a value without a key, a container left open, a
 * second top-level value) fails with ATTN_ERR_ARG and the writer then ignores later calls;
 * writing to a FILE* gives the same bytes as the buffer; and arrays of lines (the layout of
 * attn vocab --json) and the kernels record have their exact bytes. */
#include "attn_io.h"
#include "test_util.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The document of the cases below, written into w. */
static void write_doc(attn_json_writer *w) {
    attn_json_begin_object(w);
    attn_json_key(w, "model");
    attn_json_string(w, "rnn \"q\" \\ \n\x01");
    attn_json_key(w, "seed");
    attn_json_int(w, -3);
    attn_json_key(w, "params");
    attn_json_uint(w, 18446744073709551615ull);
    attn_json_key(w, "logits");
    attn_json_begin_array(w);
    attn_json_double(w, 0.1);
    attn_json_float(w, 0.1f);
    attn_json_fixed(w, 2.0 / 3.0, 6);
    attn_json_digits(w, 2.0 / 3.0, 6);
    attn_json_begin_array(w);
    attn_json_end_array(w);
    attn_json_begin_object(w);
    attn_json_end_object(w);
    attn_json_end_array(w);
    attn_json_key(w, "ok");
    attn_json_bool(w, true);
    attn_json_key(w, "no");
    attn_json_bool(w, false);
    attn_json_key(w, "note");
    attn_json_null(w);
    attn_json_key(w, "k\"ey");
    attn_json_raw(w, "{\"a\": [1, 2]}", 13);
    attn_json_end_object(w);
}

static const char want_doc[] =
    "{\"model\": \"rnn \\\"q\\\" \\\\ \\u000a\\u0001\", \"seed\": -3, "
    "\"params\": 18446744073709551615, \"logits\": [0.1, 0.100000001, 0.666667, 0.666667, [], {}], "
    "\"ok\": true, \"no\": false, \"note\": null, \"k\\\"ey\": {\"a\": [1, 2]}}";

START_TEST(test_document) {
    attn_json_writer w;
    attn_json_writer_init(&w, NULL);
    write_doc(&w);
    char *text = NULL;
    size_t len = 0;
    attn_error err;
    ck_assert_int_eq(attn_json_writer_take(&w, &text, &len, &err), ATTN_OK);
    ck_assert_str_eq(text, want_doc); /* 0.1 and 0.1f as printf("%.9g") writes them */
    ck_assert_uint_eq(len, strlen(want_doc));

    cJSON *j = cJSON_Parse(text);
    ck_assert_ptr_nonnull(j);
    ck_assert_str_eq(cJSON_GetObjectItem(j, "model")->valuestring, "rnn \"q\" \\ \n\x01");
    const cJSON *logits = cJSON_GetObjectItem(j, "logits");
    ck_assert_int_eq(cJSON_GetArraySize(logits), 6);
    ck_assert((float)cJSON_GetArrayItem(logits, 1)->valuedouble == 0.1f); /* reads back */
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(j, "note")));
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "k\"ey"), "a")),
                     2);
    cJSON_Delete(j);
    free(text);
}
END_TEST

START_TEST(test_file_same_bytes) {
    attn_json_writer w;
    attn_json_writer_init(&w, NULL);
    write_doc(&w);
    char *text = NULL;
    attn_error err;
    ck_assert_int_eq(attn_json_writer_take(&w, &text, NULL, &err), ATTN_OK);
    char *mem = NULL;
    size_t mem_len = 0;
    FILE *f = open_memstream(&mem, &mem_len);
    ck_assert_ptr_nonnull(f);
    attn_json_writer_init(&w, f);
    write_doc(&w);
    ck_assert_int_eq(attn_json_writer_finish(&w, &err), ATTN_OK);
    fclose(f);
    ck_assert_str_eq(mem, text);
    free(mem);
    free(text);
}
END_TEST

/* The status _take reports after calls; the text must be NULL on error. */
static attn_status outcome(void (*calls)(attn_json_writer *), char *msg, size_t msg_size) {
    attn_json_writer w;
    attn_json_writer_init(&w, NULL);
    calls(&w);
    char *text = (char *)1;
    attn_error err = {0};
    const attn_status s = attn_json_writer_take(&w, &text, NULL, &err);
    if (s != ATTN_OK) {
        ck_assert_ptr_null(text);
        snprintf(msg, msg_size, "%s", err.msg);
    }
    free(s == ATTN_OK ? text : NULL);
    return s;
}

static void end_unopened(attn_json_writer *w) {
    attn_json_end_object(w);
}
static void end_mismatched(attn_json_writer *w) {
    attn_json_begin_object(w);
    attn_json_end_array(w);
    attn_json_end_object(w); /* ignored after the failure */
}
static void left_open(attn_json_writer *w) {
    attn_json_begin_array(w);
    attn_json_begin_object(w);
    attn_json_end_object(w);
}
static void key_in_array(attn_json_writer *w) {
    attn_json_begin_array(w);
    attn_json_key(w, "a");
    attn_json_end_array(w);
}
static void value_without_key(attn_json_writer *w) {
    attn_json_begin_object(w);
    attn_json_int(w, 1);
    attn_json_end_object(w);
}
static void key_without_value(attn_json_writer *w) {
    attn_json_begin_object(w);
    attn_json_key(w, "a");
    attn_json_end_object(w);
}
static void two_top_values(attn_json_writer *w) {
    attn_json_int(w, 1);
    attn_json_int(w, 2);
}
static void too_deep(attn_json_writer *w) {
    for (int i = 0; i <= ATTN_JSON_MAX_DEPTH; i++) attn_json_begin_array(w);
    for (int i = 0; i <= ATTN_JSON_MAX_DEPTH; i++) attn_json_end_array(w);
}
static void deepest(attn_json_writer *w) {
    for (int i = 0; i < ATTN_JSON_MAX_DEPTH; i++) attn_json_begin_array(w);
    for (int i = 0; i < ATTN_JSON_MAX_DEPTH; i++) attn_json_end_array(w);
}

START_TEST(test_misuse) {
    char msg[sizeof((attn_error){0}.msg)] = "";
    ck_assert_int_eq(outcome(end_unopened, msg, sizeof msg), ATTN_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(msg, "does not match"));
    ck_assert_int_eq(outcome(end_mismatched, msg, sizeof msg), ATTN_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(msg, "does not match"));
    ck_assert_int_eq(outcome(left_open, msg, sizeof msg), ATTN_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(msg, "left open"));
    ck_assert_int_eq(outcome(key_in_array, msg, sizeof msg), ATTN_ERR_ARG);
    ck_assert_int_eq(outcome(value_without_key, msg, sizeof msg), ATTN_ERR_ARG);
    ck_assert_int_eq(outcome(key_without_value, msg, sizeof msg), ATTN_ERR_ARG);
    ck_assert_int_eq(outcome(two_top_values, msg, sizeof msg), ATTN_ERR_ARG);
    ck_assert_int_eq(outcome(too_deep, msg, sizeof msg), ATTN_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(msg, "too deep"));
    ck_assert_int_eq(outcome(deepest, msg, sizeof msg), ATTN_OK);
}
END_TEST

START_TEST(test_empty_and_scalar) {
    attn_json_writer w;
    attn_error err;
    char *text = NULL;
    attn_json_writer_init(&w, NULL);
    ck_assert_int_eq(attn_json_writer_take(&w, &text, NULL, &err), ATTN_OK);
    ck_assert_str_eq(text, "");
    free(text);
    attn_json_writer_init(&w, NULL);
    attn_json_double(&w, NAN);
    ck_assert_int_eq(attn_json_writer_take(&w, &text, NULL, &err), ATTN_OK);
    ck_assert_str_eq(text, "nan"); /* as printf writes it: callers keep numbers finite */
    free(text);
}
END_TEST

/* Arrays of lines: "[\n", each element after the indent, ",\n" between them, "\n]" at the end
 * ("[\n]" empty); nested containers and the enclosing object keep ", ". */
START_TEST(test_array_lines) {
    attn_json_writer w;
    attn_error err;
    char *text = NULL;
    attn_json_writer_init(&w, NULL);
    attn_json_begin_object(&w);
    attn_json_field_int(&w, "n", 2);
    attn_json_key(&w, "words");
    attn_json_begin_array_lines(&w, "  ");
    attn_json_begin_object(&w);
    attn_json_field_int(&w, "id", 0);
    attn_json_field_string(&w, "word", "a\"b");
    attn_json_end_object(&w);
    attn_json_begin_array(&w);
    attn_json_int(&w, 1);
    attn_json_int(&w, 2);
    attn_json_end_array(&w);
    attn_json_end_array(&w);
    attn_json_field_bool(&w, "after", true);
    attn_json_begin_array_field(&w, "empty");
    attn_json_end_array(&w);
    attn_json_key(&w, "empty_lines");
    attn_json_begin_array_lines(&w, "    ");
    attn_json_end_array(&w);
    attn_json_end_object(&w);
    ck_assert_int_eq(attn_json_writer_take(&w, &text, NULL, &err), ATTN_OK);
    ck_assert_str_eq(text, "{\"n\": 2, \"words\": [\n"
                           "  {\"id\": 0, \"word\": \"a\\\"b\"},\n"
                           "  [1, 2]\n"
                           "], \"after\": true, \"empty\": [], \"empty_lines\": [\n]}");
    cJSON *j = cJSON_Parse(text);
    ck_assert_ptr_nonnull(j);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "words")), 2);
    cJSON_Delete(j);
    free(text);
    /* a misuse fails as in any array */
    attn_json_writer_init(&w, NULL);
    attn_json_begin_array_lines(&w, "  ");
    attn_json_key(&w, "a");
    ck_assert_int_eq(attn_json_writer_take(&w, &text, NULL, &err), ATTN_ERR_ARG);
}
END_TEST

/* attn_json_kernels writes the bytes attn_kernels_info_write_json does, escapes included. */
START_TEST(test_kernels) {
    attn_kernels_info k = {.mode = "pinned",
                           .openblas = "OpenBLAS 0.3.21",
                           .blas_core = "Has\"well",
                           .blas_threads = 1,
                           .cpu_path = "avx2"};
    attn_json_writer w;
    attn_error err;
    char *text = NULL;
    attn_json_writer_init(&w, NULL);
    attn_json_begin_array(&w);
    attn_json_kernels(&w, &k);
    attn_json_end_array(&w);
    ck_assert_int_eq(attn_json_writer_take(&w, &text, NULL, &err), ATTN_OK);
    ck_assert_str_eq(text, "[{\"mode\": \"pinned\", \"openblas\": \"OpenBLAS 0.3.21\", "
                           "\"blas_core\": \"Has\\\"well\", \"blas_threads\": 1, "
                           "\"cpu_path\": \"avx2\"}]");
    char *mem = NULL;
    size_t mem_len = 0;
    FILE *f = open_memstream(&mem, &mem_len);
    ck_assert_ptr_nonnull(f);
    attn_kernels_info_write_json(f, &k);
    fclose(f);
    ck_assert_int_eq(strlen(text), mem_len + 2);
    ck_assert(memcmp(text + 1, mem, mem_len) == 0);
    free(mem);
    free(text);
}
END_TEST

int main(void) {
    Suite *s = suite_create("io/json_writer");
    TCase *tc = tcase_create("json_writer");
    tcase_add_test(tc, test_document);
    tcase_add_test(tc, test_file_same_bytes);
    tcase_add_test(tc, test_misuse);
    tcase_add_test(tc, test_empty_and_scalar);
    tcase_add_test(tc, test_array_lines);
    tcase_add_test(tc, test_kernels);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}

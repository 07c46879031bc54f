/* test_report_json.c -- the summary `attn reproduce` writes (src/io/report_json.c): a saved
 * report read back by attn_report_peek gives its epochs, training size and OpenBLAS core; a
 * report without them gives -1, -1 and "unknown"; malformed JSON and a missing file are errors
 * naming the file. (Under the sanitizers the only other caller is `attn reproduce` comparing
 * with a reproduce.json, a release-stage run.) */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmp_dir[256];

static const char *in_tmp(const char *name) {
    static char bufs[4][512];
    static int next;
    char *buf = bufs[next++ % 4];
    snprintf(buf, 512, "%s/%s", tmp_dir, name);
    return buf;
}

START_TEST(test_save_then_peek) {
    const attn_report_run runs[2] = {
        {ATTN_ARCH_RNN, 1, 1234, {0.5, 0.25, 0.125, 1.0}, "rnn-seed1.json"},
        {ATTN_ARCH_TRANSFORMER, 1, 98765, {0.75, 0.5, 0.25, 0.0}, "transformer-seed1.json"}};
    const attn_report r = {.epochs = 7,
                           .train_size = 321,
                           .seeds = 1,
                           .eval_batch = 64,
                           .blas_core = "Haswell",
                           .set_names = {"plain", "distractor", "fill4", "fill8"},
                           .runs = runs,
                           .n_runs = 2,
                           .kernels = NULL};
    const char *path = in_tmp("reproduce.json");
    attn_error err;
    ck_assert_msg(attn_report_save_json(&r, path, &err) == ATTN_OK, "%s", err.msg);
    attn_report_header h;
    ck_assert_msg(attn_report_peek(path, &h, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_int_eq(h.epochs, 7);
    ck_assert_int_eq(h.train_size, 321);
    ck_assert_str_eq(h.blas_core, "Haswell");
    ck_assert(!h.has_kernels);
    unlink(path);
}
END_TEST

START_TEST(test_peek_absent_fields_and_errors) {
    const char *path = in_tmp("old.json");
    const char old[] = "{\"runs\": []}";
    tu_write_file(path, old, strlen(old));
    attn_report_header h;
    attn_error err;
    ck_assert_msg(attn_report_peek(path, &h, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_int_eq(h.epochs, -1);
    ck_assert_int_eq(h.train_size, -1);
    ck_assert_str_eq(h.blas_core, "unknown");
    ck_assert(!h.has_kernels);
    const char bad[] = "{\"epochs\": 3,";
    tu_write_file(path, bad, strlen(bad));
    ck_assert_int_ne(attn_report_peek(path, &h, &err), ATTN_OK);
    ck_assert_msg(strstr(err.msg, path) && strstr(err.msg, "at byte"), "%s", err.msg);
    unlink(path);
    ck_assert_int_ne(attn_report_peek(path, &h, &err), ATTN_OK);
    ck_assert_msg(strstr(err.msg, path), "%s", err.msg);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("report_json");
    TCase *tc = tcase_create("report_json");
    tcase_add_test(tc, test_save_then_peek);
    tcase_add_test(tc, test_peek_absent_fields_and_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return tu_run_suite_in_tmp(suite(), tmp_dir, sizeof tmp_dir, "report");
}

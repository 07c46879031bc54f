/* test_safetensors.c -- weights as safetensors (src/io/safetensors.c, safetensors_models.c):
 * bit-exact round trips of both families through every loader (recognised by content),
 * identical bytes when saved twice, and one test per strictness rule: each violation gives its
 * ATTN_ERR_* status and a message naming the file and the tensor at fault. */
#define _DEFAULT_SOURCE /* realpath */
#include "attn_seq2seq.h"
#include "test_util.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmp_dir[256];

static const char *tmp_file(const char *name) {
    static char bufs[4][512];
    static int next;
    char *buf = bufs[next++ % 4];
    snprintf(buf, 512, "%s/%d-%s", tmp_dir, (int)getpid(), name);
    return buf;
}

/* [u64 LE strlen(header)][header][data[data_len]] to tmp_file(name). */
static const char *write_st(const char *name, const char *header, const void *data,
                            size_t data_len) {
    const size_t n = strlen(header);
    unsigned char *buf = malloc(8 + n + data_len + 1);
    ck_assert_ptr_nonnull(buf);
    for (int k = 0; k < 8; k++) buf[k] = (unsigned char)((uint64_t)n >> (8 * k));
    memcpy(buf + 8, header, n);
    if (data_len) memcpy(buf + 8 + n, data, data_len);
    const char *path = tmp_file(name);
    tu_write_file(path, (const char *)buf, 8 + n + data_len);
    free(buf);
    return path;
}

/* Loading path as a classifier fails with status st and a message holding path and every
 * fragment (NULL-terminated). */
static void expect_error(const char *path, attn_status st, ...) {
    attn_model *m = NULL;
    attn_vocab *v = NULL;
    attn_error err;
    ck_assert_int_eq(attn_weights_load_json_vocab(path, &m, &v, &err), st);
    ck_assert_ptr_null(m);
    ck_assert_msg(strstr(err.msg, path), "message does not name the file: %s", err.msg);
    va_list ap;
    va_start(ap, st);
    for (const char *frag; (frag = va_arg(ap, const char *));)
        ck_assert_msg(strstr(err.msg, frag), "\"%s\" not in: %s", frag, err.msg);
    va_end(ap);
}

/* ---- round trips ---------------------------------------------------------------------------- */

START_TEST(test_classifier_round_trip) {
    static const attn_arch archs[] = {ATTN_ARCH_RNN, ATTN_ARCH_LSTM, ATTN_ARCH_GRU,
                                      ATTN_ARCH_TRANSFORMER};
    attn_model *m = tu_model_default(archs[_i], 5 + (uint64_t)_i);
    const char *words[] = {"[PAD]", "[CLS]", "qu\"ote", "bad\\", "ok"};
    attn_vocab *vocab = NULL;
    attn_error err;
    attn_model_config c = *attn_model_config_of(m);
    c.vocab_size = 5;
    attn_model_free(m);
    m = tu_model_new(&c, 7);
    ck_assert_msg(attn_vocab_create(words, 5, &vocab, &err) == ATTN_OK, "%s", err.msg);
    const char *path = tmp_file("c.safetensors"), *again = tmp_file("c2.safetensors");
    ck_assert_msg(attn_weights_save_safetensors(m, vocab, path, &err) == ATTN_OK, "%s", err.msg);
    ck_assert(attn_weights_is_safetensors(path));
    /* the JSON saver writes safetensors for a .safetensors path: the same bytes */
    ck_assert_int_eq(attn_weights_save_json_vocab(m, vocab, false, ATTN_WEIGHTS_TEXT, again, &err),
                     ATTN_OK);
    size_t n1 = 0, n2 = 0;
    char *b1 = tu_read_file(path, &n1), *b2 = tu_read_file(again, &n2);
    ck_assert_uint_eq(n1, n2);
    ck_assert(memcmp(b1, b2, n1) == 0);
    ck_assert_uint_eq((n1 - attn_model_n_params(m) * 4) % 8, 0); /* data 8-byte aligned */
    free(b1);
    free(b2);
    attn_model *back = NULL;
    attn_vocab *vback = NULL;
    ck_assert_msg(attn_weights_load_json_vocab(path, &back, &vback, &err) == ATTN_OK, "%s",
                  err.msg);
    ck_assert_uint_eq(attn_model_n_params(back), attn_model_n_params(m));
    ck_assert(memcmp(attn_model_params(back), attn_model_params(m),
                     attn_model_n_params(m) * sizeof(float)) == 0);
    ck_assert_ptr_nonnull(vback);
    for (int id = 0; id < 5; id++) ck_assert_str_eq(attn_vocab_token(vback, id), words[id]);
    attn_vocab_free(vback);
    attn_model_free(back);
    attn_vocab_free(vocab);
    attn_model_free(m);
}
END_TEST

START_TEST(test_load_into) {
    attn_model *m = tu_model_default(ATTN_ARCH_LSTM, 3),
               *other = tu_model_default(ATTN_ARCH_LSTM, 4);
    attn_error err;
    const char *path = tmp_file("into.safetensors");
    ck_assert_int_eq(attn_weights_save_safetensors(m, NULL, path, &err), ATTN_OK);
    ck_assert_msg(attn_weights_load_into(other, path, &err) == ATTN_OK, "%s", err.msg);
    ck_assert(memcmp(attn_model_params(other), attn_model_params(m),
                     attn_model_n_params(m) * sizeof(float)) == 0);
    attn_model *tr = tu_model_default(ATTN_ARCH_TRANSFORMER, 4);
    ck_assert_int_eq(attn_weights_load_into(tr, path, &err), ATTN_ERR_VALUE);
    attn_model_free(tr);
    attn_model_free(other);
    attn_model_free(m);
}
END_TEST

START_TEST(test_seq2seq_round_trip) {
    const attn_s2s_arch arch = _i == 0 ? ATTN_S2S_TRANSFORMER : ATTN_S2S_GRU;
    attn_seq2seq_config c = attn_seq2seq_config_default(arch);
    attn_seq2seq *m = NULL, *back = NULL;
    attn_error err;
    ck_assert_int_eq(attn_seq2seq_create(&c, 9, &m, &err), ATTN_OK);
    const char *path = tmp_file("s.safetensors"), *json = tmp_file("s.json"),
               *json2 = tmp_file("s2.json");
    ck_assert_msg(attn_seq2seq_save_json(m, false, false, path, &err) == ATTN_OK, "%s", err.msg);
    ck_assert(attn_weights_is_safetensors(path));
    ck_assert_msg(attn_seq2seq_load_json(path, &back, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_uint_eq(attn_seq2seq_n_params(back), attn_seq2seq_n_params(m));
    ck_assert(memcmp(attn_seq2seq_params(back), attn_seq2seq_params(m),
                     attn_seq2seq_n_params(m) * sizeof(float)) == 0);
    /* JSON -> safetensors -> JSON: the same JSON bytes */
    ck_assert_int_eq(attn_seq2seq_save_json(m, false, false, json, &err), ATTN_OK);
    ck_assert_int_eq(attn_seq2seq_save_json(back, false, false, json2, &err), ATTN_OK);
    size_t n1, n2;
    char *t1 = tu_read_file(json, &n1), *t2 = tu_read_file(json2, &n2);
    ck_assert_uint_eq(n1, n2);
    ck_assert(memcmp(t1, t2, n1) == 0);
    free(t1);
    free(t2);
    /* a seq2seq file given to a classifier's loader is named as such */
    expect_error(path, ATTN_ERR_VALUE, "seq2seq", "attn generate", NULL);
    attn_seq2seq_free(back);
    attn_seq2seq_free(m);
}
END_TEST

/* ---- layout (checked before the model) ---------------------------------------------------- */

#define T(name, dtype, shape, b, e)                                                                \
    "\"" name "\":{\"dtype\":\"" dtype "\",\"shape\":" shape ",\"data_offsets\":[" #b "," #e "]}"

static const float data[6] = {1, 2, 3, 4, 5, 6};

START_TEST(test_layout_ok_then_metadata_missing) {
    /* a sound layout without attn's metadata: refused for the missing config */
    const char *p = write_st(
        "ok.st", "{" T("a", "F32", "[2]", 0, 8) "," T("b", "F32", "[2]", 8, 16) "}", data, 16);
    expect_error(p, ATTN_ERR_PARSE, "__metadata__", "config", NULL);
}
END_TEST

START_TEST(test_gap) {
    const char *p = write_st(
        "gap.st", "{" T("a", "F32", "[2]", 0, 8) "," T("b", "F32", "[2]", 12, 20) "}", data, 20);
    expect_error(p, ATTN_ERR_PARSE, "tensor \"b\"", "gap of 4 bytes", NULL);
}
END_TEST

START_TEST(test_overlap) {
    const char *p = write_st(
        "ovl.st", "{" T("a", "F32", "[2]", 0, 8) "," T("b", "F32", "[2]", 4, 12) "}", data, 12);
    expect_error(p, ATTN_ERR_PARSE, "tensor \"b\"", "overlaps", NULL);
}
END_TEST

START_TEST(test_out_of_range_and_truncated) {
    const char *p = write_st(
        "oor.st", "{" T("a", "F32", "[2]", 0, 8) "," T("b", "F32", "[2]", 8, 16) "}", data, 12);
    expect_error(p, ATTN_ERR_PARSE, "tensor \"b\"", "past the end", NULL);
    /* a header length beyond the file */
    unsigned char head[12] = {200, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' '};
    const char *q = tmp_file("cut.st");
    tu_write_file(q, (const char *)head, sizeof head);
    ck_assert(attn_weights_is_safetensors(q));
    expect_error(q, ATTN_ERR_PARSE, "header length 200", "truncated", NULL);
}
END_TEST

START_TEST(test_trailing_bytes) {
    const char *p = write_st(
        "trail.st", "{" T("a", "F32", "[2]", 0, 8) "," T("b", "F32", "[1]", 8, 12) "}", data, 16);
    expect_error(p, ATTN_ERR_PARSE, "4 bytes after the last tensor", NULL);
}
END_TEST

START_TEST(test_size_not_shape) {
    const char *p = write_st(
        "size.st", "{" T("a", "F32", "[2]", 0, 8) "," T("b", "F32", "[3]", 8, 16) "}", data, 16);
    expect_error(p, ATTN_ERR_SHAPE, "tensor \"b\"", "hold 8 bytes", "needs 12", NULL);
}
END_TEST

START_TEST(test_dtype) {
    const char *p = write_st(
        "f16.st", "{" T("a", "F32", "[2]", 0, 8) "," T("b", "F16", "[4]", 8, 16) "}", data, 16);
    expect_error(p, ATTN_ERR_VALUE, "tensor \"b\"", "dtype \"F16\"", "F32 only", NULL);
}
END_TEST

START_TEST(test_duplicate_key) {
    const char *p = write_st(
        "dup.st", "{" T("a", "F32", "[2]", 0, 8) "," T("a", "F32", "[2]", 8, 16) "}", data, 16);
    expect_error(p, ATTN_ERR_PARSE, "duplicate key", "(\"a\")", NULL);
}
END_TEST

START_TEST(test_header_too_large) {
    unsigned char head[16] = {0, 0, 0, 0x10, 0, 0, 0, 0, '{', '}'}; /* 2^28 > 100 MB */
    const char *p = tmp_file("big.st");
    tu_write_file(p, (const char *)head, sizeof head);
    expect_error(p, ATTN_ERR_VALUE, "header length 268435456", "over the limit", NULL);
}
END_TEST

START_TEST(test_bad_header_json) {
    const char *p = write_st("bad.st", "{\"a\": {\"dtype\": \"F32\",}}", data, 0);
    expect_error(p, ATTN_ERR_PARSE, "malformed at byte", NULL);
}
END_TEST

/* ---- against the config ------------------------------------------------------------------- */

/* The header and data of a saved LSTM (its header as text, its data after it). */
typedef struct saved {
    char *header;
    unsigned char *data;
    size_t data_len;
    attn_model *m;
} saved;

static saved save_lstm(void) {
    saved s = {0};
    s.m = tu_model_default(ATTN_ARCH_LSTM, 2);
    attn_error err;
    const char *path = tmp_file("lstm.safetensors");
    ck_assert_int_eq(attn_weights_save_safetensors(s.m, NULL, path, &err), ATTN_OK);
    size_t n = 0;
    char *buf = tu_read_file(path, &n);
    uint64_t h = 0;
    for (int k = 7; k >= 0; k--) h = h << 8 | (unsigned char)buf[k];
    s.header = calloc(h + 1, 1);
    memcpy(s.header, buf + 8, h);
    s.data_len = n - 8 - h;
    s.data = malloc(s.data_len);
    memcpy(s.data, buf + 8 + h, s.data_len);
    free(buf);
    return s;
}

static void saved_free(saved *s) {
    free(s->header);
    free(s->data);
    attn_model_free(s->m);
}

START_TEST(test_wrong_shape) {
    saved s = save_lstm();
    int shape[4];
    const long i = attn_model_tensor_find(s.m, "embedding.weight");
    attn_model_tensor_shape(s.m, (size_t)i, shape);
    char from[64], to[64];
    snprintf(from, sizeof from, "\"shape\":[%d,%d]", shape[0], shape[1]);
    snprintf(to, sizeof to, "\"shape\":[%d,%d]", shape[1], shape[0]); /* same bytes, transposed */
    char *h = tu_replace_once(s.header, "header", from, to);
    const char *p = write_st("shape.st", h, s.data, s.data_len);
    expect_error(p, ATTN_ERR_SHAPE, "tensor \"embedding.weight\"", "the config needs", NULL);
    free(h);
    saved_free(&s);
}
END_TEST

START_TEST(test_missing_and_extra_tensor) {
    saved s = save_lstm();
    char *h = tu_replace_once(s.header, "header", "\"head.bias\"", "\"head.extra\"");
    const char *p = write_st("names.st", h, s.data, s.data_len);
    expect_error(p, ATTN_ERR_SHAPE, "unexpected tensor \"head.extra\"",
                 "missing tensor \"head.bias\"", NULL);
    free(h);
    saved_free(&s);
}
END_TEST

START_TEST(test_nan_value) {
    saved s = save_lstm();
    const float nan = __builtin_nanf("");
    memcpy(s.data + s.data_len - 4, &nan, 4);
    const char *p = write_st("nan.st", s.header, s.data, s.data_len);
    expect_error(p, ATTN_ERR_VALUE, "NaN", "not finite", NULL);
    saved_free(&s);
}
END_TEST

/* ---- values in place ---------------------------------------------------------------------- */

/* Whether address x lies in a mapping of the file path (/proc/self/maps). */
static bool mapped_from(const void *x, const char *path) {
    char real[4096];
    ck_assert_ptr_nonnull(realpath(path, real));
    FILE *f = fopen("/proc/self/maps", "r");
    ck_assert_ptr_nonnull(f);
    char line[8192];
    bool in = false;
    while (!in && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char file[4096] = "";
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %4095s", &lo, &hi, file) < 2) continue;
        in = (uintptr_t)x >= lo && (uintptr_t)x < hi && strcmp(file, real) == 0;
    }
    fclose(f);
    return in;
}

/* attn's own file: the model's parameters are the mapped file's values (no copy), and writing
 * them (as training does) leaves the file as it was; the same file with its header unpadded
 * (the values no longer 64-byte aligned) loads the same values by copy. */
START_TEST(test_values_in_place) {
    saved s = save_lstm();
    const char *path = tmp_file("lstm.safetensors");
    size_t n0 = 0;
    char *before = tu_read_file(path, &n0);
    attn_model *m = NULL;
    attn_error err;
    ck_assert_msg(attn_weights_load_json(path, &m, &err) == ATTN_OK, "%s", err.msg);
    float *p = attn_model_params(m);
    const size_t n = attn_model_n_params(m);
    ck_assert_uint_eq((uintptr_t)p % 64, 0);
    ck_assert_msg(mapped_from(p, path), "the parameters are not the file's mapped values");
    ck_assert(memcmp(p, attn_model_params(s.m), n * sizeof(float)) == 0);
    for (size_t i = 0; i < n; i++) p[i] += 1.0f; /* private pages: the file keeps its bytes */
    size_t n1 = 0;
    char *after = tu_read_file(path, &n1);
    ck_assert_uint_eq(n0, n1);
    ck_assert(memcmp(before, after, n0) == 0);
    attn_model_free(m);
    free(before);
    free(after);
    /* unpadded: data at 8 + the header's length, a multiple of 4 only by chance */
    size_t h = strlen(s.header);
    while (h > 0 && s.header[h - 1] == ' ') s.header[--h] = '\0';
    const char *copy = write_st("unpadded.st", s.header, s.data, s.data_len);
    ck_assert_msg(attn_weights_load_json(copy, &m, &err) == ATTN_OK, "%s", err.msg);
    ck_assert(!mapped_from(attn_model_params(m), copy));
    ck_assert(memcmp(attn_model_params(m), attn_model_params(s.m), n * sizeof(float)) == 0);
    attn_model_free(m);
    saved_free(&s);
}
END_TEST

START_TEST(test_config_over_limit) {
    saved s = save_lstm();
    setenv("ATTN_MAX_PARAMS", "1000", 1);
    const char *p = write_st("limit.st", s.header, s.data, s.data_len);
    expect_error(p, ATTN_ERR_VALUE, "ATTN_MAX_PARAMS", NULL);
    unsetenv("ATTN_MAX_PARAMS");
    saved_free(&s);
}
END_TEST

static Suite *safetensors_suite(void) {
    Suite *s = suite_create("safetensors");
    TCase *tc = tcase_create("round_trip");
    tcase_add_loop_test(tc, test_classifier_round_trip, 0, 4);
    tcase_add_test(tc, test_load_into);
    tcase_add_loop_test(tc, test_seq2seq_round_trip, 0, 2);
    suite_add_tcase(s, tc);
    tc = tcase_create("layout");
    tcase_add_test(tc, test_layout_ok_then_metadata_missing);
    tcase_add_test(tc, test_gap);
    tcase_add_test(tc, test_overlap);
    tcase_add_test(tc, test_out_of_range_and_truncated);
    tcase_add_test(tc, test_trailing_bytes);
    tcase_add_test(tc, test_size_not_shape);
    tcase_add_test(tc, test_dtype);
    tcase_add_test(tc, test_duplicate_key);
    tcase_add_test(tc, test_header_too_large);
    tcase_add_test(tc, test_bad_header_json);
    suite_add_tcase(s, tc);
    tc = tcase_create("config");
    tcase_add_test(tc, test_wrong_shape);
    tcase_add_test(tc, test_missing_and_extra_tensor);
    tcase_add_test(tc, test_values_in_place);
    tcase_add_test(tc, test_nan_value);
    tcase_add_test(tc, test_config_over_limit);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return tu_run_suite_in_tmp(safetensors_suite(), tmp_dir, sizeof tmp_dir, "io");
}

/* test_weights_vocab.c -- the optional "vocab" of attn-weights-v1: loaded into an attn_vocab by
 * attn_weights_load_json_vocab, checked strictly by every loader (each bad vocabulary a named
 * test: status, and a message naming the file and the index at fault), kept by
 * attn_weights_save_json_vocab (round trip of the tokens and, bit for bit, the tensors), and
 * refused by attn_weights_load_into unless it is the built-in one. */
#include "test_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmp_dir[] = "/tmp/attn-test-vocab-XXXXXX";

static const char *tmp_file(const char *name) {
    static char bufs[4][512];
    static int next;
    char *buf = bufs[next++ % 4];
    snprintf(buf, 512, "%s/%s", tmp_dir, name);
    return buf;
}

/* An RNN with vocab_size n (other sizes small), saved without a vocabulary: its text. */
static char *rnn_text(int n) {
    attn_model_config c = attn_model_config_default(ATTN_ARCH_RNN);
    c.vocab_size = n;
    c.embed_dim = 3;
    c.hidden_size = 4;
    attn_model *m = tu_model_new(&c, 5);
    const char *path = tmp_file("rnn.json");
    attn_error err;
    ck_assert_msg(attn_weights_save_json(m, false, path, &err) == ATTN_OK, "%s", err.msg);
    attn_model_free(m);
    char *text = tu_read_text(path);
    remove(path);
    return text;
}

/* text with `"vocab": <vocab_json>,` put before "tensors". */
static char *with_vocab(const char *text, const char *vocab_json) {
    size_t need = strlen(vocab_json) + 32;
    char *rep = malloc(need);
    ck_assert(rep);
    snprintf(rep, need, "\"vocab\": %s,\n\"tensors\"", vocab_json);
    char *out = tu_replace_once(text, "the saved file", "\"tensors\"", rep);
    free(rep);
    return out;
}

/* Loads text (as a file) with attn_weights_load_json_vocab. */
static attn_status load_text(const char *text, attn_model **m, attn_vocab **v, attn_error *err) {
    const char *path = tmp_file("w.json");
    tu_write_file(path, text, strlen(text));
    attn_status st = attn_weights_load_json_vocab(path, m, v, err);
    remove(path);
    return st;
}

/* A 5-token RNN file with vocab_json must fail to load with `want` and every fragment (the
 * list ends with NULL), through both loaders, leaving nothing behind. */
static void expect_vocab_error(int n, const char *vocab_json, attn_status want, ...) {
    char *base = rnn_text(n);
    char *text = with_vocab(base, vocab_json);
    free(base);
    const char *path = tmp_file("bad.json");
    tu_write_file(path, text, strlen(text));
    attn_model *m = (attn_model *)&m;
    attn_vocab *v = (attn_vocab *)&v;
    attn_error err = {.status = ATTN_OK};
    attn_status st = attn_weights_load_json_vocab(path, &m, &v, &err);
    ck_assert_msg(st == want, "status %s, want %s: %s", attn_status_str(st), attn_status_str(want),
                  err.msg);
    ck_assert_ptr_null(m);
    ck_assert_ptr_null(v);
    ck_assert_msg(strstr(err.msg, path), "message does not name the file: %s", err.msg);
    va_list ap;
    va_start(ap, want);
    for (const char *frag; (frag = va_arg(ap, const char *)) != NULL;)
        ck_assert_msg(strstr(err.msg, frag), "message lacks \"%s\": %s", frag, err.msg);
    va_end(ap);
    /* the plain loader checks the vocabulary too */
    m = (attn_model *)&m;
    ck_assert_int_eq(attn_weights_load_json(path, &m, &err), want);
    ck_assert_ptr_null(m);
    remove(path);
    free(text);
}

/* ---- loading -------------------------------------------------------------------------------- */

START_TEST(test_no_vocab_is_null) {
    char *text = rnn_text(91);
    attn_model *m = NULL;
    attn_vocab *v = (attn_vocab *)&v;
    attn_error err;
    ck_assert_msg(load_text(text, &m, &v, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_ptr_nonnull(m);
    ck_assert_ptr_null(v); /* the built-in vocabulary applies */
    attn_model_free(m);
    free(text);
}
END_TEST

START_TEST(test_own_vocab_loads) {
    char *base = rnn_text(5);
    /* id 1 of an RNN may be any token; escapes and UTF-8 come through */
    char *text =
        with_vocab(base, "[\"[PAD]\", \"[UNK]\", \"caf\\u00e9\", \"say\\\"\", \"N\\\\A\"]");
    attn_model *m = NULL;
    attn_vocab *v = NULL;
    attn_error err;
    ck_assert_msg(load_text(text, &m, &v, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_int_eq(attn_vocab_count(v), 5);
    ck_assert_str_eq(attn_vocab_token(v, 1), "[UNK]");
    ck_assert_str_eq(attn_vocab_token(v, 2), "caf\xc3\xa9");
    ck_assert_str_eq(attn_vocab_token(v, 3), "say\"");
    ck_assert_str_eq(attn_vocab_token(v, 4), "N\\A");
    ck_assert_int_eq(attn_vocab_lookup(v, "caf\xc3\xa9"), 2);
    attn_vocab_free(v);
    attn_model_free(m);
    free(text);
    free(base);
}
END_TEST

/* ---- one test per bad vocabulary ------------------------------------------------------------ */

START_TEST(test_vocab_not_an_array) {
    expect_vocab_error(5, "{\"0\": \"[PAD]\"}", ATTN_ERR_PARSE,
                       "\"vocab\" must be an array of strings", (const char *)NULL);
    expect_vocab_error(5, "\"[PAD] a b c d\"", ATTN_ERR_PARSE, "must be an array",
                       (const char *)NULL);
}
END_TEST

START_TEST(test_vocab_element_not_a_string) {
    expect_vocab_error(5, "[\"[PAD]\", \"a\", 7, \"c\", \"d\"]", ATTN_ERR_PARSE,
                       "\"vocab\"[2] is a number, expected a string", (const char *)NULL);
    expect_vocab_error(5, "[\"[PAD]\", \"a\", \"b\", null, \"d\"]", ATTN_ERR_PARSE,
                       "\"vocab\"[3] is null", (const char *)NULL);
    expect_vocab_error(5, "[\"[PAD]\", \"a\", \"b\", \"c\", [\"d\"]]", ATTN_ERR_PARSE,
                       "\"vocab\"[4] is an array or object", (const char *)NULL);
}
END_TEST

START_TEST(test_vocab_length_not_vocab_size) {
    expect_vocab_error(5, "[\"[PAD]\", \"a\", \"b\", \"c\"]", ATTN_ERR_SHAPE,
                       "vocab has 4 tokens but the config's vocab_size is 5", (const char *)NULL);
    expect_vocab_error(5, "[\"[PAD]\", \"a\", \"b\", \"c\", \"d\", \"e\"]", ATTN_ERR_SHAPE,
                       "6 tokens", "vocab_size is 5", (const char *)NULL);
}
END_TEST

START_TEST(test_vocab_too_short) {
    expect_vocab_error(5, "[]", ATTN_ERR_VALUE, "\"vocab\" has 0 tokens; expected 2..1048576",
                       (const char *)NULL);
    expect_vocab_error(5, "[\"[PAD]\"]", ATTN_ERR_VALUE, "has 1 tokens", (const char *)NULL);
}
END_TEST

START_TEST(test_vocab_pad_not_first) {
    expect_vocab_error(5, "[\"a\", \"[PAD]\", \"b\", \"c\", \"d\"]", ATTN_ERR_VALUE,
                       "vocab[0] is 'a', expected '[PAD]'", (const char *)NULL);
    expect_vocab_error(5, "[\"<pad>\", \"a\", \"b\", \"c\", \"d\"]", ATTN_ERR_VALUE,
                       "vocab[0] is '<pad>'", (const char *)NULL);
}
END_TEST

START_TEST(test_vocab_transformer_needs_cls) {
    attn_model_config c = attn_model_config_default(ATTN_ARCH_TRANSFORMER);
    c.vocab_size = 4;
    c.embed_dim = 4;
    c.n_heads = 2;
    c.ffn_dim = 4;
    c.n_layers = 1;
    c.max_len = 5;
    attn_model *m = tu_model_new(&c, 2);
    const char *path = tmp_file("tr.json");
    attn_error err;
    ck_assert_msg(attn_weights_save_json(m, false, path, &err) == ATTN_OK, "%s", err.msg);
    attn_model_free(m);
    char *base = tu_read_text(path);
    char *text = with_vocab(base, "[\"[PAD]\", \"[UNK]\", \"a\", \"b\"]");
    attn_vocab *v = NULL;
    m = NULL;
    ck_assert_int_eq(load_text(text, &m, &v, &err), ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "vocab[1] is '[UNK]', expected '[CLS]'") &&
                      strstr(err.msg, "transformer prepends id 1"),
                  "%s", err.msg);
    ck_assert_ptr_null(m);
    free(text);
    text = with_vocab(base, "[\"[PAD]\", \"[CLS]\", \"a\", \"b\"]");
    ck_assert_msg(load_text(text, &m, &v, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_int_eq(attn_vocab_count(v), 4);
    attn_vocab_free(v);
    attn_model_free(m);
    free(text);
    free(base);
    remove(path);
}
END_TEST

START_TEST(test_vocab_empty_token) {
    expect_vocab_error(5, "[\"[PAD]\", \"a\", \"\", \"c\", \"d\"]", ATTN_ERR_VALUE,
                       "vocab[2] is empty", (const char *)NULL);
}
END_TEST

START_TEST(test_vocab_white_space) {
    expect_vocab_error(5, "[\"[PAD]\", \"a\", \"b\", \"ice cream\", \"d\"]", ATTN_ERR_VALUE,
                       "vocab[3] 'ice cream' holds white space (U+0020)", (const char *)NULL);
    expect_vocab_error(5, "[\"[PAD]\", \"a\", \"b\", \"ice\\u00a0cream\", \"d\"]", ATTN_ERR_VALUE,
                       "vocab[3]", "U+00A0", (const char *)NULL);
}
END_TEST

START_TEST(test_vocab_control_bytes) {
    expect_vocab_error(5, "[\"[PAD]\", \"a\", \"b\", \"c\", \"\\u001b[2J\"]", ATTN_ERR_VALUE,
                       "vocab[4] holds the control character U+001B at byte 0", (const char *)NULL);
    expect_vocab_error(5, "[\"[PAD]\", \"a\\tb\", \"b\", \"c\", \"d\"]", ATTN_ERR_VALUE,
                       "vocab[1] holds the control character U+0009", (const char *)NULL);
    /* a NUL would cut the token short unseen: refused by the JSON scan itself */
    expect_vocab_error(5, "[\"[PAD]\", \"a\\u0000b\", \"b\", \"c\", \"d\"]", ATTN_ERR_PARSE,
                       "\\u0000 (a NUL character) in a string", (const char *)NULL);
}
END_TEST

/* A NUL in a "vocab" written where attn writes it, after the tensors: the message places it in
 * "vocab", not in the last tensor before it. */
START_TEST(test_vocab_nul_after_tensors_named_as_vocab) {
    char *base = rnn_text(5);
    char *end = strrchr(base, '}');
    ck_assert_ptr_nonnull(end);
    *end = '\0';
    const char *vocab = ",\n\"vocab\": [\"[PAD]\", \"a\\u0000b\", \"b\", \"c\", \"d\"]}\n";
    size_t need = strlen(base) + strlen(vocab) + 1;
    char *text = malloc(need);
    ck_assert_ptr_nonnull(text);
    snprintf(text, need, "%s%s", base, vocab);
    attn_model *m = NULL;
    attn_vocab *v = NULL;
    attn_error err;
    ck_assert_int_eq(load_text(text, &m, &v, &err), ATTN_ERR_PARSE);
    ck_assert_msg(strstr(err.msg, "NUL") && strstr(err.msg, "in \"vocab\"") &&
                      !strstr(err.msg, "in tensor"),
                  "%s", err.msg);
    /* the same byte in a tensor's place is still named by its tensor */
    char *in_tensor =
        tu_replace_once(base, "the saved file", "\"data\": [", "\"data\": [\"\\u0000\",");
    free(text);
    text = in_tensor;
    ck_assert_int_eq(load_text(text, &m, &v, &err), ATTN_ERR_PARSE);
    ck_assert_msg(strstr(err.msg, "in tensor \"") && !strstr(err.msg, "\"vocab\""), "%s", err.msg);
    free(text);
    free(base);
}
END_TEST

START_TEST(test_vocab_invalid_utf8) {
    /* the strict reader refuses the file before the vocabulary sees it (attn_vocab_create's own
     * check is tested in tests/data) */
    expect_vocab_error(5, "[\"[PAD]\", \"a\", \"caf\xe9\", \"c\", \"d\"]", ATTN_ERR_PARSE,
                       "invalid UTF-8 in a string", "line 3", (const char *)NULL);
}
END_TEST

START_TEST(test_vocab_duplicate) {
    expect_vocab_error(5, "[\"[PAD]\", \"a\", \"b\", \"c\", \"a\"]", ATTN_ERR_VALUE,
                       "vocab[4] 'a' duplicates vocab[1]", (const char *)NULL);
}
END_TEST

START_TEST(test_vocab_token_too_long) {
    char vocab[256];
    snprintf(vocab, sizeof vocab, "[\"[PAD]\", \"a\", \"b\", \"c\", \"%065d\"]", 0);
    expect_vocab_error(5, vocab, ATTN_ERR_VALUE, "vocab[4]", "65 bytes long, over the limit of 64",
                       (const char *)NULL);
}
END_TEST

START_TEST(test_vocab_from_buffer_checked) {
    char *base = rnn_text(5);
    char *text = with_vocab(base, "[\"[PAD]\", \"a\", \"a\", \"c\", \"d\"]");
    attn_model *m = NULL;
    attn_error err;
    ck_assert_int_eq(attn_weights_load_json_from_buffer(text, strlen(text), "buf", &m, &err),
                     ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "buf: vocab[2] 'a' duplicates vocab[1]"), "%s", err.msg);
    ck_assert_ptr_null(m);
    free(text);
    free(base);
}
END_TEST

/* ---- saving keeps the vocabulary ------------------------------------------------------------ */

START_TEST(test_save_round_trip) {
    char *base = rnn_text(6);
    char *text = with_vocab(base, "[\"[PAD]\", \"[UNK]\", \"\\u00fcber\", \"q\\\"uote\", "
                                  "\"back\\\\slash\", \"Upper\"]");
    attn_model *m = NULL;
    attn_vocab *v = NULL;
    attn_error err;
    ck_assert_msg(load_text(text, &m, &v, &err) == ATTN_OK, "%s", err.msg);
    for (int enc = 0; enc < 2; enc++) {
        const char *path = tmp_file("saved.json");
        ck_assert_msg(attn_weights_save_json_vocab(m, v, false, (attn_weights_encoding)enc, path,
                                                   &err) == ATTN_OK,
                      "%s", err.msg);
        attn_model *back = NULL;
        attn_vocab *vb = NULL;
        ck_assert_msg(attn_weights_load_json_vocab(path, &back, &vb, &err) == ATTN_OK, "%s",
                      err.msg);
        ck_assert_ptr_nonnull(vb);
        ck_assert_int_eq(attn_vocab_count(vb), attn_vocab_count(v));
        for (int id = 0; id < attn_vocab_count(v); id++)
            ck_assert_str_eq(attn_vocab_token(vb, id), attn_vocab_token(v, id));
        ck_assert(memcmp(attn_model_params(back), attn_model_params(m),
                         attn_model_n_params(m) * sizeof(float)) == 0);
        attn_vocab_free(vb);
        attn_model_free(back);
        remove(path);
    }
    attn_vocab_free(v);
    attn_model_free(m);
    free(text);
    free(base);
}
END_TEST

START_TEST(test_save_builtin_or_null_writes_none) {
    attn_model *m = tu_model_default(ATTN_ARCH_LSTM, 3);
    attn_error err;
    const char *a = tmp_file("plain.json"), *b = tmp_file("builtin.json");
    ck_assert_msg(attn_weights_save_json(m, false, a, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_msg(attn_weights_save_json_vocab(m, attn_vocab_builtin(), false, ATTN_WEIGHTS_TEXT, b,
                                               &err) == ATTN_OK,
                  "%s", err.msg);
    char *ta = tu_read_text(a), *tb = tu_read_text(b);
    ck_assert_str_eq(ta, tb); /* byte for byte what the files without a vocabulary hold */
    ck_assert_ptr_null(strstr(ta, "\"vocab\""));
    free(ta);
    free(tb);
    remove(a);
    remove(b);
    attn_model_free(m);
}
END_TEST

START_TEST(test_save_refuses_unfit_vocab) {
    attn_model *m = tu_model_default(ATTN_ARCH_RNN, 3); /* vocab_size 91 */
    const char *words[] = {"[PAD]", "[CLS]", "a"};
    attn_vocab *v = NULL;
    attn_error err;
    ck_assert_msg(attn_vocab_create(words, 3, &v, &err) == ATTN_OK, "%s", err.msg);
    const char *path = tmp_file("unfit.json");
    ck_assert_int_eq(attn_weights_save_json_vocab(m, v, false, ATTN_WEIGHTS_TEXT, path, &err),
                     ATTN_ERR_SHAPE);
    ck_assert_msg(strstr(err.msg, path) && strstr(err.msg, "not written") &&
                      strstr(err.msg, "3 tokens but the config's vocab_size is 91"),
                  "%s", err.msg);
    ck_assert_int_ne(access(path, F_OK), 0);
    attn_vocab_free(v);
    attn_model_free(m);
}
END_TEST

/* ---- attn_weights_load_into stays on the built-in vocabulary -------------------------------- */

START_TEST(test_load_into_refuses_own_vocab) {
    attn_model *m = tu_model_default(ATTN_ARCH_RNN, 3);
    const char *path = tmp_file("into.json");
    attn_error err;
    ck_assert_msg(attn_weights_save_json(m, false, path, &err) == ATTN_OK, "%s", err.msg);
    char *base = tu_read_text(path);
    /* the built-in words spelled out are accepted */
    char builtin[2048] = "[";
    for (int id = 0; id < ATTN_VOCAB_SIZE; id++) {
        strcat(builtin, id ? ", \"" : "\"");
        strcat(builtin, attn_vocab_word(id));
        strcat(builtin, "\"");
    }
    strcat(builtin, "]");
    char *text = with_vocab(base, builtin);
    tu_write_file(path, text, strlen(text));
    ck_assert_msg(attn_weights_load_into(m, path, &err) == ATTN_OK, "%s", err.msg);
    free(text);
    /* two words swapped: another vocabulary */
    char *swapped =
        tu_replace_once(builtin, "the list", "\"lecture\", \"course\"", "\"course\", \"lecture\"");
    text = with_vocab(base, swapped);
    tu_write_file(path, text, strlen(text));
    ck_assert_int_eq(attn_weights_load_into(m, path, &err), ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, path) && strstr(err.msg, "its own vocabulary of 91 tokens"), "%s",
                  err.msg);
    free(text);
    /* and a bad one is reported as such */
    text = with_vocab(base, "[\"[PAD]\"]");
    tu_write_file(path, text, strlen(text));
    ck_assert_int_eq(attn_weights_load_into(m, path, &err), ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "has 1 tokens"), "%s", err.msg);
    free(text);
    free(swapped);
    free(base);
    remove(path);
    attn_model_free(m);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("io/weights_vocab");
    TCase *tc = tcase_create("weights_vocab");
    tcase_add_test(tc, test_no_vocab_is_null);
    tcase_add_test(tc, test_own_vocab_loads);
    tcase_add_test(tc, test_vocab_not_an_array);
    tcase_add_test(tc, test_vocab_element_not_a_string);
    tcase_add_test(tc, test_vocab_length_not_vocab_size);
    tcase_add_test(tc, test_vocab_too_short);
    tcase_add_test(tc, test_vocab_pad_not_first);
    tcase_add_test(tc, test_vocab_transformer_needs_cls);
    tcase_add_test(tc, test_vocab_empty_token);
    tcase_add_test(tc, test_vocab_white_space);
    tcase_add_test(tc, test_vocab_control_bytes);
    tcase_add_test(tc, test_vocab_nul_after_tensors_named_as_vocab);
    tcase_add_test(tc, test_vocab_invalid_utf8);
    tcase_add_test(tc, test_vocab_duplicate);
    tcase_add_test(tc, test_vocab_token_too_long);
    tcase_add_test(tc, test_vocab_from_buffer_checked);
    tcase_add_test(tc, test_save_round_trip);
    tcase_add_test(tc, test_save_builtin_or_null_writes_none);
    tcase_add_test(tc, test_save_refuses_unfit_vocab);
    tcase_add_test(tc, test_load_into_refuses_own_vocab);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    if (!mkdtemp(tmp_dir)) return 1;
    int rc = tu_run_suite(suite());
    rmdir(tmp_dir);
    return rc;
}

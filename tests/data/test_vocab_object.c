/* test_vocab_object.c -- attn_vocab: creation from a word list (every rule of include/attn.h a
 * named test, status and message), hash lookup of every token, kinds, the closest word, the
 * built-in vocabulary as one instance, attn_tokenize_vocab and the TSV reader with a vocabulary
 * of its own. */
#include "data_internal.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A small vocabulary of the kinds: specials, words, ids-only tokens. */
static const char *const small[] = {"[PAD]", "[UNK]", "cat",   "dog",  "cats",
                                    "Paris", "don't", "<eos>", "bird", "caf\xc3\xa9"};
#define N_SMALL ((int)(sizeof small / sizeof small[0]))

static attn_vocab *create_ok(const char *const *words, int n) {
    attn_vocab *v = NULL;
    attn_error err;
    ck_assert_msg(attn_vocab_create(words, n, &v, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_ptr_nonnull(v);
    return v;
}

/* attn_vocab_create must fail with `want` and a message holding both fragments (frag2 may be
 * NULL), leaving *out NULL. */
static void expect_create_error(const char *const *words, int n, attn_status want,
                                const char *frag1, const char *frag2) {
    attn_vocab *v = (attn_vocab *)&v;
    attn_error err = {.status = ATTN_OK};
    attn_status st = attn_vocab_create(words, n, &v, &err);
    ck_assert_msg(st == want, "status %s, want %s: %s", attn_status_str(st), attn_status_str(want),
                  err.msg);
    ck_assert_ptr_null(v);
    ck_assert_msg(strstr(err.msg, frag1), "message lacks \"%s\": %s", frag1, err.msg);
    if (frag2) ck_assert_msg(strstr(err.msg, frag2), "message lacks \"%s\": %s", frag2, err.msg);
}

/* small[] with token `id` replaced by `token`. */
static void expect_bad_token(int id, const char *token, const char *frag1, const char *frag2) {
    const char *words[N_SMALL];
    memcpy(words, small, sizeof words);
    words[id] = token;
    expect_create_error(words, N_SMALL, ATTN_ERR_VALUE, frag1, frag2);
}

/* ---- creation and lookup -------------------------------------------------------------------- */

START_TEST(test_create_lookup_every_token) {
    attn_vocab *v = create_ok(small, N_SMALL);
    ck_assert_int_eq(attn_vocab_count(v), N_SMALL);
    ck_assert(!attn_vocab_is_builtin(v));
    for (int id = 0; id < N_SMALL; id++) {
        ck_assert_str_eq(attn_vocab_token(v, id), small[id]);
        ck_assert_ptr_ne(attn_vocab_token(v, id), small[id]); /* copied */
        ck_assert_int_eq(attn_vocab_lookup(v, small[id]), id);
    }
    const char *absent[] = {"", "ca", "Cat", "cat ", "dogs", "[pad]", "paris", "dont"};
    for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++)
        ck_assert_msg(attn_vocab_lookup(v, absent[i]) == -1, "'%s' found", absent[i]);
    ck_assert_int_eq(attn_vocab_lookup(v, NULL), -1);
    ck_assert_ptr_null(attn_vocab_token(v, -1));
    ck_assert_ptr_null(attn_vocab_token(v, N_SMALL));
    attn_vocab_free(v);
}
END_TEST

START_TEST(test_kinds) {
    attn_vocab *v = create_ok(small, N_SMALL);
    static const char *const want[N_SMALL] = {"special",  "special",  "word",    "word", "word",
                                              "ids-only", "ids-only", "special", "word", "word"};
    for (int id = 0; id < N_SMALL; id++) ck_assert_str_eq(attn_vocab_kind(v, id), want[id]);
    ck_assert_ptr_null(attn_vocab_kind(v, N_SMALL));
    attn_vocab_free(v);
}
END_TEST

/* Distances from a Levenshtein table worked out by hand (dgo: dog 2, cat 3; catss: cats 1,
 * cat 2; cow: cat 2, dog 2; pariss: cats 4, the others 5 or 6). */
START_TEST(test_closest_word) {
    attn_vocab *v = create_ok(small, N_SMALL);
    ck_assert_str_eq(attn_vocab_closest(v, "dgo"), "dog");
    ck_assert_str_eq(attn_vocab_closest(v, "catss"), "cats");
    ck_assert_str_eq(attn_vocab_closest(v, "cow"), "cat"); /* tie with dog: the lower id */
    ck_assert_str_eq(attn_vocab_closest(v, "birds"), "bird");
    /* only words are suggested: "paris" is 1 edit from "Paris", an ids-only token */
    ck_assert_str_eq(attn_vocab_closest(v, "paris"), "cats");
    ck_assert_str_eq(attn_vocab_closest(v, "unk"), "cat"); /* not the special "[UNK]" */
    attn_vocab_free(v);
    const char *none[] = {"[PAD]", "[CLS]", "Upper"};
    v = create_ok(none, 3);
    ck_assert_ptr_null(attn_vocab_closest(v, "upper"));
    attn_vocab_free(v);
}
END_TEST

START_TEST(test_closest_tie_lower_id) {
    const char *words[] = {"[PAD]", "[CLS]", "xy", "ab", "yx"};
    attn_vocab *v = create_ok(words, 5);
    ck_assert_str_eq(attn_vocab_closest(v, "aa"), "ab"); /* 1 edit: ab; 2: xy, yx */
    ck_assert_str_eq(attn_vocab_closest(v, "zz"), "xy"); /* 2 edits from all three */
    attn_vocab_free(v);
}
END_TEST

/* Levenshtein distance, the plain way (the reference for the test below). */
static int ref_distance(const char *a, const char *b) {
    size_t na = strlen(a), nb = strlen(b);
    int row[80], prev[80];
    for (size_t j = 0; j <= nb; j++) prev[j] = (int)j;
    for (size_t i = 1; i <= na; i++) {
        row[0] = (int)i;
        for (size_t j = 1; j <= nb; j++) {
            int sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            int del = prev[j] + 1, ins = row[j - 1] + 1;
            row[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, row, (nb + 1) * sizeof *row);
    }
    return prev[nb];
}

/* Whichever way the search goes (a small vocabulary scanned whole, a larger one through its
 * one-edit variants first), the answer is the brute-force one: the lowest id at the smallest
 * distance. 89 and 700 words, 2000 random near and far words each. */
START_TEST(test_closest_equals_brute_force) {
    static const int sizes[] = {89, 700};
    attn_rng r = attn_rng_seed(5);
    for (int k = 0; k < 2; k++) {
        const int n = sizes[k] + 1;
        char(*text)[24] = malloc((size_t)n * sizeof *text);
        const char **words = malloc((size_t)n * sizeof *words);
        ck_assert(text && words);
        words[0] = "[PAD]";
        for (int i = 1; i < n; i++) {
            int len = 2 + (int)(attn_rng_next(&r) % 7);
            for (int c = 0; c < len; c++) text[i][c] = (char)('a' + attn_rng_next(&r) % 6);
            snprintf(text[i] + len, sizeof text[i] - (size_t)len, "%d", i); /* unique */
            words[i] = text[i];
        }
        attn_vocab *v = create_ok(words, n);
        /* the sanitizer build (tu_small): 500 words */
        for (int t = 0; t < (tu_small() ? 500 : 2000); t++) {
            char q[24];
            const char *base = words[1 + attn_rng_next(&r) % (uint64_t)(n - 1)];
            snprintf(q, sizeof q, "%s", base);
            size_t len = strlen(q);
            q[attn_rng_next(&r) % len] = (char)('a' + attn_rng_next(&r) % 8); /* a typo */
            if (t % 3 == 0) q[attn_rng_next(&r) % len] = 'z';                 /* or two */
            int best = -1, best_d = 1 << 30;
            for (int i = 1; i < n; i++) {
                int d = ref_distance(q, words[i]);
                if (d < best_d) best_d = d, best = i;
            }
            const char *got = attn_vocab_closest(v, q);
            ck_assert_msg(got && strcmp(got, words[best]) == 0, "'%s': got %s, want %s (d %d)", q,
                          got ? got : "NULL", words[best], best_d);
        }
        attn_vocab_free(v);
        free(words);
        free(text);
    }
}
END_TEST

START_TEST(test_large_vocab) {
    /* the limit's order of magnitude: 100k tokens build, look up and suggest quickly */
    enum { N = 100000 };
    char(*text)[16] = malloc((size_t)N * sizeof *text);
    const char **words = malloc((size_t)N * sizeof *words);
    ck_assert(text && words);
    words[0] = "[PAD]";
    for (int i = 1; i < N; i++) {
        snprintf(text[i], sizeof text[i], "w%d", i);
        words[i] = text[i];
    }
    attn_vocab *v = create_ok(words, N);
    for (int i = 0; i < N; i += 997) ck_assert_int_eq(attn_vocab_lookup(v, words[i]), i);
    ck_assert_str_eq(attn_vocab_closest(v, "w99999x"), "w99999");
    attn_vocab_free(v);
    free(words);
    free(text);
}
END_TEST

START_TEST(test_free_null_and_builtin) {
    attn_vocab_free(NULL);
    attn_vocab_free(attn_vocab_builtin()); /* ignored: still usable */
    ck_assert_int_eq(attn_vocab_count(attn_vocab_builtin()), ATTN_VOCAB_SIZE);
}
END_TEST

/* ---- the built-in vocabulary is one instance ------------------------------------------------ */

START_TEST(test_builtin_instance) {
    const attn_vocab *b = attn_vocab_builtin();
    ck_assert_ptr_eq(b, attn_vocab_builtin());
    ck_assert(attn_vocab_is_builtin(b));
    ck_assert_int_eq(attn_vocab_count(b), attn_vocab_size());
    for (int id = 0; id < ATTN_VOCAB_SIZE; id++) {
        ck_assert_str_eq(attn_vocab_token(b, id), attn_vocab_word(id));
        ck_assert_int_eq(attn_vocab_lookup(b, attn_vocab_word(id)), id);
        ck_assert_str_eq(attn_vocab_kind(b, id), id < 2 ? "special" : "word");
    }
    /* a vocabulary created from the same words tokenizes like the built-in one */
    const char *words[ATTN_VOCAB_SIZE];
    for (int id = 0; id < ATTN_VOCAB_SIZE; id++) words[id] = attn_vocab_word(id);
    attn_vocab *copy = create_ok(words, ATTN_VOCAB_SIZE);
    const char *s = "Honestly, the lecture was not very helpful!";
    int a[16], c[16], na = 0, nc = 0;
    attn_error err;
    ck_assert_int_eq(attn_tokenize(s, a, 16, &na, &err), ATTN_OK);
    ck_assert_int_eq(attn_tokenize_vocab(copy, s, c, 16, &nc, &err), ATTN_OK);
    ck_assert_int_eq(na, nc);
    ck_assert(memcmp(a, c, (size_t)na * sizeof *a) == 0);
    attn_vocab_free(copy);
}
END_TEST

/* ---- each bad word list --------------------------------------------------------------------- */

START_TEST(test_bad_too_few_tokens) {
    const char *one[] = {"[PAD]"};
    expect_create_error(one, 1, ATTN_ERR_VALUE, "1 tokens", "2..1048576");
}
END_TEST

START_TEST(test_bad_too_many_tokens) {
    /* refused from the count alone, before any token is read */
    const char *two[] = {"[PAD]", "x"};
    expect_create_error(two, ATTN_VOCAB_MAX_TOKENS + 1, ATTN_ERR_VALUE, "1048577 tokens",
                        "2..1048576");
}
END_TEST

START_TEST(test_bad_no_pad_first) {
    const char *words[] = {"cat", "[PAD]", "dog"};
    expect_create_error(words, 3, ATTN_ERR_VALUE, "vocab[0] is 'cat'", "'[PAD]'");
}
END_TEST

START_TEST(test_bad_empty_token) {
    expect_bad_token(4, "", "vocab[4] is empty", NULL);
}
END_TEST

START_TEST(test_bad_space_in_token) {
    expect_bad_token(3, "hot dog", "vocab[3] 'hot dog' holds white space (U+0020) at byte 3",
                     "one word");
}
END_TEST

START_TEST(test_bad_unicode_space_in_token) {
    expect_bad_token(3,
                     "hot\xc2\xa0"
                     "dog",
                     "vocab[3]", "white space (U+00A0) at byte 3");
    expect_bad_token(3, "x\xe3\x80\x80y", "vocab[3]", "white space (U+3000)");
}
END_TEST

START_TEST(test_bad_control_bytes) {
    expect_bad_token(2, "ca\tt", "vocab[2] holds the control character U+0009 at byte 2", NULL);
    expect_bad_token(2, "cat\n", "U+000A at byte 3", NULL);
    expect_bad_token(2, "\x1b[31mred", "U+001B at byte 0", NULL);
    expect_bad_token(2, "del\x7f", "U+007F", NULL);
    expect_bad_token(2, "c1\xc2\x85", "U+0085", NULL); /* NEL, a C1 control */
}
END_TEST

START_TEST(test_bad_utf8) {
    expect_bad_token(5, "caf\xe9", "vocab[5] is not valid UTF-8 (byte 3)", NULL);
    expect_bad_token(5, "\xc0\xaf", "not valid UTF-8 (byte 0)", NULL);   /* overlong '/' */
    expect_bad_token(5, "\xed\xa0\x80", "not valid UTF-8", NULL);        /* a surrogate */
    expect_bad_token(5, "ab\xe2\x82", "not valid UTF-8 (byte 2)", NULL); /* cut short */
    expect_bad_token(5, "\xf4\x90\x80\x80", "not valid UTF-8", NULL);    /* > U+10FFFF */
}
END_TEST

START_TEST(test_bad_token_too_long) {
    char at_limit[ATTN_VOCAB_TOKEN_MAX + 1], over[ATTN_VOCAB_TOKEN_MAX + 2];
    memset(at_limit, 'a', ATTN_VOCAB_TOKEN_MAX);
    at_limit[ATTN_VOCAB_TOKEN_MAX] = '\0';
    memset(over, 'b', ATTN_VOCAB_TOKEN_MAX + 1);
    over[ATTN_VOCAB_TOKEN_MAX + 1] = '\0';
    const char *ok[] = {"[PAD]", at_limit};
    attn_vocab_free(create_ok(ok, 2));
    expect_bad_token(6, over, "vocab[6]", "65 bytes long, over the limit of 64");
}
END_TEST

START_TEST(test_bad_duplicate) {
    expect_bad_token(8, "dog", "vocab[8] 'dog' duplicates vocab[3]", NULL);
    expect_bad_token(9, "[PAD]", "vocab[9] '[PAD]' duplicates vocab[0]", NULL);
}
END_TEST

START_TEST(test_bad_null_arguments) {
    attn_vocab *v = NULL;
    attn_error err;
    ck_assert_int_eq(attn_vocab_create(NULL, 3, &v, &err), ATTN_ERR_ARG);
    ck_assert_int_eq(attn_vocab_create(small, N_SMALL, NULL, &err), ATTN_ERR_ARG);
    const char *words[] = {"[PAD]", NULL};
    ck_assert_int_eq(attn_vocab_create(words, 2, &v, &err), ATTN_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "vocab[1] is NULL"), "%s", err.msg);
}
END_TEST

/* ---- fitting a model config ----------------------------------------------------------------- */

START_TEST(test_check_config) {
    attn_vocab *v = create_ok(small, N_SMALL);
    attn_error err;
    attn_model_config rnn = attn_model_config_default(ATTN_ARCH_RNN);
    rnn.vocab_size = N_SMALL;
    ck_assert_msg(attn_vocab_check_config(v, &rnn, &err) == ATTN_OK, "%s", err.msg); /* [UNK] */
    rnn.vocab_size = N_SMALL + 1;
    ck_assert_int_eq(attn_vocab_check_config(v, &rnn, &err), ATTN_ERR_SHAPE);
    ck_assert_msg(strstr(err.msg, "10 tokens but the config's vocab_size is 11"), "%s", err.msg);
    attn_model_config tr = attn_model_config_default(ATTN_ARCH_TRANSFORMER);
    tr.vocab_size = N_SMALL;
    ck_assert_int_eq(attn_vocab_check_config(v, &tr, &err), ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "vocab[1] is '[UNK]', expected '[CLS]'"), "%s", err.msg);
    attn_vocab_free(v);
    ck_assert_int_eq(attn_vocab_check_config(attn_vocab_builtin(), &tr, &err), ATTN_ERR_SHAPE);
    tr.vocab_size = ATTN_VOCAB_SIZE;
    ck_assert_int_eq(attn_vocab_check_config(attn_vocab_builtin(), &tr, &err), ATTN_OK);
}
END_TEST

/* ---- the tokenizer with a vocabulary of its own --------------------------------------------- */

START_TEST(test_tokenize_own_vocab) {
    attn_vocab *v = create_ok(small, N_SMALL);
    int ids[8], n = 0;
    attn_error err;
    ck_assert_msg(attn_tokenize_vocab(v, "  CAT, \"dog\"! (bird) caf\xc3\xa9 ", ids, 8, &n, &err) ==
                      ATTN_OK,
                  "%s", err.msg);
    ck_assert_int_eq(n, 4);
    const int want[] = {2, 3, 8, 9};
    for (int i = 0; i < 4; i++) ck_assert_int_eq(ids[i], want[i]);
    /* a typo: named with its position and the closest word of this vocabulary */
    ck_assert_int_eq(attn_tokenize_vocab(v, "cat dgo", ids, 8, &n, &err), ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "unknown word 'dgo' at position 2") &&
                      strstr(err.msg, "closest vocabulary word: 'dog'") &&
                      strstr(err.msg, "own vocabulary of 10 tokens"),
                  "%s", err.msg);
    /* special and ids-only tokens never come out of text */
    const char *unreachable[] = {"<eos>", "[UNK]", "Paris", "don't", "[PAD]"};
    for (size_t i = 0; i < sizeof unreachable / sizeof unreachable[0]; i++) {
        ck_assert_int_eq(attn_tokenize_vocab(v, unreachable[i], ids, 8, &n, &err), ATTN_ERR_VALUE);
        ck_assert_msg(strstr(err.msg, "position 1"), "%s: %s", unreachable[i], err.msg);
    }
    attn_vocab_free(v);
    /* no word at all: the message says to give ids */
    const char *none[] = {"[PAD]", "[CLS]", "Upper"};
    v = create_ok(none, 3);
    ck_assert_int_eq(attn_tokenize_vocab(v, "upper", ids, 8, &n, &err), ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "no word the tokenizer can produce"), "%s", err.msg);
    attn_vocab_free(v);
    ck_assert_int_eq(attn_tokenize_vocab(NULL, "x", ids, 8, &n, &err), ATTN_ERR_ARG);
}
END_TEST

START_TEST(test_tsv_own_vocab) {
    char path[] = "/tmp/attn-vocab-tsv-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    const char *text = "1\tCat dog!\n0\tbird\n";
    ck_assert(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    attn_vocab *v = create_ok(small, N_SMALL);
    attn_dataset *d = NULL;
    attn_error err;
    ck_assert_msg(attn_dataset_read_tsv_vocab(path, v, &d, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_int_eq(d->n, 2);
    ck_assert_str_eq(d->texts[0], "cat dog"); /* rebuilt from this vocabulary's tokens */
    ck_assert_int_eq(d->ids[0], 2);
    ck_assert_int_eq(d->ids[1], 3);
    ck_assert_int_eq(d->ids[2], 8);
    attn_dataset_free(d);
    /* the built-in vocabulary does not know these words: line 1 */
    ck_assert_int_eq(attn_dataset_read_tsv(path, &d, &err), ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, ":1: unknown word 'cat'"), "%s", err.msg);
    attn_vocab_free(v);
    unlink(path);
}
END_TEST

/* A million words "ab" + 6 letters: an unknown word 2+ edits from all of them is not searched
 * for ever (it took ~93 ms per word); the message says no close word was found. A word one edit
 * from an early one is still suggested, and a word of the vocabulary is its own closest. */
START_TEST(test_closest_bounded_in_a_huge_vocab) {
    const int n = 1000000;
    char *text = malloc((size_t)n * 9);
    const char **words = malloc((size_t)n * sizeof *words);
    ck_assert(text && words);
    words[0] = "[PAD]";
    words[1] = "[UNK]";
    for (int i = 2; i < n; i++) {
        char *w = text + (size_t)i * 9;
        w[0] = 'a', w[1] = 'b';
        for (int k = 0, x = i; k < 6; k++, x /= 26) w[2 + k] = (char)('a' + x % 26);
        w[8] = '\0';
        words[i] = w;
    }
    attn_vocab *v = create_ok(words, n);
    ck_assert_str_eq(attn_vocab_closest(v, words[777777]), words[777777]);
    char near[9];
    memcpy(near, words[3], 9);
    near[7] = near[7] == 'z' ? 'y' : 'z';
    ck_assert_ptr_nonnull(attn_vocab_closest(v, near));
    ck_assert_ptr_null(attn_vocab_closest(v, "qqqqqqqq"));
    int ids[4], n_ids = 0;
    attn_error err;
    ck_assert_int_eq(attn_tokenize_vocab(v, "qqqqqqqq", ids, 4, &n_ids, &err), ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "no close word found") != NULL, "%s", err.msg);
    attn_vocab_free(v);
    free(words);
    free(text);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("vocab_object");
    TCase *tc = tcase_create("vocab_object");
    tcase_add_test(tc, test_create_lookup_every_token);
    tcase_add_test(tc, test_kinds);
    tcase_add_test(tc, test_closest_word);
    tcase_add_test(tc, test_closest_tie_lower_id);
    tcase_add_test(tc, test_closest_equals_brute_force);
    tcase_add_test(tc, test_large_vocab);
    tcase_add_test(tc, test_free_null_and_builtin);
    tcase_add_test(tc, test_builtin_instance);
    tcase_add_test(tc, test_bad_too_few_tokens);
    tcase_add_test(tc, test_bad_too_many_tokens);
    tcase_add_test(tc, test_bad_no_pad_first);
    tcase_add_test(tc, test_bad_empty_token);
    tcase_add_test(tc, test_bad_space_in_token);
    tcase_add_test(tc, test_bad_unicode_space_in_token);
    tcase_add_test(tc, test_bad_control_bytes);
    tcase_add_test(tc, test_bad_utf8);
    tcase_add_test(tc, test_bad_token_too_long);
    tcase_add_test(tc, test_bad_duplicate);
    tcase_add_test(tc, test_bad_null_arguments);
    tcase_add_test(tc, test_check_config);
    tcase_add_test(tc, test_tokenize_own_vocab);
    tcase_add_test(tc, test_tsv_own_vocab);
    tcase_add_test(tc, test_closest_bounded_in_a_huge_vocab);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return tu_run_suite(suite());
}

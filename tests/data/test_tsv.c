/* test_tsv.c -- src/data/tsv.c: the vocabulary of a TSV file (its order, --min-count, words
 * that cannot be tokens), the report of every bad line, unknown words as [UNK], and the
 * tokenizer's words without a vocabulary. */
#include "attn_own_data.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *write_tmp(const char *content) {
    static char path[64];
    snprintf(path, sizeof path, "/tmp/attn-test-tsv-XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fputs(content, f);
    fclose(f);
    return path;
}

START_TEST(test_vocab_order) {
    char long_word[80];
    memset(long_word, 'z', 70);
    long_word[70] = 0;
    char text[512];
    /* b 3, a 3, c 2, d 1, "<x>" and the 70-byte word never become tokens */
    snprintf(text, sizeof text, "1\tb a c\n0\tB, a! c <x>\n1\tb a d %s\n", long_word);
    char *path = write_tmp(text);
    attn_vocab *v = NULL;
    attn_tsv_report rep;
    attn_error err;
    int rare = -1;
    ck_assert_msg(attn_vocab_from_tsv(path, 1, &v, &rep, &rare, &err) == ATTN_OK, "%s", err.msg);
    const char *want[] = {"[PAD]", "[CLS]", "[UNK]", "a", "b", "c", "d"};
    ck_assert_int_eq(attn_vocab_count(v), 7);
    for (int i = 0; i < 7; i++) ck_assert_str_eq(attn_vocab_token(v, i), want[i]);
    ck_assert_int_eq(rare, 0);
    ck_assert_int_eq(rep.n_bad, 0);
    attn_vocab_free(v);
    ck_assert(attn_vocab_from_tsv(path, 3, &v, NULL, &rare, &err) == ATTN_OK);
    ck_assert_int_eq(attn_vocab_count(v), 5); /* a, b */
    ck_assert_int_eq(rare, 2);                /* c, d */
    /* reading the file with it: c, d, <x> and the long word are [UNK] */
    attn_dataset *d = NULL;
    ck_assert_msg(attn_dataset_read_tsv_report(path, v, &d, &rep, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_int_eq(rep.n_unk_words, 5);
    ck_assert_int_eq(rep.n_unk_lines, 3);
    ck_assert_int_eq(d->ids[2], 2); /* "c" of line 1 */
    ck_assert_str_eq(d->texts[1], "b a [UNK] [UNK]");
    attn_dataset_free(d);
    attn_vocab_free(v);
    ck_assert(attn_vocab_from_tsv(path, 0, &v, NULL, NULL, &err) == ATTN_ERR_ARG);
    unlink(path);
}
END_TEST

START_TEST(test_every_bad_line) {
    char text[4096] = "";
    for (int i = 1; i <= 30; i++) /* odd lines bad (15), even lines good */
        strcat(text, i % 2 ? "x\tthe lecture was good\n" : "1\tthe lecture was good\n");
    strcat(text, "1 no tab\n\n1\tthe\tlecture\n0\t!!\n1\tthe lecture was grate\n");
    char *path = write_tmp(text);
    attn_dataset *d = (attn_dataset *)0x1;
    attn_tsv_report rep;
    attn_error err;
    ck_assert_int_eq(attn_dataset_read_tsv_report(path, attn_vocab_builtin(), &d, &rep, &err),
                     ATTN_ERR_PARSE);
    ck_assert_ptr_null(d);
    ck_assert_int_eq(rep.n_bad, 19);
    ck_assert_int_eq(rep.n_listed, 19);
    ck_assert_int_eq(rep.listed[0].line, 1);
    ck_assert_int_eq(rep.listed[14].line, 29);
    ck_assert_int_eq(rep.listed[15].line, 31); /* missing tab */
    ck_assert_int_eq(rep.listed[16].line, 33); /* the blank line 32 is no line of data */
    ck_assert_msg(strstr(rep.listed[17].msg, "empty sentence"), "%s", rep.listed[17].msg);
    ck_assert_msg(strstr(rep.listed[18].msg, "unknown word 'grate'"), "%s", rep.listed[18].msg);
    ck_assert_msg(strstr(err.msg, ":1: bad label 'x'") && strstr(err.msg, "19 bad lines in all"),
                  "%s", err.msg);
    /* more than ATTN_TSV_LISTED: all counted, the first listed */
    char many[8192] = "";
    for (int i = 0; i < 45; i++) strcat(many, "2\tthe lecture\n");
    path = write_tmp(many);
    ck_assert_int_eq(attn_dataset_read_tsv_report(path, attn_vocab_builtin(), &d, &rep, &err),
                     ATTN_ERR_PARSE);
    ck_assert_int_eq(rep.n_bad, 45);
    ck_assert_int_eq(rep.n_listed, ATTN_TSV_LISTED);
    ck_assert_int_eq(rep.listed[ATTN_TSV_LISTED - 1].line, ATTN_TSV_LISTED);
    unlink(path);
}
END_TEST

START_TEST(test_tokenize_words_and_unk) {
    const char *s = "The \xe2\x80\x9c"
                    "soup\xe2\x80\x9d was NOT good!";
    char buf[64];
    const char *w[8];
    int n = 0;
    attn_error err;
    ck_assert(attn_tokenize_words(s, buf, sizeof buf, w, 8, &n, &err) == ATTN_OK);
    ck_assert_int_eq(n, 5);
    ck_assert_str_eq(w[1], "soup");
    ck_assert_str_eq(w[3], "not");
    ck_assert(attn_tokenize_words(s, buf, sizeof buf, w, 4, &n, &err) == ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "5 words"), "%s", err.msg);
    ck_assert(attn_tokenize_words("...", buf, sizeof buf, w, 8, &n, &err) == ATTN_ERR_VALUE);
    ck_assert(attn_tokenize_words(s, buf, 4, w, 8, &n, &err) == ATTN_ERR_ARG);
    /* unk_id < 0: attn_tokenize_vocab's error; >= 0: the id, counted */
    int ids[8], n_unk = -1;
    ck_assert(attn_tokenize_vocab_unk(attn_vocab_builtin(), s, -1, ids, 8, &n, &n_unk, &err) ==
              ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "unknown word 'soup'"), "%s", err.msg);
    ck_assert(attn_tokenize_vocab_unk(attn_vocab_builtin(), s, 4, ids, 8, &n, &n_unk, &err) ==
              ATTN_OK);
    ck_assert_int_eq(n_unk, 1);
    ck_assert_int_eq(ids[1], 4);
    ck_assert_int_eq(ids[3], attn_vocab_id("not"));
    ck_assert(attn_tokenize_vocab_unk(attn_vocab_builtin(), s, ATTN_VOCAB_SIZE, ids, 8, &n, NULL,
                                      &err) == ATTN_ERR_ARG);
}
END_TEST

/* attn_dataset_shuffle: a permutation (each sentence once, its label and ids with it), the same
 * for the same seed, another for another seed. */
static attn_dataset *read_words(const char *path, const attn_vocab *v) {
    attn_dataset *d = NULL;
    attn_error err;
    ck_assert_msg(attn_dataset_read_tsv_report(path, v, &d, NULL, &err) == ATTN_OK, "%s", err.msg);
    return d;
}

START_TEST(test_shuffle) {
    char text[4096] = "", line[64];
    for (int i = 0; i < 40; i++) {
        /* sentence i: "w" then i+1 letters 'a'..; label i % 3 == 0 */
        char word[48];
        memset(word, 'a' + i % 26, (size_t)(i % 5 + 1));
        word[i % 5 + 1] = 0;
        snprintf(line, sizeof line, "%d\tx%d %s\n", i % 3 == 0, i, word);
        strcat(text, line);
    }
    char *path = write_tmp(text);
    attn_vocab *v = NULL;
    attn_tsv_report rep;
    attn_error err;
    ck_assert(attn_vocab_from_tsv(path, 1, &v, &rep, NULL, &err) == ATTN_OK);
    attn_dataset *orig = read_words(path, v), *a = read_words(path, v), *b = read_words(path, v),
                 *c = read_words(path, v);
    ck_assert(attn_dataset_shuffle(a, 7, &err) == ATTN_OK);
    ck_assert(attn_dataset_shuffle(b, 7, &err) == ATTN_OK);
    ck_assert(attn_dataset_shuffle(c, 8, &err) == ATTN_OK);
    int moved = 0, differ = 0, seen[40] = {0};
    for (int i = 0; i < 40; i++) {
        int j = -1;
        for (int k = 0; k < 40; k++)
            if (strcmp(a->texts[i], orig->texts[k]) == 0) j = k;
        ck_assert_int_ge(j, 0);
        seen[j]++;
        moved += j != i;
        ck_assert_int_eq(a->labels[i], orig->labels[j]);
        ck_assert_int_eq(a->lengths[i], orig->lengths[j]);
        ck_assert(memcmp(a->ids + a->offsets[i], orig->ids + orig->offsets[j],
                         (size_t)orig->lengths[j] * sizeof(int)) == 0);
        ck_assert_str_eq(a->texts[i], b->texts[i]);
        differ += strcmp(a->texts[i], c->texts[i]) != 0;
    }
    for (int k = 0; k < 40; k++) ck_assert_int_eq(seen[k], 1);
    ck_assert_int_gt(moved, 20);
    ck_assert_int_gt(differ, 20);
    attn_dataset_free(orig), attn_dataset_free(a), attn_dataset_free(b), attn_dataset_free(c);
    attn_vocab_free(v);
    unlink(path);
}
END_TEST

int main(void) {
    Suite *s = suite_create("data/tsv");
    TCase *tc = tcase_create("tsv");
    tcase_add_test(tc, test_vocab_order);
    tcase_add_test(tc, test_every_bad_line);
    tcase_add_test(tc, test_tokenize_words_and_unk);
    tcase_add_test(tc, test_shuffle);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}

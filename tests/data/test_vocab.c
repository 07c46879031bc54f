/* test_vocab.c -- the vocabulary table: 89 distinct lower-case words, stable ids, categories,
 * filler phrases free of sentiment, and every word used by the 8,000-sentence training set. */
#include "data_internal.h"
#include "test_util.h"

#include <ctype.h>
#include <string.h>

START_TEST(test_sizes_and_specials) {
    ck_assert_int_eq(attn_vocab_size(), 91);
    ck_assert_int_eq(ATTN_N_WORDS, 89);
    ck_assert_str_eq(attn_vocab_word(0), "[PAD]");
    ck_assert_str_eq(attn_vocab_word(1), "[CLS]");
    ck_assert_str_eq(attn_vocab_category(0), "special");
    ck_assert_str_eq(attn_vocab_category(1), "special");
    ck_assert_ptr_null(attn_vocab_word(-1));
    ck_assert_ptr_null(attn_vocab_word(91));
    ck_assert_ptr_null(attn_vocab_category(91));
    ck_assert_int_eq(attn_vocab_id("nonsense"), -1);
    ck_assert_int_eq(attn_vocab_id(NULL), -1);
}
END_TEST

/* Literal expectations: changing the table order would silently break exported weights. */
START_TEST(test_stable_ids) {
    ck_assert_int_eq(attn_vocab_id("chaotic"), -1);
    ck_assert_int_eq(attn_vocab_id("cafeteria"), -1);
    static const struct {
        int id;
        const char *word, *cat;
    } want[] = {
        {2, "the", "determiner"},
        {3, "lecture", "subject"},
        {11, "was", "verb"},
        {15, "not", "negation"},
        {16, "never", "negation"},
        {17, "very", "intensifier"},
        {22, "helpful", "positive"},
        {24, "great", "positive"},
        {32, "boring", "negative"},
        {42, "although", "conjunction"},
        {47, "coffee", "distractor"},
        {55, "honestly", "filler"},
        {58, "in", "filler"},
        {59, "winter", "filler"},
        {90, "end", "filler"},
        /* the write-up's words, in the places of "chaotic" and "cafeteria" (same ids and roles,
         * so the generated id sequences, and every trained weight, are unchanged) */
        {40, "messy", "negative"},
        {49, "food", "distractor"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        ck_assert_msg(strcmp(attn_vocab_word(want[i].id), want[i].word) == 0,
                      "id %d is '%s', want '%s'", want[i].id, attn_vocab_word(want[i].id),
                      want[i].word);
        ck_assert_str_eq(attn_vocab_category(want[i].id), want[i].cat);
        ck_assert_int_eq(attn_vocab_id(want[i].word), want[i].id);
    }
}
END_TEST

START_TEST(test_words_distinct_lower_case) {
    int per_cat[ATTN_N_CATS] = {0};
    for (int id = 2; id < 91; id++) {
        const char *w = attn_vocab_word(id);
        ck_assert_msg(w && *w, "id %d has no word", id);
        for (const char *c = w; *c; c++)
            ck_assert_msg(islower((unsigned char)*c), "word '%s' (id %d) is not lower case", w, id);
        ck_assert_msg(attn_vocab_id(w) == id, "word '%s' (id %d) is not unique", w, id);
        ck_assert_str_ne(attn_vocab_category(id), "special");
        per_cat[attn_vocab_cat(id)]++;
    }
    /* the grammar needs every category */
    for (int c = ATTN_CAT_DETERMINER; c < ATTN_N_CATS; c++)
        ck_assert_msg(per_cat[c] > 0, "category %s is empty", attn_word_cat_name(c));
    ck_assert_int_eq(per_cat[ATTN_CAT_NEGATION], 2);
    ck_assert_int_eq(per_cat[ATTN_CAT_POSITIVE], per_cat[ATTN_CAT_NEGATIVE]);
}
END_TEST

START_TEST(test_fillers_carry_no_sentiment) {
    ck_assert_int_ge(attn_filler_count(), 8);
    ck_assert_ptr_null(attn_filler_phrase(attn_filler_count()));
    bool has_example[3] = {false, false, false};
    for (int i = 0; i < attn_filler_count(); i++) {
        const char *p = attn_filler_phrase(i);
        if (strcmp(p, "honestly") == 0) has_example[0] = true;
        if (strcmp(p, "in the winter semester") == 0) has_example[1] = true;
        if (strcmp(p, "according to my friends") == 0) has_example[2] = true;
        int ids[16], n = 0;
        attn_error err;
        ck_assert_msg(attn_tokenize(p, ids, 16, &n, &err) == ATTN_OK, "%s", err.msg);
        for (int j = 0; j < n; j++) {
            const char *c = attn_vocab_category(ids[j]);
            ck_assert_msg(strcmp(c, "positive") && strcmp(c, "negative") && strcmp(c, "negation"),
                          "filler '%s' contains %s word '%s'", p, c, attn_vocab_word(ids[j]));
        }
    }
    ck_assert(has_example[0] && has_example[1] && has_example[2]);
}
END_TEST

START_TEST(test_every_word_in_training_set) {
    attn_dataset *d = NULL;
    attn_error err;
    ck_assert_msg(attn_data_generate(ATTN_SET_TRAIN, 8000, 1, &d, &err) == ATTN_OK, "%s", err.msg);
    int count[91] = {0};
    size_t bad = 0; /* one assertion, not one per word: ~240k ck_asserts took seconds under ASan */
    for (size_t i = 0; i < d->offsets[d->n]; i++) {
        if (d->ids[i] >= 2 && d->ids[i] < 91)
            count[d->ids[i]]++;
        else
            bad++;
    }
    ck_assert_msg(bad == 0, "%zu ids outside the words 2..90", bad);
    for (int id = 2; id < 91; id++)
        ck_assert_msg(count[id] > 0, "word '%s' never occurs in the training set",
                      attn_vocab_word(id));
    attn_dataset_free(d);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("vocab");
    TCase *tc = tcase_create("vocab");
    tcase_add_test(tc, test_sizes_and_specials);
    tcase_add_test(tc, test_stable_ids);
    tcase_add_test(tc, test_words_distinct_lower_case);
    tcase_add_test(tc, test_fillers_carry_no_sentiment);
    tcase_add_test(tc, test_every_word_in_training_set);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return tu_run_suite(suite());
}

/* test_suggest.c -- suggestions for unknown words (src/data/suggest.c): the nearest word by
 * spelling and the class of words the grammar puts at the word's place. Each rule of
 * attn_data.h on a sentence made for it; then, on generated sentences, every word replaced by
 * an unknown one in turn: a placed word's own category must be among the place's, and every
 * word offered for it must give a sentence the grammar parser accepts. */
#include "data_internal.h"
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

/* The only suggestion for sentence (which has one unknown word). */
static attn_suggestion one(const char *sentence) {
    attn_suggestion s;
    int n = -1;
    ck_assert_int_eq(attn_vocab_suggest(attn_vocab_builtin(), sentence, &s, 1, &n, NULL), ATTN_OK);
    ck_assert_msg(n == 1, "'%s': %d unknown words", sentence, n);
    return s;
}

/* The groups' categories joined by '+': "positive+negative". */
static void cats_of(const attn_suggestion *s, char *buf, size_t n) {
    buf[0] = '\0';
    for (int g = 0; g < s->n_groups; g++)
        snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", g ? "+" : "", s->groups[g].category);
}

/* Each rule on a sentence made for it: the place's name, its categories, the rule text. */
START_TEST(test_rules) {
    static const struct {
        const char *sentence, *place, *cats, *rule;
        int position;
    } cases[] = {
        {"the pizza was good", "subject noun", "subject", "after 'the', before 'was'", 2},
        {"the lecture was good although the pizza was bad", "distractor noun", "distractor",
         "after 'the', before 'was'", 7},
        {"honestly the pizza seemed good", "subject noun", "subject", NULL, 3},
        {"in the pizza was good", "subject noun", "subject", NULL, 3}, /* a verb follows */
        {"the lecture seems good", "verb", "verb", NULL, 3},
        {"the lecture was good while the food tastes bad", "verb", "verb", NULL, 8},
        {"the lecture was stunning", "adjective", "positive+negative", "after 'was', at the end",
         4},
        {"the lecture was not stunning honestly", "adjective", "positive+negative", NULL, 5},
        {"the lecture was very stunning although the food was bad", "adjective",
         "positive+negative", NULL, 5},
        {"the lecture was super good", "negation or intensifier", "negation+intensifier", NULL, 4},
        {"the lecture was good but the food was super bad", "intensifier", "intensifier", NULL, 9},
        {"the lecture was not super good", "intensifier", "intensifier", NULL, 5},
        {"the lecture was hardly very good", "negation", "negation", NULL, 4},
        {"teh lecture was good", "determiner", "determiner", "at the start, before 'lecture'", 1},
        {"the lecture was good because the food was bad", "conjunction", "conjunction", NULL, 5},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const attn_suggestion s = one(cases[i].sentence);
        char cats[64];
        cats_of(&s, cats, sizeof cats);
        ck_assert_msg(s.position == cases[i].position && s.place &&
                          strcmp(s.place, cases[i].place) == 0 && strcmp(cats, cases[i].cats) == 0,
                      "'%s': position %d, place %s (%s)", cases[i].sentence, s.position,
                      s.place ? s.place : "none", cats);
        if (cases[i].rule) ck_assert_str_eq(s.rule, cases[i].rule);
        ck_assert_ptr_nonnull(s.nearest);
    }
}
END_TEST

/* Where the neighbours do not say, no class: the spelling's suggestion only. */
START_TEST(test_not_placed) {
    static const char *const cases[] = {
        "pizza",                                         /* alone */
        "in the pizza the lecture was good",             /* "in the" may be a filler phrase's */
        "the big lecture was good",                      /* before a noun, after "the" */
        "the lecture was good zzqx the winter semester", /* "the" opens no distractor */
        "the lecture was very super good", /* after an intensifier, before an adjective */
        "the lecture was good although the food was not yummy", /* placed: after a negation */
    };
    for (size_t i = 0; i < 5; i++) {
        const attn_suggestion s = one(cases[i]);
        ck_assert_msg(!s.place && s.n_groups == 0 && s.rule[0] == '\0', "'%s': placed as %s",
                      cases[i], s.place);
        ck_assert_ptr_nonnull(s.nearest);
    }
    /* "pizza": by spelling "is" (the complaint), by place nothing more */
    ck_assert_str_eq(one("pizza").nearest, "is");
    ck_assert_str_eq(one(cases[5]).place, "adjective");
}
END_TEST

/* A class's words: all of its category, nearest to the word by spelling first. */
START_TEST(test_group_words) {
    const attn_suggestion s = one("The PIZZA, was good!"); /* the tokenizer's words */
    ck_assert_int_eq(s.position, 2);
    ck_assert_str_eq(s.word, "pizza");
    ck_assert_str_eq(s.nearest, "is");
    ck_assert_int_eq(s.n_groups, 1);
    const attn_suggest_group *g = &s.groups[0];
    ck_assert_int_eq(g->n, 8); /* the 8 subject nouns */
    int seen = 0;
    for (int id = 0; id < attn_vocab_size(); id++)
        if (attn_vocab_cat(id) == ATTN_CAT_SUBJECT)
            for (int k = 0; k < g->n; k++) seen += strcmp(g->words[k], attn_vocab_word(id)) == 0;
    ck_assert_int_eq(seen, 8);
    for (int k = 1; k < g->n; k++)
        ck_assert_int_le(attn_edit_distance("pizza", 5, g->words[k - 1], strlen(g->words[k - 1])),
                         attn_edit_distance("pizza", 5, g->words[k], strlen(g->words[k])));
    /* "stunning": 10 positive and 10 negative adjectives, "engaging" and "boring" first (5
     * edits each; "inspiring" and "confusing" 6) */
    const attn_suggestion a = one("the lecture was stunning");
    ck_assert_int_eq(a.groups[0].n, 10);
    ck_assert_int_eq(a.groups[1].n, 10);
    ck_assert_str_eq(a.groups[0].words[0], "engaging");
    ck_assert_str_eq(a.groups[0].words[1], "inspiring");
    ck_assert_str_eq(a.groups[1].words[0], "boring");
    ck_assert_str_eq(a.groups[1].words[1], "confusing");
}
END_TEST

/* Every unknown word of a sentence, in order; max bounds what is filled, not the count. */
START_TEST(test_many_and_bounds) {
    attn_suggestion s[3];
    int n = 0;
    const char *text = "the pizza was stunning although the glacier was " /* a long word: */
                       "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    ck_assert_int_eq(attn_vocab_suggest(attn_vocab_builtin(), text, s, 3, &n, NULL), ATTN_OK);
    ck_assert_int_eq(n, 4);
    ck_assert_int_eq(s[0].position, 2);
    ck_assert_int_eq(s[1].position, 4);
    ck_assert_int_eq(s[2].position, 7);
    ck_assert_str_eq(s[2].place, "distractor noun");
    ck_assert_str_eq(s[1].place, "adjective"); /* before the conjunction */
    attn_suggestion last;
    ck_assert_int_eq(attn_vocab_suggest(attn_vocab_builtin(), text + 49, &last, 1, &n, NULL),
                     ATTN_OK);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(strlen(last.word), ATTN_VOCAB_TOKEN_MAX + 3); /* cut, "..." */
    ck_assert_ptr_null(last.place);
    ck_assert_int_eq(attn_vocab_suggest(attn_vocab_builtin(), text, NULL, 0, &n, NULL), ATTN_OK);
    ck_assert_int_eq(n, 4);
    ck_assert_int_eq(
        attn_vocab_suggest(attn_vocab_builtin(), "the lecture was good", s, 3, &n, NULL), ATTN_OK);
    ck_assert_int_eq(n, 0);
    attn_error err;
    ck_assert_int_eq(attn_vocab_suggest(NULL, text, s, 3, &n, &err), ATTN_ERR_ARG);
    ck_assert_int_eq(attn_vocab_suggest(attn_vocab_builtin(), text, NULL, 1, &n, &err),
                     ATTN_ERR_ARG);
    ck_assert_int_eq(attn_vocab_suggest(attn_vocab_builtin(), text, s, -1, &n, &err), ATTN_ERR_ARG);
}
END_TEST

/* A file's own vocabulary has no categories: spelling only. */
START_TEST(test_own_vocabulary) {
    static const char *const words[] = {"[PAD]", "[CLS]", "the", "dog", "was", "good"};
    attn_vocab *v = NULL;
    ck_assert_int_eq(attn_vocab_create(words, 6, &v, NULL), ATTN_OK);
    attn_suggestion s;
    int n = 0;
    ck_assert_int_eq(attn_vocab_suggest(v, "the dig was good", &s, 1, &n, NULL), ATTN_OK);
    ck_assert_int_eq(n, 1);
    ck_assert_str_eq(s.nearest, "dog");
    ck_assert_ptr_null(s.place);
    attn_vocab_free(v);
}
END_TEST

/* The tokenizer's error names the class in its message; its closest is the spelling's. */
START_TEST(test_tokenizer_message) {
    int ids[16], n = 0;
    attn_error err;
    ck_assert_int_eq(attn_tokenize("the pizza was good", ids, 16, &n, &err), ATTN_ERR_VALUE);
    ck_assert_int_eq(err.code, ATTN_CODE_UNKNOWN_WORD);
    ck_assert_int_eq(err.position, 2);
    ck_assert_str_eq(err.token, "pizza");
    ck_assert_str_eq(err.closest, "is");
    ck_assert_msg(strstr(err.msg, "closest vocabulary word: 'is'; by its place (after 'the', "
                                  "before 'was') a subject noun: ") &&
                      strstr(err.msg, ", ...; 'attn vocab' lists all 89 words)"),
                  "%s", err.msg);
    ck_assert_int_eq(attn_tokenize("the lecture was stunning", ids, 16, &n, &err), ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "an adjective: positive engaging, inspiring, fun, ") &&
                      strstr(err.msg, " or negative boring, "),
                  "%s", err.msg);
    ck_assert_int_eq(attn_tokenize("pizza", ids, 16, &n, &err), ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "(closest vocabulary word: 'is'; 'attn vocab' lists all"), "%s",
                  err.msg);
}
END_TEST

/* Generated sentences, each word replaced by an unknown one in turn: the place recovers the
 * word's own category, every word offered parses, and every clause word (not a filler and not
 * a conjunction, which a filler phrase may precede) is placed. */
START_TEST(test_generated_sentences) {
    static const attn_set sets[] = {ATTN_SET_DISTRACTOR, ATTN_SET_FILL4, ATTN_SET_PLAIN};
    int placed = 0, offered = 0;
    for (size_t si = 0; si < sizeof sets / sizeof sets[0]; si++) {
        attn_dataset *d = NULL;
        ck_assert_int_eq(attn_data_generate(sets[si], 60, 7, &d, NULL), ATTN_OK);
        for (int i = 0; i < d->n; i++) {
            const int *ids = d->ids + d->offsets[i];
            const int len = d->lengths[i];
            for (int at = 0; at < len; at++) {
                char text[1024] = "", sub[1024];
                for (int k = 0; k < len; k++)
                    snprintf(text + strlen(text), sizeof text - strlen(text), "%s%s", k ? " " : "",
                             k == at ? "zzqx" : attn_vocab_word(ids[k]));
                const attn_suggestion s = one(text);
                ck_assert_int_eq(s.position, at + 1);
                const attn_word_cat c = attn_vocab_cat(ids[at]);
                if (!s.place) {
                    ck_assert_msg(c == ATTN_CAT_FILLER || c == ATTN_CAT_CONJUNCTION ||
                                      c == ATTN_CAT_DETERMINER,
                                  "'%s': the %s not placed", text, attn_word_cat_name(c));
                    continue;
                }
                placed++;
                bool own = false;
                for (int g = 0; g < s.n_groups; g++) {
                    own = own || strcmp(s.groups[g].category, attn_word_cat_name(c)) == 0;
                    for (int w = 0; w < s.groups[g].n; w++) {
                        sub[0] = '\0';
                        for (int k = 0; k < len; k++)
                            snprintf(sub + strlen(sub), sizeof sub - strlen(sub), "%s%s",
                                     k ? " " : "",
                                     k == at ? s.groups[g].words[w] : attn_vocab_word(ids[k]));
                        attn_parse p;
                        attn_error err;
                        ck_assert_msg(attn_grammar_parse_text(sub, &p, &err) == ATTN_OK,
                                      "'%s' offered for '%s' (%s): %s", s.groups[g].words[w], text,
                                      s.place, err.msg);
                        offered++;
                    }
                }
                ck_assert_msg(own, "'%s': %s placed as %s", text, attn_word_cat_name(c), s.place);
            }
        }
        attn_dataset_free(d);
    }
    ck_assert_int_gt(placed, 500);
    ck_assert_int_gt(offered, 3000);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("suggest");
    TCase *tc = tcase_create("suggest");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_rules);
    tcase_add_test(tc, test_not_placed);
    tcase_add_test(tc, test_group_words);
    tcase_add_test(tc, test_many_and_bounds);
    tcase_add_test(tc, test_own_vocabulary);
    tcase_add_test(tc, test_tokenizer_message);
    tcase_add_test(tc, test_generated_sentences);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return tu_run_suite(suite());
}

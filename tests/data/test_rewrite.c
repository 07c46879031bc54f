/* test_rewrite.c -- the rewrite task: sources equal the generator's sentences, targets equal an
 * independent reading of the text (word lists written here), alignments point at the words
 * they copy, the target vocabulary round-trips, and sentences outside the grammar are refused. */
#include "attn_seq2seq.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const SUBJ[] = {"lecture", "course", "teacher",  "professor",
                                   "seminar", "exam",   "tutorial", "textbook"};
static const char *const POSW[] = {"helpful",     "good",   "great",    "excellent", "clear",
                                   "interesting", "useful", "engaging", "inspiring", "fun"};
static const char *const NEGW[] = {"boring",   "confusing", "useless", "bad",   "awful",
                                   "terrible", "dull",      "poor",    "messy", "pointless"};

static bool in(const char *w, const char *const *list, int n) {
    for (int i = 0; i < n; i++)
        if (strcmp(w, list[i]) == 0) return true;
    return false;
}

/* The verdict read off the text with plain string lists: "<polarity> <subject> [not|never]
 * <adjective>" and the word positions of subject/negation/adjective. */
static void verdict_of(const char *text, char *out, size_t size, int pos[3]) {
    char buf[2048], *words[256];
    int n = 0;
    snprintf(buf, sizeof buf, "%s", text);
    for (char *t = strtok(buf, " "); t && n < 256; t = strtok(NULL, " ")) words[n++] = t;
    int subj = -1, neg = -1, adj = -1;
    for (int i = 0; i < n && adj < 0; i++) {
        if (subj < 0 && in(words[i], SUBJ, 8))
            subj = i;
        else if (subj >= 0 && (!strcmp(words[i], "not") || !strcmp(words[i], "never")))
            neg = i;
        else if (subj >= 0 && (in(words[i], POSW, 10) || in(words[i], NEGW, 10)))
            adj = i;
    }
    ck_assert_msg(subj >= 0 && adj >= 0, "no core clause in '%s'", text);
    const bool positive = in(words[adj], POSW, 10) != (neg >= 0);
    snprintf(out, size, "%s %s%s%s %s", positive ? "positive" : "negative", words[subj],
             neg >= 0 ? " " : "", neg >= 0 ? words[neg] : "", words[adj]);
    pos[0] = subj;
    pos[1] = neg;
    pos[2] = adj;
}

static const attn_set SETS[] = {ATTN_SET_TRAIN,      ATTN_SET_HOLDOUT, ATTN_SET_PLAIN,
                                ATTN_SET_DISTRACTOR, ATTN_SET_FILL4,   ATTN_SET_FILL8};

START_TEST(test_pairs_match_generator_and_reading) {
    const attn_set set = SETS[_i];
    attn_error err;
    attn_pairs *p = NULL;
    attn_dataset *d = NULL;
    ck_assert_int_eq(attn_pairs_generate(ATTN_TASK_REWRITE, set, 400, 5, &p, &err), ATTN_OK);
    ck_assert_int_eq(attn_data_generate(set, 400, 5, &d, &err), ATTN_OK);
    ck_assert_int_eq(p->src->n, 400);
    int negated = 0;
    for (int i = 0; i < d->n; i++) {
        ck_assert_str_eq(p->src->texts[i], d->texts[i]); /* the sources, untouched */
        char want[256];
        int pos[3];
        verdict_of(d->texts[i], want, sizeof want, pos);
        ck_assert_str_eq(p->tgt_texts[i], want);
        const int L = p->tgt_lengths[i];
        ck_assert_int_eq(L, pos[1] >= 0 ? 4 : 3);
        negated += L == 4;
        const int *tgt = p->tgt_ids + p->tgt_offsets[i], *al = p->align + p->tgt_offsets[i];
        const int *src = d->ids + d->offsets[i];
        /* polarity is aligned with the adjective; every other word with the word it copies */
        ck_assert_int_eq(al[0], pos[2]);
        ck_assert_int_eq(tgt[0], d->labels[i] ? ATTN_TGT_POSITIVE : ATTN_TGT_NEGATIVE);
        for (int j = 1; j < L; j++) ck_assert_int_eq(tgt[j], src[al[j]]);
        ck_assert_int_eq(al[1], pos[0]);
        ck_assert_int_eq(al[L - 1], pos[2]);
    }
    ck_assert_int_gt(negated, 400 / 4); /* both forms occur */
    ck_assert_int_lt(negated, 3 * 400 / 4);
    attn_pairs_free(p);
    attn_dataset_free(d);
}
END_TEST

START_TEST(test_target_vocabulary) {
    ck_assert_int_eq(ATTN_TGT_VOCAB_SIZE, attn_vocab_size() + 4);
    for (int id = 0; id < ATTN_TGT_VOCAB_SIZE; id++) {
        const char *t = attn_tgt_vocab_token(id);
        ck_assert_ptr_nonnull(t);
        ck_assert_int_eq(attn_tgt_vocab_id(t), id);
        if (id < attn_vocab_size()) ck_assert_str_eq(t, attn_vocab_word(id));
    }
    ck_assert_str_eq(attn_tgt_vocab_token(ATTN_TGT_BOS), "[BOS]");
    ck_assert_str_eq(attn_tgt_vocab_token(ATTN_TGT_EOS), "[EOS]");
    ck_assert_ptr_null(attn_tgt_vocab_token(ATTN_TGT_VOCAB_SIZE));
    ck_assert_ptr_null(attn_tgt_vocab_token(-1));
    ck_assert_int_eq(attn_tgt_vocab_id("nonsense"), -1);
}
END_TEST

START_TEST(test_refuses_sentences_outside_the_grammar) {
    attn_error err;
    int ids[16], n, tgt[ATTN_REWRITE_MAX_TGT], al[ATTN_REWRITE_MAX_TGT], nt;
    ck_assert_int_eq(attn_tokenize("the coffee was great", ids, 16, &n, &err), ATTN_OK);
    ck_assert_int_eq(attn_rewrite_target(ids, n, 1, tgt, al, &nt, &err), ATTN_ERR_VALUE);
    ck_assert_ptr_nonnull(strstr(err.msg, "subject"));
    ck_assert_int_eq(attn_tokenize("the exam was not good", ids, 16, &n, &err), ATTN_OK);
    ck_assert_int_eq(attn_rewrite_target(ids, n, 1, tgt, al, &nt, &err), ATTN_ERR_VALUE);
    ck_assert_ptr_nonnull(strstr(err.msg, "label"));
    ck_assert_int_eq(attn_rewrite_target(ids, n, 0, tgt, al, &nt, &err), ATTN_OK);
    ck_assert_int_eq(nt, 4);
    attn_task t;
    ck_assert_int_eq(attn_task_from_name("summarise", &t, &err), ATTN_ERR_ARG);
    ck_assert_int_eq(attn_task_from_name("compose", &t, &err), ATTN_OK);
    ck_assert_int_eq(t, ATTN_TASK_COMPOSE);
    ck_assert_int_eq(attn_task_from_name("rewrite", &t, &err), ATTN_OK);
}
END_TEST

int main(void) {
    Suite *s = suite_create("rewrite");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, test_pairs_match_generator_and_reading, 0,
                        (int)(sizeof SETS / sizeof SETS[0]));
    tcase_add_test(tc, test_target_vocabulary);
    tcase_add_test(tc, test_refuses_sentences_outside_the_grammar);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

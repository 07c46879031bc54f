/* test_compose.c -- the compose task (src/data/compose.c): targets are the generator's sentences
 * byte for byte, sources their label and core subject (read here with plain word lists, not the
 * parser), alignments point at the subject and the words that decide the polarity; the source
 * reader and the judge accept and refuse what they should. */
#include "attn_seq2seq.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const attn_set SETS[] = {ATTN_SET_TRAIN,      ATTN_SET_HOLDOUT, ATTN_SET_PLAIN,
                                ATTN_SET_DISTRACTOR, ATTN_SET_FILL4,   ATTN_SET_FILL8};

static bool is_cat(int id, const char *cat) {
    return strcmp(attn_vocab_category(id), cat) == 0;
}

START_TEST(test_pairs_are_the_generator_sentences) {
    const attn_set set = SETS[_i];
    attn_error err;
    attn_pairs *p = NULL;
    attn_dataset *d = NULL;
    ck_assert_int_eq(attn_pairs_generate(ATTN_TASK_COMPOSE, set, 300, 9, &p, &err), ATTN_OK);
    ck_assert_int_eq(attn_data_generate(set, 300, 9, &d, &err), ATTN_OK);
    ck_assert_int_eq(p->task, ATTN_TASK_COMPOSE);
    ck_assert_int_eq(p->src->n, d->n);
    for (int i = 0; i < d->n; i++) {
        const int *s = d->ids + d->offsets[i], *t = p->tgt_ids + p->tgt_offsets[i];
        const int n = d->lengths[i];
        ck_assert_int_eq(p->tgt_lengths[i], n);
        ck_assert_mem_eq(t, s, (size_t)n * sizeof *t);
        ck_assert_str_eq(p->tgt_texts[i], d->texts[i]);
        int subj = 0;
        while (!is_cat(s[subj], "subject")) subj++;
        const int *src = p->src->ids + p->src->offsets[i];
        ck_assert_int_eq(p->src->lengths[i], ATTN_COMPOSE_SRC);
        ck_assert_int_eq(src[0], d->labels[i] ? ATTN_TGT_POSITIVE : ATTN_TGT_NEGATIVE);
        ck_assert_int_eq(src[1], s[subj]);
        ck_assert_int_eq(p->src->labels[i], d->labels[i]);
        char want[64];
        snprintf(want, sizeof want, "%s %s", d->labels[i] ? "positive" : "negative",
                 attn_vocab_word(s[subj]));
        ck_assert_str_eq(p->src->texts[i], want);
        /* alignment: the subject -> 1; the first adjective and a negation before it -> 0 */
        const int *al = p->align + p->tgt_offsets[i];
        bool adj_seen = false;
        for (int j = 0; j < n; j++) {
            const bool adj = !adj_seen && (is_cat(s[j], "positive") || is_cat(s[j], "negative"));
            const bool neg = !adj_seen && is_cat(s[j], "negation");
            adj_seen = adj_seen || adj;
            ck_assert_int_eq(al[j], j == subj ? 1 : adj || neg ? 0 : -1);
        }
        /* the judge reads every target as grammatical with its source's polarity and subject */
        attn_compose_verdict v;
        ck_assert_int_eq(attn_compose_judge(src, t, n, &v, &err), ATTN_OK);
        ck_assert(v.grammatical && v.polarity_ok && v.subject_ok);
        ck_assert_int_eq(v.label, d->labels[i]);
        const int flipped[2] = {src[0] == ATTN_TGT_POSITIVE ? ATTN_TGT_NEGATIVE : ATTN_TGT_POSITIVE,
                                src[1] == 3 ? 4 : 3};
        ck_assert_int_eq(attn_compose_judge(flipped, t, n, &v, &err), ATTN_OK);
        ck_assert(v.grammatical && !v.polarity_ok && !v.subject_ok);
    }
    attn_pairs_free(p);
    attn_dataset_free(d);
}
END_TEST

START_TEST(test_source_reader) {
    attn_error err;
    int ids[ATTN_COMPOSE_SRC];
    ck_assert_int_eq(attn_compose_source("positive exam", ids, &err), ATTN_OK);
    ck_assert_int_eq(ids[0], ATTN_TGT_POSITIVE);
    ck_assert_int_eq(ids[1], attn_vocab_id("exam"));
    ck_assert_int_eq(attn_compose_source("  Negative\tLECTURE \n", ids, &err), ATTN_OK);
    ck_assert_int_eq(ids[0], ATTN_TGT_NEGATIVE);
    ck_assert_int_eq(ids[1], attn_vocab_id("lecture"));
    struct {
        const char *text, *msg;
    } bad[] = {
        {"positive", "1 words"},
        {"", "0 words"},
        {"positive exam now", "3 words"},
        {"good exam", "'good' is not a polarity"},
        {"positive coffee", "'coffee' is not a subject noun"},
        {"positive pizza", "'pizza' is not a subject noun"},
        {"exam positive", "'exam' is not a polarity"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(attn_compose_source(bad[i].text, ids, &err), ATTN_ERR_VALUE);
        ck_assert_msg(strstr(err.msg, bad[i].msg), "'%s': %s", bad[i].text, err.msg);
        ck_assert_ptr_nonnull(strstr(err.msg, "textbook"));
    }
}
END_TEST

START_TEST(test_judge_refuses_what_is_not_a_sentence) {
    attn_error err;
    attn_compose_verdict v;
    const int src[ATTN_COMPOSE_SRC] = {ATTN_TGT_POSITIVE, attn_vocab_id("exam")};
    int out[16], n = 0;
    ck_assert_int_eq(attn_tokenize("the exam was not good", out, 16, &n, &err), ATTN_OK);
    ck_assert_int_eq(attn_compose_judge(src, out, n, &v, &err), ATTN_OK);
    ck_assert(v.grammatical && !v.polarity_ok && v.subject_ok);
    out[n] = ATTN_TGT_EOS; /* a target-only token inside the words */
    ck_assert_int_eq(attn_compose_judge(src, out, n + 1, &v, &err), ATTN_ERR_VALUE);
    ck_assert_ptr_nonnull(strstr(err.msg, "word 6 is '[EOS]'"));
    ck_assert(!v.grammatical && !v.polarity_ok && v.label == -1 && v.subject == -1);
    out[1] = attn_vocab_id("was"), out[2] = attn_vocab_id("exam"); /* swapped */
    ck_assert_int_eq(attn_compose_judge(src, out, n, &v, &err), ATTN_ERR_VALUE);
    ck_assert(!v.grammatical);
    ck_assert_int_eq(attn_compose_judge(src, out, 0, &v, &err), ATTN_ERR_VALUE);
}
END_TEST

int main(void) {
    Suite *s = suite_create("compose");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, test_pairs_are_the_generator_sentences, 0,
                        (int)(sizeof SETS / sizeof SETS[0]));
    tcase_add_test(tc, test_source_reader);
    tcase_add_test(tc, test_judge_refuses_what_is_not_a_sentence);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    const int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

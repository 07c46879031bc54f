/* test_pairs_tsv.c -- 'source<TAB>target' files read back as pairs (src/data/pairs_tsv.c): the
 * generated pairs of both tasks written as attn data --task prints them read back identical, and
 * every kind of bad line refused, naming the file and the line. */
#include "attn_seq2seq.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[] = "/tmp/attn-pairs-XXXXXX";

static void write_text(const char *text) {
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

START_TEST(test_generated_pairs_read_back) {
    const attn_task task = _i ? ATTN_TASK_COMPOSE : ATTN_TASK_REWRITE;
    attn_error err;
    attn_pairs *p = NULL, *q = NULL;
    ck_assert_int_eq(attn_pairs_generate(task, ATTN_SET_FILL8, 200, 2, &p, &err), ATTN_OK);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    for (int i = 0; i < p->src->n; i++)
        fprintf(f, "%s\t%s\r\n\n", p->src->texts[i], p->tgt_texts[i]);
    fclose(f);
    ck_assert_msg(attn_pairs_read_tsv(path, task, 80, 64, &q, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_int_eq(q->task, task);
    ck_assert_int_eq(q->src->n, p->src->n);
    ck_assert_mem_eq(q->src->lengths, p->src->lengths, (size_t)p->src->n * sizeof(int));
    ck_assert_mem_eq(q->src->ids, p->src->ids, p->src->offsets[p->src->n] * sizeof(int));
    ck_assert_mem_eq(q->tgt_lengths, p->tgt_lengths, (size_t)p->src->n * sizeof(int));
    ck_assert_mem_eq(q->tgt_ids, p->tgt_ids, p->tgt_offsets[p->src->n] * sizeof(int));
    for (int i = 0; i < p->src->n; i++) {
        ck_assert_str_eq(q->src->texts[i], p->src->texts[i]);
        ck_assert_str_eq(q->tgt_texts[i], p->tgt_texts[i]);
        ck_assert_int_eq(q->src->labels[i], task == ATTN_TASK_COMPOSE ? p->src->labels[i] : -1);
    }
    for (size_t j = 0; j < q->tgt_offsets[q->src->n]; j++) ck_assert_int_eq(q->align[j], -1);
    attn_pairs_free(p);
    attn_pairs_free(q);
}
END_TEST

START_TEST(test_bad_lines_are_named) {
    struct {
        attn_task task;
        const char *text, *msg;
    } bad[] = {
        {ATTN_TASK_REWRITE, "the exam was good positive exam good\n", ":1: expected 'source<TAB>"},
        {ATTN_TASK_REWRITE, "the exam was good\tpositive exam good\n\nx\ty\tz\n", ":3: expected"},
        {ATTN_TASK_REWRITE, "the exam was goood\tpositive exam good\n", ":1: source: unknown word"},
        {ATTN_TASK_REWRITE, "the exam was good\tpositive exam goood\n", "'goood' is not in the"},
        {ATTN_TASK_REWRITE, "the exam was good\tpositive [EOS]\n", "'[EOS]' is a special token"},
        {ATTN_TASK_REWRITE, "the exam was good\t\n", ":1: the target is empty"},
        {ATTN_TASK_REWRITE, "the exam was good\tthe exam was good the exam was good\n",
         "the target has 8 words, the model writes at most 6"},
        {ATTN_TASK_REWRITE, "the exam was good in my opinion\tpositive exam good\n",
         "the source has 7 words, the model reads at most 6"},
        {ATTN_TASK_COMPOSE, "positive exam\tthe exam was good\nthe exam\tthe exam was good\n",
         ":2: source: compose source 'the exam': 'the' is not a polarity"},
        {ATTN_TASK_REWRITE, "", "no 'source<TAB>target' lines"},
        {ATTN_TASK_REWRITE, "the exam\0 was good\tpositive exam good\n", "NUL"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        attn_error err;
        attn_pairs *p = NULL;
        if (strcmp(bad[i].msg, "NUL") == 0) {
            FILE *f = fopen(path, "wb");
            ck_assert_ptr_nonnull(f);
            fwrite(bad[i].text, 1, 40, f);
            fclose(f);
        } else {
            write_text(bad[i].text);
        }
        ck_assert_int_ne(attn_pairs_read_tsv(path, bad[i].task, 6, 6, &p, &err), ATTN_OK);
        ck_assert_ptr_null(p);
        ck_assert_msg(strstr(err.msg, path) && strstr(err.msg, bad[i].msg), "case %zu: %s", i,
                      err.msg);
    }
    attn_error err;
    attn_pairs *p = NULL;
    ck_assert_int_eq(
        attn_pairs_read_tsv("/nonexistent/pairs.tsv", ATTN_TASK_REWRITE, 6, 6, &p, &err),
        ATTN_ERR_IO);
    ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent/pairs.tsv"));
}
END_TEST

int main(void) {
    const int fd = mkstemp(path);
    if (fd < 0) return 1;
    close(fd);
    Suite *s = suite_create("pairs_tsv");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, test_generated_pairs_read_back, 0, 2);
    tcase_add_test(tc, test_bad_lines_are_named);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    const int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    unlink(path);
    return failed ? 1 : 0;
}

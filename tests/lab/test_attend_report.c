/* test_attend_report.c -- the calculator's and the lessons' reports (attend_report.c,
 * lesson_report.c) as a library writes them: the JSON parses and holds the numbers of
 * attn_attend_compute_x on the documented embeddings (a role table honoured); the errors have
 * the statuses and codes the CLI decides by; the scaling lesson's JSON holds attn_lesson_scaling's
 * rows. */
#include "attn_attend.h"
#include "attn_lab.h"
#include "test_util.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What attn_attend_write (or attn_lesson_write when lesson) wrote, and its status. */
static char *written(const attn_attend_opts *a, const attn_lesson_opts *l, attn_status *st,
                     attn_error *err) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ck_assert_ptr_nonnull(f);
    *st = a ? attn_attend_write(f, a, err) : attn_lesson_write(f, l, err);
    ck_assert_int_eq(fclose(f), 0);
    return text;
}

START_TEST(test_attend_json) {
    const attn_attend_word_role roles[] = {{"zork", ATTN_ROLE_NOUN}, {"bad", ATTN_ROLE_POSITIVE}};
    const attn_attend_opts o = {"the zork was bad", NULL, roles, 2, false, true};
    attn_error err;
    attn_status st;
    char *text = written(&o, NULL, &st, &err);
    ck_assert_msg(st == ATTN_OK, "%s", err.msg);
    cJSON *root = cJSON_Parse(text);
    ck_assert_msg(root, "%s", text);
    /* the query defaults to the first noun: zork, by its role */
    ck_assert_str_eq(cJSON_GetObjectItem(root, "query")->valuestring, "zork");
    /* X by the roles: zork a noun (dim 2), bad made positive (dim 0 = +1, not -1) */
    const cJSON *X = cJSON_GetObjectItem(root, "X");
    float x[4 * ATTN_ATTEND_D];
    for (int i = 0; i < 4; i++)
        for (int c = 0; c < ATTN_ATTEND_D; c++)
            x[i * ATTN_ATTEND_D + c] =
                (float)cJSON_GetArrayItem(cJSON_GetArrayItem(X, i), c)->valuedouble;
    ck_assert(x[1 * ATTN_ATTEND_D + 2] == 1.0f && x[3 * ATTN_ATTEND_D + 0] == 1.0f);
    attn_attend_result *r = NULL;
    ck_assert(attn_attend_compute_x(x, 4, &r, &err) == ATTN_OK);
    const cJSON *outs = cJSON_GetObjectItem(root, "outputs");
    ck_assert_int_eq(cJSON_GetArraySize(outs), 4);
    for (int i = 0; i < 4; i++)
        for (int c = 0; c < ATTN_ATTEND_DK; c++)
            ck_assert_float_eq(
                (float)cJSON_GetArrayItem(cJSON_GetArrayItem(outs, i), c)->valuedouble,
                r->out[i * ATTN_ATTEND_DK + c]);
    attn_attend_result_free(r);
    cJSON_Delete(root);
    free(text);
}
END_TEST

START_TEST(test_attend_errors) {
    attn_error err;
    attn_status st;
    attn_attend_opts o = {"the food was good", "nope", NULL, 0, false, false};
    char *text = written(&o, NULL, &st, &err);
    ck_assert_int_eq(st, ATTN_ERR_ARG); /* the CLI's usage error */
    ck_assert_ptr_nonnull(strstr(err.msg, "'nope'"));
    free(text);
    o = (attn_attend_opts){" !? ", NULL, NULL, 0, false, true};
    text = written(&o, NULL, &st, &err);
    ck_assert(st == ATTN_ERR_VALUE && err.code == ATTN_CODE_EMPTY_SENTENCE);
    ck_assert_str_eq(text, ""); /* nothing written before the error */
    free(text);
}
END_TEST

START_TEST(test_lesson_scaling_json) {
    const attn_lesson_opts o = {ATTN_LESSON_SCALING, true, NULL, 3, NULL};
    attn_error err;
    attn_status st;
    char *text = written(NULL, &o, &st, &err);
    ck_assert_msg(st == ATTN_OK, "%s", err.msg);
    attn_scaling_row rows[ATTN_SCALING_N_DK];
    ck_assert(attn_lesson_scaling(16, 500, 3, rows, &err) == ATTN_OK);
    cJSON *root = cJSON_Parse(text);
    ck_assert_msg(root, "%s", text);
    const cJSON *got = cJSON_GetObjectItem(root, "rows");
    ck_assert_int_eq(cJSON_GetArraySize(got), ATTN_SCALING_N_DK);
    for (int i = 0; i < ATTN_SCALING_N_DK; i++) {
        const cJSON *row = cJSON_GetArrayItem(got, i);
        ck_assert_int_eq(cJSON_GetObjectItem(row, "d_k")->valueint, rows[i].d_k);
        const double std = cJSON_GetObjectItem(row, "std")->valuedouble;
        ck_assert_double_eq_tol(std, rows[i].score_std[0], 1e-5 * rows[i].score_std[0]);
    }
    cJSON_Delete(root);
    free(text);
    /* positions wants a Transformer */
    char path[4096];
    snprintf(path, sizeof path, "%s", tu_source_path("weights/rnn-seed1.json"));
    const attn_lesson_opts q = {ATTN_LESSON_POSITIONS, true, path, 1, NULL};
    text = written(NULL, &q, &st, &err);
    ck_assert_msg(st == ATTN_ERR_ARG && strstr(err.msg, "needs a transformer"), "%s", err.msg);
    free(text);
}
END_TEST

int main(void) {
    Suite *s = suite_create("lab/attend_report");
    TCase *tc = tcase_create("reports");
    tcase_add_test(tc, test_attend_json);
    tcase_add_test(tc, test_attend_errors);
    tcase_add_test(tc, test_lesson_scaling_json);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}

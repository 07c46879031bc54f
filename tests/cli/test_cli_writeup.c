/* test_cli_writeup.c -- the write-up's examples from attn itself: `attn attend` on any sentence
 * (s2: words outside the vocabulary get a role), `attn flops --vit` and any layer size (s8: the
 * 4.1 % and 47.1 % n x n shares, counted by attn_sgemm and equal to the formulas). */
#include "cli_harness.h"

/* The "X" row of word i in `attend --format json` output. */
static void x_row(const char *json, int i, double out[4]) {
    cJSON *j = cJSON_Parse(json);
    ck_assert_ptr_nonnull(j);
    const cJSON *row = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "X"), i);
    ck_assert_int_eq(cJSON_GetArraySize(row), 4);
    for (int c = 0; c < 4; c++) out[c] = cJSON_GetArrayItem(row, c)->valuedouble;
    cJSON_Delete(j);
}

START_TEST(test_attend_any_sentence) {
    /* s2's "the food was not good": "food" need not be a word of the task */
    run_result r = run(NULL, "attend", "--sentence", "The food was not good!", "--roles",
                       "food=noun", "--format", "json", NULL);
    expect(&r, "attend the food", 0, NULL);
    ck_assert_msg(strstr(r.out, "\"tokens\": [\"the\", \"food\", \"was\", \"not\", \"good\"]"),
                  "%s", r.out);
    ck_assert_msg(strstr(r.out, "\"query\": \"food\", \"query_index\": 1"), "%s", r.out);
    double food[4], lecture[4];
    x_row(r.out, 1, food);
    run_free(&r);
    ck_assert(food[0] == 0 && food[1] == 0 && food[2] == 1); /* a noun */
    /* a vocabulary word keeps its category's embedding (the same as before) */
    r = run(NULL, "attend", "--sentence", "the lecture was not good", "--format", "json", NULL);
    expect(&r, "attend the lecture", 0, NULL);
    x_row(r.out, 1, lecture);
    ck_assert(lecture[2] == 1 && lecture[3] != 0); /* noun + the id's offset */
    run_free(&r);
    /* without --roles an unknown word is 'other', and the text says so */
    r = run(NULL, "attend", "--sentence", "the soup was chaotic", "--shuffle", NULL);
    expect(&r, "attend the soup", 0, NULL);
    ck_assert_msg(strstr(r.out, "outside the vocabulary") && strstr(r.out, "soup (other)") &&
                      strstr(r.out, "chaotic (other)"),
                  "%s", r.out);
    ck_assert_msg(strstr(r.out, "equivariance: largest"), "%s", r.out);
    run_free(&r);
    r = run(NULL, "attend", "--sentence", "the lecture was good", NULL);
    expect(&r, "attend, vocabulary only", 0, NULL);
    ck_assert_msg(!strstr(r.out, "outside the vocabulary"), "%s", r.out);
    run_free(&r);
    r = run(NULL, "attend", "--sentence", "the soup", "--roles", "soup=nown", NULL);
    expect(&r, "bad role", 2, "unknown role 'nown'", NULL);
    run_free(&r);
}
END_TEST

/* The value printed after `label` (a number, commas allowed), or -1. */
static double after(const char *text, const char *label) {
    const char *p = strstr(text, label);
    if (!p) return -1;
    return strtod(p + strlen(label), NULL);
}

START_TEST(test_flops_vit) {
    run_result r = run(NULL, "flops", "--vit", NULL);
    expect(&r, "flops --vit", 0, NULL);
    ck_assert_msg(strstr(r.out, "n = 197 tokens") && strstr(r.out, "n = 4097 tokens"), "%s", r.out);
    ck_assert_msg(strstr(r.out, "n x n share: 4.1 %") && strstr(r.out, "n x n share: 47.1 %"), "%s",
                  r.out);
    ck_assert_msg(!strstr(r.out, "DIFFERS"), "%s", r.out);
    /* 2 n^2 d at n = 4097, d = 768, written out here */
    const char *n4097 = strstr(r.out, "n = 4097");
    ck_assert_double_eq(after(n4097, "n x n (qk + av) 2n^2d"), 2.0 * 4097 * 4097 * 768);
    run_free(&r);
}
END_TEST

START_TEST(test_flops_any_layer) {
    const int D = 48, NH = 3, F = 100, n = 33;
    run_result r = run(NULL, "flops", "--embed-dim", "48", "--heads", "3", "--ffn-dim", "100",
                       "--T", "33", NULL);
    expect(&r, "flops layer", 0, NULL);
    (void)NH;
    ck_assert_double_eq(after(r.out, "\nqkv"), 3.0 * n * D * D);
    ck_assert_double_eq(after(r.out, "\nqk "), 1.0 * n * n * D);
    ck_assert_double_eq(after(r.out, "\nffn_up"), 1.0 * n * D * F);
    const double share =
        100.0 * 2 * n * n * D / (4.0 * n * D * D + 2.0 * n * D * F + 2.0 * n * n * D);
    char want[64];
    snprintf(want, sizeof want, "n x n share: %.1f %%", share);
    ck_assert_msg(strstr(r.out, want), "want '%s' in %s", want, r.out);
    run_free(&r);
    const char *bad[][8] = {
        {"flops", "--vit", "--T", "4098"},
        {"flops", "--vit", "--embed-dim", "64"},
        {"flops", "--embed-dim", "30", "--heads", "4", "--ffn-dim", "8"},
        {"flops", "--vit", "--model", "rnn"},
        {"flops", "--model", "rnn", "--T", "81"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *args[10];
        int k = 0;
        for (; bad[i][k]; k++) args[k] = (char *)bad[i][k];
        args[k] = NULL;
        run_result u = run_argv(NULL, args);
        expect(&u, bad[i][1], 2, NULL);
        run_free(&u);
    }
}
END_TEST

/* s9 in two dimensions: the verdict holds, each head's 3 x 3 map peaks at its own kernel
 * offset, and the maps are drawn. */
START_TEST(test_convolution_2d) {
    const char *png = tmp_path("conv2d.png");
    run_result r = run(NULL, "experiment", "convolution-2d", "--quick", "--format", "json",
                       "--plot", png, NULL);
    expect(&r, "experiment convolution-2d", 0, NULL);
    cJSON *j = cJSON_Parse(r.out);
    ck_assert_msg(j, "%s", r.out);
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(j, "verdict")->valuestring, "holds");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "measurements");
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(m, "patterns.weights");
    ck_assert_int_eq(cJSON_GetArraySize(w), 81);
    for (int h = 0; h < 9; h++) {
        int best = 0;
        double sum = 0;
        for (int k = 0; k < 9; k++) {
            const double v = cJSON_GetArrayItem(w, h * 9 + k)->valuedouble;
            sum += v;
            if (v > cJSON_GetArrayItem(w, h * 9 + best)->valuedouble) best = k;
        }
        ck_assert_msg(best == h, "head %d peaks at offset %d", h, best); /* head h: offset h */
        ck_assert(sum <= 1.0 + 1e-6);
    }
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(m, "max_abs_error");
    const int n = cJSON_GetArraySize(e);
    ck_assert(cJSON_GetArrayItem(e, n - 1)->valuedouble <
              1e-3 * cJSON_GetArrayItem(e, 0)->valuedouble);
    cJSON_Delete(j);
    run_free(&r);
    ck_assert_msg(exists(png), "no chart");
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("cli/writeup");
    TCase *tc = tcase_create("writeup");
    tcase_set_timeout(tc, 200);
    tcase_add_test(tc, test_attend_any_sentence);
    tcase_add_test(tc, test_flops_vit);
    tcase_add_test(tc, test_flops_any_layer);
    tcase_add_test(tc, test_convolution_2d);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return cli_run_suite_in_tmp(suite());
}

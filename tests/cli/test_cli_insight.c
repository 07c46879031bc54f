/* test_cli_insight.c -- attn saliency, attend, lesson and figures as a user runs them: JSON that
 * parses with the documented keys, numbers consistent across formats, the measured
 * equivariance in the output, usage errors (exit 2) naming the option, runtime errors (exit 1)
 * naming the file, and a figures run into a temporary folder with every file index.md names. */
#include "cli_harness.h"

#define SECT "\xc2\xa7" /* the section sign of the Markdown headings */

static cJSON *parse(const run_result *r, const char *what) {
    cJSON *j = cJSON_Parse(r->out);
    ck_assert_msg(j != NULL, "%s: stdout is not JSON: %.300s", what, r->out);
    return j;
}

static const cJSON *item(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    ck_assert_msg(v != NULL, "no key '%s'", key);
    return v;
}

START_TEST(test_saliency_formats) {
    run_result r = run(NULL, "saliency", "--model", "rnn,transformer", "--T", "20", "--n", "10",
                       "--format", "json", NULL);
    expect(&r, "saliency json", 0, NULL);
    cJSON *j = parse(&r, "saliency json");
    const cJSON *models = item(j, "models");
    ck_assert_int_eq(cJSON_GetArraySize(models), 2);
    const cJSON *rnn = cJSON_GetArrayItem(models, 0), *tf = cJSON_GetArrayItem(models, 1);
    ck_assert_str_eq(item(rnn, "name")->valuestring, "rnn (untrained, seed 1)");
    ck_assert_int_eq(cJSON_GetArraySize(item(rnn, "median")), 20);
    ck_assert_int_eq(cJSON_GetArraySize(item(rnn, "p10")), 20);
    ck_assert_int_eq(cJSON_GetArraySize(item(tf, "p90")), 20);
    ck_assert(cJSON_GetArrayItem(item(rnn, "median"), 0)->valuedouble == 1.0);
    ck_assert(cJSON_GetArrayItem(item(rnn, "median"), 19)->valuedouble < 1e-3);
    ck_assert(cJSON_GetArrayItem(item(tf, "median"), 19)->valuedouble > 0.1);
    const double med19 = cJSON_GetArrayItem(item(rnn, "median"), 19)->valuedouble;
    cJSON_Delete(j);
    run_free(&r);
    r = run(NULL, "saliency", "--model", "rnn", "--T", "20", "--n", "10", "--format", "csv", NULL);
    expect(&r, "saliency csv", 0, NULL);
    ck_assert(strncmp(r.out, "model,distance,median,p10,p90\n", 30) == 0);
    const char *row = strstr(r.out, "\"rnn (untrained, seed 1)\",19,");
    ck_assert_msg(row != NULL, "%s", r.out);
    ck_assert_msg(fabs(strtod(row + strlen("\"rnn (untrained, seed 1)\",19,"), NULL) - med19) <=
                      1e-8 * med19,
                  "csv %s vs json %g", row, med19);
    run_free(&r);
    const char *png = tmp_path("sal.png");
    r = run(NULL, "saliency", "--weights", tu_source_path("weights/lstm-seed1.json"), "--T", "10",
            "--n", "5", "--plot", png, NULL);
    expect(&r, "saliency table + plot", 0, NULL);
    ck_assert_ptr_nonnull(strstr(r.out, "lstm-seed1"));
    ck_assert(exists(png));
    run_free(&r);
}
END_TEST

START_TEST(test_saliency_errors) {
    run_result r = run(NULL, "saliency", NULL);
    expect(&r, "no model", 2, "--model", NULL);
    run_free(&r);
    r = run(NULL, "saliency", "--model", "rnn,cnn", NULL);
    expect(&r, "unknown model", 2, "cnn", NULL);
    run_free(&r);
    r = run(NULL, "saliency", "--model", "rnn", "--T", "81", NULL);
    expect(&r, "T too large", 2, "--T", NULL);
    run_free(&r);
    r = run(NULL, "saliency", "--weights", "missing.json", NULL);
    expect(&r, "missing weights", 1, "missing.json", NULL);
    run_free(&r);
    r = run(NULL, "saliency", "--model", "rnn", "--plot", "/nonexistent-dir/x.png", NULL);
    expect(&r, "bad plot path", 1, "--plot", NULL);
    run_free(&r);
}
END_TEST

START_TEST(test_attend) {
    run_result r = run(NULL, "attend", "--sentence", "the food was not good", "--shuffle",
                       "--format", "json", NULL);
    expect(&r, "attend json", 0, NULL);
    cJSON *j = parse(&r, "attend json");
    ck_assert_str_eq(item(j, "query")->valuestring, "food");
    ck_assert_int_eq(cJSON_GetArraySize(item(j, "X")), 5);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetArrayItem(item(j, "X"), 0)), 4);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetArrayItem(item(j, "Q"), 0)), 3);
    double sum = 0.0;
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetArrayItem(item(j, "softmax"), 0)) sum += p->valuedouble;
    ck_assert_msg(fabs(sum - 1.0) < 1e-6, "softmax row sums to %g", sum);
    const cJSON *sh = item(j, "shuffle");
    ck_assert(item(sh, "max_output_deviation")->valuedouble < 1e-6);
    ck_assert(item(sh, "max_probability_deviation")->valuedouble < 1e-6);
    cJSON_Delete(j);
    run_free(&r);
    r = run(NULL, "attend", "--query", "not", NULL);
    expect(&r, "attend text", 0, NULL);
    ck_assert_ptr_nonnull(strstr(r.out, "query \"not\" (row 3)"));
    ck_assert_ptr_nonnull(strstr(r.out, "Q = X W_Q  [5 x 3]"));
    run_free(&r);
    r = run(NULL, "attend", "--query", "coffee", NULL);
    expect(&r, "query not in sentence", 2, "coffee", NULL);
    run_free(&r);
    /* any word is taken (a word outside the vocabulary is named, with its role) */
    r = run(NULL, "attend", "--sentence", "the lecture was grate", NULL);
    expect(&r, "word outside the vocabulary", 0, NULL);
    ck_assert_msg(strstr(r.out, "grate (other)"), "%s", r.out);
    run_free(&r);
    r = run(NULL, "attend", "--sentence", "!!! ...", NULL);
    expect(&r, "no words", 2, "empty sentence", NULL);
    run_free(&r);
}
END_TEST

START_TEST(test_lessons) {
    run_result r = run(NULL, "lesson", "scaling", "--format", "json", NULL);
    expect(&r, "lesson scaling", 0, NULL);
    cJSON *j = parse(&r, "lesson scaling");
    const cJSON *rows = item(j, "rows");
    ck_assert_int_eq(cJSON_GetArraySize(rows), 8);
    const cJSON *last = cJSON_GetArrayItem(rows, 7);
    ck_assert_int_eq(item(last, "d_k")->valueint, 512);
    ck_assert(item(last, "std")->valuedouble > 20 && item(last, "std_scaled")->valuedouble < 1.1);
    cJSON_Delete(j);
    run_free(&r);
    r = run(NULL, "lesson", "positions", "--format", "json", "--weights",
            tu_source_path("weights/transformer-seed1.json"), "--out", tmp_dir, NULL);
    expect(&r, "lesson positions", 0, NULL);
    j = parse(&r, "lesson positions");
    ck_assert(item(j, "dot_max_deviation")->valuedouble < 1e-12);
    ck_assert(item(item(j, "without_positions"), "max_logit_dev")->valuedouble < 1e-4);
    ck_assert(item(item(j, "with_positions"), "max_logit_dev")->valuedouble > 1.0);
    ck_assert(exists(tmp_path("lesson-positions-table.png")));
    ck_assert(exists(tmp_path("lesson-positions-dots.svg")));
    cJSON_Delete(j);
    run_free(&r);
    r = run(NULL, "lesson", "attention", NULL);
    expect(&r, "unknown lesson", 2, "attention", NULL);
    run_free(&r);
    r = run(NULL, "lesson", NULL);
    expect(&r, "no lesson", 2, "scaling or positions", NULL);
    run_free(&r);
    r = run(NULL, "lesson", "positions", "--weights", tu_source_path("weights/rnn-seed1.json"),
            NULL);
    expect(&r, "positions of an RNN", 2, "transformer", NULL);
    run_free(&r);
}
END_TEST

/* Every file index.md links to exists; index.md mentions every section. In the sanitizer build
 * (tu_small) the table evaluates the RNN's three seeds only (--models rnn), not nine models: the
 * same sections, files and links, a third of the table's arithmetic. */
START_TEST(test_figures) {
    const char *out = tmp_path("figs");
    const char *weights = tu_source_path("weights");
    run_result r = tu_small()
                       ? run(NULL, "figures", "--weights", weights, "--out", out, "--quick",
                             "--models", "rnn", NULL)
                       : run(NULL, "figures", "--weights", weights, "--out", out, "--quick", NULL);
    expect(&r, "figures", 0, NULL);
    run_free(&r);
    char path[512];
    snprintf(path, sizeof path, "%s/index.md", out);
    char *index = tu_read_text(path);
    static const char *const sections[] = {"## The table", "## " SECT "1", "## " SECT "2",
                                           "## " SECT "3", "## " SECT "4", "## " SECT "7",
                                           "## " SECT "8"};
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
        ck_assert_msg(strstr(index, sections[i]) != NULL, "index.md has no '%s'", sections[i]);
    int links = 0;
    for (const char *p = index; (p = strstr(p, "](")) != NULL; p += 2) {
        const char *end = strchr(p + 2, ')');
        ck_assert(end != NULL);
        snprintf(path, sizeof path, "%s/%.*s", out, (int)(end - p - 2), p + 2);
        ck_assert_msg(exists(path), "index.md links to %s, which is missing", path);
        links++;
    }
    ck_assert_msg(links >= 30, "%d links", links);
    free(index);
    r = run(NULL, "figures", "--weights", "/nonexistent", "--out", out, NULL);
    expect(&r, "figures without weights", 1, "/nonexistent", NULL);
    run_free(&r);
}
END_TEST

int main(void) {
    Suite *s = suite_create("cli_insight");
    TCase *tc = tcase_create("cli_insight");
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, test_saliency_formats);
    tcase_add_test(tc, test_saliency_errors);
    tcase_add_test(tc, test_attend);
    tcase_add_test(tc, test_lessons);
    tcase_add_test(tc, test_figures);
    suite_add_tcase(s, tc);
    return cli_run_suite_in_tmp(s);
}

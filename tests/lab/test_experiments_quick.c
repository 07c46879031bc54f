/* test_experiments_quick.c -- `attn experiment all --quick --out DIR` (the CI run): every
 * experiment of the table, in table order, one JSON object a line on stdout and NAME.json and
 * NAME.png in DIR; nothing left unmeasured (null). The verdicts that do not depend on the
 * training budget -- the exactness claims convolution, convolution-2d, embedding and
 * equivariance -- must hold even in the quick runs; the others must be one of the three words
 * (their quick runs are too short to decide, docs/claims.md). Every experiment trains its
 * models: label slow (the release stage; the sanitizer stage leaves it out). */
#include "attn_experiments.h"
#include "cli/cli_harness.h"

#include <unistd.h>

static bool exact_claim(const char *name) {
    static const char *const exact[] = {"convolution", "convolution-2d", "embedding",
                                        "equivariance"};
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (strcmp(name, exact[i]) == 0) return true;
    return false;
}

START_TEST(test_all_quick) {
    char weights[1024];
    snprintf(weights, sizeof weights, "%s", tu_source_path("weights"));
    const char *out = tmp_path("claims");
    run_result r = run(NULL, "experiment", "all", "--quick", "--format", "json", "--out", out,
                       "--weights-dir", weights, NULL);
    expect(&r, "experiment all --quick", 0, NULL);
    char *line = r.out;
    for (int i = 0; i < attn_experiment_count(); i++) {
        const char *name = attn_experiment_at(i)->name;
        ck_assert_msg(line && *line, "stdout ends before %s", name);
        char *nl = strchr(line, '\n');
        ck_assert_ptr_nonnull(nl);
        *nl = '\0';
        cJSON *o = cJSON_Parse(line);
        ck_assert_msg(o != NULL, "not JSON: %s", line);
        ck_assert_msg(!strstr(line, "null"), "%s: a value not measured: %s", name, line);
        ck_assert_str_eq(cJSON_GetObjectItem(o, "experiment")->valuestring, name);
        char v[32]; /* the verdict outlives o */
        snprintf(v, sizeof v, "%s", cJSON_GetObjectItem(o, "verdict")->valuestring);
        if (exact_claim(name))
            ck_assert_msg(strcmp(v, "holds") == 0, "%s: %s: %s", name, v,
                          cJSON_GetObjectItem(o, "why")->valuestring);
        else
            ck_assert_msg(!strcmp(v, "holds") || !strcmp(v, "does not hold") || !strcmp(v, "mixed"),
                          "%s: verdict '%s'", name, v);
        cJSON_Delete(o);
        line = nl + 1;
        char path[1200];
        snprintf(path, sizeof path, "%s/%s.json", out, name);
        cJSON *f = tu_load_json(path);
        ck_assert_str_eq(cJSON_GetObjectItem(f, "verdict")->valuestring, v);
        cJSON_Delete(f);
        snprintf(path, sizeof path, "%s/%s.png", out, name);
        ck_assert_msg(access(path, R_OK) == 0, "no chart %s", path);
    }
    run_free(&r);
}
END_TEST

int main(void) {
    Suite *s = suite_create("lab/experiments_quick");
    /* about 20 small models: ~50 s in the release build on 2 cores */
    TCase *all = tcase_create("all_quick");
    tcase_set_timeout(all, 580);
    tcase_add_test(all, test_all_quick);
    suite_add_tcase(s, all);
    return cli_run_suite_in_tmp(s);
}

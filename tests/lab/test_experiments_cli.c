/* test_experiments_cli.c -- `attn experiment` as a user runs it, fast enough for every stage:
 * NAME --quick --out DIR writes NAME.json (the documented keys, a verdict that is one of the
 * three words, measurements, the kernels record) and NAME.png, --format json prints the same
 * object on one line; text output; list; usage errors exit 2 and name the problem. The
 * experiments' own numbers are tested in lab/test_experiments and their verdict rules in
 * lab/test_verdicts; `all --quick` (every experiment trains) is lab/test_experiments_quick. */
#include "attn_experiments.h"
#include "cli/cli_harness.h"

static void check_object(const cJSON *o, const char *name) {
    static const char *const keys[] = {"experiment", "claim", "section", "rule", "verdict", "why"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        ck_assert_msg(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, keys[k])),
                      "%s: no string \"%s\"", name, keys[k]);
    ck_assert_str_eq(cJSON_GetObjectItem(o, "experiment")->valuestring, name);
    const char *v = cJSON_GetObjectItem(o, "verdict")->valuestring;
    ck_assert_msg(!strcmp(v, "holds") || !strcmp(v, "does not hold") || !strcmp(v, "mixed"),
                  "%s: verdict '%s'", name, v);
    /* the kernels record: the kernels the numbers were computed with (attn_kernelset.h) */
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(o, "kernels");
    static const char *const kkeys[] = {"mode", "openblas", "blas_core", "cpu_path"};
    for (size_t i = 0; i < sizeof kkeys / sizeof kkeys[0]; i++)
        ck_assert_msg(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(k, kkeys[i])),
                      "%s: no \"kernels\".\"%s\"", name, kkeys[i]);
    ck_assert_str_eq(cJSON_GetObjectItem(k, "mode")->valuestring, "pinned");
    ck_assert_int_eq(cJSON_GetObjectItem(k, "blas_threads")->valueint, 1);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "measurements");
    ck_assert_msg(cJSON_IsObject(m) && cJSON_GetArraySize(m) >= 3, "%s: measurements", name);
}

/* The JSON line of experiment name on stdout and its files in out. */
static void check_line_and_files(char *line, const char *name, const char *out) {
    char *nl = strchr(line, '\n');
    ck_assert_ptr_nonnull(nl);
    *nl = '\0';
    cJSON *o = cJSON_Parse(line);
    ck_assert_msg(o != NULL, "not JSON: %s", line);
    /* --quick leaves some models untrained: they are left out, never NaN (null) */
    ck_assert_msg(!strstr(line, "null") && !strstr(line, " nan") && !strstr(line, "[nan"),
                  "%s: a value not measured: %s", name, line);
    check_object(o, name);
    cJSON_Delete(o);
    *nl = '\n';
    char path[1200];
    snprintf(path, sizeof path, "%s/%s.json", out, name);
    cJSON *f = tu_load_json(path);
    check_object(f, name);
    cJSON_Delete(f);
    snprintf(path, sizeof path, "%s/%s.png", out, name);
    FILE *png = fopen(path, "rb");
    ck_assert_msg(png != NULL, "no chart %s", path);
    unsigned char head[8] = {0};
    ck_assert_int_eq(fread(head, 1, 8, png), 8);
    fclose(png);
    ck_assert_msg(memcmp(head, "\x89PNG\r\n\x1a\n", 8) == 0, "%s is not a PNG", path);
}

/* What the command adds to an experiment's run, on two that take well under a second: the
 * object on stdout (one line, --format json), NAME.json and NAME.png in --out, the kernels
 * record. `all` is this, once per row of the table (lab/test_experiments_quick runs it). */
START_TEST(test_quick_out) {
    char weights[1024];
    snprintf(weights, sizeof weights, "%s", tu_source_path("weights"));
    static const char *const names[] = {"embedding", "convolution"};
    for (int i = 0; i < 2; i++) {
        const char *out = tmp_path("claims");
        run_result r = run(NULL, "experiment", names[i], "--quick", "--format", "json", "--out",
                           out, "--weights-dir", weights, NULL);
        expect(&r, names[i], 0, NULL);
        check_line_and_files(r.out, names[i], out);
        ck_assert_msg(strchr(r.out, '\n') == r.out + strlen(r.out) - 1, "one line: %s", r.out);
        run_free(&r);
    }
}
END_TEST

START_TEST(test_text) {
    run_result r = run(NULL, "experiment", "convolution", "--seeds", "2", NULL);
    expect(&r, "experiment convolution", 0, NULL);
    ck_assert_msg(strstr(r.out, "claim: ") && strstr(r.out, "rule: ") &&
                      strstr(r.out, "verdict: holds -- "),
                  "%s", r.out);
    run_free(&r);
    r = run(NULL, "experiment", "list", NULL);
    expect(&r, "experiment list", 0, NULL);
    for (int i = 0; i < attn_experiment_count(); i++)
        ck_assert(strstr(r.out, attn_experiment_at(i)->name) != NULL);
    run_free(&r);
}
END_TEST

START_TEST(test_errors) {
    run_result r = run(NULL, "experiment", NULL);
    expect(&r, "no name", 2, "NAME", NULL);
    run_free(&r);
    r = run(NULL, "experiment", "heads-and-tails", NULL);
    expect(&r, "unknown", 2, "unknown experiment 'heads-and-tails'", "convolution", NULL);
    run_free(&r);
    r = run(NULL, "experiment", "all", "--plot", tmp_path("x.png"), NULL);
    expect(&r, "all --plot", 2, "--plot", NULL);
    run_free(&r);
    r = run(NULL, "experiment", "convolution", "--seeds", "0", NULL);
    expect(&r, "--seeds 0", 2, "--seeds", NULL);
    run_free(&r);
    r = run(NULL, "experiment", "embedding", "--weights-dir", tmp_path("none"), NULL);
    expect(&r, "missing weights", 1, "rnn-seed1.json", NULL);
    run_free(&r);
    r = run(NULL, "experiment", "convolution", "--plot", tmp_path("chart.txt"), NULL);
    expect(&r, "bad chart extension", 2, "chart.txt", ".png or .svg", NULL); /* before the run */
    run_free(&r);
}
END_TEST

int main(void) {
    Suite *s = suite_create("lab/experiments_cli");
    TCase *tc = tcase_create("experiments_cli");
    tcase_add_test(tc, test_quick_out);
    tcase_add_test(tc, test_text);
    tcase_add_test(tc, test_errors);
    suite_add_tcase(s, tc);
    return cli_run_suite_in_tmp(s);
}

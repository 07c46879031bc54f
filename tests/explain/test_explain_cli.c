/* test_explain_cli.c -- `attn explain` as a command: the JSON object (keys present or absent by
 * model, bertviz's [layer][head][query][key] nesting, the sentence escaped, the logit and the
 * prefix probabilities those of `attn predict`), colour only when asked or on a terminal
 * without NO_COLOR, and usage errors naming the option. */
#include "cli/cli_harness.h"

static const char *weights(const char *arch) {
    static char buf[4][256];
    static int next;
    char *b = buf[next++ % 4];
    char rel[64];
    snprintf(rel, sizeof rel, "weights/%s-seed1.json", arch);
    snprintf(b, sizeof buf[0], "%s", tu_source_path(rel));
    return b;
}

/* The one JSON object `attn CMD --format json --weights W SENTENCE` prints. */
static cJSON *json_of(const char *cmd, const char *w, const char *sentence) {
    run_result r = run(NULL, cmd, "--format", "json", "--weights", w, sentence, NULL);
    expect(&r, cmd, 0, NULL);
    cJSON *o = cJSON_Parse(r.out);
    ck_assert_msg(o != NULL, "attn %s printed no JSON: %s", cmd, r.out);
    run_free(&r);
    return o;
}

static int array_size(const cJSON *o, const char *key) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key);
    ck_assert_msg(cJSON_IsArray(a), "%s is not an array", key);
    return cJSON_GetArraySize(a);
}

START_TEST(test_json_transformer) {
    const char *sentence = "the \"lecture\" was great";
    cJSON *o = json_of("explain", weights("transformer"), sentence);
    cJSON *p = json_of("predict", weights("transformer"), sentence);
    ck_assert_str_eq(cJSON_GetObjectItem(o, "sentence")->valuestring, sentence);
    ck_assert(tu_json_double(o, "logit") == tu_json_double(p, "logit"));
    ck_assert(tu_json_double(o, "probability") == tu_json_double(p, "probability"));
    ck_assert_int_eq(array_size(o, "tokens"), 5);
    ck_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "tokens"), 0)->valuestring, "[CLS]");
    const cJSON *att = cJSON_GetObjectItem(o, "attention");
    ck_assert_int_eq(cJSON_GetArraySize(att), 2); /* layers */
    const cJSON *layer = cJSON_GetArrayItem(att, 1);
    ck_assert_int_eq(cJSON_GetArraySize(layer), 2); /* heads */
    const cJSON *head = cJSON_GetArrayItem(layer, 0);
    ck_assert_int_eq(cJSON_GetArraySize(head), 5);                        /* queries */
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetArrayItem(head, 0)), 5); /* keys */
    ck_assert_ptr_null(cJSON_GetObjectItem(o, "prefix_probability"));
    const cJSON *sal = cJSON_GetObjectItem(o, "saliency");
    ck_assert_int_eq(array_size(sal, "grad_norm"), 4);
    ck_assert_int_eq(array_size(sal, "grad_x_input"), 4);
    ck_assert_int_eq(array_size(sal, "integrated_gradients"), 4);
    ck_assert_int_eq(tu_json_int(o, "ig_steps"), ATTN_EXPLAIN_IG_STEPS);
    cJSON_Delete(o);
    cJSON_Delete(p);
}
END_TEST

START_TEST(test_json_recurrent) {
    const char *words[] = {"the", "the lecture", "the lecture was", "the lecture was not",
                           "the lecture was not helpful"};
    for (int k = 0; k < 2; k++) {
        const char *w = weights(k ? "lstm" : "rnn");
        cJSON *o = json_of("explain", w, words[4]);
        ck_assert_ptr_null(cJSON_GetObjectItem(o, "attention"));
        ck_assert_int_eq(array_size(o, "tokens"), 5);
        const cJSON *pp = cJSON_GetObjectItem(o, "prefix_probability");
        ck_assert_int_eq(cJSON_GetArraySize(pp), 5);
        for (int i = 0; i < 5; i++) {
            cJSON *p = json_of("predict", w, words[i]);
            ck_assert_msg(cJSON_GetArrayItem(pp, i)->valuedouble ==
                              tu_json_double(p, "probability"),
                          "prefix %d of %s", i + 1, w);
            cJSON_Delete(p);
        }
        cJSON_Delete(o);
    }
}
END_TEST

START_TEST(test_color) {
    const char *w = weights("transformer");
    run_result r =
        run(NULL, "explain", "--weights", w, "--color", "always", "the lecture was great", NULL);
    expect(&r, "--color always", 0, NULL);
    ck_assert_ptr_nonnull(strstr(r.out, "\x1b[48;2;"));
    run_free(&r);
    /* auto: stdout is a file here, so no colour */
    r = run(NULL, "explain", "--weights", w, "the lecture was great", NULL);
    expect(&r, "--color auto", 0, NULL);
    ck_assert_ptr_null(strchr(r.out, '\x1b'));
    ck_assert_ptr_nonnull(strstr(r.out, "L1 avg"));
    run_free(&r);
    r = run(NULL, "explain", "--weights", w, "--color", "never", "--layer", "0", "--head", "1",
            "the lecture was great", NULL);
    expect(&r, "--color never", 0, NULL);
    ck_assert_ptr_null(strchr(r.out, '\x1b'));
    ck_assert_ptr_nonnull(strstr(r.out, "L0 H1"));
    ck_assert_ptr_null(strstr(r.out, "L1 "));
    ck_assert_ptr_null(strstr(r.out, "L0 H0"));
    run_free(&r);
}
END_TEST

START_TEST(test_errors) {
    run_result r = run(NULL, "explain", "--weights", weights("rnn"), "--layer", "0", "x", NULL);
    expect(&r, "--layer on rnn", 2, "--layer and --head apply to the transformer only", NULL);
    run_free(&r);
    r = run(NULL, "explain", "--weights", weights("transformer"), "--layer", "2", "x", NULL);
    expect(&r, "--layer 2", 2, "layers 0..1", NULL);
    run_free(&r);
    r = run("the lecture was great\nthe lecture was flurb\n", "explain", "--weights",
            weights("lstm"), NULL);
    expect(&r, "unknown word", 1, "line 2", "flurb", "1 of 2 sentences not explained", NULL);
    ck_assert_ptr_nonnull(strstr(r.out, "the lecture was great"));
    run_free(&r);
}
END_TEST

int main(void) {
    Suite *s = suite_create("explain/explain_cli");
    TCase *tc = tcase_create("explain_cli");
    tcase_add_test(tc, test_json_transformer);
    tcase_add_test(tc, test_json_recurrent);
    tcase_add_test(tc, test_color);
    tcase_add_test(tc, test_errors);
    suite_add_tcase(s, tc);
    return cli_run_suite_in_tmp(s);
}

/* test_cli_seq2seq_explain.c -- attn explain on seq2seq weights (cmd_explain reads the family
 * from the file): the JSON object per source (its output is attn generate --no-cache's,
 * its steps, maps and saliency of the right sizes), the text view, --prefix, --layer/--head,
 * --no-saliency, and the errors (exit 2 for options, 1 for a source it cannot read). */
#include "cli_harness.h"

#include <cjson/cJSON.h>

static const char *weights(void) {
    const char *w = tmp_path("s2s.json");
    if (!exists(w)) {
        run_result t =
            run(NULL, "train", "--model", "seq2seq-transformer", "--task", "rewrite", "--epochs",
                "1", "--train-size", "300", "--holdout", "10", "--quiet", "--out", w, NULL);
        expect(&t, "train seq2seq", 0, NULL);
        run_free(&t);
    }
    return w;
}

START_TEST(test_json) {
    const char *w = weights();
    run_result g =
        run(NULL, "generate", "--weights", w, "--no-cache", "the exam was not clear", NULL);
    run_result e = run(NULL, "explain", "--weights", w, "--format", "json", "--layer", "1",
                       "the exam was not clear", NULL);
    expect(&g, "generate", 0, NULL);
    expect(&e, "explain json", 0, NULL);
    cJSON *o = cJSON_Parse(e.out);
    ck_assert_ptr_nonnull(o);
    char want[256];
    snprintf(want, sizeof want, "%s", g.out);
    want[strcspn(want, "\n")] = '\0';
    ck_assert_str_eq(cJSON_GetObjectItem(o, "output")->valuestring, want);
    const int T = cJSON_GetArraySize(cJSON_GetObjectItem(o, "steps"));
    ck_assert_int_ge(T, 1);
    const cJSON *cross = cJSON_GetObjectItem(o, "cross_attention");
    ck_assert_int_eq(cJSON_GetArraySize(cross), 2);                        /* layers */
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetArrayItem(cross, 0)), 2); /* heads */
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetArrayItem(cJSON_GetArrayItem(cross, 0), 0)), T);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(o, "alignment")), T);
    ck_assert_int_eq(cJSON_GetObjectItem(o, "alignment_layer")->valueint, 1);
    const cJSON *gx = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "saliency"), "grad_x_input");
    ck_assert_int_eq(cJSON_GetArraySize(gx), T);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetArrayItem(gx, 0)), 5); /* source words */
    cJSON_Delete(o);
    run_result p = run(NULL, "explain", "--weights", w, "--format", "json", "--no-saliency",
                       "--prefix", "positive lecture", "the exam was not clear", NULL);
    expect(&p, "explain --prefix", 0, NULL);
    ck_assert_msg(strstr(p.out, "\"words\": [\"positive\", \"lecture\"") &&
                      strstr(p.out, "\"prefix\": 2"),
                  "%s", p.out);
    ck_assert_ptr_null(strstr(p.out, "\"saliency\""));
    run_free(&g), run_free(&e), run_free(&p);
}
END_TEST

START_TEST(test_text_and_errors) {
    const char *w = weights();
    run_result t = run("the exam was great\n\nthe teacher was not clear\n", "explain", "--weights",
                       w, "--color", "always", "--head", "0", NULL);
    expect(&t, "explain text", 0, NULL);
    const char *frags[] = {"output:",
                           "top:",
                           "attends",
                           "g x in",
                           "layer mean, head 0",
                           "\x1b[48;2;",
                           "the teacher was not clear  <-  seq2seq-transformer"};
    for (int i = 0; i < 7; i++) ck_assert_msg(strstr(t.out, frags[i]), "%s: %s", frags[i], t.out);
    run_result l = run(NULL, "explain", "--weights", w, "--layer", "2", "good", NULL);
    expect(&l, "--layer 2", 2, "--layer 2: the model has layers 0..1", NULL);
    run_result h = run(NULL, "explain", "--weights", w, "--head", "2", "good", NULL);
    expect(&h, "--head 2", 2, "--head 2: the model has heads 0..1", NULL);
    run_result p = run(NULL, "explain", "--weights", w, "--prefix", "[EOS]", "good", NULL);
    expect(&p, "--prefix [EOS]", 2, "'[EOS]' is not a word of the target vocabulary", NULL);
    run_result m = run(NULL, "explain", "--weights", w, "--max-out", "40", "good", NULL);
    expect(&m, "--max-out 40", 2, "at most 15 words", NULL);
    run_result u = run(NULL, "explain", "--weights", w, "the exam was gerat", "good", NULL);
    expect(&u, "unknown word", 1, "sentence 1", "'gerat'", NULL);
    ck_assert_ptr_nonnull(strstr(u.out, "good"));
    run_result help = run(NULL, "explain", "--weights", w, "--help", NULL);
    expect(&help, "--help", 0, NULL);
    ck_assert(strstr(help.out, "--prefix WORDS") && strstr(help.out, "SEQ2SEQ.json"));
    run_free(&t), run_free(&l), run_free(&h), run_free(&p), run_free(&m), run_free(&u);
    run_free(&help);
}
END_TEST

/* One command, one option table: a family's options on the other family's weights are refused
 * before any work, naming the option and the family it belongs to. */
START_TEST(test_other_family_options) {
    const char *w = weights();
    const char *classifier_only[][2] = {
        {"--ig-steps", "8"}, {"--qk", NULL}, {"--max-words", "9"}, {"--max-memory", "9"}};
    for (int i = 0; i < 4; i++) {
        run_result r = run(NULL, "explain", "--weights", w, classifier_only[i][0],
                           classifier_only[i][1], classifier_only[i][1] ? "good" : NULL, NULL);
        expect(&r, classifier_only[i][0], 2, classifier_only[i][0],
               "applies to classifier weights only", NULL);
        run_free(&r);
    }
    const char *lstm = tu_source_path("weights/lstm-seed1.json");
    const char *seq2seq_only[][2] = {
        {"--prefix", "positive"}, {"--max-out", "3"}, {"--no-saliency", NULL}};
    for (int i = 0; i < 3; i++) {
        run_result r = run(NULL, "explain", "--weights", lstm, seq2seq_only[i][0],
                           seq2seq_only[i][1], seq2seq_only[i][1] ? "good" : NULL, NULL);
        expect(&r, seq2seq_only[i][0], 2, seq2seq_only[i][0], "applies to seq2seq weights only",
               NULL);
        run_free(&r);
    }
    /* and each family's own options still work on its weights */
    run_result c = run(NULL, "explain", "--weights", lstm, "--ig-steps", "0", "--format", "json",
                       "the exam was good", NULL);
    expect(&c, "--ig-steps 0 on the LSTM", 0, NULL);
    ck_assert_ptr_nonnull(strstr(c.out, "\"grad_x_input\""));
    ck_assert_ptr_null(strstr(c.out, "integrated_gradients"));
    run_free(&c);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("cli/seq2seq_explain");
    TCase *tc = tcase_create("seq2seq_explain");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_json);
    tcase_add_test(tc, test_text_and_errors);
    tcase_add_test(tc, test_other_family_options);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return cli_run_suite_in_tmp(suite());
}

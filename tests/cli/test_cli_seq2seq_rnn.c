/* test_cli_seq2seq_rnn.c -- seq2seq-gru and seq2seq-attn end to end: attn train learns the task
 * with attention (a short run), attn generate (cached and --no-cache print the same bytes: the
 * recurrent decoder is incremental), --teacher, attn info, and the errors: options of the other
 * architecture, a bidirectional single-vector model, a classifier's weights given to generate,
 * a weights file whose tensors do not fit its config. */
#include "cli_harness.h"

START_TEST(test_attn_train_generate_info) {
    const char *w = tmp_path("attn.json");
    run_result t = run(NULL, "train", "--model", "seq2seq-attn", "--task", "rewrite", "--epochs",
                       "3", "--train-size", "4000", "--holdout", "100", "--lr", "0.003", "--quiet",
                       "--out", w, NULL);
    expect(&t, "train seq2seq-attn", 0, NULL);
    ck_assert_msg(strstr(t.out, "seq2seq-attn on rewrite"), "%s", t.out);
    const char *p = strstr(t.out, "plain      exact match ");
    ck_assert_ptr_nonnull(p);
    ck_assert_msg(atof(p + strlen("plain      exact match ")) > 0.9, "%s", t.out);
    run_result g = run(NULL, "generate", "--weights", w, "the exam was not very clear", NULL);
    expect(&g, "generate", 0, NULL);
    ck_assert_str_eq(g.out, "negative exam not clear\n");
    const char *src = "the exam was not very clear\nhonestly the lecture was helpful\n";
    run_result c = run(src, "generate", "--weights", w, "--format", "json", NULL);
    run_result n = run(src, "generate", "--weights", w, "--format", "json", "--no-cache", NULL);
    expect(&c, "generate json", 0, NULL);
    ck_assert_msg(strstr(c.out, "\"steps\""), "%s", c.out);
    expect(&n, "generate --no-cache json", 0, NULL);
    ck_assert_str_eq(c.out, n.out); /* every step's logits, bit for bit */
    run_result b = run(NULL, "generate", "--weights", w, "--beam", "3", "the exam was fun", NULL);
    expect(&b, "generate --beam", 0, NULL);
    ck_assert_str_eq(b.out, "positive exam fun\n");
    run_result f =
        run("the exam was fun\tpositive exam fun\n", "generate", "--weights", w, "--teacher", NULL);
    expect(&f, "generate --teacher", 0, NULL);
    cJSON *j = cJSON_Parse(f.out);
    ck_assert_ptr_nonnull(j);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "logits")), 4); /* BOS + 3 */
    cJSON_Delete(j);
    run_result in = run(NULL, "info", "--weights", w, NULL);
    expect(&in, "info seq2seq-attn", 0, NULL);
    const char *want[] = {"seq2seq-attn",
                          "hidden_size  64",
                          "bidirectional 1",
                          "encoder.weight_hh_l0_reverse",
                          "attention.energy.weight",
                          "decoder.weight_ih",
                          "total parameters: "};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(in.out, want[i]), "no '%s' in %s", want[i], in.out);
    run_free(&t), run_free(&g), run_free(&c), run_free(&n), run_free(&b), run_free(&f);
    run_free(&in);
}
END_TEST

START_TEST(test_gru_and_errors) {
    const char *w = tmp_path("gru.json");
    run_result t = run(NULL, "train", "--model", "seq2seq-gru", "--task", "rewrite", "--epochs",
                       "1", "--train-size", "300", "--holdout", "50", "--hidden", "16", "--quiet",
                       "--out", w, NULL);
    expect(&t, "train seq2seq-gru", 0, NULL);
    ck_assert_msg(strstr(t.out, "seq2seq-gru on rewrite"), "%s", t.out);
    run_result g = run(NULL, "generate", "--weights", w, "the exam was fun", NULL);
    expect(&g, "generate gru", 0, NULL);
    run_result in = run(NULL, "info", "--weights", w, NULL);
    expect(&in, "info seq2seq-gru", 0, NULL);
    ck_assert_msg(strstr(in.out, "seq2seq-gru") && strstr(in.out, "hidden_size  16") &&
                      strstr(in.out, "encoder.weight_ih_l0"),
                  "%s", in.out);
    ck_assert_ptr_null(strstr(in.out, "attention."));
    ck_assert_ptr_null(strstr(in.out, "_reverse"));
    run_result e1 = run(NULL, "train", "--model", "seq2seq-gru", "--bidirectional", "1", NULL);
    expect(&e1, "bidirectional gru", 2, "bidirectional", NULL);
    run_result e2 = run(NULL, "train", "--model", "seq2seq-transformer", "--hidden", "8", NULL);
    expect(&e2, "--hidden for the transformer", 2, "--hidden", NULL);
    run_result e3 = run(NULL, "train", "--model", "seq2seq-lstm", "--task", "rewrite", NULL);
    expect(&e3, "unknown model", 2, "seq2seq-gru", "seq2seq-attn", NULL);
    run_result e4 = run(NULL, "generate", "--weights", golden("gru"), "the exam", NULL);
    expect(&e4, "a GRU classifier's weights to generate", 1, "holds a classifier", NULL);
    /* a config whose hidden size does not fit the tensors: every tensor is named */
    char *text = tu_read_file(w, NULL);
    ck_assert_ptr_nonnull(text);
    char *at = strstr(text, "\"hidden_size\": 16");
    ck_assert_ptr_nonnull(at);
    memcpy(at, "\"hidden_size\": 17", strlen("\"hidden_size\": 17"));
    const char *bad = tmp_path("bad.json");
    write_file(bad, text);
    free(text);
    run_result e5 = run(NULL, "generate", "--weights", bad, "the exam", NULL);
    expect(&e5, "tensors of another hidden size", 1, "bad.json", "encoder.weight_hh_l0",
           "head.weight", NULL);
    run_free(&t), run_free(&g), run_free(&in), run_free(&e1), run_free(&e2), run_free(&e3);
    run_free(&e4), run_free(&e5);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("cli/seq2seq_rnn");
    /* The learning run (3 epochs of 4000 pairs) is tagged "nosan": the sanitizer build leaves it
     * out (CK_EXCLUDE_TAGS, CMakeLists.txt), where models/test_seq2seq_rnn (attn_seq2seq_alignment
     * too) and train/test_seq2seq_train run its library code; the release stage runs both. */
    TCase *learn = tcase_create("seq2seq_rnn_learns");
    tcase_set_timeout(learn, 300);
    tcase_set_tags(learn, "nosan");
    tcase_add_test(learn, test_attn_train_generate_info);
    suite_add_tcase(s, learn);
    TCase *tc = tcase_create("seq2seq_rnn");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_gru_and_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return cli_run_suite_in_tmp(suite());
}

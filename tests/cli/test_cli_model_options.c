/* test_cli_model_options.c -- `attn train`'s model options (--embed-dim, --heads, --ffn-dim,
 * --layers, --norm, --activation, --max-len, --pos; --hidden) and --warmup: they reach the
 * weights file and `attn info`, wrong combinations are usage errors naming the option, and
 * --resume refuses values that contradict the checkpoint. */
#include "cli_harness.h"

#define TINY "--train-size", "120", "--holdout", "20"

START_TEST(test_transformer_options_reach_the_file) {
    const char *out = tmp_path("opt-tf.json");
    run_result r = run(NULL, "train", "--model", "transformer", "--embed-dim", "24", "--heads", "3",
                       "--ffn-dim", "40", "--layers", "3", "--norm", "post", "--activation", "gelu",
                       "--max-len", "100", "--pos", "sinusoidal", "--warmup", "3", "--epochs", "1",
                       TINY, "--out", out, NULL);
    expect(&r, "train with transformer options", 0, NULL);
    run_free(&r);
    r = run(NULL, "info", "--weights", out, NULL);
    expect(&r, "info", 0, NULL);
    const char *lines[] = {"embed_dim    24",   "n_heads      3",         "ffn_dim      40",
                           "n_layers     3",    "max_len      100",       "norm         post",
                           "activation   gelu", "pos          sinusoidal"};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        ck_assert_msg(strstr(r.out, lines[i]) != NULL, "info lacks '%s': %s", lines[i], r.out);
    ck_assert(strstr(r.out, "pos_embedding") == NULL); /* the fixed table is not a tensor */
    ck_assert(strstr(r.out, "layers.2.linear1.weight") != NULL);
    run_free(&r);
    /* 12 layers train too */
    r = run(NULL, "train", "--model", "transformer", "--embed-dim", "8", "--heads", "2",
            "--ffn-dim", "8", "--layers", "12", "--pos", "none", "--epochs", "1", TINY, "--out",
            tmp_path("opt-tf12.json"), NULL);
    expect(&r, "train --layers 12", 0, NULL);
    run_free(&r);
}
END_TEST

START_TEST(test_recurrent_options_reach_the_file) {
    const char *out = tmp_path("opt-lstm.json");
    run_result r = run(NULL, "train", "--model", "lstm", "--embed-dim", "8", "--hidden", "12",
                       "--epochs", "0", "--out", out, NULL);
    expect(&r, "train lstm with options", 0, NULL);
    run_free(&r);
    r = run(NULL, "info", "--weights", out, NULL);
    expect(&r, "info", 0, NULL);
    ck_assert_msg(strstr(r.out, "hidden_size  12") && strstr(r.out, "embed_dim    8"), "%s", r.out);
    ck_assert(strstr(r.out, "[48,8]") != NULL);
    run_free(&r);
    /* stacked layers: PyTorch num_layers, tensors gru.weight_ih_l1 ... */
    out = tmp_path("opt-gru3.json");
    r = run(NULL, "train", "--model", "gru", "--layers", "3", "--hidden", "10", "--epochs", "1",
            TINY, "--out", out, NULL);
    expect(&r, "train gru --layers 3", 0, NULL);
    run_free(&r);
    r = run(NULL, "info", "--weights", out, NULL);
    expect(&r, "info", 0, NULL);
    ck_assert_msg(strstr(r.out, "gru.weight_ih_l2") && strstr(r.out, "[30,10]") &&
                      strstr(r.out, "n_layers     3"),
                  "%s", r.out);
    run_free(&r);
    r = run(NULL, "train", "--model", "rnn", "--layers", "9", NULL);
    expect(&r, "rnn --layers 9", 2, "--layers 9", "1..8", NULL);
    run_free(&r);
}
END_TEST

typedef struct bad_case {
    const char *args[8];
    const char *fragments[2];
} bad_case;

START_TEST(test_bad_combinations_are_usage_errors) {
    const bad_case cases[] = {
        {{"--model", "rnn", "--heads", "2"}, {"--heads", "transformer option"}},
        {{"--model", "gru", "--pos", "none"}, {"--pos", "transformer option"}},
        {{"--model", "transformer", "--hidden", "8"}, {"--hidden", "rnn, lstm and gru option"}},
        {{"--model", "transformer", "--heads", "5"}, {"--heads 5 does not divide --embed-dim 32"}},
        {{"--model", "transformer", "--embed-dim", "4", "--heads", "8"}, {"--heads 8", "more"}},
        {{"--model", "transformer", "--layers", "13"}, {"--layers", "1..12"}},
        {{"--model", "transformer", "--pos", "xpos"}, {"--pos", "none, rope or alibi"}},
        {{"--model", "transformer", "--norm", "mid"}, {"--norm", "pre or post"}},
        {{"--model", "transformer", "--max-len", "20", "--epochs", "1"}, {"--max-len 20"}},
        {{"--model", "rnn", "--warmup", "-1"}, {"--warmup"}},
        /* one option table for both families: each refuses the other's options */
        {{"--model", "lstm", "--quiet"}, {"--quiet", "applies to seq2seq models only"}},
        {{"--model", "rnn", "--test-size", "5"}, {"--test-size", "seq2seq models only"}},
        {{"--model", "transformer", "--dec-layers", "3"}, {"--dec-layers", "seq2seq models"}},
        {{"--model", "seq2seq-gru", "--bucket", "2"}, {"--bucket", "classifier models only"}},
        {{"--task", "rewrite", "--max-len", "40"}, {"--max-len", "classifier models only"}},
        {{"--model", "seq2seq-transformer", "--epochs", "200000"},
         {"--epochs 200000", "0..100000"}},
        {{"--task", "compose", "--batch", "70000"}, {"--batch 70000", "1..65536"}},
        {{"--model", "seq2seq-gru", "--heads", "4"}, {"--heads", "seq2seq-transformer only"}},
        {{"--model", "seq2seq-attn", "--pos", "none"}, {"--pos", "seq2seq-transformer only"}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char *args[16] = {"train"};
        int n = 1;
        for (int i = 0; i < 8 && cases[c].args[i]; i++) args[n++] = (char *)cases[c].args[i];
        args[n++] = "--train-size";
        args[n++] = "120";
        args[n++] = "--holdout";
        args[n++] = "20";
        args[n++] = "--out";
        args[n++] = (char *)tmp_path("opt-never.json");
        run_result r = run_argv(NULL, args);
        char what[128];
        snprintf(what, sizeof what, "train %s %s", cases[c].args[2], cases[c].args[3]);
        expect(&r, what, 2, cases[c].fragments[0], cases[c].fragments[1], NULL);
        run_free(&r);
    }
    /* the table's --train-size takes the seq2seq models' 1; a classifier needs 2 */
    run_result r = run(NULL, "train", "--model", "gru", "--train-size", "1", "--out",
                       tmp_path("opt-never.json"), NULL);
    expect(&r, "gru --train-size 1", 2, "--train-size 1", "2 sentences or more", NULL);
    run_free(&r);
    ck_assert(!exists(tmp_path("opt-never.json")));
}
END_TEST

START_TEST(test_resume_checks_model_options) {
    char ck[256];
    snprintf(ck, sizeof ck, "%s", tmp_path("opt-ck.json"));
    run_result r = run(NULL, "train", "--model", "transformer", "--embed-dim", "16", "--heads", "4",
                       "--layers", "1", "--pos", "none", "--warmup", "5", "--epochs", "1", TINY,
                       "--checkpoint", ck, "--out", tmp_path("opt-ck-w.json"), NULL);
    expect(&r, "train with a checkpoint", 0, NULL);
    run_free(&r);
    const bad_case cases[] = {
        {{"--pos", "learned"}, {"--pos learned contradicts", "(--pos none)"}},
        {{"--heads", "2"}, {"--heads 2 contradicts", "(--heads 4)"}},
        {{"--embed-dim", "32"}, {"--embed-dim 32 contradicts"}},
        {{"--layers", "2"}, {"--layers 2 contradicts"}},
        {{"--warmup", "0"}, {"--warmup 0 contradicts", "(--warmup 5)"}},
        {{"--hidden", "8"}, {"--hidden does not apply"}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char *args[12] = {"train", "--resume", ck, "--epochs", "2"};
        int n = 5;
        for (int i = 0; i < 8 && cases[c].args[i]; i++) args[n++] = (char *)cases[c].args[i];
        args[n++] = "--out";
        args[n++] = (char *)tmp_path("opt-never.json");
        run_result b = run_argv(NULL, args);
        expect(&b, cases[c].args[0], 2, cases[c].fragments[0], cases[c].fragments[1], NULL);
        run_free(&b);
    }
    /* the checkpoint's own values may be repeated */
    r = run(NULL, "train", "--resume", ck, "--epochs", "2", "--pos", "none", "--heads", "4",
            "--warmup", "5", "--out", tmp_path("opt-ck-ok.json"), NULL);
    expect(&r, "resume with the checkpoint's values", 0, "from epoch 2 of 2", NULL);
    run_free(&r);
}
END_TEST

/* --init W.json takes the model and its configuration from the file; options that contradict
 * it are usage errors. */
START_TEST(test_init_takes_the_files_configuration) {
    const char *w = tmp_path("opt-init.json");
    run_result r =
        run(NULL, "train", "--model", "transformer", "--embed-dim", "16", "--heads", "2",
            "--layers", "3", "--norm", "post", "--pos", "none", "--epochs", "0", "--out", w, NULL);
    expect(&r, "initial weights", 0, NULL);
    run_free(&r);
    const char *out = tmp_path("opt-init-out.json");
    r = run(NULL, "train", "--init", w, "--epochs", "1", TINY, "--out", out, NULL);
    expect(&r, "train --init without --model", 0, NULL);
    run_free(&r);
    r = run(NULL, "info", "--weights", out, NULL);
    expect(&r, "info", 0, NULL);
    ck_assert_msg(strstr(r.out, "n_layers     3") && strstr(r.out, "pos          none") &&
                      strstr(r.out, "norm         post"),
                  "%s", r.out);
    run_free(&r);
    r = run(NULL, "train", "--init", w, "--model", "transformer", "--layers", "3", "--epochs", "1",
            TINY, "--out", tmp_path("opt-init-out2.json"), NULL);
    expect(&r, "train --init with agreeing options", 0, NULL);
    run_free(&r);
    r = run(NULL, "train", "--init", w, "--layers", "2", NULL);
    expect(&r, "--layers against --init", 2, "--layers 2 contradicts --init", "(--layers 3)", NULL);
    run_free(&r);
    r = run(NULL, "train", "--init", w, "--model", "lstm", NULL);
    expect(&r, "--model against --init", 2, "--model lstm contradicts --init", NULL);
    run_free(&r);
    r = run(NULL, "train", "--init", w, "--hidden", "8", NULL);
    expect(&r, "--hidden against --init", 2, "--hidden does not apply", NULL);
    run_free(&r);
}
END_TEST

int main(void) {
    Suite *s = suite_create("cli/model_options");
    TCase *tc = tcase_create("model_options");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_transformer_options_reach_the_file);
    tcase_add_test(tc, test_recurrent_options_reach_the_file);
    tcase_add_test(tc, test_bad_combinations_are_usage_errors);
    tcase_add_test(tc, test_resume_checks_model_options);
    tcase_add_test(tc, test_init_takes_the_files_configuration);
    suite_add_tcase(s, tc);
    return cli_run_suite_in_tmp(s);
}

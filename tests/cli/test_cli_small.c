/* test_cli_small.c -- the small things a learner trips over: attn help CMD, --version,
 * did-you-mean for options and commands, train's ranges equal to what --resume takes, --out DIR
 * created with its parents, usage lines that list every option, one key for the word list,
 * data --stats naming its sets, the saliency header uncut, eval --table with the GRU,
 * experiment --size base. */
#include "cli_harness.h"

static const char *const commands[] = {
    "data",    "vocab", "info", "predict", "explain",   "saliency", "attend", "lesson",
    "figures", "eval",  "grad", "train",   "reproduce", "flops",    "serve",  "experiment"};
#define N_COMMANDS (int)(sizeof commands / sizeof commands[0])

START_TEST(test_help_cmd_is_cmd_help) {
    for (int i = 0; i < N_COMMANDS; i++) {
        run_result a = run(NULL, "help", commands[i], NULL);
        run_result b = run(NULL, commands[i], "--help", NULL);
        expect(&a, commands[i], 0, NULL);
        expect(&b, commands[i], 0, NULL);
        ck_assert_msg(strncmp(a.out, "Usage: attn ", 12) == 0, "%s: %s", commands[i], a.out);
        ck_assert_msg(strcmp(a.out, b.out) == 0, "attn help %s differs from --help", commands[i]);
        run_free(&a);
        run_free(&b);
    }
    run_result r = run(NULL, "help", "trian", NULL);
    expect(&r, "help of a typo", 2, "unknown command 'trian'; did you mean 'train'?", NULL);
    run_free(&r);
}
END_TEST

START_TEST(test_version) {
    run_result r = run(NULL, "--version", NULL);
    expect(&r, "--version", 0, NULL);
    ck_assert_msg(strncmp(r.out, "attn ", 5) == 0 && r.out[5] >= '0' && r.out[5] <= '9' &&
                      strchr(r.out, '.'),
                  "%s", r.out);
    run_free(&r);
}
END_TEST

START_TEST(test_did_you_mean) {
    run_result r = run(NULL, "train", "--model", "rnn", "--epoch", "3", NULL);
    expect(&r, "--epoch", 2, "unknown option '--epoch'; did you mean '--epochs'?", NULL);
    run_free(&r);
    r = run(NULL, "eval", "--weigths=w.json", NULL);
    expect(&r, "--weigths=", 2, "did you mean '--weights'?", NULL);
    run_free(&r);
    r = run(NULL, "predict", "--xyzzy", NULL);
    expect(&r, "far from every option", 2, "unknown option '--xyzzy'", NULL);
    ck_assert_msg(!strstr(r.err, "did you mean"), "%s", r.err);
    run_free(&r);
    r = run(NULL, "expirement", NULL);
    expect(&r, "command typo", 2, "did you mean 'experiment'?", NULL);
    run_free(&r);
    r = run(NULL, "zzzzzz", NULL);
    expect(&r, "unknown command", 2, "unknown command 'zzzzzz'", NULL);
    ck_assert_msg(!strstr(r.err, "did you mean"), "%s", r.err);
    run_free(&r);
}
END_TEST

/* The largest values a checkpoint holds (attn_train_config_validate, the checkpoint reader's
 * lr limit) get past train's option parser (which then stops at the missing --out directory);
 * one more is a usage error. */
START_TEST(test_train_ranges_match_resume) {
    const char *out = "/dev/null/x.json"; /* its directory cannot be made, even by root */
    const char *ok[][2] = {
        {"--epochs", "1000000"}, {"--batch", "1048576"}, {"--bucket", "1048576"}, {"--lr", "1000"}};
    const char *bad[][2] = {{"--epochs", "1000001"},
                            {"--batch", "1048577"},
                            {"--bucket", "1048577"},
                            {"--lr", "1000.5"}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        run_result r = run(NULL, "train", "--model", "rnn", ok[i][0], ok[i][1], "--out", out, NULL);
        expect(&r, ok[i][0], 1, "--out", NULL);
        run_free(&r);
        r = run(NULL, "train", "--model", "rnn", bad[i][0], bad[i][1], "--out", out, NULL);
        expect(&r, bad[i][0], 2, bad[i][0], NULL);
        run_free(&r);
    }
}
END_TEST

START_TEST(test_out_dir_created) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/new/nested/lesson", tmp_dir);
    run_result r = run(NULL, "lesson", "scaling", "--out", dir, NULL);
    expect(&r, "lesson --out new/nested/lesson", 0, NULL);
    run_free(&r);
    char png[600];
    snprintf(png, sizeof png, "%s/lesson-scaling.png", dir);
    ck_assert_msg(exists(png), "%s not written", png);
    snprintf(dir, sizeof dir, "%s/new/exp/a", tmp_dir);
    r = run(NULL, "experiment", "convolution", "--quick", "--out", dir, NULL);
    expect(&r, "experiment --out new/exp/a", 0, NULL);
    run_free(&r);
    snprintf(png, sizeof png, "%s/convolution.json", dir);
    ck_assert_msg(exists(png), "%s not written", png);
    /* a file in the way is an error naming it */
    write_file(tmp_path("plain-file"), "x");
    snprintf(dir, sizeof dir, "%s/plain-file/sub", tmp_dir);
    r = run(NULL, "lesson", "scaling", "--out", dir, NULL);
    expect(&r, "a file in the way", 1, "plain-file is not a directory", NULL);
    run_free(&r);
}
END_TEST

/* Every option of the Options list appears, as a whole word, in the usage block (the lines
 * before the first blank line). */
START_TEST(test_usage_lists_every_option) {
    for (int i = 0; i < N_COMMANDS; i++) {
        run_result r = run(NULL, commands[i], "--help", NULL);
        expect(&r, commands[i], 0, NULL);
        char *blank = strstr(r.out, "\n\n");
        ck_assert_ptr_nonnull(blank);
        *blank = 0;
        const char *usage = r.out;
        const char *opts = strstr(blank + 1, "\nOptions:\n");
        ck_assert_msg(opts, "%s: no Options", commands[i]);
        int n = 0;
        /* the option lines up to the blank line after them */
        for (const char *line = opts + 10; *line && *line != '\n';) {
            if (strncmp(line, "  -", 3) == 0 && strncmp(line, "  -h, --help", 12) != 0) {
                char name[64];
                ck_assert(sscanf(line + 2, "%63[^ ]", name) == 1);
                bool found = false;
                size_t len = strlen(name);
                for (const char *p = usage; !found && (p = strstr(p, name)); p++)
                    found = !(p[len] == '-' || (p[len] >= 'a' && p[len] <= 'z'));
                ck_assert_msg(found, "attn %s: option %s is not in the usage:\n%s", commands[i],
                              name, usage);
                n++;
            }
            const char *nl = strchr(line, '\n');
            if (!nl) break;
            line = nl + 1;
        }
        ck_assert_msg(n > 0, "%s: no options found", commands[i]);
        run_free(&r);
    }
}
END_TEST

START_TEST(test_vocab_json_key_is_words) {
    /* the key /api/vocab uses for its list */
    run_result r = run(NULL, "vocab", "--json", NULL);
    expect(&r, "vocab --json", 0, NULL);
    cJSON *j = cJSON_Parse(r.out);
    ck_assert_ptr_nonnull(j);
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(j, "words");
    ck_assert_msg(cJSON_IsArray(w) && cJSON_GetArraySize(w) == ATTN_VOCAB_SIZE, "%s", r.out);
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(j, "tokens"));
    cJSON_Delete(j);
    run_free(&r);
}
END_TEST

START_TEST(test_data_stats_name_the_sets) {
    run_result r = run(NULL, "data", "--set", "all", "--n", "20", "--seed", "7", "--stats", NULL);
    expect(&r, "data --stats", 0, "attn data: plain (seed 7): 20 sentences",
           "attn data: distractor (seed 7): 20", "attn data: fill4 (seed 7): 20",
           "attn data: fill8 (seed 7): 20", NULL);
    run_free(&r);
}
END_TEST

START_TEST(test_saliency_header_not_cut) {
    run_result r =
        run(NULL, "saliency", "--model", "transformer,lstm", "--n", "2", "--T", "5", NULL);
    expect(&r, "saliency", 0, NULL);
    ck_assert_msg(strstr(r.out, "transformer (untrained, seed 1)  lstm (untrained, seed 1)"), "%s",
                  r.out);
    run_free(&r);
}
END_TEST

/* A weights directory with the three models and a GRU (the golden GRU as seeds 1-3). */
static const char *dir_with_gru(void) {
    static char dir[512];
    snprintf(dir, sizeof dir, "%s/withgru", tmp_dir);
    mkdir(dir, 0777);
    const char *archs[] = {"rnn", "lstm", "transformer"};
    for (int s = 1; s <= 3; s++) {
        char src[256], dst[700];
        for (int a = 0; a < 3; a++) {
            snprintf(src, sizeof src, "weights/%s-seed%d.json", archs[a], s);
            snprintf(dst, sizeof dst, "%s/%s-seed%d.json", dir, archs[a], s);
            char *text = tu_read_text(tu_source_path(src));
            write_file(dst, text);
            free(text);
        }
        snprintf(dst, sizeof dst, "%s/gru-seed%d.json", dir, s);
        char *text = tu_read_text(golden("gru"));
        write_file(dst, text);
        free(text);
    }
    return dir;
}

START_TEST(test_eval_table_includes_the_gru) {
    const char *dir = dir_with_gru();
    run_result r = run(NULL, "eval", "--table", dir, "--batch", "256", NULL);
    expect(&r, "eval --table with a GRU", 0, NULL);
    ck_assert_msg(
        strstr(r.out, "| RNN           | GRU           | LSTM          | Transformer   |"), "%s",
        r.out);
    run_free(&r);
    r = run(NULL, "eval", "--table", dir, "--models", "rnn,gru", "--seeds", "1", "--batch", "256",
            NULL);
    expect(&r, "eval --table --models", 0, NULL);
    ck_assert_msg(strstr(r.out, "| test set   | RNN           | GRU           |\n"), "%s", r.out);
    run_free(&r);
    r = run(NULL, "eval", "--table", dir, "--models", "rnn,elman", NULL);
    expect(&r, "unknown model", 2, "unknown model \"elman\"", NULL);
    run_free(&r);
    /* the committed directory has no GRU: the write-up's three */
    r = run(NULL, "eval", "--table", tu_source_path("weights"), "--seeds", "1", "--batch", "256",
            NULL);
    expect(&r, "eval --table without a GRU", 0, NULL);
    ck_assert_msg(strstr(r.out, "| test set   | RNN           | LSTM          | Transformer   |\n"),
                  "%s", r.out);
    run_free(&r);
}
END_TEST

/* figures with a GRU beside the three: its column in table.md, its points in table.svg (every
 * seed, and the 50 % line), its probability curves beside the RNN's and the LSTM's */
START_TEST(test_figures_include_the_gru) {
    const char *dir = dir_with_gru();
    char out[600];
    snprintf(out, sizeof out, "%s/figs", tmp_dir);
    run_result r = run(NULL, "figures", "--weights", dir, "--out", out, "--quick", NULL);
    expect(&r, "figures with a GRU", 0, NULL);
    run_free(&r);
    char path[700];
    snprintf(path, sizeof path, "%s/table.md", out);
    char *md = tu_read_text(path);
    ck_assert_msg(strstr(md, "| RNN           | GRU           | LSTM          | Transformer   |"),
                  "%s", md);
    free(md);
    snprintf(path, sizeof path, "%s/table.svg", out);
    char *svg = tu_read_text(path);
    ck_assert_msg(strstr(svg, "guessing (50 %)") && strstr(svg, ">GRU</tspan>"), "table.svg");
    ck_assert_msg(strstr(svg, "rgb(204, 121, 167)"), "the GRU's colour is missing");
    free(svg);
    snprintf(path, sizeof path, "%s/index.md", out);
    char *index = tu_read_text(path);
    ck_assert_msg(strstr(index, "the LSTM (and the GRU) would answer"), "%s", index);
    free(index);
}
END_TEST

/* experiment parallel-decoder --size base: section 6's base Transformer (6 decoder layers, not the
 * default 2) and GRU decoders of width 512; the other experiments refuse the option. */
START_TEST(test_parallel_decoder_base_size) {
    run_result r = run(NULL, "experiment", "parallel-decoder", "--size", "base", "--quick",
                       "--format", "json", NULL);
    expect(&r, "parallel-decoder --size base", 0, NULL);
    ck_assert_msg(strstr(r.out, "\"d_model\": 512") &&
                      strstr(r.out, "\"seq2seq-transformer.sequential_steps\": [6, 6, 6]"),
                  "%s", r.out);
    run_result h = run(NULL, "experiment", "heads", "--size", "base", NULL);
    expect(&h, "heads --size base", 2, "only parallel-decoder", NULL);
    run_result u = run(NULL, "experiment", "parallel-decoder", "--size", "huge", NULL);
    expect(&u, "--size huge", 2, "--size huge", NULL);
    run_free(&r), run_free(&h), run_free(&u);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("cli/small");
    TCase *tc = tcase_create("small");
    tcase_set_timeout(tc, 200);
    tcase_add_test(tc, test_help_cmd_is_cmd_help);
    tcase_add_test(tc, test_version);
    tcase_add_test(tc, test_did_you_mean);
    tcase_add_test(tc, test_train_ranges_match_resume);
    tcase_add_test(tc, test_out_dir_created);
    tcase_add_test(tc, test_usage_lists_every_option);
    tcase_add_test(tc, test_vocab_json_key_is_words);
    tcase_add_test(tc, test_data_stats_name_the_sets);
    tcase_add_test(tc, test_saliency_header_not_cut);
    tcase_add_test(tc, test_eval_table_includes_the_gru);
    tcase_add_test(tc, test_figures_include_the_gru);
    tcase_add_test(tc, test_parallel_decoder_base_size);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return cli_run_suite_in_tmp(suite());
}

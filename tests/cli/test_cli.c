/* test_cli.c -- the attn command as a user meets it: runs the built binary ($ATTN_BINARY) in a
 * child process (fork/exec, stdout/stderr captured to temp files, exit status via waitpid) and
 * checks exit codes (0 ok, 1 runtime error, 2 usage error), that messages name the culprit
 * (option, file, file:line, tensor, word), that predict's logits equal PyTorch's golden batch-1
 * logits and round-trip through %.9g. test_cli_train.c: train; test_cli_consistency.c: the
 * rules every command shares. */
#include "cli_harness.h"

/* ---- help, dispatch, usage errors ----------------------------------------------------------- */

static const char *const commands[] = {"data", "vocab", "info",      "predict", "eval",
                                       "grad", "train", "reproduce", "flops"};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

/* No help line states a default twice: an option's text saying "(default X)" beside the
 * "(lo..hi; default Y)" the option table adds, where X and Y can disagree. */
static void expect_one_default_per_line(const char *what, const char *help) {
    for (const char *line = help; *line;) {
        const char *end = strchr(line, '\n');
        const size_t n = end ? (size_t)(end - line) : strlen(line);
        const char *first = strstr(line, "(default");
        if (first && first < line + n) {
            const char *second = strstr(first + 1, "(default");
            ck_assert_msg(!second || second >= line + n, "%s: a default stated twice: %.*s", what,
                          (int)n, line);
        }
        line += n + (end ? 1 : 0);
    }
}

START_TEST(test_help_every_command) {
    for (size_t i = 0; i < N_COMMANDS; i++) {
        for (int form = 0; form < 2; form++) {
            run_result r = run(NULL, commands[i], form ? "-h" : "--help", NULL);
            char usage[64];
            snprintf(usage, sizeof usage, "Usage: attn %s", commands[i]);
            ck_assert_msg(r.code == 0, "attn %s --help: exit %d: %s", commands[i], r.code, r.err);
            ck_assert_msg(strstr(r.out, usage) != NULL, "attn %s --help: no '%s' on stdout: %s",
                          commands[i], usage, r.out);
            /* complete: the help option itself and the exit codes */
            ck_assert_msg(strstr(r.out, "-h, --help") &&
                              strstr(r.out, "Exit codes: 0 success, "
                                            "1 runtime error, 2 usage error"),
                          "attn %s --help lacks -h or the exit codes: %s", commands[i], r.out);
            expect_one_default_per_line(commands[i], r.out);
            run_free(&r);
        }
    }
    /* the commands that take both families say so in their one help text */
    static const char *const both[] = {"info",  "eval",      "explain", "grad",
                                       "train", "reproduce", "convert", "serve"};
    for (size_t i = 0; i < sizeof both / sizeof both[0]; i++) {
        run_result h = run(NULL, both[i], "--help", NULL);
        ck_assert_msg(h.code == 0 && strstr(h.out, "lstm") && strstr(h.out, "seq2seq-attn"),
                      "attn %s --help does not name both families' models: %s", both[i], h.out);
        run_free(&h);
    }
    static const char *const families[] = {"train", "reproduce"}; /* their decoder halves */
    for (size_t i = 0; i < 2; i++) {
        run_result h = run(NULL, families[i], "--task", "rewrite", "--help", NULL);
        ck_assert_msg(h.code == 0, "attn %s --task rewrite --help: exit %d", families[i], h.code);
        expect_one_default_per_line(families[i], h.out);
        run_free(&h);
    }
    run_result r = run(NULL, "--help", NULL);
    ck_assert_int_eq(r.code, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "Usage: attn COMMAND"));
    for (size_t i = 0; i < N_COMMANDS; i++)
        ck_assert_msg(strstr(r.out, commands[i]) != NULL, "attn --help omits %s", commands[i]);
    run_free(&r);
}
END_TEST

START_TEST(test_no_command_and_unknown_command) {
    run_result r = run(NULL, NULL);
    expect(&r, "attn", 2, "Usage: attn", NULL);
    ck_assert_str_eq(r.out, "");
    run_free(&r);
    r = run(NULL, "bogus", NULL);
    expect(&r, "attn bogus", 2, "'bogus'", NULL);
    ck_assert_str_eq(r.out, "");
    run_free(&r);
}
END_TEST

typedef struct usage_case {
    const char *args[8];
    const char *fragment; /* must appear in stderr */
} usage_case;

START_TEST(test_usage_errors_name_the_option) {
    const char *rnn = golden("rnn");
    const usage_case cases[] = {
        {{"data", "--bogus"}, "'--bogus'"},
        {{"data", "--n"}, "--n"},
        {{"data", "--n", "abc"}, "'abc'"},
        {{"data", "--n", "0"}, "--n"},
        {{"data", "--seed", "-3"}, "--seed"},
        {{"data", "--set", "bogus"}, "'bogus'"},
        {{"vocab", "--bogus"}, "'--bogus'"},
        {{"info"}, "--weights"},
        {{"info", "--weights"}, "--weights"},
        {{"info", "--weights", rnn, "extra"}, "'extra'"},
        {{"predict", "the lecture was good"}, "--weights"},
        {{"predict", "--weights", rnn, "--format", "xml"}, "--format"},
        {{"predict", "--weights", rnn, "--bogus"}, "'--bogus'"},
        {{"eval", "--weights", rnn, "--set", "bogus"}, "'bogus'"},
        {{"eval", "--weights", rnn, "--set", "plain", "--batch", "0"}, "--batch"},
        {{"eval", "--weights", rnn, "--set", "plain", "--n", "x1"}, "'x1'"},
        {{"eval", "--weights", rnn}, "--set"},
        {{"grad", "--weights"}, "--weights"},
        {{"grad", "--bogus"}, "'--bogus'"},
        {{"train", "--model", "bogus"}, "bogus"},
        {{"train", "--model"}, "--model"},
        {{"train", "--model", "rnn", "--lr", "abc"}, "'abc'"},
        {{"train", "--model", "rnn", "--epochs", "two"}, "'two'"},
        {{"train", "--model", "rnn", "--batch", "0"}, "1..1048576"},
        {{"train", "--model", "rnn", "--batch-size", "8"}, "'--batch-size'"},
        {{"grad", "--batch-size", "8"}, "'--batch-size'"},
        {{"reproduce", "--epochs", "0"}, "1..100000"},
        {{"train", "--model", "rnn", "--bogus"}, "'--bogus'"},
        {{"train", "--epochs", "1"}, "--model"},
        {{"train", "--model", "rnn", "--out"}, "--out"},
        {{"reproduce", "--seeds", "x"}, "--seeds"},
        {{"reproduce", "--bogus"}, "'--bogus'"},
        {{"flops", "--model", "rnn", "--T", "81"}, "--T"},
        {{"flops", "--model", "bogus"}, "bogus"},
        {{"flops"}, "--model"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char what[256] = "attn";
        for (int i = 0; cases[c].args[i]; i++) {
            strncat(what, " ", sizeof what - strlen(what) - 1);
            strncat(what, cases[c].args[i], sizeof what - strlen(what) - 1);
        }
        run_result r = run_argv(NULL, (char **)cases[c].args);
        expect(&r, what, 2, cases[c].fragment, NULL);
        ck_assert_msg(r.out[0] == 0, "%s: usage error printed to stdout: %s", what, r.out);
        run_free(&r);
    }
}
END_TEST

START_TEST(test_train_missing_value_names_option) {
    /* A numeric option given last, without its value, must say which option lacks it. */
    static const char *const opts[] = {"--seed",    "--epochs",     "--batch", "--lr",
                                       "--holdout", "--train-size", "--bucket"};
    const char *opt = opts[_i];
    run_result r = run(NULL, "train", "--model", "rnn", opt, NULL);
    char what[64];
    snprintf(what, sizeof what, "attn train --model rnn %s", opt);
    expect(&r, what, 2, opt, NULL);
    run_free(&r);
}
END_TEST

/* ---- runtime errors name the culprit --------------------------------------------------------- */

START_TEST(test_missing_weights_file) {
    const char *path = tmp_path("no-such-weights.json");
    const char *cmds[][6] = {
        {"info", "--weights", path},
        {"predict", "--weights", path, "the lecture was good"},
        {"eval", "--weights", path, "--set", "plain"},
        {"train", "--model", "rnn", "--init", path, "--out"},
    };
    for (size_t c = 0; c < 4; c++) {
        char *args[8] = {0};
        int n = 0;
        for (; n < 6 && cmds[c][n]; n++) args[n] = (char *)cmds[c][n];
        if (c == 3) args[n++] = (char *)tmp_path("never-written.json");
        run_result r = run_argv(NULL, args);
        expect(&r, cmds[c][0], 1, path, NULL);
        run_free(&r);
    }
    ck_assert(!exists(tmp_path("never-written.json")));
}
END_TEST

START_TEST(test_malformed_weights) {
    /* Truncated in the middle of the first tensor's data. */
    size_t n;
    char *text = tu_read_file(golden("rnn"), &n);
    ck_assert_ptr_nonnull(text);
    text[n / 2] = 0;
    const char *trunc = tmp_path("truncated.json");
    write_file(trunc, text);
    free(text);
    run_result r = run(NULL, "info", "--weights", trunc, NULL);
    expect(&r, "truncated weights", 1, trunc, NULL);
    ck_assert_str_eq(r.out, "");
    run_free(&r);
    /* Not JSON at all. */
    const char *garbage = tmp_path("garbage.json");
    write_file(garbage, "{\"format\": \"attn-weights-v1\", \"config\": {\"arch\": ]}\n");
    r = run(NULL, "predict", "--weights", garbage, "the lecture was good", NULL);
    expect(&r, "malformed weights", 1, garbage, NULL);
    ck_assert_str_eq(r.out, "");
    run_free(&r);
    /* Empty file. */
    const char *empty = tmp_path("empty.json");
    write_file(empty, "");
    r = run(NULL, "info", "--weights", empty, NULL);
    expect(&r, "empty weights", 1, empty, NULL);
    run_free(&r);
}
END_TEST

START_TEST(test_wrong_shape_names_tensor) {
    /* Same element count, transposed shape: only the shape check can catch it. */
    const char *path = edit_copy(golden("rnn"), "\"head.weight\":{\"shape\":[1, 32]",
                                 "\"head.weight\":{\"shape\":[32, 1]", "shape.json");
    run_result r = run(NULL, "info", "--weights", path, NULL);
    expect(&r, "transposed head.weight", 1, path, "head.weight", NULL);
    run_free(&r);
    /* A shape whose element count disagrees with the data. */
    path = edit_copy(golden("lstm"), "\"lstm.weight_hh_l0\":{\"shape\":[128, 32]",
                     "\"lstm.weight_hh_l0\":{\"shape\":[128, 31]", "shape2.json");
    r = run(NULL, "predict", "--weights", path, "the lecture was good", NULL);
    expect(&r, "lstm.weight_hh_l0 [128,31]", 1, "lstm.weight_hh_l0", NULL);
    run_free(&r);
}
END_TEST

START_TEST(test_nonfinite_weights_name_tensor) {
    /* A NaN token (not JSON) in the first tensor's data, and a finite JSON number that
     * overflows float32. */
    const char *nan_path = edit_copy(golden("rnn"), "\"data\":[", "\"data\":[NaN,", "nan.json");
    run_result r = run(NULL, "info", "--weights", nan_path, NULL);
    expect(&r, "NaN in weights", 1, nan_path, "embedding.weight", NULL);
    run_free(&r);
    const char *big = edit_copy(golden("rnn"), "\"head.bias\":{\"shape\":[1],\"data\":[",
                                "\"head.bias\":{\"shape\":[1],\"data\":[1e39", "big.json");
    /* The original single value follows 1e39 directly ("1e39-0.123"), so replace it fully. */
    char *text = tu_read_text(big);
    char *at = strstr(text, "[1e39");
    ck_assert_ptr_nonnull(at);
    char *close = strchr(at, ']');
    ck_assert_ptr_nonnull(close);
    memmove(at + 5, close, strlen(close) + 1);
    write_file(big, text);
    free(text);
    r = run(NULL, "info", "--weights", big, NULL);
    expect(&r, "1e39 in head.bias", 1, "head.bias", NULL);
    run_free(&r);
}
END_TEST

START_TEST(test_predict_unknown_word) {
    run_result r = run(NULL, "predict", "--weights", golden("rnn"), "the lecture was good",
                       "the lecture was gret", NULL);
    expect(&r, "unknown word", 1, "'gret'", "position 4", "great", "sentence 2",
           "1 of 2 sentences not classified", NULL);
    /* The first sentence was classified. */
    ck_assert_ptr_nonnull(strstr(r.out, "the lecture was good"));
    run_free(&r);
    r = run("the lecture was good\nthe lectur was good\n", "predict", "--weights", golden("lstm"),
            NULL);
    expect(&r, "unknown word on stdin", 1, "'lectur'", "position 2", "lecture", "line 2", NULL);
    run_free(&r);
}
END_TEST

/* n copies of "the" separated by spaces (caller frees). */
static char *repeat_the(int n) {
    char *s = malloc((size_t)n * 4 + 1);
    ck_assert_ptr_nonnull(s);
    s[0] = 0;
    for (int i = 0; i < n; i++) strcat(s, i ? " the" : "the");
    return s;
}

START_TEST(test_predict_sentence_length_limit) {
    char *s80 = repeat_the(ATTN_MAX_WORDS), *s81 = repeat_the(ATTN_MAX_WORDS + 1);
    run_result r = run(NULL, "predict", "--weights", golden("transformer"), s80, NULL);
    expect(&r, "80 words", 0, NULL);
    run_free(&r);
    r = run(NULL, "predict", "--weights", golden("transformer"), s81, NULL);
    /* the model's own limit, not an internal macro */
    expect(&r, "81 words", 1, "81 words", "transformer model takes at most 80", NULL);
    ck_assert_ptr_null(strstr(r.err, "ATTN_"));
    ck_assert_str_eq(r.out, "");
    run_free(&r);
    /* the recurrent models have no position table: 81 words are fine */
    r = run(NULL, "predict", "--weights", golden("lstm"), s81, NULL);
    expect(&r, "81 words, LSTM", 0, NULL);
    run_free(&r);
    free(s80);
    free(s81);
}
END_TEST

START_TEST(test_eval_bad_tsv_names_line) {
    const char *tsv = tmp_path("bad.tsv");
    write_file(tsv, "1\tthe lecture was good\n0\tthe lecture was bad\n1 the exam was fun\n");
    char where[300];
    snprintf(where, sizeof where, "%s:3", tsv);
    run_result r = run(NULL, "eval", "--weights", golden("rnn"), "--data", tsv, NULL);
    expect(&r, "eval bad TSV", 1, where, NULL);
    run_free(&r);
    const char *tsv2 = tmp_path("badword.tsv");
    write_file(tsv2, "1\tthe lecture was good\n1\tthe lecture was gret\n");
    snprintf(where, sizeof where, "%s:2", tsv2);
    r = run(NULL, "eval", "--weights", golden("rnn"), "--data", tsv2, NULL);
    expect(&r, "eval unknown word in TSV", 1, where, "gret", NULL);
    run_free(&r);
    r = run(NULL, "grad", "--weights", golden("rnn"), "--data", tsv, "--out", tmp_path("grad.json"),
            NULL);
    snprintf(where, sizeof where, "%s:3", tsv);
    expect(&r, "grad bad TSV", 1, where, NULL);
    run_free(&r);
    ck_assert(!exists(tmp_path("grad.json")));
}
END_TEST

/* ---- outputs ----------------------------------------------------------------------------------
 */

/* Parses `attn predict --format json` output: one object per line. Returns the number of
 * lines; logits/labels/probabilities/sentences (each may be NULL) receive up to max. */
static int parse_json_lines(const char *out, int max, float *logits, char **sentences) {
    int n = 0;
    const char *p = out;
    while (*p) {
        const char *nl = strchr(p, '\n');
        ck_assert_msg(nl != NULL, "predict --format json: last line not terminated");
        size_t len = (size_t)(nl - p);
        cJSON *j = cJSON_ParseWithLength(p, len);
        ck_assert_msg(j != NULL, "predict --format json: line %d is not JSON: %.*s", n + 1,
                      (int)len, p);
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "sentence");
        const cJSON *label = cJSON_GetObjectItemCaseSensitive(j, "label");
        const cJSON *prob = cJSON_GetObjectItemCaseSensitive(j, "probability");
        const cJSON *logit = cJSON_GetObjectItemCaseSensitive(j, "logit");
        ck_assert_msg(cJSON_IsString(s) && cJSON_IsNumber(label) && cJSON_IsNumber(prob) &&
                          cJSON_IsNumber(logit),
                      "predict --format json: line %d lacks sentence/label/probability/logit",
                      n + 1);
        float lg = (float)logit->valuedouble;
        ck_assert_int_eq(label->valueint, lg > 0.0f);
        double want_p = 1.0 / (1.0 + exp(-(double)lg));
        ck_assert_msg(fabs(prob->valuedouble - want_p) <= 1e-8,
                      "line %d: probability %.9g, sigmoid(logit) %.9g", n + 1, prob->valuedouble,
                      want_p);
        ck_assert_int_lt(n, max);
        if (logits) logits[n] = lg;
        if (sentences) sentences[n] = strdup(s->valuestring);
        cJSON_Delete(j);
        n++;
        p = nl + 1;
    }
    return n;
}

/* The sentence of a golden item, spelled from its "ids" with this vocabulary (the ids are what
 * the golden's logit was computed from; its "text" names the words of the vocabulary it was
 * made with, which may since have renamed a word in place), followed by '\n'; malloc'd. */
static char *item_sentence(const cJSON *item) {
    const cJSON *ids = cJSON_GetObjectItemCaseSensitive(item, "ids"), *id;
    size_t cap = 2;
    cJSON_ArrayForEach(id, ids) {
        ck_assert_ptr_nonnull(attn_vocab_word(id->valueint));
        cap += strlen(attn_vocab_word(id->valueint)) + 1;
    }
    char *text = malloc(cap);
    ck_assert_ptr_nonnull(text);
    text[0] = '\0';
    cJSON_ArrayForEach(id, ids) {
        if (text[0]) strcat(text, " ");
        strcat(text, attn_vocab_word(id->valueint));
    }
    return strcat(text, "\n");
}

/* predict (json) on every sentence of <name>.logits.json equals PyTorch's batch-1 eval logit
 * (bit for bit on the golden's CPU class, 1e-4 relative elsewhere). */
static void check_predict_golden(const char *name) {
    char rel[128];
    snprintf(rel, sizeof rel, "weights/golden/%s.logits.json", name);
    cJSON *g = tu_load_source_json(rel);
    bool exact = tu_golden_exact(g, rel, "1e-4 relative (absolute floor 1e-5)");
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(g, "items");
    int n = cJSON_GetArraySize(items);
    ck_assert_int_ge(n, 20);
    char **sentences = calloc((size_t)n, sizeof *sentences),
         **texts = calloc((size_t)n, sizeof *texts);
    float *want = malloc((size_t)n * sizeof *want), *got = malloc((size_t)n * sizeof *got);
    ck_assert(sentences && texts && want && got);
    size_t cap = 1;
    const cJSON *it;
    int k = 0;
    cJSON_ArrayForEach(it, items) {
        sentences[k] = item_sentence(it);
        cap += strlen(sentences[k]);
        want[k++] = (float)cJSON_GetObjectItemCaseSensitive(it, "logit")->valuedouble;
    }
    char *input = malloc(cap);
    ck_assert_ptr_nonnull(input);
    input[0] = 0;
    for (k = 0; k < n; k++) strcat(input, sentences[k]);
    char weights[128];
    snprintf(weights, sizeof weights, "weights/golden/%s.weights.json", name);
    run_result r =
        run(input, "predict", "--format", "json", "--weights", tu_source_path(weights), NULL);
    expect(&r, name, 0, NULL);
    ck_assert_int_eq(parse_json_lines(r.out, n, got, texts), n);
    for (k = 0; k < n; k++) {
        sentences[k][strlen(sentences[k]) - 1] = '\0';
        ck_assert_str_eq(texts[k], sentences[k]);
        free(texts[k]);
        free(sentences[k]);
    }
    char what[128];
    snprintf(what, sizeof what, "attn predict %s vs PyTorch batch-1 logits", name);
    tu_assert_golden(what, got, want, (size_t)n, exact, 1e-4, 1e-5);
    run_free(&r);
    free(input);
    free(want);
    free(got);
    free(texts);
    free(sentences);
    cJSON_Delete(g);
}

START_TEST(test_predict_matches_pytorch_goldens) {
    static const char *const names[] = {"rnn", "lstm", "transformer", "transformer_gelu",
                                        "transformer_post"};
    check_predict_golden(names[_i]);
}
END_TEST

START_TEST(test_predict_logit_round_trips) {
    const char *sentences = "the lecture was good\nthe exam was not very clear\n"
                            "the seminar is never great\nthe tutorial felt really useful\n";
    run_result text1 = run(sentences, "predict", "--weights", golden("transformer"), NULL);
    run_result text2 = run(sentences, "predict", "--weights", golden("transformer"), NULL);
    run_result json =
        run(sentences, "predict", "--format", "json", "--weights", golden("transformer"), NULL);
    run_result tsv =
        run(sentences, "predict", "--format", "tsv", "--weights", golden("transformer"), NULL);
    expect(&text1, "predict text", 0, NULL);
    expect(&json, "predict json", 0, NULL);
    expect(&tsv, "predict tsv", 0, NULL);
    ck_assert_str_eq(text1.out, text2.out); /* deterministic */
    float jl[8];
    ck_assert_int_eq(parse_json_lines(json.out, 8, jl, NULL), 4);
    /* Text lines carry "logit=<%.9g>": it must parse back to the JSON logit's float exactly,
     * and printing that float with %.9g must give the same text (no digits lost). */
    const char *p = text1.out, *q = tsv.out;
    for (int i = 0; i < 4; i++) {
        const char *at = strstr(p, "logit=");
        ck_assert_ptr_nonnull(at);
        at += 6;
        char *end;
        float f = strtof(at, &end);
        ck_assert_msg(memcmp(&f, &jl[i], sizeof f) == 0, "line %d: text logit %.9g, json %.9g",
                      i + 1, (double)f, (double)jl[i]);
        char again[32];
        snprintf(again, sizeof again, "%.9g", (double)f);
        ck_assert_msg(strncmp(again, at, (size_t)(end - at)) == 0 &&
                          strlen(again) == (size_t)(end - at),
                      "line %d: logit text '%.*s' is not %%.9g of its value (%s)", i + 1,
                      (int)(end - at), at, again);
        p = strchr(end, '\n');
        ck_assert_ptr_nonnull(p);
        /* tsv: label<TAB>probability<TAB>logit<TAB>sentence */
        const char *t1 = strchr(q, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
        ck_assert_ptr_nonnull(t2);
        float ft = strtof(t2 + 1, NULL);
        ck_assert(memcmp(&ft, &jl[i], sizeof ft) == 0);
        q = strchr(t2, '\n');
        ck_assert_ptr_nonnull(q);
    }
    run_free(&text1);
    run_free(&text2);
    run_free(&json);
    run_free(&tsv);
}
END_TEST

START_TEST(test_info_parameter_totals) {
    static const char *const names[] = {"rnn", "lstm", "transformer"};
    static const long want[] = {3089, 7889, 22689};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(count_params_in_file(golden(names[i])), want[i]);
        run_result r = run(NULL, "info", "--weights", golden(names[i]), NULL);
        expect(&r, names[i], 0, NULL);
        char line[64];
        snprintf(line, sizeof line, "total parameters: %ld\n", want[i]);
        ck_assert_msg(strstr(r.out, line) != NULL, "attn info %s lacks '%s': %s", names[i], line,
                      r.out);
        ck_assert_msg(strstr(r.out, names[i]) != NULL, "attn info omits the arch");
        run_free(&r);
    }
}
END_TEST

static Suite *cli_suite(void) {
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("cli");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_help_every_command);
    tcase_add_test(tc, test_no_command_and_unknown_command);
    tcase_add_test(tc, test_usage_errors_name_the_option);
    tcase_add_loop_test(tc, test_train_missing_value_names_option, 0, 7);
    tcase_add_test(tc, test_missing_weights_file);
    tcase_add_test(tc, test_malformed_weights);
    tcase_add_test(tc, test_wrong_shape_names_tensor);
    tcase_add_test(tc, test_nonfinite_weights_name_tensor);
    tcase_add_test(tc, test_predict_unknown_word);
    tcase_add_test(tc, test_predict_sentence_length_limit);
    tcase_add_test(tc, test_eval_bad_tsv_names_line);
    tcase_add_loop_test(tc, test_predict_matches_pytorch_goldens, 0, 5);
    tcase_add_test(tc, test_predict_logit_round_trips);
    tcase_add_test(tc, test_info_parameter_totals);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return cli_run_suite_in_tmp(cli_suite());
}

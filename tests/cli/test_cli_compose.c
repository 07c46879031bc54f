/* test_cli_compose.c -- the compose task end to end: attn data --task compose (targets are attn
 * data's sentences, sources their polarity and subject), attn train --task compose (a short
 * run; the weights record the task), attn generate on a compose model (sources read as
 * '<polarity> <subject>', a judgement line per sample), attn reproduce --task compose, and the
 * errors. */
#include "cli_harness.h"

#include <math.h>

/* `attn train args... NULL`; in the sanitizer build (tu_small) with a tiny seq2seq-transformer
 * (width 8, 1 head, feed-forward 16, one layer each side): the same command, training,
 * checkpoint and report code on a fraction of the arithmetic. */
static run_result train_run(const char *first, ...) {
    static const char *const tiny[] = {"--embed-dim", "8", "--heads",      "1", "--ffn", "16",
                                       "--layers",    "1", "--dec-layers", "1"};
    char *args[64];
    int n = 0;
    args[n++] = "train";
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a; a = va_arg(ap, const char *)) {
        ck_assert(n < 50);
        args[n++] = (char *)a;
    }
    va_end(ap);
    for (size_t i = 0; tu_small() && i < sizeof tiny / sizeof tiny[0]; i++)
        args[n++] = (char *)tiny[i];
    args[n] = NULL;
    return run_argv(NULL, args);
}

START_TEST(test_data_compose_targets_are_data) {
    run_result a =
        run(NULL, "data", "--task", "compose", "--set", "fill4", "--n", "40", "--seed", "4", NULL);
    run_result b = run(NULL, "data", "--set", "fill4", "--n", "40", "--seed", "4", NULL);
    expect(&a, "data --task compose", 0, NULL);
    expect(&b, "data", 0, NULL);
    char *pa = a.out, *pb = b.out;
    int lines = 0;
    while (*pa && *pb) {
        char *ea = strchr(pa, '\n'), *eb = strchr(pb, '\n');
        ck_assert(ea && eb);
        char *tab_a = strchr(pa, '\t'), *tab_b = strchr(pb, '\t');
        ck_assert(tab_a && tab_a < ea && tab_b && tab_b < eb);
        /* compose: source<TAB>sentence; data: label<TAB>sentence */
        ck_assert_int_eq((int)(ea - tab_a), (int)(eb - tab_b));
        ck_assert(strncmp(tab_a, tab_b, (size_t)(ea - tab_a)) == 0);
        ck_assert(strncmp(pa, pb[0] == '1' ? "positive " : "negative ", 9) == 0);
        /* the subject is the sentence's first subject word "the <subject> " */
        char subj[32];
        snprintf(subj, sizeof subj, " the %.*s ", (int)(tab_a - pa - 9), pa + 9);
        char line[1024];
        snprintf(line, sizeof line, " %.*s", (int)(ea - tab_a - 1), tab_a + 1);
        ck_assert_msg(strstr(line, subj), "'%s' in '%s'", subj, line);
        pa = ea + 1, pb = eb + 1, lines++;
    }
    ck_assert_int_eq(lines, 40);
    run_free(&a), run_free(&b);
}
END_TEST

START_TEST(test_train_generate_reproduce) {
    const char *w = tmp_path("compose.json");
    run_result t = train_run("--model", "seq2seq-transformer", "--task", "compose", "--epochs", "1",
                             "--train-size", "300", "--holdout", "50", "--out", w, NULL);
    expect(&t, "train compose", 0, "held-out loss", NULL);
    ck_assert_msg(strstr(t.out, "fill8      loss per target token ") &&
                      strstr(t.out, "samples    grammatical ") && strstr(t.out, "(400 samples)"),
                  "%s", t.out);
    ck_assert_msg(strstr(t.out, "(1000 pairs)") && strstr(t.out, "1 epoch\n"), "%s", t.out);
    /* --test-size reaches the compose report: its test sets' size, 0 none at all */
    run_result t8 = train_run("--model", "seq2seq-transformer", "--task", "compose", "--epochs",
                              "1", "--train-size", "16", "--holdout", "0", "--test-size", "8",
                              "--out", tmp_path("c8.json"), NULL);
    expect(&t8, "train compose --test-size 8", 0, NULL);
    ck_assert_msg(strstr(t8.out, "fill8      loss per target token ") &&
                      strstr(t8.out, "(8 pairs)") && !strstr(t8.out, "(1000 pairs)"),
                  "%s", t8.out);
    run_result t0 = train_run("--model", "seq2seq-transformer", "--task", "compose", "--epochs",
                              "1", "--train-size", "16", "--holdout", "0", "--test-size", "0",
                              "--out", tmp_path("c0.json"), NULL);
    expect(&t0, "train compose --test-size 0", 0, NULL);
    ck_assert_msg(!strstr(t0.out, "loss per target token") && !strstr(t0.out, "samples "), "%s",
                  t0.out);
    run_free(&t8), run_free(&t0);
    char *text = tu_read_text(w);
    ck_assert_ptr_nonnull(text);
    ck_assert_ptr_nonnull(strstr(text, "\"task\": \"compose\""));
    free(text);
    run_result g = run(NULL, "generate", "--weights", w, "--samples", "3", "--seed", "2",
                       "positive exam", NULL);
    expect(&g, "generate compose", 0, NULL);
    int lines = 0, judged = 0;
    for (char *p = g.out; (p = strchr(p, '\n')) != NULL; p++) lines++;
    for (char *p = g.out; (p = strstr(p, "\n  judged: ")) != NULL; p++) judged++;
    ck_assert_msg(lines == 6 && judged == 3, "%s", g.out);
    run_result j = run("negative textbook\n", "generate", "--weights", w, "--format", "json", NULL);
    expect(&j, "generate compose json", 0, NULL);
    cJSON *doc = cJSON_Parse(j.out);
    ck_assert_ptr_nonnull(doc);
    const cJSON *v = cJSON_GetObjectItem(doc, "judged");
    ck_assert(cJSON_IsBool(cJSON_GetObjectItem(v, "grammatical")));
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(v, "grammatical")) ==
              cJSON_IsString(cJSON_GetObjectItem(v, "polarity")));
    cJSON_Delete(doc);
    run_result in = run(NULL, "info", "--weights", w, NULL);
    expect(&in, "info on compose weights", 0, NULL);
    ck_assert_msg(strstr(in.out, "task         compose\n") && strstr(in.out, "max_tgt_len  61\n"),
                  "%s", in.out);
    run_free(&in);
    run_result e1 = run(NULL, "generate", "--weights", w, "the exam was good", NULL);
    expect(&e1, "a review given to a compose model", 1, "sentence 1", "4 words",
           "<positive|negative> <subject>", NULL);
    run_result e2 = run(NULL, "generate", "--weights", w, "positive coffee", NULL);
    expect(&e2, "not a subject", 1, "'coffee' is not a subject noun", NULL);
    run_result r = run(NULL, "reproduce", "--task", "compose", "--epochs", "1", "--train-size",
                       "100", "--out", tmp_path("rep"), "--classifier", golden("lstm"), NULL);
    expect(&r, "reproduce --task compose", 0, "seed 1", NULL);
    ck_assert_msg(strstr(r.out, "samples grammatical ") &&
                      strstr(r.out, "with the polarity asked") &&
                      strstr(r.out, "loss per target token, fill8") &&
                      strstr(r.out, "classifier reads the polarity asked ") &&
                      strstr(r.out, "  classifier agrees with the parse "),
                  "%s", r.out);
    run_result e3 = run(NULL, "reproduce", "--task", "compose", "--classifier", w, NULL);
    expect(&e3, "seq2seq weights as the classifier", 1, "compose.json", NULL);
    run_free(&e3);
    ck_assert(exists(tmp_path("rep/compose-seq2seq-transformer-seed1.json")));
    run_free(&t), run_free(&g), run_free(&j), run_free(&e1), run_free(&e2), run_free(&r);
}
END_TEST

/* reproduce --task compose in -j workers: the same table as one worker; --holdout and
 * --test-size reach the runs; the options of the other tasks are refused before anything is
 * written. */
START_TEST(test_reproduce_compose_workers_and_options) {
    const char *base[] = {"reproduce", "--task",       "compose", "--seeds",   "2", "--epochs",
                          "1",         "--train-size", "32",      "--holdout", "8", "--classifier",
                          NULL};
    char *args[32];
    run_result r[3];
    const char *tail[3][4] = {{"--test-size", "8", "-j", "1"},
                              {"--test-size", "8", "-j", "2"},
                              {"--test-size", "16", "-j", "2"}};
    for (int k = 0; k < 3; k++) {
        int n = 0;
        for (; base[n]; n++) args[n] = (char *)base[n];
        args[n++] = (char *)golden("lstm");
        for (int i = 0; i < 4; i++) args[n++] = (char *)tail[k][i];
        args[n] = NULL;
        r[k] = run_argv(NULL, args);
        expect(&r[k], "reproduce --task compose", 0, "seed 2", NULL);
    }
    ck_assert_msg(strstr(r[0].out, "Compose (2 seeds)") && strstr(r[0].out, "classifier reads"),
                  "%s", r[0].out);
    ck_assert_msg(strcmp(r[0].out, r[1].out) == 0, "-j 1:\n%s\n-j 2:\n%s", r[0].out, r[1].out);
    const char *l8 = strstr(r[1].out, "loss per target token, plain");
    const char *l16 = strstr(r[2].out, "loss per target token, plain");
    ck_assert(l8 && l16);
    ck_assert_msg(strncmp(l8, l16, strcspn(l8, "\n")) != 0,
                  "--test-size 8 and 16 give the same loss: %.60s", l8);
    static const char *const refused[][2] = {{"--eval-batch", "4"}, {"--threads", "2"},
                                             {"--size", "base"},    {"--norm", "post"},
                                             {"--models", "rnn"},   {"--seeds", "21"}};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        run_result e = run(NULL, "reproduce", "--task", "compose", refused[i][0], refused[i][1],
                           "--out", tmp_path("never"), NULL);
        expect(&e, refused[i][0], 2, refused[i][0], NULL);
        run_free(&e);
    }
    run_result c =
        run(NULL, "reproduce", "--classifier", golden("lstm"), "--out", tmp_path("never"), NULL);
    expect(&c, "--classifier without --task", 2, "--classifier applies to --task compose", NULL);
    run_result h = run(NULL, "reproduce", "--holdout", "5", "--out", tmp_path("never"), NULL);
    expect(&h, "--holdout without --task", 2, "--holdout", NULL);
    run_result w = run(NULL, "reproduce", "--task", "rewrite", "--eval-batch", "2", "--out",
                       tmp_path("never"), NULL);
    expect(&w, "--eval-batch with --task rewrite", 2, "--eval-batch", NULL);
    ck_assert_msg(!exists(tmp_path("never")), "a refused reproduce made its --out");
    run_free(&c), run_free(&h), run_free(&w);
    for (int k = 0; k < 3; k++) run_free(&r[k]);
}
END_TEST

/* The rows of `attn eval` after the set name column: the numbers. */
static const char *numbers_of_row(const char *out) {
    const char *row = strchr(out, '\n'); /* past the header */
    ck_assert_ptr_nonnull(row);
    row++;
    while (*row && *row != ' ') row++;
    while (*row == ' ') row++;
    return row;
}

/* attn eval --data on the pairs attn data --task prints scores them as --set does (on a short
 * run's weights; in the sanitizer build (tu_small) on the committed seed-1 weights instead, the
 * same eval code without a training run). */
START_TEST(test_eval_data_equals_eval_set) {
    for (int t = 0; t < 2; t++) {
        const char *task = t ? "compose" : "rewrite", *w = tmp_path(t ? "c.json" : "r.json");
        run_result tr = {0, NULL, NULL};
        if (tu_small())
            w = tu_source_path(t ? "weights/compose-seq2seq-transformer-seed1.json"
                                 : "weights/seq2seq-transformer-seed1.json");
        else
            tr = run(NULL, "train", "--model", "seq2seq-transformer", "--task", task, "--epochs",
                     "1", "--train-size", "200", "--holdout", "20", "--quiet", "--out", w, NULL);
        expect(&tr, "train", 0, NULL);
        run_result d = run(NULL, "data", "--task", task, "--set", "fill4", "--n", "30", NULL);
        expect(&d, "data", 0, NULL);
        const char *file = tmp_path("pairs.tsv");
        write_file(file, d.out);
        run_result a = run(NULL, "eval", "--weights", w, "--data", file, NULL);
        run_result b = run(NULL, "eval", "--weights", w, "--set", "fill4", "--n", "30", NULL);
        expect(&a, "eval --data", 0, NULL);
        expect(&b, "eval --set", 0, NULL);
        ck_assert_msg(strstr(a.out, "/pairs.tsv     30  "), "%s", a.out);
        ck_assert_str_eq(numbers_of_row(a.out), numbers_of_row(b.out));
        ck_assert_int_eq(strstr(a.out, "loss per token") != NULL, t == 1);
        write_file(file, t ? "positive exam\tthe exam was good\nnegative\tthe exam was bad\n"
                           : "the exam was good\tpositive exam good\nthe exam\tpositive exam x\n");
        run_result e = run(NULL, "eval", "--weights", w, "--data", file, NULL);
        expect(&e, "eval --data, a bad line", 1, "pairs.tsv:2: ", NULL);
        ck_assert_str_eq(e.out, "");
        run_free(&tr), run_free(&d), run_free(&a), run_free(&b), run_free(&e);
    }
}
END_TEST

/* attn grad on a compose model reads its sources as the task does ('<polarity> <subject>'), and
 * its loss is the teacher-forced loss per target token attn eval --data prints (4 decimals). */
START_TEST(test_grad_reads_compose_sources) {
    const char *w = tu_source_path("weights/compose-seq2seq-transformer-seed1.json");
    run_result d = run(NULL, "data", "--task", "compose", "--set", "plain", "--n", "6", NULL);
    expect(&d, "data", 0, NULL);
    const char *file = tmp_path("grad-pairs.tsv");
    write_file(file, d.out);
    run_result g = run(NULL, "grad", "--weights", w, "--data", file, "--out",
                       tmp_path("grad-compose.json"), NULL);
    run_result e = run(NULL, "eval", "--weights", w, "--data", file, NULL);
    expect(&g, "grad on compose pairs", 0, NULL);
    expect(&e, "eval on compose pairs", 0, NULL);
    double loss = 0.0, eval_loss = 0.0, exact = 0.0, tok = 0.0;
    int n = 0;
    ck_assert_int_eq(sscanf(g.out, "loss %lf", &loss), 1);
    const char *row = strstr(e.out, "grad-pairs.tsv");
    ck_assert_ptr_nonnull(row);
    ck_assert_int_eq(
        sscanf(row + strlen("grad-pairs.tsv"), "%d %lf %lf %lf", &n, &exact, &tok, &eval_loss), 4);
    ck_assert_int_eq(n, 6);
    ck_assert_msg(fabs(loss - eval_loss) <= 0.00005 + 1e-9, "grad loss %.9g, eval %.4f", loss,
                  eval_loss);
    ck_assert(exists(tmp_path("grad-compose.json")));
    run_free(&d), run_free(&g), run_free(&e);
}
END_TEST

/* attn explain on a compose model reads '<polarity> <subject>' as generate does: the output it
 * explains is the one generate --no-cache writes. */
START_TEST(test_explain_reads_compose_sources) {
    const char *w = tu_source_path("weights/compose-seq2seq-transformer-seed1.json");
    run_result g = run(NULL, "generate", "--weights", w, "--no-cache", "negative exam", NULL);
    run_result e = run(NULL, "explain", "--weights", w, "--format", "json", "--no-saliency",
                       "negative exam", NULL);
    expect(&g, "generate", 0, NULL);
    expect(&e, "explain", 0, NULL);
    char want[512];
    snprintf(want, sizeof want, "\"output\": \"%.*s\"", (int)strcspn(g.out, "\n"), g.out);
    ck_assert_msg(strstr(e.out, want), "%s not in %s", want, e.out);
    ck_assert_ptr_nonnull(strstr(e.out, "\"tokens\": [\"negative\", \"exam\"]"));
    run_free(&g), run_free(&e);
}
END_TEST

/* --checkpoint, --resume and --log: a run stopped after epoch 1 (its log holding a stale line
 * for epoch 2, as after a kill) and resumed to 3 epochs writes the uninterrupted run's weights
 * and checkpoint byte for byte, and its log has one line per epoch. */
START_TEST(test_checkpoint_resume_log) {
    /* the sanitizer build (tu_small): the compose task only (the same checkpoint code) */
    for (int t = tu_small() ? 1 : 0; t < 2; t++) {
        const char *task = t ? "compose" : "rewrite";
        char full[256], part[256], ck_full[256], ck[256], log[256], out_res[256];
        snprintf(full, sizeof full, "%s", tmp_path("full.json"));
        snprintf(part, sizeof part, "%s", tmp_path("part.json"));
        snprintf(ck_full, sizeof ck_full, "%s", tmp_path("ck_full.json"));
        snprintf(ck, sizeof ck, "%s", tmp_path("ck.json"));
        snprintf(log, sizeof log, "%s", tmp_path("log.jsonl"));
        snprintf(out_res, sizeof out_res, "%s", tmp_path("res.json"));
        run_result a = train_run("--model", "seq2seq-transformer", "--task", task, "--epochs", "3",
                                 "--train-size", "150", "--holdout", "20", "--quiet", "--out", full,
                                 "--checkpoint", ck_full, NULL);
        expect(&a, "uninterrupted", 0, NULL);
        run_result b = train_run("--model", "seq2seq-transformer", "--task", task, "--epochs", "1",
                                 "--train-size", "150", "--holdout", "20", "--quiet", "--out", part,
                                 "--checkpoint", ck, "--log", log, NULL);
        expect(&b, "first epoch", 0, NULL);
        char *first = tu_read_text(log);
        ck_assert_ptr_nonnull(first);
        char stale[2048];
        snprintf(stale, sizeof stale, "%s{\"epoch\": 2, \"stale\": true}\n", first);
        write_file(log, stale);
        free(first);
        run_result c = run(NULL, "train", "--resume", ck, "--epochs", "3", "--quiet", "--out",
                           out_res, "--checkpoint", ck, "--log", log, NULL);
        expect(&c, "resumed", 0, NULL);
        ck_assert(files_equal(full, out_res));
        ck_assert(files_equal(ck_full, ck));
        ck_assert(!files_equal(full, part));
        char *text = tu_read_text(log);
        ck_assert_ptr_nonnull(text);
        ck_assert_msg(strstr(text, "{\"epoch\": 1, ") &&
                          strstr(text, "{\"epoch\": 2, \"epochs\": 3") &&
                          strstr(text, "{\"epoch\": 3, ") && !strstr(text, "stale"),
                      "%s", text);
        int lines = 0;
        for (char *p = text; (p = strchr(p, '\n')) != NULL; p++) lines++;
        ck_assert_int_eq(lines, 3);
        free(text);
        run_result e1 = run(NULL, "train", "--resume", ck, "--seed", "2", NULL);
        expect(&e1, "an option with --resume", 2, "--seed does not go with --resume", NULL);
        run_result e2 = run(NULL, "train", "--resume", ck, "--epochs", "2", NULL);
        expect(&e2, "fewer epochs", 2, "has done 3 epochs", NULL);
        write_file(ck, "{\"format\": \"attn-seq2seq-checkpoint-v1\"}");
        run_result e3 = run(NULL, "train", "--resume", ck, NULL);
        expect(&e3, "a broken checkpoint", 1, "ck.json", "does not end with its checksum", NULL);
        run_free(&a), run_free(&b), run_free(&c), run_free(&e1), run_free(&e2), run_free(&e3);
    }
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("cli/compose");
    TCase *tc = tcase_create("compose");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_data_compose_targets_are_data);
    tcase_add_test(tc, test_train_generate_reproduce);
    tcase_add_test(tc, test_reproduce_compose_workers_and_options);
    tcase_add_test(tc, test_eval_data_equals_eval_set);
    tcase_add_test(tc, test_grad_reads_compose_sources);
    tcase_add_test(tc, test_explain_reads_compose_sources);
    tcase_add_test(tc, test_checkpoint_resume_log);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return cli_run_suite_in_tmp(suite());
}

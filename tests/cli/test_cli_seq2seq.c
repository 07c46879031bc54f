/* test_cli_seq2seq.c -- the seq2seq commands end to end: attn data --task rewrite (sources are
 * attn data's sentences, byte for byte), attn train --model seq2seq-transformer learns the task
 * (a short run), attn generate (text, json, --no-cache, --teacher) and the errors: a classifier's
 * weights given to generate and seq2seq weights given to predict, unknown words, bad options;
 * rope and alibi models train and generate (cached and recomputed alike). */
#include "cli_harness.h"

START_TEST(test_data_rewrite_sources_are_data) {
    run_result a =
        run(NULL, "data", "--task", "rewrite", "--set", "fill4", "--n", "50", "--seed", "4", NULL);
    run_result b = run(NULL, "data", "--set", "fill4", "--n", "50", "--seed", "4", NULL);
    expect(&a, "data --task rewrite", 0, NULL);
    expect(&b, "data", 0, NULL);
    char *pa = a.out, *pb = b.out;
    int lines = 0;
    while (*pa && *pb) {
        char *ea = strchr(pa, '\n'), *eb = strchr(pb, '\n');
        ck_assert(ea && eb);
        char *tab_a = strchr(pa, '\t'), *tab_b = strchr(pb, '\t');
        ck_assert(tab_a && tab_a < ea && tab_b && tab_b < eb);
        /* rewrite: source<TAB>target; data: label<TAB>sentence */
        ck_assert_int_eq((int)(tab_a - pa), (int)(eb - tab_b - 1));
        ck_assert(strncmp(pa, tab_b + 1, (size_t)(tab_a - pa)) == 0);
        const bool positive = tab_b[-1] == '1';
        ck_assert(strncmp(tab_a + 1, positive ? "positive " : "negative ", 9) == 0);
        pa = ea + 1, pb = eb + 1, lines++;
    }
    ck_assert_int_eq(lines, 50);
    run_result c = run(NULL, "data", "--task", "summarise", NULL);
    expect(&c, "unknown task", 2, "--task", "rewrite or compose", NULL);
    run_free(&a), run_free(&b), run_free(&c);
}
END_TEST

START_TEST(test_train_generate_and_errors) {
    const char *w = tmp_path("s2s.json");
    run_result t = run(NULL, "train", "--model", "seq2seq-transformer", "--task", "rewrite",
                       "--epochs", "4", "--train-size", "4000", "--holdout", "100", "--lr", "0.003",
                       "--quiet", "--out", w, NULL);
    expect(&t, "train seq2seq", 0, NULL);
    ck_assert_ptr_nonnull(strstr(t.out, "plain      exact match"));
    /* a short run already gets most plain sentences right */
    const char *p = strstr(t.out, "plain      exact match ");
    ck_assert_ptr_nonnull(p);
    ck_assert_msg(atof(p + strlen("plain      exact match ")) > 0.9, "%s", t.out);
    run_result g = run(NULL, "generate", "--weights", w, "the exam was not very clear", NULL);
    expect(&g, "generate", 0, NULL);
    ck_assert_str_eq(g.out, "negative exam not clear\n");
    ck_assert_msg(!strstr(g.err, "note:"), "a sentence of the task gets no note: %s", g.err);
    /* "food" is only ever a distractor's noun: off the task, said on stderr, still answered */
    run_result off = run(NULL, "generate", "--weights", w, "the food was not good", NULL);
    expect(&off, "generate off the task", 0, NULL);
    ck_assert_msg(strstr(off.err, "sentence 1: note: not a sentence of the grammar") &&
                      strstr(off.err, "rewrite task only"),
                  "%s", off.err);
    ck_assert_int_eq((int)strlen(off.out) > 0, 1);
    run_free(&off);
    run_result n = run("the exam was not very clear\n", "generate", "--weights", w, "--no-cache",
                       "--format", "json", NULL);
    expect(&n, "generate --no-cache json", 0, NULL);
    cJSON *j = cJSON_Parse(n.out);
    ck_assert_ptr_nonnull(j);
    ck_assert_str_eq(cJSON_GetObjectItem(j, "output")->valuestring, "negative exam not clear");
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "steps")), 5); /* 4 words + EOS */
    cJSON_Delete(j);
    run_result f =
        run("the exam was fun\tpositive exam fun\n", "generate", "--weights", w, "--teacher", NULL);
    expect(&f, "generate --teacher", 0, NULL);
    j = cJSON_Parse(f.out);
    ck_assert_ptr_nonnull(j);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "logits")), 4); /* BOS + 3 */
    cJSON_Delete(j);
    run_result ev = run(NULL, "eval", "--weights", w, "--set", "plain", "--n", "100", NULL);
    expect(&ev, "eval seq2seq", 0, NULL);
    ck_assert_msg(strstr(ev.out, "plain         100  ") && strstr(ev.out, "1-10 "), "%s", ev.out);
    run_result in = run(NULL, "info", "--weights", w, NULL);
    expect(&in, "info seq2seq", 0, NULL);
    ck_assert_msg(
        strstr(in.out, "seq2seq-transformer") &&
            strstr(in.out, "transformer.decoder.layers.1.multihead_attn.in_proj_weight") &&
            strstr(in.out, "total parameters: "),
        "%s", in.out);
    run_free(&ev), run_free(&in);
    /* errors name the file, the word, the line */
    run_result e1 = run(NULL, "generate", "--weights", golden("lstm"), "the exam", NULL);
    expect(&e1, "classifier weights to generate", 1, "holds a classifier", "attn predict", NULL);
    run_result e2 = run(NULL, "predict", "--weights", w, "the exam", NULL);
    expect(&e2, "seq2seq weights to predict", 1, "s2s.json", "seq2seq", "attn generate", NULL);
    run_result e3 = run(NULL, "generate", "--weights", w, "the pizza was good", NULL);
    expect(&e3, "unknown word", 1, "pizza", "sentence 1", NULL);
    run_result e4 = run(NULL, "generate", "the exam", NULL);
    expect(&e4, "no weights", 2, "--weights", NULL);
    run_result e5 = run("the exam was good\n", "generate", "--weights", w, "--teacher", NULL);
    expect(&e5, "teacher without a target", 1, "line 1", "source<TAB>target", NULL);
    run_result e6 = run(NULL, "train", "--model", "seq2seq-transformer", "--pos", "xpos", NULL);
    expect(&e6, "unknown pos for seq2seq", 2, "--pos", "rope or alibi", "xpos", NULL);
    /* the bound a classifier's --lr has (and a checkpoint's reader), before any work */
    run_result e7 = run(NULL, "train", "--model", "seq2seq-gru", "--task", "rewrite", "--lr",
                        "1e30", "--out", tmp_path("never.json"), NULL);
    expect(&e7, "absurd lr for seq2seq", 2, "--lr", "up to 1000", "1e+30", NULL);
    ck_assert_int_eq(access(tmp_path("never.json"), F_OK), -1);
    run_free(&e7);
    /* --test-size 0: no test set decoded at the end (minutes at the base size), weights written */
    run_result ts = run(NULL, "train", "--model", "seq2seq-gru", "--task", "rewrite",
                        "--train-size", "16", "--holdout", "0", "--epochs", "1", "--test-size", "0",
                        "--out", tmp_path("nt.json"), NULL);
    expect(&ts, "train --test-size 0", 0, NULL);
    ck_assert_msg(!strstr(ts.out, "exact match") && strstr(ts.out, "wrote") &&
                      strstr(ts.err, "(no held-out set)"),
                  "%s%s", ts.out, ts.err);
    run_free(&ts);
    run_free(&t), run_free(&g), run_free(&n), run_free(&f), run_free(&e1), run_free(&e2);
    run_free(&e3), run_free(&e4), run_free(&e5), run_free(&e6);
}
END_TEST

/* rope and alibi (docs/decoder.md): a tiny run trains, the weights file records the scheme and
 * holds no position tensor, generate gives the same words with the KV cache and recomputing;
 * rope with an odd head size is refused naming the sizes. */
START_TEST(test_train_rope_alibi) {
    static const char *const pos[2] = {"rope", "alibi"};
    const char *sources = "the exam was not very clear\nhonestly the lecture was helpful\n"
                          "the tutorial is boring in my opinion\nthe seminar was not fun\n";
    const char *w = tmp_path("s2s-pos.json"), *log = tmp_path("s2s-pos.jsonl");
    run_result t = run(NULL, "train", "--model", "seq2seq-transformer", "--task", "rewrite",
                       "--pos", pos[_i], "--epochs", "2", "--train-size", "400", "--holdout", "10",
                       "--embed-dim", "16", "--ffn", "32", "--layers", "1", "--dec-layers", "1",
                       "--lr", "0.003", "--quiet", "--log", log, "--out", w, NULL);
    expect(&t, pos[_i], 0, NULL);
    /* it learns: the second epoch's training loss is below the first's */
    char *epochs = tu_read_text(log);
    ck_assert_ptr_nonnull(epochs);
    const char *l1 = strstr(epochs, "\"loss\": "), *l2 = l1 ? strstr(l1 + 1, "\"loss\": ") : NULL;
    ck_assert_msg(l1 && l2 && atof(l2 + 8) < atof(l1 + 8), "%s", epochs);
    free(epochs);
    char *text = tu_read_text(w), want[32];
    ck_assert_ptr_nonnull(text);
    snprintf(want, sizeof want, "\"pos\": \"%s\"", pos[_i]);
    ck_assert_msg(strstr(text, want) && !strstr(text, "pos_embedding"), "%.300s", text);
    free(text);
    run_result c = run(sources, "generate", "--weights", w, "--format", "json", NULL);
    run_result n = run(sources, "generate", "--weights", w, "--format", "json", "--no-cache", NULL);
    expect(&c, "generate cached", 0, NULL);
    expect(&n, "generate --no-cache", 0, NULL);
    int lines = 0;
    for (const char *a = c.out, *b = n.out; a && b; lines++) {
        cJSON *ja = cJSON_Parse(a), *jb = cJSON_Parse(b);
        ck_assert(ja && jb);
        ck_assert_str_eq(cJSON_GetObjectItem(ja, "output")->valuestring,
                         cJSON_GetObjectItem(jb, "output")->valuestring);
        cJSON_Delete(ja), cJSON_Delete(jb);
        a = strchr(a, '\n'), b = strchr(b, '\n');
        a = a && a[1] ? a + 1 : NULL, b = b && b[1] ? b + 1 : NULL;
    }
    ck_assert_int_eq(lines, 4);
    run_result e = run(NULL, "train", "--model", "seq2seq-transformer", "--pos", "rope",
                       "--embed-dim", "30", "--heads", "2", "--epochs", "1", NULL);
    expect(&e, "rope with head size 15", 2, "even head size", "15", NULL);
    run_free(&t), run_free(&c), run_free(&n), run_free(&e);
}
END_TEST

START_TEST(test_reproduce_rewrite) {
    run_result r = run(NULL, "reproduce", "--task", "rewrite", "--seeds", "1", "--epochs", "1",
                       "--train-size", "300", "--out", tmp_path("rep"), NULL);
    expect(&r, "reproduce --task rewrite", 0, "seed 1", NULL);
    ck_assert_msg(strstr(r.out, "fill8 ") && strstr(r.out, "41-50 words") &&
                      strstr(r.out, "parameters ") && strstr(r.out, "seq2seq-gru") &&
                      strstr(r.out, "seq2seq-attn"),
                  "%s", r.out);
    ck_assert(exists(tmp_path("rep/seq2seq-transformer-seed1.json")));
    ck_assert(exists(tmp_path("rep/seq2seq-gru-seed1.json")));
    ck_assert(exists(tmp_path("rep/seq2seq-attn-seed1.json")));
    run_result bad = run(NULL, "reproduce", "--task", "summarise", NULL);
    expect(&bad, "unknown task", 2, "--task", NULL);
    /* --norm post: the seq2seq-transformer's file says so (info), the default stays pre */
    run_result p = run(NULL, "reproduce", "--task", "rewrite", "--models", "seq2seq-transformer",
                       "--norm", "post", "--seeds", "1", "--epochs", "1", "--train-size", "8",
                       "--holdout", "0", "--test-size", "1", "--out", tmp_path("rep-post"), NULL);
    expect(&p, "reproduce --norm post", 0, "seed 1", NULL);
    ck_assert_msg(strncmp(p.out, "Test set (1 pairs each)", 23) == 0,
                  "the table's header does "
                  "not say --test-size: %s",
                  p.out);
    ck_assert_msg(strncmp(r.out, "Test set (1,000 pairs each)", 27) == 0, "%s", r.out);
    run_result ip =
        run(NULL, "info", "--weights", tmp_path("rep-post/seq2seq-transformer-seed1.json"), NULL);
    expect(&ip, "info of the post-norm run", 0, NULL);
    const char *ln = strstr(ip.out, "\nnorm ");
    ck_assert_msg(ln && strncmp(ln + strspn(ln + 5, " ") + 5, "post", 4) == 0, "%s", ip.out);
    run_result ir =
        run(NULL, "info", "--weights", tmp_path("rep/seq2seq-transformer-seed1.json"), NULL);
    expect(&ir, "info of the default run", 0, NULL);
    ln = strstr(ir.out, "\nnorm ");
    ck_assert_msg(ln && strncmp(ln + strspn(ln + 5, " ") + 5, "pre", 3) == 0, "%s", ir.out);
    run_result bn = run(NULL, "reproduce", "--task", "rewrite", "--norm", "sideways", NULL);
    expect(&bn, "--norm sideways", 2, "--norm sideways", "pre or post", NULL);
    run_result tw =
        run(NULL, "reproduce", "--task", "rewrite", "--models", "seq2seq-gru,seq2seq-gru", NULL);
    expect(&tw, "a model named twice", 2, "\"seq2seq-gru\" given twice", NULL);
    run_free(&r), run_free(&bad), run_free(&p), run_free(&ip), run_free(&ir), run_free(&bn);
    run_free(&tw);
}
END_TEST

/* Without --out a seq2seq run writes where a classifier's does, under the git-ignored runs/
 * of the working directory, named as reproduce names them (the compose task's with its
 * prefix); a second run holding the same file is refused before it trains. */
START_TEST(test_train_default_out) {
    run_result r = run(NULL, "train", "--model", "seq2seq-gru", "--task", "rewrite", "--epochs",
                       "1", "--train-size", "8", "--holdout", "0", "--test-size", "0",
                       "--embed-dim", "8", "--hidden", "8", "--seed", "7", NULL);
    expect(&r, "train seq2seq without --out", 0, NULL);
    ck_assert_msg(strstr(r.out, "wrote runs/seq2seq-gru-seed7.json"), "%s", r.out);
    ck_assert(exists("runs/seq2seq-gru-seed7.json"));
    run_result i = run(NULL, "info", "--weights", "runs/seq2seq-gru-seed7.json", NULL);
    expect(&i, "info of the default --out", 0, NULL);
    ck_assert_msg(strstr(i.out, "seq2seq-gru"), "%s", i.out);
    run_result c = run(NULL, "train", "--task", "compose", "--epochs", "1", "--train-size", "8",
                       "--holdout", "0", "--test-size", "0", "--embed-dim", "8", "--heads", "1",
                       "--ffn-dim", "8", "--layers", "1", "--dec-layers", "1", "--seed", "7", NULL);
    expect(&c, "train compose without --out", 0, NULL);
    ck_assert(exists("runs/compose-seq2seq-transformer-seed7.json"));
    run_free(&r), run_free(&i), run_free(&c);
}
END_TEST

/* The commands that look for seq2seq weights before loading (info, eval, grad) must not open a
 * FIFO blockingly: regression test (they hung until the test timed out). */
START_TEST(test_fifo_weights_do_not_hang) {
    const char *fifo = tmp_path("s2s-fifo.json");
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    run_result a = run(NULL, "info", "--weights", fifo, NULL);
    expect(&a, "info FIFO", 1, fifo, "FIFO", NULL);
    run_result b = run(NULL, "eval", "--weights", fifo, "--set", "plain", NULL);
    expect(&b, "eval FIFO", 1, fifo, NULL);
    run_result c = run(NULL, "generate", "--weights", fifo, "the exam", NULL);
    expect(&c, "generate FIFO", 1, fifo, NULL);
    run_free(&a), run_free(&b), run_free(&c);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("cli/seq2seq");
    TCase *tc = tcase_create("seq2seq");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_data_rewrite_sources_are_data);
    tcase_add_test(tc, test_train_generate_and_errors);
    tcase_add_loop_test(tc, test_train_rope_alibi, 0, 2);
    tcase_add_test(tc, test_reproduce_rewrite);
    tcase_add_test(tc, test_train_default_out);
    tcase_add_test(tc, test_fifo_weights_do_not_hang);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return cli_run_suite_in_tmp(suite());
}

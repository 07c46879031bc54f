/* test_cli_seq2seq_threads.c -- `attn generate`, `eval` and `explain` on seq2seq weights with
 * `--threads N`: the same stdout, stderr and exit code for 1, 2 and 3 threads (and for
 * ATTN_THREADS), for greedy decoding with and without the KV cache, beam search, sampling
 * (several draws per source, and more draws than a block of 512 holds), json, --teacher and a
 * compose model, over sources from `attn data --task rewrite` with bad lines among them, and
 * `attn explain` on seq2seq weights; bad thread counts are usage errors. The committed weights are
 * only read: the runs are compared with one another, never with stored output. */
#include "cli_harness.h"

static const char *weights(const char *name) {
    static char bufs[4][512];
    static int next;
    char *b = bufs[next++ % 4], rel[128];
    snprintf(rel, sizeof rel, "weights/%s-seed1.json", name);
    snprintf(b, sizeof bufs[0], "%s", tu_source_path(rel));
    return b;
}

/* `attn data --task rewrite` pairs ('source<TAB>target' lines), with a few bad lines among
 * them: a word outside the vocabulary, a line without a tab, a target word outside the target
 * vocabulary, a blank line. */
static char *pairs_text(int n) {
    char n_text[16];
    snprintf(n_text, sizeof n_text, "%d", n);
    run_result r = run(NULL, "data", "--task", "rewrite", "--set", "fill8", "--n", n_text, "--seed",
                       "5", NULL);
    expect(&r, "data --task rewrite", 0, NULL);
    static const char bad[] = "the exam was zzz\tpositive exam zzz\n"
                              "the exam was great\n"
                              "\n"
                              "the exam was great\tpositive exam qqq\n";
    const size_t len = strlen(r.out), half = strcspn(r.out + len / 2, "\n") + len / 2 + 1;
    char *text = malloc(len + sizeof bad);
    ck_assert_ptr_nonnull(text);
    memcpy(text, r.out, half); /* the bad lines in the middle */
    memcpy(text + half, bad, sizeof bad - 1);
    memcpy(text + half + sizeof bad - 1, r.out + half, len - half + 1);
    run_free(&r);
    return text;
}

/* The sources of pairs_text: each line cut at its tab. */
static char *sources_of(const char *pairs) {
    char *s = strdup(pairs), *w = s;
    ck_assert_ptr_nonnull(s);
    for (const char *p = pairs; *p;) {
        const size_t line = strcspn(p, "\n"), src = strcspn(p, "\t\n");
        memcpy(w, p, src);
        w += src;
        p += line;
        if (*p) *w++ = *p++;
    }
    *w = '\0';
    return s;
}

/* Runs `attn ARGS... --threads n` (n 0: ATTN_THREADS=3 and no option) on stdin_text. */
static run_result run_threads(const char *stdin_text, char **args, int n) {
    char *argv[40], threads[16];
    int k = 0;
    for (; args[k]; k++) argv[k] = args[k];
    snprintf(threads, sizeof threads, "%d", n);
    if (n) {
        argv[k++] = "--threads";
        argv[k++] = threads;
    } else {
        setenv("ATTN_THREADS", "3", 1);
    }
    argv[k] = NULL;
    run_result r = run_argv(stdin_text, argv);
    unsetenv("ATTN_THREADS");
    return r;
}

/* The command's stdout, stderr and exit code are the same for 1, 2, 3 threads and
 * ATTN_THREADS=3 (under ATTN_TEST_SMALL: 1 and 3 threads); returns the 1-thread stdout's length. */
static size_t same_for_every_thread_count(const char *what, const char *stdin_text, char **args,
                                          int want_code) {
    run_result one = run_threads(stdin_text, args, 1);
    expect(&one, what, want_code, NULL);
    ck_assert_msg(one.out[0] != '\0', "%s: no output", what);
    for (int n = 2; n <= 4; n++) {
        if (tu_small() && n != 3) continue; /* the sanitizer stage: 1 against 3 threads only */
        run_result r = run_threads(stdin_text, args, n == 4 ? 0 : n);
        ck_assert_msg(r.code == one.code, "%s, %d threads: exit code %d, 1 thread %d", what, n,
                      r.code, one.code);
        ck_assert_msg(strcmp(r.out, one.out) == 0, "%s: stdout with %d threads differs", what, n);
        ck_assert_msg(strcmp(r.err, one.err) == 0, "%s: stderr with %d threads:\n%s\nnot\n%s", what,
                      n, r.err, one.err);
        run_free(&r);
    }
    const size_t len = strlen(one.out);
    run_free(&one);
    return len;
}

START_TEST(test_generate_same_for_every_thread_count) {
    const int n = tu_small() ? 40 : 200;
    char *pairs = pairs_text(n), *sources = sources_of(pairs);
    /* beam search is the slow one: fewer sources (the bad lines among them too) */
    char *beam_pairs = pairs_text(n / 4), *beam_sources = sources_of(beam_pairs);
    free(beam_pairs);
    static const char *const archs[] = {"seq2seq-transformer", "seq2seq-gru", "seq2seq-attn"};
    for (int a = 0; a < (tu_small() ? 1 : 3); a++) {
        char *w = (char *)weights(archs[a]);
        char *cmds[][16] = {
            {"generate", "--weights", w, NULL},
            {"generate", "--weights", w, "--no-cache", "--format", "json", NULL},
            {"generate", "--weights", w, "--beam", "3", "--format", "json", NULL},
            {"generate", "--weights", w, "--temperature", "1.5", "--top-k", "5", "--samples", "3",
             "--seed", "9", NULL},
            {"generate", "--weights", w, "--teacher", "--format", "json", NULL},
        };
        for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
            char what[128];
            snprintf(what, sizeof what, "%s %s", archs[a], c ? cmds[c][3] : "greedy");
            const char *in = c == 4 ? pairs : c == 2 ? beam_sources : sources;
            const size_t len = same_for_every_thread_count(what, in, cmds[c], 1); /* bad lines */
            printf("%s: %zu bytes of output, the same for 1-3 threads\n", what, len);
        }
    }
    free(beam_sources);
    free(sources);
    free(pairs);
}
END_TEST

/* More draws than a block holds: a source's pieces go on from one block to the next. */
START_TEST(test_samples_across_blocks) {
    char *args[] = {"generate",  "--weights", (char *)weights("compose-seq2seq-transformer"),
                    "--samples", "600",       "--top-p",
                    "0.9",       NULL};
    const size_t len = same_for_every_thread_count(
        "compose --samples", "positive exam\nfoo bar\nnegative lecture\n", args, 1);
    printf("compose samples: %zu bytes\n", len);
}
END_TEST

START_TEST(test_eval_same_for_every_thread_count) {
    static const char *const models[] = {"seq2seq-transformer", "seq2seq-attn",
                                         "compose-seq2seq-transformer"};
    for (int m = 0; m < 3; m++) {
        if (tu_small() && m == 1) continue; /* the sanitizer stage: a rewrite and a compose model */
        char *args[] = {"eval", "--weights", (char *)weights(models[m]), "--set",
                        "all",  "--n",       tu_small() ? "40" : "250",  NULL};
        same_for_every_thread_count(models[m], NULL, args, 0);
    }
    char *pairs = pairs_text(tu_small() ? 30 : 200);
    const char *good = tmp_path("pairs.tsv");
    *strstr(pairs, "the exam was zzz") = '\0'; /* the lines before the bad ones */
    write_file(good, pairs);
    char *args[] = {"eval",   "--weights",  (char *)weights("seq2seq-gru"),
                    "--data", (char *)good, NULL};
    same_for_every_thread_count("eval --data", NULL, args, 0);
    free(pairs);
}
END_TEST

/* attn explain on seq2seq weights: one source per piece, saliency (backward passes) on the
 * replicas too. */
START_TEST(test_explain_same_for_every_thread_count) {
    char *pairs = pairs_text(tu_small() ? 8 : 40), *sources = sources_of(pairs);
    char *json[] = {"explain",  "--weights", (char *)weights("seq2seq-transformer"),
                    "--format", "json",      NULL};
    same_for_every_thread_count("explain json", sources, json, 1);
    char *text[] = {"explain",  "--weights", (char *)weights("seq2seq-attn"),
                    "--color",  "always",    "--prefix",
                    "negative", NULL};
    same_for_every_thread_count("explain text", sources, text, 1);
    free(sources);
    free(pairs);
}
END_TEST

START_TEST(test_bad_thread_counts) {
    const char *w = weights("seq2seq-transformer");
    run_result r = run("the exam was great\n", "generate", "--weights", w, "--threads", "0", NULL);
    expect(&r, "generate --threads 0", 2, "--threads", NULL);
    run_free(&r);
    r = run(NULL, "eval", "--weights", w, "--set", "plain", "--threads", "two", NULL);
    expect(&r, "eval --threads two", 2, "--threads", NULL);
    run_free(&r);
    setenv("ATTN_THREADS", "0", 1);
    r = run("the exam was great\n", "generate", "--weights", w, NULL);
    expect(&r, "generate ATTN_THREADS=0", 2, "ATTN_THREADS", NULL);
    run_free(&r);
    r = run(NULL, "eval", "--weights", w, "--set", "plain", "--n", "5", NULL);
    expect(&r, "eval ATTN_THREADS=0", 2, "ATTN_THREADS", NULL);
    run_free(&r);
    unsetenv("ATTN_THREADS");
    r = run(NULL, "generate", "--help", NULL);
    expect(&r, "generate --help", 0, NULL);
    ck_assert_msg(strstr(r.out, "--threads N") != NULL, "generate --help: %s", r.out);
    run_free(&r);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("cli/seq2seq_threads");
    TCase *tc = tcase_create("threads");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_generate_same_for_every_thread_count);
    tcase_add_test(tc, test_samples_across_blocks);
    tcase_add_test(tc, test_eval_same_for_every_thread_count);
    tcase_add_test(tc, test_explain_same_for_every_thread_count);
    tcase_add_test(tc, test_bad_thread_counts);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return cli_run_suite_in_tmp(suite());
}

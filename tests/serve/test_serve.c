/* test_serve.c -- the request handler of `attn serve` without a socket (serve_handle): every
 * endpoint with good and bad requests; /api/explain returns, per model, exactly the text of
 * attn_explanation_to_json of an attn_explain computed here; /api/sets agrees with
 * attn_evaluate in exact mode; the strict request parser; JSON escaping of the answers; no
 * request path reaches the file system. (Over a socket and in a browser: tests/serve/e2e.py.) */
#include "sbuf.h"
#include "serve.h"
#include "serve_internal.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static serve_app *app;

static void setup(void) {
    attn_error err;
    ck_assert_msg(serve_app_create(tu_source_path("weights"), 2, &app, &err) == ATTN_OK, "%s",
                  err.msg);
}

static void teardown(void) {
    serve_app_free(app);
    app = NULL;
}

/* rs for (method, uri, body) on context ctx; its body NUL-terminated in *text (static). */
static int call_ctx(int ctx, const char *method, const char *uri, const char *body,
                    serve_response *rs) {
    const serve_request rq = {method, uri, body, body ? strlen(body) : 0};
    serve_handle(app, ctx, &rq, rs);
    ck_assert_ptr_nonnull(rs->type);
    return rs->status;
}

static int call(const char *method, const char *uri, const char *body, serve_response *rs) {
    return call_ctx(0, method, uri, body, rs);
}

/* The body as a string (answers are JSON or assets; copied). */
static char *body_of(const serve_response *rs) {
    char *s = malloc(rs->len + 1);
    ck_assert_ptr_nonnull(s);
    memcpy(s, rs->data, rs->len);
    s[rs->len] = '\0';
    return s;
}

static void expect_error(const char *method, const char *uri, const char *body, int status,
                         const char *code) {
    serve_response rs;
    int got = call(method, uri, body, &rs);
    char *text = body_of(&rs);
    char want[96];
    snprintf(want, sizeof want, "\"code\": \"%s\"", code);
    ck_assert_msg(got == status && strstr(text, want) && strstr(text, "\"message\": "),
                  "%s %.60s %.60s: want %d %s, got %d %.300s", method, uri, body ? body : "",
                  status, code, got, text);
    ck_assert(rs.api);
    free(text);
    serve_response_clear(&rs);
}

START_TEST(test_static_endpoints) {
    serve_response rs;
    ck_assert_int_eq(call("GET", "/healthz", NULL, &rs), 200);
    char *t = body_of(&rs);
    ck_assert_str_eq(t, "{\"status\": \"ok\"}");
    free(t);
    serve_response_clear(&rs);

    ck_assert_int_eq(call("GET", "/api/models", NULL, &rs), 200);
    t = body_of(&rs);
    ck_assert_msg(strstr(t, "{\"name\": \"rnn\", \"explain_seed\": 1, \"params\": 3089, "
                            "\"seeds\": [1, 2, 3]") &&
                      strstr(t, "\"name\": \"transformer\"") && strstr(t, "\"n_heads\": 2"),
                  "%s", t);
    free(t);
    serve_response_clear(&rs);

    ck_assert_int_eq(call("GET", "/api/vocab", NULL, &rs), 200);
    t = body_of(&rs);
    int n = 0;
    for (const char *p = t; (p = strstr(p, "\"word\": ")); p++) n++;
    ck_assert_int_eq(n, ATTN_N_WORDS);
    ck_assert_ptr_nonnull(
        strstr(t, "{\"id\": 2, \"word\": \"the\", \"category\": \"determiner\"}"));
    free(t);
    serve_response_clear(&rs);

    ck_assert_int_eq(call("GET", "/api/figures", NULL, &rs), 200);
    serve_response_clear(&rs);

    /* the page: embedded, with its type; "/" is index.html; HEAD answers too */
    const char *pages[][2] = {{"/", "text/html"},
                              {"/index.html", "text/html"},
                              {"/app.js", "text/javascript"},
                              {"/style.css", "text/css"},
                              {"/figures", "text/html"},
                              {"/figures.js", "text/javascript"}};
    for (size_t i = 0; i < sizeof pages / sizeof pages[0]; i++) {
        ck_assert_int_eq(call(i == 0 ? "HEAD" : "GET", pages[i][0], NULL, &rs), 200);
        ck_assert_msg(strncmp(rs.type, pages[i][1], strlen(pages[i][1])) == 0, "%s: %s",
                      pages[i][0], rs.type);
        ck_assert(rs.len > 100 && !rs.owned && !rs.api);
        serve_response_clear(&rs);
    }
}
END_TEST

START_TEST(test_bad_requests) {
    expect_error("POST", "/api/explain", "{\"sentence\": \"good\",}", 400, "malformed_json");
    expect_error("POST", "/api/explain", "{\"sentence\": \"good\"}{}", 400, "malformed_json");
    expect_error("POST", "/api/explain", "{\"sentence\": \"good\", \"n\": 01}", 400,
                 "malformed_json");
    expect_error("POST", "/api/explain", "", 400, "malformed_json");
    expect_error("POST", "/api/explain", "[\"good\"]", 400, "bad_request");
    expect_error("POST", "/api/explain", "{\"sentence\": 5}", 400, "bad_request");
    expect_error("POST", "/api/explain", "{\"sentence\": \"good\", \"x\": 1}", 400, "bad_request");
    const char *bad_steps[] = {"-1", "1.5", "\"8\"", "4097", "1e9", "null", "true"};
    for (size_t i = 0; i < sizeof bad_steps / sizeof *bad_steps; i++) {
        char body[96];
        snprintf(body, sizeof body, "{\"sentence\": \"good\", \"ig_steps\": %s}", bad_steps[i]);
        expect_error("POST", "/api/explain", body, 400, "bad_request");
    }
    expect_error("POST", "/api/explain", "{\"sentence\": \"good\\u0000 bad\"}", 400,
                 "malformed_json");
    expect_error("POST", "/api/explain", "{\"sentence\": \"good\", \"models\": \"rnn\"}", 400,
                 "bad_request");
    expect_error("POST", "/api/explain", "{\"sentence\": \"good\", \"models\": [\"bert\"]}", 404,
                 "unknown_model");
    expect_error("POST", "/api/explain",
                 "{\"sentence\": \"good\", \"models\": [\"rnn\",\"rnn\",\"rnn\",\"rnn\",\"rnn\","
                 "\"rnn\",\"rnn\",\"rnn\",\"rnn\"]}",
                 400, "bad_request");
    expect_error("POST", "/api/explain", "{\"sentence\": \" !? \"}", 400, "empty_sentence");
    expect_error("GET", "/api/explain", NULL, 405, "method_not_allowed");
    expect_error("DELETE", "/index.html", NULL, 405, "method_not_allowed");
    expect_error("GET", "/api/sets/train?model=rnn", NULL, 404, "unknown_set");
    expect_error("GET", "/api/sets/plain", NULL, 404, "unknown_model");
    expect_error("GET", "/api/sets/plain?model=rnn&seed=9", NULL, 404, "unknown_seed");
    expect_error("GET", "/api/sets/plain?model=rnn&seed=-1", NULL, 404, "unknown_seed");
    expect_error("GET", "/api/sets/plain?model=rnn&seed=99999999999", NULL, 404, "unknown_seed");
    /* no path reaches the file system: only the embedded table is looked at */
    const char *paths[] = {"/../CMakeLists.txt",
                           "/web/index.html",
                           "/%2e%2e/README.md",
                           "/index.html/",
                           "//etc/passwd",
                           "/figures/../../README.md",
                           ""};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        expect_error("GET", paths[i], NULL, 404, "not_found");

    /* too many words: 81 */
    char sentence[1024] = "{\"sentence\": \"";
    for (int i = 0; i < 81; i++) strcat(sentence, "good ");
    strcat(sentence, "\"}");
    expect_error("POST", "/api/explain", sentence, 400, "too_long");
    /* a body over 64 KiB; a URI over the limit */
    char *big = malloc(SERVE_MAX_BODY + 2);
    ck_assert_ptr_nonnull(big);
    memset(big, ' ', SERVE_MAX_BODY + 1);
    big[SERVE_MAX_BODY + 1] = '\0';
    expect_error("POST", "/api/explain", big, 413, "too_long");
    big[0] = '/';
    big[SERVE_MAX_URI_BYTES + 1] = '\0';
    expect_error("GET", big, NULL, 414, "uri_too_long");
    free(big);
}
END_TEST

START_TEST(test_unknown_word) {
    serve_response rs;
    ck_assert_int_eq(
        call("POST", "/api/explain", "{\"sentence\": \"The lecture was not very helpfull!\"}", &rs),
        400);
    char *t = body_of(&rs);
    ck_assert_msg(strstr(t, "\"code\": \"unknown_word\"") && strstr(t, "\"position\": 6") &&
                      strstr(t, "\"word\": \"helpfull\"") && strstr(t, "\"nearest\": \"helpful\""),
                  "%s", t);
    free(t);
    serve_response_clear(&rs);
    /* a request that is not UTF-8 is malformed JSON (the strict reader); the answer stays UTF-8 */
    ck_assert_int_eq(call("POST", "/api/explain", "{\"sentence\": \"the \xff\xfe<b>\"}", &rs), 400);
    t = body_of(&rs);
    ck_assert_msg(strstr(t, "\"malformed_json\"") && strstr(t, "invalid UTF-8") &&
                      !strstr(t, "\xff"),
                  "%s", t);
    free(t);
    serve_response_clear(&rs);
}
END_TEST

/* /api/explain: per model, the very text attn_explanation_to_json gives for an attn_explain
 * computed here from the same weights file: without "ig_steps" (no integrated gradients) and
 * with "ig_steps": 16. */
START_TEST(test_explain_matches_library) {
    const char *sentence = "honestly the \\\"lecture\\\" was not very helpful although the coffee "
                           "was great";
    const char *plain = "honestly the \"lecture\" was not very helpful although the coffee was "
                        "great";
    const char *files[] = {"weights/transformer-seed1.json", "weights/rnn-seed1.json"};
    const int steps[] = {0, 16};
    for (int v = 0; v < 2; v++) {
        char body[512], extra[32] = "";
        if (steps[v]) snprintf(extra, sizeof extra, ", \"ig_steps\": %d", steps[v]);
        snprintf(body, sizeof body,
                 "{\"sentence\": \"%s\", \"models\": [\"transformer\", \"rnn\"]%s}", sentence,
                 extra);
        serve_response rs;
        ck_assert_int_eq(call_ctx(1, "POST", "/api/explain", body, &rs), 200);
        char *t = body_of(&rs);
        ck_assert_ptr_nonnull(strstr(t, "\"words\": 12, \"explanations\": [{\"model\": "
                                        "\"transformer\", \"seed\": 1, \"explain\": {"));
        ck_assert_msg((strstr(t, "integrated_gradients") != NULL) == (steps[v] > 0), "%s", t);
        const char *at = t;
        for (int k = 0; k < 2; k++) {
            attn_model *m = NULL;
            attn_error err;
            ck_assert_msg(attn_weights_load_json(tu_source_path(files[k]), &m, &err) == ATTN_OK,
                          "%s", err.msg);
            int ids[ATTN_MAX_WORDS], n = 0;
            ck_assert(attn_tokenize(plain, ids, ATTN_MAX_WORDS, &n, &err) == ATTN_OK);
            attn_explanation *e = NULL;
            const attn_explain_opts o = {.ig_steps = steps[v] ? steps[v] : ATTN_EXPLAIN_NO_IG};
            ck_assert(attn_explain(m, ids, n, &o, &e, &err) == ATTN_OK);
            char *want = NULL;
            ck_assert(attn_explanation_to_json(NULL, plain, ids, e, &want, NULL, &err) == ATTN_OK);
            const char *hit = strstr(at, want);
            ck_assert_msg(hit != NULL,
                          "%s, ig_steps %d: the server's object differs from the "
                          "library's",
                          files[k], steps[v]);
            at = hit + strlen(want);
            free(want);
            attn_explanation_free(e);
            attn_model_free(m);
        }
        free(t);
        serve_response_clear(&rs);
    }
}
END_TEST

/* /api/sets: the count of correct answers is attn_evaluate's in exact mode; cached answers are
 * the same text; the query is percent-decoded. */
START_TEST(test_sets_match_evaluate) {
    serve_response a, b;
    ck_assert_int_eq(call("GET", "/api/sets/distractor?model=rnn&seed=2", NULL, &a), 200);
    ck_assert_int_eq(call_ctx(1, "GET", "/api/sets/distractor?seed=2&model=%72%6e%6e", NULL, &b),
                     200);
    ck_assert(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
    char *t = body_of(&a);
    int correct = -1, total = -1;
    const char *p = strstr(t, "\"correct\": ");
    ck_assert_ptr_nonnull(p);
    sscanf(p, "\"correct\": %d", &correct);
    p = strstr(t, "\"misclassified_total\": ");
    ck_assert_ptr_nonnull(p);
    sscanf(p, "\"misclassified_total\": %d", &total);

    attn_model *m = NULL;
    attn_dataset *d = NULL;
    attn_error err;
    double acc = 0;
    ck_assert(attn_weights_load_json(tu_source_path("weights/rnn-seed2.json"), &m, &err) ==
              ATTN_OK);
    ck_assert(attn_data_generate(ATTN_SET_DISTRACTOR, 1000, 2, &d, &err) == ATTN_OK);
    ck_assert(attn_evaluate(m, d, 0, d->n, 1, &acc, &err) == ATTN_OK);
    ck_assert_int_eq(correct, (int)(acc * 1000 + 0.5));
    ck_assert_int_eq(total, 1000 - correct);
    int listed = 0;
    for (const char *q = t; (q = strstr(q, "{\"sentence\": ")); q++) listed++;
    ck_assert_int_eq(listed, total < SERVE_MAX_MISSES ? total : SERVE_MAX_MISSES);
    printf("sets: rnn seed 2 on distractor: %d/1000 (attn_evaluate %.3f), %d listed\n", correct,
           acc, listed);
    attn_dataset_free(d);
    attn_model_free(m);
    free(t);
    serve_response_clear(&a);
    serve_response_clear(&b);
}
END_TEST

static char *get_text_unchecked(const char *method, const char *uri, const char *body, int want) {
    serve_response rs;
    int got = call(method, uri, body, &rs);
    char *t = body_of(&rs);
    ck_assert_msg(got == want, "%s %s: want %d, got %d %.300s", method, uri, want, got, t);
    serve_response_clear(&rs);
    return t;
}

/* /api/predict: each line's logit is attn_model_forward's with batch 1 (as attn predict prints
 * it, %.9g); a bad line is named; the file's own vocabulary in the other fixture. */
START_TEST(test_predict) {
    const char *lines[] = {"the lecture was not very helpful", "The lecture was helpful!",
                           "honestly the exam was great although the coffee was awful"};
    char body[256];
    snprintf(body, sizeof body, "%s\n%s\r\n%s\n", lines[0], lines[1], lines[2]);
    serve_response rs;
    ck_assert_int_eq(call_ctx(1, "POST", "/api/predict?models=transformer,rnn", body, &rs), 200);
    char *t = body_of(&rs);
    serve_response_clear(&rs);
    const char *head = "{\"sentences\": 3, \"predictions\": [{\"model\": \"transformer\", "
                       "\"seed\": 1, \"logits\": [";
    ck_assert_msg(strncmp(t, head, strlen(head)) == 0, "%s", t);
    const char *files[] = {"weights/transformer-seed1.json", "weights/rnn-seed1.json"};
    for (int k = 0; k < 2; k++) {
        attn_model *m = NULL;
        attn_error err;
        ck_assert(attn_weights_load_json(tu_source_path(files[k]), &m, &err) == ATTN_OK);
        char want[256] = "\"logits\": [";
        for (int i = 0; i < 3; i++) {
            int ids[ATTN_MAX_WORDS], n = 0;
            ck_assert(attn_tokenize(lines[i], ids, ATTN_MAX_WORDS, &n, &err) == ATTN_OK);
            const attn_batch b = {.B = 1, .T = n, .ids = ids, .lengths = &n};
            float logit;
            ck_assert(attn_model_forward(m, &b, &logit, &err) == ATTN_OK);
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s%.9g", i ? ", " : "",
                     (double)logit);
        }
        strcat(want, "]");
        ck_assert_msg(strstr(t, want), "%s: %s not in %s", files[k], want, t);
        attn_model_free(m);
    }
    free(t);
    t = get_text_unchecked("POST", "/api/predict", "the lecture was good\nthe lecturr was good",
                           400);
    ck_assert_msg(strstr(t, "\"code\": \"unknown_word\"") && strstr(t, "\"line\": 2") &&
                      strstr(t, "\"nearest\": \"lecture\""),
                  "%s", t);
    free(t);
    expect_error("POST", "/api/predict", "", 400, "empty_sentence");
    expect_error("POST", "/api/predict", "good\n\ngood", 400, "empty_sentence");
    expect_error("POST", "/api/predict?models=bert", "good", 404, "unknown_model");
    expect_error("POST", "/api/predict?models=", "good", 404, "unknown_model");
    expect_error("GET", "/api/predict", NULL, 405, "method_not_allowed");
    char *many = malloc(257 * 5 + 1);
    ck_assert_ptr_nonnull(many);
    many[0] = '\0';
    for (int i = 0; i < 257; i++) strcat(many, "good\n");
    expect_error("POST", "/api/predict", many, 400, "bad_request");
    free(many);
}
END_TEST

START_TEST(test_request_parser) {
    attn_explain_request r;
    attn_error err;
    const char *ok = " {\"models\": [\"lstm\", \"rnn\"], \"sentence\": \"a \\\"b\\\" \\u00e9\"}\n";
    ck_assert_msg(attn_explain_request_parse(ok, strlen(ok), &r, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_str_eq(r.sentence, "a \"b\" \xc3\xa9");
    ck_assert_int_eq(r.n_models, 2);
    ck_assert_str_eq(r.models[1], "rnn");
    attn_explain_request_clear(&r);
    const char *bad[] = {"{\"sentence\": \"a\"",
                         "{\"sentence\": \"a\\x\"}",
                         "{\"sentence\": \"a\", \"models\": [1]}",
                         "{\"sentence\": null}",
                         "{\"sentence\": \"a\\\\\\u0000\"}",
                         "nul"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(attn_explain_request_parse(bad[i], strlen(bad[i]), &r, &err) != ATTN_OK,
                      "accepted %s", bad[i]);
        ck_assert(r.sentence == NULL && r.n_models == 0 && err.msg[0]);
    }
    /* an escaped backslash before "u0000" is text, not the escape */
    const char *lit = "{\"sentence\": \"a\\\\u0000\"}";
    ck_assert(attn_explain_request_parse(lit, strlen(lit), &r, &err) == ATTN_OK);
    ck_assert_str_eq(r.sentence, "a\\u0000");
    attn_explain_request_clear(&r);
    /* the malformed message gives the byte, line and column */
    const char *two = "{\n  \"sentence\": 'a'}";
    ck_assert(attn_explain_request_parse(two, strlen(two), &r, &err) == ATTN_ERR_PARSE);
    ck_assert_msg(strstr(err.msg, "line 2, column 15"), "%s", err.msg);
}
END_TEST

START_TEST(test_json_escaping) {
    sbuf sb = {0};
    sb_json_string(
        &sb, "a\"b\\c\n\x01\x7f \xc3\xa9 \xe2\x80\x9c \xed\xa0\x80 \xc0\xaf \xf4\x90\x80\x80");
    size_t len = 0;
    char *s = sb_take(&sb, &len);
    ck_assert_ptr_nonnull(s);
    ck_assert_str_eq(s, "\"a\\\"b\\\\c\\u000a\\u0001\\u007f \xc3\xa9 \xe2\x80\x9c "
                        "\\ufffd\\ufffd\\ufffd \\ufffd\\ufffd \\ufffd\\ufffd\\ufffd\\ufffd\"");
    ck_assert_uint_eq(len, strlen(s));
    free(s);
}
END_TEST

START_TEST(test_app_errors) {
    serve_app *a = NULL;
    attn_error err;
    ck_assert(serve_app_create("/nonexistent-attn-dir", 1, &a, &err) == ATTN_ERR_IO);
    ck_assert_msg(strstr(err.msg, "/nonexistent-attn-dir: no weights found"), "%s", err.msg);
    ck_assert_ptr_null(a);
    ck_assert(serve_app_create(tu_source_path("weights"), 0, &a, &err) == ATTN_ERR_ARG);
    serve_options o = serve_options_default();
    o.host = "localhost";
    o.threads = 1;
    serve_server *s = NULL;
    ck_assert(serve_server_start(app, &o, &s, &err) == ATTN_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "--host localhost: not a numeric"), "%s", err.msg);
    o.host = "127.0.0.1";
    o.threads = 3; /* more workers than the app has model copies */
    ck_assert(serve_server_start(app, &o, &s, &err) == ATTN_ERR_ARG);
    ck_assert_ptr_null(s);
}
END_TEST

/* The directory's file names: only <arch>-seed<S>.json as written (S 1..9, no leading zero; a
 * dangling link is no file) is a classifier's; a file holding another arch fails, naming both. */
START_TEST(test_app_file_names) {
    char dir[64] = "/tmp/attn-serve-names-XXXXXX", path[128];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    const char *names[] = {"transformer-seed2.json", "rnn-seed01.json", "rnn-seed10.json",
                           "gru-seed1.json", "lstm-seed1.json"};
    const char *targets[] = {"weights/transformer-seed2.json", "weights/rnn-seed1.json",
                             "weights/rnn-seed1.json", "weights/no-such-file.json",
                             "weights/rnn-seed1.json"};
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        ck_assert(symlink(tu_source_path(targets[i]), path) == 0);
    }
    serve_app *a = NULL;
    attn_error err;
    ck_assert(serve_app_create(dir, 2, &a, &err) == ATTN_ERR_VALUE);
    ck_assert_msg(strstr(err.msg, "lstm-seed1.json: holds a rnn model, not a lstm"), "%s", err.msg);
    ck_assert_ptr_null(a);
    snprintf(path, sizeof path, "%s/lstm-seed1.json", dir);
    ck_assert(unlink(path) == 0);
    ck_assert_msg(serve_app_create(dir, 2, &a, &err) == ATTN_OK, "%s", err.msg);
    ck_assert_int_eq(a->n_entries, 1);
    ck_assert_int_ge(serve_find_entry(a, ATTN_ARCH_TRANSFORMER, 2), 0);
    ck_assert_int_eq(serve_find_entry(a, ATTN_ARCH_RNN, 1), -1);
    ck_assert_int_eq(serve_find_entry(a, ATTN_ARCH_RNN, 10), -1);
    ck_assert_str_eq(serve_app_summary(a), "transformer (seed 2 explained; 1 seed)");
    serve_app_free(a);
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        ck_assert(unlink(path) == 0);
    }
    ck_assert(rmdir(dir) == 0);
}
END_TEST

/* ---- a weights file with its own vocabulary ---------------------------------------------------
 * DIR/lstm-seed1.json: an LSTM with a 37-token vocabulary of film-review words (no "lecture",
 * no [UNK]); DIR/transformer-seed1.json: the committed one, on the task's vocabulary. */
static const char *const own_words[37] = {
    "[PAD]",  "the",   "film", "movie",     "plot",   "acting",   "music",  "ending",
    "story",  "was",   "is",   "felt",      "seemed", "very",     "quite",  "not",
    "never",  "great", "good", "wonderful", "moving", "funny",    "bad",    "dull",
    "boring", "awful", "weak", "and",       "but",    "although", "really", "a",
    "bit",    "too",   "long", "so",        "slow"};

static char own_dir[64];

static void own_setup(void) {
    strcpy(own_dir, "/tmp/attn-serve-vocab-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(own_dir));
    attn_model_config c = attn_model_config_default(ATTN_ARCH_LSTM);
    c.vocab_size = 37;
    attn_model *m = tu_model_new(&c, 5);
    attn_vocab *v = NULL;
    attn_error err;
    ck_assert_msg(attn_vocab_create(own_words, 37, &v, &err) == ATTN_OK, "%s", err.msg);
    char path[256];
    snprintf(path, sizeof path, "%s/lstm-seed1.json", own_dir);
    ck_assert_msg(attn_weights_save_json_vocab(m, v, false, ATTN_WEIGHTS_TEXT, path, &err) ==
                      ATTN_OK,
                  "%s", err.msg);
    attn_vocab_free(v);
    attn_model_free(m);
    snprintf(path, sizeof path, "%s/transformer-seed1.json", own_dir);
    ck_assert(symlink(tu_source_path("weights/transformer-seed1.json"), path) == 0);
    ck_assert_msg(serve_app_create(own_dir, 1, &app, &err) == ATTN_OK, "%s", err.msg);
}

static void own_teardown(void) {
    serve_app_free(app);
    app = NULL;
    char path[256];
    snprintf(path, sizeof path, "%s/lstm-seed1.json", own_dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/transformer-seed1.json", own_dir);
    unlink(path);
    rmdir(own_dir);
}

static char *get_text(const char *method, const char *uri, const char *body, int want) {
    serve_response rs;
    int got = call(method, uri, body, &rs);
    char *t = body_of(&rs);
    ck_assert_msg(got == want, "%s %s %s: want %d, got %d %.300s", method, uri, body ? body : "",
                  want, got, t);
    serve_response_clear(&rs);
    return t;
}

/* The regression: the server tokenized every sentence with the built-in vocabulary and fed
 * those ids into the file's embedding rows (a logit for "the lecture was great"). */
START_TEST(test_own_vocab_explain) {
    char *t = get_text("POST", "/api/explain",
                       "{\"sentence\": \"the lecture was great\", \"models\": [\"lstm\"]}", 400);
    ck_assert_msg(strstr(t, "\"code\": \"unknown_word\"") && strstr(t, "\"word\": \"lecture\"") &&
                      strstr(t, "\"position\": 2") && strstr(t, "\"model\": \"lstm\""),
                  "%s", t);
    free(t);
    /* its own words: exactly the library's object for the file's vocabulary */
    const char *sentence = "the film was not very good although the music felt wonderful";
    char body[256];
    snprintf(body, sizeof body, "{\"sentence\": \"%s\", \"models\": [\"lstm\"]}", sentence);
    t = get_text("POST", "/api/explain", body, 200);
    attn_model *m = NULL;
    attn_vocab *v = NULL;
    attn_error err;
    char path[256];
    snprintf(path, sizeof path, "%s/lstm-seed1.json", own_dir);
    ck_assert(attn_weights_load_json_vocab(path, &m, &v, &err) == ATTN_OK && v);
    int ids[ATTN_MAX_WORDS], n = 0;
    ck_assert(attn_tokenize_vocab(v, sentence, ids, ATTN_MAX_WORDS, &n, &err) == ATTN_OK);
    ck_assert_int_eq(ids[2], 9); /* "was" is id 9 of the file, id 11 of the task */
    attn_explanation *e = NULL;
    const attn_explain_opts o = {.ig_steps = ATTN_EXPLAIN_NO_IG};
    ck_assert(attn_explain(m, ids, n, &o, &e, &err) == ATTN_OK);
    char *want = NULL;
    ck_assert(attn_explanation_to_json(v, sentence, ids, e, &want, NULL, &err) == ATTN_OK);
    ck_assert_msg(strstr(t, want) != NULL, "server:\n%s\nlibrary:\n%s", t, want);
    free(want);
    free(t);
    attn_explanation_free(e);
    attn_model_free(m);
    attn_vocab_free(v);
    /* a task word the file lacks and a file word the task lacks, each named with its model */
    t = get_text("POST", "/api/explain",
                 "{\"sentence\": \"the film was good\", \"models\": [\"lstm\", \"transformer\"]}",
                 400);
    ck_assert_msg(strstr(t, "\"word\": \"film\"") && strstr(t, "\"model\": \"transformer\""), "%s",
                  t);
    free(t);
    /* /api/predict reads with the file's words too */
    t = get_text("POST", "/api/predict?models=lstm", "the film was great\nthe lecture was great",
                 400);
    ck_assert_msg(strstr(t, "\"word\": \"lecture\"") && strstr(t, "\"line\": 2"), "%s", t);
    free(t);
    /* without "models": the models on the task's vocabulary */
    t = get_text("POST", "/api/explain", "{\"sentence\": \"the lecture was great\"}", 200);
    ck_assert_msg(strstr(t, "\"model\": \"transformer\"") && !strstr(t, "\"model\": \"lstm\""),
                  "%s", t);
    free(t);
}
END_TEST

/* A file whose vocabulary has [UNK]: a word it lacks reads as [UNK], as in attn predict (the
 * server refused it with 400 unknown_word while predict answered). */
static const char *const unk_words[8] = {"[PAD]", "[UNK]", "the", "film",
                                         "was",   "good",  "bad", "not"};
static char unk_dir[64];

static void unk_setup(void) {
    strcpy(unk_dir, "/tmp/attn-serve-unk-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(unk_dir));
    attn_model_config c = attn_model_config_default(ATTN_ARCH_GRU);
    c.vocab_size = 8;
    attn_model *m = tu_model_new(&c, 7);
    attn_vocab *v = NULL;
    attn_error err;
    ck_assert_msg(attn_vocab_create(unk_words, 8, &v, &err) == ATTN_OK, "%s", err.msg);
    char path[256];
    snprintf(path, sizeof path, "%s/gru-seed1.json", unk_dir);
    ck_assert_msg(attn_weights_save_json_vocab(m, v, false, ATTN_WEIGHTS_TEXT, path, &err) ==
                      ATTN_OK,
                  "%s", err.msg);
    attn_vocab_free(v);
    attn_model_free(m);
    ck_assert_msg(serve_app_create(unk_dir, 1, &app, &err) == ATTN_OK, "%s", err.msg);
}

static void unk_teardown(void) {
    serve_app_free(app);
    app = NULL;
    char path[256];
    snprintf(path, sizeof path, "%s/gru-seed1.json", unk_dir);
    unlink(path);
    rmdir(unk_dir);
}

START_TEST(test_unk_words) {
    /* two unknown words are both [UNK]: the same logit; a known word another one */
    char *t = get_text("POST", "/api/predict?models=gru",
                       "the lecture was good\nthe exam was good\nthe film was good", 200);
    const char *l = strstr(t, "\"logits\": [");
    ck_assert_msg(l, "%s", t);
    double a = 0, b = 0, c = 0;
    ck_assert_msg(sscanf(l, "\"logits\": [%lf, %lf, %lf]", &a, &b, &c) == 3, "%s", t);
    ck_assert_msg(a == b && a != c, "%s", t);
    free(t);
    t = get_text("POST", "/api/explain", "{\"sentence\": \"the lecture was not good\"}", 200);
    ck_assert_msg(strstr(t, "\"model\": \"gru\""), "%s", t);
    free(t);
}
END_TEST

START_TEST(test_own_vocab_endpoints) {
    char *t = get_text("GET", "/api/models", NULL, 200);
    ck_assert_msg(strstr(t, "\"name\": \"lstm\"") &&
                      strstr(t, "\"vocab\": \"file\", \"vocab_size\": 37, \"vocab_group\": 0, "
                                "\"test_sets\": false") &&
                      strstr(t, "\"vocab\": \"task\", \"vocab_size\": 91, \"vocab_group\": 1, "
                                "\"test_sets\": true"),
                  "%s", t);
    free(t);
    /* per model: the file's 36 words (not [PAD]) with their ids, or the task's 89 */
    t = get_text("GET", "/api/vocab?model=lstm", NULL, 200);
    int n = 0;
    for (const char *p = t; (p = strstr(p, "\"word\": ")); p++) n++;
    ck_assert_int_eq(n, 36);
    ck_assert_msg(strstr(t, "\"source\": \"file\", \"vocab_size\": 37, \"models\": [\"lstm\"]") &&
                      strstr(t, "{\"id\": 2, \"word\": \"film\", \"category\": \"word\"}") &&
                      !strstr(t, "lecture") && !strstr(t, "[PAD]"),
                  "%s", t);
    free(t);
    const char *task_uris[] = {"/api/vocab?model=transformer", "/api/vocab"};
    for (int i = 0; i < 2; i++) {
        t = get_text("GET", task_uris[i], NULL, 200);
        n = 0;
        for (const char *p = t; (p = strstr(p, "\"word\": ")); p++) n++;
        ck_assert_int_eq(n, ATTN_N_WORDS);
        ck_assert_ptr_nonnull(strstr(t, "\"source\": \"task\""));
        free(t);
    }
    expect_error("GET", "/api/vocab?model=gru", NULL, 404, "unknown_model");
    /* test sets only where the vocabulary is the task's */
    expect_error("GET", "/api/sets/plain?model=lstm", NULL, 404, "no_test_sets");
    t = get_text("GET", "/api/sets/plain?model=transformer", NULL, 200);
    ck_assert_ptr_nonnull(strstr(t, "\"n\": 1000"));
    free(t);
    ck_assert_ptr_nonnull(strstr(serve_app_summary(app), "its own vocabulary of 37 tokens"));
}
END_TEST

/* The answer to a tokenizer error follows its status and code, not its wording: a reworded
 * message keeps the answer, and a message that reads like another case but has no code is
 * bad_sentence (a status chosen by matching message text fails here). */
static char *tokenize_answer(attn_status st, attn_error_code code, const char *msg, int *status) {
    attn_error err;
    attn_errorf(&err, st, "%s", msg);
    attn_error_detail(&err, code, 3, code == ATTN_CODE_UNKNOWN_WORD ? "helpfull" : NULL,
                      code == ATTN_CODE_UNKNOWN_WORD ? "helpful" : NULL);
    serve_response rs = {0};
    serve_tokenize_error(&rs, &err, attn_vocab_builtin(), "was very helpfull", "rnn", 2);
    *status = rs.status;
    char *t = body_of(&rs);
    serve_response_clear(&rs);
    return t;
}

START_TEST(test_status_by_code) {
    static const struct {
        attn_status st;
        attn_error_code code;
        const char *msg;
        int status;
        const char *want;
    } cases[] = {
        {ATTN_ERR_VALUE, ATTN_CODE_UNKNOWN_WORD, "mot inconnu", 400, "\"code\": \"unknown_word\""},
        {ATTN_ERR_VALUE, ATTN_CODE_TOO_LONG, "trop long", 400, "\"code\": \"too_long\""},
        {ATTN_ERR_VALUE, ATTN_CODE_EMPTY_SENTENCE, "vide", 400, "\"code\": \"empty_sentence\""},
        {ATTN_ERR_VALUE, ATTN_CODE_NONE, "sentence has 99 words", 400, "\"bad_sentence\""},
        {ATTN_ERR_VALUE, ATTN_CODE_NONE, "empty sentence", 400, "\"bad_sentence\""},
        {ATTN_ERR_VALUE, ATTN_CODE_NONE,
         "unknown word 'x' at position 1 (closest vocabulary word: 'y'", 400, "\"bad_sentence\""},
        {ATTN_ERR_NOMEM, ATTN_CODE_NONE, "out of memory", 503, "\"bad_sentence\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int status = 0;
        char *t = tokenize_answer(cases[i].st, cases[i].code, cases[i].msg, &status);
        ck_assert_msg(status == cases[i].status && strstr(t, cases[i].want), "case %zu: %d %s", i,
                      status, t);
        if (cases[i].code == ATTN_CODE_UNKNOWN_WORD)
            ck_assert_msg(
                strstr(t, "\"position\": 3, \"word\": \"helpfull\", \"nearest\": "
                          "\"helpful\", \"model\": \"rnn\", \"line\": 2, \"place\": "
                          "{\"class\": \"adjective\", \"rule\": \"after 'very', at the end\""),
                "%s", t);
        free(t);
    }
    /* the request parser: malformed JSON has its code (with the byte offset), a wrong type not */
    attn_explain_request r;
    attn_error err;
    ck_assert_int_eq(attn_explain_request_parse("{\"sentence\": 1,}", 16, &r, &err),
                     ATTN_ERR_PARSE);
    ck_assert_int_eq(err.code, ATTN_CODE_MALFORMED_JSON);
    ck_assert_int_eq(err.position, 15);
    ck_assert_int_eq(attn_explain_request_parse("{\"sentence\": 1}", 15, &r, &err), ATTN_ERR_PARSE);
    ck_assert_int_eq(err.code, ATTN_CODE_NONE);
    /* the tokenizer sets the codes the handler reads */
    int ids[4], n = 0;
    ck_assert_int_eq(attn_tokenize("the lecture was helpfull", ids, 4, &n, &err), ATTN_ERR_VALUE);
    ck_assert_msg(err.code == ATTN_CODE_UNKNOWN_WORD && err.position == 4 &&
                      strcmp(err.token, "helpfull") == 0 && strcmp(err.closest, "helpful") == 0,
                  "%d %d %s %s", err.code, err.position, err.token, err.closest);
    ck_assert_int_eq(attn_tokenize("good good good good good", ids, 4, &n, &err), ATTN_ERR_VALUE);
    ck_assert_msg(err.code == ATTN_CODE_TOO_LONG && err.position == 5, "%d", err.code);
    ck_assert_int_eq(attn_tokenize(" ?! ", ids, 4, &n, &err), ATTN_ERR_VALUE);
    ck_assert_int_eq(err.code, ATTN_CODE_EMPTY_SENTENCE);
    ck_assert_int_eq(attn_tokenize(NULL, ids, 4, &n, &err), ATTN_ERR_ARG);
    ck_assert_int_eq(err.code, ATTN_CODE_NONE);
}
END_TEST

int main(void) {
    Suite *s = suite_create("serve/handler");
    TCase *tc = tcase_create("handler");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_static_endpoints);
    tcase_add_test(tc, test_bad_requests);
    tcase_add_test(tc, test_unknown_word);
    tcase_add_test(tc, test_status_by_code);
    tcase_add_test(tc, test_explain_matches_library);
    tcase_add_test(tc, test_sets_match_evaluate);
    tcase_add_test(tc, test_predict);
    tcase_add_test(tc, test_request_parser);
    tcase_add_test(tc, test_json_escaping);
    tcase_add_test(tc, test_app_errors);
    tcase_add_test(tc, test_app_file_names);
    suite_add_tcase(s, tc);
    TCase *own = tcase_create("own_vocab");
    tcase_add_checked_fixture(own, own_setup, own_teardown);
    tcase_add_test(own, test_own_vocab_explain);
    tcase_add_test(own, test_own_vocab_endpoints);
    TCase *unk = tcase_create("unk_vocab");
    tcase_add_checked_fixture(unk, unk_setup, unk_teardown);
    tcase_add_test(unk, test_unk_words);
    suite_add_tcase(s, unk);
    tcase_set_timeout(own, 60);
    suite_add_tcase(s, own);
    return tu_run_suite(s);
}

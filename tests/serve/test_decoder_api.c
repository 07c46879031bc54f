/* test_decoder_api.c -- the decoder endpoints of `attn serve` without a socket (serve_handle):
 * a weights directory made here (a random seq2seq-transformer, a random compose-shaped model
 * whose source vocabulary holds the polarity tokens, the committed Transformer classifier);
 * /api/decoders lists them; /api/generate returns exactly attn_s2s_explanation_to_json of an
 * attn_seq2seq_explain computed here (with a forced prefix too); /api/compose samples as
 * attn_seq2seq_sample and judges each sample with the classifier's probability; bad requests
 * (malformed JSON, duplicate and unknown keys, unknown words and models, a layer out of range,
 * wrong methods, the body limit) get their statuses and codes. */
#include "attn_seq2seq.h"
#include "serve.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static serve_app *app;
static char dir[64];
static attn_seq2seq *rewrite_m, *compose_m;

static attn_seq2seq *make(int src_vocab, uint64_t seed, const char *name) {
    attn_seq2seq_config c = attn_seq2seq_config_default(ATTN_S2S_TRANSFORMER);
    c.src_vocab = src_vocab;
    c.d_model = 16;
    c.ffn_dim = 32;
    c.max_tgt_len = 10;
    attn_seq2seq *m = NULL;
    attn_error err;
    ck_assert(attn_seq2seq_create(&c, seed, &m, &err) == ATTN_OK);
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    ck_assert_msg(attn_seq2seq_save_json(m, false, true, path, &err) == ATTN_OK, "%s", err.msg);
    return m;
}

static void setup(void) {
    snprintf(dir, sizeof dir, "/tmp/attn-decoder-api-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    rewrite_m = make(ATTN_VOCAB_SIZE, 3, "seq2seq-transformer-seed2.json");
    compose_m = make(ATTN_TGT_VOCAB_SIZE, 4, "compose-seq2seq-transformer-seed1.json");
    attn_seq2seq_free(make(ATTN_VOCAB_SIZE, 5, "seq2seq-transformer-seed7.json")); /* not served */
    char path[128];
    snprintf(path, sizeof path, "%s/transformer-seed1.json", dir);
    ck_assert(symlink(tu_source_path("weights/transformer-seed1.json"), path) == 0);
    attn_error err;
    ck_assert_msg(serve_app_create(dir, 2, &app, &err) == ATTN_OK, "%s", err.msg);
}

static void teardown(void) {
    serve_app_free(app);
    attn_seq2seq_free(rewrite_m);
    attn_seq2seq_free(compose_m);
    const char *names[] = {"seq2seq-transformer-seed2.json", "seq2seq-transformer-seed7.json",
                           "compose-seq2seq-transformer-seed1.json", "transformer-seed1.json"};
    for (int i = 0; i < 4; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

static char *call(const char *method, const char *uri, const char *body, size_t len, int *status) {
    const serve_request rq = {method, uri, body, body ? (len ? len : strlen(body)) : 0};
    serve_response rs;
    serve_handle(app, 1, &rq, &rs);
    char *s = malloc(rs.len + 1);
    memcpy(s, rs.data, rs.len);
    s[rs.len] = '\0';
    *status = rs.status;
    serve_response_clear(&rs);
    return s;
}

static void expect(const char *method, const char *uri, const char *body, int status,
                   const char *code) {
    int got;
    char *t = call(method, uri, body, 0, &got);
    char want[96];
    snprintf(want, sizeof want, "\"code\": \"%s\"", code);
    ck_assert_msg(got == status && strstr(t, want), "%s %s %.80s: want %d %s, got %d %.300s",
                  method, uri, body ? body : "", status, code, got, t);
    free(t);
}

START_TEST(test_decoders_listed) {
    int st;
    char *t = call("GET", "/api/decoders", NULL, 0, &st);
    ck_assert_int_eq(st, 200);
    ck_assert_msg(strstr(t, "{\"name\": \"compose-seq2seq-transformer\", \"arch\": "
                            "\"seq2seq-transformer\", \"seed\": 1, \"task\": \"compose\"") &&
                      strstr(t, "{\"name\": \"seq2seq-transformer\", \"arch\": "
                                "\"seq2seq-transformer\", \"seed\": 2, \"task\": \"rewrite\"") &&
                      strstr(t, "\"maps\": true, \"max_words\": 80, \"max_out\": 9"),
                  "%s", t);
    ck_assert(strstr(t, "compose") < strstr(t, "\"name\": \"seq2seq-")); /* by name */
    free(t);
    ck_assert(serve_request_is_heavy(&(serve_request){"POST", "/api/generate", NULL, 0}));
    ck_assert(serve_request_is_heavy(&(serve_request){"POST", "/api/compose", NULL, 0}));
}
END_TEST

/* The text /api/generate must answer for (text, prefix, layer, head), a sentence of the task's
 * grammar. */
static char *want_generate(const char *text, const int *prefix, int n_prefix, int layer, int head) {
    int src[ATTN_MAX_WORDS], n = 0;
    attn_error err;
    ck_assert(attn_tokenize(text, src, ATTN_MAX_WORDS, &n, &err) == ATTN_OK);
    const attn_s2s_explain_opts o = {.prefix = prefix, .n_prefix = n_prefix};
    attn_s2s_explanation *e = NULL;
    ck_assert(attn_seq2seq_explain(rewrite_m, src, n, &o, &e, &err) == ATTN_OK);
    const attn_s2s_json_opts jo = {false, true, layer, head};
    char *json = NULL;
    ck_assert(attn_s2s_explanation_to_json(text, src, e, &jo, &json, NULL, &err) == ATTN_OK);
    attn_s2s_explanation_free(e);
    char *out = malloc(strlen(json) + 128);
    sprintf(out,
            "{\"model\": \"seq2seq-transformer\", \"seed\": 2, \"on_task\": true, \"note\": null, "
            "\"explain\": %s}",
            json);
    free(json);
    return out;
}

START_TEST(test_generate) {
    int st;
    char *t = call("POST", "/api/generate", "{\"text\": \"the exam was not very clear\"}", 0, &st);
    ck_assert_int_eq(st, 200);
    char *want = want_generate("the exam was not very clear", NULL, 0, -1, -1);
    ck_assert_str_eq(t, want);
    free(t);
    free(want);
    const int prefix[2] = {ATTN_TGT_POSITIVE, attn_vocab_id("lecture")};
    t = call("POST", "/api/generate",
             "{\"model\": \"seq2seq-transformer\", \"text\": \"The exam was not very clear!\", "
             "\"prefix\": [\"positive\", \"lecture\"], \"layer\": 1, \"head\": 0}",
             0, &st);
    ck_assert_int_eq(st, 200);
    want = want_generate("The exam was not very clear!", prefix, 2, 1, 0);
    ck_assert_str_eq(t, want);
    ck_assert(strstr(t, "\"prefix\": 2") && strstr(t, "\"alignment_layer\": 1"));
    free(t);
    free(want);
    /* the write-up's sentence: "food" is only a distractor's noun, so not a sentence the model
     * saw: answered, with the grammar's reason */
    t = call("POST", "/api/generate", "{\"text\": \"the food was not good\"}", 0, &st);
    ck_assert_int_eq(st, 200);
    ck_assert_msg(
        strstr(t,
               "\"on_task\": false, \"note\": \"not a sentence of the grammar: no subject noun") !=
            NULL,
        "%s", t);
    free(t);
    t = call("POST", "/api/generate", "{\"text\": \"good\", \"maps\": true}", 0, &st);
    ck_assert(st == 200 && strstr(t, "\"cross_attention\"") && strstr(t, "\"self_attention\""));
    free(t);
}
END_TEST

START_TEST(test_generate_errors) {
    expect("POST", "/api/generate", "{\"text\": \"a\"", 400, "malformed_json");
    expect("POST", "/api/generate", "{\"text\": \"good\", \"text\": \"bad\"}", 400,
           "malformed_json");
    expect("POST", "/api/generate", "{\"text\": \"good\", \"beam\": 2}", 400, "bad_request");
    expect("POST", "/api/generate", "{\"text\": \"the exam was nto clear\"}", 400, "unknown_word");
    expect("POST", "/api/generate", "{\"text\": \"  \"}", 400, "empty_sentence");
    expect("POST", "/api/generate", "{\"model\": \"gru\", \"text\": \"good\"}", 404,
           "unknown_model");
    expect("POST", "/api/generate", "{\"text\": \"good\", \"layer\": 2}", 400, "bad_request");
    expect("POST", "/api/generate", "{\"text\": \"good\", \"head\": 7}", 400, "bad_request");
    expect("POST", "/api/generate", "{\"text\": \"good\", \"prefix\": [\"[BOS]\"]}", 400,
           "bad_request");
    expect("POST", "/api/generate",
           "{\"text\": \"good\", \"prefix\": [\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\","
           "\"a\",\"a\"]}",
           400, "bad_request");
    expect("POST", "/api/generate", "{\"model\": \"compose-seq2seq-transformer\", \"text\": \"a\"}",
           400, "bad_request");
    expect("GET", "/api/generate", NULL, 405, "method_not_allowed");
    expect("POST", "/api/decoders", "{}", 405, "method_not_allowed");
    expect("GET", "/api/compose", NULL, 405, "method_not_allowed");
    char *big = malloc(SERVE_MAX_BODY + 2);
    memset(big, ' ', SERVE_MAX_BODY + 1);
    big[SERVE_MAX_BODY + 1] = '\0';
    expect("POST", "/api/generate", big, 413, "too_long");
    free(big);
    char words[4096] = "{\"text\": \"";
    for (int i = 0; i < 81; i++) strcat(words, "good ");
    strcat(words, "\"}");
    expect("POST", "/api/generate", words, 400, "too_long");
}
END_TEST

START_TEST(test_compose) {
    int st;
    char *t = call("POST", "/api/compose",
                   "{\"polarity\": \"negative\", \"subject\": \"exam\", \"temperature\": 0.8, "
                   "\"top_p\": 0.9, \"n\": 3, \"seed\": 11}",
                   0, &st);
    ck_assert_msg(st == 200, "%s", t);
    ck_assert(strstr(t, "\"source\": \"negative exam\""));
    /* each sample is attn_seq2seq_sample's, each judged by the classifier */
    const char *at = t;
    for (int k = 0; k < 3; k++) {
        const int src[2] = {ATTN_TGT_NEGATIVE, attn_vocab_id("exam")};
        const attn_s2s_sampling cfg = {0.8, 0, 0.9, 11 + (uint64_t)k};
        int out[ATTN_S2S_MAX_TGT], n_out = 0;
        attn_error err;
        ck_assert(attn_seq2seq_sample(compose_m, src, 2, 9, true, &cfg, out, &n_out, NULL, NULL,
                                      &err) == ATTN_OK);
        char want[1024];
        int w = snprintf(want, sizeof want, "{\"seed\": %d, \"text\": \"", 11 + k);
        for (int i = 0; i < n_out; i++)
            w += snprintf(want + w, sizeof want - (size_t)w, i ? " %s" : "%s",
                          attn_tgt_vocab_token(out[i]));
        at = strstr(at, want);
        ck_assert_msg(at != NULL, "sample %d: want %s in %s", k, want, t);
        static const char head[] = "\"judges\": [{\"model\": \"transformer\", \"seed\": 1, ";
        const char *judge = strstr(at, head);
        ck_assert_msg(judge != NULL, "%s", at);
        bool words = n_out > 0;
        for (int i = 0; i < n_out; i++) words = words && out[i] > 1 && out[i] < ATTN_VOCAB_SIZE;
        if (words) { /* the classifier's own probability */
            attn_model *m = NULL;
            ck_assert(attn_weights_load_json(tu_source_path("weights/transformer-seed1.json"), &m,
                                             &err) == ATTN_OK);
            const attn_batch b = {.B = 1, .T = n_out, .ids = out, .lengths = &n_out};
            float logit;
            ck_assert(attn_model_forward(m, &b, &logit, &err) == ATTN_OK);
            char p[64];
            snprintf(p, sizeof p, "\"probability\": %.9g", 1.0 / (1.0 + exp(-(double)logit)));
            ck_assert_msg(strstr(judge, p) == judge + sizeof head - 1, "%s in %.120s", p, judge);
            attn_model_free(m);
        } else {
            ck_assert(strstr(judge, "\"probability\": null") == judge + sizeof head - 1);
        }
        attn_parse parse;
        const bool gram = words && attn_grammar_parse(out, n_out, &parse, &err) == ATTN_OK;
        const char *g = strstr(at, "\"grammar\": {\"grammatical\": ");
        ck_assert_ptr_nonnull(g);
        ck_assert_msg(!strncmp(g + 27, gram ? "true" : "false", gram ? 4 : 5), "%.80s", g);
        at++;
    }
    free(t);
    expect("POST", "/api/compose", "{\"polarity\": \"meh\"}", 400, "bad_request");
    expect("POST", "/api/compose", "{\"polarity\": \"positive\", \"subject\": \"great\"}", 400,
           "bad_request");
    expect("POST", "/api/compose", "{\"polarity\": \"positive\", \"n\": 17}", 400, "bad_request");
    expect("POST", "/api/compose",
           "{\"polarity\": \"positive\", \"model\": \"seq2seq-transformer\"}", 400, "bad_request");
    expect("POST", "/api/compose", "{\"polarity\": \"positive\", \"model\": \"x\"}", 404,
           "unknown_model");
    expect("POST", "/api/compose", "{\"polarity\": \"positive\",}", 400, "malformed_json");
}
END_TEST

int main(void) {
    Suite *s = suite_create("serve/decoder_api");
    TCase *tc = tcase_create("decoder_api");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_decoders_listed);
    tcase_add_test(tc, test_generate);
    tcase_add_test(tc, test_generate_errors);
    tcase_add_test(tc, test_compose);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}

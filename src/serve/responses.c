/* responses.c -- what every endpoint of `attn serve` answers with: a JSON body (copied or
 * taken from a buffer), an error object {"error": {"status", "code", "message"}}, the
 * tokenizer's and the request parser's errors as answers (chosen by status and code, never by
 * message text), and the one query-string reader. Uses sbuf and nothing else of the server. */
#include "decoder_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void serve_response_clear(serve_response *rs) {
    if (!rs) return;
    free(rs->owned);
    memset(rs, 0, sizeof *rs);
}

static const char json_type[] = "application/json; charset=utf-8";

void serve_json_copy(serve_response *rs, const char *json, size_t len) {
    serve_response_clear(rs);
    rs->owned = malloc(len + 1);
    if (!rs->owned) {
        serve_error_response(rs, 503, "out_of_memory", "the server is out of memory");
        return;
    }
    memcpy(rs->owned, json, len);
    rs->owned[len] = '\0';
    *rs = (serve_response){200, json_type, (const unsigned char *)rs->owned, len, rs->owned, true};
}

bool serve_json_answer(serve_response *rs, int status, attn_json_writer *w) {
    char *s = NULL;
    size_t len = 0;
    if (attn_json_writer_take(w, &s, &len, NULL) != ATTN_OK) {
        serve_error_response(rs, 503, "out_of_memory", "the server is out of memory");
        return false;
    }
    serve_response_clear(rs);
    *rs = (serve_response){status, json_type, (const unsigned char *)s, len, s, true};
    return true;
}

void serve_json_model_fields(attn_json_writer *w, const char *model, int seed) {
    attn_json_field_string(w, "model", model);
    attn_json_field_int(w, "seed", seed);
}

/* Statically allocated last resort when even the error message cannot be allocated. */
static const char oom_json[] = "{\"error\": {\"status\": 503, \"code\": \"out_of_memory\", "
                               "\"message\": \"the server is out of memory\"}}";

/* {"error": {"status", "code", "message", -- left open for more fields. */
static void error_begin(attn_json_writer *w, int status, const char *code, const char *message) {
    attn_json_writer_init(w, NULL);
    attn_json_begin_object(w);
    attn_json_begin_object_field(w, "error");
    attn_json_field_int(w, "status", status);
    attn_json_field_string(w, "code", code);
    attn_json_field_string(w, "message", message);
}

void serve_error_response(serve_response *rs, int status, const char *code, const char *message) {
    serve_response_clear(rs);
    attn_json_writer w;
    error_begin(&w, status, code, message);
    attn_json_end_object(&w);
    attn_json_end_object(&w);
    char *s = NULL;
    size_t len = 0;
    if (attn_json_writer_take(&w, &s, &len, NULL) != ATTN_OK)
        *rs = (serve_response){
            503, json_type, (const unsigned char *)oom_json, sizeof oom_json - 1, NULL, true};
    else
        *rs = (serve_response){status, json_type, (const unsigned char *)s, len, s, true};
}

/* The unknown words an answer lists at most (unknown_count says how many there were). */
#define SUGGESTIONS_MAX 16

/* "place": the class of words the grammar puts at the word's place, or null (attn_data.h; s
 * NULL: no suggestion for the word). */
static void place_json(attn_json_writer *w, const attn_suggestion *s) {
    attn_json_key(w, "place");
    if (!s || !s->place) {
        attn_json_null(w);
        return;
    }
    attn_json_begin_object(w);
    attn_json_field_string(w, "class", s->place);
    attn_json_field_string(w, "rule", s->rule);
    attn_json_begin_array_field(w, "groups");
    for (int g = 0; g < s->n_groups; g++) {
        attn_json_begin_object(w);
        attn_json_field_string(w, "category", s->groups[g].category);
        attn_json_begin_array_field(w, "words");
        for (int i = 0; i < s->groups[g].n; i++) attn_json_string(w, s->groups[g].words[i]);
        attn_json_end_array(w);
        attn_json_end_object(w);
    }
    attn_json_end_array(w);
    attn_json_end_object(w);
}

static void nearest_json(attn_json_writer *w, const char *nearest) {
    attn_json_key(w, "nearest");
    if (nearest)
        attn_json_string(w, nearest);
    else
        attn_json_null(w);
}

/* 400 unknown_word with the word's position, the word, the nearest vocabulary word by spelling
 * and its place's class, and every unknown word of the sentence so (attn_vocab_suggest). */
static void unknown_word_response(serve_response *rs, const attn_error *err,
                                  const attn_vocab *vocab, const char *sentence, const char *model,
                                  int line) {
    attn_suggestion *sg = malloc(SUGGESTIONS_MAX * sizeof *sg);
    int n = 0;
    if (!sg || attn_vocab_suggest(vocab, sentence, sg, SUGGESTIONS_MAX, &n, NULL) != ATTN_OK) n = 0;
    const int listed = n < SUGGESTIONS_MAX ? n : SUGGESTIONS_MAX;
    /* the error's word is the first unknown one: the same tokenizer */
    const attn_suggestion *first = listed > 0 && sg[0].position == err->position ? &sg[0] : NULL;
    attn_json_writer w;
    error_begin(&w, 400, "unknown_word", err->msg);
    attn_json_field_int(&w, "position", err->position);
    attn_json_field_string(&w, "word", err->token);
    attn_json_field_string(&w, "nearest", err->closest);
    attn_json_field_string(&w, "model", model);
    if (line > 0) attn_json_key(&w, "line"), attn_json_int(&w, line);
    place_json(&w, first);
    attn_json_field_int(&w, "unknown_count", n);
    attn_json_begin_array_field(&w, "unknown_words");
    for (int i = 0; i < listed; i++) {
        attn_json_begin_object(&w);
        attn_json_field_int(&w, "position", sg[i].position);
        attn_json_field_string(&w, "word", sg[i].word);
        nearest_json(&w, sg[i].nearest);
        place_json(&w, &sg[i]);
        attn_json_end_object(&w);
    }
    attn_json_end_array(&w);
    attn_json_end_object(&w);
    attn_json_end_object(&w);
    free(sg);
    if (!serve_json_answer(rs, 400, &w)) serve_error_response(rs, 400, "unknown_word", err->msg);
}

/* A tokenizer error as an answer, chosen by its status and code (never by its message): an
 * unknown word with a suggestion as unknown_word (above); an empty or too long sentence;
 * anything else as bad_sentence. */
void serve_tokenize_error(serve_response *rs, const attn_error *err, const attn_vocab *vocab,
                          const char *sentence, const char *model, int line) {
    if (err->status == ATTN_ERR_NOMEM)
        serve_error_response(rs, 503, "bad_sentence", err->msg);
    else if (err->code == ATTN_CODE_UNKNOWN_WORD && err->closest[0])
        unknown_word_response(rs, err, vocab, sentence, model, line);
    else if (err->code == ATTN_CODE_TOO_LONG)
        serve_error_response(rs, 400, "too_long", err->msg);
    else if (err->code == ATTN_CODE_EMPTY_SENTENCE)
        serve_error_response(rs, 400, "empty_sentence", err->msg);
    else
        serve_error_response(rs, 400, "bad_sentence", err->msg);
}

/* The request's parse error as an answer. */
void serve_request_error(serve_response *rs, attn_status st, const attn_error *err) {
    if (st == ATTN_ERR_NOMEM)
        serve_error_response(rs, 503, "out_of_memory", err->msg);
    else
        serve_error_response(
            rs, 400, err->code == ATTN_CODE_MALFORMED_JSON ? "malformed_json" : "bad_request",
            err->msg);
}

void serve_unknown_decoder(serve_response *rs, const char *name) {
    sbuf msg = {0};
    sb_add(&msg, "unknown seq2seq model ");
    sb_json_string(&msg, name);
    sb_add(&msg, " (loaded: see /api/decoders)");
    serve_error_response(rs, 404, "unknown_model", msg.failed ? "unknown model" : msg.s);
    sb_free(&msg);
}

int serve_query_value(const char *query, const char *key, char *out, size_t n) {
    const size_t klen = strlen(key);
    for (const char *p = query; p && *p; p = strchr(p, '&') ? strchr(p, '&') + 1 : NULL) {
        if (strncmp(p, key, klen) != 0 || p[klen] != '=') continue;
        size_t len = 0;
        for (const char *v = p + klen + 1; *v && *v != '&'; v++) {
            char c = *v;
            if (c == '+') {
                c = ' ';
            } else if (c == '%') {
                unsigned x;
                if (!v[1] || !v[2] || sscanf(v + 1, "%2x", &x) != 1 || x == 0) return -1;
                c = (char)x;
                v += 2;
            }
            if (len + 1 >= n) return -1;
            out[len++] = c;
        }
        out[len] = '\0';
        return 1;
    }
    return 0;
}

/* decoder_api.c -- the decoder half of `attn serve`: the endpoints of the seq2seq models
 * (loaded by registry.c) and their routing:
 *
 *   GET  /api/decoders   {"decoders": [{"name", "arch", "seed", "task", "params", "n_layers",
 *                        "n_heads", "maps", "max_words", "max_out"}]}
 *   POST /api/generate   {"model"?, "text", "prefix"? [target words], "layer"?, "head"? (-1 or
 *                        absent: the mean), "maps"? (all maps in full)} -> {"model", "seed",
 *                        "on_task": whether the text is a sentence of the task's grammar (the
 *                        model saw only those), "note": why not (null when it is),
 *                        "explain": attn_s2s_explanation_to_json's object with "alignment"
 *                        [output][source] for the layer and head asked}
 *   POST /api/compose    see serve_api_compose (decoder_compose.c)
 *
 * Requests are read strictly (src/io/seq2seq_explain_json.c), with the classifier API's limits;
 * a word outside the vocabulary is 400 unknown_word with the nearest word, as /api/explain. */
#include "decoder_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- POST /api/generate ------------------------------------------------------------------- */

/* "on_task": true, "note": null -- or false and the grammar's reason (the first word it cannot
 * read): the rewrite models were trained on sentences of the grammar only, so an answer for any
 * other text says little (the write-up's "the food was not good" has "food" only as a
 * distractor's noun). */
static void on_task_json(const int *src, int n_src, attn_json_writer *w) {
    attn_parse parse;
    attn_error why;
    const bool on = attn_grammar_parse(src, n_src, &parse, &why) == ATTN_OK;
    attn_json_field_bool(w, "on_task", on);
    attn_json_key(w, "note");
    if (on)
        attn_json_null(w);
    else
        attn_json_string(w, why.msg);
}

static void generate(serve_app *app, int ctx, const attn_generate_request *r, int di,
                     serve_response *rs) {
    const serve_entry *dd = &app->entries[di];
    attn_seq2seq *m = serve_decoder_model(app, ctx, di);
    int src[ATTN_MAX_WORDS], n_src = 0;
    attn_error err;
    attn_status st = attn_tokenize(
        r->text, src, dd->s2s.max_src_len < ATTN_MAX_WORDS ? dd->s2s.max_src_len : ATTN_MAX_WORDS,
        &n_src, &err);
    if (st != ATTN_OK) {
        serve_tokenize_error(rs, &err, attn_vocab_builtin(), r->text, dd->name, 0);
        return;
    }
    int L = 0, NH = 0;
    const bool maps = attn_seq2seq_map_shape(m, &L, &NH, NULL);
    if (r->layer >= L || r->head >= NH) {
        serve_error_response(rs, 400, "bad_request",
                             maps ? "\"layer\" or \"head\" beyond the model's (see /api/decoders)"
                                  : "this model has no attention maps: no \"layer\" or \"head\"");
        return;
    }
    if (r->n_prefix > dd->s2s.max_tgt_len - 1 || r->n_prefix > ATTN_S2S_MAX_TGT) {
        serve_error_response(rs, 400, "bad_request", "\"prefix\" is longer than the model writes");
        return;
    }
    const int cap = dd->s2s.max_tgt_len - 1; /* the server writes at most ATTN_S2S_MAX_TGT */
    const attn_s2s_explain_opts o = {.prefix = r->prefix,
                                     .n_prefix = r->n_prefix,
                                     .max_out = cap < ATTN_S2S_MAX_TGT ? cap : ATTN_S2S_MAX_TGT};
    attn_s2s_explanation *e = NULL;
    char *json = NULL;
    size_t len = 0;
    st = attn_seq2seq_explain(serve_decoder_explain_begin(app, ctx, di), src, n_src, &o, &e, &err);
    serve_decoder_explain_end(app, ctx, di);
    const attn_s2s_json_opts jo = {r->maps, maps, r->layer, r->head};
    if (st == ATTN_OK) st = attn_s2s_explanation_to_json(r->text, src, e, &jo, &json, &len, &err);
    attn_s2s_explanation_free(e);
    if (st != ATTN_OK) {
        serve_error_response(rs, st == ATTN_ERR_NOMEM ? 503 : 500, "generate_failed", err.msg);
        return;
    }
    attn_json_writer w;
    attn_json_writer_init(&w, NULL);
    attn_json_begin_object(&w);
    serve_json_model_fields(&w, dd->name, dd->seed);
    on_task_json(src, n_src, &w);
    attn_json_key(&w, "explain");
    attn_json_raw(&w, json, len);
    attn_json_end_object(&w);
    free(json);
    serve_json_answer(rs, 200, &w);
}

void serve_api_generate(serve_app *app, int ctx, const serve_request *rq, serve_response *rs) {
    attn_generate_request r;
    attn_error err;
    attn_status st = attn_generate_request_parse(rq->body, rq->body_len, &r, &err);
    if (st != ATTN_OK) {
        serve_request_error(rs, st, &err);
        return;
    }
    const int di = serve_decoder_find(app, r.model, false);
    if (di < 0)
        serve_unknown_decoder(rs, r.model[0] ? r.model : "(default: none loaded)");
    else if (app->entries[di].compose)
        serve_error_response(rs, 400, "bad_request",
                             "a compose model writes from a polarity and a subject: "
                             "POST /api/compose");
    else
        generate(app, ctx, &r, di, rs);
    attn_generate_request_clear(&r);
}

/* ---- routing -------------------------------------------------------------------------------- */

static bool is(const char *path, size_t n, const char *want) {
    return strlen(want) == n && memcmp(path, want, n) == 0;
}

bool serve_decoder_is_heavy(const char *uri) {
    return strncmp(uri, "/api/generate", 13) == 0 || strncmp(uri, "/api/compose", 12) == 0;
}

bool serve_decoder_route(serve_app *app, int ctx, const serve_request *rq, size_t n,
                         serve_response *rs) {
    const char *path = rq->uri;
    const bool post = rq->method && strcmp(rq->method, "POST") == 0;
    const bool get = rq->method && (strcmp(rq->method, "GET") == 0 || !strcmp(rq->method, "HEAD"));
    if (is(path, n, "/api/decoders")) {
        if (get)
            serve_json_copy(rs, app->decoders_json, app->decoders_len);
        else
            serve_error_response(rs, 405, "method_not_allowed",
                                 "method not allowed here (allowed: GET, HEAD)");
        return true;
    }
    const bool gen = is(path, n, "/api/generate"), comp = is(path, n, "/api/compose");
    if (!gen && !comp) return false;
    if (!post)
        serve_error_response(rs, 405, "method_not_allowed",
                             "method not allowed here (allowed: POST)");
    else if (gen)
        serve_api_generate(app, ctx, rq, rs);
    else
        serve_api_compose(app, ctx, rq, rs);
    return true;
}

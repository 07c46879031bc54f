/* decoder_api.c -- the decoder half of `attn serve`: the seq2seq models of the weights
 * directory (DIR/seq2seq-<arch>-seed<S>.json and DIR/compose-<arch>-seed<S>.json, the lowest
 * seed of each name, one copy per worker context) and their endpoints:
 *
 *   GET  /api/decoders   {"decoders": [{"name", "arch", "seed", "task", "params", "n_layers",
 *                        "n_heads", "maps", "max_words", "max_out"}]}
 *   POST /api/generate   {"model"?, "text", "prefix"? [target words], "layer"?, "head"? (-1 or
 *                        absent: the mean), "maps"? (all maps in full)} -> {"model", "seed",
 *                        "on_task": whether the text is a sentence of the task's grammar (the
 *                        model saw only those), "note": why not (null when it is),
 *                        "explain": attn_s2s_explanation_to_json's object with "alignment"
 *                        [output][source] for the layer and head asked}
 *   POST /api/compose    see serve_api_compose (compose.c of this room)
 *
 * Requests are read strictly (src/io/seq2seq_explain_json.c), with the classifier API's limits;
 * a word outside the vocabulary is 400 unknown_word with the nearest word, as /api/explain. */
#include "decoder_internal.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- loading ----------------------------------------------------------------------------- */

/* "seq2seq-transformer-seed12.json" -> stem "seq2seq-transformer", seed 12; false if the name
 * is not DIR's kind of decoder file. */
static bool decoder_file(const char *name, char *stem, size_t cap, int *seed) {
    if (strncmp(name, "seq2seq-", 8) != 0 && strncmp(name, "compose-", 8) != 0) return false;
    const size_t len = strlen(name);
    const char *at = strstr(name, "-seed");
    if (!at || len < 6 || strcmp(name + len - 5, ".json") != 0) return false;
    while (strstr(at + 1, "-seed")) at = strstr(at + 1, "-seed");
    int s = 0;
    const char *p = at + 5;
    if (p == name + len - 5) return false;
    for (; p < name + len - 5; p++) {
        if (*p < '0' || *p > '9' || s > 999) return false;
        s = s * 10 + (*p - '0');
    }
    if ((size_t)(at - name) >= cap || s < 1) return false;
    memcpy(stem, name, (size_t)(at - name));
    stem[at - name] = '\0';
    *seed = s;
    return true;
}

/* The lowest seed of every decoder file name of dir into d->d[] (not yet loaded). */
static attn_status scan_dir(serve_decoders *d, const char *dir, attn_error *err) {
    DIR *dp = opendir(dir);
    if (!dp) return ATTN_OK; /* the classifier loader names a missing directory */
    for (struct dirent *de; (de = readdir(dp));) {
        char stem[64];
        int seed, i;
        if (!decoder_file(de->d_name, stem, sizeof stem, &seed)) continue;
        for (i = 0; i < d->n && strcmp(d->d[i].name, stem) != 0; i++) {
        }
        if (i == d->n) {
            if (d->n == SERVE_MAX_DECODERS) {
                closedir(dp);
                return attn_errorf(err, ATTN_ERR_VALUE, "%s: more than %d seq2seq model names", dir,
                                   SERVE_MAX_DECODERS);
            }
            memcpy(d->d[d->n].name, stem, strlen(stem) + 1);
            d->d[d->n++].seed = seed;
        } else if (seed < d->d[i].seed) {
            d->d[i].seed = seed;
        }
    }
    closedir(dp);
    for (int i = 1; i < d->n; i++) /* by name, so that the answers do not follow readdir */
        for (int j = i; j > 0 && strcmp(d->d[j - 1].name, d->d[j].name) > 0; j--) {
            const serve_decoder t = d->d[j];
            d->d[j] = d->d[j - 1];
            d->d[j - 1] = t;
        }
    return ATTN_OK;
}

static attn_status load_models(serve_decoders *d, const char *dir, int n_ctx, attn_error *err) {
    d->models = calloc((size_t)n_ctx * (d->n ? d->n : 1), sizeof *d->models);
    if (!d->models) return attn_errorf(err, ATTN_ERR_NOMEM, "serve: out of memory");
    d->n_ctx = n_ctx;
    for (int i = 0; i < d->n; i++) {
        serve_decoder *e = &d->d[i];
        char path[4096];
        snprintf(path, sizeof path, "%s/%s-seed%d.json", dir, e->name, e->seed);
        attn_seq2seq *m = NULL;
        attn_status st = attn_seq2seq_load_json(path, &m, err);
        if (st != ATTN_OK) return st;
        d->models[i] = m;
        e->cfg = *attn_seq2seq_config_of(m);
        e->n_params = attn_seq2seq_n_params(m);
        e->compose = strncmp(e->name, "compose-", 8) == 0 || e->cfg.task == ATTN_TASK_COMPOSE;
        for (int c = 1; c < n_ctx; c++) {
            attn_seq2seq **dst = &d->models[(size_t)c * d->n + i];
            st = attn_seq2seq_create(&e->cfg, 0, dst, err);
            if (st != ATTN_OK) return st;
            memcpy(attn_seq2seq_params(*dst), attn_seq2seq_params(m), e->n_params * sizeof(float));
        }
    }
    return ATTN_OK;
}

static void decoders_json(serve_decoders *d, sbuf *sb) {
    sb_add(sb, "{\"decoders\": [");
    for (int i = 0; i < d->n; i++) {
        const serve_decoder *e = &d->d[i];
        int L = 0, NH = 0;
        const bool maps = attn_seq2seq_map_shape(d->models[i], &L, &NH, NULL);
        sb_add(sb, i ? ", {\"name\": " : "{\"name\": ");
        sb_json_string(sb, e->name);
        sb_printf(sb,
                  ", \"arch\": \"%s\", \"seed\": %d, \"task\": \"%s\", \"params\": %zu, "
                  "\"n_layers\": %d, \"n_heads\": %d, \"maps\": %s, \"max_words\": %d, "
                  "\"max_out\": %d}",
                  attn_s2s_arch_name(e->cfg.arch), e->seed, e->compose ? "compose" : "rewrite",
                  e->n_params, L, NH, maps ? "true" : "false", e->cfg.max_src_len,
                  e->cfg.max_tgt_len - 1);
    }
    sb_add(sb, "]}");
}

attn_status serve_decoders_load(serve_app *app, const char *dir, int n_ctx, attn_error *err) {
    serve_decoders *d = calloc(1, sizeof *d);
    if (!d) return attn_errorf(err, ATTN_ERR_NOMEM, "serve: out of memory");
    app->decoders = d;
    attn_status st = scan_dir(d, dir, err);
    if (st == ATTN_OK) st = load_models(d, dir, n_ctx, err);
    if (st == ATTN_OK) {
        sbuf sb = {0};
        decoders_json(d, &sb);
        d->json = sb_take(&sb, &d->json_len);
        if (!d->json) st = attn_errorf(err, ATTN_ERR_NOMEM, "serve: out of memory");
    }
    return st;
}

int serve_decoders_count(const serve_app *app) {
    return app->decoders ? app->decoders->n : 0;
}

void serve_decoders_free(serve_decoders *d) {
    if (!d) return;
    if (d->models)
        for (size_t i = 0; i < (size_t)d->n_ctx * d->n; i++) attn_seq2seq_free(d->models[i]);
    free(d->models);
    free(d->json);
    free(d);
}

int serve_decoder_find(const serve_app *app, const char *name, bool compose) {
    const serve_decoders *d = app->decoders;
    int first = -1;
    for (int i = 0; d && i < d->n; i++) {
        if (name[0] && strcmp(d->d[i].name, name) == 0) return i;
        if (name[0] || d->d[i].compose != compose) continue;
        if (strstr(d->d[i].name, "seq2seq-transformer")) return i; /* the write-up's model */
        if (first < 0) first = i;
    }
    return first;
}

attn_seq2seq *serve_decoder_model(serve_app *app, int ctx, int i) {
    return app->decoders->models[(size_t)ctx * app->decoders->n + i];
}

/* ---- POST /api/generate ------------------------------------------------------------------- */

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

/* "on_task": true, "note": null -- or false and the grammar's reason (the first word it cannot
 * read): the rewrite models were trained on sentences of the grammar only, so an answer for any
 * other text says little (the write-up's "the food was not good" has "food" only as a
 * distractor's noun). */
static void on_task_json(const int *src, int n_src, sbuf *sb) {
    attn_parse parse;
    attn_error why;
    if (attn_grammar_parse(src, n_src, &parse, &why) == ATTN_OK) {
        sb_add(sb, "\"on_task\": true, \"note\": null");
        return;
    }
    sb_add(sb, "\"on_task\": false, \"note\": ");
    sb_json_string(sb, why.msg);
}

static void generate(serve_app *app, int ctx, const attn_generate_request *r, int di,
                     serve_response *rs) {
    const serve_decoder *dd = &app->decoders->d[di];
    attn_seq2seq *m = serve_decoder_model(app, ctx, di);
    int src[ATTN_MAX_WORDS], n_src = 0;
    attn_error err;
    attn_status st = attn_tokenize(
        r->text, src, dd->cfg.max_src_len < ATTN_MAX_WORDS ? dd->cfg.max_src_len : ATTN_MAX_WORDS,
        &n_src, &err);
    if (st != ATTN_OK) {
        serve_tokenize_error(rs, &err, dd->name, 0);
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
    if (r->n_prefix > dd->cfg.max_tgt_len - 1 || r->n_prefix > ATTN_S2S_MAX_TGT) {
        serve_error_response(rs, 400, "bad_request", "\"prefix\" is longer than the model writes");
        return;
    }
    const int cap = dd->cfg.max_tgt_len - 1; /* the server writes at most ATTN_S2S_MAX_TGT */
    const attn_s2s_explain_opts o = {.prefix = r->prefix,
                                     .n_prefix = r->n_prefix,
                                     .max_out = cap < ATTN_S2S_MAX_TGT ? cap : ATTN_S2S_MAX_TGT};
    attn_s2s_explanation *e = NULL;
    char *json = NULL;
    st = attn_seq2seq_explain(m, src, n_src, &o, &e, &err);
    const attn_s2s_json_opts jo = {r->maps, maps, r->layer, r->head};
    if (st == ATTN_OK) st = attn_s2s_explanation_to_json(r->text, src, e, &jo, &json, NULL, &err);
    attn_s2s_explanation_free(e);
    if (st != ATTN_OK) {
        serve_error_response(rs, st == ATTN_ERR_NOMEM ? 503 : 500, "generate_failed", err.msg);
        return;
    }
    sbuf sb = {0};
    sb_add(&sb, "{\"model\": ");
    sb_json_string(&sb, dd->name);
    sb_printf(&sb, ", \"seed\": %d, ", dd->seed);
    on_task_json(src, n_src, &sb);
    sb_add(&sb, ", \"explain\": ");
    sb_add(&sb, json);
    sb_add(&sb, "}");
    free(json);
    serve_json_take(rs, &sb);
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
    else if (app->decoders->d[di].compose)
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
            serve_json_copy(rs, app->decoders->json, app->decoders->json_len);
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

void serve_decoders_summary(serve_app *app) {
    const serve_decoders *d = app->decoders;
    size_t at = strlen(app->summary);
    for (int i = 0; d && i < d->n; i++) {
        const int w = snprintf(app->summary + at, sizeof app->summary - at, "%s%s (seed %d)",
                               at ? ", " : "", d->d[i].name, d->d[i].seed);
        if (w < 0 || (size_t)w >= sizeof app->summary - at) break;
        at += (size_t)w;
    }
}

/* app.c -- the router of `attn serve`: a request to an embedded asset, a precomputed answer
 * (registry.c) or an endpoint (api.c, predict.c, decoder_api.c), with 404/405 answers of its
 * own (serve_handle). The files below it: registry.c (the models of both families),
 * responses.c (what every endpoint answers with); none of them calls back up here. */
#include "serve_assets.h"
#include "serve_internal.h"

#include <stdio.h>
#include <string.h>

/* ---- routing ----------------------------------------------------------------------------------
 */

static bool path_is(const char *path, size_t n, const char *want) {
    return strlen(want) == n && memcmp(path, want, n) == 0;
}

static const serve_asset *find_asset(const char *path, size_t n) {
    if (path_is(path, n, "/")) path = "/index.html", n = strlen(path);
    if (path_is(path, n, "/figures")) path = "/figures.html", n = strlen(path);
    for (size_t i = 0; i < serve_n_assets; i++)
        if (path_is(path, n, serve_assets[i].path)) return &serve_assets[i];
    return NULL;
}

bool serve_request_is_heavy(const serve_request *rq) {
    if (!rq || !rq->uri) return false;
    return strncmp(rq->uri, "/api/explain", 12) == 0 || strncmp(rq->uri, "/api/predict", 12) == 0 ||
           strncmp(rq->uri, "/api/sets/", 10) == 0 || serve_decoder_is_heavy(rq->uri);
}

static bool method_is(const serve_request *rq, const char *m) {
    return rq->method && strcmp(rq->method, m) == 0;
}

static void method_not_allowed(serve_response *rs, const char *allowed) {
    char msg[96];
    snprintf(msg, sizeof msg, "method not allowed here (allowed: %s)", allowed);
    serve_error_response(rs, 405, "method_not_allowed", msg);
}

/* GET (and HEAD) endpoints and assets. */
static void handle_get(serve_app *app, int ctx, const char *path, size_t n, const char *query,
                       serve_response *rs) {
    if (path_is(path, n, "/healthz")) {
        serve_json_copy(rs, "{\"status\": \"ok\"}", 16);
    } else if (path_is(path, n, "/api/models")) {
        serve_json_copy(rs, app->models_json, app->models_len);
    } else if (path_is(path, n, "/api/vocab")) {
        serve_api_vocab(app, query, rs);
    } else if (path_is(path, n, "/api/positions")) {
        serve_api_positions(app, ctx, query, rs);
    } else if (path_is(path, n, "/api/figures")) {
        serve_json_copy(rs, app->figures_json, app->figures_len);
    } else if (n > 10 && memcmp(path, "/api/sets/", 10) == 0) {
        char name[32];
        if (n - 10 >= sizeof name) {
            serve_error_response(rs, 404, "unknown_set", "no such test set");
            return;
        }
        memcpy(name, path + 10, n - 10);
        name[n - 10] = '\0';
        serve_api_sets(app, ctx, name, query, rs);
    } else {
        const serve_asset *a = find_asset(path, n);
        if (!a) {
            serve_error_response(rs, 404, "not_found", "no such page or endpoint");
            return;
        }
        serve_response_clear(rs);
        *rs = (serve_response){200, a->type, a->data, a->len, NULL, false};
    }
}

void serve_handle(serve_app *app, int ctx, const serve_request *rq, serve_response *rs) {
    memset(rs, 0, sizeof *rs);
    if (!app || !rq || !rq->uri || !rq->method || ctx < 0 || ctx >= app->n_ctx) {
        serve_error_response(rs, 500, "internal", "bad request handler call");
        return;
    }
    const size_t uri_len = strlen(rq->uri);
    if (uri_len > SERVE_MAX_URI_BYTES) {
        serve_error_response(rs, 414, "uri_too_long", "the request URI is too long");
        return;
    }
    if (rq->body_len > SERVE_MAX_BODY) {
        serve_error_response(rs, 413, "too_long", "the request body is larger than 64 KiB");
        return;
    }
    const char *q = strchr(rq->uri, '?');
    const size_t n = q ? (size_t)(q - rq->uri) : uri_len;
    const char *query = q ? q + 1 : "";
    if (path_is(rq->uri, n, "/api/explain")) {
        if (method_is(rq, "POST"))
            serve_api_explain(app, ctx, rq, rs);
        else
            method_not_allowed(rs, "POST");
    } else if (path_is(rq->uri, n, "/api/predict")) {
        if (method_is(rq, "POST"))
            serve_api_predict(app, ctx, rq, query, rs);
        else
            method_not_allowed(rs, "POST");
    } else if (serve_decoder_route(app, ctx, rq, n, rs)) {
        /* answered: /api/decoders, /api/generate, /api/compose (decoder_api.c) */
    } else if (method_is(rq, "GET") || method_is(rq, "HEAD")) {
        handle_get(app, ctx, rq->uri, n, query, rs);
    } else {
        method_not_allowed(rs, "GET, HEAD");
    }
}

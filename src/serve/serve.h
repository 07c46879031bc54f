/* serve.h -- `attn serve`: the HTTP server of the page in web/ and its JSON API, on GNU
 * libmicrohttpd. Two halves:
 *   - serve_app and serve_handle: the models, the vocabulary, the cached test-set results and
 *     the request handler, a plain function from (method, URI, body) to (status, type, body)
 *     that touches no socket (the C tests and the fuzz harness call it directly);
 *   - serve_server: libmicrohttpd's polling thread, a bounded job queue and worker threads that
 *     run the handler for the endpoints that compute (explain, sets).
 * Like the rest of the library it never prints; src/cli/cmd_serve.c does.
 *
 * The API (README, "attn serve"):
 *   GET  /healthz                       {"status": "ok"}
 *   GET  /api/models                    the loaded models, their seeds, sizes and vocabularies
 *   GET  /api/vocab?model=M             {"source": "task"|"file", "vocab_size", "models",
 *                                       "words": [{"id", "word", "category"}]}: the words model
 *                                       M reads (without model=: those of the default models)
 *   POST /api/explain                   {"sentence", "models"?} -> {"sentence", "explanations":
 *                                       [{"model", "seed", "explain": <attn explain object>}]}
 *   POST /api/predict?models=a,b         body: one sentence a line -> {"sentences", "predictions":
 *                                       [{"model", "seed", "logits", "probabilities"}]}
 *   GET  /api/sets/NAME?model=M&seed=S  accuracy and the misclassified sentences (models on
 *                                       the task's vocabulary only)
 * Every model reads words with its own weights file's "vocab" (the built-in vocabulary when
 * the file has none), as attn predict does. Without "models", /api/explain explains the models
 * on the task's vocabulary (or, when none is, those sharing the first model's vocabulary).
 *   GET  /api/figures                   the embedded figures
 *   GET  /api/decoders, POST /api/generate, POST /api/compose: the seq2seq models of DIR
 *                                       (decoder_api.c; docs/decoder.md)
 * Errors: {"error": {"status", "code", "message", ...}} with a 4xx/5xx status. */
#ifndef ATTN_SERVE_H
#define ATTN_SERVE_H

#include "attn.h"

#include <stdbool.h>
#include <stddef.h>

#define SERVE_MAX_BODY          (64 * 1024) /* request bodies above are refused (413) */
#define SERVE_MAX_MISSES        200         /* misclassified sentences listed per test set */
#define SERVE_MAX_SEEDS         9           /* DIR/<model>-seed<S>.json for S = 1..9 */
#define SERVE_MAX_URI_BYTES     2048        /* longer request URIs are refused (414) */
#define SERVE_MAX_PREDICT_LINES 256         /* sentences per POST /api/predict */

typedef struct serve_app serve_app;

/* Loads every DIR/<model>-seed<S>.json (model rnn, lstm, gru, transformer; S = 1..9) into
 * n_contexts copies (one per worker thread: a model is not shared between threads); at least
 * one file must exist. Errors name the directory or file. */
attn_status serve_app_create(const char *weights_dir, int n_contexts, serve_app **out,
                             attn_error *err);
void serve_app_free(serve_app *app);
/* "rnn seed 1 (3,089 parameters), ..." for the startup message; the app's buffer. */
const char *serve_app_summary(const serve_app *app);
int serve_app_n_contexts(const serve_app *app);

typedef struct serve_request {
    const char *method; /* "GET", "POST", ... */
    const char *uri;    /* as sent: path, then optionally '?' and the query */
    const char *body;   /* may be NULL when body_len is 0 */
    size_t body_len;
} serve_request;

typedef struct serve_response {
    int status;
    const char *type;          /* Content-Type */
    const unsigned char *data; /* the body: an embedded asset, or `owned` */
    size_t len;
    char *owned; /* malloc'd body (NULL for assets) */
    bool api;    /* an API answer (Cache-Control: no-store) */
} serve_response;

/* Whether the request runs the models (explain, predict, sets): the server hands those to a worker.
 */
bool serve_request_is_heavy(const serve_request *rq);
/* Answers rq, using model context ctx (0..n_contexts-1) for the heavy endpoints; never fails
 * (out of memory becomes a 500/503 answer). Clear rs with serve_response_clear. */
void serve_handle(serve_app *app, int ctx, const serve_request *rq, serve_response *rs);
void serve_response_clear(serve_response *rs);
/* A JSON error answer (status, code, message) into rs, e.g. 503 from the queue. */
void serve_error_response(serve_response *rs, int status, const char *code, const char *message);

/* ---- the server (http.c) ----------------------------------------------------------------------
 */

typedef struct serve_options {
    const char *host;    /* numeric address, "127.0.0.1" by default */
    int port;            /* 0: any free port (serve_server_port tells which) */
    int threads;         /* worker threads = model contexts of the app */
    int queue;           /* jobs waiting for a worker; more get 503 */
    double time_limit_s; /* a job still waiting after this long gets 503 */
    int conn_timeout_s;  /* idle connections are closed after this long */
    int max_connections;
    int max_per_ip;        /* connections from one client address; more are refused */
    int request_timeout_s; /* a request's headers and body must arrive within this long of the
                              connection opening or the previous answer; else it is closed */
} serve_options;

serve_options serve_options_default(void);

typedef struct serve_server serve_server;
/* Binds and starts serving app (borrowed; it must have opt->threads contexts). */
attn_status serve_server_start(serve_app *app, const serve_options *opt, serve_server **out,
                               attn_error *err);
int serve_server_port(const serve_server *s);
/* Stops taking work (requests that arrive from now on get 503 shutting_down), answers every
 * request already received (queued jobs included), then closes the listening socket, joins
 * the workers and closes everything. Waits at most request_timeout_s + time_limit_s. */
void serve_server_stop(serve_server *s);

/* Whether host (a numeric address, as for serve_options.host) is a loopback address:
 * 127.0.0.0/8, ::1 in any spelling, or an IPv4-mapped 127.x address. */
bool serve_host_is_loopback(const char *host);

#endif

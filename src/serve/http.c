/* http.c -- the server of `attn serve` on GNU libmicrohttpd: one polling thread reads requests
 * and answers the cheap ones (assets, models, vocabulary) itself; requests that run the models
 * (explain, sets) are suspended and put on a bounded queue, from which worker threads (each
 * with its own copy of the models) take them, run serve_handle and resume the connection.
 * Limits: bodies over 64 KiB get 413, a full queue 503 at once, a job that waited longer than
 * the time limit 503, idle connections are closed after conn_timeout_s, at most
 * max_connections at a time (libmicrohttpd refuses more), so memory stays bounded. When the
 * server listens on a loopback address, requests must name it in their Host header (421
 * otherwise): a web page elsewhere cannot reach the API through DNS rebinding. */
#include "serve_internal.h"

#include <microhttpd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CSP                                                                                        \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "                    \
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

enum { REQ_RECEIVING, REQ_QUEUED, REQ_ANSWERED };

typedef struct http_req {
    struct MHD_Connection *conn;
    char *uri;
    char method[8];
    char *body;
    size_t len, cap;
    bool too_big;
    int state;
    double t_queued;
    serve_response rs;
} http_req;

struct serve_server {
    serve_app *app;
    serve_options opt;
    struct MHD_Daemon *daemon;
    int port;
    bool loopback;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    http_req **queue; /* ring of opt.queue */
    int head, count;
    bool stopping;
    pthread_t *workers;
    int n_workers;
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

serve_options serve_options_default(void) {
    return (serve_options){.host = "127.0.0.1",
                           .port = 8080,
                           .threads = 2,
                           .queue = 64,
                           .time_limit_s = 10.0,
                           .conn_timeout_s = 15,
                           .max_connections = 256};
}

/* ---- answering --------------------------------------------------------------------------------
 */

static enum MHD_Result send_response(struct MHD_Connection *c, serve_response *rs) {
    struct MHD_Response *r;
    if (rs->owned) {
        r = MHD_create_response_from_buffer(rs->len, rs->owned, MHD_RESPMEM_MUST_FREE);
        if (r) rs->owned = NULL; /* libmicrohttpd frees it */
    } else {
        r = MHD_create_response_from_buffer(rs->len, (void *)rs->data, MHD_RESPMEM_PERSISTENT);
    }
    if (!r) return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, rs->type);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Content-Security-Policy", CSP);
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(r, "X-Frame-Options", "DENY");
    MHD_add_response_header(r, "Cross-Origin-Resource-Policy", "same-origin");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, rs->api ? "no-store" : "no-cache");
    if (rs->status == 503) MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)rs->status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result send_error(struct MHD_Connection *c, int status, const char *code,
                                  const char *msg) {
    serve_response rs = {0};
    serve_error_response(&rs, status, code, msg);
    enum MHD_Result ok = send_response(c, &rs);
    serve_response_clear(&rs);
    return ok;
}

/* ---- the queue and the workers ----------------------------------------------------------------
 */

/* false when the queue is full or the server is stopping. */
static bool enqueue(serve_server *s, http_req *r) {
    pthread_mutex_lock(&s->lock);
    bool ok = !s->stopping && s->count < s->opt.queue;
    if (ok) {
        r->state = REQ_QUEUED;
        r->t_queued = now_s();
        MHD_suspend_connection(r->conn);
        s->queue[(s->head + s->count++) % s->opt.queue] = r;
        pthread_cond_signal(&s->wake);
    }
    pthread_mutex_unlock(&s->lock);
    return ok;
}

typedef struct worker_arg {
    serve_server *s;
    int ctx;
} worker_arg;

static void *worker(void *p) {
    serve_server *s = ((worker_arg *)p)->s;
    const int ctx = ((worker_arg *)p)->ctx;
    free(p);
    for (;;) {
        pthread_mutex_lock(&s->lock);
        while (s->count == 0 && !s->stopping) pthread_cond_wait(&s->wake, &s->lock);
        if (s->count == 0) { /* stopping, and nothing left */
            pthread_mutex_unlock(&s->lock);
            return NULL;
        }
        http_req *r = s->queue[s->head];
        s->head = (s->head + 1) % s->opt.queue;
        s->count--;
        const bool stopping = s->stopping;
        pthread_mutex_unlock(&s->lock);
        if (stopping) {
            serve_error_response(&r->rs, 503, "shutting_down", "the server is shutting down");
        } else if (now_s() - r->t_queued > s->opt.time_limit_s) {
            serve_error_response(&r->rs, 503, "timeout",
                                 "the request waited longer than the time limit; try again");
        } else {
            const serve_request rq = {r->method, r->uri, r->body, r->len};
            serve_handle(s->app, ctx, &rq, &r->rs);
        }
        r->state = REQ_ANSWERED;
        MHD_resume_connection(r->conn);
    }
}

/* ---- libmicrohttpd's callbacks ----------------------------------------------------------------
 */

/* Called with the raw request URI before anything else: the request's state starts here. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c) {
    (void)cls;
    http_req *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->conn = c;
    r->uri = strndup(uri ? uri : "", SERVE_MAX_URI_BYTES + 1);
    if (!r->uri) {
        free(r);
        return NULL;
    }
    return r;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode why) {
    (void)cls, (void)c, (void)why;
    http_req *r = *con_cls;
    if (!r) return;
    free(r->uri);
    free(r->body);
    serve_response_clear(&r->rs);
    free(r);
    *con_cls = NULL;
}

static bool append_body(http_req *r, const char *data, size_t n) {
    if (r->too_big || r->len + n > SERVE_MAX_BODY) {
        r->too_big = true;
        return true; /* read and dropped; answered with 413 */
    }
    if (r->len + n > r->cap) {
        size_t cap = r->cap ? r->cap : 1024;
        while (cap < r->len + n) cap *= 2;
        char *b = realloc(r->body, cap);
        if (!b) return false;
        r->body = b;
        r->cap = cap;
    }
    memcpy(r->body + r->len, data, n);
    r->len += n;
    return true;
}

/* On a loopback address, Host must be that address or localhost (any port). */
static bool host_allowed(const serve_server *s, struct MHD_Connection *c) {
    if (!s->loopback) return true;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    if (!h) return false;
    static const char *const ok[] = {"127.0.0.1", "localhost", "[::1]"};
    for (size_t i = 0; i < 3; i++) {
        size_t n = strlen(ok[i]);
        if (strncmp(h, ok[i], n) == 0 && (h[n] == '\0' || h[n] == ':')) return true;
    }
    return false;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_size, void **con_cls) {
    (void)url, (void)version;
    serve_server *s = cls;
    http_req *r = *con_cls;
    if (!r) return send_error(c, 503, "out_of_memory", "the server is out of memory");
    if (r->state == REQ_ANSWERED) return send_response(c, &r->rs);
    if (r->state == REQ_QUEUED) return MHD_YES; /* not expected: suspended until answered */
    if (!r->method[0]) {                        /* the first call: headers only */
        snprintf(r->method, sizeof r->method, "%s", method);
        if (!host_allowed(s, c))
            return send_error(c, 421, "bad_host",
                              "the Host header must name the address the server listens on");
        const char *cl =
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > SERVE_MAX_BODY)
            return send_error(c, 413, "too_long", "the request body is larger than 64 KiB");
        return MHD_YES;
    }
    if (*upload_size) {
        if (!append_body(r, upload_data, *upload_size))
            return send_error(c, 503, "out_of_memory", "the server is out of memory");
        *upload_size = 0;
        return MHD_YES;
    }
    if (r->too_big) return send_error(c, 413, "too_long", "the request body is larger than 64 KiB");
    const serve_request rq = {r->method, r->uri, r->body, r->len};
    if (serve_request_is_heavy(&rq)) {
        if (enqueue(s, r)) return MHD_YES;
        return send_error(c, 503, "busy", "the server is busy (its queue is full); try again");
    }
    serve_handle(s->app, 0, &rq, &r->rs);
    return send_response(c, &r->rs);
}

/* ---- start and stop ---------------------------------------------------------------------------
 */

static attn_status parse_host(const char *host, int port, struct sockaddr_storage *ss, bool *v6,
                              bool *loopback, attn_error *err) {
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        *v6 = false;
        *loopback = (ntohl(a4->sin_addr.s_addr) >> 24) == 127;
        return ATTN_OK;
    }
    if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        *v6 = true;
        *loopback = IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr);
        return ATTN_OK;
    }
    return attn_errorf(err, ATTN_ERR_ARG,
                       "--host %s: not a numeric IPv4 or IPv6 address (e.g. 127.0.0.1, ::1, "
                       "0.0.0.0)",
                       host);
}

static attn_status start_workers(serve_server *s, attn_error *err) {
    s->workers = calloc((size_t)s->opt.threads, sizeof *s->workers);
    if (!s->workers) return attn_errorf(err, ATTN_ERR_NOMEM, "serve: out of memory");
    for (int i = 0; i < s->opt.threads; i++) {
        worker_arg *a = malloc(sizeof *a);
        if (!a) return attn_errorf(err, ATTN_ERR_NOMEM, "serve: out of memory");
        *a = (worker_arg){s, i};
        if (pthread_create(&s->workers[i], NULL, worker, a) != 0) {
            free(a);
            return attn_errorf(err, ATTN_ERR_NOMEM, "serve: cannot start worker thread %d", i);
        }
        s->n_workers++;
    }
    return ATTN_OK;
}

static void stop_workers(serve_server *s) {
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    pthread_cond_broadcast(&s->wake);
    pthread_mutex_unlock(&s->lock);
    for (int i = 0; i < s->n_workers; i++) pthread_join(s->workers[i], NULL);
    s->n_workers = 0;
}

attn_status serve_server_start(serve_app *app, const serve_options *opt, serve_server **out,
                               attn_error *err) {
    if (!app || !opt || !out || !opt->host)
        return attn_errorf(err, ATTN_ERR_ARG, "serve_server_start: NULL argument");
    *out = NULL;
    if (opt->threads < 1 || opt->threads > serve_app_n_contexts(app) || opt->queue < 1 ||
        opt->port < 0 || opt->port > 65535 || !(opt->time_limit_s > 0) || opt->conn_timeout_s < 1 ||
        opt->max_connections < 1)
        return attn_errorf(err, ATTN_ERR_ARG, "serve_server_start: options out of range");
    serve_server *s = calloc(1, sizeof *s);
    if (!s) return attn_errorf(err, ATTN_ERR_NOMEM, "serve: out of memory");
    s->app = app;
    s->opt = *opt;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->wake, NULL);
    struct sockaddr_storage ss;
    bool v6 = false;
    attn_status st = parse_host(opt->host, opt->port, &ss, &v6, &s->loopback, err);
    s->queue = calloc((size_t)opt->queue, sizeof *s->queue);
    if (st == ATTN_OK && !s->queue) st = attn_errorf(err, ATTN_ERR_NOMEM, "serve: out of memory");
    if (st == ATTN_OK) st = start_workers(s, err);
    if (st == ATTN_OK) {
        unsigned flags =
            MHD_USE_AUTO_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | (v6 ? MHD_USE_IPv6 : 0u);
        s->daemon = MHD_start_daemon(
            flags, (uint16_t)opt->port, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR,
            (struct sockaddr *)&ss, MHD_OPTION_URI_LOG_CALLBACK, on_uri, s,
            MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_CONNECTION_LIMIT,
            (unsigned)opt->max_connections, MHD_OPTION_CONNECTION_TIMEOUT,
            (unsigned)opt->conn_timeout_s, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)65536,
            MHD_OPTION_END);
        if (!s->daemon)
            st = attn_errorf(err, ATTN_ERR_IO,
                             "cannot listen on %s port %d (in use, or not an address of this "
                             "machine?)",
                             opt->host, opt->port);
    }
    if (st == ATTN_OK) {
        const union MHD_DaemonInfo *info =
            MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
        s->port = info ? info->port : opt->port;
        *out = s;
        return ATTN_OK;
    }
    serve_server_stop(s);
    return st;
}

int serve_server_port(const serve_server *s) {
    return s->port;
}

void serve_server_stop(serve_server *s) {
    if (!s) return;
    stop_workers(s); /* every queued request is answered (503) and resumed */
    if (s->daemon) MHD_stop_daemon(s->daemon);
    free(s->workers);
    free(s->queue);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

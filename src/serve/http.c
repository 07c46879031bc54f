/* http.c -- the server of `attn serve` on GNU libmicrohttpd, one thread per connection: the
 * connection's thread reads the request and answers the cheap ones (assets, models, vocabulary)
 * itself; requests that run the models (explain, sets) go on a bounded queue, from which worker
 * threads (each with its own copy of the models) take them, while the connection's thread waits
 * for the answer. (libmicrohttpd 0.9.75's suspend/resume, used before, reads the socket when a
 * connection resumes and drops the answer of a client that half-closed after its request.)
 * Limits, so that memory and threads stay bounded and slow clients cannot starve the others:
 * bodies over 64 KiB get 413, a full queue 503 at once, a job that waited longer than the time
 * limit 503; at most max_connections connections, max_per_ip of them from one address (more are
 * refused); a request must arrive (headers and body) within request_timeout_s of the connection
 * opening or of the previous answer (a reaper thread shuts the socket down otherwise), and an
 * idle connection is closed after conn_timeout_s. Host is checked (http_host.c); Content-Length
 * must be one decimal number, sent once. On stop, the requests already received are answered,
 * later ones get 503 shutting_down. */
#include "http_internal.h"
#include "serve_internal.h"

#include <microhttpd.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define CSP                                                                                        \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "                    \
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

enum { REQ_RECEIVING, REQ_QUEUED, REQ_ANSWERED };

/* One per TCP connection (libmicrohttpd's socket context), listed for the reaper. */
typedef struct http_conn {
    int fd;
    double t_start;   /* the connection opened, or its previous answer was sent */
    bool received;    /* the current request has arrived whole: the deadline no longer applies */
    bool idle;        /* answered, and no new request line yet */
    bool reaped;      /* shut down by the reaper */
    bool before_stop; /* its request was on its way when the server began to stop */
    struct http_conn *prev, *next;
} http_conn;

typedef struct http_req {
    http_conn *conn; /* may be NULL if its allocation failed */
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
    http_listen listen;
    struct MHD_Daemon *daemon;
    int port;
    pthread_mutex_t lock;
    pthread_cond_t wake;    /* a job was queued, or the workers must quit */
    pthread_cond_t done;    /* a job was answered */
    pthread_cond_t settled; /* a connection went idle or closed */
    pthread_cond_t tick;    /* wakes the reaper to quit */
    http_req **queue;       /* ring of opt.queue */
    int head, count;
    bool stopping; /* no new work: new requests get 503 shutting_down */
    bool quit;     /* the workers and the reaper end */
    pthread_t *workers;
    int n_workers;
    pthread_t reaper;
    bool reaper_started;
    http_conn *conns;
};

serve_options serve_options_default(void) {
    return (serve_options){.host = "127.0.0.1",
                           .port = 8080,
                           .threads = 2,
                           .queue = 64,
                           .time_limit_s = 10.0,
                           .conn_timeout_s = 15,
                           .max_connections = 256,
                           .max_per_ip = 64,
                           .request_timeout_s = 10};
}

/* ---- answering --------------------------------------------------------------------------------
 */

/* close: the connection ends after this answer (shutting down, or the body was not read). */
static enum MHD_Result send_response(struct MHD_Connection *c, serve_response *rs, bool close) {
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
    if (close) MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)rs->status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result send_error(struct MHD_Connection *c, int status, const char *code,
                                  const char *msg) {
    serve_response rs = {0};
    serve_error_response(&rs, status, code, msg);
    enum MHD_Result ok = send_response(c, &rs, true);
    serve_response_clear(&rs);
    return ok;
}

static bool is_stopping(serve_server *s) {
    pthread_mutex_lock(&s->lock);
    const bool stopping = s->stopping;
    pthread_mutex_unlock(&s->lock);
    return stopping;
}

/* Whether the request on c arrived after the server began to stop (it gets 503 shutting_down;
 * the requests already on their way when it began are answered). */
static bool arrived_late(serve_server *s, struct MHD_Connection *c);

/* ---- the queue and the workers ----------------------------------------------------------------
 */

/* Queues r and waits (on the connection's own thread) until a worker has answered it; false
 * at once when the queue is full. */
static bool run_on_worker(serve_server *s, http_req *r) {
    pthread_mutex_lock(&s->lock);
    const bool ok = s->count < s->opt.queue;
    if (ok) {
        r->state = REQ_QUEUED;
        r->t_queued = attn_seconds();
        s->queue[(s->head + s->count++) % s->opt.queue] = r;
        pthread_cond_signal(&s->wake);
        while (r->state != REQ_ANSWERED) pthread_cond_wait(&s->done, &s->lock);
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
        while (s->count == 0 && !s->quit) pthread_cond_wait(&s->wake, &s->lock);
        if (s->count == 0) { /* quitting, and nothing left */
            pthread_mutex_unlock(&s->lock);
            return NULL;
        }
        http_req *r = s->queue[s->head];
        s->head = (s->head + 1) % s->opt.queue;
        s->count--;
        pthread_mutex_unlock(&s->lock);
        if (attn_seconds() - r->t_queued > s->opt.time_limit_s) {
            serve_error_response(&r->rs, 503, "timeout",
                                 "the request waited longer than the time limit; try again");
        } else {
            const serve_request rq = {r->method, r->uri, r->body, r->len};
            serve_handle(s->app, ctx, &rq, &r->rs);
        }
        pthread_mutex_lock(&s->lock);
        r->state = REQ_ANSWERED;
        pthread_cond_broadcast(&s->done);
        pthread_mutex_unlock(&s->lock);
    }
}

/* ---- the connections and the reaper ------------------------------------------------------------
 */

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe) {
    serve_server *s = cls;
    http_conn *hc = *socket_context;
    pthread_mutex_lock(&s->lock);
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *info =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        hc = info ? calloc(1, sizeof *hc) : NULL;
        if (hc) { /* without it the connection still has libmicrohttpd's idle timeout */
            *hc = (http_conn){.fd = info->connect_fd, .t_start = attn_seconds(), .next = s->conns};
            if (s->conns) s->conns->prev = hc;
            s->conns = hc;
        }
        *socket_context = hc;
    } else if (hc) { /* closed: libmicrohttpd closes the socket after this returns */
        if (hc->prev)
            hc->prev->next = hc->next;
        else
            s->conns = hc->next;
        if (hc->next) hc->next->prev = hc->prev;
        free(hc);
        *socket_context = NULL;
        pthread_cond_broadcast(&s->settled);
    }
    pthread_mutex_unlock(&s->lock);
}

/* Every 100 ms: shuts down the sockets of connections whose request has not arrived whole
 * within request_timeout_s (libmicrohttpd's own timeout only counts idle time, so a client
 * sending a byte a second would hold its connection for ever); the connection's thread then
 * reads the end of the stream and closes it. */
static void *reaper(void *p) {
    serve_server *s = p;
    pthread_mutex_lock(&s->lock);
    while (!s->quit) {
        const double now = attn_seconds();
        for (http_conn *hc = s->conns; hc; hc = hc->next) {
            if (!hc->received && !hc->reaped && now - hc->t_start > s->opt.request_timeout_s) {
                shutdown(hc->fd, SHUT_RDWR);
                hc->reaped = true;
            }
        }
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 100000000L;
        if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&s->tick, &s->lock, &until);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static http_conn *conn_of(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? info->socket_context : NULL;
}

static bool arrived_late(serve_server *s, struct MHD_Connection *c) {
    http_conn *hc = conn_of(c);
    pthread_mutex_lock(&s->lock);
    const bool late = s->stopping && !(hc && hc->before_stop);
    pthread_mutex_unlock(&s->lock);
    return late;
}

/* ---- libmicrohttpd's request callbacks ---------------------------------------------------------
 */

/* Called with the raw request URI before anything else: the request's state starts here. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c) {
    serve_server *s = cls;
    http_req *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->uri = strndup(uri ? uri : "", SERVE_MAX_URI_BYTES + 1);
    if (!r->uri) {
        free(r);
        return NULL;
    }
    r->conn = conn_of(c);
    pthread_mutex_lock(&s->lock);
    if (r->conn) r->conn->idle = false;
    pthread_mutex_unlock(&s->lock);
    return r;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode why) {
    (void)why;
    serve_server *s = cls;
    http_req *r = *con_cls;
    http_conn *hc = conn_of(c);
    pthread_mutex_lock(&s->lock);
    if (hc) { /* the next request's deadline counts from here */
        hc->t_start = attn_seconds();
        hc->received = false;
        hc->idle = true;
        hc->before_stop = false;
        pthread_cond_broadcast(&s->settled);
    }
    pthread_mutex_unlock(&s->lock);
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

/* The first call (headers only): Host, framing, size; MHD_YES to go on reading the body. */
static enum MHD_Result check_headers(serve_server *s, struct MHD_Connection *c) {
    http_refusal why;
    if (!http_head_check(&s->listen, c, &why)) return send_error(c, why.status, why.code, why.msg);
    if (arrived_late(s, c))
        return send_error(c, 503, "shutting_down", "the server is shutting down");
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_size, void **con_cls) {
    (void)url, (void)version;
    serve_server *s = cls;
    http_req *r = *con_cls;
    if (!r) return send_error(c, 503, "out_of_memory", "the server is out of memory");
    if (!r->method[0]) { /* the first call: headers only */
        snprintf(r->method, sizeof r->method, "%s", method);
        return check_headers(s, c);
    }
    if (*upload_size) {
        if (!append_body(r, upload_data, *upload_size))
            return send_error(c, 503, "out_of_memory", "the server is out of memory");
        *upload_size = 0;
        if (!r->too_big) return MHD_YES;
        http_refuse_body_now(c); /* a chunked body: answered at once, not when it ends */
        return MHD_NO;
    }
    pthread_mutex_lock(&s->lock);
    if (r->conn) r->conn->received = true;
    pthread_mutex_unlock(&s->lock);
    if (arrived_late(s, c))
        return send_error(c, 503, "shutting_down", "the server is shutting down");
    if (r->too_big) return send_error(c, 413, "too_long", "the request body is larger than 64 KiB");
    const serve_request rq = {r->method, r->uri, r->body, r->len};
    if (serve_request_is_heavy(&rq)) {
        if (!run_on_worker(s, r))
            return send_error(c, 503, "busy", "the server is busy (its queue is full); try again");
    } else {
        serve_handle(s->app, 0, &rq, &r->rs);
    }
    return send_response(c, &r->rs, is_stopping(s));
}

/* ---- start and stop ---------------------------------------------------------------------------
 */

static attn_status start_threads(serve_server *s, attn_error *err) {
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
    if (pthread_create(&s->reaper, NULL, reaper, s) != 0)
        return attn_errorf(err, ATTN_ERR_NOMEM, "serve: cannot start the reaper thread");
    s->reaper_started = true;
    return ATTN_OK;
}

static void stop_threads(serve_server *s) {
    pthread_mutex_lock(&s->lock);
    s->quit = true;
    pthread_cond_broadcast(&s->wake);
    pthread_cond_broadcast(&s->tick);
    pthread_mutex_unlock(&s->lock);
    for (int i = 0; i < s->n_workers; i++) pthread_join(s->workers[i], NULL);
    s->n_workers = 0;
    if (s->reaper_started) pthread_join(s->reaper, NULL);
    s->reaper_started = false;
}

static bool options_ok(const serve_options *o) {
    return o->threads >= 1 && o->queue >= 1 && o->port >= 0 && o->port <= 65535 &&
           o->time_limit_s > 0 && o->conn_timeout_s >= 1 && o->max_connections >= 1 &&
           o->max_per_ip >= 1 && o->request_timeout_s >= 1;
}

static struct MHD_Daemon *start_daemon(serve_server *s) {
    const unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                           MHD_USE_POLL | MHD_USE_ITC | (s->listen.v6 ? MHD_USE_IPv6 : 0u);
    return MHD_start_daemon(flags, (uint16_t)s->opt.port, NULL, NULL, on_request, s,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&s->listen.ss,
                            MHD_OPTION_URI_LOG_CALLBACK, on_uri, s, MHD_OPTION_NOTIFY_COMPLETED,
                            on_completed, s, MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)s->opt.max_connections,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)s->opt.max_per_ip,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)s->opt.conn_timeout_s,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)65536,
                            MHD_OPTION_THREAD_STACK_SIZE, (size_t)512 * 1024, MHD_OPTION_END);
}

attn_status serve_server_start(serve_app *app, const serve_options *opt, serve_server **out,
                               attn_error *err) {
    if (!app || !opt || !out || !opt->host)
        return attn_errorf(err, ATTN_ERR_ARG, "serve_server_start: NULL argument");
    *out = NULL;
    if (!options_ok(opt) || opt->threads > serve_app_n_contexts(app))
        return attn_errorf(err, ATTN_ERR_ARG, "serve_server_start: options out of range");
    serve_server *s = calloc(1, sizeof *s);
    if (!s) return attn_errorf(err, ATTN_ERR_NOMEM, "serve: out of memory");
    s->app = app;
    s->opt = *opt;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->wake, NULL);
    pthread_cond_init(&s->done, NULL);
    pthread_cond_init(&s->settled, NULL);
    pthread_cond_init(&s->tick, NULL);
    attn_status st = http_listen_parse(opt->host, opt->port, &s->listen, err);
    s->queue = calloc((size_t)opt->queue, sizeof *s->queue);
    if (st == ATTN_OK && !s->queue) st = attn_errorf(err, ATTN_ERR_NOMEM, "serve: out of memory");
    if (st == ATTN_OK) st = start_threads(s, err);
    if (st == ATTN_OK && !(s->daemon = start_daemon(s)))
        st = attn_errorf(err, ATTN_ERR_IO,
                         "cannot listen on %s port %d (in use, or not an address of this "
                         "machine?)",
                         opt->host, opt->port);
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

/* Whether a connection is still receiving or waiting for its answer. */
static bool any_busy(const serve_server *s) {
    for (const http_conn *hc = s->conns; hc; hc = hc->next)
        if (!hc->idle) return true;
    return s->count > 0;
}

/* Waits until every request received is answered (new ones get 503 shutting_down meanwhile),
 * at most until the slowest of them would have been cut off anyway. */
static void drain(serve_server *s) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += s->opt.request_timeout_s + (time_t)s->opt.time_limit_s + 1;
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    for (http_conn *hc = s->conns; hc; hc = hc->next) hc->before_stop = !hc->idle;
    while (any_busy(s))
        if (pthread_cond_timedwait(&s->settled, &s->lock, &until) == ETIMEDOUT) break;
    pthread_mutex_unlock(&s->lock);
}

void serve_server_stop(serve_server *s) {
    if (!s) return;
    if (s->daemon) {
        drain(s);
        MHD_stop_daemon(s->daemon); /* closes the listening socket and the idle connections */
    }
    stop_threads(s);
    free(s->workers);
    free(s->queue);
    pthread_cond_destroy(&s->tick);
    pthread_cond_destroy(&s->settled);
    pthread_cond_destroy(&s->done);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

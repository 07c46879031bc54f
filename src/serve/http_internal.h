/* http_internal.h -- what http.c shares with http_host.c (the listening address and the Host
 * check) and http_early.c (an answer before the body has ended). Library-internal. */
#ifndef ATTN_HTTP_INTERNAL_H
#define ATTN_HTTP_INTERNAL_H

#include "serve.h"

#include <netinet/in.h>
#include <stdbool.h>
#include <sys/socket.h>

typedef struct http_listen {
    struct sockaddr_storage ss; /* the address and port to bind */
    bool v6;
    bool loopback;
} http_listen;

/* Parses --host (numeric IPv4 or IPv6) and the port into l; ATTN_ERR_ARG names the option. */
attn_status http_listen_parse(const char *host, int port, http_listen *l, attn_error *err);

/* Checks the request's Host header values (n_values of them, as received): 0 when allowed,
 * 400 when sent twice or not exactly host[:port-digits], 421 when the server listens on a
 * loopback address and the header names neither that address (any spelling) nor localhost. */
int http_host_check(const http_listen *l, const char *const *values, int n_values);

/* Why a request is refused before its body is read: the HTTP status and the answer's error code
 * and message. */
typedef struct http_refusal {
    int status;
    const char *code, *msg;
} http_refusal;

struct MHD_Connection;
/* The request head's checks (the Host header, one decimal Content-Length or chunked, the
 * announced body at most SERVE_MAX_BODY): true to go on, else false with *why. */
bool http_head_check(const http_listen *l, struct MHD_Connection *c, http_refusal *why);

/* Answers 413 too_long on c's socket before the request body has ended (a chunked body past
 * SERVE_MAX_BODY), then drains what the client still sends for at most half a second
 * (http_early.c); the caller returns MHD_NO so that libmicrohttpd closes the connection. */
void http_refuse_body_now(struct MHD_Connection *c);

#endif

/* http_host.c -- the listening address of `attn serve` and the checks of a request's head: the
 * Host header (on a loopback address a request must name that address, in any spelling, or
 * localhost, so that a web page elsewhere cannot reach the API through DNS rebinding; everywhere
 * the header must be exactly host[:port-digits] and sent once) and the framing (one decimal
 * Content-Length or chunked, the body at most 64 KiB). */
#include "http_internal.h"
#include "serve_internal.h"

#include <microhttpd.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool v4_is_loopback(const struct in_addr *a) {
    return (ntohl(a->s_addr) >> 24) == 127;
}

static bool v6_is_loopback(const struct in6_addr *a) {
    if (IN6_IS_ADDR_LOOPBACK(a)) return true;
    if (!IN6_IS_ADDR_V4MAPPED(a)) return false;
    return a->s6_addr[12] == 127;
}

bool serve_host_is_loopback(const char *host) {
    struct in_addr a4;
    struct in6_addr a6;
    if (!host) return false;
    if (inet_pton(AF_INET, host, &a4) == 1) return v4_is_loopback(&a4);
    if (inet_pton(AF_INET6, host, &a6) == 1) return v6_is_loopback(&a6);
    return false;
}

attn_status http_listen_parse(const char *host, int port, http_listen *l, attn_error *err) {
    memset(l, 0, sizeof *l);
    struct sockaddr_in *a4 = (struct sockaddr_in *)&l->ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&l->ss;
    if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        l->loopback = v4_is_loopback(&a4->sin_addr);
        return ATTN_OK;
    }
    if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        l->v6 = true;
        l->loopback = v6_is_loopback(&a6->sin6_addr);
        return ATTN_OK;
    }
    return attn_errorf(err, ATTN_ERR_ARG,
                       "--host %s: not a numeric IPv4 or IPv6 address (e.g. 127.0.0.1, ::1, "
                       "0.0.0.0)",
                       host);
}

/* ":digits" (1 to 5 of them, at most 65535) or nothing. */
static bool port_ok(const char *p) {
    if (*p == '\0') return true;
    if (*p++ != ':') return false;
    size_t n = strspn(p, "0123456789");
    return n >= 1 && n <= 5 && p[n] == '\0' && atoi(p) <= 65535;
}

/* Whether name (n bytes) is the listening address, in any spelling. */
static bool names_listen_address(const http_listen *l, const char *name, size_t n) {
    char buf[64];
    if (n >= sizeof buf) return false;
    memcpy(buf, name, n);
    buf[n] = '\0';
    if (l->v6) {
        struct in6_addr a;
        if (n < 2 || buf[0] != '[' || buf[n - 1] != ']') return false;
        buf[n - 1] = '\0';
        return inet_pton(AF_INET6, buf + 1, &a) == 1 &&
               memcmp(&a, &((const struct sockaddr_in6 *)&l->ss)->sin6_addr, sizeof a) == 0;
    }
    struct in_addr a;
    return inet_pton(AF_INET, buf, &a) == 1 &&
           a.s_addr == ((const struct sockaddr_in *)&l->ss)->sin_addr.s_addr;
}

int http_host_check(const http_listen *l, const char *const *values, int n_values) {
    if (n_values > 1) return 400;
    if (n_values == 0) return l->loopback ? 421 : 0; /* HTTP/1.0 may omit it */
    const char *h = values[0];
    size_t n; /* the name's length, before the optional port */
    if (h[0] == '[') {
        const char *end = strchr(h, ']');
        if (!end) return 400;
        n = (size_t)(end - h) + 1;
        if (strspn(h + 1, "0123456789abcdefABCDEF:.") != n - 2) return 400;
    } else {
        n = strspn(h, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_");
    }
    if (n == 0 || !port_ok(h + n)) return 400;
    if (!l->loopback) return 0;
    if (n == 9 && strncasecmp(h, "localhost", 9) == 0) return 0;
    return names_listen_address(l, h, n) ? 0 : 421;
}

/* ---- the request head ------------------------------------------------------------------- */

/* The headers that decide where a request ends and whom it is for. */
typedef struct framing {
    const char *host[2];
    int n_host;
    const char *length[2];
    int n_length;
    bool chunked;
} framing;

static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *value) {
    (void)kind;
    framing *f = cls;
    if (!value) value = "";
    if (strcasecmp(key, MHD_HTTP_HEADER_HOST) == 0) {
        if (f->n_host < 2) f->host[f->n_host] = value;
        f->n_host++;
    } else if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
        if (f->n_length < 2) f->length[f->n_length] = value;
        f->n_length++;
    } else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
        f->chunked = true;
    }
    return MHD_YES;
}

static bool refuse(http_refusal *why, int status, const char *code, const char *msg) {
    *why = (http_refusal){status, code, msg};
    return false;
}

bool http_head_check(const http_listen *l, struct MHD_Connection *c, http_refusal *why) {
    framing f = {0};
    MHD_get_connection_values(c, MHD_HEADER_KIND, collect_header, &f);
    const int host = http_host_check(l, f.host, f.n_host < 2 ? f.n_host : 2);
    if (host == 400)
        return refuse(why, 400, "bad_host",
                      "the Host header must be sent once, as host or host:port");
    if (host == 421)
        return refuse(why, 421, "bad_host",
                      "the Host header must name the address the server listens on");
    const char *cl = f.n_length ? f.length[0] : NULL;
    if (f.n_length > 1 || (cl && f.chunked))
        return refuse(why, 400, "bad_request",
                      "send one Content-Length header (or chunked transfer encoding)");
    if (cl && (cl[0] == '\0' || strspn(cl, "0123456789") != strlen(cl)))
        return refuse(why, 400, "bad_request", "Content-Length is not a decimal number");
    if (cl && (strlen(cl) > 9 || strtoull(cl, NULL, 10) > SERVE_MAX_BODY))
        return refuse(why, 413, "too_long", "the request body is larger than 64 KiB");
    return true;
}

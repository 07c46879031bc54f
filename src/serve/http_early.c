/* http_early.c -- an answer before the request body has ended (http_internal.h).
 * libmicrohttpd 0.9.75 queues a response only once the body is complete, so a chunked body that
 * grows past SERVE_MAX_BODY (one chunk of size ffffffffffffffff, say) would be read and dropped
 * until the request timeout. Here the connection's thread writes the 413 onto the socket itself
 * (libmicrohttpd is in its reading state: nothing of its own is sent there), then reads and drops
 * what the client still sends, for a bounded time, so that closing the socket does not reset
 * the answer away before the client reads it; the caller then has libmicrohttpd close. */
#include "http_internal.h"

#include <microhttpd.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define LINGER_MS    500               /* how long to drain the rest of the body */
#define LINGER_BYTES ((size_t)4 << 20) /* and at most this much of it */

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

/* Writes text[len] to fd (waiting at most LINGER_MS in all); false if it could not. */
static bool send_all(int fd, const char *text, size_t len, double deadline) {
    while (len > 0) {
        ssize_t n = send(fd, text, len, MSG_NOSIGNAL);
        if (n > 0) {
            text += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
        struct pollfd p = {fd, POLLOUT, 0};
        int wait = (int)(deadline - now_ms());
        if (wait <= 0 || poll(&p, 1, wait) < 0) return false;
    }
    return true;
}

/* Reads and drops what the client still sends, until it half-closes, LINGER_BYTES or the
 * deadline. */
static void drain(int fd, double deadline) {
    char buf[16384];
    size_t total = 0;
    while (total < LINGER_BYTES) {
        struct pollfd p = {fd, POLLIN, 0};
        int wait = (int)(deadline - now_ms());
        if (wait <= 0 || poll(&p, 1, wait) <= 0) return;
        ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return;
        if (n > 0) total += (size_t)n;
    }
}

static bool answer_now(struct MHD_Connection *c, const serve_response *rs, const char *reason) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!info) return false;
    const int fd = info->connect_fd;
    char head[512];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %d %s\r\nConnection: close\r\nContent-Type: %s\r\n"
                     "Content-Length: %zu\r\nX-Content-Type-Options: nosniff\r\n"
                     "Cache-Control: no-store\r\n\r\n",
                     rs->status, reason, rs->type, rs->len);
    if (n <= 0 || (size_t)n >= sizeof head) return false;
    const double deadline = now_ms() + LINGER_MS;
    const char *body = rs->owned ? rs->owned : (const char *)rs->data;
    if (!send_all(fd, head, (size_t)n, deadline) || !send_all(fd, body, rs->len, deadline))
        return false;
    shutdown(fd, SHUT_WR);
    drain(fd, deadline);
    return true;
}

void http_refuse_body_now(struct MHD_Connection *c) {
    serve_response rs = {0};
    serve_error_response(&rs, 413, "too_long", "the request body is larger than 64 KiB");
    answer_now(c, &rs, "Content Too Large");
    serve_response_clear(&rs);
}

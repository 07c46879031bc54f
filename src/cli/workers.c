/* workers.c -- a pool of forked worker processes: jobs 0..n-1 run n_workers at a time, each in
 * its own process, and report to the parent through one pipe, one line per write() (writes up
 * to PIPE_BUF bytes are atomic, so lines of different workers never interleave). The parent
 * polls the pipe, hands each line to on_line, reaps exited workers (on_exit, after draining
 * the pipe: a worker's last line was written before it exited) and calls on_tick. */
#include "cli.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

struct cli_pool {
    int fd[2];
    int job; /* in a worker: its job */
    const cli_pool_hooks *h;
    pid_t *pids; /* per job; 0 when not running */
    int n_jobs;
    char buf[8192];
    size_t have;
};

int cli_n_cores(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

void cli_pool_send(cli_pool *p, const char *fmt, ...) {
    char buf[1024];
    int head = snprintf(buf, sizeof buf, "%d ", p->job);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + head, sizeof buf - 1 - (size_t)head, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    n += head;
    if (n > (int)sizeof buf - 2) n = (int)sizeof buf - 2;
    for (int i = 0; i < n; i++)
        if (buf[i] == '\n') buf[i] = ' ';
    buf[n++] = '\n';
    ssize_t w;
    do w = write(p->fd[1], buf, (size_t)n);
    while (w < 0 && errno == EINTR);
}

/* Waits up to timeout_ms for output and hands over the complete lines; returns bytes read. */
static ssize_t pump(cli_pool *p, int timeout_ms) {
    struct pollfd pfd = {p->fd[0], POLLIN, 0};
    if (poll(&pfd, 1, timeout_ms) <= 0 || !(pfd.revents & POLLIN)) return 0;
    ssize_t r = read(p->fd[0], p->buf + p->have, sizeof p->buf - 1 - p->have);
    if (r <= 0) return 0;
    p->have += (size_t)r;
    p->buf[p->have] = 0;
    char *line = p->buf, *nl;
    while ((nl = strchr(line, '\n'))) {
        *nl = 0;
        char *rest;
        long job = strtol(line, &rest, 10);
        if (rest != line && job >= 0 && job < p->n_jobs)
            p->h->on_line((int)job, rest[0] == ' ' ? rest + 1 : rest, p->h->ctx);
        line = nl + 1;
    }
    p->have = (size_t)(p->buf + p->have - line);
    memmove(p->buf, line, p->have);
    if (p->have == sizeof p->buf - 1) p->have = 0; /* an overlong line: drop it */
    return r;
}

/* Starts job in a new process; false if fork failed (on_exit has been told). */
static bool start(cli_pool *p, int job) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        p->h->on_exit(job, -1, p->h->ctx);
        return false;
    }
    if (pid == 0) {
        close(p->fd[0]);
        p->job = job;
        _exit(p->h->run(p, job, p->h->ctx));
    }
    p->pids[job] = pid;
    return true;
}

/* Reaps exited workers; returns how many. */
static int reap(cli_pool *p) {
    int n = 0, status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        for (int j = 0; j < p->n_jobs; j++) {
            if (p->pids[j] != pid) continue;
            p->pids[j] = 0;
            while (pump(p, 0) > 0) {
            }
            p->h->on_exit(j, status, p->h->ctx);
            n++;
        }
    }
    return n;
}

bool cli_pool_run(int n_jobs, int n_workers, const cli_pool_hooks *h) {
    cli_pool p = {.h = h, .n_jobs = n_jobs};
    p.pids = calloc((size_t)n_jobs + 1, sizeof *p.pids);
    if (!p.pids || pipe(p.fd) != 0) {
        free(p.pids);
        return false;
    }
    double start_s = attn_seconds();
    int next = 0, running = 0, finished = 0;
    while (finished < n_jobs) {
        while (running < n_workers && next < n_jobs) {
            if (start(&p, next++))
                running++;
            else
                finished++;
        }
        pump(&p, 250);
        int n = reap(&p);
        running -= n;
        finished += n;
        if (h->on_tick) h->on_tick(attn_seconds() - start_s, h->ctx);
    }
    close(p.fd[0]);
    close(p.fd[1]);
    free(p.pids);
    return true;
}

void cli_pool_exit_reason(int status, char *msg, size_t size) {
    if (status < 0)
        snprintf(msg, size, "cannot start a worker process");
    else if (WIFSIGNALED(status))
        snprintf(msg, size, "worker killed by signal %d", WTERMSIG(status));
    else
        snprintf(msg, size, "worker exited (status %d) without a result", WEXITSTATUS(status));
}

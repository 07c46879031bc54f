/* serve.c -- bench/serve: load on `attn serve` over loopback. Starts the server (--attn, on a
 * free port, --threads workers), then C concurrent clients (keep-alive HTTP/1.1, one
 * connection each) send POST /api/explain with a 20-word sentence and all three models for S
 * seconds: requests/s, p50/p99 latency, errors (non-200 answers or broken connections). Then
 * the server's CPU time per request, its resident memory (VmRSS) before and after N more explain
 * requests and after M cheap ones (vocabulary, unknown word, malformed JSON; memory must stay
 * flat), and, with --torch, tools/serve_torch.py doing the same explain in PyTorch per request
 * for the same time, as the yardstick. Beside its own clients, Debian's `wrk` (a load generator
 * people know; scripts/install-deps.sh --test) sends the same explain request with as many
 * connections for the same time; its requests/s and latency percentiles are printed too.
 * Usage: build/bench/serve --attn build/attn [--weights weights] [--clients 16] [--seconds 10]
 *                          [--requests 100000] [--cheap 100000] [--threads 2] [--ig-steps 0]
 *                          [--torch tools/serve_torch.py]
 * --ig-steps N asks every explain for N integrated-gradient steps ("ig_steps"; default 0, the
 * page's request).
 * The decoder line: when DIR holds a rewrite model (seq2seq-*-seed<S>.json), the same clients
 * send POST /api/generate with the same sentence for S seconds (the decoder page's request:
 * greedy output, top-5 per step, the mean cross-attention and saliency per step). */
#define _GNU_SOURCE
#include "attn_kernels.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char sentence[] = "honestly the lecture was not very helpful although the coffee "
                               "was great in the winter semester according to my friends";

typedef struct request {
    char text[1024];
    size_t len;
    int status; /* the answer expected */
} request;

typedef struct bench {
    int port;
    request req[4]; /* the clients cycle through req[0..n_req) */
    int n_req;
    double deadline; /* phase 1: stop at this time (0: use the counter) */
    long budget;     /* phase 2: requests left to send */
    pthread_mutex_t lock;
} bench;

typedef struct client {
    bench *b;
    double *lat; /* seconds per request */
    long n, cap, errors, sent;
} client;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int connect_to(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Sends the request and reads one answer; its status, or -1 when the connection broke. */
static int roundtrip(int fd, const char *req, size_t len) {
    for (size_t done = 0; done < len;) {
        ssize_t n = send(fd, req + done, len - done, MSG_NOSIGNAL);
        if (n <= 0) return -1;
        done += (size_t)n;
    }
    static __thread char buf[1 << 17];
    size_t have = 0;
    char *end = NULL;
    while (!(end = memmem(buf, have, "\r\n\r\n", 4))) {
        if (have == sizeof buf) return -1;
        ssize_t n = recv(fd, buf + have, sizeof buf - have, 0);
        if (n <= 0) return -1;
        have += (size_t)n;
    }
    int status = 0;
    if (sscanf(buf, "HTTP/1.1 %d", &status) != 1) return -1;
    const char *cl = strcasestr(buf, "\r\nContent-Length:");
    if (!cl || cl > end) return -1;
    size_t body = strtoul(cl + 17, NULL, 10), got = have - (size_t)(end + 4 - buf);
    while (got < body) {
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0) return -1;
        got += (size_t)n;
    }
    return status;
}

static bool take_one(bench *b) {
    if (b->deadline > 0) return now_s() < b->deadline;
    pthread_mutex_lock(&b->lock);
    bool ok = b->budget > 0;
    b->budget -= ok;
    pthread_mutex_unlock(&b->lock);
    return ok;
}

static void *run_client(void *p) {
    client *c = p;
    int fd = connect_to(c->b->port);
    while (take_one(c->b)) {
        if (fd < 0 && (fd = connect_to(c->b->port)) < 0) {
            c->errors++;
            continue;
        }
        double t = now_s();
        const request *rq = &c->b->req[c->sent++ % c->b->n_req];
        int st = roundtrip(fd, rq->text, rq->len);
        if (st != rq->status) {
            c->errors++;
            if (st < 0) close(fd), fd = -1;
            continue;
        }
        if (c->n == c->cap) {
            c->cap = c->cap ? 2 * c->cap : 4096;
            double *l = realloc(c->lat, (size_t)c->cap * sizeof *l);
            if (!l) abort();
            c->lat = l;
        }
        c->lat[c->n++] = now_s() - t;
    }
    if (fd >= 0) close(fd);
    return NULL;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Runs the clients (phase 1 by time, phase 2 by count); prints and returns errors. */
static long run_clients(bench *b, int n_clients, const char *what, long *n_done) {
    client *cs = calloc((size_t)n_clients, sizeof *cs);
    pthread_t *th = calloc((size_t)n_clients, sizeof *th);
    if (!cs || !th) abort();
    double t0 = now_s();
    for (int i = 0; i < n_clients; i++) {
        cs[i].b = b;
        pthread_create(&th[i], NULL, run_client, &cs[i]);
    }
    long n = 0, errors = 0;
    for (int i = 0; i < n_clients; i++) {
        pthread_join(th[i], NULL);
        n += cs[i].n;
        errors += cs[i].errors;
    }
    double wall = now_s() - t0;
    double *all = malloc((size_t)(n ? n : 1) * sizeof *all);
    if (!all) abort();
    for (int i = 0, k = 0; i < n_clients; k += (int)cs[i].n, i++)
        memcpy(all + k, cs[i].lat, (size_t)cs[i].n * sizeof *all);
    qsort(all, (size_t)n, sizeof *all, cmp_double);
    printf("%-8s %ld requests in %.1f s: %.1f req/s, p50 %.2f ms, p99 %.2f ms, errors %ld\n", what,
           n, wall, (double)n / wall, n ? 1e3 * all[n / 2] : 0.0,
           n ? 1e3 * all[(size_t)((double)n * 0.99)] : 0.0, errors);
    *n_done = n;
    for (int i = 0; i < n_clients; i++) free(cs[i].lat);
    free(all);
    free(cs);
    free(th);
    return errors;
}

static long rss_kib(pid_t pid) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
    FILE *f = fopen(path, "r");
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1) break;
    if (f) fclose(f);
    return kib;
}

/* utime + stime of process pid in seconds. */
static double cpu_s(pid_t pid) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    unsigned long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return 0;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static void set_request(bench *b, int i, const char *method, const char *path, const char *body,
                        int status) {
    request *r = &b->req[i];
    r->status = status;
    r->len = (size_t)snprintf(r->text, sizeof r->text,
                              "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: "
                              "application/json\r\nContent-Length: %zu\r\n\r\n%s",
                              method, path, b->port, strlen(body), body);
}

/* Starts `attn serve --port 0`; *port from the URL it prints. */
static pid_t start_server(const char *attn, const char *weights, const char *threads, int *port) {
    int fds[2];
    if (pipe(fds) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execl(attn, attn, "serve", "--weights", weights, "--port", "0", "--threads", threads,
              "--queue", "256", "--max-per-ip", "4096", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    char line[1024] = "";
    if (!f || !fgets(line, sizeof line, f)) return -1;
    const char *p = strstr(line, "127.0.0.1:");
    if (!p || sscanf(p, "127.0.0.1:%d", port) != 1) return -1;
    return pid;
}

/* wrk against the same endpoint with the same body, connections and time: its summary lines.
 * The body goes in through a Lua script (wrk's only way to POST). */
static void run_wrk(const bench *b, const char *body, int clients, double seconds) {
    char script[] = "/tmp/attn-bench-wrk-XXXXXX";
    const int fd = mkstemp(script);
    FILE *s = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!s) {
        printf("wrk      cannot write its script: %s\n", strerror(errno));
        return;
    }
    fprintf(s,
            "wrk.method = \"POST\"\nwrk.headers[\"Content-Type\"] = \"application/json\"\n"
            "wrk.body = [[%s]]\n",
            body);
    fclose(s);
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "wrk -t 2 -c %d -d %.0fs --latency -s %s http://127.0.0.1:%d/api/explain 2>&1",
             clients, seconds < 1 ? 1 : seconds, script, b->port);
    FILE *p = popen(cmd, "r");
    char line[512];
    bool any = false;
    while (p && fgets(line, sizeof line, p)) {
        char *t = line + strspn(line, " \t");
        if (strstr(t, "Requests/sec") || strstr(t, "requests in") || !strncmp(t, "50%", 3) ||
            !strncmp(t, "99%", 3) || strstr(t, "Non-2xx") || strstr(t, "Socket errors") ||
            strstr(t, "not found")) {
            printf("wrk      %s", t);
            any = true;
        }
    }
    const int rc = p ? pclose(p) : -1;
    if (!any || rc != 0)
        printf("wrk      did not run (exit %d; Debian package wrk, scripts/install-deps.sh "
               "--test)\n",
               rc);
    remove(script);
}

/* The decoder line (POST /api/generate), when the server has a rewrite model. */
static long run_decoder(bench *b, pid_t pid, int clients, double seconds) {
    char body[256];
    snprintf(body, sizeof body, "{\"text\": \"%s\"}", sentence);
    set_request(b, 0, "POST", "/api/generate", body, 200);
    b->n_req = 1;
    const int fd = connect_to(b->port);
    const int st = fd < 0 ? -1 : roundtrip(fd, b->req[0].text, b->req[0].len);
    if (fd >= 0) close(fd);
    if (st != 200) {
        printf("decoder  not measured: POST /api/generate answers %d (no seq2seq-*-seed<S>.json "
               "in the weights directory)\n",
               st);
        return 0;
    }
    const double cpu0 = cpu_s(pid);
    b->deadline = now_s() + seconds;
    long n_done = 0;
    const long errors = run_clients(b, clients, "decoder", &n_done);
    printf("decoder  POST /api/generate (20 words: greedy output, top-5, mean cross-attention, "
           "saliency per step); server CPU %.2f ms per request\n",
           n_done ? 1e3 * (cpu_s(pid) - cpu0) / (double)n_done : 0.0);
    fflush(stdout);
    return errors;
}

int main(int argc, char **argv) {
    const char *attn = NULL, *weights = "weights", *threads = "2", *torch = NULL, *steps = "0";
    int clients = 16;
    double seconds = 10;
    long requests = 100000, cheap = 100000;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--attn"))
            attn = argv[i + 1];
        else if (!strcmp(argv[i], "--weights"))
            weights = argv[i + 1];
        else if (!strcmp(argv[i], "--threads"))
            threads = argv[i + 1];
        else if (!strcmp(argv[i], "--torch"))
            torch = argv[i + 1];
        else if (!strcmp(argv[i], "--ig-steps"))
            steps = argv[i + 1];
        else if (!strcmp(argv[i], "--clients"))
            clients = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--seconds"))
            seconds = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--requests"))
            requests = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--cheap"))
            cheap = atol(argv[i + 1]);
        else
            attn = NULL, i = argc; /* unknown option: usage */
    }
    const int ig_steps = atoi(steps);
    if ((argc % 2) == 0 || !attn || clients < 1 || clients > 1024 || !(seconds > 0) ||
        requests < 0 || cheap < 0 || ig_steps < 0 || ig_steps > 4096) {
        fprintf(stderr,
                "usage: %s --attn build/attn [--weights DIR] [--clients 16] [--seconds "
                "10] [--requests 100000] [--cheap 100000] [--threads 2] [--ig-steps 0] "
                "[--torch tools/serve_torch.py]\n",
                argv[0]);
        return 2;
    }
    bench b = {0};
    pthread_mutex_init(&b.lock, NULL);
    pid_t pid = start_server(attn, weights, threads, &b.port);
    if (pid < 0) {
        fprintf(stderr, "serve bench: could not start %s serve\n", attn);
        return 1;
    }
    char body[256];
    snprintf(body, sizeof body, "{\"sentence\": \"%s\", \"ig_steps\": %d}", sentence, ig_steps);
    set_request(&b, 0, "POST", "/api/explain", body, 200);
    b.n_req = 1;
    printf("attn serve --threads %s, %d clients, POST /api/explain: 20 words, rnn + lstm + "
           "transformer (attention, prefixes, gradient x input; %d integrated-gradient steps); "
           "OpenBLAS core %s, %ld cores\n",
           threads, clients, ig_steps, attn_blas_corename(), sysconf(_SC_NPROCESSORS_ONLN));
    double cpu0 = cpu_s(pid);
    b.deadline = now_s() + seconds;
    long n_done = 0;
    long errors = run_clients(&b, clients, "attn", &n_done);
    printf("server CPU: %.2f ms per request (user + system)\n",
           n_done ? 1e3 * (cpu_s(pid) - cpu0) / (double)n_done : 0.0);
    fflush(stdout);
    run_wrk(&b, body, clients, seconds);
    errors += run_decoder(&b, pid, clients, seconds);
    long before = rss_kib(pid);
    b.deadline = 0;
    b.budget = requests;
    errors += run_clients(&b, clients, "memory", &n_done);
    long after = rss_kib(pid);
    printf("server RSS: %.1f MiB before, %.1f MiB after %ld more explain requests (%+.1f MiB)\n",
           before / 1024.0, after / 1024.0, requests, (after - before) / 1024.0);
    /* the cheap paths: vocabulary, an unknown word and malformed JSON (both through the queue) */
    set_request(&b, 0, "GET", "/api/vocab", "", 200);
    set_request(&b, 1, "POST", "/api/explain", "{\"sentence\": \"the lecture was helpfull\"}", 400);
    set_request(&b, 2, "POST", "/api/explain", "{\"sentence\": 007}", 400);
    b.n_req = 3;
    b.budget = cheap;
    before = rss_kib(pid);
    errors += run_clients(&b, clients, "cheap", &n_done);
    after = rss_kib(pid);
    printf("server RSS: %.1f MiB before, %.1f MiB after %ld requests of vocab / unknown word / "
           "malformed JSON (%+.1f MiB)\n",
           before / 1024.0, after / 1024.0, cheap, (after - before) / 1024.0);
    kill(pid, SIGTERM);
    int status = 0;
    waitpid(pid, &status, 0);
    printf("server exit: %s\n",
           WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "clean (0)" : "NOT CLEAN");
    if (torch) {
        char secs[32];
        snprintf(secs, sizeof secs, "%g", seconds);
        fflush(stdout);
        pid_t t = fork();
        if (t == 0) {
            execl("/usr/bin/python3", "python3", torch, "--attn", attn, "--weights", weights,
                  "--sentence", sentence, "--seconds", secs, "--ig-steps", steps, (char *)NULL);
            _exit(127);
        }
        waitpid(t, &status, 0);
    }
    return errors == 0 ? 0 : 1;
}

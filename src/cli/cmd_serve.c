/* cmd_serve.c -- `attn serve`: the write-up's interactive demo in the browser, on attn itself.
 * Loads the models of a weights directory, serves the page of web/ (embedded in the binary)
 * and its JSON API (src/serve) on GNU libmicrohttpd, prints the URL and runs until SIGINT or
 * SIGTERM, then shuts down cleanly (the queued requests are answered, threads joined). */
#include "cli.h"
#include "serve.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char about[] =
    "Serves a local web page that explains sentences with the loaded models: each word\n"
    "shaded by the Transformer's [CLS] attention (any layer and head, and the full query x\n"
    "key map), the recurrent models' probability after each word, saliency per word,\n"
    "counterfactual word swaps, and the test sets' misclassified sentences. Nothing is\n"
    "fetched from the internet; the page and its scripts are compiled into attn.";

static const char notes[] =
    "Models: DIR/<model>-seed<S>.json for model rnn, lstm, gru, transformer and S = 1..9\n"
    "(what attn reproduce writes); the lowest seed of each model is the one explained, all\n"
    "seeds serve the test-set view. Each model reads words with its own file's \"vocab\"\n"
    "(the built-in vocabulary when it has none), as attn predict does; the task's test sets\n"
    "are offered only to models on the task's vocabulary. The JSON API (GET /api/models,\n"
    "/api/vocab?model=M, /api/sets/NAME?model=M&seed=S, /healthz; POST /api/explain\n"
    "{\"sentence\": \"...\", \"models\": [...]}) is described in docs/serve.md.\n"
    "Seq2seq models (seq2seq-gru, seq2seq-attn, seq2seq-transformer),\n"
    "DIR/seq2seq-<arch>-seed<S>.json and DIR/compose-<arch>-seed<S>.json (the\n"
    "lowest seed of each), are the decoder page's (/decoder.html): GET /api/decoders, POST\n"
    "/api/generate and /api/compose (docs/decoder.md, \"Explain and the page\").\n\n"
    "Safety: binds 127.0.0.1 unless --host says otherwise (there is no authentication:\n"
    "a warning is printed for other addresses); request bodies up to 64 KiB; sentences up\n"
    "to the models' length; a bounded queue (503 when full) and a time limit per request;\n"
    "slow clients are cut off (--request-timeout) and limited per address (--max-per-ip),\n"
    "at most 256 connections; security headers (Content-Security-Policy without inline\n"
    "script, nosniff). Stop with "
    "Ctrl-C (SIGINT) or SIGTERM: requests already received are answered, later ones get\n"
    "503 shutting_down, then the server exits (docs/reliability.md).";

/* Blocks SIGINT and SIGTERM in this thread and every thread started after, so that sigwait
 * below receives them. */
static void block_signals(sigset_t *set) {
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, set, NULL);
    signal(SIGPIPE, SIG_IGN);
}

typedef struct stopper {
    serve_server *srv;
    volatile sig_atomic_t done;
} stopper;

static void *stop_server(void *p) {
    stopper *st = p;
    serve_server_stop(st->srv);
    st->done = 1;
    return NULL;
}

/* Stops srv on another thread (it answers what it has received, at most request timeout +
 * time limit) while this one, the thread the kernel gives process signals to first, waits for
 * a second SIGINT/SIGTERM: that one exits at once. */
static void stop_on_signal(serve_server *srv, const sigset_t *set, int sig) {
    cli_message("serve",
                "%s: shutting down (answering the requests received; a second signal "
                "exits at once)",
                sig == SIGTERM ? "SIGTERM" : "SIGINT");
    stopper st = {srv, 0};
    pthread_t t;
    if (pthread_create(&t, NULL, stop_server, &st) != 0) {
        serve_server_stop(srv);
        return;
    }
    const struct timespec tick = {0, 50 * 1000 * 1000};
    while (!st.done) {
        if (sigtimedwait(set, NULL, &tick) > 0) {
            cli_message("serve", "second signal: exiting without waiting");
            _exit(CLI_ERROR);
        }
    }
    pthread_join(t, NULL);
}

static bool is_numeric_host(const char *host) {
    unsigned char buf[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

int cmd_serve(int argc, char **argv) {
    const char *dir = "weights";
    serve_options o = serve_options_default();
    o.threads = cli_n_cores();
    if (o.threads > 16) o.threads = 16;
    int time_limit = 10;
    cli_opt opts[] = {
        {"--weights", "DIR", CLI_OPT_STR, &dir,
         .help = "the directory of <model>-seed<S>.json files"},
        {"--host", "ADDR", CLI_OPT_STR, &o.host,
         .help = "numeric IPv4/IPv6 address to listen on; other than loopback\n"
                 "exposes the page to the network (no authentication)"},
        {"--port", "N", CLI_OPT_INT, &o.port, 0, 65535, .help = "TCP port; 0 = any free port"},
        {"--threads", "N", CLI_OPT_INT, &o.threads, 1, 64, .def = "the cores, at most 16",
         .help =
             "worker threads (they share the models' parameters; each has its own activations)"},
        {"--queue", "N", CLI_OPT_INT, &o.queue, 1, 4096,
         .help = "requests waiting for a worker; beyond, 503"},
        {"--time-limit", "S", CLI_OPT_INT, &time_limit, 1, 3600,
         .help = "seconds a request may wait in the queue (then 503)"},
        {"--request-timeout", "S", CLI_OPT_INT, &o.request_timeout_s, 1, 3600,
         .help = "seconds a request (headers and body) may take to arrive,\n"
                 "from the connection or the previous answer; then it is closed"},
        {"--max-per-ip", "N", CLI_OPT_INT, &o.max_per_ip, 1, 4096,
         .help = "connections at a time from one client address; more are refused"},
    };
    cli_spec spec = CLI_SPEC("serve",
                             "[--weights DIR] [--host ADDR] [--port N] [--threads N] [--queue N]"
                             " [--time-limit S] [--request-timeout S] [--max-per-ip N]",
                             about, NULL, notes, opts);
    int rc = cli_parse(&spec, argc, argv, NULL, NULL);
    if (rc >= 0) return rc;
    if (!is_numeric_host(o.host))
        return cli_usage_error("serve",
                               "--host %s: not a numeric IPv4 or IPv6 address (e.g. "
                               "127.0.0.1, ::1, 0.0.0.0)",
                               o.host);
    o.time_limit_s = time_limit;
    attn_error err;
    serve_app *app = NULL;
    serve_server *srv = NULL;
    attn_set_num_threads(1);
    if (serve_app_create(dir, o.threads, &app, &err) != ATTN_OK) return cli_fail("serve", &err);
    sigset_t set;
    block_signals(&set);
    if (serve_server_start(app, &o, &srv, &err) != ATTN_OK) {
        serve_app_free(app);
        return cli_runtime_error("serve", "%s", err.msg);
    }
    if (!serve_host_is_loopback(o.host))
        cli_message("serve",
                    "warning: listening on %s: anyone who can reach this address can "
                    "use the server (there is no authentication)",
                    o.host);
    const bool v6 = strchr(o.host, ':') != NULL;
    printf("attn serve: http://%s%s%s:%d/  (%s; Ctrl-C stops)\n", v6 ? "[" : "", o.host,
           v6 ? "]" : "", serve_server_port(srv), serve_app_summary(app));
    fflush(stdout);
    int sig = 0;
    sigwait(&set, &sig);
    stop_on_signal(srv, &set, sig);
    serve_app_free(app);
    return CLI_OK;
}

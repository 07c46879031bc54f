/* util.c -- small helpers the commands share: durations, plurals, the atomic file
 * write and the set names. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void cli_fmt_duration(char *buf, size_t n, double s) {
    if (!isfinite(s) || s < 0) s = 0;
    if (s < 60)
        snprintf(buf, n, "%.1f s", s);
    else if (s < 3600)
        snprintf(buf, n, "%dm%02ds", (int)s / 60, (int)s % 60);
    else
        snprintf(buf, n, "%dh%02dm", (int)s / 3600, ((int)s / 60) % 60);
}

bool cli_same_bytes(const char *a, const char *b) {
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    bool same = fa && fb;
    while (same) {
        int ca = getc(fa), cb = getc(fb);
        if (ca != cb) same = false;
        if (ca == EOF || cb == EOF) break;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same;
}

const char *cli_plural(int n, const char *one, const char *many) {
    return n == 1 ? one : many;
}

int cli_make_dir(const char *cmd, const char *opt, const char *path) {
    char dir[4096];
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof dir)
        return cli_runtime_error(cmd, "%s '%s': bad path", opt, path);
    memcpy(dir, path, len + 1);
    /* each parent, then the directory itself, as mkdir -p */
    for (char *p = dir + 1;; p++) {
        if (*p != '/' && *p) continue;
        char c = *p;
        *p = 0;
        struct stat st;
        if (mkdir(dir, 0777) != 0 && errno != EEXIST)
            return cli_runtime_error(cmd, "%s %s: cannot create %s: %s", opt, path, dir,
                                     strerror(errno));
        if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
            return cli_runtime_error(cmd, "%s %s: %s is not a directory", opt, path, dir);
        if (!c) break;
        *p = c;
    }
    return CLI_OK;
}

int cli_make_parent_dir(const char *cmd, const char *opt, const char *path) {
    if (!strchr(path, '/')) return CLI_OK;
    char dir[4096];
    attn_path_dir(path, dir, sizeof dir);
    return cli_make_dir(cmd, opt, dir);
}

int cli_check_dest(const char *cmd, const char *opt, const char *path) {
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) return cli_runtime_error(cmd, "%s %s: is a directory", opt, path);
        return CLI_OK;
    }
    char dir[4096];
    attn_path_dir(path, dir, sizeof dir);
    if (stat(dir, &st) != 0)
        return cli_runtime_error(cmd, "%s %s: directory %s: %s", opt, path, dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return cli_runtime_error(cmd, "%s %s: %s is not a directory", opt, path, dir);
    if (access(dir, W_OK | X_OK) != 0)
        return cli_runtime_error(cmd, "%s %s: cannot write in %s: %s", opt, path, dir,
                                 strerror(errno));
    return CLI_OK;
}

bool cli_sets_from_name(const char *name, attn_set *sets, int *n) {
    if (strcmp(name, "all") == 0) {
        memcpy(sets, cli_test_sets, sizeof cli_test_sets);
        *n = ATTN_N_TEST_SETS;
        return true;
    }
    attn_error err;
    *n = attn_set_from_name(name, &sets[0], &err) == ATTN_OK;
    return *n == 1;
}

int cli_set_default_n(attn_set s) {
    return s == ATTN_SET_TRAIN     ? ATTN_TRAIN_DEFAULT_N
           : s == ATTN_SET_HOLDOUT ? ATTN_HOLDOUT_DEFAULT_N
                                   : ATTN_TEST_DEFAULT_N;
}

/* The non-blank lines of stdin (every line with keep_blank) through fn; returns the failures,
 * *n_lines counts the lines. */
static int run_stdin(const char *cmd, bool keep_blank, cli_sentence_fn fn, void *ctx,
                     int *n_lines) {
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int line_no = 0, failed = 0;
    while ((len = getline(&line, &cap, stdin)) >= 0) {
        line_no++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (strlen(line) != (size_t)len) { /* as the TSV reader: never handle a cut line */
            (*n_lines)++;
            failed++;
            cli_message(cmd, "line %d: NUL byte in line", line_no);
            continue;
        }
        if (!keep_blank && strspn(line, " \t") == (size_t)len) continue; /* blank line */
        (*n_lines)++;
        failed += !fn(ctx, line, "line", line_no);
    }
    free(line);
    return failed;
}

static int run_items(const char *cmd, const char *verb, char **args, int n_args, bool keep_blank,
                     cli_sentence_fn fn, void *ctx) {
    int failed = 0, n = n_args;
    for (int i = 0; i < n_args; i++) failed += !fn(ctx, args[i], "sentence", i + 1);
    if (n_args == 0) failed = run_stdin(cmd, keep_blank, fn, ctx, &n);
    if (n == 0 && !keep_blank) /* nothing to do is a mistake, not a success */
        return cli_usage_error(cmd, "no sentence: give one as an argument or lines on stdin");
    return cli_lines_finish(cmd, verb, failed, n);
}

int cli_run_sentences(const char *cmd, const char *verb, char **args, int n_args,
                      cli_sentence_fn fn, void *ctx) {
    return run_items(cmd, verb, args, n_args, false, fn, ctx);
}

int cli_run_lines(const char *cmd, const char *verb, char **args, int n_args, cli_sentence_fn fn,
                  void *ctx) {
    return run_items(cmd, verb, args, n_args, true, fn, ctx);
}

int cli_load_weights(const char *cmd, const char *path, attn_model **m, const attn_vocab **vocab) {
    attn_vocab *own = NULL;
    attn_error err;
    if (!path) return cli_usage_error(cmd, "--weights FILE.json is required");
    if (attn_weights_load_json_vocab(path, m, &own, &err) != ATTN_OK) return cli_fail(cmd, &err);
    *vocab = own ? own : attn_vocab_builtin();
    return -1;
}

void cli_vocab_source(const attn_vocab *v, char *buf, size_t size) {
    snprintf(buf, size, "%s, %d tokens",
             attn_vocab_is_builtin(v) ? "built-in course-review" : "its own", attn_vocab_count(v));
}

void cli_print_tensor_header(int width) {
    printf("\n%-*s %-10s %8s\n", width, "tensor", "shape", "numel");
}

void cli_print_tensor_row(int width, const char *name, const int *shape, int nd, size_t numel) {
    char text[64];
    size_t used = (size_t)snprintf(text, sizeof text, "[");
    for (int d = 0; d < nd && used < sizeof text; d++)
        used += (size_t)snprintf(text + used, sizeof text - used, d ? ",%d" : "%d", shape[d]);
    if (used < sizeof text) snprintf(text + used, sizeof text - used, "]");
    printf("%-*s %-10s %8zu\n", width, name, text, numel);
}

bool cli_want_color(int choice) {
    if (choice != CLI_COLOR_AUTO) return choice == CLI_COLOR_ALWAYS;
    const char *no = getenv("NO_COLOR");
    return isatty(STDOUT_FILENO) && !(no && no[0]);
}

void cli_shaded_to(FILE *f, bool color, const char *word, double t, int r, int g, int b,
                   const char *note) {
    if (!color || t < 0.05) {
        fprintf(f, " %s %s ", word, note);
        return;
    }
    t = t > 1.0 ? 1.0 : t;
    const int R = (int)lround(255 - t * (255 - r)), G = (int)lround(255 - t * (255 - g)),
              B = (int)lround(255 - t * (255 - b));
    fprintf(f, "\x1b[48;2;%d;%d;%dm\x1b[38;2;0;0;0m %s \x1b[0m%s ", R, G, B, word, note);
}

void cli_fmt_thousands(char *buf, size_t n, size_t v) {
    char text[32]; /* 20 digits, 6 commas: filled from the right */
    int at = (int)sizeof text - 1, digits = 0;
    text[at] = '\0';
    do {
        if (digits > 0 && digits % 3 == 0) text[--at] = ',';
        text[--at] = (char)('0' + v % 10);
        v /= 10, digits++;
    } while (v > 0);
    snprintf(buf, n, "%s", text + at);
}

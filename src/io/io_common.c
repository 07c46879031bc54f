/* io_common.c -- helpers shared by weights_json.c and the training checkpoint: reading a
 * whole file, writing one atomically (a unique temporary file beside the destination, fsync,
 * rename, fsync of the directory; symlinks followed, devices written in place), collecting problems
 * into one message, and the model config <-> JSON object mapping (see io_internal.h); strict
 * JSON parsing is json_strict.c. */
#include "io_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- files --------------------------------------------------------------------------------- */

/* A limit from the environment (a positive decimal integer), else the default. */
static size_t env_limit(const char *name, size_t dflt) {
    const char *s = getenv(name);
    if (!s || !*s) return dflt;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v == 0 || s[0] == '-') return dflt;
    return v > SIZE_MAX ? SIZE_MAX : (size_t)v;
}

size_t attn_io_max_file_bytes(void) {
    return env_limit("ATTN_MAX_FILE_BYTES", ATTN_MAX_FILE_BYTES_DEFAULT);
}

size_t attn_io_max_params(void) {
    return env_limit("ATTN_MAX_PARAMS", ATTN_MAX_PARAMS_DEFAULT);
}

size_t attn_io_max_json_values(void) {
    return env_limit("ATTN_MAX_JSON_VALUES", ATTN_MAX_JSON_VALUES_DEFAULT);
}

static const char *file_kind(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

/* Opened without blocking (a FIFO without writer would block in open and read), then checked
 * with fstat: only regular files are read, and only up to the size limit. */
attn_status attn_io_read_file(const char *path, char **out, size_t *len, attn_error *err) {
    *out = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return attn_errorf(err, ATTN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    const size_t limit = attn_io_max_file_bytes();
    attn_status st = ATTN_OK;
    if (fstat(fd, &sb) != 0)
        st = attn_errorf(err, ATTN_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    else if (!S_ISREG(sb.st_mode))
        st = attn_errorf(err, ATTN_ERR_IO, "%s: is %s; only regular files are read", path,
                         file_kind(sb.st_mode));
    else if (sb.st_size < 0 || (unsigned long long)sb.st_size > limit)
        st = attn_errorf(
            err, ATTN_ERR_IO,
            "%s: %lld bytes exceed the file size limit of %zu bytes (raise it "
            "with the environment variable ATTN_MAX_FILE_BYTES; weights this large are better "
            "kept as safetensors, read mapped: convert them once with "
            "ATTN_MAX_FILE_BYTES=%lld attn convert IN OUT.safetensors)",
            path, (long long)sb.st_size, limit, (long long)sb.st_size);
    const size_t size = st == ATTN_OK ? (size_t)sb.st_size : 0;
    char *buf = st == ATTN_OK ? malloc(size + 1) : NULL;
    if (st == ATTN_OK && !buf)
        st = attn_errorf(err, ATTN_ERR_NOMEM, "%s: out of memory reading %zu bytes", path, size);
    size_t n = 0;
    char extra;
    while (st == ATTN_OK) { /* reads size bytes, then one more to see that the file did not grow */
        ssize_t got = n < size ? read(fd, buf + n, size - n) : read(fd, &extra, 1);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0)
            st = attn_errorf(err, ATTN_ERR_IO, "%s: read error: %s", path, strerror(errno));
        else if (got == 0 && n == size)
            break;
        else if (got == 0 || n == size)
            st = attn_errorf(err, ATTN_ERR_IO,
                             "%s: the file changed size while being read (%zu bytes expected)",
                             path, size);
        else
            n += (size_t)got;
    }
    close(fd);
    if (st != ATTN_OK) {
        free(buf);
        return st;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return ATTN_OK;
}

/* The path a write to `path` lands on: symlinks followed (relative targets relative to the
 * link's directory), up to 40 links; a dangling link resolves to its missing target. NULL when
 * out of memory; *loop set when the chain is too long. Caller frees. */
static char *resolve_links(const char *path, bool *loop) {
    *loop = false;
    char *cur = strdup(path);
    for (int i = 0; cur && i < 40; i++) {
        struct stat st;
        if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode)) return cur;
        char target[PATH_MAX];
        ssize_t n = readlink(cur, target, sizeof target - 1);
        if (n < 0) return cur;
        target[n] = '\0';
        const char *slash = strrchr(cur, '/');
        size_t dir_len = (target[0] == '/' || !slash) ? 0 : (size_t)(slash - cur) + 1;
        char *next = malloc(dir_len + (size_t)n + 1);
        if (next) {
            memcpy(next, cur, dir_len);
            memcpy(next + dir_len, target, (size_t)n + 1);
        }
        free(cur);
        cur = next;
    }
    if (cur) *loop = true;
    return cur;
}

/* Writes all of text to fd; 0 or an errno. */
static int write_all(int fd, const char *text, size_t len) {
    while (len > 0) {
        ssize_t n = write(fd, text, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return n < 0 ? errno : EIO;
        text += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Writes every span to fd in order; 0 or an errno. */
static int write_spans(int fd, const attn_io_span *spans, size_t n) {
    int e = 0;
    for (size_t i = 0; i < n && !e; i++) e = write_all(fd, spans[i].data, spans[i].len);
    return e;
}

/* A device, FIFO or other non-regular file (e.g. /dev/null, /dev/full, /dev/stdout): written
 * in place, every write and the close checked. */
static attn_status write_in_place(const char *path, const attn_io_span *spans, size_t n,
                                  attn_error *err) {
    int fd = open(path, O_WRONLY | O_NOCTTY);
    if (fd < 0) return attn_errorf(err, ATTN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    int e = write_spans(fd, spans, n);
    if (close(fd) != 0 && !e) e = errno;
    if (e) return attn_errorf(err, ATTN_ERR_IO, "%s: write failed: %s", path, strerror(e));
    return ATTN_OK;
}

/* Creates a temporary file beside `path` with a unique name (O_EXCL, so two writers never
 * share one) and the permissions a new file gets (0666 less the umask). */
static int create_temp(const char *path, char *tmp, size_t cap) {
    static unsigned serial;
    for (int attempt = 0; attempt < 100; attempt++) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        snprintf(tmp, cap, "%s.tmp.%ld.%u.%06lx", path, (long)getpid(), serial++,
                 (unsigned long)ts.tv_nsec & 0xffffffUL);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST) return fd;
    }
    errno = EEXIST;
    return -1;
}

void attn_path_dir(const char *path, char *dir, size_t size) {
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, size, ".");
    else if (slash == path)
        snprintf(dir, size, "/");
    else
        snprintf(dir, size, "%.*s", (int)(slash - path), path);
}

/* fsync of the directory holding `path`, so the rename is durable; file systems that cannot
 * sync a directory (EINVAL) are fine. 0 or an errno. */
static int sync_dir_of(const char *path) {
    char dir[PATH_MAX];
    attn_path_dir(path, dir, sizeof dir);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return errno;
    int e = fsync(fd) == 0 || errno == EINVAL ? 0 : errno;
    close(fd);
    return e;
}

/* A regular file (or none yet): a unique temporary file beside it, write, fsync, rename over
 * it, fsync the directory. An existing file keeps its permissions. */
static attn_status replace_file(const char *path, const attn_io_span *spans, size_t n,
                                const struct stat *old, attn_error *err) {
    size_t cap = strlen(path) + 64;
    char *tmp = malloc(cap);
    if (!tmp) return attn_errorf(err, ATTN_ERR_NOMEM, "%s: out of memory", path);
    attn_io_remove_stale_temps(path); /* a killed run's, before this run adds its own */
    int fd = create_temp(path, tmp, cap);
    if (fd < 0) {
        attn_errorf(err, ATTN_ERR_IO, "%s: cannot create %s: %s", path, tmp, strerror(errno));
        free(tmp);
        return ATTN_ERR_IO;
    }
    const char *what = NULL;
    int e = 0;
    if (old && fchmod(fd, old->st_mode & 07777) != 0) what = "chmod", e = errno;
    if (!what && (e = write_spans(fd, spans, n)) != 0) what = "write";
    if (!what && fsync(fd) != 0) what = "fsync", e = errno;
    if (close(fd) != 0 && !what) what = "close", e = errno;
    if (!what && rename(tmp, path) != 0) what = "rename", e = errno;
    if (what) {
        unlink(tmp);
        attn_errorf(err, ATTN_ERR_IO,
                    "%s: %s of %s failed: %s (the old file, if any, is untouched)", path, what, tmp,
                    strerror(e));
        free(tmp);
        return ATTN_ERR_IO;
    }
    free(tmp);
    if ((e = sync_dir_of(path)) != 0)
        return attn_errorf(err, ATTN_ERR_IO, "%s: written, but syncing its directory failed: %s",
                           path, strerror(e));
    return ATTN_OK;
}

attn_status attn_write_file_atomic(const char *path, const char *text, size_t len,
                                   attn_error *err) {
    if (!path || (!text && len))
        return attn_errorf(err, ATTN_ERR_ARG, "attn_write_file_atomic: NULL path or text");
    const attn_io_span span = {text, len};
    return attn_io_write_spans_atomic(path, &span, 1, err);
}

attn_status attn_io_write_spans_atomic(const char *path, const attn_io_span *spans, size_t n,
                                       attn_error *err) {
    if (!path || (!spans && n))
        return attn_errorf(err, ATTN_ERR_ARG, "attn_io_write_spans_atomic: NULL path or spans");
    for (size_t i = 0; i < n; i++)
        if (!spans[i].data && spans[i].len)
            return attn_errorf(err, ATTN_ERR_ARG, "attn_io_write_spans_atomic: NULL span");
    bool loop = false;
    char *real = resolve_links(path, &loop);
    if (!real) return attn_errorf(err, ATTN_ERR_NOMEM, "%s: out of memory", path);
    attn_status s;
    struct stat st;
    if (loop)
        s = attn_errorf(err, ATTN_ERR_IO, "%s: too many levels of symbolic links", path);
    else if (stat(real, &st) != 0)
        s = errno == ENOENT ? replace_file(real, spans, n, NULL, err)
                            : attn_errorf(err, ATTN_ERR_IO, "%s: %s", path, strerror(errno));
    else if (S_ISREG(st.st_mode))
        s = replace_file(real, spans, n, &st, err);
    else if (S_ISDIR(st.st_mode))
        s = attn_errorf(err, ATTN_ERR_IO, "%s: is a directory", path);
    else if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISBLK(st.st_mode))
        s = write_in_place(real, spans, n, err);
    else
        s = attn_errorf(err, ATTN_ERR_IO, "%s: not a regular file, device or pipe; not replaced",
                        path);
    free(real);
    return s;
}

/* ---- problems ------------------------------------------------------------------------------ */

void attn_io_problem(attn_io_problems *p, attn_status s, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (p->n == 0) {
        p->first = s;
        attn_errorf(p->err, s, "%s: %s", p->path, msg);
    } else if (p->n < ATTN_IO_MAX_PROBLEMS) {
        attn_error_append(p->err, "%s", msg);
    }
    p->n++;
}

attn_status attn_io_problems_finish(attn_io_problems *p) {
    if (p->n == 0) return ATTN_OK;
    if (p->n > ATTN_IO_MAX_PROBLEMS)
        attn_error_append(p->err, "and %d more problems", p->n - ATTN_IO_MAX_PROBLEMS);
    if (p->err) p->err->status = p->first;
    return p->first;
}

/* ---- model config ---------------------------------------------------------------------------- */

#define RNNS (1u << ATTN_ARCH_RNN | 1u << ATTN_ARCH_LSTM | 1u << ATTN_ARCH_GRU)
#define TR   (1u << ATTN_ARCH_TRANSFORMER)

const attn_io_config_int attn_io_config_ints[ATTN_IO_N_CONFIG_INTS] = {
    {"vocab_size", offsetof(attn_model_config, vocab_size), RNNS | TR},
    {"embed_dim", offsetof(attn_model_config, embed_dim), RNNS | TR},
    {"hidden_size", offsetof(attn_model_config, hidden_size), RNNS},
    {"n_heads", offsetof(attn_model_config, n_heads), TR},
    {"ffn_dim", offsetof(attn_model_config, ffn_dim), TR},
    {"n_layers", offsetof(attn_model_config, n_layers), RNNS | TR},
    {"max_len", offsetof(attn_model_config, max_len), TR},
};

cJSON *attn_io_model_config_to_json(const attn_model_config *c, bool all_keys) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    unsigned arch = 1u << c->arch;
    bool ok = cJSON_AddStringToObject(o, "arch", attn_arch_name(c->arch)) != NULL;
    for (size_t i = 0; i < ATTN_IO_N_CONFIG_INTS && ok; i++) {
        const attn_io_config_int *f = &attn_io_config_ints[i];
        if (all_keys || (f->archs & arch))
            ok = cJSON_AddNumberToObject(o, f->key, *(const int *)((const char *)c + f->offset)) !=
                 NULL;
    }
    if (ok && (all_keys || (arch & TR))) {
        ok = cJSON_AddStringToObject(o, "norm", c->norm == ATTN_NORM_POST ? "post" : "pre") &&
             cJSON_AddStringToObject(o, "activation",
                                     c->activation == ATTN_ACT_GELU ? "gelu" : "relu");
    }
    /* "pos" only when it is not the default (learned): older files and checkpoints stay as
     * they were, byte for byte */
    if (ok && (arch & TR) && c->pos != ATTN_POS_LEARNED)
        ok = cJSON_AddStringToObject(o, "pos", attn_pos_name(c->pos)) != NULL;
    /* likewise "attn_unscaled" only when the scores are not divided by sqrt(d_k) */
    if (ok && (arch & TR) && c->attn_unscaled)
        ok = cJSON_AddNumberToObject(o, "attn_unscaled", 1) != NULL;
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* Parses item (key "norm" or "activation") as one of two names into *out. */
static void parse_choice(const cJSON *item, const char *name, const char *a, int va, const char *b,
                         int vb, int *out, attn_io_problems *p) {
    const char *s = cJSON_IsString(item) ? item->valuestring : NULL;
    if (s && strcmp(s, a) == 0)
        *out = va;
    else if (s && strcmp(s, b) == 0)
        *out = vb;
    else
        attn_io_problem(p, ATTN_ERR_VALUE, "%s: \"%s\" is %s%s%s, expected \"%s\" or \"%s\"", name,
                        item->string, s ? "\"" : "", s ? s : "not a string", s ? "\"" : "", a, b);
}

/* An integer key of the config (attn_io_config_ints) into cfg; false if key is none. */
static bool config_int_item(const cJSON *item, const char *key, const char *name,
                            attn_model_config *cfg, bool *seen, attn_io_problems *p) {
    bool known = false;
    for (size_t i = 0; i < ATTN_IO_N_CONFIG_INTS; i++) {
        if (strcmp(key, attn_io_config_ints[i].key) != 0) continue;
        known = true;
        seen[i] = true;
        double v = item->valuedouble;
        if (!cJSON_IsNumber(item))
            attn_io_problem(p, ATTN_ERR_VALUE, "%s: \"%s\" must be an integer, not %s", name, key,
                            cJSON_IsString(item) ? "a string" : "a non-number");
        else if (v != floor(v) || v < INT_MIN || v > INT_MAX)
            attn_io_problem(p, ATTN_ERR_VALUE, "%s: \"%s\" must be an integer, got %g", name, key,
                            v);
        else
            *(int *)((char *)cfg + attn_io_config_ints[i].offset) = (int)v;
    }
    return known;
}

/* norm, activation, pos and attn_unscaled into cfg; false if key is none of them. */
static bool config_other_item(const cJSON *item, const char *key, const char *name,
                              attn_model_config *cfg, attn_io_problems *p) {
    if (strcmp(key, "norm") == 0) {
        int v = (int)cfg->norm;
        parse_choice(item, name, "pre", ATTN_NORM_PRE, "post", ATTN_NORM_POST, &v, p);
        cfg->norm = (attn_norm)v;
    } else if (strcmp(key, "activation") == 0) {
        int v = (int)cfg->activation;
        parse_choice(item, name, "relu", ATTN_ACT_RELU, "gelu", ATTN_ACT_GELU, &v, p);
        cfg->activation = (attn_activation)v;
    } else if (strcmp(key, "pos") == 0) {
        const char *s = cJSON_IsString(item) ? item->valuestring : NULL;
        const int v = attn_pos_from_name(s);
        if (v >= 0)
            cfg->pos = (attn_pos)v;
        else
            attn_io_problem(p, ATTN_ERR_VALUE,
                            "%s: \"pos\" is %s%s%s, expected \"learned\", \"sinusoidal\", "
                            "\"none\", \"rope\" or \"alibi\"",
                            name, s ? "\"" : "", s ? s : "not a string", s ? "\"" : "");
    } else if (strcmp(key, "attn_unscaled") == 0) {
        if (cJSON_IsBool(item))
            cfg->attn_unscaled = cJSON_IsTrue(item) ? 1 : 0;
        else if (cJSON_IsNumber(item) && (item->valuedouble == 0 || item->valuedouble == 1))
            cfg->attn_unscaled = (int)item->valuedouble;
        else
            attn_io_problem(p, ATTN_ERR_VALUE, "%s: \"attn_unscaled\" must be 0 or 1", name);
    } else {
        return false;
    }
    return true;
}

void attn_io_model_config_from_json(const cJSON *obj, const char *name, unsigned flags,
                                    attn_model_config *cfg, attn_io_problems *p) {
    if (!cJSON_IsObject(obj)) {
        attn_io_problem(p, ATTN_ERR_PARSE, "%s \"%s\", expected an object with at least \"arch\"",
                        obj ? "malformed" : "missing", name);
        return;
    }
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(obj, "arch");
    attn_arch a = ATTN_ARCH_RNN;
    if (!cJSON_IsString(arch)) {
        attn_io_problem(p, ATTN_ERR_VALUE,
                        "%s: %s \"arch\" (expected \"rnn\", \"lstm\", \"gru\" or \"transformer\")",
                        name, arch ? "non-string" : "missing");
        return;
    }
    if (attn_arch_from_name(arch->valuestring, &a, NULL) != ATTN_OK) {
        attn_io_problem(p, ATTN_ERR_VALUE,
                        "%s: unknown arch \"%s\" (expected rnn, lstm, gru or transformer)", name,
                        arch->valuestring);
        return;
    }
    *cfg = attn_model_config_default(a);
    bool seen[ATTN_IO_N_CONFIG_INTS] = {false};
    const cJSON *item;
    cJSON_ArrayForEach(item, obj) {
        const char *key = item->string ? item->string : "";
        if (strcmp(key, "arch") == 0) continue;
        /* both looked at, whichever knows the key (each reports its own problems) */
        const bool known_int = config_int_item(item, key, name, cfg, seen, p);
        const bool known_other = config_other_item(item, key, name, cfg, p);
        const bool known = known_int || known_other;
        if (!known && (flags & ATTN_IO_CONFIG_REJECT_UNKNOWN))
            attn_io_problem(p, ATTN_ERR_VALUE, "%s: unknown key \"%s\"", name, key);
    }
    if (flags & ATTN_IO_CONFIG_REQUIRE_ALL)
        for (size_t i = 0; i < ATTN_IO_N_CONFIG_INTS; i++)
            if (!seen[i])
                attn_io_problem(p, ATTN_ERR_PARSE, "%s: missing \"%s\" (an integer)", name,
                                attn_io_config_ints[i].key);
    if (p->n == 0) {
        attn_error verr;
        if (attn_model_config_validate(cfg, &verr) != ATTN_OK)
            attn_io_problem(p, ATTN_ERR_VALUE, "%s", verr.msg);
    }
}

attn_status attn_io_parse_file(const char *path, bool crc, cJSON **out, attn_error *err) {
    *out = NULL;
    char *buf = NULL;
    size_t len = 0;
    attn_status st = attn_io_read_file(path, &buf, &len, err);
    if (st != ATTN_OK) return st;
    size_t at = 0;
    const char *why = NULL;
    st = attn_io_json_parse(buf, len, out, &at, &why);
    if (st == ATTN_ERR_NOMEM) {
        attn_errorf(err, st, "%s: %s (%zu bytes of JSON)", path, why, len);
    } else if (st != ATTN_OK) {
        int line = 1, col = 1;
        attn_io_text_position(buf, at, &line, &col);
        attn_errorf(err, st, "%s: malformed JSON at byte %zu (line %d, column %d): %s", path, at,
                    line, col, why);
    } else if (crc && (st = attn_io_crc_check(path, buf, len, err)) != ATTN_OK) {
        cJSON_Delete(*out);
        *out = NULL;
    }
    free(buf);
    return st;
}

attn_status attn_io_parse_request(const char *buf, size_t len, cJSON **out, attn_error *err) {
    size_t at = 0;
    const char *why = NULL;
    attn_status st = attn_io_json_parse(buf ? buf : "", len, out, &at, &why);
    if (st != ATTN_OK) {
        int line, col;
        attn_io_text_position(buf ? buf : "", at, &line, &col);
        attn_errorf(err, st, "malformed JSON at byte %zu (line %d, column %d): %s", at, line, col,
                    why);
        if (st == ATTN_ERR_PARSE)
            attn_error_detail(err, ATTN_CODE_MALFORMED_JSON, (int)at, NULL, NULL);
    }
    return st;
}

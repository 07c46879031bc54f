/* json_writer.c -- the streaming JSON writer (include/attn_io.h): it writes the braces, brackets,
 * ", " between values and ": " after keys itself, so no caller keeps comma bookkeeping or writes
 * a key by a format string. Numbers keep the formats attn has always printed ("%.9g", and "%.*f"
 * where an answer rounds); strings go through attn_json_escape. */
#include "io_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static void fail(attn_json_writer *w, attn_status s, const char *what) {
    if (w->status != ATTN_OK) return;
    w->status = s;
    snprintf(w->msg, sizeof w->msg, "%s", what);
}

static void put(const char *text, size_t n, void *user) {
    attn_json_writer *w = user;
    if (w->status != ATTN_OK || n == 0) return;
    if (w->f) {
        if (fwrite(text, 1, n, w->f) != n) fail(w, ATTN_ERR_IO, "JSON writer: a write failed");
        return;
    }
    if (w->len + n + 1 > w->cap) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap < w->len + n + 1) cap *= 2;
        char *b = realloc(w->buf, cap);
        if (!b) {
            fail(w, ATTN_ERR_NOMEM, "JSON writer: out of memory");
            return;
        }
        w->buf = b;
        w->cap = cap;
    }
    memcpy(w->buf + w->len, text, n);
    w->len += n;
    w->buf[w->len] = '\0';
}

static void puts_(attn_json_writer *w, const char *s) {
    put(s, strlen(s), w);
}

void attn_json_writer_init(attn_json_writer *w, FILE *f) {
    *w = (attn_json_writer){.f = f, .first = true, .status = ATTN_OK};
}

/* Before a value: the ", " after a previous one; false (and the writer failed) when no value
 * may come here. */
static bool value_slot(attn_json_writer *w) {
    if (w->status != ATTN_OK) return false;
    if (w->done) {
        fail(w, ATTN_ERR_ARG, "JSON writer: a value after the complete top-level value");
        return false;
    }
    if (w->depth > 0 && w->open[w->depth - 1] == '{') {
        if (!w->keyed) {
            fail(w, ATTN_ERR_ARG, "JSON writer: a value in an object without a key");
            return false;
        }
        w->keyed = false;
        return true;
    }
    const char *indent = w->depth > 0 ? w->lines[w->depth - 1] : NULL;
    if (!w->first) puts_(w, indent ? ",\n" : ", ");
    if (indent) puts_(w, indent);
    w->first = false;
    return w->status == ATTN_OK;
}

/* After a value: a top-level one completes the document. */
static void value_done(attn_json_writer *w) {
    if (w->depth == 0) w->done = true;
}

static void begin(attn_json_writer *w, char c) {
    if (!value_slot(w)) return;
    if (w->depth == ATTN_JSON_MAX_DEPTH) {
        fail(w, ATTN_ERR_ARG, "JSON writer: nested too deep");
        return;
    }
    w->lines[w->depth] = NULL;
    w->open[w->depth++] = c;
    w->first = true;
    put(c == '{' ? "{" : "[", 1, w);
}

static void end(attn_json_writer *w, char c) {
    if (w->status != ATTN_OK) return;
    if (w->depth == 0 || w->open[w->depth - 1] != c || w->keyed) {
        fail(w, ATTN_ERR_ARG,
             w->keyed ? "JSON writer: a key without its value"
                      : "JSON writer: an end that does not match an open object or array");
        return;
    }
    if (w->lines[w->depth - 1] && !w->first) puts_(w, "\n");
    w->depth--;
    w->first = false; /* the container just closed was a value of its parent */
    put(c == '{' ? "}" : "]", 1, w);
    value_done(w);
}

void attn_json_begin_object(attn_json_writer *w) {
    begin(w, '{');
}
void attn_json_end_object(attn_json_writer *w) {
    end(w, '{');
}
void attn_json_begin_array(attn_json_writer *w) {
    begin(w, '[');
}
void attn_json_end_array(attn_json_writer *w) {
    end(w, '[');
}

void attn_json_begin_array_lines(attn_json_writer *w, const char *indent) {
    const int depth = w->depth;
    attn_json_begin_array(w);
    if (w->status != ATTN_OK || w->depth != depth + 1) return;
    w->lines[depth] = indent;
    puts_(w, "\n");
}

void attn_json_key(attn_json_writer *w, const char *key) {
    if (w->status != ATTN_OK) return;
    if (w->depth == 0 || w->open[w->depth - 1] != '{' || w->keyed) {
        fail(w, ATTN_ERR_ARG, "JSON writer: a key outside an object or in place of a value");
        return;
    }
    if (!w->first) puts_(w, ", ");
    w->first = false;
    attn_json_escape(key, put, w);
    puts_(w, ": ");
    w->keyed = true;
}

/* A scalar value already formatted. */
static void scalar(attn_json_writer *w, const char *text) {
    if (!value_slot(w)) return;
    puts_(w, text);
    value_done(w);
}

static void scalarf(attn_json_writer *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void scalarf(attn_json_writer *w, const char *fmt, ...) {
    char text[512]; /* "%.*f" of 1e308 with few decimals fits; longer is refused */
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof text) {
        fail(w, ATTN_ERR_ARG, "JSON writer: a number too long to write");
        return;
    }
    scalar(w, text);
}

void attn_json_string(attn_json_writer *w, const char *s) {
    if (!value_slot(w)) return;
    attn_json_escape(s, put, w);
    value_done(w);
}

void attn_json_int(attn_json_writer *w, long long x) {
    scalarf(w, "%lld", x);
}
void attn_json_uint(attn_json_writer *w, unsigned long long x) {
    scalarf(w, "%llu", x);
}
void attn_json_double(attn_json_writer *w, double x) {
    scalarf(w, "%.9g", x);
}
void attn_json_digits(attn_json_writer *w, double x, int digits) {
    scalarf(w, "%.*g", digits, x);
}
void attn_json_measured(attn_json_writer *w, double x, int digits) {
    if (isfinite(x))
        attn_json_digits(w, x, digits);
    else
        attn_json_null(w);
}
void attn_json_fixed(attn_json_writer *w, double x, int decimals) {
    scalarf(w, "%.*f", decimals, x);
}

void attn_json_float(attn_json_writer *w, float x) {
    char text[ATTN_IO_FLOAT_TEXT_MAX];
    attn_io_format_float(text, x);
    scalar(w, text);
}

void attn_json_bool(attn_json_writer *w, bool b) {
    scalar(w, b ? "true" : "false");
}
void attn_json_null(attn_json_writer *w) {
    scalar(w, "null");
}

void attn_json_raw(attn_json_writer *w, const char *text, size_t n) {
    if (!value_slot(w)) return;
    put(text, n, w);
    value_done(w);
}

void attn_json_begin_array_field(attn_json_writer *w, const char *key) {
    attn_json_key(w, key);
    attn_json_begin_array(w);
}
void attn_json_begin_object_field(attn_json_writer *w, const char *key) {
    attn_json_key(w, key);
    attn_json_begin_object(w);
}

void attn_json_field_string(attn_json_writer *w, const char *key, const char *s) {
    attn_json_key(w, key);
    attn_json_string(w, s);
}
void attn_json_field_int(attn_json_writer *w, const char *key, long long x) {
    attn_json_key(w, key);
    attn_json_int(w, x);
}
void attn_json_field_uint(attn_json_writer *w, const char *key, unsigned long long x) {
    attn_json_key(w, key);
    attn_json_uint(w, x);
}
void attn_json_field_double(attn_json_writer *w, const char *key, double x) {
    attn_json_key(w, key);
    attn_json_double(w, x);
}
void attn_json_field_fixed(attn_json_writer *w, const char *key, double x, int decimals) {
    attn_json_key(w, key);
    attn_json_fixed(w, x, decimals);
}
void attn_json_field_bool(attn_json_writer *w, const char *key, bool b) {
    attn_json_key(w, key);
    attn_json_bool(w, b);
}

void attn_json_writer_fail(attn_json_writer *w, attn_status s, const char *why) {
    fail(w, s, why);
}

attn_status attn_json_writer_take(attn_json_writer *w, char **out, size_t *len, attn_error *err) {
    *out = NULL;
    if (w->status == ATTN_OK && (w->depth != 0 || w->keyed))
        fail(w, ATTN_ERR_ARG, "JSON writer: an object or array left open");
    if (w->status == ATTN_OK && !w->f && !w->buf && !(w->buf = calloc(1, 1)))
        fail(w, ATTN_ERR_NOMEM, "JSON writer: out of memory"); /* nothing written: "" */
    if (w->status != ATTN_OK) {
        free(w->buf);
        w->buf = NULL;
        w->len = w->cap = 0;
        return attn_errorf(err, w->status, "%s", w->msg);
    }
    *out = w->buf;
    if (len) *len = w->len;
    w->buf = NULL;
    w->len = w->cap = 0;
    return ATTN_OK;
}

attn_status attn_json_writer_finish(attn_json_writer *w, attn_error *err) {
    char *text = NULL;
    const attn_status s = attn_json_writer_take(w, &text, NULL, err);
    free(text);
    return s;
}

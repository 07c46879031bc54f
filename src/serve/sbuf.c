/* sbuf.c -- the growable string of the server's JSON answers (sbuf.h). */
#include "sbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool grow(sbuf *sb, size_t more) {
    if (sb->failed) return false;
    if (sb->len + more + 1 <= sb->cap) return true;
    size_t cap = sb->cap ? sb->cap : 256;
    while (cap < sb->len + more + 1) cap *= 2;
    char *s = realloc(sb->s, cap);
    if (!s) {
        sb->failed = true;
        return false;
    }
    sb->s = s;
    sb->cap = cap;
    return true;
}

void sb_addn(sbuf *sb, const char *text, size_t n) {
    if (!grow(sb, n)) return;
    memcpy(sb->s + sb->len, text, n);
    sb->len += n;
    sb->s[sb->len] = '\0';
}

void sb_add(sbuf *sb, const char *text) {
    sb_addn(sb, text, strlen(text));
}

void sb_printf(sbuf *sb, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !grow(sb, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(sb->s + sb->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)n;
}

/* Length of the valid UTF-8 sequence at p (1..4), or 0 if it is not one. */
static size_t utf8_len(const unsigned char *p) {
    if (p[0] < 0x80) return 1;
    size_t n = p[0] >= 0xC2 && p[0] <= 0xDF   ? 2
               : p[0] >= 0xE0 && p[0] <= 0xEF ? 3
               : p[0] >= 0xF0 && p[0] <= 0xF4 ? 4
                                              : 0;
    for (size_t k = 1; k < n; k++)
        if ((p[k] & 0xC0) != 0x80) return 0;
    if (n == 3 && ((p[0] == 0xE0 && p[1] < 0xA0) || (p[0] == 0xED && p[1] >= 0xA0))) return 0;
    if (n == 4 && ((p[0] == 0xF0 && p[1] < 0x90) || (p[0] == 0xF4 && p[1] >= 0x90))) return 0;
    return n;
}

void sb_json_string(sbuf *sb, const char *s) {
    sb_add(sb, "\"");
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t n = utf8_len(p);
        if (*p == '"' || *p == '\\') {
            char esc[3] = {'\\', (char)*p, 0};
            sb_add(sb, esc);
        } else if (*p < 0x20 || *p == 0x7f) {
            sb_printf(sb, "\\u%04x", *p);
        } else if (n == 0) {
            sb_add(sb, "\\ufffd");
            n = 1;
        } else {
            sb_addn(sb, (const char *)p, n);
        }
        p += n ? n : 1;
    }
    sb_add(sb, "\"");
}

char *sb_take(sbuf *sb, size_t *len) {
    if (sb->failed || !grow(sb, 0)) {
        sb_free(sb);
        return NULL;
    }
    char *s = sb->s;
    if (len) *len = sb->len;
    sb->s = NULL;
    sb->len = sb->cap = 0;
    return s;
}

void sb_free(sbuf *sb) {
    free(sb->s);
    sb->s = NULL;
    sb->len = sb->cap = 0;
}

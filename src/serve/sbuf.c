/* sbuf.c -- the server's growable string (sbuf.h). */
#include "sbuf.h"

#include "attn_io.h"

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

static void put_sbuf(const char *text, size_t n, void *sb) {
    sb_addn(sb, text, n);
}

void sb_json_string(sbuf *sb, const char *s) {
    attn_json_escape(s, put_sbuf, sb);
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

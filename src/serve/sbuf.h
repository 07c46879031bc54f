/* sbuf.h -- a growable string for the server's messages and texts (its JSON answers are written
 * by attn_json_writer), with JSON string escaping. Any allocation failure sticks (sb->failed) and
 * later appends do nothing. Library-internal. */
#ifndef ATTN_SERVE_SBUF_H
#define ATTN_SERVE_SBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct sbuf {
    char *s;
    size_t len, cap;
    bool failed;
} sbuf;

void sb_add(sbuf *sb, const char *text);
void sb_addn(sbuf *sb, const char *text, size_t n);
/* s as a JSON string, by attn_json_escape (attn_io.h): the answer is always valid UTF-8. */
void sb_json_string(sbuf *sb, const char *s);
/* Hands the string over (NULL if an allocation failed; then it frees it). */
char *sb_take(sbuf *sb, size_t *len);
void sb_free(sbuf *sb);

#endif

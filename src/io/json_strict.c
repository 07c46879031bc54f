/* json_strict.c -- JSON parsing for the loaders: the text is checked against the JSON grammar
 * (RFC 8259) by a scan that allocates nothing, then handed to cJSON (see io_internal.h,
 * attn_io_json_parse), and byte offsets are turned into line and column for messages. */
#include "io_internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---- strict JSON ------------------------------------------------------------------------------
 * cJSON is lenient (numbers like 007, +1 or 1. and anything after the value are accepted) and
 * reports running out of memory as a syntax error. So the text is first checked against the
 * JSON grammar (RFC 8259) by a scan that allocates nothing, then handed to cJSON: a failure
 * there can only be memory. */

typedef struct json_scan {
    const char *s;
    size_t n, i;
    const char *why;
} json_scan;

static bool scan_fail(json_scan *j, const char *why) {
    j->why = why;
    return false;
}

static void scan_ws(json_scan *j) {
    while (j->i < j->n &&
           (j->s[j->i] == ' ' || j->s[j->i] == '\t' || j->s[j->i] == '\n' || j->s[j->i] == '\r'))
        j->i++;
}

static bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

/* 4 hex digits at s[i..i+4) into *code. */
static bool scan_hex4(json_scan *j, unsigned *code) {
    *code = 0;
    for (int k = 0; k < 4; k++, j->i++) {
        char c = j->i < j->n ? j->s[j->i] : '\0';
        unsigned d = is_digit(c)              ? (unsigned)(c - '0')
                     : (c >= 'a' && c <= 'f') ? (unsigned)(c - 'a' + 10)
                     : (c >= 'A' && c <= 'F') ? (unsigned)(c - 'A' + 10)
                                              : 16u;
        if (d == 16) return scan_fail(j, "bad \\u escape (expected 4 hex digits)");
        *code = *code * 16 + d;
    }
    return true;
}

static bool scan_string(json_scan *j) { /* at the opening quote */
    j->i++;
    for (;;) {
        if (j->i >= j->n) return scan_fail(j, "unterminated string");
        unsigned char c = (unsigned char)j->s[j->i];
        if (c == '"') {
            j->i++;
            return true;
        }
        if (c < 0x20) return scan_fail(j, "control character in a string");
        if (c != '\\') {
            j->i++;
            continue;
        }
        j->i++;
        char e = j->i < j->n ? j->s[j->i] : '\0';
        if (e && strchr("\"\\/bfnrt", e)) {
            j->i++;
            continue;
        }
        if (e != 'u') return scan_fail(j, "bad escape in a string");
        j->i++;
        unsigned code = 0;
        if (!scan_hex4(j, &code)) return false;
        if (code == 0) /* cJSON's strings end at a NUL: the rest would vanish unseen */
            return scan_fail(j, "\\u0000 (a NUL character) in a string");
        if (code >= 0xDC00 && code <= 0xDFFF)
            return scan_fail(j, "lone low surrogate in a \\u escape");
        if (code >= 0xD800 && code <= 0xDBFF) { /* must be followed by a low surrogate */
            if (j->i + 2 > j->n || j->s[j->i] != '\\' || j->s[j->i + 1] != 'u')
                return scan_fail(j, "high surrogate without a low one in a \\u escape");
            j->i += 2;
            if (!scan_hex4(j, &code)) return false;
            if (code < 0xDC00 || code > 0xDFFF)
                return scan_fail(j, "high surrogate without a low one in a \\u escape");
        }
    }
}

#define MAX_NUMBER_CHARS 63 /* cJSON 1.7.15 reads at most 63 characters of a number */

/* -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool scan_number(json_scan *j) {
    size_t start = j->i;
    const char *s = j->s;
#define AT(k) ((k) < j->n ? s[k] : '\0')
    if (AT(j->i) == '-') j->i++;
    if (AT(j->i) == '0') {
        j->i++;
        if (is_digit(AT(j->i))) {
            j->i = start;
            return scan_fail(j, "number with a leading zero (not JSON)");
        }
    } else if (is_digit(AT(j->i))) {
        while (is_digit(AT(j->i))) j->i++;
    } else {
        return scan_fail(j, "'-' without digits (not a JSON number)");
    }
    if (AT(j->i) == '.') {
        j->i++;
        if (!is_digit(AT(j->i))) return scan_fail(j, "no digit after '.' (not a JSON number)");
        while (is_digit(AT(j->i))) j->i++;
    }
    if (AT(j->i) == 'e' || AT(j->i) == 'E') {
        j->i++;
        if (AT(j->i) == '+' || AT(j->i) == '-') j->i++;
        if (!is_digit(AT(j->i))) return scan_fail(j, "no digit in an exponent (not JSON)");
        while (is_digit(AT(j->i))) j->i++;
    }
#undef AT
    if (j->i - start > MAX_NUMBER_CHARS) {
        j->i = start;
        return scan_fail(j, "number longer than 63 characters");
    }
    return true;
}

static bool scan_literal(json_scan *j) {
    static const char *const words[] = {"true", "false", "null"};
    for (int k = 0; k < 3; k++) {
        size_t len = strlen(words[k]);
        if (j->n - j->i >= len && memcmp(j->s + j->i, words[k], len) == 0) {
            j->i += len;
            return true;
        }
    }
    return scan_fail(j, "unexpected character (not JSON)");
}

/* One JSON value and nothing after it but whitespace; containers nest at most as deep as
 * cJSON allows. */
static bool scan_json(json_scan *j) {
    char stack[CJSON_NESTING_LIMIT];
    int depth = 0;
    bool want_key = false;
    for (;;) {
        scan_ws(j);
        if (want_key) {
            if (j->i >= j->n || j->s[j->i] != '"')
                return scan_fail(j, "expected a string key in an object");
            if (!scan_string(j)) return false;
            scan_ws(j);
            if (j->i >= j->n || j->s[j->i] != ':') return scan_fail(j, "expected ':' after a key");
            j->i++;
            scan_ws(j);
            want_key = false;
        }
        if (j->i >= j->n) return scan_fail(j, "unexpected end of the text (truncated?)");
        char c = j->s[j->i];
        bool done = true; /* a complete value was read */
        if (c == '{' || c == '[') {
            if (depth >= CJSON_NESTING_LIMIT)
                return scan_fail(j, "arrays/objects nest deeper than the limit");
            stack[depth++] = c;
            j->i++;
            scan_ws(j);
            char close = c == '{' ? '}' : ']';
            if (j->i < j->n && j->s[j->i] == close) {
                j->i++;
                depth--;
            } else {
                want_key = c == '{';
                done = false;
            }
        } else if (c == '"') {
            if (!scan_string(j)) return false;
        } else if (c == '-' || is_digit(c)) {
            if (!scan_number(j)) return false;
        } else if (!scan_literal(j)) {
            return false;
        }
        while (done) { /* after a value: ',' or the container's end */
            scan_ws(j);
            if (depth == 0) {
                if (j->i != j->n) return scan_fail(j, "trailing data after the JSON value");
                return true;
            }
            if (j->i >= j->n) return scan_fail(j, "unexpected end of the text (truncated?)");
            char close = stack[depth - 1] == '{' ? '}' : ']';
            if (j->i < j->n && j->s[j->i] == ',') {
                j->i++;
                want_key = stack[depth - 1] == '{';
                done = false;
            } else if (j->i < j->n && j->s[j->i] == close) {
                j->i++;
                depth--;
            } else {
                return scan_fail(j, stack[depth - 1] == '{' ? "expected ',' or '}' in an object"
                                                            : "expected ',' or ']' in an array");
            }
        }
    }
}

/* ---- duplicate keys ---------------------------------------------------------------------------
 * cJSON keeps both members of {"a": 1, "a": 2} and its lookups return the first, so a reader
 * and a proxy in front of it could disagree about what was sent: refuse them. Keys are compared
 * after unescaping ("a" and "\u0061" are the same key), sorted so that an object with k keys
 * costs O(k log k). */

static int key_cmp(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* 1 if some object under node holds a key twice (*dup: that key), -1 if out of memory, 0 if
 * none. */
static int find_duplicate_key(const cJSON *node, const char **dup) {
    for (; node; node = node->next) {
        if (cJSON_IsObject(node) && node->child && node->child->next) {
            size_t k = 0;
            for (const cJSON *it = node->child; it; it = it->next) k++;
            const char **keys = malloc(k * sizeof *keys);
            if (!keys) return -1;
            k = 0;
            for (const cJSON *it = node->child; it; it = it->next) keys[k++] = it->string;
            qsort(keys, k, sizeof *keys, key_cmp);
            for (size_t i = 1; i < k && !*dup; i++)
                if (strcmp(keys[i - 1], keys[i]) == 0) *dup = keys[i];
            free(keys);
            if (*dup) return 1;
        }
        if (node->child) {
            const int r = find_duplicate_key(node->child, dup);
            if (r) return r;
        }
    }
    return 0;
}

/* The offset of the second "key": in buf (the duplicate), or 0 if escapes hide it. */
static size_t duplicate_key_offset(const char *buf, size_t len, const char *key) {
    const size_t n = strlen(key);
    int seen = 0;
    for (size_t i = 0; i + n + 2 <= len; i++) {
        if (buf[i] == '"' && memcmp(buf + i + 1, key, n) == 0 && buf[i + n + 1] == '"') {
            size_t j = i + n + 2;
            while (j < len && (buf[j] == ' ' || buf[j] == '\t' || buf[j] == '\n' || buf[j] == '\r'))
                j++;
            if (j < len && buf[j] == ':' && ++seen == 2) return i;
        }
    }
    return 0;
}

attn_status attn_io_json_parse(const char *buf, size_t len, cJSON **out, size_t *at,
                               const char **why) {
    *out = NULL;
    json_scan j = {buf, len, 0, NULL};
    if (!scan_json(&j)) {
        *at = j.i;
        *why = j.why;
        return ATTN_ERR_PARSE;
    }
    const char *end = NULL;
    *out = cJSON_ParseWithLengthOpts(buf, len, &end, false);
    if (!*out) {
        *at = end && end >= buf && end <= buf + len ? (size_t)(end - buf) : 0;
        *why = "out of memory while parsing";
        return ATTN_ERR_NOMEM;
    }
    const char *dup = NULL;
    const int found = find_duplicate_key(*out, &dup);
    if (found) {
        *at = found > 0 ? duplicate_key_offset(buf, len, dup) : 0;
        *why = found > 0 ? "a key appears twice in one object" : "out of memory while parsing";
        cJSON_Delete(*out);
        *out = NULL;
        return found > 0 ? ATTN_ERR_PARSE : ATTN_ERR_NOMEM;
    }
    return ATTN_OK;
}

void attn_io_text_position(const char *buf, size_t at, int *line, int *col) {
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < at; i++) {
        if (buf[i] == '\n') {
            ++*line;
            *col = 1;
        } else {
            ++*col;
        }
    }
}

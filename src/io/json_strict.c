/* json_strict.c -- JSON parsing for every reader of attn: the text is checked against the JSON
 * grammar (RFC 8259, strings valid UTF-8) by a scan that allocates nothing, handed to cJSON, and
 * the tree checked for duplicate keys (RFC 8259 §8.1's I-JSON rule); byte offsets are turned
 * into line and column for messages (see io_internal.h, attn_io_json_parse). */
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
    /* The second scan, after the tree showed a duplicate key: it stops at member dup_member of
     * the dup_object-th object (both 0-based, objects counted by their '{' in text order). */
    long dup_object;
    int dup_member;
    long n_objects;  /* objects opened so far */
    size_t n_values; /* values read so far: the cJSON nodes the tree will have */
} json_scan;

size_t attn_io_utf8_len(const unsigned char *p, size_t avail) {
    if (avail == 0) return 0;
    if (p[0] < 0x80) return 1;
    size_t n = p[0] >= 0xC2 && p[0] <= 0xDF   ? 2
               : p[0] >= 0xE0 && p[0] <= 0xEF ? 3
               : p[0] >= 0xF0 && p[0] <= 0xF4 ? 4
                                              : 0;
    if (n > avail) return 0;
    for (size_t k = 1; k < n; k++)
        if ((p[k] & 0xC0) != 0x80) return 0;
    if (n == 3 && ((p[0] == 0xE0 && p[1] < 0xA0) || (p[0] == 0xED && p[1] >= 0xA0))) return 0;
    if (n == 4 && ((p[0] == 0xF0 && p[1] < 0x90) || (p[0] == 0xF4 && p[1] >= 0x90))) return 0;
    return n;
}

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
        if (c >= 0x80) { /* overlong forms, surrogates and stray bytes are not UTF-8 */
            const size_t len = attn_io_utf8_len((const unsigned char *)j->s + j->i, j->n - j->i);
            if (len == 0) return scan_fail(j, "invalid UTF-8 in a string");
            j->i += len;
            continue;
        }
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
    long object[CJSON_NESTING_LIMIT]; /* '{': the object's number (json_scan.n_objects) */
    int members[CJSON_NESTING_LIMIT]; /* '{': keys read so far */
    int depth = 0;
    bool want_key = false;
    for (;;) {
        scan_ws(j);
        if (want_key) {
            if (j->i >= j->n || j->s[j->i] != '"')
                return scan_fail(j, "expected a string key in an object");
            if (object[depth - 1] == j->dup_object && members[depth - 1] == j->dup_member)
                return scan_fail(j, "duplicate key in an object");
            members[depth - 1]++;
            if (!scan_string(j)) return false;
            scan_ws(j);
            if (j->i >= j->n || j->s[j->i] != ':') return scan_fail(j, "expected ':' after a key");
            j->i++;
            scan_ws(j);
            want_key = false;
        }
        if (j->i >= j->n) return scan_fail(j, "unexpected end of the text (truncated?)");
        char c = j->s[j->i];
        j->n_values++;
        bool done = true; /* a complete value was read */
        if (c == '{' || c == '[') {
            if (depth >= CJSON_NESTING_LIMIT)
                return scan_fail(j, "arrays/objects nest deeper than the limit");
            if (c == '{') {
                object[depth] = j->n_objects++;
                members[depth] = 0;
            }
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

typedef struct json_key {
    const char *name;
    int index; /* among the object's members */
} json_key;

static int compare_keys(const void *a, const void *b) {
    const json_key *x = a, *y = b;
    const int c = strcmp(x->name, y->name);
    return c ? c : (x->index > y->index) - (x->index < y->index);
}

/* The smallest member index of the object `node` that repeats an earlier member's name: -1
 * none, -2 no memory. */
static int first_repeat(const cJSON *node) {
    int n = 0;
    for (const cJSON *c = node->child; c; c = c->next) n++;
    if (n < 2) return -1;
    json_key *keys = malloc((size_t)n * sizeof *keys);
    if (!keys) return -2;
    int k = 0;
    for (const cJSON *c = node->child; c; c = c->next, k++) keys[k] = (json_key){c->string, k};
    qsort(keys, (size_t)n, sizeof *keys, compare_keys);
    int first = -1;
    for (k = 1; k < n; k++)
        if (strcmp(keys[k - 1].name, keys[k].name) == 0 && (first < 0 || keys[k].index < first))
            first = keys[k].index;
    free(keys);
    return first;
}

/* Finds the first object (in text order) with two members of one name: *object its number
 * (json_scan.n_objects), *member the index of the later of them. 1 found, 0 none, -1 no memory.
 * Keys compare as cJSON decoded them, so "a" and "\u0061" are the same name. */
static int find_duplicate(const cJSON *node, long *count, long *object, int *member) {
    for (; node; node = node->next) {
        if (cJSON_IsObject(node)) {
            const long mine = (*count)++;
            const int repeat = first_repeat(node);
            if (repeat == -2) return -1;
            if (repeat >= 0) {
                *object = mine;
                *member = repeat;
                return 1;
            }
        }
        if (cJSON_IsObject(node) || cJSON_IsArray(node)) {
            const int r = find_duplicate(node->child, count, object, member);
            if (r) return r;
        }
    }
    return 0;
}

attn_status attn_io_json_parse(const char *buf, size_t len, cJSON **out, size_t *at,
                               const char **why) {
    *out = NULL;
    json_scan j = {buf, len, 0, NULL, -1, -1, 0, 0};
    if (!scan_json(&j)) {
        *at = j.i;
        *why = j.why;
        return ATTN_ERR_PARSE;
    }
    if (j.n_values > attn_io_max_json_values()) { /* ~80 bytes of tree each: refused unbuilt */
        *at = 0;
        *why = "more values than the JSON reader takes (ATTN_MAX_JSON_VALUES; about 80 bytes of "
               "memory each as a parse tree): write tensors as \"data_b64\" (far less memory) "
               "or in the binary format, safetensors (attn convert)";
        return ATTN_ERR_NOMEM;
    }
    const char *end = NULL;
    *out = cJSON_ParseWithLengthOpts(buf, len, &end, false);
    if (!*out) {
        *at = end && end >= buf && end <= buf + len ? (size_t)(end - buf) : 0;
        *why = "out of memory while parsing";
        return ATTN_ERR_NOMEM;
    }
    long count = 0, object = -1;
    int member = -1;
    const int dup = find_duplicate(*out, &count, &object, &member);
    if (dup == 0) return ATTN_OK;
    cJSON_Delete(*out);
    *out = NULL;
    if (dup < 0) {
        *at = 0;
        *why = "out of memory while checking for duplicate keys";
        return ATTN_ERR_NOMEM;
    }
    json_scan again = {buf, len, 0, NULL, object, member, 0, 0}; /* to name the key's position */
    scan_json(&again);
    *at = again.i;
    *why = again.why ? again.why : "duplicate key in an object";
    return ATTN_ERR_PARSE;
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

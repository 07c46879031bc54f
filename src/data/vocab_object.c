/* vocab_object.c -- attn_vocab: a vocabulary as an object (the built-in course-review one is
 * vocab.c's static instance; a weights file may carry its own). Creation copies and checks a
 * word list (rules in include/attn.h), a hash table maps tokens to ids, and the closest word by
 * edit distance names a suggestion for an unknown word. No JSON here: src/io reads the file's
 * "vocab" array and calls attn_vocab_create.
 */
#include "data_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- hashing and kinds --------------------------------------------------------------------- */

static attn_token_kind token_kind(const char *t) {
    size_t len = strlen(t);
    if (len > 2 && ((t[0] == '[' && t[len - 1] == ']') || (t[0] == '<' && t[len - 1] == '>')))
        return ATTN_TOKEN_SPECIAL;
    for (const char *p = t; *p; p++)
        if ((*p >= 'A' && *p <= 'Z') || attn_tokenizer_stripped_len(p) > 0)
            return ATTN_TOKEN_IDS_ONLY;
    return ATTN_TOKEN_WORD;
}

void attn_vocab_index(attn_vocab *v) {
    v->index = attn_index_init(v->index.slots, v->index.mask + 1);
    for (int id = 0; id < v->n; id++) {
        attn_index_put(&v->index, attn_hash_string(v->tokens[id]), id);
        v->kinds[id] = (unsigned char)token_kind(v->tokens[id]);
    }
}

int attn_vocab_lookup(const attn_vocab *v, const char *token) {
    if (!v || !token) return -1;
    const attn_index *ix = &v->index;
    for (size_t s = attn_index_start(ix, attn_hash_string(token)); ix->slots[s];
         s = attn_index_next(ix, s))
        if (strcmp(v->tokens[ix->slots[s] - 1], token) == 0) return ix->slots[s] - 1;
    return -1;
}

/* ---- accessors ----------------------------------------------------------------------------- */

bool attn_vocab_is_builtin(const attn_vocab *v) {
    return v && v->builtin;
}

int attn_vocab_count(const attn_vocab *v) {
    return v ? v->n : 0;
}

const char *attn_vocab_token(const attn_vocab *v, int id) {
    return v && id >= 0 && id < v->n ? v->tokens[id] : NULL;
}

const char *attn_vocab_kind(const attn_vocab *v, int id) {
    static const char *const names[] = {"special", "word", "ids-only"};
    return v && id >= 0 && id < v->n ? names[v->kinds[id]] : NULL;
}

/* ---- closest word -------------------------------------------------------------------------- */

int attn_edit_distance(const char *a, size_t na, const char *b, size_t nb) {
    int row[ATTN_VOCAB_TOKEN_MAX + 1];
    for (size_t j = 0; j <= nb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= na; i++) {
        int diag = row[0]; /* d[i-1][j-1] */
        row[0] = (int)i;
        for (size_t j = 1; j <= nb; j++) {
            int up = row[j]; /* d[i-1][j] */
            int best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[nb];
}

/* The search computes at most this many cells of edit-distance tables (a few ms): with a
 * vocabulary of a million words each unknown word cost ~93 ms before, and a file of unknown
 * words hours. */
#define CLOSEST_CELL_BUDGET (4u << 20)

/* The lowest id of a word one byte edit from word[0..nw) (deleted, replaced or inserted), found
 * by looking every such variant up in the hash table (a few thousand lookups whatever the
 * vocabulary's size), or -1. */
static int one_edit_away(const attn_vocab *v, const char *word, size_t nw) {
    char buf[ATTN_VOCAB_TOKEN_MAX + 2];
    int best = -1;
    for (size_t i = 0; i <= nw; i++) {
        for (int pass = 0; pass < 3; pass++) { /* 0: delete word[i], 1: replace it, 2: insert */
            if (pass < 2 && i == nw) continue;
            const int lo = pass == 0 ? 0 : 1, hi = pass == 0 ? 0 : 255;
            for (int c = lo; c <= hi; c++) {
                size_t n = 0;
                memcpy(buf, word, i);
                n = i;
                if (pass > 0) buf[n++] = (char)c;
                const size_t rest = pass == 2 ? i : i + 1;
                memcpy(buf + n, word + rest, nw - rest);
                n += nw - rest;
                buf[n] = '\0';
                if (n == 0 || n > ATTN_VOCAB_TOKEN_MAX || strlen(buf) != n) continue;
                const int id = attn_vocab_lookup(v, buf);
                if (id >= 0 && v->kinds[id] == ATTN_TOKEN_WORD && (best < 0 || id < best))
                    best = id;
            }
        }
    }
    return best;
}

/* The word closest to `word` by a scan of the words (ties to the lower id), stopping early once
 * one is `enough` edits away (nothing closer can exist); NULL if the scan would pass the cell
 * budget. */
static const char *scan_closest(const attn_vocab *v, const char *word, size_t nw, int enough) {
    const char *best = NULL;
    int best_d = -1;
    size_t cells = 0;
    for (int id = 0; id < v->n && best_d != enough; id++) {
        if (v->kinds[id] != ATTN_TOKEN_WORD) continue;
        size_t nt = strlen(v->tokens[id]);
        /* the distance is at least the length difference: a large vocabulary stays quick */
        int gap = (int)(nt > nw ? nt - nw : nw - nt);
        if (best_d >= 0 && gap >= best_d) continue;
        if ((cells += (nw + 1) * (nt + 1)) > CLOSEST_CELL_BUDGET) return NULL; /* not searched */
        int d = attn_edit_distance(word, nw, v->tokens[id], nt);
        if (best_d < 0 || d < best_d) {
            best_d = d;
            best = v->tokens[id];
        }
    }
    return best;
}

const char *attn_vocab_closest(const attn_vocab *v, const char *word) {
    if (!v || !word) return NULL;
    size_t nw = strnlen(word, ATTN_VOCAB_TOKEN_MAX);
    const int self = attn_vocab_lookup(v, word);
    if (self >= 0 && v->kinds[self] == ATTN_TOKEN_WORD) return v->tokens[self];
    /* A small vocabulary is scanned whole: cheaper than looking up the ~256 (2 nw + 1) one-edit
     * variants (about 16 cells a word against one hashed variant), and the same answer. */
    if ((size_t)v->n <= 16 * (2 * nw + 1)) return scan_closest(v, word, nw, 1);
    const int near = one_edit_away(v, word, nw);
    if (near >= 0) return v->tokens[near];
    return scan_closest(v, word, nw, 2); /* two edits or more: 2 is the best there can be */
}

/* ---- checking a word list ------------------------------------------------------------------ */

/* Decodes the UTF-8 sequence at s[0..len): its code point and byte count, or 0 if invalid
 * (overlong forms, surrogates and values above U+10FFFF are invalid). */
static size_t utf8_decode(const unsigned char *s, size_t len, uint32_t *cp) {
    size_t n = s[0] < 0x80             ? 1
               : (s[0] & 0xe0) == 0xc0 ? 2
               : (s[0] & 0xf0) == 0xe0 ? 3
               : (s[0] & 0xf8) == 0xf0 ? 4
                                       : 0;
    if (n == 0 || n > len) return 0;
    uint32_t c = n == 1 ? s[0] : n == 2 ? s[0] & 0x1fu : n == 3 ? s[0] & 0x0fu : s[0] & 0x07u;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        c = (c << 6) | (s[i] & 0x3fu);
    }
    static const uint32_t min_of_len[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < min_of_len[n] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return 0;
    *cp = c;
    return n;
}

static bool is_white_space(uint32_t c) {
    return c == 0x20 || c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 ||
           c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

/* One token's own rules (see attn.h); id names it in the message. */
attn_status attn_vocab_check_token(const char *t, int id, attn_error *err) {
    if (!t) return attn_errorf(err, ATTN_ERR_ARG, "vocab[%d] is NULL", id);
    size_t len = strlen(t);
    if (len == 0) return attn_errorf(err, ATTN_ERR_VALUE, "vocab[%d] is empty", id);
    if (len > ATTN_VOCAB_TOKEN_MAX)
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "vocab[%d] '%.24s...' is %zu bytes long, over the limit of %d", id, t,
                           len, ATTN_VOCAB_TOKEN_MAX);
    const unsigned char *s = (const unsigned char *)t;
    for (size_t at = 0; at < len;) {
        uint32_t c = 0;
        size_t n = utf8_decode(s + at, len - at, &c);
        if (n == 0)
            return attn_errorf(err, ATTN_ERR_VALUE, "vocab[%d] is not valid UTF-8 (byte %zu)", id,
                               at);
        if (c < 0x20 || (c >= 0x7f && c <= 0x9f))
            return attn_errorf(err, ATTN_ERR_VALUE,
                               "vocab[%d] holds the control character U+%04X at byte %zu", id,
                               (unsigned)c, at);
        if (is_white_space(c))
            return attn_errorf(err, ATTN_ERR_VALUE,
                               "vocab[%d] '%s' holds white space (U+%04X) at byte %zu: a token "
                               "is one word",
                               id, t, (unsigned)c, at);
        at += n;
    }
    return ATTN_OK;
}

/* ---- create, free, fit a model --------------------------------------------------------------- */

void attn_vocab_free(const attn_vocab *cv) {
    if (!cv || cv->builtin) return;
    attn_vocab *v = (attn_vocab *)cv; /* created by attn_vocab_create: the caller's to free */
    free(v->tokens);
    free(v->kinds);
    free(v->index.slots);
    free(v->text);
    free(v);
}

attn_status attn_vocab_create(const char *const *words, int n, attn_vocab **out, attn_error *err) {
    if (!out || (!words && n > 0))
        return attn_errorf(err, ATTN_ERR_ARG, "attn_vocab_create: NULL words or out");
    *out = NULL;
    if (n < 2 || n > ATTN_VOCAB_MAX_TOKENS)
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "vocab has %d tokens; expected 2..%d ([PAD], then the tokens)", n,
                           ATTN_VOCAB_MAX_TOKENS);
    size_t bytes = 0;
    for (int id = 0; id < n; id++) {
        attn_status st = attn_vocab_check_token(words[id], id, err);
        if (st != ATTN_OK) return st;
        bytes += strlen(words[id]) + 1;
    }
    if (strcmp(words[0], "[PAD]") != 0)
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "vocab[0] is '%s', expected '[PAD]' (every model pads batches with "
                           "id 0)",
                           words[0]);
    attn_vocab *v = calloc(1, sizeof *v);
    if (!v) return attn_errorf(err, ATTN_ERR_NOMEM, "vocab: out of memory");
    const size_t slots = attn_index_slot_count((size_t)n);
    v->n = n;
    v->index.mask = slots - 1;
    v->tokens = malloc((size_t)n * sizeof *v->tokens);
    v->kinds = malloc((size_t)n);
    v->index.slots = malloc(slots * sizeof *v->index.slots);
    v->text = malloc(bytes);
    if (!v->tokens || !v->kinds || !v->index.slots || !v->text) {
        attn_vocab_free(v);
        return attn_errorf(err, ATTN_ERR_NOMEM, "vocab: out of memory for %d tokens", n);
    }
    char *p = v->text;
    for (int id = 0; id < n; id++) {
        size_t len = strlen(words[id]) + 1;
        memcpy(p, words[id], len);
        v->tokens[id] = p;
        p += len;
    }
    attn_vocab_index(v);
    /* a duplicate hides behind the first occurrence: the lookup finds the earlier id */
    for (int id = 0; id < n; id++) {
        int first = attn_vocab_lookup(v, v->tokens[id]);
        if (first != id) {
            attn_errorf(err, ATTN_ERR_VALUE, "vocab[%d] '%s' duplicates vocab[%d]", id,
                        v->tokens[id], first);
            attn_vocab_free(v);
            return ATTN_ERR_VALUE;
        }
    }
    *out = v;
    return ATTN_OK;
}

attn_status attn_vocab_check_config(const attn_vocab *v, const attn_model_config *cfg,
                                    attn_error *err) {
    if (!v || !cfg) return attn_errorf(err, ATTN_ERR_ARG, "attn_vocab_check_config: NULL argument");
    if (v->n != cfg->vocab_size)
        return attn_errorf(err, ATTN_ERR_SHAPE,
                           "vocab has %d tokens but the config's vocab_size is %d (one token per "
                           "embedding row)",
                           v->n, cfg->vocab_size);
    if (cfg->arch == ATTN_ARCH_TRANSFORMER && strcmp(v->tokens[1], "[CLS]") != 0)
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "vocab[1] is '%s', expected '[CLS]' (the transformer prepends id 1 to "
                           "every sentence)",
                           v->tokens[1]);
    return ATTN_OK;
}

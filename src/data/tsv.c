/* tsv.c -- labelled TSV files ("label<TAB>sentence" per line, label 0 = negative, 1 =
 * positive): the reader (every bad line counted, the first ATTN_TSV_LISTED listed), unknown
 * words as [UNK], and a vocabulary built from a file's words (attn_own_data.h).
 */
#include "data_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- reading lines, collecting the bad ones ------------------------------------------------ */

typedef struct tsv_reader {
    const char *path;
    FILE *f;
    char *line;
    size_t cap;
    attn_tsv_report *rep;
    char first[ATTN_ERROR_MSG_MAX]; /* the first bad line, "path:N: what" */
} tsv_reader;

/* s into dst[size], cut to fit (a cut message ends in "..."). */
static void copy_cut(char *dst, size_t size, const char *s) {
    size_t len = strlen(s);
    if (size < 4) {
        if (size) dst[0] = '\0';
        return;
    }
    if (len < size) {
        memcpy(dst, s, len + 1);
        return;
    }
    memcpy(dst, s, size - 4);
    memcpy(dst + size - 4, "...", 4);
}

static void tsv_bad(tsv_reader *r, attn_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void tsv_bad(tsv_reader *r, attn_status st, const char *fmt, ...) {
    attn_tsv_report *rep = r->rep;
    char msg[ATTN_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (rep->n_bad++ == 0) {
        rep->status = st;
        int at = snprintf(r->first, sizeof r->first, "%s:%ld: ", r->path, rep->n_lines);
        if (at > 0 && (size_t)at < sizeof r->first)
            copy_cut(r->first + at, sizeof r->first - (size_t)at, msg);
    }
    if (rep->n_listed < ATTN_TSV_LISTED) {
        rep->listed[rep->n_listed].line = rep->n_lines;
        copy_cut(rep->listed[rep->n_listed].msg, ATTN_TSV_MSG_MAX, msg);
        rep->n_listed++;
    }
}

/* The next line of the right form: its label and sentence (in r->line). 1, or 0 at the end of
 * the file; bad lines are recorded and skipped. */
static int tsv_next(tsv_reader *r, int *label, const char **sentence) {
    ssize_t got;
    while ((got = getline(&r->line, &r->cap, r->f)) != -1) {
        char *line = r->line;
        r->rep->n_lines++;
        while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r')) line[--got] = '\0';
        if (got == 0) continue; /* blank lines (e.g. a final newline) are skipped */
        if ((size_t)got != strlen(line)) {
            tsv_bad(r, ATTN_ERR_PARSE, "NUL byte in line");
            continue;
        }
        char *tab = strchr(line, '\t');
        if (!tab) {
            tsv_bad(r, ATTN_ERR_PARSE, "missing tab; expected 'label<TAB>sentence'");
            continue;
        }
        if (strchr(tab + 1, '\t')) {
            tsv_bad(r, ATTN_ERR_PARSE,
                    "more than 2 tab-separated columns; expected 'label<TAB>sentence'");
            continue;
        }
        *tab = '\0';
        if (strcmp(line, "0") != 0 && strcmp(line, "1") != 0) {
            tsv_bad(r, ATTN_ERR_PARSE, "bad label '%.40s'; expected 0 (negative) or 1 (positive)",
                    line);
            continue;
        }
        *label = line[0] - '0';
        *sentence = tab + 1;
        return 1;
    }
    return 0;
}

static attn_status tsv_open(tsv_reader *r, const char *path, attn_tsv_report *rep,
                            attn_error *err) {
    memset(r, 0, sizeof *r);
    memset(rep, 0, sizeof *rep);
    r->path = path;
    r->rep = rep;
    if (!(r->f = fopen(path, "r")))
        return attn_errorf(err, ATTN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    return ATTN_OK;
}

/* Closes the file; the error of a read failure, of bad lines or of a file without sentences
 * (n_good of them), else ATTN_OK. */
static attn_status tsv_close(tsv_reader *r, long n_good, attn_error *err) {
    bool failed = ferror(r->f) != 0;
    fclose(r->f);
    free(r->line);
    const attn_tsv_report *rep = r->rep;
    if (failed)
        return attn_errorf(err, ATTN_ERR_IO, "%s: read error after line %ld", r->path,
                           rep->n_lines);
    if (rep->n_bad > 1)
        return attn_errorf(err, rep->status, "%s; %ld bad lines in all", r->first, rep->n_bad);
    if (rep->n_bad == 1) return attn_errorf(err, rep->status, "%s", r->first);
    if (n_good == 0)
        return attn_errorf(err, ATTN_ERR_PARSE,
                           "%s: no sentences (expected 'label<TAB>sentence' lines)", r->path);
    return ATTN_OK;
}

/* ---- the reader ---------------------------------------------------------------------------- */

attn_status attn_dataset_read_tsv(const char *path, attn_dataset **out, attn_error *err) {
    return attn_dataset_read_tsv_report(path, attn_vocab_builtin(), out, NULL, err);
}

attn_status attn_dataset_read_tsv_vocab(const char *path, const attn_vocab *v, attn_dataset **out,
                                        attn_error *err) {
    return attn_dataset_read_tsv_report(path, v, out, NULL, err);
}

attn_status attn_dataset_read_tsv_report(const char *path, const attn_vocab *v, attn_dataset **out,
                                         attn_tsv_report *rep, attn_error *err) {
    if (!path || !out || !v)
        return attn_errorf(err, ATTN_ERR_ARG, "attn_dataset_read_tsv: NULL path, out or vocab");
    *out = NULL;
    attn_tsv_report local;
    tsv_reader r;
    attn_status st = tsv_open(&r, path, rep ? rep : &local, err);
    if (st != ATTN_OK) return st;
    attn_dataset_builder b;
    if ((st = attn_dataset_builder_init(&b, err)) != ATTN_OK) {
        fclose(r.f);
        return st;
    }
    b.vocab = v;
    const int unk_id = attn_vocab_lookup(v, ATTN_UNK_TOKEN);
    int ids[ATTN_MAX_WORDS], label = 0;
    const char *sentence;
    while (st == ATTN_OK && tsv_next(&r, &label, &sentence)) {
        int n = 0, n_unk = 0;
        attn_error tok_err;
        if (attn_tokenize_vocab_unk(v, sentence, unk_id, ids, ATTN_MAX_WORDS, &n, &n_unk,
                                    &tok_err) != ATTN_OK) {
            tsv_bad(&r, tok_err.status, "%s", tok_err.msg);
            continue;
        }
        r.rep->n_unk_words += n_unk;
        r.rep->n_unk_lines += n_unk > 0;
        if (r.rep->n_bad == 0) st = attn_dataset_builder_push(&b, label, ids, n, err);
    }
    attn_error close_err;
    attn_status closed = tsv_close(&r, b.d->n, st == ATTN_OK ? err : &close_err);
    if (st == ATTN_OK) st = closed;
    if (st == ATTN_OK)
        *out = attn_dataset_builder_finish(&b);
    else
        attn_dataset_builder_discard(&b);
    return st;
}

/* ---- a vocabulary from the file's words ------------------------------------------------------ */

typedef struct word_count {
    char *word;
    long count;
} word_count;

typedef struct word_table {
    word_count *words; /* [n] in first-seen order */
    size_t n, cap;     /* words held, room in words and half the index's slots */
    attn_index index;  /* word -> entry of words (slots owned) */
} word_table;

/* Doubles the room (words and index) when it is full. */
static bool table_grow(word_table *t) {
    const size_t cap = t->cap ? 2 * t->cap : 512;
    word_count *words = realloc(t->words, cap * sizeof *words);
    if (!words) return false;
    t->words = words;
    int *slots = malloc(attn_index_slot_count(cap) * sizeof *slots);
    if (!slots) return false;
    free(t->index.slots);
    t->index = attn_index_init(slots, attn_index_slot_count(cap));
    for (size_t i = 0; i < t->n; i++)
        attn_index_put(&t->index, attn_hash_string(words[i].word), (int)i);
    t->cap = cap;
    return true;
}

static bool table_add(word_table *t, const char *word) {
    const uint64_t h = attn_hash_string(word);
    const attn_index *ix = &t->index;
    for (size_t s = t->cap ? attn_index_start(ix, h) : 0; t->cap && ix->slots[s];
         s = attn_index_next(ix, s))
        if (strcmp(t->words[ix->slots[s] - 1].word, word) == 0) {
            t->words[ix->slots[s] - 1].count++;
            return true;
        }
    if (t->n == t->cap && !table_grow(t)) return false;
    if (!(t->words[t->n].word = strdup(word))) return false;
    t->words[t->n].count = 1;
    attn_index_put(&t->index, h, (int)t->n++);
    return true;
}

static void table_free(word_table *t) {
    for (size_t i = 0; i < t->n; i++) free(t->words[i].word);
    free(t->words);
    free(t->index.slots);
}

/* Most frequent first, then byte order. */
static int by_count_then_bytes(const void *pa, const void *pb) {
    const word_count *a = pa, *b = pb;
    if (a->count != b->count) return a->count > b->count ? -1 : 1;
    return strcmp(a->word, b->word);
}

/* A word the vocabulary can hold as a token of kind "word". */
static bool can_be_token(const char *word, size_t len) {
    attn_error ignored;
    if (len > 2 && word[0] == '<' && word[len - 1] == '>') return false; /* a special's form */
    return attn_vocab_check_token(word, 0, &ignored) == ATTN_OK;
}

/* Counts the words of every good line into t; bad lines go to r's report. */
static attn_status count_words(tsv_reader *r, word_table *t, long *n_good, attn_error *err) {
    int label;
    const char *sentence;
    char word[ATTN_TOKENIZER_WORD_MAX];
    while (tsv_next(r, &label, &sentence)) {
        size_t len;
        bool truncated;
        int n = 0;
        for (const char *p = sentence; attn_tokenizer_next(&p, word, &len, &truncated); n++)
            if (!truncated && can_be_token(word, len) && !table_add(t, word))
                return attn_errorf(err, ATTN_ERR_NOMEM, "%s: out of memory at %zu words", r->path,
                                   t->n);
        if (n == 0)
            tsv_bad(r, ATTN_ERR_VALUE,
                    "empty sentence: no words after removing white space, punctuation, quotes "
                    "and brackets");
        else if (n > ATTN_MAX_WORDS)
            tsv_bad(r, ATTN_ERR_VALUE, "sentence has %d words, more than the maximum of %d", n,
                    ATTN_MAX_WORDS);
        else
            (*n_good)++;
    }
    return ATTN_OK;
}

/* The vocabulary of the table's words seen min_count times or more. */
static attn_status make_vocab(word_table *t, int min_count, attn_vocab **out, int *n_rare,
                              attn_error *err) {
    word_count *kept = malloc((t->n + 1) * sizeof *kept);
    const char **words = malloc((t->n + 3) * sizeof *words);
    attn_status st = ATTN_OK;
    if (!kept || !words) st = attn_errorf(err, ATTN_ERR_NOMEM, "vocab: out of memory");
    size_t n = 0, rare = 0;
    for (size_t i = 0; st == ATTN_OK && i < t->n; i++) {
        if (t->words[i].count >= min_count)
            kept[n++] = t->words[i];
        else
            rare++;
    }
    if (st == ATTN_OK) {
        qsort(kept, n, sizeof *kept, by_count_then_bytes);
        words[0] = "[PAD]";
        words[1] = "[CLS]";
        words[2] = ATTN_UNK_TOKEN;
        for (size_t i = 0; i < n; i++) words[3 + i] = kept[i].word;
        if (n + 3 > ATTN_VOCAB_MAX_TOKENS)
            st = attn_errorf(err, ATTN_ERR_VALUE,
                             "the file has %zu words seen %d or more times, more than a "
                             "vocabulary takes (%d tokens): give a larger --min-count",
                             n, min_count, ATTN_VOCAB_MAX_TOKENS);
        else
            st = attn_vocab_create(words, (int)n + 3, out, err);
    }
    if (n_rare) *n_rare = (int)rare;
    free(kept);
    free(words);
    return st;
}

attn_status attn_vocab_from_tsv(const char *path, int min_count, attn_vocab **out,
                                attn_tsv_report *rep, int *n_rare, attn_error *err) {
    if (!path || !out || min_count < 1)
        return attn_errorf(err, ATTN_ERR_ARG,
                           "attn_vocab_from_tsv: NULL path/out or min_count < 1");
    *out = NULL;
    if (n_rare) *n_rare = 0;
    attn_tsv_report local;
    tsv_reader r;
    attn_status st = tsv_open(&r, path, rep ? rep : &local, err);
    if (st != ATTN_OK) return st;
    word_table t = {0};
    long n_good = 0;
    st = count_words(&r, &t, &n_good, err);
    attn_error close_err;
    attn_status closed = tsv_close(&r, n_good, st == ATTN_OK ? err : &close_err);
    if (st == ATTN_OK) st = closed;
    if (st == ATTN_OK) st = make_vocab(&t, min_count, out, n_rare, err);
    table_free(&t);
    return st;
}

/* ---- words without a vocabulary ------------------------------------------------------------- */

attn_status attn_tokenize_words(const char *sentence, char *buf, size_t size, const char **words,
                                int max_words, int *n, attn_error *err) {
    if (!sentence || !buf || !words || !n || max_words < 0)
        return attn_errorf(err, ATTN_ERR_ARG, "attn_tokenize_words: NULL argument");
    *n = 0;
    char word[ATTN_TOKENIZER_WORD_MAX];
    size_t len, used = 0;
    bool truncated;
    int count = 0;
    for (const char *p = sentence; attn_tokenizer_next(&p, word, &len, &truncated); count++) {
        if (count >= max_words) continue; /* counted for the message */
        if (used + len + 1 > size)
            return attn_errorf(err, ATTN_ERR_ARG,
                               "attn_tokenize_words: buf of %zu bytes is too "
                               "small",
                               size);
        memcpy(buf + used, word, len + 1);
        words[count] = buf + used;
        used += len + 1;
    }
    if (count == 0 || count > max_words) return attn_sentence_length_error(count, max_words, err);
    *n = count;
    return ATTN_OK;
}

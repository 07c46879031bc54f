/* vocab.c -- the 91-token vocabulary of the course-review task and the tokenizer.
 *
 * THE table of the project's words: id = position in vocab[] (0 = [PAD], 1 = [CLS], 2..90 the
 * 89 words), each with its grammatical category. The generator (generator.c) draws every word
 * of every sentence from these categories and the filler phrases below, and `attn vocab` prints
 * this table, so ids never drift between the generator, the tokenizer and the models.
 * The table is also an attn_vocab (attn_vocab_builtin(), vocab_object.c's type): the tokenizer
 * works on any attn_vocab, and attn_tokenize is it with this one.
 */
#include "data_internal.h"

#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define SUGGEST_SHOWN 5 /* words of a class the message names (the JSON answer has them all) */

typedef struct vocab_entry {
    const char *word;
    attn_word_cat cat;
} vocab_entry;

static const vocab_entry vocab[ATTN_VOCAB_SIZE] = {
    /* 0, 1 */
    {"[PAD]", ATTN_CAT_SPECIAL},
    {"[CLS]", ATTN_CAT_SPECIAL},
    /* 2 */
    {"the", ATTN_CAT_DETERMINER},
    /* 3..10 core subjects */
    {"lecture", ATTN_CAT_SUBJECT},
    {"course", ATTN_CAT_SUBJECT},
    {"teacher", ATTN_CAT_SUBJECT},
    {"professor", ATTN_CAT_SUBJECT},
    {"seminar", ATTN_CAT_SUBJECT},
    {"exam", ATTN_CAT_SUBJECT},
    {"tutorial", ATTN_CAT_SUBJECT},
    {"textbook", ATTN_CAT_SUBJECT},
    /* 11..14 verbs */
    {"was", ATTN_CAT_VERB},
    {"is", ATTN_CAT_VERB},
    {"seemed", ATTN_CAT_VERB},
    {"felt", ATTN_CAT_VERB},
    /* 15, 16 negations */
    {"not", ATTN_CAT_NEGATION},
    {"never", ATTN_CAT_NEGATION},
    /* 17..21 intensifiers */
    {"very", ATTN_CAT_INTENSIFIER},
    {"really", ATTN_CAT_INTENSIFIER},
    {"quite", ATTN_CAT_INTENSIFIER},
    {"extremely", ATTN_CAT_INTENSIFIER},
    {"so", ATTN_CAT_INTENSIFIER},
    /* 22..31 positive adjectives */
    {"helpful", ATTN_CAT_POSITIVE},
    {"good", ATTN_CAT_POSITIVE},
    {"great", ATTN_CAT_POSITIVE},
    {"excellent", ATTN_CAT_POSITIVE},
    {"clear", ATTN_CAT_POSITIVE},
    {"interesting", ATTN_CAT_POSITIVE},
    {"useful", ATTN_CAT_POSITIVE},
    {"engaging", ATTN_CAT_POSITIVE},
    {"inspiring", ATTN_CAT_POSITIVE},
    {"fun", ATTN_CAT_POSITIVE},
    /* 32..41 negative adjectives */
    {"boring", ATTN_CAT_NEGATIVE},
    {"confusing", ATTN_CAT_NEGATIVE},
    {"useless", ATTN_CAT_NEGATIVE},
    {"bad", ATTN_CAT_NEGATIVE},
    {"awful", ATTN_CAT_NEGATIVE},
    {"terrible", ATTN_CAT_NEGATIVE},
    {"dull", ATTN_CAT_NEGATIVE},
    {"poor", ATTN_CAT_NEGATIVE},
    {"messy", ATTN_CAT_NEGATIVE}, /* was "chaotic": the write-up's s7 example */
    {"pointless", ATTN_CAT_NEGATIVE},
    /* 42..46 conjunctions opening the distractor clause */
    {"although", ATTN_CAT_CONJUNCTION},
    {"but", ATTN_CAT_CONJUNCTION},
    {"while", ATTN_CAT_CONJUNCTION},
    {"though", ATTN_CAT_CONJUNCTION},
    {"whereas", ATTN_CAT_CONJUNCTION},
    /* 47..54 distractor subjects */
    {"coffee", ATTN_CAT_DISTRACTOR},
    {"weather", ATTN_CAT_DISTRACTOR},
    {"food", ATTN_CAT_DISTRACTOR}, /* was "cafeteria": the write-up's "the food was not good" */
    {"parking", ATTN_CAT_DISTRACTOR},
    {"wifi", ATTN_CAT_DISTRACTOR},
    {"room", ATTN_CAT_DISTRACTOR},
    {"campus", ATTN_CAT_DISTRACTOR},
    {"library", ATTN_CAT_DISTRACTOR},
    /* 55..90 filler-phrase words */
    {"honestly", ATTN_CAT_FILLER},
    {"overall", ATTN_CAT_FILLER},
    {"apparently", ATTN_CAT_FILLER},
    {"in", ATTN_CAT_FILLER},
    {"winter", ATTN_CAT_FILLER},
    {"semester", ATTN_CAT_FILLER},
    {"summer", ATTN_CAT_FILLER},
    {"according", ATTN_CAT_FILLER},
    {"to", ATTN_CAT_FILLER},
    {"my", ATTN_CAT_FILLER},
    {"friends", ATTN_CAT_FILLER},
    {"opinion", ATTN_CAT_FILLER},
    {"as", ATTN_CAT_FILLER},
    {"far", ATTN_CAT_FILLER},
    {"i", ATTN_CAT_FILLER},
    {"know", ATTN_CAT_FILLER},
    {"last", ATTN_CAT_FILLER},
    {"year", ATTN_CAT_FILLER},
    {"this", ATTN_CAT_FILLER},
    {"on", ATTN_CAT_FILLER},
    {"mondays", ATTN_CAT_FILLER},
    {"during", ATTN_CAT_FILLER},
    {"pandemic", ATTN_CAT_FILLER},
    {"for", ATTN_CAT_FILLER},
    {"most", ATTN_CAT_FILLER},
    {"part", ATTN_CAT_FILLER},
    {"if", ATTN_CAT_FILLER},
    {"you", ATTN_CAT_FILLER},
    {"ask", ATTN_CAT_FILLER},
    {"me", ATTN_CAT_FILLER},
    {"at", ATTN_CAT_FILLER},
    {"least", ATTN_CAT_FILLER},
    {"from", ATTN_CAT_FILLER},
    {"what", ATTN_CAT_FILLER},
    {"heard", ATTN_CAT_FILLER},
    {"end", ATTN_CAT_FILLER},
};

/* Filler phrases: placed before and after the core clause; they carry no sentiment. */
static const char *const fillers[] = {
    "honestly",
    "overall",
    "apparently",
    "in the winter semester",
    "according to my friends",
    "in my opinion",
    "as far as i know",
    "in the summer semester last year",
    "on mondays during the pandemic",
    "for the most part",
    "if you ask me",
    "at least for me",
    "from what i heard",
    "in the end",
    "this year",
    "according to what my friends heard",
    "at least as far as i know",
    "during the winter semester last year",
    "if you ask my friends",
    "from what i heard on mondays",
};

static const char *const cat_names[ATTN_N_CATS] = {
    "special",  "determiner", "subject",     "verb",       "negation", "intensifier",
    "positive", "negative",   "conjunction", "distractor", "filler",
};

int attn_vocab_size(void) {
    return ATTN_VOCAB_SIZE;
}

const char *attn_vocab_word(int id) {
    return id >= 0 && id < ATTN_VOCAB_SIZE ? vocab[id].word : NULL;
}

attn_word_cat attn_vocab_cat(int id) {
    return id >= 0 && id < ATTN_VOCAB_SIZE ? vocab[id].cat : ATTN_CAT_SPECIAL;
}

const char *attn_word_cat_name(attn_word_cat c) {
    return (int)c >= 0 && c < ATTN_N_CATS ? cat_names[c] : "unknown";
}

const char *attn_vocab_category(int id) {
    return id >= 0 && id < ATTN_VOCAB_SIZE ? cat_names[vocab[id].cat] : NULL;
}

/* ---- the built-in vocabulary as an attn_vocab ------------------------------------------------ *
 * Word -> id goes through the object's hash table (FNV-1a, linear probing; 256 slots for the 91
 * words), built once: the tokenizer looks up every word of every sentence, and a linear scan of
 * the table cost 17 % of a batched RNN evaluation. */
#define BUILTIN_SLOTS 256 /* attn_index_slot_count(ATTN_VOCAB_SIZE) */

static const char *builtin_tokens[ATTN_VOCAB_SIZE];
static unsigned char builtin_kinds[ATTN_VOCAB_SIZE];
static int builtin_slots[BUILTIN_SLOTS];
static attn_vocab builtin = {
    ATTN_VOCAB_SIZE, builtin_tokens, builtin_kinds, {builtin_slots, BUILTIN_SLOTS - 1}, NULL, true};
static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;

static void build_builtin(void) {
    for (int id = 0; id < ATTN_VOCAB_SIZE; id++) builtin_tokens[id] = vocab[id].word;
    attn_vocab_index(&builtin);
}

const attn_vocab *attn_vocab_builtin(void) {
    pthread_once(&builtin_once, build_builtin);
    return &builtin;
}

int attn_vocab_id(const char *word) {
    return attn_vocab_lookup(attn_vocab_builtin(), word);
}

int attn_filler_count(void) {
    return (int)(sizeof fillers / sizeof fillers[0]);
}

const char *attn_filler_phrase(int i) {
    return i >= 0 && i < attn_filler_count() ? fillers[i] : NULL;
}

/* ---- tokenizer ----------------------------------------------------------------------------- */

/* The bytes of the punctuation at p that the tokenizer removes (0: none): .,!?;: ASCII quotes
 * " ' ` and brackets ()[]{}, and the UTF-8 quotes “ ” ‘ ’ „ « ». */
size_t attn_tokenizer_stripped_len(const char *p) {
    static const char ascii[] = ".,!?;:\"'`()[]{}";
    static const char *const utf8[] = {"\xe2\x80\x9c", "\xe2\x80\x9d", "\xe2\x80\x98",
                                       "\xe2\x80\x99", "\xe2\x80\x9e", "\xc2\xab",
                                       "\xc2\xbb"};
    if (strchr(ascii, *p)) return 1;
    for (size_t i = 0; i < sizeof utf8 / sizeof utf8[0]; i++)
        if (strncmp(p, utf8[i], strlen(utf8[i])) == 0) return strlen(utf8[i]);
    return 0;
}

/* Appends to buf[n] at *at (cut at the end of buf). */
static void append(char *buf, size_t n, size_t *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t n, size_t *at, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const int k = vsnprintf(buf + *at, n - *at, fmt, ap);
    va_end(ap);
    if (k > 0) *at = *at + (size_t)k < n ? *at + (size_t)k : n - 1;
}

/* "; by its place (after 'the', before 'was') a subject noun: exam, course, ..." for a word the
 * grammar places (attn_vocab_suggest's rules), "" otherwise; into buf[n]. */
static void place_text(const attn_suggestion *s, char *buf, size_t n) {
    size_t at = 0;
    buf[0] = '\0';
    if (!s->place) return;
    append(buf, n, &at, "; by its place (%s) %s %s:", s->rule,
           strchr("aeiou", s->place[0]) ? "an" : "a", s->place);
    for (int g = 0; g < s->n_groups; g++) {
        const attn_suggest_group *gr = &s->groups[g];
        if (g > 0) append(buf, n, &at, " or");
        if (s->n_groups > 1) append(buf, n, &at, " %s", gr->category);
        const int shown = gr->n < SUGGEST_SHOWN ? gr->n : SUGGEST_SHOWN;
        for (int i = 0; i < shown; i++)
            append(buf, n, &at, "%s %s", i > 0 ? "," : "", gr->words[i]);
        if (gr->n > shown) append(buf, n, &at, ", ...");
    }
}

/* The message for an unknown word, by what the vocabulary can suggest. */
static void unknown_word_message(const attn_vocab *v, const attn_suggestion *s, int pos,
                                 attn_error *err) {
    const char *closest = s->nearest;
    bool has_word = false;
    for (int id = 0; id < v->n && !closest && !has_word; id++)
        has_word = v->kinds[id] == ATTN_TOKEN_WORD;
    char place[512];
    place_text(s, place, sizeof place);
    if (v->builtin)
        attn_errorf(err, ATTN_ERR_VALUE,
                    "unknown word '%s' at position %d (closest vocabulary word: '%s'%s; "
                    "'attn vocab' lists all %d words)",
                    s->word, pos, closest, place, ATTN_N_WORDS);
    else if (!closest && has_word) /* the bounded search gave up (a very large vocabulary) */
        attn_errorf(err, ATTN_ERR_VALUE,
                    "unknown word '%s' at position %d (no close word found in the "
                    "model's vocabulary of %d tokens: 'attn vocab --weights' lists it)",
                    s->word, pos, v->n);
    else if (!closest)
        attn_errorf(err, ATTN_ERR_VALUE,
                    "unknown word '%s' at position %d (the model's vocabulary of %d "
                    "tokens has no word the tokenizer can produce: give token ids)",
                    s->word, pos, v->n);
    else
        attn_errorf(err, ATTN_ERR_VALUE,
                    "unknown word '%s' at position %d (closest vocabulary word: '%s'; the "
                    "model's own vocabulary of %d tokens: 'attn vocab --weights' lists it)",
                    s->word, pos, closest, v->n);
}

/* The error for the sentence's first unknown word (or one that is not a word of v), at pos:
 * ATTN_CODE_UNKNOWN_WORD with its position, the word as quoted and the closest vocabulary word;
 * the message adds the words of its place's class (attn_vocab_suggest). */
static attn_status unknown_word(const attn_vocab *v, const char *sentence, int pos,
                                attn_error *err) {
    attn_suggestion s;
    int n = 0;
    attn_vocab_suggest(v, sentence, &s, 1, &n, NULL);
    if (n < 1 || s.position != pos) /* cannot happen: the same tokenizer, the same lookups */
        return attn_errorf(err, ATTN_ERR_VALUE, "unknown word at position %d", pos);
    unknown_word_message(v, &s, pos, err);
    attn_error_detail(err, ATTN_CODE_UNKNOWN_WORD, pos, s.word, s.nearest);
    return ATTN_ERR_VALUE;
}

attn_status attn_sentence_length_error(int n, int max_words, attn_error *err) {
    if (n == 0)
        attn_errorf(err, ATTN_ERR_VALUE,
                    "empty sentence: no words after removing white space, punctuation, "
                    "quotes and brackets");
    else
        attn_errorf(err, ATTN_ERR_VALUE, "sentence has %d words, more than the maximum of %d", n,
                    max_words);
    attn_error_detail(err, n == 0 ? ATTN_CODE_EMPTY_SENTENCE : ATTN_CODE_TOO_LONG, n, NULL, NULL);
    return ATTN_ERR_VALUE;
}

attn_status attn_tokenize(const char *sentence, int *ids, int max_ids, int *n_ids,
                          attn_error *err) {
    return attn_tokenize_vocab(attn_vocab_builtin(), sentence, ids, max_ids, n_ids, err);
}

attn_status attn_tokenize_vocab(const attn_vocab *v, const char *sentence, int *ids, int max_ids,
                                int *n_ids, attn_error *err) {
    return attn_tokenize_vocab_unk(v, sentence, -1, ids, max_ids, n_ids, NULL, err);
}

bool attn_tokenizer_next(const char **pp, char *word, size_t *len, bool *truncated) {
    const char *p = *pp;
    for (;;) {
        while (*p && isspace((unsigned char)*p)) p++;
        if (!*p) {
            *pp = p;
            return false;
        }
        /* one white-space separated token: lower-cased, punctuation, quotes, brackets removed */
        *len = 0;
        *truncated = false;
        for (size_t skip; *p && !isspace((unsigned char)*p); p++) {
            if ((skip = attn_tokenizer_stripped_len(p)) > 0) {
                p += skip - 1;
                continue;
            }
            if (*len + 1 < ATTN_TOKENIZER_WORD_MAX)
                word[(*len)++] = (char)tolower((unsigned char)*p);
            else
                *truncated = true;
        }
        word[*len] = '\0';
        if (*len > 0) break; /* a token made only of those (e.g. "!" or "(...)") is dropped */
    }
    *pp = p;
    return true;
}

attn_status attn_tokenize_vocab_unk(const attn_vocab *v, const char *sentence, int unk_id, int *ids,
                                    int max_ids, int *n_ids, int *n_unk, attn_error *err) {
    if (!v || !sentence || !n_ids || (max_ids > 0 && !ids) || max_ids < 0 || unk_id >= v->n)
        return attn_errorf(err, ATTN_ERR_ARG,
                           "attn_tokenize: NULL vocab/sentence/ids/n_ids, "
                           "negative max_ids or unk_id out of range");
    *n_ids = 0;
    if (n_unk) *n_unk = 0;
    int n = 0, unknown = 0;
    const char *p = sentence;
    char word[ATTN_TOKENIZER_WORD_MAX];
    size_t len;
    bool truncated;
    while (attn_tokenizer_next(&p, word, &len, &truncated)) {
        int id = truncated ? -1 : attn_vocab_lookup(v, word);
        if (id < 0 || v->kinds[id] != ATTN_TOKEN_WORD) { /* unknown, or a special token */
            if (unk_id < 0) return unknown_word(v, sentence, n + 1, err);
            id = unk_id;
            unknown++;
        }
        if (n < max_ids) ids[n] = id;
        n++;
    }
    if (n == 0 || n > max_ids) return attn_sentence_length_error(n, max_ids, err);
    *n_ids = n;
    if (n_unk) *n_unk = unknown;
    return ATTN_OK;
}

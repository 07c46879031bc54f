/* vocab.c -- the 91-token vocabulary of the course-review task and the tokenizer.
 *
 * THE table of the project's words: id = position in vocab[] (0 = [PAD], 1 = [CLS], 2..90 the
 * 89 words), each with its grammatical category. The generator (generator.c) draws every word
 * of every sentence from these categories and the filler phrases below, and `attn vocab` prints
 * this table, so ids never drift between the generator, the tokenizer and the models.
 */
#include "data_internal.h"

#include <ctype.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

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
    {"chaotic", ATTN_CAT_NEGATIVE},
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
    {"cafeteria", ATTN_CAT_DISTRACTOR},
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

/* Word -> id: an open-addressing hash table (FNV-1a, linear probing) of 256 slots for the 91
 * words, built once. The tokenizer looks up every word of every sentence, so a linear scan
 * of the table cost 17 % of a batched RNN evaluation. */
#define HASH_SLOTS 256 /* a power of two, well above ATTN_VOCAB_SIZE: short probe runs */

static unsigned char hash_slots[HASH_SLOTS]; /* id + 1; 0 = empty */
static pthread_once_t hash_once = PTHREAD_ONCE_INIT;

static uint32_t fnv1a(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static void build_hash(void) {
    for (int id = 0; id < ATTN_VOCAB_SIZE; id++) {
        uint32_t h = fnv1a(vocab[id].word) & (HASH_SLOTS - 1);
        while (hash_slots[h]) h = (h + 1) & (HASH_SLOTS - 1);
        hash_slots[h] = (unsigned char)(id + 1);
    }
}

int attn_vocab_id(const char *word) {
    if (!word) return -1;
    pthread_once(&hash_once, build_hash);
    for (uint32_t h = fnv1a(word) & (HASH_SLOTS - 1); hash_slots[h]; h = (h + 1) & (HASH_SLOTS - 1))
        if (strcmp(vocab[hash_slots[h] - 1].word, word) == 0) return hash_slots[h] - 1;
    return -1;
}

int attn_filler_count(void) {
    return (int)(sizeof fillers / sizeof fillers[0]);
}

const char *attn_filler_phrase(int i) {
    return i >= 0 && i < attn_filler_count() ? fillers[i] : NULL;
}

/* ---- tokenizer ----------------------------------------------------------------------------- */

#define WORD_MAX 64 /* longer words are unknown anyway; the message shows the first 63 bytes */

/* Levenshtein distance between a[0..na) and b[0..nb), both at most WORD_MAX long. */
static int edit_distance(const char *a, size_t na, const char *b, size_t nb) {
    int row[WORD_MAX + 1];
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

/* The vocabulary word (not [PAD]/[CLS]) closest to w by edit distance; ties go to the lower id. */
static const char *closest_word(const char *w) {
    size_t nw = strlen(w);
    const char *best = vocab[2].word;
    int best_d = -1;
    for (int id = 2; id < ATTN_VOCAB_SIZE; id++) {
        int d = edit_distance(w, nw, vocab[id].word, strlen(vocab[id].word));
        if (best_d < 0 || d < best_d) {
            best_d = d;
            best = vocab[id].word;
        }
    }
    return best;
}

/* The bytes of the punctuation at p that the tokenizer removes (0: none): .,!?;: ASCII quotes
 * " ' ` and brackets ()[]{}, and the UTF-8 quotes “ ” ‘ ’ „ « ». */
static size_t stripped_len(const char *p) {
    static const char ascii[] = ".,!?;:\"'`()[]{}";
    static const char *const utf8[] = {"\xe2\x80\x9c", "\xe2\x80\x9d", "\xe2\x80\x98",
                                       "\xe2\x80\x99", "\xe2\x80\x9e", "\xc2\xab",
                                       "\xc2\xbb"};
    if (strchr(ascii, *p)) return 1;
    for (size_t i = 0; i < sizeof utf8 / sizeof utf8[0]; i++)
        if (strncmp(p, utf8[i], strlen(utf8[i])) == 0) return strlen(utf8[i]);
    return 0;
}

attn_status attn_tokenize(const char *sentence, int *ids, int max_ids, int *n_ids,
                          attn_error *err) {
    if (!sentence || !n_ids || (max_ids > 0 && !ids) || max_ids < 0)
        return attn_errorf(err, ATTN_ERR_ARG,
                           "attn_tokenize: NULL sentence/ids/n_ids or "
                           "negative max_ids");
    *n_ids = 0;
    int n = 0;
    const char *p = sentence;
    while (*p) {
        while (*p && isspace((unsigned char)*p)) p++;
        if (!*p) break;
        /* one white-space separated token: lower-cased, punctuation, quotes, brackets removed */
        char word[WORD_MAX];
        size_t len = 0;
        bool truncated = false;
        for (size_t skip; *p && !isspace((unsigned char)*p); p++) {
            if ((skip = stripped_len(p)) > 0) {
                p += skip - 1;
                continue;
            }
            if (len + 1 < WORD_MAX)
                word[len++] = (char)tolower((unsigned char)*p);
            else
                truncated = true;
        }
        word[len] = '\0';
        if (len == 0) continue; /* a token made only of those (e.g. "!" or "(...)") is dropped */
        int id = truncated ? -1 : attn_vocab_id(word);
        if (id < 2) /* unknown, or a literal "[pad]"-like token that is not a word */
            return attn_errorf(err, ATTN_ERR_VALUE,
                               "unknown word '%s%s' at position %d (closest vocabulary word: "
                               "'%s'; 'attn vocab' lists all %d words)",
                               word, truncated ? "..." : "", n + 1, closest_word(word),
                               ATTN_N_WORDS);
        if (n < max_ids) ids[n] = id;
        n++;
    }
    if (n == 0)
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "empty sentence: no words after removing white space, punctuation, "
                           "quotes and brackets");
    if (n > max_ids)
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "sentence has %d words, more than the maximum of %d", n, max_ids);
    *n_ids = n;
    return ATTN_OK;
}

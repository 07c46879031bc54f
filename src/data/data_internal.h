/* data_internal.h -- shared by the files of src/data/ (and their tests): word categories of the
 * vocabulary table, the filler-phrase table, and a growing attn_dataset builder.
 */
#ifndef ATTN_DATA_INTERNAL_H
#define ATTN_DATA_INTERNAL_H

#include "attn.h"
#include "attn_own_data.h"

#include <stdbool.h>
#include <stdint.h>

/* The role of each vocabulary word in the sentence grammar (vocab.c's table). */
typedef enum attn_word_cat {
    ATTN_CAT_SPECIAL,     /* [PAD], [CLS] */
    ATTN_CAT_DETERMINER,  /* "the" */
    ATTN_CAT_SUBJECT,     /* core-clause subject nouns */
    ATTN_CAT_VERB,        /* linking verbs (core and distractor clause) */
    ATTN_CAT_NEGATION,    /* not, never (core clause only) */
    ATTN_CAT_INTENSIFIER, /* very, really, ... */
    ATTN_CAT_POSITIVE,    /* positive adjectives */
    ATTN_CAT_NEGATIVE,    /* negative adjectives */
    ATTN_CAT_CONJUNCTION, /* opens the distractor clause */
    ATTN_CAT_DISTRACTOR,  /* distractor-clause subject nouns */
    ATTN_CAT_FILLER,      /* words that occur only in filler phrases */
    ATTN_N_CATS
} attn_word_cat;

attn_word_cat attn_vocab_cat(int id); /* ATTN_CAT_SPECIAL for out-of-range ids */
const char *attn_word_cat_name(attn_word_cat c);

/* ---- attn_vocab (vocab_object.c; the built-in instance is vocab.c's) ---------------------- */

typedef enum attn_token_kind {
    ATTN_TOKEN_SPECIAL,
    ATTN_TOKEN_WORD,
    ATTN_TOKEN_IDS_ONLY
} attn_token_kind;

struct attn_vocab {
    int n;                /* tokens */
    const char **tokens;  /* [n] */
    unsigned char *kinds; /* [n] attn_token_kind */
    attn_index index;     /* token -> id (FNV-1a of the token; attn_util.h) */
    char *text;           /* the tokens' bytes, NUL-separated (owned; NULL for the built-in one) */
    bool builtin;         /* the static course-review vocabulary: never freed */
};

/* Fills v->index (its slots allocated, attn_index_slot_count(n)) and v->kinds from v->tokens. */
void attn_vocab_index(attn_vocab *v);
/* The bytes of the punctuation at p that the tokenizer removes (0: none). */
size_t attn_tokenizer_stripped_len(const char *p);
/* One token as the tokenizer builds it: longer words are unknown anyway; messages show the
 * first ATTN_VOCAB_TOKEN_MAX bytes. */
#define ATTN_TOKENIZER_WORD_MAX (ATTN_VOCAB_TOKEN_MAX + 1)
/* The tokenizer's next word at *p (lower-cased, punctuation, quotes and brackets removed) into
 * word[ATTN_TOKENIZER_WORD_MAX] (*len bytes; *truncated when it was longer); advances *p.
 * false at the end of the text. */
bool attn_tokenizer_next(const char **p, char *word, size_t *len, bool *truncated);
/* The error for a sentence of n words when 1..max_words are allowed: "empty sentence" (code
 * ATTN_CODE_EMPTY_SENTENCE) or "sentence has n words" (ATTN_CODE_TOO_LONG); ATTN_ERR_VALUE. */
attn_status attn_sentence_length_error(int n, int max_words, attn_error *err);
/* A token's own rules (attn_vocab_create's; id names it in the message). */
attn_status attn_vocab_check_token(const char *t, int id, attn_error *err);

/* Levenshtein distance between a[0..na) and b[0..nb), both at most ATTN_VOCAB_TOKEN_MAX long. */
int attn_edit_distance(const char *a, size_t na, const char *b, size_t nb);

/* Filler phrases ("in the winter semester"): space-separated vocabulary words, no sentiment
 * adjective, no negation. */
int attn_filler_count(void);
const char *attn_filler_phrase(int i);

/* Sentences of the generated sets never exceed this many words (fill8: 42..60). */
#define ATTN_GEN_MAX_WORDS 60

/* Appends sentences to a dataset, growing its arrays geometrically. */
typedef struct attn_dataset_builder {
    attn_dataset *d;
    const attn_vocab *vocab; /* the texts' words (attn_dataset_builder_init: the built-in one) */
    int cap;                 /* sentences allocated */
    size_t cap_ids;          /* ids allocated */
} attn_dataset_builder;

attn_status attn_dataset_builder_init(attn_dataset_builder *b, attn_error *err);
/* Copies ids[len] (vocabulary ids >= 2) and builds the text from the vocabulary words. */
attn_status attn_dataset_builder_push(attn_dataset_builder *b, int label, const int *ids, int len,
                                      attn_error *err);
/* Hands the dataset to the caller (builder becomes empty). */
attn_dataset *attn_dataset_builder_finish(attn_dataset_builder *b);
void attn_dataset_builder_discard(attn_dataset_builder *b);

/* The compose task's pairs (compose.c; attn_pairs_generate hands over). */
struct attn_pairs;
attn_status attn_compose_pairs(attn_set set, int n, uint64_t seed, struct attn_pairs **out,
                               attn_error *err);

#endif

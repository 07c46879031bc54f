/* data_internal.h -- shared by the files of src/data/ (and their tests): word categories of the
 * vocabulary table, the filler-phrase table, and a growing attn_dataset builder.
 */
#ifndef ATTN_DATA_INTERNAL_H
#define ATTN_DATA_INTERNAL_H

#include "attn.h"

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

/* Filler phrases ("in the winter semester"): space-separated vocabulary words, no sentiment
 * adjective, no negation. */
int attn_filler_count(void);
const char *attn_filler_phrase(int i);

/* Sentences of the generated sets never exceed this many words (fill8: 42..60). */
#define ATTN_GEN_MAX_WORDS 60

/* Appends sentences to a dataset, growing its arrays geometrically. */
typedef struct attn_dataset_builder {
    attn_dataset *d;
    int cap;        /* sentences allocated */
    size_t cap_ids; /* ids allocated */
} attn_dataset_builder;

attn_status attn_dataset_builder_init(attn_dataset_builder *b, attn_error *err);
/* Copies ids[len] (vocabulary ids >= 2) and builds the text from the vocabulary words. */
attn_status attn_dataset_builder_push(attn_dataset_builder *b, int label, const int *ids, int len,
                                      attn_error *err);
/* Hands the dataset to the caller (builder becomes empty). */
attn_dataset *attn_dataset_builder_finish(attn_dataset_builder *b);
void attn_dataset_builder_discard(attn_dataset_builder *b);

#endif

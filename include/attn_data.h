/* attn_data.h -- the course-review task (src/data/): the built-in vocabulary, vocabularies of
 * weights files, the tokenizer, the deterministic generator of the training, held-out and four
 * test sets, and TSV files of labelled sentences.
 *
 *     attn_dataset *plain = NULL;
 *     attn_data_generate(ATTN_SET_PLAIN, 1000, 1, &plain, &err);   // the same on every machine
 *     // plain->n sentences: labels[i], lengths[i], ids[offsets[i] .. offsets[i+1]), texts[i]
 *     int ids[ATTN_MAX_WORDS], n;
 *     attn_tokenize("the lecture was not good", ids, ATTN_MAX_WORDS, &n, &err);
 *     attn_dataset_free(plain);
 */
#ifndef ATTN_DATA_H
#define ATTN_DATA_H

#include "attn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- vocabulary, tokenizer, the course-review task (src/data/) -------------------------- */

#define ATTN_PAD_ID     0
#define ATTN_CLS_ID     1
#define ATTN_N_WORDS    89
#define ATTN_VOCAB_SIZE 91 /* [PAD], [CLS], 89 words */
#define ATTN_MAX_WORDS  80 /* the Transformer has 81 positions including [CLS] */

int attn_vocab_size(void);               /* 91 */
const char *attn_vocab_word(int id);     /* "[PAD]", "[CLS]", words; NULL if out of range */
const char *attn_vocab_category(int id); /* "special", "subject", "positive", ... */
int attn_vocab_id(const char *word);     /* -1 if unknown */

/* Lower-cases, strips .,!?;: quotes (" ' ` and typographic ones) and brackets ()[]{}, and splits
 * on white space. Fails (ATTN_ERR_VALUE) on an unknown word (naming it, its 1-based position
 * and the closest vocabulary word; err->code ATTN_CODE_UNKNOWN_WORD with position, token and
 * closest), on an empty sentence (ATTN_CODE_EMPTY_SENTENCE), and on more than max_ids words
 * (ATTN_CODE_TOO_LONG). ids: [max_ids]. */
attn_status attn_tokenize(const char *sentence, int *ids, int max_ids, int *n_ids, attn_error *err);

/* ---- vocabulary objects: the built-in one and a weights file's own (src/data/) ---------- *
 * An attn_vocab maps token ids 0..n-1 to tokens and back. attn_vocab_builtin() is the
 * course-review vocabulary above (static: attn_vocab_free ignores it); attn_vocab_create makes
 * one from a word list, e.g. the "vocab" array of a weights file (attn_weights_load_json_vocab).
 * attn_vocab_create checks (ATTN_ERR_VALUE, naming the index and the token):
 *   - 2 <= n <= ATTN_VOCAB_MAX_TOKENS (the largest vocab_size a model config takes);
 *   - words[0] is "[PAD]": every model pads batches with id 0;
 *   - every token is 1..ATTN_VOCAB_TOKEN_MAX bytes of valid UTF-8 without white space (ASCII
 *     or Unicode: a token is one word) and without control characters (U+0000..U+001F,
 *     U+007F..U+009F);
 *   - no token occurs twice.
 * The rules that depend on the model -- n equals the config's vocab_size; the Transformer needs
 * "[CLS]" at id 1 (it prepends id 1 itself); RNN, LSTM and GRU take any token at id 1 -- are
 * attn_vocab_check_config's.
 * Kinds: "special" tokens ("[...]" or "<...>": [PAD], [CLS], [UNK], <unk>) are never produced
 * by the tokenizer; "ids-only" tokens, holding an upper-case ASCII letter or a character the
 * tokenizer removes (.,!?;: quotes, brackets), cannot come out of it either and are reached by
 * id only (attn predict --ids); every other token is a "word". */
#define ATTN_VOCAB_MAX_TOKENS (1 << 20) /* 1,048,576 */
#define ATTN_VOCAB_TOKEN_MAX  64        /* bytes per token */

typedef struct attn_vocab attn_vocab; /* opaque; src/data/data_internal.h */

const attn_vocab *attn_vocab_builtin(void);
/* Copies words[0..n) (the caller keeps its strings). */
attn_status attn_vocab_create(const char *const *words, int n, attn_vocab **out, attn_error *err);
void attn_vocab_free(const attn_vocab *v); /* NULL and the built-in one are ignored */
bool attn_vocab_is_builtin(const attn_vocab *v);
int attn_vocab_count(const attn_vocab *v);                 /* tokens, ids 0..count-1 */
const char *attn_vocab_token(const attn_vocab *v, int id); /* NULL if out of range */
/* "special", "word" or "ids-only" (see Kinds); NULL if out of range. */
const char *attn_vocab_kind(const attn_vocab *v, int id);
/* The id of exactly this token (a hash lookup), -1 if absent. */
int attn_vocab_lookup(const attn_vocab *v, const char *token);
/* The word (kind "word") closest to `word` by edit distance, ties to the lower id; NULL when
 * the vocabulary has no word, or when the search would take more than a few ms (a vocabulary
 * of ~100,000 words or more and nothing within one edit). */
const char *attn_vocab_closest(const attn_vocab *v, const char *word);
/* ---- suggestions for an unknown word (src/data/suggest.c) ------------------------------- *
 * Two ways to a known word: by spelling (attn_vocab_closest over the whole vocabulary) and, on
 * the task's vocabulary, by category -- the class of words the sentence grammar (attn_grammar_
 * parse's) puts at the unknown word's place, read from its known neighbours. The rules, the
 * first that applies:
 *   1. before a noun (subject or distractor), after anything but "the": the determiner "the";
 *   2. after "the", not before a noun: a subject noun, or a distractor noun once a conjunction
 *      came before -- unless that "the" may be a filler phrase's ("in the", "during the",
 *      "for the") and no verb follows;
 *   3. after a noun: a verb;
 *   4. after a verb, before an intensifier: a negation (core clause only);
 *   5. before an adjective, after a verb: a negation or an intensifier (an intensifier only in
 *      the distractor clause); after a negation: an intensifier; after anything else: none;
 *   6. after a verb, a negation or an intensifier, not before a negation or an intensifier: an
 *      adjective, positive or negative;
 *   7. after an adjective, before "the" and a distractor noun: a conjunction.
 * A word no rule places, and every word of a vocabulary of a file's own (it has no categories),
 * gets the spelling's suggestion only. */
#define ATTN_SUGGEST_GROUPS    2  /* categories one place takes at most (positive, negative) */
#define ATTN_SUGGEST_GROUP_MAX 10 /* words of one category at most (10 adjectives of each) */
#define ATTN_SUGGEST_RULE_MAX  (2 * ATTN_ERROR_TOKEN_MAX + 32)
typedef struct attn_suggest_group {
    const char *category; /* attn_vocab_category's name: "subject", "positive", ... */
    int n;
    const char *words[ATTN_SUGGEST_GROUP_MAX]; /* nearest to the word by spelling first */
} attn_suggest_group;
typedef struct attn_suggestion {
    int position;                     /* 1-based, as the tokenizer counts words */
    char word[ATTN_ERROR_TOKEN_MAX];  /* as the tokenizer read it ("..." when cut) */
    const char *nearest;              /* by spelling; NULL as attn_vocab_closest */
    const char *place;                /* the class its place takes ("subject noun", "adjective",
                                         ...), NULL when no rule places it */
    char rule[ATTN_SUGGEST_RULE_MAX]; /* where it stands: "after 'the', before 'was'"; "" */
    int n_groups;
    attn_suggest_group groups[ATTN_SUGGEST_GROUPS];
} attn_suggestion;
/* The suggestions for the words of sentence that v lacks, in order: out[0..min(max, *n_found))
 * filled, *n_found all of them (the tokenizer's words: of kind "word" in v, else unknown). */
attn_status attn_vocab_suggest(const attn_vocab *v, const char *sentence, attn_suggestion *out,
                               int max, int *n_found, attn_error *err);
/* v fits a model of cfg: count == vocab_size and, for the Transformer, "[CLS]" at id 1. */
struct attn_model_config; /* attn_model.h */
attn_status attn_vocab_check_config(const attn_vocab *v, const struct attn_model_config *cfg,
                                    attn_error *err);
/* attn_tokenize with vocabulary v: words are looked up in v (only tokens of kind "word"
 * match); an unknown word is named with the closest word of v. attn_tokenize(s, ...) is
 * attn_tokenize_vocab(attn_vocab_builtin(), s, ...). */
attn_status attn_tokenize_vocab(const attn_vocab *v, const char *sentence, int *ids, int max_ids,
                                int *n_ids, attn_error *err);

typedef enum attn_set {
    ATTN_SET_TRAIN,
    ATTN_SET_PLAIN,
    ATTN_SET_DISTRACTOR,
    ATTN_SET_FILL4,
    ATTN_SET_FILL8,
    ATTN_SET_HOLDOUT, /* the training distribution, its own PRNG stream: the held-out slice */
} attn_set;
#define ATTN_N_TEST_SETS     4        /* plain, distractor, fill4, fill8 */
#define ATTN_TRAIN_DEFAULT_N 8000     /* sentences in the training set */
#define ATTN_TEST_DEFAULT_N  1000     /* sentences in each test set */
#define ATTN_DATA_MAX_N      10000000 /* largest n attn_data_generate accepts */
/* sentences in the held-out set (ATTN_SET_HOLDOUT), the trainer's default holdout */
#define ATTN_HOLDOUT_DEFAULT_N 500

const char *attn_set_name(attn_set s);
attn_status attn_set_from_name(const char *name, attn_set *out, attn_error *err);

/* A labelled set of sentences. Owned by the library; free with attn_dataset_free. */
typedef struct attn_dataset {
    int n;           /* sentences */
    int *labels;     /* [n] 1 = positive, 0 = negative */
    int *lengths;    /* [n] words */
    size_t *offsets; /* [n+1] start of sentence i in ids */
    int *ids;        /* [offsets[n]] word ids, sentences concatenated, no [CLS] */
    char **texts;    /* [n] the sentences, lower case, single spaces */
} attn_dataset;

/* Deterministic generator: the same (set, n, seed) gives the same sentences on every machine.
 * Test sets and the held-out set never contain a sentence of the default-size training set
 * of the same seed. */
attn_status attn_data_generate(attn_set set, int n, uint64_t seed, attn_dataset **out,
                               attn_error *err);
/* n sentences of min_words..max_words words (8 <= min <= max <= ATTN_GEN_LENGTHS_MAX_WORDS):
 * the task's core clause (and distractor) with as many filler phrases (with replacement) as the
 * length needs; its own PRNG stream (the default sets are unchanged); src/data/generator.c. */
#define ATTN_GEN_LENGTHS_MAX_WORDS 240
attn_status attn_data_generate_lengths(int n, uint64_t seed, int min_words, int max_words,
                                       attn_dataset **out, attn_error *err);
/* Reads "label<TAB>sentence" lines. Errors name the file and line. */
attn_status attn_dataset_read_tsv(const char *path, attn_dataset **out, attn_error *err);
/* attn_dataset_read_tsv with vocabulary v (texts are rebuilt from v's tokens). */
attn_status attn_dataset_read_tsv_vocab(const char *path, const attn_vocab *v, attn_dataset **out,
                                        attn_error *err);
void attn_dataset_free(attn_dataset *d);
/* Reorders d's sentences by a Fisher-Yates shuffle of the project PRNG seeded with `seed` (the
 * same order on every machine); attn train --data holds out the last sentences after it. Fails
 * only on memory (d unchanged). */
attn_status attn_dataset_shuffle(attn_dataset *d, uint64_t seed, attn_error *err);

/* ---- the grammar of the generated sentences (src/data/grammar.c) ------------------------ *
 * Every sentence attn_data_generate and attn_data_generate_lengths make belongs to
 *
 *     sentence   = filler* core filler* [distractor filler*]
 *     core       = "the" SUBJECT VERB [NEGATION] [INTENSIFIER] ADJECTIVE
 *     distractor = CONJUNCTION "the" DISTRACTOR-NOUN VERB [INTENSIFIER] ADJECTIVE
 *     filler     = one of the filler phrases ("honestly", "in the winter semester", ...)
 *
 * with the word classes of `attn vocab`. The label is the core adjective's polarity, flipped
 * by the negation. How many filler phrases, and whether they repeat, is a set's distribution
 * (the test sets draw distinct phrases, attn_data_generate_lengths with replacement), not the
 * grammar: any number is accepted. The parse is unique apart from how a run of filler words
 * splits into phrases, which it does not report. */
typedef struct attn_parse {
    int core;           /* position of the core clause's "the" (filler words before it) */
    int subject, verb;  /* positions (0-based) */
    int negation;       /* "not" / "never", -1: none */
    int intensifier;    /* the core clause's, -1: none */
    int adjective;      /* the core adjective: the first adjective of the sentence */
    int label;          /* 1 positive, 0 negative */
    int distractor;     /* the distractor clause's conjunction, -1: none */
    int distractor_end; /* the position after the distractor clause (-1: none) */
} attn_parse;

/* Parses ids[n] (built-in vocabulary ids). ATTN_ERR_VALUE when it is not a sentence of the
 * grammar, the message naming the first word (1-based) that cannot be read and what was
 * expected there; out is then all -1. */
attn_status attn_grammar_parse(const int *ids, int n, attn_parse *out, attn_error *err);
/* Tokenizes (attn_tokenize: an unknown word is an ATTN_ERR_VALUE naming it) and parses. */
attn_status attn_grammar_parse_text(const char *sentence, attn_parse *out, attn_error *err);

#ifdef __cplusplus
}
#endif
#endif /* ATTN_DATA_H */

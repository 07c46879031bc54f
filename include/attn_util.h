/* attn_util.h -- what every room of libattn uses (src/util/): statuses and errors, the log hook,
 * the BLAS thread count, large training buffers and the PRNG.
 *
 * Errors: every function of the library that can fail returns attn_status and takes a last
 * `attn_error *err` (may be NULL) that receives a message naming the file, tensor or argument
 * at fault. Callers decide by the status, never by the message text. The library never exits
 * and never prints; it logs only through attn_set_log (silent by default).
 *
 *     attn_error err;
 *     if (attn_weights_load_json(path, &m, &err) != ATTN_OK) {
 *         fprintf(stderr, "%s\n", err.msg);                  // names the file and the problem
 *         return err.status == ATTN_ERR_ARG ? 2 : 1;          // decide by the status
 *     }
 *     attn_rng r = attn_rng_seed(1);                          // a value: no global state
 *     double u = attn_rng_uniform(&r);
 */
#ifndef ATTN_UTIL_H
#define ATTN_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status, errors, logging ---------------------------------------------------------- */

typedef enum attn_status {
    ATTN_OK = 0,
    ATTN_ERR_NOMEM, /* an allocation failed */
    ATTN_ERR_IO,    /* a file could not be opened, read, written or renamed */
    ATTN_ERR_PARSE, /* malformed JSON or TSV */
    ATTN_ERR_SHAPE, /* a tensor or batch has the wrong shape */
    ATTN_ERR_VALUE, /* NaN/Inf, unknown word, out-of-range id, bad config value */
    ATTN_ERR_ARG,   /* caller misuse detected at the API boundary */
} attn_status;

/* What went wrong, finer than the status, for a caller that answers each case differently (an
 * HTTP code per case): set by the functions that name it in their contract, ATTN_CODE_NONE
 * otherwise. Like the status, and unlike the message, it is part of the contract. */
typedef enum attn_error_code {
    ATTN_CODE_NONE = 0,
    ATTN_CODE_UNKNOWN_WORD,   /* position: the word's 1-based position; token, closest */
    ATTN_CODE_EMPTY_SENTENCE, /* no words left after tokenizing */
    ATTN_CODE_TOO_LONG,       /* position: the number of words found */
    ATTN_CODE_MALFORMED_JSON, /* not JSON (syntax, UTF-8, duplicate key); position: byte offset */
    ATTN_CODE_OTHER_DATA,     /* a checkpoint trained on data other than the trainer's */
} attn_error_code;

#define ATTN_ERROR_MSG_MAX   4096
#define ATTN_ERROR_TOKEN_MAX 72 /* a token of up to 64 bytes, "..." when cut, the NUL */
typedef struct attn_error {
    attn_status status;
    char msg[ATTN_ERROR_MSG_MAX];
    attn_error_code code;
    int position;
    char token[ATTN_ERROR_TOKEN_MAX];   /* the token at fault as the message quotes it, or "" */
    char closest[ATTN_ERROR_TOKEN_MAX]; /* a suggestion for it (closest vocabulary word), or "" */
} attn_error;

const char *attn_status_str(attn_status s);
/* Fills err (if non-NULL; code, position, token and closest cleared) and returns s, so call
 * sites read: return attn_errorf(err, ...); */
attn_status attn_errorf(attn_error *err, attn_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Sets the code and its details of an error attn_errorf filled (token, closest: NULL for "");
 * returns err's status (ATTN_OK when err is NULL). */
attn_status attn_error_detail(attn_error *err, attn_error_code code, int position,
                              const char *token, const char *closest);
/* Appends "; <more>" to an existing message (used by loaders that report all problems). */
void attn_error_append(attn_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

typedef enum attn_log_level { ATTN_LOG_DEBUG, ATTN_LOG_INFO, ATTN_LOG_WARN } attn_log_level;
typedef void (*attn_log_fn)(attn_log_level level, const char *msg, void *user);
/* The only process-wide setting of the library besides the BLAS thread count. */
void attn_set_log(attn_log_fn fn, void *user);
/* What library code calls to tell something that is not an error (e.g. a loader reading an
 * older or wrapped file); dropped unless a hook is installed. */
void attn_log(attn_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Sets OpenBLAS's thread count (exact mode and training use 1) for every thread that issues
 * products, also under an OpenMP build of OpenBLAS, whose own setting is per thread. */
void attn_set_num_threads(int n);

/* ---- hashing: 64-bit FNV-1a (src/util/hash.c) ------------------------------------------- *
 * h = ATTN_HASH_BASIS, then h = attn_hash_step(h, unit) for each unit (a byte, an id, a length:
 * each taken whole as one unit). Not for anything adversarial: a fingerprint and hash tables. */
#define ATTN_HASH_BASIS 0xcbf29ce484222325ull /* the 64-bit FNV offset basis */
uint64_t attn_hash_step(uint64_t h, uint64_t unit);
uint64_t attn_hash_string(const char *s); /* over the bytes of s */

/* ---- an index by hash: open addressing, linear probing (src/util/hash.c) ----------------- *
 * The one hash table of attn. It finds entries the caller keeps in its own array (entry i is
 * stored as i + 1, 0 marks an empty slot); the caller gives each key's hash and decides which
 * entry matches, so one table serves words (the vocabularies, a file's word counts) and id
 * sequences (the generator's training sentences). Slots may be static or allocated:
 *
 *     int slots[ATTN_INDEX_SLOTS_MIN * 2];
 *     attn_index ix = attn_index_init(slots, 32);          // 32: a power of two
 *     attn_index_put(&ix, attn_hash_string("good"), 7);    // entry 7 of the caller's array
 *     for (size_t s = attn_index_start(&ix, h); ix.slots[s]; s = attn_index_next(&ix, s))
 *         if (same(ix.slots[s] - 1)) ...;                  // the candidates for hash h
 */
#define ATTN_INDEX_SLOTS_MIN 16
typedef struct attn_index {
    int *slots;  /* [mask + 1] entry + 1, 0 = empty; at most half full */
    size_t mask; /* slot count - 1 (a power of two - 1) */
} attn_index;
/* Slots for n entries: a power of two >= 2n, at least ATTN_INDEX_SLOTS_MIN. */
size_t attn_index_slot_count(size_t n);
/* An empty index over slots[n_slots] (n_slots a power of two; the slots are zeroed). */
attn_index attn_index_init(int *slots, size_t n_slots);
/* Files entry under hash (the caller keeps the index at most half full). */
void attn_index_put(attn_index *ix, uint64_t hash, int entry);
/* The first slot to look at for hash, and the one after s: stop at an empty slot. */
size_t attn_index_start(const attn_index *ix, uint64_t hash);
size_t attn_index_next(const attn_index *ix, size_t s);

/* ---- memory ------------------------------------------------------------------------------- */

/* calloc(n, size) for an array a training step sweeps whole (gradients, Adam's moments,
 * activations): from 8 MiB on, its pages mapped at once (MADV_POPULATE_WRITE) instead of
 * one page fault per 4 KiB on first touch (src/util/alloc.c). Freed with free(). */
void *attn_calloc_large(size_t n, size_t size);
/* malloc's contract (contents undefined) for such an array: malloc below 8 MiB, where calloc
 * would clear reused heap memory, attn_calloc_large from there on. Freed with free(). */
void *attn_malloc_large(size_t n, size_t size);

/* ---- time --------------------------------------------------------------------------------- */

/* Seconds on the monotonic clock (CLOCK_MONOTONIC): for durations and deadlines, not dates. */
double attn_seconds(void);

/* ---- PRNG: splitmix64 (Steele, Lea, Flood 2014), a value the caller owns ---------------- */

typedef struct attn_rng {
    uint64_t state;
} attn_rng;

attn_rng attn_rng_seed(uint64_t seed);
uint64_t attn_rng_next(attn_rng *r);              /* next 64 random bits */
uint32_t attn_rng_below(attn_rng *r, uint32_t n); /* uniform in [0, n), unbiased; n > 0 */
double attn_rng_uniform(attn_rng *r);             /* uniform in [0, 1), 53 bits */
float attn_rng_uniform_range(attn_rng *r, float lo, float hi);
double attn_rng_normal(attn_rng *r);               /* N(0,1), Box-Muller (no cached state) */
void attn_rng_shuffle(attn_rng *r, int *a, int n); /* Fisher-Yates */

#ifdef __cplusplus
}
#endif
#endif /* ATTN_UTIL_H */

/* generator.c -- the synthetic course-review sentiment task.
 *
 * A sentence is filler phrases around a core clause, optionally followed by a distractor clause:
 *
 *   [fillers]  the SUBJECT VERB [not|never] [INTENSIFIER] ADJ  [fillers, distractor clause]
 *   distractor clause: CONJUNCTION the DISTRACTOR-NOUN VERB [INTENSIFIER] ADJ
 *
 * Label (1 positive, 0 negative) = polarity of the core adjective (the FIRST adjective of the
 * sentence), flipped by a negation. Nothing else depends on the label: subject, verbs,
 * intensifiers, fillers, negation and the distractor adjective are drawn independently of it,
 * so the only evidence is the core clause. Each set draws its labels as a shuffled half/half
 * list (exact balance) and then picks negation and polarity to realise each label.
 *
 * The training set is built so that an Elman RNN, which reads the hidden state after the last
 * word and cannot carry information far, finds almost no short-range signal, while the late
 * cores, lone distractor clauses and sentence-final cores of the test sets still occur: see
 * the plan and the tail rule below. Test sets exclude every sentence of the same seed's
 * default-size training set (rejection against a hash set of its id sequences).
 *
 * Determinism: only the integer PRNG (attn_rng_below) makes decisions, so the same
 * (set, n, seed) gives byte-identical sentences everywhere.
 */
#include "data_internal.h"

#include <stdlib.h>
#include <string.h>

/* The training set's plan: a third of the candidates draw before ~ U(0..8) fillers before the
 * core and after ~ U(0..8-before) after it (late cores, as in fill8), two thirds k ~ U(0..8),
 * before ~ U(0..k) (early cores); a distractor clause with probability
 * TRAIN_DIST_NUM/TRAIN_DIST_DEN; then, with probability TRAIN_DEEP/1000, the candidate becomes a
 * deep-core one: 4..7 LONG filler phrases (5-6 words) before the core, U(0..8-before) long ones
 * after it, and a distractor clause with probability 1/2 (always when nothing follows the core),
 * which puts the core adjective at word 23..47 with a long tail; then, with probability
 * 1/TRAIN_PLAIN, the candidate is made plain-like (no filler, no distractor). Its tail rule (words
 * after the core adjective): a plain-like sentence is always kept; another one ending in its core
 * adjective with probability 1/TAIL_ZERO; a tail that is exactly the distractor clause with
 * probability 1/TAIL_DIST; other tails of TAIL_MIN..TAIL_MAX words always, longer ones with
 * probability 1/TAIL_LONG, shorter ones with probability 1/TAIL_RARE. The holdout set (the
 * trainer's held-out slice) has the same distribution from its own PRNG stream.
 * docs/data-generator.md has the resulting statistics and the log of the distributions tried
 * and what each did to the three models: the reasons for these constants. */
#define TAIL_MIN          8
#define TAIL_MAX          16
#define TAIL_LONG         3
#define TAIL_RARE         128
#define TAIL_ZERO         8
#define TAIL_DIST         4
#define TRAIN_MAX_FILLERS 8 /* train: 0..8 filler phrases */
#define TRAIN_DIST_NUM    3 /* train: distractor clause with probability NUM/DEN */
#define TRAIN_DIST_DEN    4
#define TRAIN_PLAIN       136 /* train: a candidate is made plain-like with probability 1/136 */
#define TRAIN_DEEP        100 /* train: a candidate is made deep-core with probability 100/1000 */
#define DEEP_MAX_BEFORE   7   /* deep-core: 4..7 long phrases before the core */
#define DEEP_SPREAD       4
#define LONG_FILLER_WORDS 5 /* a long filler phrase has at least 5 words */
#define TRAIN_MIN_WORDS   4 /* train: 4..59 words */
#define TRAIN_MAX_WORDS   59
#define FILL8_MIN_WORDS   42 /* fill8: 42..60 words */
#define FILL8_MAX_WORDS   60
#define MAX_FILLERS       32
#define FILLER_MAX_WORDS  8
#define MAX_ATTEMPTS      1000000 /* per sentence; never reached by the sets defined here */

static const char *const set_names[] = {"train", "plain", "distractor",
                                        "fill4", "fill8", "holdout"};
/* Mixed into the seed so every set has its own PRNG stream. */
static const uint64_t set_salt[] = {0x747261696e000001ull, 0x706c61696e000002ull,
                                    0x6469737472000003ull, 0x66696c6c34000004ull,
                                    0x66696c6c38000005ull, 0x686f6c646f000006ull};

const char *attn_set_name(attn_set s) {
    return (int)s >= 0 && s <= ATTN_SET_HOLDOUT ? set_names[s] : "unknown";
}

attn_status attn_set_from_name(const char *name, attn_set *out, attn_error *err) {
    for (int s = 0; s <= ATTN_SET_HOLDOUT; s++)
        if (name && strcmp(name, set_names[s]) == 0) {
            *out = (attn_set)s;
            return ATTN_OK;
        }
    return attn_errorf(
        err, ATTN_ERR_ARG,
        "unknown set '%s'; expected train, plain, distractor, fill4, fill8 or holdout",
        name ? name : "(null)");
}

/* ---- the grammar, derived from vocab.c's table -------------------------------------------- */

typedef struct grammar {
    int words[ATTN_N_CATS][ATTN_VOCAB_SIZE]; /* ids of each category */
    int n_words[ATTN_N_CATS];
    int filler[MAX_FILLERS][FILLER_MAX_WORDS]; /* filler phrases as ids */
    int filler_len[MAX_FILLERS];
    int n_fillers;
} grammar;

static attn_status grammar_build(grammar *g, attn_error *err) {
    memset(g, 0, sizeof *g);
    for (int id = 2; id < ATTN_VOCAB_SIZE; id++) {
        attn_word_cat c = attn_vocab_cat(id);
        g->words[c][g->n_words[c]++] = id;
    }
    g->n_fillers = attn_filler_count();
    if (g->n_fillers < 8 || g->n_fillers > MAX_FILLERS)
        return attn_errorf(err, ATTN_ERR_VALUE, "generator: %d filler phrases, need 8..%d",
                           g->n_fillers, MAX_FILLERS);
    for (int i = 0; i < g->n_fillers; i++) {
        attn_error e;
        if (attn_tokenize(attn_filler_phrase(i), g->filler[i], FILLER_MAX_WORDS, &g->filler_len[i],
                          &e) != ATTN_OK)
            return attn_errorf(err, ATTN_ERR_VALUE, "generator: filler phrase '%s': %s",
                               attn_filler_phrase(i), e.msg);
        for (int j = 0; j < g->filler_len[i]; j++) {
            attn_word_cat c = attn_vocab_cat(g->filler[i][j]);
            if (c != ATTN_CAT_FILLER && c != ATTN_CAT_DETERMINER)
                return attn_errorf(
                    err, ATTN_ERR_VALUE, "generator: filler phrase '%s' contains %s word '%s'",
                    attn_filler_phrase(i), attn_word_cat_name(c), attn_vocab_word(g->filler[i][j]));
        }
    }
    return ATTN_OK;
}

static int pick(attn_rng *r, const grammar *g, attn_word_cat c) {
    return g->words[c][attn_rng_below(r, (uint32_t)g->n_words[c])];
}

/* ---- one sentence -------------------------------------------------------------------------- */

/* Appends filler phrase f to ids. */
static int put_filler(const grammar *g, int f, int *ids, int n) {
    memcpy(ids + n, g->filler[f], (size_t)g->filler_len[f] * sizeof *ids);
    return n + g->filler_len[f];
}

/* Reorders order[0..n_fillers) so that the long phrases (LONG_FILLER_WORDS words or more) come
 * first, in a fresh random order, and the others after them: a deep-core candidate's fillers
 * (at most 8) are then all long phrases. */
static void long_phrases_first(attn_rng *r, const grammar *g, int *order) {
    int sorted[MAX_FILLERS], n_long = 0, n = 0;
    for (int i = 0; i < g->n_fillers; i++)
        if (g->filler_len[order[i]] >= LONG_FILLER_WORDS) sorted[n++] = order[i];
    n_long = n;
    for (int i = 0; i < g->n_fillers; i++)
        if (g->filler_len[order[i]] < LONG_FILLER_WORDS) sorted[n++] = order[i];
    for (int i = 0; i + 1 < n_long; i++) {
        int j = i + (int)attn_rng_below(r, (uint32_t)(n_long - i));
        int t = sorted[i];
        sorted[i] = sorted[j];
        sorted[j] = t;
    }
    memcpy(order, sorted, (size_t)g->n_fillers * sizeof *order);
}

/* A candidate's plan: filler phrases before and after the core clause, whether a distractor
 * clause follows the core, and whether it is a deep-core training sentence. */
typedef struct plan {
    int before, after, distractor;
    bool deep;
} plan;

/* Draws the plan of one candidate of `set` (the first draws of a candidate). */
static plan draw_plan(attn_rng *r, attn_set set) {
    int before = 0, after = 0, distractor = 0;
    bool deep = false;
    switch (set) {
    case ATTN_SET_TRAIN:
    case ATTN_SET_HOLDOUT: {
        if (attn_rng_below(r, 3) == 0) { /* before ~ U(0..8): late cores */
            before = (int)attn_rng_below(r, TRAIN_MAX_FILLERS + 1);
            after = (int)attn_rng_below(r, (uint32_t)(TRAIN_MAX_FILLERS - before) + 1);
        } else { /* k ~ U(0..8), before ~ U(0..k): early cores */
            int k = (int)attn_rng_below(r, TRAIN_MAX_FILLERS + 1);
            before = (int)attn_rng_below(r, (uint32_t)k + 1);
            after = k - before;
        }
        distractor = attn_rng_below(r, TRAIN_DIST_DEN) < TRAIN_DIST_NUM;
        if (attn_rng_below(r, 1000) < TRAIN_DEEP) { /* deep core: long phrases before it */
            before = DEEP_MAX_BEFORE - (int)attn_rng_below(r, DEEP_SPREAD);
            after = (int)attn_rng_below(r, (uint32_t)(TRAIN_MAX_FILLERS - before) + 1);
            distractor = attn_rng_below(r, 2) || after == 0;
            deep = true;
        }
        if (attn_rng_below(r, TRAIN_PLAIN) == 0) before = after = distractor = 0;
        break;
    }
    case ATTN_SET_PLAIN:
        break;
    case ATTN_SET_DISTRACTOR:
        distractor = 1;
        break;
    case ATTN_SET_FILL4:
    case ATTN_SET_FILL8: {
        int k = set == ATTN_SET_FILL4 ? 4 : 8;
        before = (int)attn_rng_below(r, (uint32_t)k + 1);
        after = k - before;
        distractor = (int)attn_rng_below(r, 2);
        break;
    }
    }
    return (plan){before, after, distractor, deep};
}

/* Draws one candidate sentence for `label` into ids (at most ATTN_GEN_MAX_WORDS + 8 words);
 * returns its length and the index of the core adjective in *adj_pos. */
static int draw_sentence(attn_rng *r, const grammar *g, attn_set set, int label, int *ids,
                         int *adj_pos, bool *dist_tail, bool *plain_like) {
    const plan p = draw_plan(r, set);
    const int before = p.before, after = p.after, distractor = p.distractor;
    int slot = (int)attn_rng_below(r, (uint32_t)after + 1); /* distractor after `slot` fillers */
    *dist_tail = distractor && after == 0;
    *plain_like = before == 0 && after == 0 && !distractor;

    /* distinct filler phrases: a partial Fisher-Yates shuffle */
    int order[MAX_FILLERS];
    for (int i = 0; i < g->n_fillers; i++) order[i] = i;
    for (int i = 0; i < before + after; i++) {
        int j = i + (int)attn_rng_below(r, (uint32_t)(g->n_fillers - i));
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }

    if (p.deep) long_phrases_first(r, g, order);

    int n = 0;
    for (int i = 0; i < before; i++) n = put_filler(g, order[i], ids, n);

    /* core clause: the SUBJECT VERB [NEG] [INT] ADJ, label = polarity XOR negated */
    ids[n++] = g->words[ATTN_CAT_DETERMINER][0];
    ids[n++] = pick(r, g, ATTN_CAT_SUBJECT);
    ids[n++] = pick(r, g, ATTN_CAT_VERB);
    int negated = (int)attn_rng_below(r, 2);
    if (negated) ids[n++] = pick(r, g, ATTN_CAT_NEGATION);
    if (attn_rng_below(r, 2)) ids[n++] = pick(r, g, ATTN_CAT_INTENSIFIER);
    int positive = label ^ negated;
    *adj_pos = n;
    ids[n++] = pick(r, g, positive ? ATTN_CAT_POSITIVE : ATTN_CAT_NEGATIVE);

    for (int i = 0; i <= after; i++) {
        if (distractor && i == slot) {
            /* CONJ the NOUN VERB [INT] ADJ, adjective polarity independent of the label */
            ids[n++] = pick(r, g, ATTN_CAT_CONJUNCTION);
            ids[n++] = g->words[ATTN_CAT_DETERMINER][0];
            ids[n++] = pick(r, g, ATTN_CAT_DISTRACTOR);
            ids[n++] = pick(r, g, ATTN_CAT_VERB);
            if (attn_rng_below(r, 2)) ids[n++] = pick(r, g, ATTN_CAT_INTENSIFIER);
            ids[n++] = pick(r, g, attn_rng_below(r, 2) ? ATTN_CAT_POSITIVE : ATTN_CAT_NEGATIVE);
        }
        if (i < after) n = put_filler(g, order[before + i], ids, n);
    }
    return n;
}

/* Set-specific acceptance of a candidate (length range, the training set's tail rule). */
static bool accept(attn_rng *r, attn_set set, int len, int adj_pos, bool dist_tail,
                   bool plain_like) {
    switch (set) {
    case ATTN_SET_TRAIN:
    case ATTN_SET_HOLDOUT:
        if (len < TRAIN_MIN_WORDS || len > TRAIN_MAX_WORDS) return false;
        if (plain_like) return true;
        if (len - 1 - adj_pos == 0) return attn_rng_below(r, TAIL_ZERO) == 0;
        if (dist_tail) return attn_rng_below(r, TAIL_DIST) == 0;
        if (len - 1 - adj_pos < TAIL_MIN) return attn_rng_below(r, TAIL_RARE) == 0;
        if (len - 1 - adj_pos > TAIL_MAX) return attn_rng_below(r, TAIL_LONG) == 0;
        return true;
    case ATTN_SET_FILL8:
        return len >= FILL8_MIN_WORDS && len <= FILL8_MAX_WORDS;
    default:
        return len <= ATTN_GEN_MAX_WORDS;
    }
}

/* ---- a hash set of id sequences (the training sentences) ----------------------------------- */

typedef struct seq_set {
    const attn_dataset *d; /* the sentences, not owned */
    attn_index index;      /* sentence index by seq_hash (slots owned) */
} seq_set;

static uint64_t seq_hash(const int *ids, int len) {
    uint64_t h = ATTN_HASH_BASIS; /* FNV-1a over the ids */
    for (int i = 0; i < len; i++) h = attn_hash_step(h, (uint32_t)ids[i]);
    return h ^ (uint64_t)len;
}

static bool seq_equal(const attn_dataset *d, int i, const int *ids, int len) {
    return d->lengths[i] == len &&
           memcmp(d->ids + d->offsets[i], ids, (size_t)len * sizeof *ids) == 0;
}

static bool seq_set_contains(const seq_set *s, const int *ids, int len) {
    const attn_index *ix = &s->index;
    for (size_t k = attn_index_start(ix, seq_hash(ids, len)); ix->slots[k];
         k = attn_index_next(ix, k))
        if (seq_equal(s->d, ix->slots[k] - 1, ids, len)) return true;
    return false;
}

static attn_status seq_set_build(seq_set *s, const attn_dataset *d, attn_error *err) {
    s->d = d;
    const size_t slots = attn_index_slot_count((size_t)d->n);
    int *mem = malloc(slots * sizeof *mem);
    if (!mem) return attn_errorf(err, ATTN_ERR_NOMEM, "generator: out of memory");
    s->index = attn_index_init(mem, slots);
    for (int i = 0; i < d->n; i++) {
        const int *ids = d->ids + d->offsets[i];
        if (!seq_set_contains(s, ids, d->lengths[i]))
            attn_index_put(&s->index, seq_hash(ids, d->lengths[i]), i);
    }
    return ATTN_OK;
}

/* ---- the sets ------------------------------------------------------------------------------ */

static attn_rng set_rng(attn_set set, uint64_t seed) {
    attn_rng r = attn_rng_seed(seed);
    return attn_rng_seed(attn_rng_next(&r) ^ set_salt[set]);
}

/* Generates n sentences of `set`; if `exclude` is given, none of its sentences. */
static attn_status generate(const grammar *g, attn_set set, int n, uint64_t seed,
                            const seq_set *exclude, attn_dataset **out, attn_error *err) {
    attn_rng r = set_rng(set, seed);
    int *labels = malloc((size_t)n * sizeof *labels);
    if (!labels) return attn_errorf(err, ATTN_ERR_NOMEM, "generator: out of memory");
    for (int i = 0; i < n; i++) labels[i] = i >= n / 2; /* exactly balanced, then shuffled */
    attn_rng_shuffle(&r, labels, n);

    attn_dataset_builder b;
    attn_status st = attn_dataset_builder_init(&b, err);
    int ids[ATTN_GEN_MAX_WORDS + 2 * FILLER_MAX_WORDS];
    for (int i = 0; st == ATTN_OK && i < n; i++) {
        int len = 0, adj_pos = 0, attempts = 0;
        bool dist_tail = false, plain_like = false;
        for (;;) {
            if (++attempts > MAX_ATTEMPTS) {
                st = attn_errorf(err, ATTN_ERR_VALUE,
                                 "generator: no new %s sentence after %d attempts (sentence %d)",
                                 attn_set_name(set), MAX_ATTEMPTS, i + 1);
                break;
            }
            len = draw_sentence(&r, g, set, labels[i], ids, &adj_pos, &dist_tail, &plain_like);
            if (!accept(&r, set, len, adj_pos, dist_tail, plain_like)) continue;
            if (exclude && seq_set_contains(exclude, ids, len)) continue;
            break;
        }
        if (st == ATTN_OK) st = attn_dataset_builder_push(&b, labels[i], ids, len, err);
    }
    free(labels);
    if (st != ATTN_OK) {
        attn_dataset_builder_discard(&b);
        return st;
    }
    *out = attn_dataset_builder_finish(&b);
    return ATTN_OK;
}

attn_status attn_data_generate(attn_set set, int n, uint64_t seed, attn_dataset **out,
                               attn_error *err) {
    if (!out) return attn_errorf(err, ATTN_ERR_ARG, "attn_data_generate: NULL out");
    *out = NULL;
    if ((int)set < 0 || set > ATTN_SET_HOLDOUT)
        return attn_errorf(err, ATTN_ERR_ARG, "attn_data_generate: unknown set %d", (int)set);
    if (n < 1 || n > ATTN_DATA_MAX_N)
        return attn_errorf(err, ATTN_ERR_ARG, "attn_data_generate: n = %d, expected 1..%d", n,
                           ATTN_DATA_MAX_N);
    grammar *g = malloc(sizeof *g);
    if (!g) return attn_errorf(err, ATTN_ERR_NOMEM, "generator: out of memory");
    attn_status st = grammar_build(g, err);
    if (st == ATTN_OK && set == ATTN_SET_TRAIN) st = generate(g, set, n, seed, NULL, out, err);
    if (st == ATTN_OK && set != ATTN_SET_TRAIN) {
        /* test sets and the held-out set: reject the sentences of the default-size training set of
         * this seed */
        attn_dataset *train = NULL;
        seq_set ex = {0};
        st = generate(g, ATTN_SET_TRAIN, ATTN_TRAIN_DEFAULT_N, seed, NULL, &train, err);
        if (st == ATTN_OK) st = seq_set_build(&ex, train, err);
        if (st == ATTN_OK) st = generate(g, set, n, seed, &ex, out, err);
        free(ex.index.slots);
        attn_dataset_free(train);
    }
    free(g);
    return st;
}

/* ---- sentences of a chosen length (the extrapolation experiment) --------------------------
 * The core clause (and, with probability 1/2, a distractor clause after it) as in
 * draw_sentence, then filler phrases drawn WITH replacement (the 32 phrases run out before 120
 * words) until the sentence reaches a target length ~ U(min_words..max_words); before ~
 * U(0..k) of the k phrases go before the core, the rest after it, the distractor clause after
 * `slot` of those. A candidate longer than max_words is drawn again. Its own PRNG stream (the
 * seed mixed with the range), so the default sets above are untouched. */

#define LENGTHS_SALT 0x6c656e6774680007ull

static int draw_long_sentence(attn_rng *r, const grammar *g, int label, int target, int *ids,
                              int cap) {
    int core[8], nc = 0, dist[8], nd = 0, fill[ATTN_GEN_LENGTHS_MAX_WORDS];
    core[nc++] = g->words[ATTN_CAT_DETERMINER][0];
    core[nc++] = pick(r, g, ATTN_CAT_SUBJECT);
    core[nc++] = pick(r, g, ATTN_CAT_VERB);
    const int negated = (int)attn_rng_below(r, 2);
    if (negated) core[nc++] = pick(r, g, ATTN_CAT_NEGATION);
    if (attn_rng_below(r, 2)) core[nc++] = pick(r, g, ATTN_CAT_INTENSIFIER);
    core[nc++] = pick(r, g, (label ^ negated) ? ATTN_CAT_POSITIVE : ATTN_CAT_NEGATIVE);
    if (attn_rng_below(r, 2)) {
        dist[nd++] = pick(r, g, ATTN_CAT_CONJUNCTION);
        dist[nd++] = g->words[ATTN_CAT_DETERMINER][0];
        dist[nd++] = pick(r, g, ATTN_CAT_DISTRACTOR);
        dist[nd++] = pick(r, g, ATTN_CAT_VERB);
        if (attn_rng_below(r, 2)) dist[nd++] = pick(r, g, ATTN_CAT_INTENSIFIER);
        dist[nd++] = pick(r, g, attn_rng_below(r, 2) ? ATTN_CAT_POSITIVE : ATTN_CAT_NEGATIVE);
    }
    int k = 0, len = nc + nd;
    while (len < target && k < ATTN_GEN_LENGTHS_MAX_WORDS) {
        fill[k] = (int)attn_rng_below(r, (uint32_t)g->n_fillers);
        len += g->filler_len[fill[k++]];
    }
    if (len > cap) return len; /* too long: the caller draws again */
    const int before = (int)attn_rng_below(r, (uint32_t)k + 1);
    const int slot = (int)attn_rng_below(r, (uint32_t)(k - before) + 1);
    int n = 0;
    for (int i = 0; i < before; i++) n = put_filler(g, fill[i], ids, n);
    memcpy(ids + n, core, (size_t)nc * sizeof *ids);
    n += nc;
    for (int i = before; i <= k; i++) {
        if (i - before == slot) {
            memcpy(ids + n, dist, (size_t)nd * sizeof *ids);
            n += nd;
        }
        if (i < k) n = put_filler(g, fill[i], ids, n);
    }
    return n;
}

attn_status attn_data_generate_lengths(int n, uint64_t seed, int min_words, int max_words,
                                       attn_dataset **out, attn_error *err) {
    if (!out) return attn_errorf(err, ATTN_ERR_ARG, "attn_data_generate_lengths: NULL out");
    *out = NULL;
    if (n < 1 || n > ATTN_DATA_MAX_N)
        return attn_errorf(err, ATTN_ERR_ARG, "attn_data_generate_lengths: n = %d, expected 1..%d",
                           n, ATTN_DATA_MAX_N);
    if (min_words < 8 || max_words < min_words || max_words > ATTN_GEN_LENGTHS_MAX_WORDS)
        return attn_errorf(err, ATTN_ERR_ARG,
                           "attn_data_generate_lengths: words %d..%d, expected 8 <= min <= max "
                           "<= %d",
                           min_words, max_words, ATTN_GEN_LENGTHS_MAX_WORDS);
    grammar *g = malloc(sizeof *g);
    int *labels = malloc((size_t)n * sizeof *labels);
    int *ids = malloc((ATTN_GEN_LENGTHS_MAX_WORDS + 16) * sizeof *ids);
    attn_status st = g && labels && ids
                         ? grammar_build(g, err)
                         : attn_errorf(err, ATTN_ERR_NOMEM, "generator: out of memory");
    attn_rng r = attn_rng_seed(seed);
    r = attn_rng_seed(attn_rng_next(&r) ^ LENGTHS_SALT ^ ((uint64_t)min_words << 32) ^
                      (uint64_t)max_words);
    attn_dataset_builder b;
    if (!st) st = attn_dataset_builder_init(&b, err);
    if (!st) {
        for (int i = 0; i < n; i++) labels[i] = i >= n / 2;
        attn_rng_shuffle(&r, labels, n);
        for (int i = 0; !st && i < n; i++) {
            int len;
            do {
                const int target =
                    min_words + (int)attn_rng_below(&r, (uint32_t)(max_words - min_words + 1));
                len = draw_long_sentence(&r, g, labels[i], target, ids, max_words);
            } while (len < min_words || len > max_words);
            st = attn_dataset_builder_push(&b, labels[i], ids, len, err);
        }
        if (st)
            attn_dataset_builder_discard(&b);
        else
            *out = attn_dataset_builder_finish(&b);
    }
    free(ids);
    free(labels);
    free(g);
    return st;
}

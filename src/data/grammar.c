/* grammar.c -- the parser of the generator's sentence grammar (attn_data.h).
 *
 *     sentence   = filler* core filler* [distractor filler*]
 *     core       = "the" SUBJECT VERB [NEGATION] [INTENSIFIER] ADJECTIVE
 *     distractor = CONJUNCTION "the" DISTRACTOR-NOUN VERB [INTENSIFIER] ADJECTIVE
 *
 * Landmarks make it a left-to-right reading: filler phrases hold only filler words and "the"
 * (generator.c checks that), so the first subject noun is the core clause's and the word before
 * it must be its "the"; the first conjunction after the core is the distractor clause's (a
 * conjunction occurs nowhere else). What lies between the landmarks must split into filler
 * phrases: a reachability pass over positions (phrases share prefixes: "from what i heard" and
 * "from what i heard on mondays"), which also finds the first word no split gets past.
 */
#include "data_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define PHRASES_MAX      32
#define PHRASE_MAX_WORDS 8

static struct {
    int ids[PHRASES_MAX][PHRASE_MAX_WORDS];
    int len[PHRASES_MAX];
    int n;
    bool ok; /* every phrase tokenized (a vocabulary edit that breaks one makes every parse fail) */
} phrases;
static pthread_once_t phrases_once = PTHREAD_ONCE_INIT;

static void build_phrases(void) {
    phrases.n = attn_filler_count() < PHRASES_MAX ? attn_filler_count() : PHRASES_MAX;
    phrases.ok = attn_filler_count() <= PHRASES_MAX;
    for (int i = 0; i < phrases.n; i++) {
        attn_error e;
        if (attn_tokenize(attn_filler_phrase(i), phrases.ids[i], PHRASE_MAX_WORDS, &phrases.len[i],
                          &e) != ATTN_OK)
            phrases.ok = false;
    }
}

static bool is_adjective(int id) {
    const attn_word_cat c = attn_vocab_cat(id);
    return c == ATTN_CAT_POSITIVE || c == ATTN_CAT_NEGATIVE;
}

static attn_status reject(const int *ids, int n, int at, const char *expected, attn_error *err) {
    if (at >= n)
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "not a sentence of the grammar: it ends after word %d, expected %s", n,
                           expected);
    return attn_errorf(err, ATTN_ERR_VALUE,
                       "not a sentence of the grammar: word %d '%s', expected %s", at + 1,
                       attn_vocab_word(ids[at]), expected);
}

/* Whether ids[from..to) splits into filler phrases; if not, *stuck is the first position no
 * split gets past. reach: scratch of n + 1 bytes. */
static bool fillers_cover(const int *ids, int from, int to, unsigned char *reach, int *stuck) {
    memset(reach + from, 0, (size_t)(to - from + 1));
    reach[from] = 1;
    int furthest = from;
    for (int p = from; p < to; p++) {
        if (!reach[p]) continue;
        furthest = p;
        for (int f = 0; f < phrases.n; f++) {
            const int L = phrases.len[f];
            if (p + L <= to && memcmp(ids + p, phrases.ids[f], (size_t)L * sizeof *ids) == 0)
                reach[p + L] = 1;
        }
    }
    *stuck = furthest;
    return reach[to];
}

/* VERB [INTENSIFIER] ADJECTIVE at ids[p..): the position after it, or -1 (*at the word at
 * fault, *what what it should have been). */
static int clause_end(const int *ids, int n, int p, bool negation, attn_parse *out, int *at,
                      const char **what) {
    if (p >= n || attn_vocab_cat(ids[p]) != ATTN_CAT_VERB) {
        *at = p, *what = "a verb (was, is, seemed, felt) after the noun";
        return -1;
    }
    if (out) out->verb = p;
    p++;
    if (negation && p < n && attn_vocab_cat(ids[p]) == ATTN_CAT_NEGATION) {
        if (out) out->negation = p;
        p++;
    }
    if (p < n && attn_vocab_cat(ids[p]) == ATTN_CAT_INTENSIFIER) {
        if (out) out->intensifier = p;
        p++;
    }
    if (p >= n || !is_adjective(ids[p])) {
        *at = p;
        *what = negation ? "an adjective (or not/never or an intensifier before it)"
                         : "an adjective (or an intensifier before it)";
        return -1;
    }
    if (out) out->adjective = p;
    return p + 1;
}

static attn_status parse(const int *ids, int n, attn_parse *out, unsigned char *reach,
                         attn_error *err) {
    for (int i = 0; i < n; i++)
        if (ids[i] < 2 || ids[i] >= ATTN_VOCAB_SIZE)
            return attn_errorf(err, ATTN_ERR_VALUE,
                               "not a sentence of the grammar: word %d has id %d, not a word of "
                               "the vocabulary",
                               i + 1, ids[i]);
    int subj = 0, at = 0;
    const char *what = NULL;
    while (subj < n && attn_vocab_cat(ids[subj]) != ATTN_CAT_SUBJECT) subj++;
    if (subj == n)
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "not a sentence of the grammar: no subject noun (the core clause is "
                           "'the SUBJECT VERB [not|never] [INTENSIFIER] ADJECTIVE')");
    if (subj == 0 || attn_vocab_cat(ids[subj - 1]) != ATTN_CAT_DETERMINER)
        return reject(ids, n, subj, "'the' before the subject noun", err);
    if (!fillers_cover(ids, 0, subj - 1, reach, &at))
        return reject(ids, n, at, "a filler phrase before the core clause", err);
    out->core = subj - 1;
    out->subject = subj;
    int end = clause_end(ids, n, subj + 1, true, out, &at, &what);
    if (end < 0) return reject(ids, n, at, what, err);
    out->label = (attn_vocab_cat(ids[out->adjective]) == ATTN_CAT_POSITIVE) ^ (out->negation >= 0);
    int conj = end;
    while (conj < n && attn_vocab_cat(ids[conj]) != ATTN_CAT_CONJUNCTION) conj++;
    if (!fillers_cover(ids, end, conj, reach, &at))
        return reject(ids, n, at, "a filler phrase or a distractor clause after the core clause",
                      err);
    if (conj == n) return ATTN_OK;
    if (conj + 1 >= n || attn_vocab_cat(ids[conj + 1]) != ATTN_CAT_DETERMINER)
        return reject(ids, n, conj + 1, "'the' after the conjunction", err);
    if (conj + 2 >= n || attn_vocab_cat(ids[conj + 2]) != ATTN_CAT_DISTRACTOR)
        return reject(ids, n, conj + 2, "a distractor noun (coffee, weather, ...) after 'the'",
                      err);
    end = clause_end(ids, n, conj + 3, false, NULL, &at, &what);
    if (end < 0) return reject(ids, n, at, what, err);
    if (!fillers_cover(ids, end, n, reach, &at))
        return reject(ids, n, at, "a filler phrase after the distractor clause", err);
    out->distractor = conj;
    out->distractor_end = end;
    return ATTN_OK;
}

static void parse_clear(attn_parse *p) {
    p->core = p->subject = p->verb = p->negation = p->intensifier = p->adjective = p->label = -1;
    p->distractor = p->distractor_end = -1;
}

attn_status attn_grammar_parse(const int *ids, int n, attn_parse *out, attn_error *err) {
    if (!ids || !out || n < 0)
        return attn_errorf(err, ATTN_ERR_ARG, "attn_grammar_parse: NULL ids or out, or n < 0");
    parse_clear(out);
    pthread_once(&phrases_once, build_phrases);
    if (!phrases.ok)
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "grammar: the filler phrases do not tokenize with the vocabulary");
    if (n == 0) return attn_errorf(err, ATTN_ERR_VALUE, "not a sentence of the grammar: no words");
    unsigned char *reach = malloc((size_t)n + 1);
    if (!reach) return attn_errorf(err, ATTN_ERR_NOMEM, "grammar: out of memory for %d words", n);
    attn_parse p;
    parse_clear(&p);
    const attn_status st = parse(ids, n, &p, reach, err);
    free(reach);
    if (st == ATTN_OK) *out = p;
    return st;
}

attn_status attn_grammar_parse_text(const char *sentence, attn_parse *out, attn_error *err) {
    if (!sentence || !out)
        return attn_errorf(err, ATTN_ERR_ARG, "attn_grammar_parse_text: NULL sentence or out");
    parse_clear(out);
    const int max_ids = (int)(strlen(sentence) / 2 + 1);
    int *ids = malloc((size_t)max_ids * sizeof *ids), n = 0;
    if (!ids) return attn_errorf(err, ATTN_ERR_NOMEM, "grammar: out of memory");
    attn_status st = attn_tokenize(sentence, ids, max_ids, &n, err);
    if (st == ATTN_OK) st = attn_grammar_parse(ids, n, out, err);
    free(ids);
    return st;
}

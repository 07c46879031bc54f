/* suggest.c -- what to offer for a word the vocabulary lacks: the nearest word by spelling and,
 * on the task's vocabulary, the words of the class the sentence grammar puts at its place (the
 * rules are attn_data.h's, "suggestions for an unknown word"). One pass over the sentence with
 * two words of look-ahead: a place is read from the two words before it, the two after it and
 * whether a conjunction came before, so a file of unknown words costs one scan.
 */
#include "data_internal.h"

#include <stdio.h>
#include <string.h>

#define CAT_NONE ATTN_N_CATS /* an unknown word's, and the sentence's start and end */

static bool is_noun(int c) {
    return c == ATTN_CAT_SUBJECT || c == ATTN_CAT_DISTRACTOR;
}
static bool is_adjective(int c) {
    return c == ATTN_CAT_POSITIVE || c == ATTN_CAT_NEGATIVE;
}

/* Whether "<word> the" occurs in a filler phrase ("in the winter semester"). */
static bool filler_before_the(const char *word) {
    char pair[ATTN_TOKENIZER_WORD_MAX + 8];
    snprintf(pair, sizeof pair, "%s the ", word);
    for (int f = 0; f < attn_filler_count(); f++) {
        const char *ph = attn_filler_phrase(f);
        for (const char *p = ph; (p = strstr(p, pair)) != NULL; p++)
            if (p == ph || p[-1] == ' ') return true;
    }
    return false;
}

/* One word of the sentence as the pass sees it. */
typedef struct seen {
    int cat; /* attn_word_cat; CAT_NONE when unknown, absent or of a file's own vocabulary */
    bool unknown, truncated;
    char word[ATTN_TOKENIZER_WORD_MAX];
} seen;

/* The categories the place between prev2, prev and next, next2 takes (rules 1-7), into cats; their
 * number (0: not placed) and the place's name. */
static int place_of(const seen *prev2, const seen *prev, const seen *next, const seen *next2,
                    bool after_conj, attn_word_cat cats[ATTN_SUGGEST_GROUPS], const char **name) {
    const int P = prev->cat, N = next->cat;
    if (is_noun(N) && P != ATTN_CAT_DETERMINER) {
        cats[0] = ATTN_CAT_DETERMINER, *name = "determiner";
        return 1;
    }
    if (P == ATTN_CAT_DETERMINER) {
        if (is_noun(N)) return 0;
        if (N != ATTN_CAT_VERB && prev2->cat == ATTN_CAT_FILLER && filler_before_the(prev2->word))
            return 0;
        cats[0] = after_conj ? ATTN_CAT_DISTRACTOR : ATTN_CAT_SUBJECT;
        *name = after_conj ? "distractor noun" : "subject noun";
        return 1;
    }
    if (is_noun(P)) {
        cats[0] = ATTN_CAT_VERB, *name = "verb";
        return 1;
    }
    if (P == ATTN_CAT_VERB && N == ATTN_CAT_INTENSIFIER) {
        if (after_conj) return 0;
        cats[0] = ATTN_CAT_NEGATION, *name = "negation";
        return 1;
    }
    if (is_adjective(N)) {
        if (P == ATTN_CAT_VERB && !after_conj) {
            cats[0] = ATTN_CAT_NEGATION, cats[1] = ATTN_CAT_INTENSIFIER;
            *name = "negation or intensifier";
            return 2;
        }
        if (P == ATTN_CAT_VERB || P == ATTN_CAT_NEGATION) {
            cats[0] = ATTN_CAT_INTENSIFIER, *name = "intensifier";
            return 1;
        }
        return 0;
    }
    if ((P == ATTN_CAT_VERB || P == ATTN_CAT_NEGATION || P == ATTN_CAT_INTENSIFIER) &&
        N != ATTN_CAT_NEGATION && N != ATTN_CAT_INTENSIFIER) {
        cats[0] = ATTN_CAT_POSITIVE, cats[1] = ATTN_CAT_NEGATIVE, *name = "adjective";
        return 2;
    }
    if (is_adjective(P) && N == ATTN_CAT_DETERMINER && next2->cat == ATTN_CAT_DISTRACTOR) {
        cats[0] = ATTN_CAT_CONJUNCTION, *name = "conjunction";
        return 1;
    }
    return 0;
}

/* The words of category c, nearest to word[0..nw) by spelling first (ties: table order). */
static void fill_group(attn_word_cat c, const char *word, size_t nw, attn_suggest_group *g) {
    int dist[ATTN_SUGGEST_GROUP_MAX];
    g->category = attn_word_cat_name(c);
    g->n = 0;
    for (int id = 0; id < attn_vocab_size() && g->n < ATTN_SUGGEST_GROUP_MAX; id++) {
        if (attn_vocab_cat(id) != c) continue;
        const char *w = attn_vocab_word(id);
        const int d = attn_edit_distance(word, nw, w, strlen(w));
        int at = g->n++;
        for (; at > 0 && dist[at - 1] > d; at--) { /* insertion: stable for equal distances */
            dist[at] = dist[at - 1];
            g->words[at] = g->words[at - 1];
        }
        dist[at] = d;
        g->words[at] = w;
    }
}

/* The rule's words: "after 'the', before 'was'" (the sentence's start and end named so). */
static void describe(const seen *prev, const seen *next, char *rule, size_t n) {
    const char *a = prev->word[0] ? prev->word : NULL, *b = next->word[0] ? next->word : NULL;
    if (a && b)
        snprintf(rule, n, "after '%s', before '%s'", a, b);
    else if (a)
        snprintf(rule, n, "after '%s', at the end", a);
    else if (b)
        snprintf(rule, n, "at the start, before '%s'", b);
    else
        snprintf(rule, n, "alone");
}

/* Fills s for the unknown word cur at 1-based position pos. */
static void suggest_one(const attn_vocab *v, const seen *prev2, const seen *prev, const seen *cur,
                        const seen *next, const seen *next2, bool after_conj, int pos,
                        attn_suggestion *s) {
    memset(s, 0, sizeof *s);
    s->position = pos;
    snprintf(s->word, sizeof s->word, "%s%s", cur->word, cur->truncated ? "..." : "");
    s->nearest = attn_vocab_closest(v, cur->word);
    if (!v->builtin) return; /* a file's own words have no categories */
    attn_word_cat cats[ATTN_SUGGEST_GROUPS];
    const char *name = NULL;
    const int k = place_of(prev2, prev, next, next2, after_conj, cats, &name);
    if (k == 0) return;
    s->place = name;
    describe(prev, next, s->rule, sizeof s->rule);
    s->n_groups = k;
    for (int i = 0; i < k; i++) fill_group(cats[i], cur->word, strlen(cur->word), &s->groups[i]);
}

/* The next word of the sentence at *p into *s; false at the end (then *s is the end). */
static bool read_seen(const attn_vocab *v, const char **p, seen *s) {
    char word[ATTN_TOKENIZER_WORD_MAX];
    size_t len;
    *s = (seen){CAT_NONE, false, false, ""};
    if (!attn_tokenizer_next(p, word, &len, &s->truncated)) return false;
    snprintf(s->word, sizeof s->word, "%s", word);
    const int id = s->truncated ? -1 : attn_vocab_lookup(v, word);
    s->unknown = id < 0 || v->kinds[id] != ATTN_TOKEN_WORD;
    if (!s->unknown && v->builtin) s->cat = (int)attn_vocab_cat(id);
    return true;
}

attn_status attn_vocab_suggest(const attn_vocab *v, const char *sentence, attn_suggestion *out,
                               int max, int *n_found, attn_error *err) {
    if (!v || !sentence || !n_found || max < 0 || (max > 0 && !out))
        return attn_errorf(err, ATTN_ERR_ARG,
                           "attn_vocab_suggest: NULL vocab/sentence/n_found or out, or max < 0");
    *n_found = 0;
    const seen none = {CAT_NONE, false, false, ""};
    seen prev2 = none, prev = none, cur = none, next = none, next2 = none;
    const char *p = sentence;
    bool after_conj = false;
    bool more = read_seen(v, &p, &cur);
    more = more && read_seen(v, &p, &next);
    more = more && read_seen(v, &p, &next2);
    for (int pos = 1; cur.word[0]; pos++) {
        if (cur.unknown) {
            if (*n_found < max)
                suggest_one(v, &prev2, &prev, &cur, &next, &next2, after_conj, pos, &out[*n_found]);
            (*n_found)++;
        }
        after_conj = after_conj || cur.cat == ATTN_CAT_CONJUNCTION;
        prev2 = prev;
        prev = cur;
        cur = next;
        next = next2;
        if (more)
            more = read_seen(v, &p, &next2);
        else
            next2 = none;
    }
    return ATTN_OK;
}

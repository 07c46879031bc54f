/* test_generator.c -- the course-review sets: lengths, labels (checked by an independent
 * labeller written here from the rule), balance, determinism, train/test disjointness and the
 * training set's tail distribution after the core clause. */
#include "data_internal.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the labelling rule, re-implemented from the task description ------------------------- */

static const char *const POS[] = {"helpful",     "good",   "great",    "excellent", "clear",
                                  "interesting", "useful", "engaging", "inspiring", "fun"};
static const char *const NEG[] = {"boring",   "confusing", "useless", "bad",   "awful",
                                  "terrible", "dull",      "poor",    "messy", "pointless"};
static const char *const INTENS[] = {"very", "really", "quite", "extremely", "so"};

static bool in_list(const char *w, size_t wl, const char *const *list, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (strlen(list[i]) == wl && strncmp(w, list[i], wl) == 0) return true;
    return false;
}

#define MAXW 128
/* Splits text at spaces; returns the number of words. */
static int split(const char *text, const char *w[MAXW], size_t wl[MAXW]) {
    int n = 0;
    for (const char *p = text; *p && n < MAXW;) {
        while (*p == ' ') p++;
        if (!*p) break;
        const char *q = p;
        while (*q && *q != ' ') q++;
        w[n] = p;
        wl[n++] = (size_t)(q - p);
        p = q;
    }
    return n;
}

/* 1 positive / 0 negative: polarity of the first adjective, flipped by not/never before it
 * (possibly with an intensifier in between); -1 if the text has no adjective. Sets *adj_pos. */
static int label_of(const char *text, int *adj_pos) {
    const char *w[MAXW];
    size_t wl[MAXW];
    int n = split(text, w, wl);
    for (int i = 0; i < n; i++) {
        bool pos = in_list(w[i], wl[i], POS, 10), neg = in_list(w[i], wl[i], NEG, 10);
        if (!pos && !neg) continue;
        int j = i - 1;
        if (j >= 0 && in_list(w[j], wl[j], INTENS, 5)) j--;
        bool negated = j >= 0 && (in_list(w[j], wl[j], (const char *const[]){"not"}, 1) ||
                                  in_list(w[j], wl[j], (const char *const[]){"never"}, 1));
        *adj_pos = i;
        return (pos ? 1 : 0) ^ (negated ? 1 : 0);
    }
    return -1;
}

static int count_words(const char *text) {
    const char *w[MAXW];
    size_t wl[MAXW];
    return split(text, w, wl);
}

START_TEST(test_independent_labeller_examples) {
    int p;
    ck_assert_int_eq(label_of("honestly the lecture was not very helpful in the winter semester "
                              "according to my friends although the coffee was great",
                              &p),
                     0);
    ck_assert_int_eq(p, 6);
    ck_assert_int_eq(label_of("the lecture was not good", &p), 0);
    /* the write-up's sentences (s2, s4, s5; s7's mixed example) */
    ck_assert_int_eq(label_of("the food was not good", &p), 0);
    ck_assert_int_eq(label_of("the lecture was messy although the food was good", &p), 0);
    ck_assert_int_eq(label_of("the exam was never boring", &p), 1);
    ck_assert_int_eq(label_of("the exam was boring although the coffee was great", &p), 0);
    ck_assert_int_eq(label_of("the exam was good but the wifi was not bad", &p), 1);
}
END_TEST

/* ---- per-set properties -------------------------------------------------------------------- */

typedef struct set_spec {
    attn_set set;
    int min_words, max_words;
} set_spec;

static const set_spec SETS[] = {
    {ATTN_SET_TRAIN, 4, 59}, {ATTN_SET_PLAIN, 4, 6},   {ATTN_SET_DISTRACTOR, 9, 12},
    {ATTN_SET_FILL4, 9, 60}, {ATTN_SET_FILL8, 42, 60}, {ATTN_SET_HOLDOUT, 4, 59},
};

static attn_dataset *gen(attn_set set, int n, uint64_t seed) {
    attn_dataset *d = NULL;
    attn_error err;
    ck_assert_msg(attn_data_generate(set, n, seed, &d, &err) == ATTN_OK, "%s: %s",
                  attn_set_name(set), err.msg);
    return d;
}

/* The filler phrases' ids, tokenized once per process (count_fillers tries each phrase at
 * every word of every sentence). */
enum { MAX_FILLERS = 128 };
typedef struct filler_ids {
    int ids[16], n;
} filler_ids;
static const filler_ids *filler_table(void) {
    static filler_ids table[MAX_FILLERS];
    static bool done;
    ck_assert_int_le(attn_filler_count(), MAX_FILLERS);
    for (int f = 0; !done && f < attn_filler_count(); f++)
        attn_tokenize(attn_filler_phrase(f), table[f].ids, 16, &table[f].n, NULL);
    done = true;
    return table;
}

/* Number of words of filler phrases in text (greedy match against the phrase table). */
static int count_fillers(const attn_dataset *d, int i) {
    const filler_ids *table = filler_table();
    int fillers = 0;
    const int *ids = d->ids + d->offsets[i];
    for (int t = 0; t < d->lengths[i];) {
        int matched = 0;
        for (int f = 0; f < attn_filler_count() && !matched; f++) {
            const int *fid = table[f].ids, fn = table[f].n;
            /* a filler phrase starts with a filler-only word, except none start with "the" */
            if (t + fn <= d->lengths[i] && memcmp(ids + t, fid, (size_t)fn * sizeof *fid) == 0 &&
                attn_vocab_cat(fid[0]) == ATTN_CAT_FILLER)
                matched = fn;
        }
        if (matched) {
            fillers++;
            t += matched;
        } else {
            t++;
        }
    }
    return fillers;
}

START_TEST(test_set_properties) {
    const set_spec *sp = &SETS[_i];
    /* the sanitizer build (tu_small): a quarter of the training set, the same checks */
    int n = sp->set == ATTN_SET_TRAIN ? (tu_small() ? 2000 : 8000) : 1000;
    attn_dataset *d = gen(sp->set, n, 7);
    ck_assert_int_eq(d->n, n);
    int pos = 0, negated = 0, opposite = 0;
    for (int i = 0; i < n; i++) {
        const char *t = d->texts[i];
        int words = count_words(t);
        ck_assert_int_eq(words, d->lengths[i]);
        ck_assert_msg(words >= sp->min_words && words <= sp->max_words,
                      "%s sentence %d has %d words: %s", attn_set_name(sp->set), i, words, t);
        int adj = -1;
        int want = label_of(t, &adj);
        ck_assert_msg(want == d->labels[i], "%s sentence %d labelled %d, rule says %d: %s",
                      attn_set_name(sp->set), i, d->labels[i], want, t);
        pos += d->labels[i];
        /* ids agree with the text */
        int ids[ATTN_MAX_WORDS], m = 0;
        attn_error err;
        ck_assert_msg(attn_tokenize(t, ids, ATTN_MAX_WORDS, &m, &err) == ATTN_OK, "%s", err.msg);
        ck_assert_int_eq(m, d->lengths[i]);
        ck_assert(memcmp(ids, d->ids + d->offsets[i], (size_t)m * sizeof *ids) == 0);
        /* structure per set */
        bool has_conj = false;
        for (int j = 0; j < m; j++)
            if (strcmp(attn_vocab_category(ids[j]), "conjunction") == 0) has_conj = true;
        /* negated cores, and distractor adjectives that disagree with the label, occur */
        for (int j = adj - 2 >= 0 ? adj - 2 : 0; j < adj; j++)
            if (!strcmp(attn_vocab_word(ids[j]), "not") ||
                !strcmp(attn_vocab_word(ids[j]), "never"))
                negated++;
        for (int j = adj + 1; j < m; j++) {
            const char *c = attn_vocab_category(ids[j]);
            if ((strcmp(c, "positive") == 0 && d->labels[i] == 0) ||
                (strcmp(c, "negative") == 0 && d->labels[i] == 1))
                opposite++;
        }
        int fillers = count_fillers(d, i);
        switch (sp->set) {
        case ATTN_SET_PLAIN:
            ck_assert(!has_conj && fillers == 0 && adj == m - 1);
            break;
        case ATTN_SET_DISTRACTOR:
            ck_assert(has_conj && fillers == 0 && adj <= 5);
            break;
        case ATTN_SET_FILL4:
            ck_assert_int_eq(fillers, 4);
            break;
        case ATTN_SET_FILL8:
            ck_assert_int_eq(fillers, 8);
            break;
        case ATTN_SET_TRAIN:
        case ATTN_SET_HOLDOUT:
            ck_assert_int_le(fillers, 8);
            break;
        }
    }
    ck_assert_int_gt(negated, n / 10);
    if (sp->set != ATTN_SET_PLAIN) ck_assert_int_gt(opposite, n / 10);
    double frac = (double)pos / n;
    ck_assert_msg(frac >= 0.49 && frac <= 0.51, "%s: %.3f positive", attn_set_name(sp->set), frac);
    attn_dataset_free(d);
}
END_TEST

START_TEST(test_determinism) {
    const set_spec *sp = &SETS[_i];
    attn_dataset *a = gen(sp->set, 300, 11), *b = gen(sp->set, 300, 11), *c = gen(sp->set, 300, 12);
    int same_c = 0;
    for (int i = 0; i < 300; i++) {
        ck_assert_str_eq(a->texts[i], b->texts[i]);
        ck_assert_int_eq(a->labels[i], b->labels[i]);
        same_c += strcmp(a->texts[i], c->texts[i]) == 0;
    }
    ck_assert_msg(same_c < 30, "%s: seeds 11 and 12 share %d of 300 sentences",
                  attn_set_name(sp->set), same_c);
    attn_dataset_free(a);
    attn_dataset_free(b);
    attn_dataset_free(c);
}
END_TEST

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

START_TEST(test_test_sets_disjoint_from_train) {
    attn_dataset *train = gen(ATTN_SET_TRAIN, 8000, 3);
    char **sorted = malloc(8000 * sizeof *sorted);
    ck_assert_ptr_nonnull(sorted);
    memcpy(sorted, train->texts, 8000 * sizeof *sorted);
    qsort(sorted, 8000, sizeof *sorted, cmp_str);
    for (int s = ATTN_SET_PLAIN; s <= ATTN_SET_HOLDOUT; s++) { /* test sets and holdout */
        attn_dataset *t = gen((attn_set)s, 1000, 3);
        for (int i = 0; i < t->n; i++)
            ck_assert_msg(!bsearch(&t->texts[i], sorted, 8000, sizeof *sorted, cmp_str),
                          "%s sentence %d is in the training set: %s", attn_set_name((attn_set)s),
                          i, t->texts[i]);
        attn_dataset_free(t);
    }
    free(sorted);
    attn_dataset_free(train);
}
END_TEST

/* Whether the words after the core adjective (w[adj+1..n-1]) are exactly one distractor clause:
 * CONJ the NOUN VERB [INT] ADJ, i.e. a conjunction first and an adjective last. */
static bool lone_distractor_tail(const char *text, int adj) {
    static const char *const CONJ[] = {"although", "but", "while", "though", "whereas"};
    const char *w[MAXW];
    size_t wl[MAXW];
    int n = split(text, w, wl);
    if (adj + 1 >= n || !in_list(w[adj + 1], wl[adj + 1], CONJ, 5)) return false;
    return in_list(w[n - 1], wl[n - 1], POS, 10) || in_list(w[n - 1], wl[n - 1], NEG, 10);
}

/* The design constraints: the median sentence is long; the core adjective is followed by >= 8
 * words, by exactly one distractor clause (5-6 words) or by nothing, almost never by a short
 * run of fillers (which an Elman RNN could bridge); late cores (fill8-like) are common, and cores
 * past word 40 (where fill8 puts 5 % of its cores) are not rare. */
START_TEST(test_train_distribution) { /* _i = 0: train, 1: holdout (the same distribution) */
    attn_dataset *d = gen(_i ? ATTN_SET_HOLDOUT : ATTN_SET_TRAIN, 8000, 1);
    int tail0 = 0, lone_dist = 0, short_other = 0, late = 0, deep = 0, plain_like = 0;
    int hist[61] = {0};
    for (int i = 0; i < d->n; i++) {
        int adj = -1;
        label_of(d->texts[i], &adj);
        int tail = d->lengths[i] - 1 - adj;
        if (tail == 0)
            tail0++;
        else if (lone_distractor_tail(d->texts[i], adj))
            lone_dist++;
        else if (tail < 8)
            short_other++;
        if (adj >= 30) late++;
        if (adj >= 40) deep++;
        if (tail == 0 && strncmp(d->texts[i], "the ", 4) == 0) plain_like++;
        hist[d->lengths[i]]++;
    }
    int median = 0, seen = 0;
    while (2 * (seen += hist[median]) < d->n) median++;
    printf("  %s: median %d words; after the core: nothing %.2f%% (plain-like %.2f%%), one "
           "distractor clause %.2f%%, other < 8 words %.2f%%; core adjective at word >= 30: "
           "%.1f%%, >= 40: %.1f%%\n",
           _i ? "holdout" : "train", median, 100.0 * tail0 / d->n, 100.0 * plain_like / d->n,
           100.0 * lone_dist / d->n, 100.0 * short_other / d->n, 100.0 * late / d->n,
           100.0 * deep / d->n);
    ck_assert_int_gt(median, 20);
    /* tail 0 (the LSTM needs it for the plain set) and lone distractor clauses (the distractor
     * set) occur but stay a minority, else the RNN learns them */
    ck_assert_msg(tail0 >= d->n * 2 / 100 && tail0 <= d->n * 10 / 100, "tail 0: %d", tail0);
    /* plain-like sentences: ~3% left the LSTM at 85-95% on the plain set, ~6% let the RNN
     * learn (generator.c's log); the rule gives ~4.7-5.5% */
    ck_assert_msg(plain_like >= d->n * 35 / 1000 && plain_like <= d->n * 55 / 1000 &&
                      plain_like <= tail0,
                  "plain-like: %d", plain_like);
    ck_assert_msg(lone_dist >= d->n * 8 / 100 && lone_dist <= d->n * 25 / 100,
                  "lone distractor tails: %d", lone_dist);
    ck_assert_msg(short_other <= d->n / 100, "%d short filler tails", short_other);
    ck_assert_msg(tail0 + lone_dist + short_other <= d->n * 30 / 100, "near the end: %d",
                  tail0 + lone_dist + short_other);
    ck_assert_msg(late >= d->n * 8 / 100, "late cores: %d", late);
    /* before the deep-core candidates 0.6 %, and the Transformer missed 20-30 % of fill8's cores
     * there (generator.c) */
    ck_assert_msg(deep >= d->n * 25 / 1000, "cores past word 40: %d", deep);
    attn_dataset_free(d);
}
END_TEST

START_TEST(test_names_and_args) {
    attn_set s;
    attn_error err;
    for (int i = 0; i <= ATTN_SET_HOLDOUT; i++) {
        ck_assert_int_eq(attn_set_from_name(attn_set_name((attn_set)i), &s, &err), ATTN_OK);
        ck_assert_int_eq(s, i);
    }
    ck_assert_str_eq(attn_set_name(ATTN_SET_FILL8), "fill8");
    ck_assert_str_eq(attn_set_name(ATTN_SET_HOLDOUT), "holdout");
    ck_assert_int_eq(attn_set_from_name("bogus", &s, &err), ATTN_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "bogus") && strstr(err.msg, "fill8"), "%s", err.msg);
    attn_dataset *d = NULL;
    ck_assert_int_eq(attn_data_generate(ATTN_SET_TRAIN, 0, 1, &d, &err), ATTN_ERR_ARG);
    ck_assert_ptr_null(d);
    ck_assert_int_eq(attn_data_generate((attn_set)9, 10, 1, &d, &err), ATTN_ERR_ARG);
    attn_dataset_free(NULL);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("generator");
    TCase *tc = tcase_create("generator");
    tcase_set_timeout(tc, 120);
    int n_sets = (int)(sizeof SETS / sizeof SETS[0]);
    tcase_add_test(tc, test_independent_labeller_examples);
    tcase_add_loop_test(tc, test_set_properties, 0, n_sets);
    tcase_add_loop_test(tc, test_determinism, 0, n_sets);
    tcase_add_test(tc, test_test_sets_disjoint_from_train);
    tcase_add_loop_test(tc, test_train_distribution, 0, 2);
    tcase_add_test(tc, test_names_and_args);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return tu_run_suite(suite());
}

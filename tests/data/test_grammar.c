/* test_grammar.c -- the grammar parser (src/data/grammar.c) against the generator and against an
 * independent recognizer: a POSIX regular expression written here from the grammar's text and
 * the vocabulary's word classes. Every sentence of every set parses with the generator's label;
 * mutated sentences (words dropped, swapped, duplicated, replaced, reversed) get the regular
 * expression's verdict, and the mutations that break the core clause are rejected. */
#include "attn_seq2seq.h"
#include "data_internal.h"
#include "test_util.h"

#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the oracle ---------------------------------------------------------------------------- */

static regex_t oracle;

/* Appends to buf[size] (exits when it does not fit: called before the suite runs). */
static void cat(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void cat(char *buf, size_t size, const char *fmt, ...) {
    const size_t n = strlen(buf);
    va_list ap;
    va_start(ap, fmt);
    const int k = vsnprintf(buf + n, size - n, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= size - n) {
        fprintf(stderr, "test_grammar: a buffer of %zu bytes is too small\n", size);
        exit(1);
    }
}

/* "(w1|w2|...)" of the vocabulary words of category cat. */
static void words_of(char *buf, size_t size, const char *category) {
    buf[0] = '\0';
    cat(buf, size, "(");
    bool first = true;
    for (int id = 2; id < attn_vocab_size(); id++)
        if (strcmp(attn_vocab_category(id), category) == 0) {
            cat(buf, size, "%s%s", first ? "" : "|", attn_vocab_word(id));
            first = false;
        }
    cat(buf, size, ")");
}

static void build_oracle(void) {
    enum { W = 1024 };
    static char subj[W], verb[W], neg[W], inten[W], adj[W], pos[W], negw[W], conj[W], dist[W],
        fill[4 * W], re[16 * W];
    words_of(subj, W, "subject");
    words_of(verb, W, "verb");
    words_of(neg, W, "negation");
    words_of(inten, W, "intensifier");
    words_of(pos, W, "positive");
    words_of(negw, W, "negative");
    cat(adj, W, "(%s|%s)", pos, negw);
    words_of(conj, W, "conjunction");
    words_of(dist, W, "distractor");
    cat(fill, sizeof fill, "(");
    for (int i = 0; i < attn_filler_count(); i++)
        cat(fill, sizeof fill, "%s%s", i ? "|" : "", attn_filler_phrase(i));
    cat(fill, sizeof fill, ")");
    cat(re, sizeof re, "^(%s )*the %s %s( %s)?( %s)? %s( %s)*( %s the %s %s( %s)? %s( %s)*)?$",
        fill, subj, verb, neg, inten, adj, fill, conj, dist, verb, inten, adj, fill);
    const int rc = regcomp(&oracle, re, REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
        char msg[256];
        regerror(rc, &oracle, msg, sizeof msg);
        fprintf(stderr, "test_grammar: regcomp: %s\n", msg);
        exit(1);
    }
}

static bool oracle_accepts(const int *ids, int n) {
    char text[4096];
    size_t k = 0;
    text[0] = '\0';
    for (int i = 0; i < n; i++) {
        const char *w = attn_vocab_word(ids[i]);
        if (!w || ids[i] < 2) return false; /* [PAD], [CLS], out of range */
        k += (size_t)snprintf(text + k, sizeof text - k, "%s%s", i ? " " : "", w);
        ck_assert_uint_lt(k, sizeof text);
    }
    return n > 0 && regexec(&oracle, text, 0, NULL, 0) == 0;
}

static bool parses(const int *ids, int n, attn_parse *p) {
    attn_error err;
    const attn_status st = attn_grammar_parse(ids, n, p, &err);
    ck_assert_msg(st == ATTN_OK || st == ATTN_ERR_VALUE, "status %d", st);
    if (st != ATTN_OK) ck_assert_ptr_nonnull(strstr(err.msg, "not a sentence of the grammar"));
    return st == ATTN_OK;
}

static int first_of(const int *ids, int n, const char *cat) {
    for (int i = 0; i < n; i++)
        if (strcmp(attn_vocab_category(ids[i]), cat) == 0) return i;
    return -1;
}

/* ---- every generated sentence ----------------------------------------------------------- */

static const attn_set SETS[] = {ATTN_SET_TRAIN,      ATTN_SET_HOLDOUT, ATTN_SET_PLAIN,
                                ATTN_SET_DISTRACTOR, ATTN_SET_FILL4,   ATTN_SET_FILL8};

static void check_sentence(const int *ids, int n, int label, attn_set set, bool lengths) {
    attn_parse p;
    ck_assert_msg(parses(ids, n, &p), "a generated sentence does not parse");
    ck_assert(oracle_accepts(ids, n));
    ck_assert_int_eq(p.label, label);
    ck_assert_int_eq(p.subject, first_of(ids, n, "subject"));
    ck_assert_int_eq(p.core, p.subject - 1);
    ck_assert_int_eq(p.verb, p.subject + 1);
    const int adj = first_of(ids, n, "positive") >= 0 &&
                            (first_of(ids, n, "negative") < 0 ||
                             first_of(ids, n, "positive") < first_of(ids, n, "negative"))
                        ? first_of(ids, n, "positive")
                        : first_of(ids, n, "negative");
    ck_assert_int_eq(p.adjective, adj);
    ck_assert_int_eq(p.negation, first_of(ids, n, "negation"));
    ck_assert_int_eq(p.distractor, first_of(ids, n, "conjunction"));
    if (p.distractor >= 0) ck_assert_int_gt(p.distractor_end, p.distractor + 4);
    if (lengths) return;
    if (set == ATTN_SET_PLAIN) {
        ck_assert_int_eq(p.core, 0);
        ck_assert_int_eq(p.distractor, -1);
        ck_assert_int_eq(p.adjective, n - 1);
    }
    if (set == ATTN_SET_DISTRACTOR) {
        ck_assert_int_eq(p.core, 0);
        ck_assert_int_eq(p.distractor, p.adjective + 1);
        ck_assert_int_eq(p.distractor_end, n);
    }
}

START_TEST(test_every_generated_sentence_parses_with_its_label) {
    const attn_set set = SETS[_i];
    /* the sanitizer build (tu_small): seed 1 and a quarter of the training set */
    const uint64_t seeds = tu_small() ? 1 : 2;
    const int n_train = tu_small() ? ATTN_TRAIN_DEFAULT_N / 4 : ATTN_TRAIN_DEFAULT_N;
    for (uint64_t seed = 1; seed <= seeds; seed++) {
        attn_error err;
        attn_dataset *d = NULL;
        const int n = set == ATTN_SET_TRAIN ? n_train : 1000;
        ck_assert_int_eq(attn_data_generate(set, n, seed, &d, &err), ATTN_OK);
        int with_distractor = 0, negated = 0;
        for (int i = 0; i < d->n; i++) {
            const int *ids = d->ids + d->offsets[i];
            check_sentence(ids, d->lengths[i], d->labels[i], set, false);
            attn_parse p;
            ck_assert_int_eq(attn_grammar_parse_text(d->texts[i], &p, &err), ATTN_OK);
            ck_assert_int_eq(p.label, d->labels[i]);
            with_distractor += p.distractor >= 0;
            negated += p.negation >= 0;
        }
        if (set != ATTN_SET_PLAIN) ck_assert_int_gt(with_distractor, 0);
        ck_assert_int_gt(negated, d->n / 3);
        attn_dataset_free(d);
    }
}
END_TEST

START_TEST(test_long_sentences_parse) {
    attn_error err;
    attn_dataset *d = NULL;
    ck_assert_int_eq(attn_data_generate_lengths(300, 4, 40, 200, &d, &err), ATTN_OK);
    for (int i = 0; i < d->n; i++)
        check_sentence(d->ids + d->offsets[i], d->lengths[i], d->labels[i], ATTN_SET_TRAIN, true);
    attn_dataset_free(d);
}
END_TEST

/* ---- mutations ---------------------------------------------------------------------------- */

typedef struct tally {
    long tried, rejected;
} tally;

/* The parser and the oracle agree on m[n]; counts it. */
static void judge(const int *m, int n, tally *t) {
    attn_parse p;
    const bool got = parses(m, n, &p), want = oracle_accepts(m, n);
    if (got != want) {
        char text[4096];
        size_t k = 0;
        for (int i = 0; i < n; i++)
            k += (size_t)snprintf(text + k, sizeof text - k, "%s ", attn_vocab_word(m[i]));
        ck_abort_msg("parser %s, oracle %s: '%s'", got ? "accepts" : "rejects",
                     want ? "accepts" : "rejects", text);
    }
    t->tried++;
    t->rejected += !got;
}

START_TEST(test_mutations_agree_with_the_oracle) {
    const attn_set set = SETS[_i];
    attn_error err;
    attn_dataset *d = NULL;
    /* the sanitizer build (tu_small): 20 sentences' mutations */
    ck_assert_int_eq(attn_data_generate(set, tu_small() ? 20 : 60, 3, &d, &err), ATTN_OK);
    attn_rng rng = attn_rng_seed(11 + (uint64_t)_i);
    tally drop = {0}, swap = {0}, other = {0}, core = {0};
    int m[2 * ATTN_GEN_MAX_WORDS];
    for (int s = 0; s < d->n; s++) {
        const int *ids = d->ids + d->offsets[s], n = d->lengths[s];
        attn_parse p;
        ck_assert(parses(ids, n, &p));
        for (int i = 0; i < n; i++) { /* drop word i */
            memcpy(m, ids, (size_t)i * sizeof *m);
            memcpy(m + i, ids + i + 1, (size_t)(n - i - 1) * sizeof *m);
            judge(m, n - 1, &drop);
            if (i == p.subject || i == p.verb || i == p.adjective) judge(m, n - 1, &core);
        }
        for (int i = 0; i + 1 < n; i++) { /* swap words i and i + 1 */
            if (ids[i] == ids[i + 1]) continue;
            memcpy(m, ids, (size_t)n * sizeof *m);
            m[i] = ids[i + 1], m[i + 1] = ids[i];
            judge(m, n, &swap);
            if (i == p.subject || i + 1 == p.adjective) judge(m, n, &core);
        }
        /* a random word replaced, or one duplicated (the sanitizer build, tu_small: 10 times) */
        for (int k = 0; k < (tu_small() ? 10 : 20); k++) {
            memcpy(m, ids, (size_t)n * sizeof *m);
            const int i = (int)attn_rng_below(&rng, (uint32_t)n);
            if (k % 2) {
                m[i] = 2 + (int)attn_rng_below(&rng, ATTN_N_WORDS);
                judge(m, n, &other);
            } else {
                memmove(m + i + 1, m + i, (size_t)(n - i) * sizeof *m);
                judge(m, n + 1, &other);
            }
        }
        for (int i = 0; i < n; i++) m[i] = ids[n - 1 - i]; /* the words backwards */
        judge(m, n, &other);
        ck_assert_int_eq(other.rejected > 0, 1);
    }
    /* breaking the core clause is always rejected: subject, verb or adjective dropped, the
     * subject swapped with its verb, the adjective with the word before it */
    ck_assert_int_eq(core.rejected, core.tried);
    ck_assert_int_gt(core.tried, 3 * d->n);
    ck_assert_int_gt(drop.rejected, drop.tried / 2);
    ck_assert_int_gt(swap.rejected, swap.tried / 2);
    printf("grammar mutations (%s): dropped %ld/%ld rejected, swapped %ld/%ld, replaced or "
           "duplicated %ld/%ld, core clause broken %ld/%ld\n",
           attn_set_name(set), drop.rejected, drop.tried, swap.rejected, swap.tried, other.rejected,
           other.tried, core.rejected, core.tried);
    attn_dataset_free(d);
}
END_TEST

/* ---- examples and messages ---------------------------------------------------------------- */

START_TEST(test_examples_and_messages) {
    attn_error err;
    attn_parse p;
    ck_assert_int_eq(attn_grammar_parse_text("the exam was not very clear", &p, &err), ATTN_OK);
    ck_assert_int_eq(p.label, 0);
    ck_assert_int_eq(p.negation, 3);
    ck_assert_int_eq(p.intensifier, 4);
    ck_assert_int_eq(p.adjective, 5);
    ck_assert_int_eq(p.distractor, -1);
    ck_assert_int_eq(attn_grammar_parse_text("honestly the lecture was never boring although the "
                                             "coffee was great from what i heard on mondays",
                                             &p, &err),
                     ATTN_OK);
    ck_assert_int_eq(p.core, 1);
    ck_assert_int_eq(p.label, 1);
    ck_assert_int_eq(p.distractor, 6);
    ck_assert_int_eq(p.distractor_end, 11);
    /* phrases sharing a prefix: "from what i heard" + "on mondays during the pandemic" */
    ck_assert_int_eq(
        attn_grammar_parse_text("the course is fun from what i heard on mondays during "
                                "the pandemic",
                                &p, &err),
        ATTN_OK);
    struct {
        const char *text, *msg;
    } bad[] = {
        {"the coffee was great", "no subject noun"},
        {"exam was good", "word 1 'exam', expected 'the' before the subject noun"},
        {"the exam good", "word 3 'good', expected a verb"},
        {"the exam was", "ends after word 3, expected an adjective"},
        {"the exam was not not good", "word 5 'not', expected an adjective"},
        {"honestly in the exam was good", "word 2 'in', expected a filler phrase before"},
        {"the exam was good the lecture was bad", "word 5 'the', expected a filler phrase or a"},
        {"the exam was good although the coffee was not bad", "word 9 'not', expected an adj"},
        {"the exam was good but the coffee was bad while the room was fun", "word 10 'while'"},
        {"the exam was good but the lecture was bad", "word 7 'lecture', expected a distractor"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(attn_grammar_parse_text(bad[i].text, &p, &err), ATTN_ERR_VALUE);
        ck_assert_msg(strstr(err.msg, bad[i].msg), "'%s': %s", bad[i].text, err.msg);
        ck_assert_int_eq(p.label, -1);
    }
    ck_assert_int_eq(attn_grammar_parse_text("the exam was superb", &p, &err), ATTN_ERR_VALUE);
    ck_assert_ptr_nonnull(strstr(err.msg, "unknown word 'superb'"));
    const int ids[] = {2, 8, 11, 1, 23}; /* [CLS] inside */
    ck_assert_int_eq(attn_grammar_parse(ids, 5, &p, &err), ATTN_ERR_VALUE);
    ck_assert_ptr_nonnull(strstr(err.msg, "word 4 has id 1"));
    const int big[] = {2, 8, 11, ATTN_TGT_POSITIVE};
    ck_assert_int_eq(attn_grammar_parse(big, 4, &p, &err), ATTN_ERR_VALUE);
    ck_assert_int_eq(attn_grammar_parse(ids, 0, &p, &err), ATTN_ERR_VALUE);
}
END_TEST

int main(void) {
    build_oracle();
    Suite *s = suite_create("grammar");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    const int n_sets = (int)(sizeof SETS / sizeof SETS[0]);
    tcase_add_loop_test(tc, test_every_generated_sentence_parses_with_its_label, 0, n_sets);
    tcase_add_test(tc, test_long_sentences_parse);
    tcase_add_loop_test(tc, test_mutations_agree_with_the_oracle, 0, n_sets);
    tcase_add_test(tc, test_examples_and_messages);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    const int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    regfree(&oracle);
    return failed ? 1 : 0;
}

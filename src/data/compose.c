/* compose.c -- the compose task: "<polarity> <subject>" -> a review sentence (attn_seq2seq.h).
 *
 *   positive exam  ->  honestly the exam was very clear although the coffee was bad
 *
 * The sampling showcase: many sentences are right answers. The targets are the generator's
 * sentences (generator.c) of every set, untouched; the source is read off each sentence's parse
 * (grammar.c): its label as "positive"/"negative" and its core subject noun. Sources use the
 * target vocabulary (the polarity tokens are target-side tokens), targets the source words'
 * ids. An output is judged by parsing it.
 */
#include "attn_seq2seq.h"
#include "data_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ---- the source ---------------------------------------------------------------------------- */

attn_status attn_compose_source(const char *text, int ids[ATTN_COMPOSE_SRC], attn_error *err) {
    if (!text || !ids) return attn_errorf(err, ATTN_ERR_ARG, "attn_compose_source: NULL argument");
    char words[ATTN_COMPOSE_SRC + 1][32];
    int n = 0;
    for (const char *p = text; *p;) {
        while (isspace((unsigned char)*p)) p++;
        if (!*p) break;
        size_t len = 0;
        while (p[len] && !isspace((unsigned char)p[len])) len++;
        if (n <= ATTN_COMPOSE_SRC) {
            const size_t k = len < sizeof words[0] - 1 ? len : sizeof words[0] - 1;
            for (size_t i = 0; i < k; i++) words[n][i] = (char)tolower((unsigned char)p[i]);
            words[n][k] = '\0';
        }
        n++;
        p += len;
    }
    static const char expected[] =
        "expected '<positive|negative> <subject>' with a subject among lecture, course, teacher, "
        "professor, seminar, exam, tutorial, textbook";
    if (n != ATTN_COMPOSE_SRC)
        return attn_errorf(err, ATTN_ERR_VALUE, "compose source '%s': %d words, %s", text, n,
                           expected);
    ids[0] = strcmp(words[0], "positive") == 0   ? ATTN_TGT_POSITIVE
             : strcmp(words[0], "negative") == 0 ? ATTN_TGT_NEGATIVE
                                                 : -1;
    if (ids[0] < 0)
        return attn_errorf(err, ATTN_ERR_VALUE, "compose source '%s': '%s' is not a polarity; %s",
                           text, words[0], expected);
    ids[1] = attn_vocab_id(words[1]);
    if (ids[1] < 0 || attn_vocab_cat(ids[1]) != ATTN_CAT_SUBJECT)
        return attn_errorf(err, ATTN_ERR_VALUE,
                           "compose source '%s': '%s' is not a subject noun; %s", text, words[1],
                           expected);
    return ATTN_OK;
}

/* ---- judging an output --------------------------------------------------------------------- */

attn_status attn_compose_judge(const int *src, const int *out, int n_out, attn_compose_verdict *v,
                               attn_error *err) {
    if (!src || !v || (!out && n_out > 0) || n_out < 0)
        return attn_errorf(err, ATTN_ERR_ARG, "attn_compose_judge: NULL argument");
    *v = (attn_compose_verdict){false, -1, -1, false, false};
    for (int i = 0; i < n_out; i++)
        if (out[i] < 2 || out[i] >= ATTN_VOCAB_SIZE) {
            const char *t = attn_tgt_vocab_token(out[i]);
            return attn_errorf(err, ATTN_ERR_VALUE,
                               "not a sentence of the grammar: word %d is '%s', not a word of "
                               "the review vocabulary",
                               i + 1, t ? t : "?");
        }
    attn_parse p;
    const attn_status st = attn_grammar_parse(out, n_out, &p, err);
    if (st != ATTN_OK) return st;
    v->grammatical = true;
    v->label = p.label;
    v->subject = out[p.subject];
    v->polarity_ok = p.label == (src[0] == ATTN_TGT_POSITIVE);
    v->subject_ok = out[p.subject] == src[1];
    return ATTN_OK;
}

/* ---- the pairs ----------------------------------------------------------------------------- */

/* The sources "<polarity> <subject>" of sentences d, as a dataset in the target vocabulary. */
static attn_status sources_of(const attn_dataset *d, const attn_parse *parses, attn_dataset **out,
                              attn_error *err) {
    attn_dataset *s = calloc(1, sizeof *s);
    if (!s) return attn_errorf(err, ATTN_ERR_NOMEM, "compose: out of memory");
    const int n = d->n;
    s->n = n;
    s->labels = malloc((size_t)n * sizeof *s->labels);
    s->lengths = malloc((size_t)n * sizeof *s->lengths);
    s->offsets = malloc(((size_t)n + 1) * sizeof *s->offsets);
    s->ids = malloc((size_t)n * ATTN_COMPOSE_SRC * sizeof *s->ids);
    s->texts = calloc((size_t)n, sizeof *s->texts);
    bool ok = s->labels && s->lengths && s->offsets && s->ids && s->texts;
    for (int i = 0; ok && i < n; i++) {
        const int subj = d->ids[d->offsets[i] + (size_t)parses[i].subject];
        const char *pol = d->labels[i] ? "positive" : "negative";
        s->labels[i] = d->labels[i];
        s->lengths[i] = ATTN_COMPOSE_SRC;
        s->offsets[i] = (size_t)i * ATTN_COMPOSE_SRC;
        s->ids[s->offsets[i]] = d->labels[i] ? ATTN_TGT_POSITIVE : ATTN_TGT_NEGATIVE;
        s->ids[s->offsets[i] + 1] = subj;
        const size_t len = strlen(pol) + 1 + strlen(attn_vocab_word(subj)) + 1;
        if ((s->texts[i] = malloc(len)) != NULL) {
            memcpy(s->texts[i], pol, strlen(pol));
            s->texts[i][strlen(pol)] = ' ';
            memcpy(s->texts[i] + strlen(pol) + 1, attn_vocab_word(subj),
                   strlen(attn_vocab_word(subj)) + 1);
        }
        ok = s->texts[i] != NULL;
    }
    if (!ok) {
        attn_dataset_free(s);
        return attn_errorf(err, ATTN_ERR_NOMEM, "compose: out of memory for %d sources", n);
    }
    s->offsets[n] = (size_t)n * ATTN_COMPOSE_SRC;
    *out = s;
    return ATTN_OK;
}

/* Parses every sentence of d (each must have its label) into parses[d->n]. */
static attn_status parse_all(const attn_dataset *d, attn_parse *parses, attn_error *err) {
    for (int i = 0; i < d->n; i++) {
        attn_error e;
        if (attn_grammar_parse(d->ids + d->offsets[i], d->lengths[i], &parses[i], &e) != ATTN_OK)
            return attn_errorf(err, ATTN_ERR_VALUE, "compose: sentence %d: %s", i + 1, e.msg);
        if (parses[i].label != d->labels[i])
            return attn_errorf(err, ATTN_ERR_VALUE,
                               "compose: sentence %d: label %d disagrees with its core clause",
                               i + 1, d->labels[i]);
    }
    return ATTN_OK;
}

/* Targets, alignments and texts of p from the sentences d. */
static attn_status fill_targets(attn_pairs *p, const attn_dataset *d, const attn_parse *parses,
                                attn_error *err) {
    const int n = d->n;
    p->tgt_lengths = malloc((size_t)n * sizeof *p->tgt_lengths);
    p->tgt_offsets = malloc(((size_t)n + 1) * sizeof *p->tgt_offsets);
    p->tgt_ids = malloc((d->offsets[n] + 1) * sizeof *p->tgt_ids);
    p->align = malloc((d->offsets[n] + 1) * sizeof *p->align);
    p->tgt_texts = calloc((size_t)n, sizeof *p->tgt_texts);
    if (!p->tgt_lengths || !p->tgt_offsets || !p->tgt_ids || !p->align || !p->tgt_texts)
        return attn_errorf(err, ATTN_ERR_NOMEM, "compose: out of memory for %d pairs", n);
    memcpy(p->tgt_ids, d->ids, d->offsets[n] * sizeof *p->tgt_ids);
    memcpy(p->tgt_offsets, d->offsets, ((size_t)n + 1) * sizeof *p->tgt_offsets);
    memcpy(p->tgt_lengths, d->lengths, (size_t)n * sizeof *p->tgt_lengths);
    for (int i = 0; i < n; i++) {
        int *al = p->align + d->offsets[i];
        for (int j = 0; j < d->lengths[i]; j++) al[j] = -1;
        al[parses[i].subject] = 1;
        al[parses[i].adjective] = 0;
        if (parses[i].negation >= 0) al[parses[i].negation] = 0;
        if (!(p->tgt_texts[i] = strdup(d->texts[i])))
            return attn_errorf(err, ATTN_ERR_NOMEM, "compose: out of memory");
    }
    return ATTN_OK;
}

attn_status attn_compose_pairs(attn_set set, int n, uint64_t seed, struct attn_pairs **out,
                               attn_error *err) {
    attn_dataset *d = NULL;
    attn_status st = attn_data_generate(set, n, seed, &d, err);
    if (st != ATTN_OK) return st;
    attn_parse *parses = malloc((size_t)d->n * sizeof *parses);
    attn_pairs *p = calloc(1, sizeof *p);
    if (!parses || !p) st = attn_errorf(err, ATTN_ERR_NOMEM, "compose: out of memory");
    if (st == ATTN_OK) st = parse_all(d, parses, err);
    if (st == ATTN_OK) {
        p->task = ATTN_TASK_COMPOSE;
        st = sources_of(d, parses, &p->src, err);
    }
    if (st == ATTN_OK) st = fill_targets(p, d, parses, err);
    free(parses);
    attn_dataset_free(d);
    if (st != ATTN_OK) {
        attn_pairs_free(p);
        return st;
    }
    *out = p;
    return ATTN_OK;
}

/* lesson_report.c -- the write-up's s3 and s4 lessons as a report: a table (or JSON) into the
 * caller's FILE and, given a directory, their charts (PNG and SVG). scaling: random N(0,1)
 * queries and keys, with and without the 1/sqrt(d_k) (attn_lesson_scaling). positions: the
 * sinusoid table, PE(p).PE(q) against q - p, and what permuting the words does to a
 * Transformer with and without positions. */
#include "attn_lab.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCALING_KEYS   16
#define SCALING_TRIALS 500
#define POS_P          81 /* the Transformer's positions, [CLS] included */
#define POS_D          32
#define PERM_SENTENCES 50

/* DIR/stem.png and DIR/stem.svg by fn(path). */
typedef attn_status (*chart_fn)(const void *ctx, const char *path, attn_error *err);
static attn_status both_formats(const char *dir, const char *stem, chart_fn fn, const void *ctx,
                                attn_error *err) {
    static const char *const ext[] = {"png", "svg"};
    for (int i = 0; i < 2; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.%s", dir, stem, ext[i]);
        attn_status st = fn(ctx, path, err);
        if (st != ATTN_OK) return st;
    }
    return ATTN_OK;
}

/* ---- scaling ----------------------------------------------------------------------------- */

static attn_status scaling_chart(const void *ctx, const char *path, attn_error *err) {
    return attn_lesson_scaling_plot(ctx, path, err);
}

/* key: x[0] and key_scaled: x[1], with %.6g. */
static void pair6(attn_json_writer *j, const char *key, const double *x) {
    char scaled[32];
    snprintf(scaled, sizeof scaled, "%s_scaled", key);
    attn_json_key(j, key);
    attn_json_digits(j, x[0], 6);
    attn_json_key(j, scaled);
    attn_json_digits(j, x[1], 6);
}

static attn_status scaling_json(FILE *out, const attn_scaling_row *rows, attn_error *err) {
    attn_json_writer j;
    attn_json_writer_init(&j, out);
    attn_json_begin_object(&j);
    attn_json_field_string(&j, "lesson", "scaling");
    attn_json_field_int(&j, "keys", SCALING_KEYS);
    attn_json_field_int(&j, "trials", SCALING_TRIALS);
    attn_json_begin_array_field(&j, "rows");
    for (int i = 0; i < ATTN_SCALING_N_DK; i++) {
        attn_json_begin_object(&j);
        attn_json_field_int(&j, "d_k", rows[i].d_k);
        pair6(&j, "std", rows[i].score_std);
        pair6(&j, "max_prob", rows[i].max_prob);
        pair6(&j, "mean_pq", rows[i].mean_pq);
        attn_json_end_object(&j);
    }
    attn_json_end_array(&j);
    attn_json_end_object(&j);
    fputc('\n', out);
    return attn_json_writer_finish(&j, err);
}

static void scaling_text(FILE *out, const attn_scaling_row *rows) {
    fprintf(out, "Why divide by sqrt(d_k): %d draws of a query and %d keys, N(0,1) entries\n\n",
            SCALING_TRIALS, SCALING_KEYS);
    fprintf(out, "|   d_k | std q.k | std q.k/sqrt(d_k) | largest p | largest p, scaled | mean "
                 "p(1-p) | mean p(1-p), scaled |\n"
                 "|------:|--------:|------------------:|----------:|------------------:|-------"
                 "-----:|--------------------:|\n");
    for (int i = 0; i < ATTN_SCALING_N_DK; i++)
        fprintf(out, "| %5d | %7.2f | %17.3f | %9.3f | %17.3f | %12.4f | %19.4f |\n", rows[i].d_k,
                rows[i].score_std[0], rows[i].score_std[1], rows[i].max_prob[0],
                rows[i].max_prob[1], rows[i].mean_pq[0], rows[i].mean_pq[1]);
    fprintf(out,
            "\nUnscaled, the scores spread like sqrt(d_k), the softmax puts nearly all weight on\n"
            "one key and p(1-p), the factor every gradient through it carries, goes to 0.\n"
            "Scaled, the spread stays 1 and the softmax stays trainable at every d_k.\n");
}

static attn_status lesson_scaling(FILE *out, const attn_lesson_opts *o, attn_error *err) {
    attn_scaling_row rows[ATTN_SCALING_N_DK];
    attn_status st = attn_lesson_scaling(SCALING_KEYS, SCALING_TRIALS, o->seed, rows, err);
    if (st != ATTN_OK) return st;
    if (o->json && (st = scaling_json(out, rows, err)) != ATTN_OK) return st;
    if (!o->json) scaling_text(out, rows);
    return o->chart_dir ? both_formats(o->chart_dir, "lesson-scaling", scaling_chart, rows, err)
                        : ATTN_OK;
}

/* ---- positions --------------------------------------------------------------------------- */

static attn_status table_chart(const void *ctx, const char *path, attn_error *err) {
    (void)ctx;
    return attn_sinusoid_plot_table(POS_P, POS_D, path, err);
}

static attn_status dots_chart(const void *ctx, const char *path, attn_error *err) {
    (void)ctx;
    return attn_sinusoid_plot_dots(POS_P, POS_D, path, err);
}

typedef struct perm_stats {
    attn_equivariance example; /* the food was not good / not the food was good */
    attn_equivariance worst;   /* largest deviations over the random permutations */
} perm_stats;

static void worst_of(attn_equivariance *w, const attn_equivariance *e) {
    w->attention_dev = fmax(w->attention_dev, e->attention_dev);
    w->grad_dev = fmax(w->grad_dev, e->grad_dev);
    w->logit_dev = fmax(w->logit_dev, e->logit_dev);
}

static attn_status permutations(attn_model *m, uint64_t seed, perm_stats *ps, attn_error *err) {
    int ids[5], n;
    const int example_perm[5] = {3, 0, 1, 2, 4}; /* "not the food was good" */
    attn_status st = attn_tokenize("the food was not good", ids, 5, &n, err);
    if (st == ATTN_OK) st = attn_equivariance_measure(m, ids, 5, example_perm, &ps->example, err);
    attn_dataset *d = NULL;
    if (st == ATTN_OK) st = attn_data_generate(ATTN_SET_PLAIN, PERM_SENTENCES, seed, &d, err);
    memset(&ps->worst, 0, sizeof ps->worst);
    attn_rng rng = attn_rng_seed(seed);
    for (int s = 0; st == ATTN_OK && s < d->n; s++) {
        int perm[ATTN_MAX_WORDS];
        const int len = d->lengths[s];
        for (int i = 0; i < len; i++) perm[i] = i;
        attn_rng_shuffle(&rng, perm, len);
        attn_equivariance e;
        st = attn_equivariance_measure(m, d->ids + d->offsets[s], len, perm, &e, err);
        if (st == ATTN_OK) worst_of(&ps->worst, &e);
    }
    attn_dataset_free(d);
    return st;
}

static void perm_row_text(FILE *out, const char *label, const perm_stats *p) {
    fprintf(out, "| %-18s | %9.3g | %9.3g | %9.3g | %+.6f vs %+.6f |\n", label,
            p->worst.attention_dev, p->worst.grad_dev, p->worst.logit_dev, (double)p->example.logit,
            (double)p->example.logit_permuted);
}

static void perm_json(attn_json_writer *j, const char *key, const perm_stats *p) {
    attn_json_begin_object_field(j, key);
    attn_json_field_double(j, "max_attention_dev", p->worst.attention_dev);
    attn_json_field_double(j, "max_grad_dev", p->worst.grad_dev);
    attn_json_field_double(j, "max_logit_dev", p->worst.logit_dev);
    attn_json_key(j, "example_logit");
    attn_json_float(j, p->example.logit);
    attn_json_key(j, "example_logit_permuted");
    attn_json_float(j, p->example.logit_permuted);
    attn_json_end_object(j);
}

/* --weights's Transformer, or an untrained one (seed); ATTN_ERR_ARG for another arch. */
static attn_status load_transformer(const attn_lesson_opts *o, attn_model **m, attn_error *err) {
    attn_status st;
    if (o->weights) {
        st = attn_weights_load_json(o->weights, m, err);
    } else {
        const attn_model_config c = attn_model_config_default(ATTN_ARCH_TRANSFORMER);
        st = attn_model_create(&c, o->seed, m, err);
    }
    if (st == ATTN_OK && attn_model_config_of(*m)->arch != ATTN_ARCH_TRANSFORMER)
        return attn_errorf(err, ATTN_ERR_ARG, "%s: positions needs a transformer", o->weights);
    return st;
}

typedef struct positions_result {
    double dots[POS_P], dev;
    perm_stats with, without;
} positions_result;

static attn_status positions_json(FILE *out, const positions_result *r, attn_error *err) {
    attn_json_writer j;
    attn_json_writer_init(&j, out);
    attn_json_begin_object(&j);
    attn_json_field_string(&j, "lesson", "positions");
    attn_json_field_int(&j, "positions", POS_P);
    attn_json_field_int(&j, "dims", POS_D);
    attn_json_begin_array_field(&j, "dot_by_offset");
    for (int d = 0; d < POS_P; d++) attn_json_double(&j, r->dots[d]);
    attn_json_end_array(&j);
    attn_json_field_double(&j, "dot_max_deviation", r->dev);
    perm_json(&j, "with_positions", &r->with);
    perm_json(&j, "without_positions", &r->without);
    attn_json_end_object(&j);
    fputc('\n', out);
    return attn_json_writer_finish(&j, err);
}

static void positions_text(FILE *out, const positions_result *r, const char *weights) {
    fprintf(out, "Sinusoid table: %d positions x %d dimensions. PE(p).PE(p+d) for offsets d:\n",
            POS_P, POS_D);
    static const int show[] = {0, 1, 2, 4, 8, 16, 32, 64, 80};
    for (size_t i = 0; i < sizeof show / sizeof show[0]; i++)
        fprintf(out, "  d = %2d: %8.4f\n", show[i], r->dots[show[i]]);
    fprintf(out,
            "largest |PE(p).PE(p+d) - PE(0).PE(d)| over every p and d: %.2e (it depends "
            "only on d)\n\n",
            r->dev);
    fprintf(out,
            "Permuting the words of a Transformer's input (%s): the largest change beyond\n"
            "the permutation over %d plain test sentences, each shuffled; and the logits of\n"
            "'the food was not good' vs 'not the food was good':\n\n",
            weights ? weights : "untrained", PERM_SENTENCES);
    fprintf(out, "| model              | attention | input grad | logit    | example logits |\n"
                 "|--------------------|----------:|-----------:|---------:|----------------|\n");
    perm_row_text(out, "with positions", &r->with);
    perm_row_text(out, "without positions", &r->without);
    fprintf(out, "\nWithout positions the model is permutation-equivariant (attention maps and\n"
                 "gradients are the same numbers, permuted) and its [CLS] output invariant: it\n"
                 "cannot tell 'not the food was good' from 'the food was not good'.\n"
                 "The small deviations left without positions are float rounding (a permuted sum "
                 "adds in another order).\n");
}

static attn_status lesson_positions(FILE *out, const attn_lesson_opts *o, attn_error *err) {
    positions_result *r = malloc(sizeof *r);
    attn_model *m = NULL;
    attn_status st = r ? attn_sinusoid_dots(POS_P, POS_D, r->dots, &r->dev, err)
                       : attn_errorf(err, ATTN_ERR_NOMEM, "out of memory");
    if (st == ATTN_OK) st = load_transformer(o, &m, err);
    if (st == ATTN_OK) st = permutations(m, o->seed, &r->with, err);
    if (st == ATTN_OK) st = attn_model_remove_positions(&m, err);
    if (st == ATTN_OK) st = permutations(m, o->seed, &r->without, err);
    attn_model_free(m);
    if (st == ATTN_OK && o->json)
        st = positions_json(out, r, err);
    else if (st == ATTN_OK)
        positions_text(out, r, o->weights);
    free(r);
    if (st == ATTN_OK && o->chart_dir)
        st = both_formats(o->chart_dir, "lesson-positions-table", table_chart, NULL, err);
    if (st == ATTN_OK && o->chart_dir)
        st = both_formats(o->chart_dir, "lesson-positions-dots", dots_chart, NULL, err);
    return st;
}

attn_status attn_lesson_write(FILE *out, const attn_lesson_opts *o, attn_error *err) {
    if (!out || !o) return attn_errorf(err, ATTN_ERR_ARG, "attn_lesson_write: NULL out or options");
    switch (o->lesson) {
    case ATTN_LESSON_SCALING:
        return lesson_scaling(out, o, err);
    case ATTN_LESSON_POSITIONS:
        return lesson_positions(out, o, err);
    }
    return attn_errorf(err, ATTN_ERR_ARG, "attn_lesson_write: unknown lesson %d", (int)o->lesson);
}

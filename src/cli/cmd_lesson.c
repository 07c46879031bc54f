/* cmd_lesson.c -- `attn lesson scaling|positions`: the write-up's s3 and s4 measured, as a
 * table (or JSON) and charts. scaling: random N(0,1) queries and keys, with and without the
 * 1/sqrt(d_k) (attn_lesson_scaling). positions: the sinusoid table, PE(p).PE(q) against
 * q - p, and what permuting the words does to a Transformer with and without positions. */
#include "attn_lab.h"
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { FORMAT_TEXT, FORMAT_JSON };
enum { LESSON_SCALING, LESSON_POSITIONS };

#define SCALING_KEYS   16
#define SCALING_TRIALS 500
#define POS_P          81 /* the Transformer's positions, [CLS] included */
#define POS_D          32
#define PERM_SENTENCES 50

static const char about[] =
    "scaling (write-up section 3): for d_k = 4 .. 512, 500 draws of a query and 16 keys\n"
    "with N(0,1) entries; the standard deviation of q.k, the mean largest softmax\n"
    "probability and the mean p(1-p) (the softmax's own gradient), with and without the\n"
    "1/sqrt(d_k).\n"
    "positions (section 4): the sinusoid table (81 positions x 32 dimensions);\n"
    "PE(p).PE(p+d) against d (the largest deviation over p printed); and a Transformer's\n"
    "response to permuted words, with its positions and without them (pos_embedding\n"
    "zeroed): the largest change of the attention maps and of the input gradient beyond\n"
    "the permutation, and of the logit ([CLS] output).";

static const char notes[] =
    "--out DIR writes the charts as PNG and SVG: lesson-scaling.*, or lesson-positions-table.*\n"
    "and lesson-positions-dots.*. positions uses --weights (default: an untrained\n"
    "Transformer, --seed) on 'the food was not good' against 'not the food was good'\n"
    "and on 50 plain test sentences, each under a random permutation.";

typedef struct lesson_args {
    int fmt;
    const char *out, *weights;
    uint64_t seed;
    FILE *text; /* where the lesson's text (or JSON) goes */
} lesson_args;

/* DIR/stem.png and DIR/stem.svg by fn(path). */
typedef attn_status (*chart_fn)(const void *ctx, const char *path, attn_error *err);
static int both_formats(const char *dir, const char *stem, chart_fn fn, const void *ctx) {
    static const char *const ext[] = {"png", "svg"};
    for (int i = 0; i < 2; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.%s", dir, stem, ext[i]);
        attn_error err;
        if (fn(ctx, path, &err) != ATTN_OK) return cli_fail("lesson", &err);
    }
    return CLI_OK;
}

/* ---- scaling ----------------------------------------------------------------------------------
 */

static attn_status scaling_chart(const void *ctx, const char *path, attn_error *err) {
    return attn_lesson_scaling_plot(ctx, path, err);
}

static int lesson_scaling(const lesson_args *a) {
    attn_scaling_row rows[ATTN_SCALING_N_DK];
    attn_error err;
    if (attn_lesson_scaling(SCALING_KEYS, SCALING_TRIALS, a->seed, rows, &err) != ATTN_OK)
        return cli_fail("lesson", &err);
    if (a->fmt == FORMAT_JSON) {
        fprintf(a->text, "{\"lesson\": \"scaling\", \"keys\": %d, \"trials\": %d, \"rows\": [",
                SCALING_KEYS, SCALING_TRIALS);
        for (int i = 0; i < ATTN_SCALING_N_DK; i++)
            fprintf(a->text,
                    "%s{\"d_k\": %d, \"std\": %.6g, \"std_scaled\": %.6g, \"max_prob\": %.6g, "
                    "\"max_prob_scaled\": %.6g, \"mean_pq\": %.6g, \"mean_pq_scaled\": %.6g}",
                    i ? ", " : "", rows[i].d_k, rows[i].score_std[0], rows[i].score_std[1],
                    rows[i].max_prob[0], rows[i].max_prob[1], rows[i].mean_pq[0],
                    rows[i].mean_pq[1]);
        fprintf(a->text, "]}\n");
    } else {
        fprintf(a->text,
                "Why divide by sqrt(d_k): %d draws of a query and %d keys, N(0,1) entries\n\n",
                SCALING_TRIALS, SCALING_KEYS);
        fprintf(a->text,
                "|   d_k | std q.k | std q.k/sqrt(d_k) | largest p | largest p, scaled | mean "
                "p(1-p) | mean p(1-p), scaled |\n"
                "|------:|--------:|------------------:|----------:|------------------:|-------"
                "-----:|--------------------:|\n");
        for (int i = 0; i < ATTN_SCALING_N_DK; i++)
            fprintf(a->text, "| %5d | %7.2f | %17.3f | %9.3f | %17.3f | %12.4f | %19.4f |\n",
                    rows[i].d_k, rows[i].score_std[0], rows[i].score_std[1], rows[i].max_prob[0],
                    rows[i].max_prob[1], rows[i].mean_pq[0], rows[i].mean_pq[1]);
        fprintf(
            a->text,
            "\nUnscaled, the scores spread like sqrt(d_k), the softmax puts nearly all weight on\n"
            "one key and p(1-p), the factor every gradient through it carries, goes to 0.\n"
            "Scaled, the spread stays 1 and the softmax stays trainable at every d_k.\n");
    }
    return a->out ? both_formats(a->out, "lesson-scaling", scaling_chart, rows) : CLI_OK;
}

/* ---- positions --------------------------------------------------------------------------------
 */

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

static void print_perm_text(FILE *out, const char *label, const perm_stats *p) {
    fprintf(out, "| %-18s | %9.3g | %9.3g | %9.3g | %+.6f vs %+.6f |\n", label,
            p->worst.attention_dev, p->worst.grad_dev, p->worst.logit_dev, (double)p->example.logit,
            (double)p->example.logit_permuted);
}

static void print_perm_json(FILE *out, const char *key, const perm_stats *p) {
    fprintf(out,
            ", \"%s\": {\"max_attention_dev\": %.9g, \"max_grad_dev\": %.9g, \"max_logit_dev\": "
            "%.9g, \"example_logit\": %.9g, \"example_logit_permuted\": %.9g}",
            key, p->worst.attention_dev, p->worst.grad_dev, p->worst.logit_dev,
            (double)p->example.logit, (double)p->example.logit_permuted);
}

static int load_transformer(const lesson_args *a, attn_model **m) {
    attn_error err;
    attn_status st;
    if (a->weights) {
        st = attn_weights_load_json(a->weights, m, &err);
    } else {
        const attn_model_config c = attn_model_config_default(ATTN_ARCH_TRANSFORMER);
        st = attn_model_create(&c, a->seed, m, &err);
    }
    if (st != ATTN_OK) return cli_fail("lesson", &err);
    if (attn_model_config_of(*m)->arch != ATTN_ARCH_TRANSFORMER)
        return cli_usage_error("lesson", "--weights %s: positions needs a transformer", a->weights);
    return CLI_OK;
}

static int lesson_positions(const lesson_args *a) {
    double dots[POS_P], dev;
    attn_error err;
    attn_model *m = NULL;
    perm_stats with, without;
    int rc = attn_sinusoid_dots(POS_P, POS_D, dots, &dev, &err) == ATTN_OK
                 ? CLI_OK
                 : cli_fail("lesson", &err);
    if (rc == CLI_OK) rc = load_transformer(a, &m);
    attn_set_num_threads(1);
    if (rc == CLI_OK && (permutations(m, a->seed, &with, &err) != ATTN_OK ||
                         attn_model_remove_positions(&m, &err) != ATTN_OK ||
                         permutations(m, a->seed, &without, &err) != ATTN_OK))
        rc = cli_fail("lesson", &err);
    attn_model_free(m);
    if (rc != CLI_OK) return rc;
    if (a->fmt == FORMAT_JSON) {
        fprintf(a->text,
                "{\"lesson\": \"positions\", \"positions\": %d, \"dims\": %d, \"dot_by_offset\": [",
                POS_P, POS_D);
        for (int d = 0; d < POS_P; d++) fprintf(a->text, "%s%.9g", d ? ", " : "", dots[d]);
        fprintf(a->text, "], \"dot_max_deviation\": %.9g", dev);
        print_perm_json(a->text, "with_positions", &with);
        print_perm_json(a->text, "without_positions", &without);
        fprintf(a->text, "}\n");
    } else {
        fprintf(a->text,
                "Sinusoid table: %d positions x %d dimensions. PE(p).PE(p+d) for offsets d:\n",
                POS_P, POS_D);
        static const int show[] = {0, 1, 2, 4, 8, 16, 32, 64, 80};
        for (size_t i = 0; i < sizeof show / sizeof show[0]; i++)
            fprintf(a->text, "  d = %2d: %8.4f\n", show[i], dots[show[i]]);
        fprintf(a->text,
                "largest |PE(p).PE(p+d) - PE(0).PE(d)| over every p and d: %.2e (it depends "
                "only on d)\n\n",
                dev);
        fprintf(a->text,
                "Permuting the words of a Transformer's input (%s): the largest change beyond\n"
                "the permutation over %d plain test sentences, each shuffled; and the logits of\n"
                "'the food was not good' vs 'not the food was good':\n\n",
                a->weights ? a->weights : "untrained", PERM_SENTENCES);
        fprintf(a->text,
                "| model              | attention | input grad | logit    | example logits |\n"
                "|--------------------|----------:|-----------:|---------:|----------------|\n");
        print_perm_text(a->text, "with positions", &with);
        print_perm_text(a->text, "without positions", &without);
        fprintf(a->text,
                "\nWithout positions the model is permutation-equivariant (attention maps and\n"
                "gradients are the same numbers, permuted) and its [CLS] output invariant: it\n"
                "cannot tell 'not the food was good' from 'the food was not good'.\n"
                "The small deviations left without positions are float rounding (a permuted sum "
                "adds in another order).\n");
    }
    if (a->out) rc = both_formats(a->out, "lesson-positions-table", table_chart, NULL);
    if (rc == CLI_OK && a->out)
        rc = both_formats(a->out, "lesson-positions-dots", dots_chart, NULL);
    return rc;
}

int cli_lesson_report(FILE *out, const char *lesson, bool json, const char *out_dir,
                      const char *weights, uint64_t seed) {
    const lesson_args a = {json ? FORMAT_JSON : FORMAT_TEXT, out_dir, weights, seed, out};
    if (strcmp(lesson, "scaling") == 0) return lesson_scaling(&a);
    if (strcmp(lesson, "positions") == 0) return lesson_positions(&a);
    return cli_usage_error("lesson", "unknown lesson '%s' (scaling or positions)", lesson);
}

int cmd_lesson(int argc, char **argv) {
    lesson_args a = {FORMAT_TEXT, NULL, NULL, 1, stdout};
    cli_opt opts[] = {
        {"--format", "F", CLI_OPT_CHOICE, &a.fmt, .choices = "text|json", .help = "text or json"},
        {"--out", "DIR", CLI_OPT_STR, &a.out, .def = "", .help = "write the charts into DIR"},
        {"--weights", "W.json", CLI_OPT_STR, &a.weights, .def = "untrained",
         .help = "positions: the Transformer to permute"},
        {"--seed", "S", CLI_OPT_U64, &a.seed,
         .help = "random draws (and the untrained Transformer)"},
    };
    cli_spec spec = {"lesson", "scaling|positions [--format F] [--out DIR] [--weights W.json]",
                     about,    "LESSON",
                     notes,    opts,
                     4};
    char *pos[8] = {0};
    char **lessons = argc < 8 ? pos : calloc((size_t)argc, sizeof *lessons);
    if (!lessons) return cli_runtime_error("lesson", "out of memory");
    int n = 0, rc = cli_parse(&spec, argc, argv, lessons, &n);
    int which = -1;
    if (rc < 0 && n != 1) rc = cli_usage_error("lesson", "name one lesson: scaling or positions");
    if (rc < 0 && strcmp(lessons[0], "scaling") == 0) which = LESSON_SCALING;
    if (rc < 0 && strcmp(lessons[0], "positions") == 0) which = LESSON_POSITIONS;
    if (rc < 0 && which < 0)
        rc = cli_usage_error("lesson", "unknown lesson '%s' (scaling or positions)", lessons[0]);
    if (rc < 0 && a.out && cli_make_dir("lesson", "--out", a.out) != CLI_OK) rc = CLI_ERROR;
    if (rc < 0 && a.out) {
        char probe[4096];
        snprintf(probe, sizeof probe, "%s/lesson.png", a.out);
        if (cli_check_dest("lesson", "--out", probe) != CLI_OK) rc = CLI_ERROR;
    }
    if (rc < 0) rc = which == LESSON_SCALING ? lesson_scaling(&a) : lesson_positions(&a);
    if (lessons != pos) free(lessons);
    return rc;
}

/* cmd_saliency.c -- `attn saliency`: the write-up's s1 chart, gradient versus distance
 * (attn_saliency_curve_compute), for untrained models (--model, --seed) or given weights, one
 * curve per model, as a table, JSON or CSV, and optionally a log-scale chart. */
#include "attn_lab.h"
#include "attn_plot.h"
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { FORMAT_TABLE, FORMAT_JSON, FORMAT_CSV };
#define MAX_CURVES 16

static const char about[] =
    "The gradient-versus-distance experiment: for n random sentences of T words, the ratio\n"
    "|d logit / d x_(T-1-k)| / |d logit / d x_(T-1)| against the distance k from the last\n"
    "word (x_i: the vector entering the first layer for word i); median and 10th/90th\n"
    "percentiles per distance. Models are untrained (--model, initialised with --seed, as\n"
    "`attn train --epochs 0` initialises them) or loaded (--weights); several at once give\n"
    "several curves in one chart.";

static const char notes[] =
    "--model and --weights take one name or a comma-separated list (both may be given;\n"
    "--model curves come first). The sentences are drawn uniformly from the 89 words with\n"
    "--seed, the same for every model. Table: per distance, each model's median\n"
    "[p10, p90]; CSV: model,distance,median,p10,p90; JSON: {\"models\": [{\"name\", \"T\",\n"
    "\"n\", \"distance\", \"median\", \"p10\", \"p90\"}]}. --plot FILE.png|FILE.svg draws the\n"
    "medians with their 10-90 % bands on a log scale.";

typedef struct curve_set {
    int n;
    char *names[MAX_CURVES];
    attn_saliency_curve *c[MAX_CURVES];
} curve_set;

static void set_free(curve_set *s) {
    for (int i = 0; i < s->n; i++) {
        free(s->names[i]);
        attn_saliency_curve_free(s->c[i]);
    }
}

/* "weights/lstm-seed1.json" -> "lstm-seed1". */
static char *name_of_file(const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    if (n > 5 && strcmp(base + n - 5, ".json") == 0) n -= 5;
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, base, n);
        s[n] = '\0';
    }
    return s;
}

static int add_curve(curve_set *s, attn_model *m, char *name, const attn_saliency_opts *o) {
    attn_error err;
    if (!name) {
        attn_model_free(m);
        return cli_runtime_error("saliency", "out of memory");
    }
    s->names[s->n] = name;
    attn_status st = attn_saliency_curve_compute(m, o, &s->c[s->n], &err);
    s->n++;
    attn_model_free(m);
    if (st != ATTN_OK) {
        cli_message("saliency", "%s: %s", name, err.msg);
        return CLI_ERROR;
    }
    return CLI_OK;
}

/* Each comma-separated item of list: a model name (models) or a weights file. */
static int add_list(curve_set *s, const char *list, bool models, const attn_saliency_opts *o) {
    char *copy = strdup(list);
    if (!copy) return cli_runtime_error("saliency", "out of memory");
    int rc = CLI_OK;
    for (char *save = NULL, *item = strtok_r(copy, ",", &save); item && rc == CLI_OK;
         item = strtok_r(NULL, ",", &save)) {
        if (s->n == MAX_CURVES) {
            rc = cli_usage_error("saliency", "at most %d models", MAX_CURVES);
            break;
        }
        attn_model *m = NULL;
        attn_error err;
        char name[160];
        if (models) {
            attn_arch arch;
            if (attn_arch_from_name(item, &arch, &err) != ATTN_OK) {
                rc = cli_usage_error("saliency", "--model: %s", err.msg);
                break;
            }
            const attn_model_config cfg = attn_model_config_default(arch);
            if (attn_model_create(&cfg, o->seed, &m, &err) != ATTN_OK) {
                rc = cli_fail("saliency", &err);
                break;
            }
            snprintf(name, sizeof name, "%s (untrained, seed %llu)", item,
                     (unsigned long long)o->seed);
            rc = add_curve(s, m, strdup(name), o);
        } else {
            if (attn_weights_load_json(item, &m, &err) != ATTN_OK) {
                rc = cli_fail("saliency", &err);
                break;
            }
            rc = add_curve(s, m, name_of_file(item), o);
        }
    }
    free(copy);
    return rc;
}

static void print_table(const curve_set *s) {
    printf("gradient ratio |d logit/d x(T-1-k)| / |d logit/d x(T-1)|: median [p10, p90] over %d "
           "sentences of %d words\n",
           s->c[0]->n, s->c[0]->T);
    /* each column as wide as its name: a header is never cut */
    int width[MAX_CURVES];
    printf("%4s", "k");
    for (int i = 0; i < s->n; i++) {
        int len = (int)strlen(s->names[i]);
        width[i] = len > 30 ? len : 30;
        printf("  %-*s", width[i], s->names[i]);
    }
    putchar('\n');
    for (int k = 0; k < s->c[0]->T; k++) {
        printf("%4d", k);
        for (int i = 0; i < s->n; i++) {
            char cell[64];
            snprintf(cell, sizeof cell, "%.2e [%.1e, %.1e]", s->c[i]->median[k], s->c[i]->p10[k],
                     s->c[i]->p90[k]);
            printf("  %-*s", width[i], cell);
        }
        putchar('\n');
    }
}

static void json_array(attn_json_writer *j, const char *key, const double *v, int n) {
    attn_json_begin_array_field(j, key);
    for (int k = 0; k < n; k++) attn_json_double(j, v[k]);
    attn_json_end_array(j);
}

static void print_json(const curve_set *s) {
    attn_json_writer j;
    attn_json_writer_init(&j, stdout);
    attn_json_begin_object(&j);
    attn_json_begin_array_field(&j, "models");
    for (int i = 0; i < s->n; i++) {
        const attn_saliency_curve *c = s->c[i];
        attn_json_begin_object(&j);
        attn_json_field_string(&j, "name", s->names[i]);
        attn_json_field_int(&j, "T", c->T);
        attn_json_field_int(&j, "n", c->n);
        attn_json_begin_array_field(&j, "distance");
        for (int k = 0; k < c->T; k++) attn_json_int(&j, k);
        attn_json_end_array(&j);
        json_array(&j, "median", c->median, c->T);
        json_array(&j, "p10", c->p10, c->T);
        json_array(&j, "p90", c->p90, c->T);
        attn_json_end_object(&j);
    }
    attn_json_end_array(&j);
    attn_json_end_object(&j);
    attn_json_writer_finish(&j, NULL); /* stdout's errors are reported at exit, as before */
    putchar('\n');
}

static void print_csv(const curve_set *s) {
    printf("model,distance,median,p10,p90\n");
    for (int i = 0; i < s->n; i++)
        for (int k = 0; k < s->c[i]->T; k++) {
            /* names hold no comma or quote when they come from --model; quote them anyway */
            putchar('"');
            for (const char *p = s->names[i]; *p; p++) {
                if (*p == '"') putchar('"');
                putchar(*p);
            }
            printf("\",%d,%.9g,%.9g,%.9g\n", k, s->c[i]->median[k], s->c[i]->p10[k],
                   s->c[i]->p90[k]);
        }
}

int cmd_saliency(int argc, char **argv) {
    const char *weights = NULL, *models = NULL, *plot = NULL;
    uint64_t seed = 1;
    int T = ATTN_SALIENCY_DEFAULT_T, n = ATTN_SALIENCY_DEFAULT_N, fmt = FORMAT_TABLE;
    cli_opt opts[] = {
        {"--weights", "W[,...]", CLI_OPT_STR, &weights, .def = "",
         .help = "trained (or any) weights, one curve each"},
        {"--model", "M[,...]", CLI_OPT_STR, &models, .def = "",
         .help = "rnn, lstm, gru or transformer, untrained (initialised with --seed)"},
        {"--seed", "S", CLI_OPT_U64, &seed,
         .help = "initialisation of --model, and the random sentences"},
        {"--T", "N", CLI_OPT_INT, &T, 1, ATTN_MAX_WORDS, .help = "words per sentence"},
        {"--n", "N", CLI_OPT_INT, &n, 1, 100000, .help = "sentences"},
        {"--format", "F", CLI_OPT_CHOICE, &fmt, .choices = "table|json|csv",
         .help = "output format; see below"},
        {"--plot", "FILE", CLI_OPT_STR, &plot, .def = "",
         .help = "also draw the chart (.png or .svg; needs gnuplot)"},
    };
    cli_spec spec = CLI_SPEC("saliency",
                             "(--weights W[,...] | --model M[,...] [--seed S]) [--T N] [--n N]"
                             " [--format F] [--plot FILE]",
                             about, NULL, notes, opts);
    int rc = cli_parse(&spec, argc, argv, NULL, NULL);
    if (rc >= 0) return rc;
    if (!weights && !models)
        return cli_usage_error("saliency", "give --model M (untrained) or --weights W");
    if (plot && (rc = cli_check_plot_name("saliency", "--plot", plot)) != CLI_OK) return rc;
    attn_set_num_threads(1);
    const attn_saliency_opts o = {.T = T, .n = n, .seed = seed};
    curve_set s = {0};
    rc = models ? add_list(&s, models, true, &o) : CLI_OK;
    if (rc == CLI_OK && weights) rc = add_list(&s, weights, false, &o);
    if (rc == CLI_OK && s.n == 0) rc = cli_usage_error("saliency", "no model named");
    if (rc == CLI_OK) {
        if (fmt == FORMAT_JSON)
            print_json(&s);
        else if (fmt == FORMAT_CSV)
            print_csv(&s);
        else
            print_table(&s);
    }
    if (rc == CLI_OK && plot) {
        attn_error err;
        char literal[MAX_CURVES][256]; /* file names are the user's: not enhanced-text markup */
        const char *names[MAX_CURVES];
        for (int i = 0; i < s.n; i++) {
            attn_plot_literal(s.names[i], literal[i], sizeof literal[i]);
            names[i] = literal[i];
        }
        if (attn_saliency_plot((const attn_saliency_curve *const *)s.c, names, s.n, NULL, plot,
                               &err) != ATTN_OK)
            rc = cli_fail("saliency", &err);
    }
    set_free(&s);
    return rc;
}

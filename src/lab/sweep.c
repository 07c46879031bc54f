/* sweep.c -- grids of training runs (attn_sweep.h): the grid and its checks, and one point's run
 * (train on the seed's data, evaluate on the seed's four test sets). The summary over seeds and
 * the chart are in sweep_summary.c. */
#include "attn_plot.h"
#include "attn_sweep.h"
#include "experiments_internal.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum kind { K_INT, K_REAL, K_NORM, K_ACT, K_POS } kind;
typedef enum applies { ANY, TRANSFORMER, RECURRENT } applies;

typedef struct option {
    const char *name;
    kind kind;
    int lo, hi; /* K_INT */
    applies to;
} option;

static const option options[] = {
    {"embed-dim", K_INT, 1, 1 << 16, ANY},
    {"hidden", K_INT, 1, 1 << 16, RECURRENT},
    {"heads", K_INT, 1, 1 << 12, TRANSFORMER},
    {"ffn-dim", K_INT, 1, 1 << 18, TRANSFORMER},
    {"layers", K_INT, 1, 64, ANY},
    {"max-len", K_INT, 2, 1 << 16, TRANSFORMER},
    {"norm", K_NORM, 0, 0, TRANSFORMER},
    {"activation", K_ACT, 0, 0, TRANSFORMER},
    {"pos", K_POS, 0, 0, TRANSFORMER},
    {"seed", K_INT, 0, INT_MAX, ANY},
    {"epochs", K_INT, 1, 100000, ANY},
    {"batch", K_INT, 1, 1 << 16, ANY},
    {"lr", K_REAL, 0, 0, ANY},
    {"warmup", K_INT, 0, ATTN_MAX_WARMUP, ANY},
    {"train-size", K_INT, 2, ATTN_DATA_MAX_N, ANY},
    {"holdout", K_INT, 0, ATTN_DATA_MAX_N, ANY},
};
#define N_OPTIONS (int)(sizeof options / sizeof options[0])
#define NAMES_HELP                                                                                 \
    "embed-dim, hidden, heads, ffn-dim, layers, max-len, norm, activation, pos, "                  \
    "seed, epochs, batch, lr, warmup, train-size or holdout"

static const option *find_option(const char *name) {
    for (int i = 0; i < N_OPTIONS; i++)
        if (strcmp(options[i].name, name) == 0) return &options[i];
    return NULL;
}

static const char *choice_name(kind k, int v) {
    if (k == K_NORM) return v == ATTN_NORM_PRE ? "pre" : "post";
    if (k == K_ACT) return v == ATTN_ACT_GELU ? "gelu" : "relu";
    return attn_pos_name((attn_pos)v);
}

static int choice_value(kind k, const char *text) {
    if (k == K_NORM)
        return strcmp(text, "pre") == 0    ? ATTN_NORM_PRE
               : strcmp(text, "post") == 0 ? ATTN_NORM_POST
                                           : -1;
    if (k == K_ACT)
        return strcmp(text, "relu") == 0   ? ATTN_ACT_RELU
               : strcmp(text, "gelu") == 0 ? ATTN_ACT_GELU
                                           : -1;
    return attn_pos_from_name(text);
}

static const char *choices_help(kind k) {
    return k == K_NORM  ? "post or pre"
           : k == K_ACT ? "relu or gelu"
                        : "learned, sinusoidal, none, rope or alibi";
}

/* A whole-string integer into *v; false when not one. */
static bool parse_long(const char *text, long *v) {
    char *end;
    errno = 0;
    *v = strtol(text, &end, 10);
    return end != text && *end == 0 && errno == 0;
}

/* One item of a list ("16", "1..10", "pre", "0.001") appended to ax. */
static attn_status add_item(attn_sweep_axis *ax, const option *o, const char *item,
                            attn_error *err) {
    long a = 0, b = 0;
    const char *dots = strstr(item, "..");
    if (dots && o->kind != K_INT)
        return attn_errorf(err, ATTN_ERR_ARG, "%s: a range (%s) needs integer values", o->name,
                           item);
    if (dots) {
        char first[32];
        size_t len = (size_t)(dots - item);
        if (len >= sizeof first || !snprintf(first, sizeof first, "%.*s", (int)len, item) ||
            !parse_long(first, &a) || !parse_long(dots + 2, &b))
            return attn_errorf(err, ATTN_ERR_ARG, "%s: bad range '%s' (expected A..B, integers)",
                               o->name, item);
        if (a > b)
            return attn_errorf(err, ATTN_ERR_ARG, "%s: empty range '%s' (%ld > %ld)", o->name, item,
                               a, b);
    } else if (o->kind == K_INT) {
        if (!parse_long(item, &a))
            return attn_errorf(err, ATTN_ERR_ARG, "%s: '%s' is not an integer", o->name, item);
        b = a;
    }
    if (o->kind == K_INT && (a < o->lo || b > o->hi))
        return attn_errorf(err, ATTN_ERR_ARG, "%s: '%s' is outside %d..%d", o->name, item, o->lo,
                           o->hi);
    long count = o->kind == K_INT ? b - a + 1 : 1;
    if (ax->n + count > ATTN_SWEEP_MAX_POINTS)
        return attn_errorf(err, ATTN_ERR_ARG, "%s: more than %d values", o->name,
                           ATTN_SWEEP_MAX_POINTS);
    double *grown = realloc(ax->values, (size_t)(ax->n + count) * sizeof *grown);
    if (!grown) return attn_errorf(err, ATTN_ERR_NOMEM, "out of memory");
    ax->values = grown;
    if (o->kind == K_INT) {
        for (long v = a; v <= b; v++) ax->values[ax->n++] = (double)v;
    } else if (o->kind == K_REAL) {
        char *end;
        double v = strtod(item, &end);
        if (end == item || *end || !isfinite(v) || v <= 0 || v > 1e3) /* attn train's --lr */
            return attn_errorf(err, ATTN_ERR_ARG, "%s: '%s' is not a number in (0, 1000]", o->name,
                               item);
        ax->values[ax->n++] = v;
    } else {
        int v = choice_value(o->kind, item);
        if (v < 0)
            return attn_errorf(err, ATTN_ERR_ARG, "%s: unknown value '%s' (expected %s)", o->name,
                               item, choices_help(o->kind));
        ax->values[ax->n++] = v;
    }
    for (int i = 0; i < ax->n - (int)count; i++)
        for (int j = ax->n - (int)count; j < ax->n; j++)
            if (ax->values[i] == ax->values[j])
                return attn_errorf(err, ATTN_ERR_ARG, "%s: value '%s' given twice", o->name, item);
    return ATTN_OK;
}

/* "name=v1,v2,..." into a new axis of s. */
static attn_status add_axis(attn_sweep *s, const char *word, bool fixed, attn_error *err) {
    const char *what = fixed ? "set" : "grid";
    const char *eq = strchr(word, '=');
    if (!eq || eq == word)
        return attn_errorf(err, ATTN_ERR_ARG, "%s: '%s' is not NAME=VALUES", what, word);
    char name[32];
    if ((size_t)(eq - word) >= sizeof name)
        return attn_errorf(err, ATTN_ERR_ARG, "%s: unknown option '%.*s' (the options: %s)", what,
                           (int)(eq - word), word, NAMES_HELP);
    snprintf(name, sizeof name, "%.*s", (int)(eq - word), word);
    const option *o = find_option(name);
    if (!o)
        return attn_errorf(err, ATTN_ERR_ARG, "%s: unknown option '%s' (the options: %s)", what,
                           name, NAMES_HELP);
    const bool tr = s->arch == ATTN_ARCH_TRANSFORMER;
    if ((o->to == TRANSFORMER && !tr) || (o->to == RECURRENT && tr))
        return attn_errorf(err, ATTN_ERR_ARG, "%s: %s does not apply to --model %s", what, name,
                           attn_arch_name(s->arch));
    for (int i = 0; i < s->n_axes; i++)
        if (strcmp(s->axes[i].name, o->name) == 0)
            return attn_errorf(err, ATTN_ERR_ARG, "%s: %s given twice%s", what, name,
                               s->axes[i].fixed != fixed ? " (in the grid and as a setting)" : "");
    if (s->n_axes == ATTN_SWEEP_MAX_AXES)
        return attn_errorf(err, ATTN_ERR_ARG, "%s: more than %d options", what,
                           ATTN_SWEEP_MAX_AXES);
    attn_sweep_axis *ax = &s->axes[s->n_axes++];
    *ax = (attn_sweep_axis){o->name, 0, NULL, fixed};
    const char *list = eq + 1;
    if (!*list) return attn_errorf(err, ATTN_ERR_ARG, "%s: %s has no values", what, name);
    for (const char *p = list;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char item[64];
        if (len == 0)
            return attn_errorf(err, ATTN_ERR_ARG, "%s: %s has an empty value in '%s'", what, name,
                               list);
        if (len >= sizeof item)
            return attn_errorf(err, ATTN_ERR_ARG, "%s: %s: value too long", what, name);
        snprintf(item, sizeof item, "%.*s", (int)len, p);
        attn_status st = add_item(ax, o, item, err);
        if (st) return st;
        if (!comma) break;
        p = comma + 1;
    }
    if (fixed && ax->n != 1)
        return attn_errorf(err, ATTN_ERR_ARG, "set: %s takes one value (sweep it with the grid)",
                           name);
    return ATTN_OK;
}

/* Every white-space separated word of text as an axis. */
static attn_status add_axes(attn_sweep *s, const char *text, bool fixed, attn_error *err) {
    char *copy = strdup(text ? text : "");
    if (!copy) return attn_errorf(err, ATTN_ERR_NOMEM, "out of memory");
    attn_status st = ATTN_OK;
    char *save = NULL;
    for (char *w = strtok_r(copy, " \t\n", &save); w && !st; w = strtok_r(NULL, " \t\n", &save))
        st = add_axis(s, w, fixed, err);
    free(copy);
    return st;
}

int attn_sweep_n_points(const attn_sweep *s) {
    return s->n_points;
}

int attn_sweep_value_index(const attn_sweep *s, int point, int axis) {
    if (s->axes[axis].fixed) return 0;
    int stride = 1;
    for (int a = axis + 1; a < s->n_axes; a++)
        if (!s->axes[a].fixed) stride *= s->axes[a].n;
    return point / stride % s->axes[axis].n;
}

void attn_sweep_value_text(const attn_sweep *s, int axis, int k, char *buf, size_t size) {
    const option *o = find_option(s->axes[axis].name);
    const double v = s->axes[axis].values[k];
    if (o->kind == K_INT)
        snprintf(buf, size, "%.0f", v);
    else if (o->kind == K_REAL)
        snprintf(buf, size, "%.17g", v);
    else
        snprintf(buf, size, "%s", choice_name(o->kind, (int)v));
    if (o->kind == K_REAL) { /* the shortest text that reads back as v */
        for (int prec = 1; prec <= 17; prec++) {
            snprintf(buf, size, "%.*g", prec, v);
            if (strtod(buf, NULL) == v) break;
        }
    }
}

void attn_sweep_point_name(const attn_sweep *s, int point, char *buf, size_t size) {
    size_t used = 0;
    buf[0] = 0;
    for (int a = 0; a < s->n_axes && used < size; a++) {
        if (s->axes[a].fixed) continue;
        char v[64];
        attn_sweep_value_text(s, a, attn_sweep_value_index(s, point, a), v, sizeof v);
        used += (size_t)snprintf(buf + used, size - used, "%s%s=%s", used ? " " : "",
                                 s->axes[a].name, v);
    }
}

static void apply(const char *name, double v, attn_model_config *mc, attn_train_config *tc,
                  int *train_size) {
    const int i = v >= INT_MIN && v <= INT_MAX ? (int)v : 0; /* lr: any double; ints in range */
    if (!strcmp(name, "embed-dim")) mc->embed_dim = i;
    if (!strcmp(name, "hidden")) mc->hidden_size = i;
    if (!strcmp(name, "heads")) mc->n_heads = i;
    if (!strcmp(name, "ffn-dim")) mc->ffn_dim = i;
    if (!strcmp(name, "layers")) mc->n_layers = i;
    if (!strcmp(name, "max-len")) mc->max_len = i;
    if (!strcmp(name, "norm")) mc->norm = (attn_norm)i;
    if (!strcmp(name, "activation")) mc->activation = (attn_activation)i;
    if (!strcmp(name, "pos")) mc->pos = (attn_pos)i;
    if (!strcmp(name, "seed")) tc->seed = (uint64_t)i;
    if (!strcmp(name, "epochs")) tc->epochs = i;
    if (!strcmp(name, "batch")) tc->batch_size = i;
    if (!strcmp(name, "lr")) tc->adam.lr = v;
    if (!strcmp(name, "warmup")) tc->warmup = i;
    if (!strcmp(name, "train-size")) *train_size = i;
    if (!strcmp(name, "holdout")) tc->holdout = i;
}

attn_status attn_sweep_point_config(const attn_sweep *s, int point, attn_model_config *mc,
                                    attn_train_config *tc, int *train_size, attn_error *err) {
    *mc = attn_model_config_default(s->arch);
    *tc = attn_train_config_default();
    tc->seed = 1;
    *train_size = ATTN_TRAIN_DEFAULT_N;
    for (int a = 0; a < s->n_axes; a++)
        apply(s->axes[a].name, s->axes[a].values[attn_sweep_value_index(s, point, a)], mc, tc,
              train_size);
    char name[512];
    attn_sweep_point_name(s, point, name, sizeof name);
    attn_error e = {0};
    attn_status st = attn_model_config_validate(mc, &e);
    if (!st && mc->arch == ATTN_ARCH_TRANSFORMER && mc->embed_dim % mc->n_heads != 0)
        st = attn_errorf(&e, ATTN_ERR_VALUE, "heads %d does not divide embed-dim %d", mc->n_heads,
                         mc->embed_dim);
    if (!st) st = attn_train_config_validate(tc, *train_size + tc->holdout, &e);
    if (st)
        return attn_errorf(err, ATTN_ERR_ARG, "point %d (%s): %s", point + 1,
                           name[0] ? name : "the settings", e.msg);
    return ATTN_OK;
}

void attn_sweep_free(attn_sweep *s) {
    if (!s) return;
    for (int a = 0; a < s->n_axes; a++) free(s->axes[a].values);
    free(s);
}

attn_status attn_sweep_create(attn_arch arch, const char *grid, const char *set, attn_sweep **out,
                              attn_error *err) {
    *out = NULL;
    attn_sweep *s = calloc(1, sizeof *s);
    if (!s) return attn_errorf(err, ATTN_ERR_NOMEM, "out of memory");
    *s = (attn_sweep){.arch = arch, .test_size = ATTN_TEST_DEFAULT_N, .eval_batch = 1};
    attn_status st = add_axes(s, grid, false, err);
    if (!st && s->n_axes == 0)
        st = attn_errorf(err, ATTN_ERR_ARG, "grid: no option given (e.g. 'heads=1,2 seed=1..3')");
    if (!st) st = add_axes(s, set, true, err);
    long points = 1;
    for (int a = 0; !st && a < s->n_axes; a++) {
        points *= s->axes[a].n;
        if (points > ATTN_SWEEP_MAX_POINTS)
            st = attn_errorf(err, ATTN_ERR_ARG, "grid: more than %d points", ATTN_SWEEP_MAX_POINTS);
    }
    s->n_points = (int)points;
    attn_model_config mc;
    attn_train_config tc;
    int n;
    for (int i = 0; !st && i < s->n_points; i++)
        st = attn_sweep_point_config(s, i, &mc, &tc, &n, err);
    if (st) {
        attn_sweep_free(s);
        return st;
    }
    *out = s;
    return ATTN_OK;
}

attn_status attn_sweep_run_point(const attn_sweep *s, int point, attn_sweep_result *out,
                                 attn_error *err) {
    attn_model_config mc;
    attn_train_config tc;
    int n_train;
    memset(out, 0, sizeof *out);
    attn_status st = attn_sweep_point_config(s, point, &mc, &tc, &n_train, err);
    attn_dataset *train = NULL, *heldout = NULL;
    attn_model *m = NULL;
    attn_trainer *t = NULL;
    const double t0 = attn_seconds();
    if (!st) st = attn_data_generate(ATTN_SET_TRAIN, n_train, tc.seed, &train, err);
    if (!st && tc.holdout > 0)
        st = attn_data_generate(ATTN_SET_HOLDOUT, tc.holdout, tc.seed, &heldout, err);
    if (!st) st = attn_model_create(&mc, tc.seed, &m, err);
    if (!st) st = attn_trainer_create_heldout(m, train, heldout, &tc, &t, err);
    if (!st) st = attn_trainer_run(t, NULL, err);
    attn_trainer_free(t);
    attn_dataset_free(train);
    attn_dataset_free(heldout);
    const double t1 = attn_seconds();
    attn_dataset *tests[ATTN_N_TEST_SETS] = {NULL};
    if (!st) st = exp_test_sets(s->test_size, tc.seed, tests, err);
    for (int k = 0; !st && k < ATTN_N_TEST_SETS; k++)
        st = attn_evaluate(m, tests[k], 0, tests[k]->n, s->eval_batch, &out->acc[k], err);
    exp_test_sets_free(tests);
    if (m) out->n_params = attn_model_n_params(m);
    attn_model_free(m);
    out->train_s = t1 - t0;
    out->eval_s = attn_seconds() - t1;
    return st;
}

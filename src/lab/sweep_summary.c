/* sweep_summary.c -- a grid's results summarised over seeds (the points that differ only in the
 * seed form a group: mean, spread, smallest and largest accuracy per test set) and the chart of
 * accuracy against one option (attn_sweep.h). The grid and the runs are in sweep.c. */
#include "attn_plot.h"
#include "attn_sweep.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The axis that holds the seed when it is swept, else -1. */
static int seed_axis(const attn_sweep *s) {
    for (int a = 0; a < s->n_axes; a++)
        if (!s->axes[a].fixed && strcmp(s->axes[a].name, "seed") == 0) return a;
    return -1;
}

/* The first point of point's group: its seed index set to 0. */
static int group_point(const attn_sweep *s, int point) {
    const int sa = seed_axis(s);
    if (sa < 0) return point;
    int stride = 1;
    for (int a = sa + 1; a < s->n_axes; a++)
        if (!s->axes[a].fixed) stride *= s->axes[a].n;
    return point - attn_sweep_value_index(s, point, sa) * stride;
}

attn_status attn_sweep_summarise(const attn_sweep *s, const attn_sweep_result *res,
                                 attn_sweep_summary *out, attn_error *err) {
    *out = (attn_sweep_summary){0, NULL};
    int *group_of = malloc((size_t)s->n_points * sizeof *group_of);
    out->groups = calloc((size_t)s->n_points, sizeof *out->groups);
    if (!group_of || !out->groups) {
        free(group_of);
        free(out->groups);
        out->groups = NULL;
        return attn_errorf(err, ATTN_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < s->n_points; i++) group_of[i] = -1;
    for (int i = 0; i < s->n_points; i++) { /* means, in point order */
        const int first = group_point(s, i);
        if (group_of[first] < 0) {
            group_of[first] = out->n_groups++;
            attn_sweep_group *g = &out->groups[group_of[first]];
            g->first_point = first;
            for (int k = 0; k <= ATTN_N_TEST_SETS; k++) g->lo[k] = INFINITY, g->hi[k] = -INFINITY;
        }
        attn_sweep_group *g = &out->groups[group_of[first]];
        g->n_seeds++;
        double mean4 = 0;
        for (int k = 0; k < ATTN_N_TEST_SETS; k++) mean4 += res[i].acc[k] / ATTN_N_TEST_SETS;
        for (int k = 0; k <= ATTN_N_TEST_SETS; k++) {
            const double v = k < ATTN_N_TEST_SETS ? res[i].acc[k] : mean4;
            g->mean[k] += v;
            g->lo[k] = fmin(g->lo[k], v), g->hi[k] = fmax(g->hi[k], v);
        }
    }
    for (int g = 0; g < out->n_groups; g++)
        for (int k = 0; k <= ATTN_N_TEST_SETS; k++)
            out->groups[g].mean[k] /= out->groups[g].n_seeds;
    for (int i = 0; i < s->n_points; i++) { /* spreads around them */
        attn_sweep_group *g = &out->groups[group_of[group_point(s, i)]];
        double mean4 = 0;
        for (int k = 0; k < ATTN_N_TEST_SETS; k++) mean4 += res[i].acc[k] / ATTN_N_TEST_SETS;
        for (int k = 0; k <= ATTN_N_TEST_SETS; k++) {
            const double d = (k < ATTN_N_TEST_SETS ? res[i].acc[k] : mean4) - g->mean[k];
            g->sd[k] += d * d;
        }
    }
    for (int g = 0; g < out->n_groups; g++)
        for (int k = 0; k <= ATTN_N_TEST_SETS; k++) {
            attn_sweep_group *gr = &out->groups[g];
            gr->sd[k] = gr->n_seeds > 1 ? sqrt(gr->sd[k] / (gr->n_seeds - 1)) : 0.0;
        }
    free(group_of);
    return ATTN_OK;
}

void attn_sweep_summary_free(attn_sweep_summary *sum) {
    free(sum->groups);
    *sum = (attn_sweep_summary){0, NULL};
}

/* The group holding the point with value indices idx[] (seed index 0). */
static const attn_sweep_group *group_at(const attn_sweep *s, const attn_sweep_summary *sum,
                                        const int *idx) {
    int point = 0;
    for (int a = 0; a < s->n_axes; a++)
        if (!s->axes[a].fixed) point = point * s->axes[a].n + idx[a];
    for (int g = 0; g < sum->n_groups; g++)
        if (sum->groups[g].first_point == point) return &sum->groups[g];
    return NULL;
}

#define MAX_LINES 24 /* lines on one chart (combinations of the other options) */

attn_status attn_sweep_plot(const attn_sweep *s, const attn_sweep_summary *sum, int axis,
                            const char *path, attn_error *err) {
    const attn_sweep_axis *ax = &s->axes[axis];
    const int sa = seed_axis(s), nx = ax->n;
    if (axis == sa || ax->fixed)
        return attn_errorf(err, ATTN_ERR_ARG, "chart: %s is not a swept option", ax->name);
    int n_lines = 1;
    for (int a = 0; a < s->n_axes; a++)
        if (a != axis && a != sa && !s->axes[a].fixed) n_lines *= s->axes[a].n;
    if (n_lines > MAX_LINES)
        return attn_errorf(err, ATTN_ERR_ARG,
                           "chart of %s: %d combinations of the other options, more than %d lines",
                           ax->name, n_lines, MAX_LINES);
    /* the values evenly spaced and labelled as written (16, 32, 64; pre, post; 0.001, 0.01) */
    double *buf = calloc((size_t)(4 * n_lines + 1) * (size_t)nx, sizeof *buf);
    char(*titles)[160] = calloc((size_t)n_lines, sizeof *titles);
    char(*labels)[32] = calloc((size_t)nx, sizeof *labels);
    const char **label_ptrs = calloc((size_t)nx, sizeof *label_ptrs);
    attn_plot_series *series = calloc((size_t)n_lines, sizeof *series);
    attn_status st = ATTN_OK;
    if (!buf || !titles || !labels || !label_ptrs || !series)
        st = attn_errorf(err, ATTN_ERR_NOMEM, "out of memory");
    double *x = buf;
    for (int k = 0; !st && k < nx; k++) {
        x[k] = k;
        attn_sweep_value_text(s, axis, k, labels[k], sizeof labels[k]);
        label_ptrs[k] = labels[k];
    }
    for (int line = 0; !st && line < n_lines; line++) {
        int idx[ATTN_SWEEP_MAX_AXES] = {0}, rest = line;
        size_t used = 0;
        for (int a = s->n_axes - 1; a >= 0; a--) { /* the line's values of the other options */
            if (a == axis || a == sa || s->axes[a].fixed) continue;
            idx[a] = rest % s->axes[a].n;
            rest /= s->axes[a].n;
        }
        for (int a = 0; a < s->n_axes; a++) {
            if (a == axis || a == sa || s->axes[a].fixed) continue;
            char v[64];
            attn_sweep_value_text(s, a, idx[a], v, sizeof v);
            used += (size_t)snprintf(titles[line] + used, sizeof titles[line] - used, "%s%s=%s",
                                     used ? ", " : "", s->axes[a].name, v);
        }
        if (!used)
            snprintf(titles[line], sizeof titles[line], "%s%s", attn_arch_name(s->arch),
                     sa >= 0 ? ", mean over seeds" : "");
        double *y = buf + (size_t)(1 + 3 * line) * nx, *lo = y + nx, *hi = lo + nx;
        for (int k = 0; k < nx; k++) {
            idx[axis] = k;
            const attn_sweep_group *g = group_at(s, sum, idx);
            y[k] = g ? g->mean[ATTN_N_TEST_SETS] : NAN;
            lo[k] = g ? g->lo[ATTN_N_TEST_SETS] : NAN;
            hi[k] = g ? g->hi[ATTN_N_TEST_SETS] : NAN;
        }
        series[line] = (attn_plot_series){
            titles[line], nx, x, y, sa >= 0 ? lo : NULL, sa >= 0 ? hi : NULL, .points = true};
    }
    char title[160], xlabel[96];
    snprintf(title, sizeof title, "%s: accuracy against %s%s", attn_arch_name(s->arch), ax->name,
             sa >= 0 ? " (band: range over seeds)" : "");
    snprintf(xlabel, sizeof xlabel, "%s", ax->name);
    const attn_plot p = {.title = title,
                         .xlabel = xlabel,
                         .ylabel = "mean accuracy over the four test sets",
                         .key = "outside right top",
                         .y_min = 0.4,
                         .y_max = 1.0,
                         .width = 1100,
                         .n_series = n_lines,
                         .series = series,
                         .n_x_labels = nx,
                         .x_labels = label_ptrs};
    if (!st) st = attn_plot_lines(&p, path, err);
    free(buf);
    free(titles);
    free(labels);
    free(label_ptrs);
    free(series);
    return st;
}

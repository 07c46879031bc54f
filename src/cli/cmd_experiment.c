/* cmd_experiment.c -- `attn experiment`: the write-up's claims as experiments
 * (attn_experiments.h): the claim, the measurements, the verdict and the rule that gave it, as
 * text or one JSON object per experiment, with a chart. */
#include "attn_experiments.h"
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { FORMAT_TEXT, FORMAT_JSON };

static const char about[] =
    "Runs experiment NAME (or all of them) on the course-review task and prints the claim,\n"
    "what was measured, and the verdict -- holds, does not hold or mixed -- reached from the\n"
    "numbers by the rule printed with it. `attn experiment list` lists the experiments.";

static const char notes[] =
    "JSON, one object per experiment and line: {\"experiment\", \"claim\", \"section\",\n"
    "\"source\", \"rule\", \"verdict\", \"why\", \"seconds\", \"quick\", \"measurements\": {name:\n"
    "number or [numbers]}} (%.17g; null for a non-finite number).\n\n"
    "--out DIR writes DIR/NAME.json (that object) and DIR/NAME.png (the chart) per experiment.\n"
    "--quick is the CI size (seconds for all); without it the full runs take a few\n"
    "minutes (docs/claims.md lists their times). Timing experiments (parallel) use one BLAS\n"
    "thread and report the median of repeated runs.";

typedef struct exp_args {
    int seeds;
    bool quick;
    int fmt;
    const char *size;
    const char *plot, *out, *weights_dir;
} exp_args;

static void write_json(FILE *f, const attn_experiment *e, const attn_experiment_result *r,
                       bool quick) {
    attn_json_writer w;
    attn_json_writer_init(&w, f);
    attn_json_begin_object(&w);
    attn_json_field_string(&w, "experiment", e->name);
    attn_json_field_string(&w, "claim", e->claim);
    attn_json_field_string(&w, "section", e->section);
    attn_json_field_string(&w, "source", e->source);
    attn_json_field_string(&w, "rule", e->rule);
    attn_json_field_string(&w, "verdict", attn_verdict_name(r->verdict));
    attn_json_field_string(&w, "why", r->why);
    attn_json_field_fixed(&w, "seconds", r->seconds, 3);
    attn_json_field_bool(&w, "quick", quick);
    attn_kernels_info kernels;
    attn_kernels_info_get(&kernels);
    attn_json_key(&w, "kernels");
    attn_json_kernels(&w, &kernels);
    attn_json_begin_object_field(&w, "measurements");
    for (int i = 0; i < r->n_measures; i++) {
        const attn_measure *m = &r->measures[i];
        attn_json_key(&w, m->name);
        if (m->n == 1) {
            attn_json_measured(&w, m->values[0], 17);
            continue;
        }
        attn_json_begin_array(&w);
        for (int j = 0; j < m->n; j++) attn_json_measured(&w, m->values[j], 17);
        attn_json_end_array(&w);
    }
    attn_json_end_object(&w);
    attn_json_end_object(&w);
    attn_json_writer_finish(&w, NULL); /* f's errors: its caller's (stdout at exit, fclose) */
    fputc('\n', f);
}

static void write_text(FILE *f, const attn_experiment *e, const attn_experiment_result *r) {
    fprintf(f, "experiment %s (write-up %s%s%s)\n", e->name, e->section, e->source[0] ? "; " : "",
            e->source);
    fprintf(f, "claim: %s\n", e->claim);
    char took[32];
    cli_fmt_duration(took, sizeof took, r->seconds);
    fprintf(f, "measured (%s):\n", took);
    for (int i = 0; i < r->n_measures; i++) {
        const attn_measure *m = &r->measures[i];
        fprintf(f, "  %-48s ", m->name);
        if (m->n > 1) fputc('[', f);
        /* long arrays: the first and last four (--format json has them all) */
        for (int j = 0; j < m->n; j++) {
            if (m->n > 12 && j == 4) {
                fprintf(f, ", ... (%d values)", m->n);
                j = m->n - 5;
                continue;
            }
            if (isfinite(m->values[j]))
                fprintf(f, "%s%.4g", j ? ", " : "", m->values[j]);
            else /* JSON: null; a value not measured (a diverged run), never "nan" */
                fprintf(f, "%snone", j ? ", " : "");
        }
        fprintf(f, "%s\n", m->n > 12 ? "]" : m->n > 1 ? "]" : "");
    }
    fprintf(f, "rule: %s\n", e->rule);
    fprintf(f, "verdict: %s -- %s\n", attn_verdict_name(r->verdict), r->why);
}

/* On a terminal one line rewritten in place; elsewhere (a pipe, a log) one line a step. */
static void progress(const char *what, void *user) {
    const bool tty = *(const bool *)user;
    if (tty)
        fprintf(stderr, "\r\x1b[K%s", what);
    else
        fprintf(stderr, "attn experiment: %s\n", what);
    fflush(stderr);
}

/* Writes the JSON object to path atomically. */
static int save_json(const char *path, const attn_experiment *e, const attn_experiment_result *r,
                     bool quick) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return cli_runtime_error("experiment", "out of memory");
    write_json(f, e, r, quick);
    const bool ok = fclose(f) == 0;
    attn_error err;
    int rc = CLI_OK;
    if (!ok)
        rc = cli_runtime_error("experiment", "out of memory");
    else if (attn_write_file_atomic(path, text, len, &err) != ATTN_OK)
        rc = cli_fail("experiment", &err);
    free(text);
    return rc;
}

/* Runs e and prints it; *verdict (may be NULL) gets its verdict, or -1 when it failed. */
static int run_one(const attn_experiment *e, const exp_args *a, int *verdict) {
    static bool tty;
    tty = isatty(STDERR_FILENO) && cli_mpi_root();
    if (verdict) *verdict = -1;
    /* under mpirun: its runs spread over the ranks (rank_runs.c), or rank 0 runs it alone */
    const bool spread = cli_mpi_on() && attn_experiment_spreads_runs(e);
    if (!cli_mpi_root() && !spread) return CLI_OK;
    attn_experiment_opts o = {.seeds = a->seeds,
                              .quick = a->quick,
                              .base = strcmp(a->size, "base") == 0,
                              .weights_dir = a->weights_dir,
                              .progress = cli_mpi_root() ? progress : NULL,
                              .user = &tty,
                              .map = spread ? cli_mpi_experiment_map : NULL};
    attn_experiment_result r;
    attn_error err = {0};
    attn_status st = attn_experiment_run(e, &o, &r, &err);
    if (tty) fputs("\r\x1b[K", stderr);
    int rc = CLI_OK;
    if (!cli_mpi_root()) { /* every rank has the result; rank 0 prints and writes it */
        attn_experiment_result_free(&r);
        return st == ATTN_OK ? CLI_OK : CLI_ERROR;
    }
    if (st != ATTN_OK) {
        rc = cli_fail("experiment", &err);
        attn_experiment_result_free(&r);
        return rc == CLI_USAGE ? CLI_ERROR : rc;
    }
    if (verdict) *verdict = (int)r.verdict;
    if (a->fmt == FORMAT_JSON)
        write_json(stdout, e, &r, a->quick);
    else
        write_text(stdout, e, &r);
    char path[4096];
    if (a->out && rc == CLI_OK) {
        snprintf(path, sizeof path, "%s/%s.json", a->out, e->name);
        rc = save_json(path, e, &r, a->quick);
        snprintf(path, sizeof path, "%s/%s.png", a->out, e->name);
        if (rc == CLI_OK && e->plot(&r, path, &err) != ATTN_OK) rc = cli_fail("experiment", &err);
        if (rc == CLI_OK && a->fmt == FORMAT_TEXT) printf("chart: %s\n", path);
    }
    if (a->plot && rc == CLI_OK) {
        if (e->plot(&r, a->plot, &err) != ATTN_OK)
            rc = cli_fail("experiment", &err);
        else if (a->fmt == FORMAT_TEXT)
            printf("chart: %s\n", a->plot);
    }
    if (a->fmt == FORMAT_TEXT) putchar('\n');
    fflush(stdout);
    attn_experiment_result_free(&r);
    return rc == CLI_USAGE ? CLI_ERROR : rc;
}

static void list(void) {
    for (int i = 0; i < attn_experiment_count(); i++) {
        const attn_experiment *e = attn_experiment_at(i);
        printf("%-14s %s\n", e->name, e->claim);
    }
}

/* The experiment (or "all", "list") nearest to a mistyped name, by the options' did-you-mean
 * rule (a typo or two); NULL when none is near enough. */
static const char *closest_experiment(const char *name) {
    const char *names[128] = {"all", "list"};
    int n = 2;
    for (int i = 0; i < attn_experiment_count() && n < 128; i++)
        names[n++] = attn_experiment_at(i)->name;
    return cli_did_you_mean(name, names, n);
}

/* The usage error of an unknown experiment NAME, with the nearest name and the list. */
static int unknown_experiment(const char *name) {
    const char *near = closest_experiment(name);
    if (near)
        cli_message("experiment",
                    "unknown experiment '%s'; did you mean '%s'? The "
                    "experiments are:",
                    name, near);
    else
        cli_message("experiment", "unknown experiment '%s'; the experiments are:", name);
    for (int i = 0; i < attn_experiment_count(); i++)
        fprintf(stderr, "  %s\n", attn_experiment_at(i)->name);
    return CLI_USAGE;
}

/* --plot and --out checked (a writable directory) and locked before the run. */
static int check_destinations(const exp_args *a) {
    int rc = CLI_OK;
    if (a->plot) rc = cli_check_plot_name("experiment", "--plot", a->plot);
    if (rc == CLI_OK && a->out) rc = cli_make_dir("experiment", "--out", a->out);
    struct stat st; /* --out /dev/null or a file: refused now, not after the run */
    if (rc == CLI_OK && a->out &&
        (stat(a->out, &st) != 0 || !S_ISDIR(st.st_mode) || access(a->out, W_OK | X_OK)))
        rc = cli_runtime_error("experiment", "--out %s: not a writable directory", a->out);
    if (rc == CLI_OK && a->out) rc = cli_lock_output("experiment", "--out", a->out);
    if (rc == CLI_OK && a->plot) rc = cli_lock_output("experiment", "--plot", a->plot);
    return rc;
}

int cmd_experiment(int argc, char **argv) {
    exp_args a = {0, false, FORMAT_TEXT, "small", NULL, NULL, NULL};
    cli_opt opts[] = {
        {"--seeds", "N", CLI_OPT_INT, &a.seeds, 1, 100, .def = "the experiment's",
         .help = "convolution: random problems; embedding, equivariance: weights\nand training "
                 "seeds 1..N; heads, scaling, norm: training seeds 1..N;\npath-length, "
                 "parallel: not used"},
        {"--quick", NULL, CLI_OPT_FLAG, &a.quick, .help = "the CI size: fewer seeds and sizes"},
        {"--format", "F", CLI_OPT_CHOICE, &a.fmt, .choices = "text|json",
         .help = "text or json (see below)"},
        {"--plot", "FILE", CLI_OPT_STR, &a.plot, .def = "",
         .help = "draw the chart (.png or .svg); one experiment only"},
        {"--out", "DIR", CLI_OPT_STR, &a.out, .def = "", .help = "write NAME.json and NAME.png"},
        {"--size", "NAME", CLI_OPT_STR, &a.size,
         .help = "parallel-decoder: small (the default sizes), or base: section 6's base\n"
                 "Transformer (d_model 512, 8 heads, FFN 2048, 6+6 layers) beside GRU decoders of\n"
                 "width 512"},
        {"--weights-dir", "DIR", CLI_OPT_STR, &a.weights_dir, .def = "weights",
         .help = "trained weights <model>-seed<S>.json (embedding, equivariance)"},
    };
    cli_spec spec = CLI_SPEC(
        "experiment", "NAME|all|list [--seeds N] [--quick] [--format F] [--plot FILE] [--out DIR]",
        about, "NAME", notes, opts);
    char **pos = NULL;
    int n_pos = 0;
    int rc = cli_parse_operands(&spec, argc, argv, &pos, &n_pos);
    const char *name = n_pos == 1 && pos ? pos[0] : NULL;
    free(pos);
    if (rc >= 0) return rc;
    if (!name) {
        rc = cli_usage_error("experiment", "give one experiment NAME, 'all' or 'list'");
        return rc;
    }
    if (strcmp(name, "list") == 0) {
        list();
        return CLI_OK;
    }
    const bool all = strcmp(name, "all") == 0;
    const attn_experiment *e = all ? NULL : attn_experiment_find(name);
    if (!all && !e) return unknown_experiment(name);
    if (strcmp(a.size, "small") != 0 && strcmp(a.size, "base") != 0)
        return cli_usage_error("experiment", "--size %s: expected small or base", a.size);
    if (strcmp(a.size, "base") == 0 && (all || strcmp(e->name, "parallel-decoder") != 0))
        return cli_usage_error("experiment", "--size base: only parallel-decoder has a base size");
    if (all && a.plot)
        return cli_usage_error("experiment", "--plot draws one experiment; use --out DIR");
    /* rank 0 checks the destinations, takes the locks and tells the others */
    if ((rc = cli_mpi_agree(cli_mpi_root() ? check_destinations(&a) : CLI_OK)) != CLI_OK) return rc;
    attn_set_num_threads(1);
    if (!all) return run_one(e, &a, NULL);
    int failed = 0, verdicts[64];
    const int n = attn_experiment_count() < 64 ? attn_experiment_count() : 64;
    for (int i = 0; i < n; i++)
        if (run_one(attn_experiment_at(i), &a, &verdicts[i]) != CLI_OK) failed++;
    if (a.fmt == FORMAT_TEXT && cli_mpi_root()) { /* the verdicts at a glance, after ~270 lines */
        printf("summary:\n");
        for (int i = 0; i < n; i++)
            printf("  %-16s %s\n", attn_experiment_at(i)->name,
                   verdicts[i] < 0 ? "failed" : attn_verdict_name((attn_verdict)verdicts[i]));
        fflush(stdout);
    }
    if (failed)
        cli_message("experiment", "%d of %d experiments failed", failed, attn_experiment_count());
    return failed ? CLI_ERROR : CLI_OK;
}

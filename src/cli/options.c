/* options.c -- the one option parser of the attn command. Each command describes its options
 * in a table (name, type, range, default, help line); the same table parses argv, prints
 * --help and words the usage errors (exit code 2), so the three can never disagree. */
#include "cli.h"

#include "attn_kernelset.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void cli_put_escaped(FILE *f, const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\x%02x", *p);
        else
            fputc(*p, f);
    }
}

/* "attn CMD: <formatted, escaped>\n" on f. */
static void vmessage_to(FILE *f, const char *cmd, const char *fmt, va_list ap) {
    char msg[2048];
    vsnprintf(msg, sizeof msg, fmt, ap);
    fprintf(f, "attn%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    cli_put_escaped(f, msg);
    fputc('\n', f);
}

static void vmessage(const char *cmd, const char *fmt, va_list ap) {
    vmessage_to(stderr, cmd, fmt, ap);
}

void cli_message_to(FILE *f, const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vmessage_to(f, cmd, fmt, ap);
    va_end(ap);
}

void cli_message(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vmessage(cmd, fmt, ap);
    va_end(ap);
}

int cli_fail(const char *cmd, const attn_error *err) {
    cli_message(cmd, "%s", err->msg[0] ? err->msg : attn_status_str(err->status));
    return err->status == ATTN_ERR_ARG ? CLI_USAGE : CLI_ERROR;
}

int cli_runtime_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vmessage(cmd, fmt, ap);
    va_end(ap);
    return CLI_ERROR;
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vmessage(cmd, fmt, ap);
    va_end(ap);
    fprintf(stderr, "Try 'attn %s --help'.\n", cmd);
    return CLI_USAGE;
}

void cli_log(attn_log_level level, const char *msg, void *user) {
    (void)user;
    if (level == ATTN_LOG_DEBUG && !getenv("ATTN_DEBUG")) return;
    cli_message(NULL, "%s%s", level == ATTN_LOG_WARN ? "warning: " : "", msg);
}

cli_opt *cli_opt_find(cli_spec *spec, const char *name) {
    for (int i = 0; i < spec->n_opts; i++)
        if (strcmp(spec->opts[i].name, name) == 0) return &spec->opts[i];
    return NULL;
}

bool cli_given(cli_spec *spec, const char *name) {
    const cli_opt *o = cli_opt_find(spec, name);
    return o && o->given;
}

int cli_refuse_given(cli_spec *spec, const char *const *names, const char *what) {
    for (int i = 0; names[i]; i++)
        if (cli_given(spec, names[i]))
            return cli_usage_error(spec->cmd, "%s applies to %s only", names[i], what);
    return -1;
}

/* ---- did you mean ------------------------------------------------------------------------- */

/* Levenshtein distance of a[0..na) and b[0..nb) (each cut at 63 bytes). */
static int distance(const char *a, const char *b) {
    int row[64];
    size_t na = strnlen(a, 63), nb = strnlen(b, 63);
    for (size_t j = 0; j <= nb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= na; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= nb; j++) {
            int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[nb];
}

const char *cli_did_you_mean(const char *word, const char *const *names, int n) {
    char w[64];
    size_t len = strcspn(word, "="); /* "--epoch=3": the name only */
    if (len >= sizeof w) return NULL;
    memcpy(w, word, len);
    w[len] = 0;
    const char *best = NULL;
    int best_d = 0;
    for (int i = 0; i < n; i++) {
        int d = distance(w, names[i]);
        /* a prefix of one name ("--epo") counts as close */
        bool prefix = len >= 3 && strncmp(names[i], w, len) == 0;
        if (prefix) d = 1;
        if (!best || d < best_d) best = names[i], best_d = d;
    }
    /* close: a typo or two, not another word */
    int limit = len <= 4 ? 1 : len <= 8 ? 2 : 3;
    return best && best_d <= limit ? best : NULL;
}

/* ---- help ---------------------------------------------------------------------------------- */

/* The i-th '|'-separated word of choices into buf. */
static void choice_name(const char *choices, int i, char *buf, size_t n) {
    const char *p = choices;
    for (; i > 0 && p; i--) {
        p = strchr(p, '|');
        if (p) p++;
    }
    size_t len = p ? strcspn(p, "|") : 0;
    if (len >= n) len = n - 1;
    memcpy(buf, p ? p : "", len);
    buf[len] = 0;
}

/* "(1..100000; default 20)" or "" for the help line. */
static void opt_suffix(const cli_opt *o, char *buf, size_t n) {
    char range[48] = "", def[96] = "";
    if (o->type == CLI_OPT_INT) snprintf(range, sizeof range, "%d..%d", o->lo, o->hi);
    if (o->def)
        snprintf(def, sizeof def, "%s", o->def);
    else if (o->type == CLI_OPT_INT)
        snprintf(def, sizeof def, "%d", *(const int *)o->dst);
    else if (o->type == CLI_OPT_U64)
        snprintf(def, sizeof def, "%llu", (unsigned long long)*(const uint64_t *)o->dst);
    else if (o->type == CLI_OPT_REAL)
        snprintf(def, sizeof def, "%g", *(const double *)o->dst);
    else if (o->type == CLI_OPT_CHOICE)
        choice_name(o->choices, *(const int *)o->dst, def, sizeof def);
    else if (o->type == CLI_OPT_STR && *(const char *const *)o->dst)
        snprintf(def, sizeof def, "%s", *(const char *const *)o->dst);
    if (range[0] && def[0])
        snprintf(buf, n, " (%s; default %s)", range, def);
    else if (range[0] || def[0])
        snprintf(buf, n, " (%s%s)", range[0] ? range : "default ", range[0] ? "" : def);
    else
        buf[0] = 0;
}

static void print_opt(FILE *f, const cli_opt *o, int width) {
    char head[64], suffix[160];
    snprintf(head, sizeof head, "%s%s%s", o->name, o->metavar ? " " : "",
             o->metavar ? o->metavar : "");
    opt_suffix(o, suffix, sizeof suffix);
    fprintf(f, "  %-*s  ", width, head);
    for (const char *p = o->help;;) {
        size_t len = strcspn(p, "\n");
        fprintf(f, "%.*s", (int)len, p);
        if (!p[len]) break;
        fprintf(f, "\n  %-*s  ", width, "");
        p += len + 1;
    }
    fprintf(f, "%s\n", suffix);
}

/* The usage forms name the option (as a whole word: "--log" is not in "--login"). */
static bool usage_names(const char *usage, const char *name) {
    size_t n = strlen(name);
    for (const char *p = usage; (p = strstr(p, name)) != NULL; p++) {
        char next = p[n];
        bool word_end =
            !(next == '-' || (next >= 'a' && next <= 'z') || (next >= '0' && next <= '9'));
        if ((p == usage || strchr(" [|(\n", p[-1])) && word_end) return true;
    }
    return false;
}

/* One "[--opt METAVAR]" item of the OPTIONS line, wrapped at 96 columns; the new column. */
static int put_option_item(FILE *f, int col, const char *name, const char *metavar) {
    const char *lead = "  OPTIONS: ";
    char item[96];
    int len =
        snprintf(item, sizeof item, "[%s%s%s]", name, metavar ? " " : "", metavar ? metavar : "");
    if (col == 0)
        col = fprintf(f, "%s", lead);
    else if (col + 1 + len > 96)
        col = fprintf(f, "\n%*s", (int)strlen(lead), "") - 1;
    else
        col += fprintf(f, " ");
    return col + fprintf(f, "%s", item);
}

/* The options no usage form names, "[--seed S] [--batch B] ... [--kernels MODE]", wrapped
 * under the forms, so the usage lists every option (--kernels belongs to every command). */
static void print_other_options(const cli_spec *spec, FILE *f) {
    int col = 0;
    for (int i = 0; i < spec->n_opts; i++) {
        const cli_opt *o = &spec->opts[i];
        if (!usage_names(spec->usage, o->name)) col = put_option_item(f, col, o->name, o->metavar);
    }
    if (!usage_names(spec->usage, "--kernels")) col = put_option_item(f, col, "--kernels", "MODE");
    if (col) fputc('\n', f);
}

void cli_print_help(const cli_spec *spec, FILE *f) {
    const char *u = spec->usage;
    for (int first = 1;; first = 0) {
        size_t len = strcspn(u, "\n");
        fprintf(f, "%s attn %s %.*s\n", first ? "Usage:" : "      ", spec->cmd, (int)len, u);
        if (!u[len]) break;
        u += len + 1;
    }
    print_other_options(spec, f);
    fprintf(f, "\n%s\n", spec->about);
    int width = 14; /* "--kernels MODE" */
    for (int i = 0; i < spec->n_opts; i++) {
        const cli_opt *o = &spec->opts[i];
        int w = (int)strlen(o->name) + (o->metavar ? 1 + (int)strlen(o->metavar) : 0);
        if (w > width) width = w;
    }
    fprintf(f, "\nOptions:\n");
    for (int i = 0; i < spec->n_opts; i++) print_opt(f, &spec->opts[i], width);
    const char *why;
    attn_kernels_mode def = cli_kernels_default(spec->cmd, &why);
    fprintf(f,
            "  %-*s  pinned: the same bytes on every x86-64 CPU with AVX2 (OpenBLAS's Haswell\n"
            "  %-*s  kernels, 1 BLAS thread); native: OpenBLAS's own kernels, the machine's speed\n"
            "  %-*s  and its stock PyTorch's bits. Default $ATTN_KERNELS, else %s:\n"
            "  %-*s  %s\n",
            width, "--kernels MODE", width, "", width, "", attn_kernels_mode_name(def), width, "",
            why);
    fprintf(f, "  %-*s  print this help and exit\n", width, "-h, --help");
    if (spec->notes) fprintf(f, "\n%s\n", spec->notes);
    fprintf(f, "\nExit codes: 0 success, 1 runtime error, 2 usage error.\n");
}

/* ---- parsing ------------------------------------------------------------------------------- */

/* "N: an integer in 0..100000" etc., for messages. */
static void describe(const cli_opt *o, char *buf, size_t n) {
    switch (o->type) {
    case CLI_OPT_INT:
        snprintf(buf, n, "an integer in %d..%d", o->lo, o->hi);
        break;
    case CLI_OPT_U64:
        snprintf(buf, n, "a non-negative integer");
        break;
    case CLI_OPT_REAL: /* what parse_value takes: a normal double that float32 holds */
        snprintf(buf, n, "a number from 2.2250738585072014e-308 to 3.4028234663852886e+38");
        break;
    case CLI_OPT_CHOICE: { /* "text, tsv or json" */
        char name[32], next[32];
        size_t used = 0;
        buf[0] = 0;
        choice_name(o->choices, 0, name, sizeof name);
        for (int i = 0; name[0] && used < n; i++) {
            choice_name(o->choices, i + 1, next, sizeof next);
            /* before the last name " or ", before the others ", " */
            used += (size_t)snprintf(buf + used, n - used, "%s%s",
                                     i == 0    ? ""
                                     : next[0] ? ", "
                                               : " or ",
                                     name);
            memcpy(name, next, sizeof name);
        }
        break;
    }
    default:
        snprintf(buf, n, "%s", o->metavar ? o->metavar : "a value");
        break;
    }
}

static bool set_value(const cli_opt *o, const char *s) {
    char *end = NULL;
    errno = 0;
    switch (o->type) {
    case CLI_OPT_INT: {
        long v = strtol(s, &end, 10);
        if (!*s || *end || errno || v < o->lo || v > o->hi) return false;
        *(int *)o->dst = (int)v;
        return true;
    }
    case CLI_OPT_U64: {
        unsigned long long v = strtoull(s, &end, 10);
        if (!*s || *end || errno || s[0] == '-' || s[0] == '+') return false;
        *(uint64_t *)o->dst = (uint64_t)v;
        return true;
    }
    case CLI_OPT_REAL: {
        double v = strtod(s, &end); /* the decimal value, as Python would hold it */
        if (!*s || *end || errno || !isfinite(v) || !isfinite((float)v) || !(v > 0)) return false;
        *(double *)o->dst = v;
        return true;
    }
    case CLI_OPT_CHOICE: {
        char c[64];
        for (int i = 0;; i++) {
            choice_name(o->choices, i, c, sizeof c);
            if (!c[0]) return false;
            if (strcmp(c, s) == 0) {
                *(int *)o->dst = i;
                return true;
            }
        }
    }
    case CLI_OPT_STR: /* never empty: `--out ''` would write into the current directory or / */
        if (!*s) return false;
        *(const char **)o->dst = s;
        return true;
    case CLI_OPT_FLAG:
        *(bool *)o->dst = true;
        return true;
    }
    return false;
}

/* The option argv[*i] names, with its value in *value (NULL for flags; advances *i). Returns
 * NULL when argv[*i] is no option of the table; *bad is set when one is but lacks its value. */
static cli_opt *match(cli_spec *spec, int argc, char **argv, int *i, const char **value,
                      bool *bad) {
    const char *a = argv[*i];
    *value = NULL;
    *bad = false;
    for (int k = 0; k < spec->n_opts; k++) {
        cli_opt *o = &spec->opts[k];
        size_t nl = strlen(o->name);
        if (strncmp(a, o->name, nl) != 0) continue;
        bool is_short = o->name[1] != '-';
        if (o->type == CLI_OPT_FLAG) {
            if (a[nl]) continue;
            return o;
        }
        if (a[nl] == '=' || (is_short && a[nl])) {
            *value = a + nl + (a[nl] == '=');
            return o;
        }
        if (a[nl]) continue;
        if (*i + 1 >= argc) {
            *bad = true;
            return o;
        }
        *value = argv[++*i];
        return o;
    }
    return NULL;
}

static bool wants_help(int argc, char **argv) {
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return true;
    return false;
}

/* --kernels MODE / --kernels=MODE, an option of every command: 1 if argv[*i] is one (applied,
 * *i advanced), 0 if not, CLI_USAGE after a usage error. The choice also goes to $ATTN_KERNELS,
 * so that processes the command starts run on the same kernels. */
static int kernels_option(const char *cmd, int argc, char **argv, int *i) {
    const char *a = argv[*i], *value;
    if (strncmp(a, "--kernels", 9) != 0 || (a[9] != '\0' && a[9] != '=')) return 0;
    if (a[9] == '=')
        value = a + 10;
    else if (*i + 1 < argc)
        value = argv[++*i];
    else
        return cli_usage_error(cmd, "--kernels needs a value (MODE: pinned or native)");
    attn_kernels_mode mode;
    if (!attn_kernels_mode_parse(value, &mode))
        return cli_usage_error(cmd, "--kernels expects pinned or native, got '%s'", value);
    if (setenv("ATTN_KERNELS", value, 1) != 0 || !attn_kernels_select(mode))
        cli_message(cmd, "warning: --kernels %s: not every kernel could be switched", value);
    return 1;
}

int cli_parse(cli_spec *spec, int argc, char **argv, char **pos, int *n_pos) {
    if (n_pos) *n_pos = 0;
    if (wants_help(argc, argv)) {
        cli_print_help(spec, stdout);
        return CLI_OK;
    }
    const char *cmd = spec->cmd;
    for (int i = 1; i < argc; i++) {
        const char *value;
        bool missing;
        int common = strcmp(argv[i], "--") == 0 ? 0 : kernels_option(cmd, argc, argv, &i);
        if (common == CLI_USAGE) return CLI_USAGE;
        if (common) continue;
        cli_opt *o = match(spec, argc, argv, &i, &value, &missing);
        char what[160];
        if (o) describe(o, what, sizeof what);
        if (o && missing)
            return cli_usage_error(cmd, "%s needs a value (%s: %s)", o->name, o->metavar, what);
        if (o && !set_value(o, value ? value : ""))
            return cli_usage_error(cmd, "%s expects %s, got '%s'", o->name, what, value);
        if (o) {
            o->given = true;
            continue;
        }
        bool dashdash = strcmp(argv[i], "--") == 0;
        if (spec->positional && dashdash) {
            while (++i < argc) pos[(*n_pos)++] = argv[i];
            break;
        }
        if (argv[i][0] == '-' && argv[i][1] != 0) {
            const char *names[64];
            int n = 0;
            for (int k = 0; k < spec->n_opts && n < 63; k++) names[n++] = spec->opts[k].name;
            names[n++] = "--help";
            const char *close = cli_did_you_mean(argv[i], names, n);
            if (close)
                return cli_usage_error(cmd, "unknown option '%s'; did you mean '%s'?", argv[i],
                                       close);
            return cli_usage_error(cmd, "unknown option '%s'", argv[i]);
        }
        if (!spec->positional) return cli_usage_error(cmd, "unexpected argument '%s'", argv[i]);
        pos[(*n_pos)++] = argv[i];
    }
    return -1;
}

int cli_parse_operands(cli_spec *spec, int argc, char **argv, char ***pos, int *n_pos) {
    *n_pos = 0;
    if (!(*pos = calloc((size_t)argc + 1, sizeof **pos)))
        return cli_runtime_error(spec->cmd, "out of memory");
    return cli_parse(spec, argc, argv, *pos, n_pos);
}

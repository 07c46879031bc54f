/* weights_json.c -- attn-weights-v1 import/export (format documented in include/attn.h).
 *
 * The importer is driven by the model's tensor table: every key of the file is looked up in
 * it, shapes are compared with the spec before any data is read, and values go into a staging
 * copy of the parameters, which replaces the model's only when the whole file was valid. All
 * problems of a file are reported in one message (first via attn_errorf, then appended).
 * The exporter writes floats with %.9g (enough for float -> text -> double -> float to be
 * exact) into path.tmp, fsyncs and renames, so an existing file is never half-overwritten.
 */
#include "model_internal.h"

#include <cjson/cJSON.h>

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WEIGHTS_FORMAT "attn-weights-v1"
#define MAX_PROBLEMS   24 /* beyond this, only a count is reported */

/* ---- problem collection ------------------------------------------------------------------ */

typedef struct problems {
    attn_error *err;
    const char *path;
    int n;
    attn_status first;
} problems;

static void problem(problems *p, attn_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void problem(problems *p, attn_status s, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (p->n == 0) {
        p->first = s;
        attn_errorf(p->err, s, "%s: %s", p->path, msg);
    } else if (p->n < MAX_PROBLEMS) {
        attn_error_append(p->err, "%s", msg);
    }
    p->n++;
}

static attn_status problems_finish(problems *p) {
    if (p->n == 0) return ATTN_OK;
    if (p->n > MAX_PROBLEMS) attn_error_append(p->err, "and %d more problems", p->n - MAX_PROBLEMS);
    if (p->err) p->err->status = p->first;
    return p->first;
}

/* "[a,b]" into buf. */
static const char *shape_text(char *buf, size_t size, int ndim, const long long *shape) {
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < ndim && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, i ? ",%lld" : "%lld", shape[i]);
    if (used < size) snprintf(buf + used, size - used, "]");
    return buf;
}

/* ---- reading and parsing the file -------------------------------------------------------- */

static attn_status read_file(const char *path, char **out, size_t *len, attn_error *err) {
    *out = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return attn_errorf(err, ATTN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf) {
        fclose(f);
        return attn_errorf(err, ATTN_ERR_NOMEM, "%s: out of memory reading the file", path);
    }
    for (;;) {
        if (n == cap) {
            if (cap > ((size_t)1 << 40)) break;
            char *bigger = realloc(buf, 2 * cap + 1);
            if (!bigger) {
                free(buf);
                fclose(f);
                return attn_errorf(err, ATTN_ERR_NOMEM, "%s: out of memory reading %zu bytes", path,
                                   2 * cap);
            }
            buf = bigger;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    int failed = ferror(f);
    int saved_errno = errno;
    fclose(f);
    if (failed) {
        free(buf);
        return attn_errorf(err, ATTN_ERR_IO, "%s: read error: %s", path, strerror(saved_errno));
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return ATTN_OK;
}

/* The tensor key whose "shape" most recently precedes byte `at` (a hint for parse errors). */
static void tensor_before(const char *buf, size_t at, char *name, size_t size) {
    name[0] = '\0';
    static const char key[] = "\"shape\"";
    const char *hit = NULL;
    for (const char *s = buf; (s = strstr(s, key)) != NULL && (size_t)(s - buf) < at; s++) hit = s;
    if (!hit) return;
    const char *p = hit - 1;
    while (p > buf && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r' || *p == '{')) p--;
    if (p <= buf || *p != ':') return;
    p--;
    while (p > buf && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')) p--;
    if (p <= buf || *p != '"') return;
    const char *end = p--;
    while (p > buf && *p != '"') p--;
    if (*p != '"') return;
    size_t n = (size_t)(end - p - 1);
    if (n >= size) n = size - 1;
    memcpy(name, p + 1, n);
    name[n] = '\0';
}

static attn_status parse_file(const char *path, cJSON **root, attn_error *err) {
    *root = NULL;
    char *buf = NULL;
    size_t len = 0;
    attn_status st = read_file(path, &buf, &len, err);
    if (st != ATTN_OK) return st;
    if (len == 0) {
        free(buf);
        return attn_errorf(err, ATTN_ERR_PARSE, "%s: empty file (0 bytes), expected %s JSON", path,
                           WEIGHTS_FORMAT);
    }
    const char *end = NULL;
    cJSON *doc = cJSON_ParseWithLengthOpts(buf, len, &end, false);
    if (!doc) {
        size_t at = end && end >= buf && end <= buf + len ? (size_t)(end - buf) : len;
        int line = 1, col = 1;
        for (size_t i = 0; i < at; i++) {
            if (buf[i] == '\n') {
                line++;
                col = 1;
            } else {
                col++;
            }
        }
        char name[ATTN_NAME_MAX + 32];
        tensor_before(buf, at, name, sizeof name);
        const char *rest = buf + at;
        const char *hint = "";
        size_t last = len;
        while (last > 0 && strchr(" \t\r\n", buf[last - 1])) last--;
        if (at >= len || last == 0 || buf[last - 1] != '}')
            hint = " (the file does not end with '}': truncated?)";
        else if (strncmp(rest, "NaN", 3) == 0 || strncmp(rest, "Infinity", 8) == 0 ||
                 strncmp(rest, "-Infinity", 9) == 0 || strncmp(rest, "nan", 3) == 0 ||
                 strncmp(rest, "inf", 3) == 0)
            hint = " (NaN/Infinity is not JSON and weights must be finite)";
        attn_errorf(err, ATTN_ERR_PARSE,
                    "%s: malformed JSON at byte %zu (line %d, column %d)%s%s%s%s; parsing stops "
                    "there (also when arrays/objects nest deeper than %d)",
                    path, at, line, col, hint, name[0] ? " in tensor \"" : "", name,
                    name[0] ? "\"" : "", CJSON_NESTING_LIMIT);
        free(buf);
        return ATTN_ERR_PARSE;
    }
    free(buf);
    if (!cJSON_IsObject(doc)) {
        cJSON_Delete(doc);
        return attn_errorf(err, ATTN_ERR_PARSE, "%s: expected a JSON object at the top level",
                           path);
    }
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(doc, "format");
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, WEIGHTS_FORMAT) != 0) {
        attn_errorf(err, ATTN_ERR_PARSE, "%s: unknown \"format\" %s%s%s, expected \"%s\"", path,
                    cJSON_IsString(fmt) ? "\"" : "",
                    !fmt                  ? "(missing)"
                    : cJSON_IsString(fmt) ? fmt->valuestring
                                          : "(not a string)",
                    cJSON_IsString(fmt) ? "\"" : "", WEIGHTS_FORMAT);
        cJSON_Delete(doc);
        return ATTN_ERR_PARSE;
    }
    *root = doc;
    return ATTN_OK;
}

/* ---- config ------------------------------------------------------------------------------- */

typedef struct int_field {
    const char *key;
    size_t offset;
} int_field;

static const int_field int_fields[] = {
    {"vocab_size", offsetof(attn_model_config, vocab_size)},
    {"embed_dim", offsetof(attn_model_config, embed_dim)},
    {"hidden_size", offsetof(attn_model_config, hidden_size)},
    {"n_heads", offsetof(attn_model_config, n_heads)},
    {"ffn_dim", offsetof(attn_model_config, ffn_dim)},
    {"n_layers", offsetof(attn_model_config, n_layers)},
    {"max_len", offsetof(attn_model_config, max_len)},
};
#define N_INT_FIELDS (sizeof int_fields / sizeof int_fields[0])

/* Parses "config" (arch required, the rest defaulting to attn_model_config_default). */
static void parse_config(const cJSON *cj, attn_model_config *cfg, problems *p) {
    if (!cJSON_IsObject(cj)) {
        problem(p, ATTN_ERR_PARSE, "%s \"config\", expected an object with at least \"arch\"",
                cj ? "malformed" : "missing");
        return;
    }
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(cj, "arch");
    attn_arch a = ATTN_ARCH_RNN;
    if (!cJSON_IsString(arch)) {
        problem(p, ATTN_ERR_VALUE,
                "config: %s \"arch\" (expected \"rnn\", \"lstm\" or "
                "\"transformer\")",
                arch ? "non-string" : "missing");
        return;
    }
    if (attn_arch_from_name(arch->valuestring, &a, NULL) != ATTN_OK) {
        problem(p, ATTN_ERR_VALUE,
                "config: unknown arch \"%s\" (expected rnn, lstm or "
                "transformer)",
                arch->valuestring);
        return;
    }
    *cfg = attn_model_config_default(a);
    const cJSON *item;
    cJSON_ArrayForEach(item, cj) {
        const char *key = item->string ? item->string : "";
        if (strcmp(key, "arch") == 0) continue;
        bool known = false;
        for (size_t i = 0; i < N_INT_FIELDS; i++) {
            if (strcmp(key, int_fields[i].key) != 0) continue;
            known = true;
            double v = item->valuedouble;
            if (!cJSON_IsNumber(item) || v != floor(v) || v < INT_MIN || v > INT_MAX) {
                problem(p, ATTN_ERR_VALUE, "config: \"%s\" must be an integer", key);
            } else {
                *(int *)((char *)cfg + int_fields[i].offset) = (int)v;
            }
        }
        if (strcmp(key, "norm") == 0) {
            known = true;
            if (cJSON_IsString(item) && strcmp(item->valuestring, "pre") == 0)
                cfg->norm = ATTN_NORM_PRE;
            else if (cJSON_IsString(item) && strcmp(item->valuestring, "post") == 0)
                cfg->norm = ATTN_NORM_POST;
            else
                problem(p, ATTN_ERR_VALUE,
                        "config: \"norm\" is %s%s%s, expected \"pre\" or "
                        "\"post\"",
                        cJSON_IsString(item) ? "\"" : "",
                        cJSON_IsString(item) ? item->valuestring : "not a string",
                        cJSON_IsString(item) ? "\"" : "");
        } else if (strcmp(key, "activation") == 0) {
            known = true;
            if (cJSON_IsString(item) && strcmp(item->valuestring, "relu") == 0)
                cfg->activation = ATTN_ACT_RELU;
            else if (cJSON_IsString(item) && strcmp(item->valuestring, "gelu") == 0)
                cfg->activation = ATTN_ACT_GELU;
            else
                problem(p, ATTN_ERR_VALUE,
                        "config: \"activation\" is %s%s%s, expected "
                        "\"relu\" or \"gelu\"",
                        cJSON_IsString(item) ? "\"" : "",
                        cJSON_IsString(item) ? item->valuestring : "not a string",
                        cJSON_IsString(item) ? "\"" : "");
        }
        if (!known) problem(p, ATTN_ERR_VALUE, "config: unknown key \"%s\"", key);
    }
    if (p->n == 0) {
        attn_error verr;
        if (attn_model_config_validate(cfg, &verr) != ATTN_OK)
            problem(p, ATTN_ERR_VALUE, "%s", verr.msg);
    }
}

static void config_summary(const attn_model_config *c, char *buf, size_t size) {
    if (c->arch == ATTN_ARCH_TRANSFORMER)
        snprintf(buf, size,
                 "arch transformer, vocab_size %d, embed_dim %d, n_heads %d, "
                 "ffn_dim %d, n_layers %d, max_len %d, norm %s",
                 c->vocab_size, c->embed_dim, c->n_heads, c->ffn_dim, c->n_layers, c->max_len,
                 c->norm == ATTN_NORM_PRE ? "pre" : "post");
    else
        snprintf(buf, size, "arch %s, vocab_size %d, embed_dim %d, hidden_size %d",
                 attn_arch_name(c->arch), c->vocab_size, c->embed_dim, c->hidden_size);
}

/* ---- tensors ------------------------------------------------------------------------------ */

static const char *strip_prefixes(const char *name) {
    for (;;) {
        if (strncmp(name, "module.", 7) == 0)
            name += 7;
        else if (strncmp(name, "_orig_mod.", 10) == 0)
            name += 10;
        else
            return name;
    }
}

/* Checks one tensor entry against spec i and copies its data into stage (at the offset). */
static void load_tensor(const attn_model *m, size_t i, const char *key, const cJSON *entry,
                        float *stage, problems *p) {
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(entry, "shape");
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(entry, "data");
    if (!cJSON_IsObject(entry) || !cJSON_IsArray(shape) || !cJSON_IsArray(data)) {
        problem(p, ATTN_ERR_PARSE, "\"%s\": expected {\"shape\": [..], \"data\": [..]}", key);
        return;
    }
    int want[4];
    int want_nd = attn_model_tensor_shape(m, i, want);
    long long want_ll[4], got[8];
    for (int d = 0; d < want_nd; d++) want_ll[d] = want[d];
    int got_nd = 0;
    bool shape_ok = true;
    const cJSON *dim;
    cJSON_ArrayForEach(dim, shape) {
        double v = dim->valuedouble;
        if (!cJSON_IsNumber(dim) || v != floor(v) || v < 0 || v > 1e15) {
            problem(p, ATTN_ERR_SHAPE, "\"%s\": shape holds a non-integer, expected %s", key,
                    shape_text((char[64]){0}, 64, want_nd, want_ll));
            return;
        }
        if (got_nd < 8) got[got_nd] = (long long)v;
        got_nd++;
        if (got_nd > want_nd || (long long)v != want[got_nd - 1]) shape_ok = false;
    }
    if (got_nd != want_nd) shape_ok = false;
    if (!shape_ok) {
        char wbuf[64], gbuf[128];
        problem(p, ATTN_ERR_SHAPE, "\"%s\": expected %s, got %s%s", key,
                shape_text(wbuf, sizeof wbuf, want_nd, want_ll),
                shape_text(gbuf, sizeof gbuf, got_nd < 8 ? got_nd : 8, got),
                got_nd > 8 ? " (truncated)" : "");
        return;
    }
    size_t numel = attn_model_tensor_numel(m, i);
    size_t n = (size_t)cJSON_GetArraySize(data);
    if (n != numel) {
        char wbuf[64];
        problem(p, ATTN_ERR_SHAPE, "\"%s\": \"data\" has %zu values, shape %s needs %zu", key, n,
                shape_text(wbuf, sizeof wbuf, want_nd, want_ll), numel);
        return;
    }
    float *dst = stage + attn_model_tensor_offset(m, i);
    size_t j = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, data) {
        if (!cJSON_IsNumber(v)) {
            problem(p, ATTN_ERR_VALUE, "\"%s\": element %zu is %s, expected a finite number", key,
                    j,
                    cJSON_IsNull(v)     ? "null (NaN/Inf written by a JSON encoder?)"
                    : cJSON_IsString(v) ? "a string"
                    : cJSON_IsBool(v)   ? "a boolean"
                                        : "an array or object");
            return;
        }
        double d = v->valuedouble;
        /* >= FLT_MAX + half an ulp rounds to Inf in the cast to float */
        if (!isfinite(d) || fabs(d) >= 0x1.ffffffp127) {
            problem(p, ATTN_ERR_VALUE, "\"%s\": element %zu is %s, not a finite float32", key, j,
                    isnan(d) ? "NaN" : "out of range (Inf)");
            return;
        }
        dst[j++] = (float)d;
    }
}

/* Loads the "tensors" object of root into m (all or nothing). */
static void load_tensors(attn_model *m, const cJSON *root, problems *p) {
    const cJSON *tensors = cJSON_GetObjectItemCaseSensitive(root, "tensors");
    if (!cJSON_IsObject(tensors)) {
        problem(p, ATTN_ERR_PARSE, "%s \"tensors\", expected an object of state_dict keys",
                tensors ? "malformed" : "missing");
        return;
    }
    size_t count = attn_model_tensor_count(m);
    float *stage = malloc(attn_model_n_params(m) * sizeof(float));
    bool seen[ATTN_MAX_SPECS] = {false};
    if (!stage) {
        problem(p, ATTN_ERR_NOMEM, "out of memory for %zu parameters", attn_model_n_params(m));
        return;
    }
    const cJSON *entry;
    cJSON_ArrayForEach(entry, tensors) {
        const char *raw = entry->string ? entry->string : "";
        const char *key = strip_prefixes(raw);
        long i = attn_model_tensor_find(m, key);
        if (i < 0) {
            problem(p, ATTN_ERR_SHAPE,
                    "unexpected tensor \"%s\" (the %s model has no such "
                    "parameter)",
                    raw, attn_arch_name(m->cfg.arch));
            continue;
        }
        if (seen[i]) {
            problem(p, ATTN_ERR_PARSE, "tensor \"%s\" appears twice", key);
            continue;
        }
        seen[i] = true;
        load_tensor(m, (size_t)i, key, entry, stage, p);
    }
    for (size_t i = 0; i < count; i++)
        if (!seen[i])
            problem(p, ATTN_ERR_SHAPE, "missing tensor \"%s\"", attn_model_tensor_name(m, i));
    if (p->n == 0) memcpy(attn_model_params(m), stage, attn_model_n_params(m) * sizeof(float));
    free(stage);
}

static void hint_config(const attn_model *m, problems *p) {
    char cfg[256];
    config_summary(&m->cfg, cfg, sizeof cfg);
    if (p->n > 0 && p->first == ATTN_ERR_SHAPE)
        attn_error_append(p->err, "tensors were checked against the config (%s)", cfg);
}

/* ---- public ------------------------------------------------------------------------------- */

attn_status attn_weights_load_json(const char *path, attn_model **out, attn_error *err) {
    if (!out || !path) return attn_errorf(err, ATTN_ERR_ARG, "weights: NULL path or out");
    *out = NULL;
    cJSON *root = NULL;
    attn_status st = parse_file(path, &root, err);
    if (st != ATTN_OK) return st;
    problems p = {err, path, 0, ATTN_OK};
    attn_model_config cfg = attn_model_config_default(ATTN_ARCH_RNN);
    parse_config(cJSON_GetObjectItemCaseSensitive(root, "config"), &cfg, &p);
    if (p.n > 0) {
        cJSON_Delete(root);
        return problems_finish(&p);
    }
    attn_model *m = NULL;
    attn_error cerr;
    st = attn_model_create(&cfg, 0, &m, &cerr);
    if (st != ATTN_OK) {
        cJSON_Delete(root);
        return attn_errorf(err, st, "%s: %s", path, cerr.msg);
    }
    load_tensors(m, root, &p);
    hint_config(m, &p);
    cJSON_Delete(root);
    st = problems_finish(&p);
    if (st != ATTN_OK) {
        attn_model_free(m);
        return st;
    }
    *out = m;
    return ATTN_OK;
}

attn_status attn_weights_load_into(attn_model *m, const char *path, attn_error *err) {
    if (!m || !path) return attn_errorf(err, ATTN_ERR_ARG, "weights: NULL model or path");
    cJSON *root = NULL;
    attn_status st = parse_file(path, &root, err);
    if (st != ATTN_OK) return st;
    problems p = {err, path, 0, ATTN_OK};
    const cJSON *cj = cJSON_GetObjectItemCaseSensitive(root, "config");
    if (cj) { /* optional here; when present it must describe the model */
        attn_model_config cfg = m->cfg;
        parse_config(cj, &cfg, &p);
        if (p.n == 0) {
            const attn_model_config *mc = &m->cfg;
            bool tr = mc->arch == ATTN_ARCH_TRANSFORMER;
            if (cfg.arch != mc->arch)
                problem(&p, ATTN_ERR_VALUE, "config: arch \"%s\" but the model is \"%s\"",
                        attn_arch_name(cfg.arch), attn_arch_name(mc->arch));
            for (size_t i = 0; i < N_INT_FIELDS && cfg.arch == mc->arch; i++) {
                int a = *(const int *)((const char *)&cfg + int_fields[i].offset);
                int b = *(const int *)((const char *)mc + int_fields[i].offset);
                if (a != b)
                    problem(&p, ATTN_ERR_VALUE, "config: \"%s\" is %d but the model has %d",
                            int_fields[i].key, a, b);
            }
            if (tr && cfg.arch == mc->arch && cfg.norm != mc->norm)
                problem(&p, ATTN_ERR_VALUE, "config: \"norm\" differs from the model's");
            if (tr && cfg.arch == mc->arch && cfg.activation != mc->activation)
                problem(&p, ATTN_ERR_VALUE, "config: \"activation\" differs from the model's");
        }
    }
    if (p.n == 0) {
        load_tensors(m, root, &p);
        hint_config(m, &p);
    }
    cJSON_Delete(root);
    return problems_finish(&p);
}

/* ---- saving ------------------------------------------------------------------------------- */

static void write_config(FILE *f, const attn_model_config *c) {
    fprintf(f, "\"config\": {\"arch\": \"%s\", \"vocab_size\": %d, \"embed_dim\": %d",
            attn_arch_name(c->arch), c->vocab_size, c->embed_dim);
    if (c->arch == ATTN_ARCH_TRANSFORMER)
        fprintf(f,
                ", \"n_heads\": %d, \"ffn_dim\": %d, \"n_layers\": %d, \"max_len\": %d, "
                "\"norm\": \"%s\", \"activation\": \"%s\"}",
                c->n_heads, c->ffn_dim, c->n_layers, c->max_len,
                c->norm == ATTN_NORM_PRE ? "pre" : "post",
                c->activation == ATTN_ACT_RELU ? "relu" : "gelu");
    else
        fprintf(f, ", \"hidden_size\": %d, \"n_layers\": %d}", c->hidden_size, c->n_layers);
}

static void write_tensors(FILE *f, const attn_model *m, const float *base) {
    fprintf(f, "\"tensors\": {\n");
    size_t count = attn_model_tensor_count(m);
    for (size_t i = 0; i < count; i++) {
        int shape[4];
        int nd = attn_model_tensor_shape(m, i, shape);
        fprintf(f, "\"%s\": {\"shape\": [", attn_model_tensor_name(m, i));
        for (int d = 0; d < nd; d++) fprintf(f, d ? ", %d" : "%d", shape[d]);
        fprintf(f, "], \"data\": [");
        const float *x = base + attn_model_tensor_offset(m, i);
        size_t n = attn_model_tensor_numel(m, i);
        for (size_t j = 0; j < n; j++) fprintf(f, j ? ",%.9g" : "%.9g", (double)x[j]);
        fprintf(f, "]}%s\n", i + 1 < count ? "," : "");
    }
    fprintf(f, "}");
}

attn_status attn_weights_save_json(const attn_model *m, bool grads, const char *path,
                                   attn_error *err) {
    if (!m || !path) return attn_errorf(err, ATTN_ERR_ARG, "weights: NULL model or path");
    const float *base = grads ? m->grads : m->params;
    if (!base)
        return attn_errorf(err, ATTN_ERR_ARG,
                           "%s: the model has no gradients yet (run "
                           "attn_model_backward first)",
                           path);
    attn_error ferr;
    if (attn_model_check_finite(m, grads, &ferr) != ATTN_OK)
        return attn_errorf(err, ATTN_ERR_VALUE, "%s: not written: %s", path, ferr.msg);
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 5);
    if (!tmp) return attn_errorf(err, ATTN_ERR_NOMEM, "%s: out of memory", path);
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp", 5);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        attn_errorf(err, ATTN_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
        free(tmp);
        return ATTN_ERR_IO;
    }
    fprintf(f, "{\"format\": \"%s\",\n", WEIGHTS_FORMAT);
    write_config(f, &m->cfg);
    fprintf(f, ",\n");
    write_tensors(f, m, base);
    fprintf(f, "}\n");
    const char *what = NULL;
    if (ferror(f))
        what = "write";
    else if (fflush(f) != 0)
        what = "flush";
    else if (fsync(fileno(f)) != 0)
        what = "fsync";
    int saved_errno = errno;
    if (fclose(f) != 0 && !what) {
        what = "close";
        saved_errno = errno;
    }
    if (!what && rename(tmp, path) != 0) {
        what = "rename";
        saved_errno = errno;
    }
    if (what) {
        remove(tmp);
        attn_errorf(err, ATTN_ERR_IO, "%s: %s failed: %s (the old file, if any, is untouched)",
                    path, what, strerror(saved_errno));
        free(tmp);
        return ATTN_ERR_IO;
    }
    free(tmp);
    return ATTN_OK;
}

/* weights_json.c -- attn-weights-v1 import/export (format documented in include/attn.h).
 *
 * The importer is driven by the model's tensor table: every key of the file is looked up in
 * it, shapes are compared with the spec before any data is read, and values go into a staging
 * copy of the parameters, which replaces the model's only when the whole file was valid. All
 * problems of a file are reported in one message (first via attn_errorf, then appended).
 * The exporter writes floats with %.9g (enough for float -> text -> double -> float to be
 * exact) into path.tmp, fsyncs and renames, so an existing file is never half-overwritten.
 */
#include "io_internal.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WEIGHTS_FORMAT "attn-weights-v1"

/* "[a,b]" into buf. */
static const char *shape_text(char *buf, size_t size, int ndim, const long long *shape) {
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < ndim && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, i ? ",%lld" : "%lld", shape[i]);
    if (used < size) snprintf(buf + used, size - used, "]");
    return buf;
}

/* ---- reading and parsing the file -------------------------------------------------------- */

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
    attn_status st = attn_io_read_file(path, &buf, &len, err);
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
        char name[96]; /* a state_dict key, cut short if longer */
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

/* Parses "config" (arch required, the rest defaulting to attn_model_config_default). */
static void parse_config(const cJSON *cj, attn_model_config *cfg, attn_io_problems *p) {
    attn_io_model_config_from_json(cj, "config", ATTN_IO_CONFIG_REJECT_UNKNOWN, cfg, p);
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
                        float *stage, attn_io_problems *p) {
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(entry, "shape");
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(entry, "data");
    if (!cJSON_IsObject(entry) || !cJSON_IsArray(shape) || !cJSON_IsArray(data)) {
        attn_io_problem(p, ATTN_ERR_PARSE, "\"%s\": expected {\"shape\": [..], \"data\": [..]}",
                        key);
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
            attn_io_problem(p, ATTN_ERR_SHAPE, "\"%s\": shape holds a non-integer, expected %s",
                            key, shape_text((char[64]){0}, 64, want_nd, want_ll));
            return;
        }
        if (got_nd < 8) got[got_nd] = (long long)v;
        got_nd++;
        if (got_nd > want_nd || (long long)v != want[got_nd - 1]) shape_ok = false;
    }
    if (got_nd != want_nd) shape_ok = false;
    if (!shape_ok) {
        char wbuf[64], gbuf[128];
        attn_io_problem(p, ATTN_ERR_SHAPE, "\"%s\": expected %s, got %s%s", key,
                        shape_text(wbuf, sizeof wbuf, want_nd, want_ll),
                        shape_text(gbuf, sizeof gbuf, got_nd < 8 ? got_nd : 8, got),
                        got_nd > 8 ? " (truncated)" : "");
        return;
    }
    size_t numel = attn_model_tensor_numel(m, i);
    size_t n = (size_t)cJSON_GetArraySize(data);
    if (n != numel) {
        char wbuf[64];
        attn_io_problem(p, ATTN_ERR_SHAPE, "\"%s\": \"data\" has %zu values, shape %s needs %zu",
                        key, n, shape_text(wbuf, sizeof wbuf, want_nd, want_ll), numel);
        return;
    }
    float *dst = stage + attn_model_tensor_offset(m, i);
    size_t j = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, data) {
        if (!cJSON_IsNumber(v)) {
            attn_io_problem(p, ATTN_ERR_VALUE,
                            "\"%s\": element %zu is %s, expected a finite number", key, j,
                            cJSON_IsNull(v)     ? "null (NaN/Inf written by a JSON encoder?)"
                            : cJSON_IsString(v) ? "a string"
                            : cJSON_IsBool(v)   ? "a boolean"
                                                : "an array or object");
            return;
        }
        double d = v->valuedouble;
        /* >= FLT_MAX + half an ulp rounds to Inf in the cast to float */
        if (!isfinite(d) || fabs(d) >= 0x1.ffffffp127) {
            attn_io_problem(p, ATTN_ERR_VALUE, "\"%s\": element %zu is %s, not a finite float32",
                            key, j, isnan(d) ? "NaN" : "out of range (Inf)");
            return;
        }
        dst[j++] = (float)d;
    }
}

/* Loads the "tensors" object of root into m (all or nothing). Names that carried a wrapper's
 * prefix are worth a log line: the file came from a wrapped module, which may surprise. */
static void load_tensors(attn_model *m, const cJSON *root, attn_io_problems *p) {
    const cJSON *tensors = cJSON_GetObjectItemCaseSensitive(root, "tensors");
    if (!cJSON_IsObject(tensors)) {
        attn_io_problem(p, ATTN_ERR_PARSE, "%s \"tensors\", expected an object of state_dict keys",
                        tensors ? "malformed" : "missing");
        return;
    }
    size_t count = attn_model_tensor_count(m);
    float *stage = malloc(attn_model_n_params(m) * sizeof(float));
    bool *seen = calloc(count ? count : 1, sizeof *seen);
    if (!stage || !seen) {
        attn_io_problem(p, ATTN_ERR_NOMEM, "out of memory for %zu parameters",
                        attn_model_n_params(m));
        free(stage);
        free(seen);
        return;
    }
    int n_stripped = 0;
    const cJSON *entry;
    cJSON_ArrayForEach(entry, tensors) {
        const char *raw = entry->string ? entry->string : "";
        const char *key = strip_prefixes(raw);
        if (key != raw) n_stripped++;
        long i = attn_model_tensor_find(m, key);
        if (i < 0) {
            attn_io_problem(p, ATTN_ERR_SHAPE,
                            "unexpected tensor \"%s\" (the %s model has no such "
                            "parameter)",
                            raw, attn_arch_name(attn_model_config_of(m)->arch));
            continue;
        }
        if (seen[i]) {
            attn_io_problem(p, ATTN_ERR_PARSE, "tensor \"%s\" appears twice", key);
            continue;
        }
        seen[i] = true;
        load_tensor(m, (size_t)i, key, entry, stage, p);
    }
    for (size_t i = 0; i < count; i++)
        if (!seen[i])
            attn_io_problem(p, ATTN_ERR_SHAPE, "missing tensor \"%s\"",
                            attn_model_tensor_name(m, i));
    if (p->n == 0) memcpy(attn_model_params(m), stage, attn_model_n_params(m) * sizeof(float));
    if (p->n == 0 && n_stripped > 0)
        attn_log(ATTN_LOG_INFO,
                 "%s: %d of %zu tensor names had a \"module.\" or \"_orig_mod.\" prefix "
                 "(DataParallel, torch.compile), read without it",
                 p->path, n_stripped, count);
    free(stage);
    free(seen);
}

static void hint_config(const attn_model *m, attn_io_problems *p) {
    char cfg[256];
    config_summary(attn_model_config_of(m), cfg, sizeof cfg);
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
    attn_io_problems p = {err, path, 0, ATTN_OK};
    attn_model_config cfg = attn_model_config_default(ATTN_ARCH_RNN);
    parse_config(cJSON_GetObjectItemCaseSensitive(root, "config"), &cfg, &p);
    if (p.n > 0) {
        cJSON_Delete(root);
        return attn_io_problems_finish(&p);
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
    st = attn_io_problems_finish(&p);
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
    attn_io_problems p = {err, path, 0, ATTN_OK};
    const cJSON *cj = cJSON_GetObjectItemCaseSensitive(root, "config");
    if (cj) { /* optional here; when present it must describe the model */
        const attn_model_config *mc = attn_model_config_of(m);
        attn_model_config cfg = *mc;
        parse_config(cj, &cfg, &p);
        if (p.n == 0) {
            bool tr = mc->arch == ATTN_ARCH_TRANSFORMER;
            if (cfg.arch != mc->arch)
                attn_io_problem(&p, ATTN_ERR_VALUE, "config: arch \"%s\" but the model is \"%s\"",
                                attn_arch_name(cfg.arch), attn_arch_name(mc->arch));
            for (size_t i = 0; i < ATTN_IO_N_CONFIG_INTS && cfg.arch == mc->arch; i++) {
                int a = *(const int *)((const char *)&cfg + attn_io_config_ints[i].offset);
                int b = *(const int *)((const char *)mc + attn_io_config_ints[i].offset);
                if (a != b)
                    attn_io_problem(&p, ATTN_ERR_VALUE, "config: \"%s\" is %d but the model has %d",
                                    attn_io_config_ints[i].key, a, b);
            }
            if (tr && cfg.arch == mc->arch && cfg.norm != mc->norm)
                attn_io_problem(&p, ATTN_ERR_VALUE, "config: \"norm\" differs from the model's");
            if (tr && cfg.arch == mc->arch && cfg.activation != mc->activation)
                attn_io_problem(&p, ATTN_ERR_VALUE,
                                "config: \"activation\" differs from the model's");
        }
    }
    if (p.n == 0) {
        load_tensors(m, root, &p);
        hint_config(m, &p);
    }
    cJSON_Delete(root);
    return attn_io_problems_finish(&p);
}

/* ---- saving ------------------------------------------------------------------------------- */

/* "config": {"arch": "rnn", "vocab_size": 5, ...} -- the keys that apply to c's arch, in the
 * spaced layout of the rest of the file (the values are names and integers). */
static bool write_config(FILE *f, const attn_model_config *c) {
    cJSON *o = attn_io_model_config_to_json(c, false);
    if (!o) return false;
    fprintf(f, "\"config\": {");
    const cJSON *item;
    cJSON_ArrayForEach(item, o) {
        fprintf(f, "%s\"%s\": ", item == o->child ? "" : ", ", item->string);
        if (cJSON_IsString(item))
            fprintf(f, "\"%s\"", item->valuestring);
        else
            fprintf(f, "%d", item->valueint);
    }
    fprintf(f, "}");
    cJSON_Delete(o);
    return true;
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
    const float *base = grads ? attn_model_grads_const(m) : attn_model_params_const(m);
    if (!base)
        return attn_errorf(err, ATTN_ERR_ARG,
                           "%s: the model has no gradients yet (run "
                           "attn_model_backward first)",
                           path);
    attn_error ferr;
    if (attn_model_check_finite(m, grads, &ferr) != ATTN_OK)
        return attn_errorf(err, ATTN_ERR_VALUE, "%s: not written: %s", path, ferr.msg);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return attn_errorf(err, ATTN_ERR_NOMEM, "%s: out of memory", path);
    fprintf(f, "{\"format\": \"%s\",\n", WEIGHTS_FORMAT);
    bool ok = write_config(f, attn_model_config_of(m));
    fprintf(f, ",\n");
    write_tensors(f, m, base);
    fprintf(f, "}\n");
    ok = !ferror(f) && ok;
    if (fclose(f) != 0) ok = false;
    if (!ok) {
        free(text);
        return attn_errorf(err, ATTN_ERR_NOMEM, "%s: not written: out of memory formatting it",
                           path);
    }
    attn_status st = attn_io_write_atomic(path, text, len, err);
    free(text);
    return st;
}

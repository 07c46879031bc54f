/* weights_json.c -- attn-weights-v1 import/export (format documented in include/attn.h).
 *
 * The importer is driven by the model's tensor table: every key of the file is looked up in
 * it, shapes are compared with the spec before any data is read, and values go into a staging
 * copy of the parameters, which replaces the model's only when the whole file was valid. All
 * problems of a file are reported in one message (first via attn_errorf, then appended).
 * The exporter is weights_save.c.
 */
#include "io_internal.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WEIGHTS_FORMAT ATTN_IO_WEIGHTS_FORMAT

/* ---- reading and parsing the file -------------------------------------------------------- */

/* The tensor key whose "shape" most recently precedes byte `at` (a hint for parse errors);
 * *in_vocab when a "vocab" key comes after that (the error is in the vocabulary, name empty). */
static void tensor_before(const char *buf, size_t at, char *name, size_t size, bool *in_vocab) {
    name[0] = '\0';
    *in_vocab = false;
    static const char key[] = "\"shape\"", vocab[] = "\"vocab\"";
    const size_t klen = sizeof key - 1, vlen = sizeof vocab - 1;
    const char *hit = NULL, *vocab_hit = NULL;
    for (size_t i = 0; i < at; i++) {
        if (buf[i] != '"') continue;
        if (i + klen <= at && memcmp(buf + i, key, klen) == 0) hit = buf + i;
        if (i + vlen <= at && memcmp(buf + i, vocab, vlen) == 0) vocab_hit = buf + i;
    }
    if (vocab_hit && vocab_hit > hit) {
        *in_vocab = true;
        return;
    }
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

static bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* True when text[0..n) may begin a JSON value: { [ " - a digit, true, false or null. */
static bool starts_json_value(const char *text, size_t n) {
    if (n == 0) return false;
    if (text[0] && strchr("{[\"-0123456789", text[0])) return true;
    return (n >= 4 && (memcmp(text, "true", 4) == 0 || memcmp(text, "null", 4) == 0)) ||
           (n >= 5 && memcmp(text, "false", 5) == 0);
}

/* What the parse error `why` at byte `at` of buf[0..len) most likely means: " (..)" or "". */
static const char *parse_hint(const char *buf, size_t len, size_t at, const char *why) {
    const char *rest = buf + at;
    size_t left = len - at;
    size_t last = len;
    while (last > 0 && is_space(buf[last - 1])) last--;
    if (strcmp(why, "trailing data after the JSON value") == 0) return "";
    if (at >= len || last == 0 || buf[last - 1] != '}')
        return " (the file does not end with '}': truncated?)";
    if ((left >= 3 && memcmp(rest, "NaN", 3) == 0) ||
        (left >= 8 && memcmp(rest, "Infinity", 8) == 0) ||
        (left >= 9 && memcmp(rest, "-Infinity", 9) == 0) ||
        (left >= 3 && memcmp(rest, "nan", 3) == 0) || (left >= 3 && memcmp(rest, "inf", 3) == 0))
        return " (NaN/Infinity is not JSON and weights must be finite)";
    return "";
}

/* Parses buf[0..len) (from `name`) strictly into *root and checks "format". */
static attn_status parse_text(const char *name, const char *buf, size_t len, cJSON **root,
                              attn_error *err) {
    *root = NULL;
    if (len == 0)
        return attn_errorf(err, ATTN_ERR_PARSE, "%s: empty file (0 bytes), expected %s JSON", name,
                           WEIGHTS_FORMAT);
    size_t first = 0;
    while (first < len && is_space(buf[first])) first++;
    if (!starts_json_value(buf + first, len - first))
        return attn_errorf(err, ATTN_ERR_PARSE,
                           "%s: not a JSON or safetensors weights file (a weights file starts "
                           "with '{'; this one with byte 0x%02x)",
                           name, first < len ? (unsigned char)buf[first] : 0u);
    size_t at = 0;
    const char *why = NULL;
    cJSON *doc = NULL;
    attn_status st = attn_io_json_parse(buf, len, &doc, &at, &why);
    if (st == ATTN_ERR_NOMEM)
        return attn_errorf(err, st,
                           "%s: %s (%zu bytes of JSON; a \"data_b64\" encoding needs "
                           "far less memory than number arrays)",
                           name, why, len);
    if (st != ATTN_OK) {
        int line = 1, col = 1;
        attn_io_text_position(buf, at, &line, &col);
        char tensor[96]; /* a state_dict key, cut short if longer */
        bool in_vocab = false;
        tensor_before(buf, at, tensor, sizeof tensor, &in_vocab);
        const char *hint = parse_hint(buf, len, at, why);
        return attn_errorf(err, ATTN_ERR_PARSE,
                           "%s: malformed JSON at byte %zu (line %d, column %d): %s%s%s%s%s; "
                           "parsing stops there (arrays/objects may nest at most %d deep)",
                           name, at, line, col, why, hint,
                           in_vocab    ? " in \"vocab\""
                           : tensor[0] ? " in tensor \""
                                       : "",
                           tensor, tensor[0] ? "\"" : "", CJSON_NESTING_LIMIT);
    }
    if (!cJSON_IsObject(doc)) {
        cJSON_Delete(doc);
        return attn_errorf(err, ATTN_ERR_PARSE, "%s: expected a JSON object at the top level",
                           name);
    }
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(doc, "format");
    const char *f = cJSON_IsString(fmt) ? fmt->valuestring : NULL;
    if (f && strcmp(f, "attn-seq2seq-weights-v1") == 0)
        st = attn_errorf(err, ATTN_ERR_PARSE,
                         "%s holds a seq2seq model's weights (\"attn-seq2seq-weights-v1\"), "
                         "not a classifier's (\"%s\"): use attn generate with it",
                         name, WEIGHTS_FORMAT);
    else if (f && attn_io_is_checkpoint_format(f))
        st = attn_errorf(err, ATTN_ERR_VALUE, "%s: " ATTN_IO_CKPT_NOT_WEIGHTS, name, f);
    else if (!f || strcmp(f, WEIGHTS_FORMAT) != 0)
        st = attn_errorf(err, ATTN_ERR_PARSE, "%s: unknown \"format\" %s%s%s, expected \"%s\"",
                         name, f ? "\"" : "",
                         !fmt ? "(missing)"
                         : f  ? f
                              : "(not a string)",
                         f ? "\"" : "", WEIGHTS_FORMAT);
    if (st != ATTN_OK) {
        cJSON_Delete(doc);
        return st;
    }
    *root = doc;
    return ATTN_OK;
}

/* Reads and parses the file; its text is freed before the caller allocates a model. */
static attn_status parse_file(const char *path, cJSON **root, attn_error *err) {
    *root = NULL;
    char *buf = NULL;
    size_t len = 0;
    attn_status st = attn_io_read_file(path, &buf, &len, err);
    if (st != ATTN_OK) return st;
    st = parse_text(path, buf, len, root, err);
    free(buf);
    return st;
}

/* ---- config ------------------------------------------------------------------------------- */

static void config_summary(const attn_model_config *c, char *buf, size_t size) {
    if (c->arch == ATTN_ARCH_TRANSFORMER)
        snprintf(buf, size,
                 "arch transformer, vocab_size %d, embed_dim %d, n_heads %d, "
                 "ffn_dim %d, n_layers %d, max_len %d, norm %s, pos %s",
                 c->vocab_size, c->embed_dim, c->n_heads, c->ffn_dim, c->n_layers, c->max_len,
                 c->norm == ATTN_NORM_PRE ? "pre" : "post", attn_pos_name(c->pos));
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

/* Reads "data" (numbers) or "data_b64" of tensor `key` into dst[numel]. */
static void load_data(const char *key, const cJSON *data, const cJSON *b64, size_t numel,
                      const char *shape, float *dst, attn_io_problems *p) {
    if (b64) {
        size_t want = attn_io_b64_len(4 * numel), got = strlen(b64->valuestring), bad = 0;
        if (got != want) {
            attn_io_problem(p, ATTN_ERR_SHAPE,
                            "\"%s\": \"data_b64\" has %zu characters, shape %s needs %zu "
                            "(base64 of %zu little-endian float32)",
                            key, got, shape, want, numel);
            return;
        }
        if (!attn_io_b64_decode_floats(b64->valuestring, numel, dst, &bad)) {
            attn_io_problem(p, ATTN_ERR_PARSE,
                            "\"%s\": \"data_b64\" character %zu is not base64 (A-Z a-z 0-9 + / "
                            "and = padding)",
                            key, bad);
            return;
        }
        for (size_t j = 0; j < numel; j++)
            if (!isfinite(dst[j])) {
                attn_io_problem(p, ATTN_ERR_VALUE,
                                "\"%s\": element %zu is %s, not a finite float32", key, j,
                                isnan(dst[j]) ? "NaN" : "Inf");
                return;
            }
        return;
    }
    size_t n = (size_t)cJSON_GetArraySize(data);
    if (n != numel) {
        attn_io_problem(p, ATTN_ERR_SHAPE, "\"%s\": \"data\" has %zu values, shape %s needs %zu",
                        key, n, shape, numel);
        return;
    }
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

/* Checks one tensor entry against view tensor t and copies its data into v->params. */
static void load_tensor(const attn_io_model_view *v, const attn_io_tensor_view *t, const char *key,
                        const cJSON *entry, attn_io_problems *p) {
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(entry, "shape");
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(entry, "data");
    const cJSON *b64 = cJSON_GetObjectItemCaseSensitive(entry, "data_b64");
    bool one_data = (cJSON_IsArray(data) && !b64) || (cJSON_IsString(b64) && !data);
    if (!cJSON_IsObject(entry) || !cJSON_IsArray(shape) || !one_data) {
        attn_io_problem(p, ATTN_ERR_PARSE,
                        "\"%s\": expected {\"shape\": [..], \"data\": [..]} or {\"shape\": [..], "
                        "\"data_b64\": \"..\"}",
                        key);
        return;
    }
    const int want_nd = t->ndim;
    long long want_ll[4], got[8];
    for (int d = 0; d < want_nd; d++) want_ll[d] = t->shape[d];
    int got_nd = 0;
    bool shape_ok = true;
    const cJSON *dim;
    cJSON_ArrayForEach(dim, shape) {
        double x = dim->valuedouble;
        if (!cJSON_IsNumber(dim) || x != floor(x) || x < 0 || x > 1e15) {
            attn_io_problem(p, ATTN_ERR_SHAPE, "\"%s\": shape holds %s, expected %s", key,
                            !cJSON_IsNumber(dim) ? "a non-number"
                            : x < 0              ? "a negative number"
                            : x != floor(x)      ? "a non-integer"
                                                 : "a non-integer or a number over 1e15",
                            attn_io_shape_text((char[64]){0}, 64, want_nd, want_ll));
            return;
        }
        if (got_nd < 8) got[got_nd] = (long long)x;
        got_nd++;
        if (got_nd > want_nd || (long long)x != t->shape[got_nd - 1]) shape_ok = false;
    }
    if (got_nd != want_nd) shape_ok = false;
    if (!shape_ok) {
        char wbuf[64], gbuf[128];
        attn_io_problem(p, ATTN_ERR_SHAPE, "\"%s\": expected %s, got %s%s", key,
                        attn_io_shape_text(wbuf, sizeof wbuf, want_nd, want_ll),
                        attn_io_shape_text(gbuf, sizeof gbuf, got_nd < 8 ? got_nd : 8, got),
                        got_nd > 8 ? " (truncated)" : "");
        return;
    }
    char wbuf[64];
    load_data(key, data, b64, t->numel, attn_io_shape_text(wbuf, sizeof wbuf, want_nd, want_ll),
              v->params + t->offset, p);
}

/* Names that carried a wrapper's prefix are worth a log line: the file came from a wrapped
 * module, which may surprise. */
void attn_io_json_tensors_load(const attn_io_model_view *v, const cJSON *root, const char *model,
                               attn_io_problems *p) {
    const cJSON *tensors = cJSON_GetObjectItemCaseSensitive(root, "tensors");
    if (!cJSON_IsObject(tensors)) {
        attn_io_problem(p, ATTN_ERR_PARSE, "%s \"tensors\", expected an object of state_dict keys",
                        tensors ? "malformed" : "missing");
        return;
    }
    bool *seen = calloc(v->count ? v->count : 1, sizeof *seen);
    if (!seen) {
        attn_io_problem(p, ATTN_ERR_NOMEM, "out of memory for %zu tensors", v->count);
        return;
    }
    int n_stripped = 0;
    const cJSON *entry;
    cJSON_ArrayForEach(entry, tensors) {
        const char *raw = entry->string ? entry->string : "";
        const char *key = strip_prefixes(raw);
        if (key != raw) n_stripped++;
        size_t i = 0;
        while (i < v->count && strcmp(v->tensors[i].name, key) != 0) i++;
        if (i == v->count)
            attn_io_problem(p, ATTN_ERR_SHAPE,
                            "unexpected tensor \"%s\" (the %s model has no such parameter)", raw,
                            model);
        else if (seen[i])
            attn_io_problem(p, ATTN_ERR_PARSE, "tensor \"%s\" appears twice", key);
        else {
            seen[i] = true;
            load_tensor(v, &v->tensors[i], key, entry, p);
        }
    }
    for (size_t i = 0; i < v->count; i++)
        if (!seen[i])
            attn_io_problem(p, ATTN_ERR_SHAPE, "missing tensor \"%s\"", v->tensors[i].name);
    if (p->n == 0 && n_stripped > 0)
        attn_log(ATTN_LOG_INFO,
                 "%s: %d of %zu tensor names had a \"module.\" or \"_orig_mod.\" prefix "
                 "(DataParallel, torch.compile), read without it",
                 p->path, n_stripped, v->count);
    free(seen);
}

/* The "tensors" of root into m, all or nothing: into a staging copy of the parameters, which
 * replaces the model's only when every tensor was valid. */
static void load_tensors(attn_model *m, const cJSON *root, attn_io_problems *p) {
    float *stage = malloc(attn_model_n_params(m) * sizeof(float));
    attn_io_model_view v;
    attn_error verr;
    if (!stage || attn_io_view_of_model(m, NULL, stage, false, &v, &verr) != ATTN_OK) {
        attn_io_problem(p, ATTN_ERR_NOMEM, "out of memory for %zu parameters",
                        attn_model_n_params(m));
        free(stage);
        return;
    }
    attn_io_json_tensors_load(&v, root, attn_arch_name(attn_model_config_of(m)->arch), p);
    if (p->n == 0) memcpy(attn_model_params(m), stage, attn_model_n_params(m) * sizeof(float));
    attn_io_model_view_free(&v);
    free(stage);
}

static void hint_config(const attn_model *m, attn_io_problems *p) {
    char cfg[256];
    config_summary(attn_model_config_of(m), cfg, sizeof cfg);
    if (p->n > 0 && p->first == ATTN_ERR_SHAPE)
        attn_error_append(p->err, "tensors were checked against the config (%s)", cfg);
}

/* ---- public ------------------------------------------------------------------------------- */

static attn_status load_root(const char *name, cJSON *root, attn_model **out, attn_error *err) {
    attn_io_problems p = {err, name, 0, ATTN_OK};
    attn_model_config cfg = attn_model_config_default(ATTN_ARCH_RNN);
    attn_kernels_info made_on;
    const bool recorded = attn_io_kernels_read(root, &made_on, &p);
    /* arch required, the rest defaulting to attn_model_config_default */
    attn_io_model_config_from_json(cJSON_GetObjectItemCaseSensitive(root, "config"), "config",
                                   ATTN_IO_CONFIG_REJECT_UNKNOWN, &cfg, &p);
    if (p.n == 0) attn_io_check_n_params(attn_model_config_n_params(&cfg), root, &p);
    if (p.n > 0) return attn_io_problems_finish(&p);
    attn_model *m = NULL;
    attn_error cerr;
    attn_status st = attn_model_create(&cfg, 0, &m, &cerr);
    if (st != ATTN_OK) return attn_errorf(err, st, "%s: %s", name, cerr.msg);
    load_tensors(m, root, &p);
    hint_config(m, &p);
    if (recorded) attn_model_set_kernels(m, &made_on);
    st = attn_io_problems_finish(&p);
    if (st != ATTN_OK) {
        attn_model_free(m);
        return st;
    }
    *out = m;
    return ATTN_OK;
}

/* load_root, then the vocabulary (vocab NULL: checked, then dropped). */
static attn_status load_root_vocab(const char *name, cJSON *root, attn_model **out,
                                   attn_vocab **vocab, attn_error *err) {
    attn_status st = load_root(name, root, out, err);
    if (st != ATTN_OK) return st;
    attn_vocab *v = NULL;
    st = attn_io_vocab_load(name, root, attn_model_config_of(*out), &v, err);
    if (st != ATTN_OK) {
        attn_model_free(*out);
        *out = NULL;
        return st;
    }
    if (vocab)
        *vocab = v;
    else
        attn_vocab_free(v);
    return ATTN_OK;
}

attn_status attn_weights_load_json(const char *path, attn_model **out, attn_error *err) {
    if (!out || !path) return attn_errorf(err, ATTN_ERR_ARG, "weights: NULL path or out");
    *out = NULL;
    if (attn_io_is_safetensors(path)) return attn_weights_load_safetensors(path, out, NULL, err);
    cJSON *root = NULL;
    attn_status st = parse_file(path, &root, err);
    if (st != ATTN_OK) return st;
    st = load_root_vocab(path, root, out, NULL, err);
    cJSON_Delete(root);
    return st;
}

attn_status attn_weights_load_json_vocab(const char *path, attn_model **out, attn_vocab **vocab,
                                         attn_error *err) {
    if (!out || !path || !vocab)
        return attn_errorf(err, ATTN_ERR_ARG, "weights: NULL path, out or vocab");
    *out = NULL;
    *vocab = NULL;
    if (attn_io_is_safetensors(path)) return attn_weights_load_safetensors(path, out, vocab, err);
    cJSON *root = NULL;
    attn_status st = parse_file(path, &root, err);
    if (st != ATTN_OK) return st;
    st = load_root_vocab(path, root, out, vocab, err);
    cJSON_Delete(root);
    return st;
}

attn_status attn_weights_load_json_from_buffer(const char *buf, size_t len, const char *name,
                                               attn_model **out, attn_error *err) {
    if (!out || (!buf && len)) return attn_errorf(err, ATTN_ERR_ARG, "weights: NULL buf or out");
    *out = NULL;
    if (!name) name = "(buffer)";
    if (len > attn_io_max_file_bytes())
        return attn_errorf(err, ATTN_ERR_IO, "%s: %zu bytes exceed the size limit of %zu bytes",
                           name, len, attn_io_max_file_bytes());
    cJSON *root = NULL;
    attn_status st = parse_text(name, buf ? buf : "", len, &root, err);
    if (st != ATTN_OK) return st;
    st = load_root_vocab(name, root, out, NULL, err);
    cJSON_Delete(root);
    return st;
}

attn_status attn_weights_load_into(attn_model *m, const char *path, attn_error *err) {
    if (!m || !path) return attn_errorf(err, ATTN_ERR_ARG, "weights: NULL model or path");
    if (attn_io_is_safetensors(path)) return attn_io_load_into_safetensors(m, path, err);
    cJSON *root = NULL;
    attn_status st = parse_file(path, &root, err);
    if (st != ATTN_OK) return st;
    attn_io_problems p = {err, path, 0, ATTN_OK};
    const cJSON *cj = cJSON_GetObjectItemCaseSensitive(root, "config");
    if (cj) { /* optional here; when present it must describe the model */
        const attn_model_config *mc = attn_model_config_of(m);
        attn_model_config cfg = *mc;
        attn_io_model_config_from_json(cj, "config", ATTN_IO_CONFIG_REJECT_UNKNOWN, &cfg, &p);
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
    if (p.n == 0) attn_io_vocab_refuse_own(root, m, &p);
    attn_kernels_info made_on = {0}; /* mode "": no record */
    if (p.n == 0) attn_io_kernels_read(root, &made_on, &p);
    if (p.n == 0) {
        load_tensors(m, root, &p);
        hint_config(m, &p);
    }
    if (p.n == 0) attn_model_set_kernels(m, &made_on);
    cJSON_Delete(root);
    return attn_io_problems_finish(&p);
}

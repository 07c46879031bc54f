/* io_common.c -- helpers shared by weights_json.c and the training checkpoint: reading a
 * whole file, writing one atomically (path.tmp, fflush, fsync, rename), collecting problems
 * into one message, and the model config <-> JSON object mapping (see io_internal.h). */
#include "io_internal.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- files --------------------------------------------------------------------------------- */

attn_status attn_io_read_file(const char *path, char **out, size_t *len, attn_error *err) {
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

attn_status attn_io_write_atomic(const char *path, const char *text, size_t len, attn_error *err) {
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 5);
    if (!tmp) return attn_errorf(err, ATTN_ERR_NOMEM, "%s: out of memory", path);
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp", 5);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        attn_errorf(err, ATTN_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
        free(tmp);
        return ATTN_ERR_IO;
    }
    const char *what = NULL;
    if (fwrite(text, 1, len, f) != len)
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
        attn_errorf(err, ATTN_ERR_IO,
                    "%s: %s of %s failed: %s (the old file, if any, is untouched)", path, what, tmp,
                    strerror(saved_errno));
        free(tmp);
        return ATTN_ERR_IO;
    }
    free(tmp);
    return ATTN_OK;
}

/* ---- problems ------------------------------------------------------------------------------ */

void attn_io_problem(attn_io_problems *p, attn_status s, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (p->n == 0) {
        p->first = s;
        attn_errorf(p->err, s, "%s: %s", p->path, msg);
    } else if (p->n < ATTN_IO_MAX_PROBLEMS) {
        attn_error_append(p->err, "%s", msg);
    }
    p->n++;
}

attn_status attn_io_problems_finish(attn_io_problems *p) {
    if (p->n == 0) return ATTN_OK;
    if (p->n > ATTN_IO_MAX_PROBLEMS)
        attn_error_append(p->err, "and %d more problems", p->n - ATTN_IO_MAX_PROBLEMS);
    if (p->err) p->err->status = p->first;
    return p->first;
}

/* ---- model config ---------------------------------------------------------------------------- */

#define RNNS (1u << ATTN_ARCH_RNN | 1u << ATTN_ARCH_LSTM | 1u << ATTN_ARCH_GRU)
#define TR   (1u << ATTN_ARCH_TRANSFORMER)

const attn_io_config_int attn_io_config_ints[ATTN_IO_N_CONFIG_INTS] = {
    {"vocab_size", offsetof(attn_model_config, vocab_size), RNNS | TR},
    {"embed_dim", offsetof(attn_model_config, embed_dim), RNNS | TR},
    {"hidden_size", offsetof(attn_model_config, hidden_size), RNNS},
    {"n_heads", offsetof(attn_model_config, n_heads), TR},
    {"ffn_dim", offsetof(attn_model_config, ffn_dim), TR},
    {"n_layers", offsetof(attn_model_config, n_layers), RNNS | TR},
    {"max_len", offsetof(attn_model_config, max_len), TR},
};

cJSON *attn_io_model_config_to_json(const attn_model_config *c, bool all_keys) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    unsigned arch = 1u << c->arch;
    bool ok = cJSON_AddStringToObject(o, "arch", attn_arch_name(c->arch)) != NULL;
    for (size_t i = 0; i < ATTN_IO_N_CONFIG_INTS && ok; i++) {
        const attn_io_config_int *f = &attn_io_config_ints[i];
        if (all_keys || (f->archs & arch))
            ok = cJSON_AddNumberToObject(o, f->key, *(const int *)((const char *)c + f->offset)) !=
                 NULL;
    }
    if (ok && (all_keys || (arch & TR))) {
        ok = cJSON_AddStringToObject(o, "norm", c->norm == ATTN_NORM_POST ? "post" : "pre") &&
             cJSON_AddStringToObject(o, "activation",
                                     c->activation == ATTN_ACT_GELU ? "gelu" : "relu");
    }
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* Parses item (key "norm" or "activation") as one of two names into *out. */
static void parse_choice(const cJSON *item, const char *name, const char *a, int va, const char *b,
                         int vb, int *out, attn_io_problems *p) {
    const char *s = cJSON_IsString(item) ? item->valuestring : NULL;
    if (s && strcmp(s, a) == 0)
        *out = va;
    else if (s && strcmp(s, b) == 0)
        *out = vb;
    else
        attn_io_problem(p, ATTN_ERR_VALUE, "%s: \"%s\" is %s%s%s, expected \"%s\" or \"%s\"", name,
                        item->string, s ? "\"" : "", s ? s : "not a string", s ? "\"" : "", a, b);
}

void attn_io_model_config_from_json(const cJSON *obj, const char *name, unsigned flags,
                                    attn_model_config *cfg, attn_io_problems *p) {
    if (!cJSON_IsObject(obj)) {
        attn_io_problem(p, ATTN_ERR_PARSE, "%s \"%s\", expected an object with at least \"arch\"",
                        obj ? "malformed" : "missing", name);
        return;
    }
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(obj, "arch");
    attn_arch a = ATTN_ARCH_RNN;
    if (!cJSON_IsString(arch)) {
        attn_io_problem(p, ATTN_ERR_VALUE,
                        "%s: %s \"arch\" (expected \"rnn\", \"lstm\", \"gru\" or \"transformer\")",
                        name, arch ? "non-string" : "missing");
        return;
    }
    if (attn_arch_from_name(arch->valuestring, &a, NULL) != ATTN_OK) {
        attn_io_problem(p, ATTN_ERR_VALUE,
                        "%s: unknown arch \"%s\" (expected rnn, lstm, gru or transformer)", name,
                        arch->valuestring);
        return;
    }
    *cfg = attn_model_config_default(a);
    bool seen[ATTN_IO_N_CONFIG_INTS] = {false};
    const cJSON *item;
    cJSON_ArrayForEach(item, obj) {
        const char *key = item->string ? item->string : "";
        if (strcmp(key, "arch") == 0) continue;
        bool known = false;
        for (size_t i = 0; i < ATTN_IO_N_CONFIG_INTS; i++) {
            if (strcmp(key, attn_io_config_ints[i].key) != 0) continue;
            known = true;
            seen[i] = true;
            double v = item->valuedouble;
            if (!cJSON_IsNumber(item))
                attn_io_problem(p, ATTN_ERR_VALUE, "%s: \"%s\" must be an integer, not %s", name,
                                key, cJSON_IsString(item) ? "a string" : "a non-number");
            else if (v != floor(v) || v < INT_MIN || v > INT_MAX)
                attn_io_problem(p, ATTN_ERR_VALUE, "%s: \"%s\" must be an integer, got %g", name,
                                key, v);
            else
                *(int *)((char *)cfg + attn_io_config_ints[i].offset) = (int)v;
        }
        if (strcmp(key, "norm") == 0) {
            known = true;
            int v = (int)cfg->norm;
            parse_choice(item, name, "pre", ATTN_NORM_PRE, "post", ATTN_NORM_POST, &v, p);
            cfg->norm = (attn_norm)v;
        } else if (strcmp(key, "activation") == 0) {
            known = true;
            int v = (int)cfg->activation;
            parse_choice(item, name, "relu", ATTN_ACT_RELU, "gelu", ATTN_ACT_GELU, &v, p);
            cfg->activation = (attn_activation)v;
        }
        if (!known && (flags & ATTN_IO_CONFIG_REJECT_UNKNOWN))
            attn_io_problem(p, ATTN_ERR_VALUE, "%s: unknown key \"%s\"", name, key);
    }
    if (flags & ATTN_IO_CONFIG_REQUIRE_ALL)
        for (size_t i = 0; i < ATTN_IO_N_CONFIG_INTS; i++)
            if (!seen[i])
                attn_io_problem(p, ATTN_ERR_PARSE, "%s: missing \"%s\" (an integer)", name,
                                attn_io_config_ints[i].key);
    if (p->n == 0) {
        attn_error verr;
        if (attn_model_config_validate(cfg, &verr) != ATTN_OK)
            attn_io_problem(p, ATTN_ERR_VALUE, "%s", verr.msg);
    }
}

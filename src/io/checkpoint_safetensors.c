/* checkpoint_safetensors.c -- a training checkpoint of either family in the safetensors
 * container (safetensors.c reads the container): the arrays as F32 tensors, the rest as the
 * JSON checkpoint's own document without its arrays, so that one parser checks both files.
 *
 *   header: {"__metadata__": {"format": "<the JSON checkpoint's format>",
 *                             "crc32": "0x<8 hex digits>",
 *                             "state": "<the JSON checkpoint without params, m, v,
 *                                       best_params and crc32>",
 *                             "writer": "attn"},
 *            "params": {"dtype": "F32", "shape": [n], "data_offsets": [0, 4n]},
 *            "adam.m": .., "adam.v": .., ["best_params": .. when best_epoch > 0]}
 *
 * The metadata comes first and "crc32" second, at a place fixed by the format name: the CRC-32
 * (zlib) of every byte of the file except those 8 hex digits. The data starts at a multiple of
 * 64 bytes, the tensors in the order above. Reading checks the container (safetensors.c), then
 * the checksum, then exactly these metadata keys, then hands the state to the family's JSON
 * checks; the arrays are allocated only after those checks (the parameter count from the
 * config, within ATTN_MAX_PARAMS), each tensor named in every message. */
#include "io_internal.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[ATTN_IO_CKPT_ARRAYS] = {"params", "adam.m", "adam.v", "best_params"};

/* ---- writing -------------------------------------------------------------------------------- */

typedef struct header_ctx {
    const char *format, *state;
    size_t n, count;
} header_ctx;

static bool print_header(FILE *f, const void *ctx) {
    const header_ctx *h = ctx;
    fputs("{\"__metadata__\":{\"format\":", f);
    attn_json_write_string(f, h->format);
    fputs(",\"crc32\":\"0x00000000\",\"state\":", f);
    attn_json_write_string(f, h->state);
    fputs(",\"writer\":\"attn\"}", f);
    for (size_t k = 0; k < h->count; k++)
        fprintf(f, ",\"%s\":{\"dtype\":\"F32\",\"shape\":[%zu],\"data_offsets\":[%zu,%zu]}",
                names[k], h->n, 4 * h->n * k, 4 * h->n * (k + 1));
    fputs("}", f);
    return true;
}

/* Where the 8 hex digits of "crc32" lie in a file of `format`: after 8 length bytes and the
 * header's fixed start. */
static size_t crc_at(const char *format) {
    return 8 + strlen("{\"__metadata__\":{\"format\":\"") + strlen(format) +
           strlen("\",\"crc32\":\"0x");
}

static unsigned long file_crc(const unsigned char *b, size_t size, size_t at) {
    unsigned long crc = attn_io_crc32((const char *)b, at);
    return attn_io_crc32_update(crc, (const char *)b + at + 8, size - at - 8);
}

attn_status attn_io_ckpt_st_save(const char *path, const char *format, const char *state,
                                 const float *const arrays[ATTN_IO_CKPT_ARRAYS], size_t n,
                                 attn_error *err) {
    const size_t count = arrays[3] ? 4 : 3;
    for (size_t k = 0; k < count; k++) {
        const attn_status st = attn_io_st_check_finite(path, names[k], arrays[k], n, err);
        if (st != ATTN_OK) return st;
    }
    const header_ctx h = {format, state, n, count};
    /* the length, the header and its padding (the data 64-byte aligned); on a little-endian
     * machine the arrays follow from the caller's memory as they are, else converted into one
     * buffer after the header */
    const size_t body = attn_io_little_endian() ? 0 : 4 * n * count;
    unsigned char *buf = NULL;
    size_t head_len = 0;
    attn_status st = attn_io_st_start(print_header, &h, path, body, &buf, &head_len, err);
    if (st != ATTN_OK) return st;
    attn_io_span spans[1 + ATTN_IO_CKPT_ARRAYS] = {{buf, head_len + body}};
    size_t n_spans = 1;
    unsigned char *at = buf + head_len;
    for (size_t k = 0; k < count; k++, at += 4 * n) {
        if (attn_io_little_endian())
            spans[n_spans++] = (attn_io_span){arrays[k], 4 * n};
        else
            attn_io_put_le_floats(at, arrays[k], n);
    }
    /* the CRC-32 of every byte of the file but the 8 digits, span by span */
    const size_t c = crc_at(format);
    unsigned long crc = attn_io_crc32((const char *)buf, c);
    crc = attn_io_crc32_update(crc, (const char *)buf + c + 8, spans[0].len - c - 8);
    for (size_t i = 1; i < n_spans; i++)
        crc = attn_io_crc32_update(crc, spans[i].data, spans[i].len);
    char hex[9];
    snprintf(hex, sizeof hex, "%08lx", crc);
    memcpy(buf + c, hex, 8);
    st = attn_io_write_spans_atomic(path, spans, n_spans, err);
    free(buf);
    return st;
}

/* ---- reading -------------------------------------------------------------------------------- */

/* The header's fixed start for `format`, the checksum digits parsed into *stored. */
static bool fixed_start(const attn_io_st_file *f, const char *format, unsigned long *stored) {
    const unsigned char *b = f->map;
    const size_t c = crc_at(format);
    char want[160];
    snprintf(want, sizeof want, "{\"__metadata__\":{\"format\":\"%s\",\"crc32\":\"0x", format);
    if ((size_t)(f->data - b) < c + 10 || memcmp(b + 8, want, c - 8) != 0 || b[c + 8] != '"')
        return false;
    *stored = 0;
    for (size_t i = 0; i < 8; i++) {
        const unsigned char x = b[c + i];
        const int d = x >= '0' && x <= '9' ? x - '0' : x >= 'a' && x <= 'f' ? x - 'a' + 10 : -1;
        if (d < 0) return false;
        *stored = *stored * 16 + (unsigned long)d;
    }
    return true;
}

static void check_metadata(const attn_io_st_file *f, const char *format, attn_io_problems *p) {
    unsigned long stored = 0;
    if (!fixed_start(f, format, &stored)) {
        const bool ckpt = f->format && strstr(f->format, "checkpoint") != NULL;
        if (f->format && strcmp(f->format, format) != 0)
            attn_io_problem(p, ATTN_ERR_VALUE, "holds \"%s\"%s, not \"%s\"", f->format,
                            ckpt ? " (the other model family's checkpoint)"
                                 : " (weights, not a training checkpoint)",
                            format);
        else
            attn_io_problem(p, ATTN_ERR_PARSE,
                            "not a checkpoint written by attn: its header must begin with "
                            "{\"__metadata__\":{\"format\":\"%s\",\"crc32\":\"0x<8 hex digits>\"",
                            format);
        return;
    }
    const unsigned long actual = file_crc(f->map, f->size, crc_at(format));
    if (actual != stored) {
        attn_io_problem(p, ATTN_ERR_PARSE,
                        "checksum mismatch (stored crc32 0x%08lx, content has 0x%08lx): the "
                        "file is corrupt or was edited",
                        stored, actual);
        return;
    }
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(f->header, "__metadata__"), *item;
    static const char *const keys[] = {"format", "crc32", "state", "writer"};
    int seen = 0;
    cJSON_ArrayForEach(item, md) {
        bool known = false;
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            known |= !strcmp(item->string, keys[k]);
        if (!known)
            attn_io_problem(p, ATTN_ERR_PARSE, "\"__metadata__\": unknown key \"%s\"",
                            item->string);
        seen += known;
    }
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(md, "writer");
    if (seen != 4 || !cJSON_IsString(w) || strcmp(w->valuestring, "attn") != 0)
        attn_io_problem(p, ATTN_ERR_PARSE,
                        "\"__metadata__\" must hold \"format\", \"crc32\", \"state\" and "
                        "\"writer\": \"attn\"");
}

/* The "state" string as a JSON object without the arrays (they are the tensors). */
static cJSON *parse_state(const attn_io_st_file *f, attn_io_problems *p) {
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(f->header, "__metadata__");
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(md, "state");
    cJSON *root = NULL;
    size_t at = 0;
    const char *why = NULL;
    if (!cJSON_IsString(s)) {
        attn_io_problem(p, ATTN_ERR_PARSE, "\"__metadata__\" \"state\" is not a string");
        return NULL;
    }
    attn_status st = attn_io_json_parse(s->valuestring, strlen(s->valuestring), &root, &at, &why);
    if (st != ATTN_OK) {
        attn_io_problem(p, st, "\"__metadata__\" \"state\": malformed JSON at byte %zu: %s", at,
                        why);
        return NULL;
    }
    static const char *const arrays[] = {"params", "m", "v", "best_params", "crc32"};
    if (!cJSON_IsObject(root))
        attn_io_problem(p, ATTN_ERR_PARSE, "\"__metadata__\" \"state\" is not a JSON object");
    for (size_t k = 0; k < sizeof arrays / sizeof arrays[0] && cJSON_IsObject(root); k++)
        if (cJSON_GetObjectItemCaseSensitive(root, arrays[k]))
            attn_io_problem(p, ATTN_ERR_PARSE,
                            "\"__metadata__\" \"state\" holds \"%s\" (the arrays are tensors, the "
                            "checksum is \"crc32\")",
                            arrays[k]);
    if (p->n) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

attn_status attn_io_ckpt_st_open(const char *path, const char *format, attn_io_st_file *f,
                                 cJSON **state, attn_error *err) {
    *state = NULL;
    const size_t max = attn_io_max_params();
    attn_status st = attn_io_st_open_limit(path, f, max <= SIZE_MAX / 4 ? 4 * max : SIZE_MAX, err);
    if (st != ATTN_OK) return st;
    attn_io_problems p = {err, path, 0, ATTN_OK};
    check_metadata(f, format, &p);
    if (p.n == 0) *state = parse_state(f, &p);
    st = attn_io_problems_finish(&p);
    if (st != ATTN_OK) attn_io_st_close(f);
    return st;
}

void attn_io_ckpt_st_arrays(const attn_io_st_file *f, size_t n, bool best,
                            float *out[ATTN_IO_CKPT_ARRAYS], attn_io_problems *p) {
    const size_t count = best ? 4 : 3;
    const attn_io_st_tensor *of[ATTN_IO_CKPT_ARRAYS] = {0};
    for (size_t k = 0; k < ATTN_IO_CKPT_ARRAYS; k++) out[k] = NULL;
    for (size_t i = 0; i < f->count; i++) {
        const attn_io_st_tensor *t = &f->tensors[i];
        size_t k = 0;
        while (k < count && strcmp(t->name, names[k]) != 0) k++;
        if (k == count) {
            attn_io_problem(p, ATTN_ERR_SHAPE,
                            "unexpected tensor \"%s\" (a checkpoint holds params, adam.m, "
                            "adam.v and, when best_epoch > 0, best_params%s)",
                            t->name, best ? "" : "; its best_epoch is 0");
            continue;
        }
        of[k] = t;
        if (t->ndim != 1 || (size_t)t->shape[0] != n) {
            char got[128]; /* room for ATTN_IO_ST_MAX_NDIM dimensions of up to 2^40 */
            attn_io_problem(p, ATTN_ERR_SHAPE,
                            "tensor \"%s\": shape %s, the checkpoint's config needs [%zu]", t->name,
                            attn_io_shape_text(got, sizeof got, t->ndim, t->shape), n);
        }
    }
    for (size_t k = 0; k < count; k++)
        if (!of[k]) attn_io_problem(p, ATTN_ERR_SHAPE, "missing tensor \"%s\"", names[k]);
    for (size_t k = 0; k < count && p->n == 0; k++) {
        if (!(out[k] = malloc((n ? n : 1) * sizeof(float))))
            attn_io_problem(p, ATTN_ERR_NOMEM, "out of memory for \"%s\"", names[k]);
        else
            attn_io_st_copy_values(f, of[k], out[k], p);
    }
    attn_error e;
    if (p->n == 0 && attn_io_check_moments(out[1], out[2], n, &e) != ATTN_OK)
        attn_io_problem(p, e.status, "%s", e.msg);
    if (p->n == 0) return;
    for (size_t k = 0; k < ATTN_IO_CKPT_ARRAYS; k++) {
        free(out[k]);
        out[k] = NULL;
    }
}

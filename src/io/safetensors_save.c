/* safetensors_save.c -- the safetensors writer (the container is described in safetensors.c,
 * the reader): the header printed as compact JSON, padded with spaces so that the data starts
 * at a multiple of 64 bytes (the format asks for a multiple of 8), then the tensors in the
 * model's table order as little-endian float32; the checkpoint writer
 * (checkpoint_safetensors.c) starts its files the same way. */
#include "io_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- writing -------------------------------------------------------------------------------- */

static void put_key(FILE *f, const char *key, const char *value, bool last) {
    attn_json_write_string(f, key);
    fputs(":", f);
    attn_json_write_string(f, value);
    if (!last) fputs(",", f);
}

static bool print_header(FILE *f, const void *ctx) {
    const attn_io_model_view *v = ctx;
    fputs("{\"__metadata__\":{", f);
    put_key(f, "format", v->format, false);
    put_key(f, "config", v->config, false);
    if (v->vocab) put_key(f, "vocab", v->vocab, false);
    if (v->kernels) put_key(f, "kernels", v->kernels, false);
    put_key(f, "writer", "attn", true);
    fputs("}", f);
    size_t at = 0;
    for (size_t i = 0; i < v->count; i++) {
        const attn_io_tensor_view *t = &v->tensors[i];
        fputs(",", f);
        attn_json_write_string(f, t->name);
        fputs(":{\"dtype\":\"F32\",\"shape\":[", f);
        for (int d = 0; d < t->ndim; d++) fprintf(f, d ? ",%d" : "%d", t->shape[d]);
        fprintf(f, "],\"data_offsets\":[%zu,%zu]}", at, at + 4 * t->numel);
        at += 4 * t->numel;
    }
    fputs("}", f);
    return true;
}

bool attn_io_little_endian(void) {
    const uint32_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

void attn_io_put_le_floats(unsigned char *dst, const float *x, size_t n) {
    if (attn_io_little_endian()) {
        memcpy(dst, x, n * 4);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], 4);
        for (int k = 0; k < 4; k++) dst[4 * i + (size_t)k] = (unsigned char)(u >> (8 * k));
    }
}

attn_status attn_io_st_check_finite(const char *path, const char *name, const float *x, size_t n,
                                    attn_error *err) {
    for (size_t j = 0; j < n; j++)
        if (!isfinite(x[j]))
            return attn_errorf(err, ATTN_ERR_VALUE, "%s: not written: \"%s\" holds %s at index %zu",
                               path, name, isnan(x[j]) ? "NaN" : "Inf", j);
    return ATTN_OK;
}

attn_status attn_io_st_start(attn_io_print_fn print, const void *ctx, const char *path, size_t body,
                             unsigned char **buf, size_t *head_len, attn_error *err) {
    char *header = NULL;
    size_t hlen = 0;
    attn_status st = attn_io_print_string(print, ctx, path, &header, &hlen, err);
    if (st != ATTN_OK) return st;
    /* 8 + padded: a multiple of 64, so that a reader mapping the file (a page-aligned address)
     * finds the values cache-line aligned and can use them in place (attn_io_st_fill) */
    const size_t padded = (hlen + 8 + 63) / 64 * 64 - 8;
    *head_len = 8 + padded;
    *buf = malloc(*head_len + body);
    if (!*buf) {
        free(header);
        return attn_errorf(err, ATTN_ERR_NOMEM, "%s: not written: out of memory for %zu bytes",
                           path, *head_len + body);
    }
    for (int k = 0; k < 8; k++) (*buf)[k] = (unsigned char)((uint64_t)padded >> (8 * k));
    memcpy(*buf + 8, header, hlen);
    memset(*buf + 8 + hlen, ' ', padded - hlen);
    free(header);
    return ATTN_OK;
}

attn_status attn_io_safetensors_save(const attn_io_model_view *v, const char *path,
                                     attn_error *err) {
    size_t data = 0, head_len = 0;
    for (size_t i = 0; i < v->count; i++) {
        const attn_status st = attn_io_st_check_finite(
            path, v->tensors[i].name, v->params + v->tensors[i].offset, v->tensors[i].numel, err);
        if (st != ATTN_OK) return st;
        data += 4 * v->tensors[i].numel;
    }
    unsigned char *buf = NULL;
    attn_status st = attn_io_st_start(print_header, v, path, data, &buf, &head_len, err);
    if (st != ATTN_OK) return st;
    unsigned char *at = buf + head_len;
    for (size_t i = 0; i < v->count; i++) {
        attn_io_put_le_floats(at, v->params + v->tensors[i].offset, v->tensors[i].numel);
        at += 4 * v->tensors[i].numel;
    }
    st = attn_write_file_atomic(path, (const char *)buf, head_len + data, err);
    free(buf);
    return st;
}

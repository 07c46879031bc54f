/* text_out.c -- how io prints a whole document: into a memory stream, checked, then handed back
 * as a string or written atomically to a file; and the tensor entry both weights formats share. */
#include "io_internal.h"

#include <stdio.h>
#include <stdlib.h>

/* print(f, ctx) into a new buffer; false (buffer freed) when memory ran out or print failed. */
static bool print_buffer(attn_io_print_fn print, const void *ctx, char **text, size_t *len) {
    *text = NULL;
    *len = 0;
    FILE *f = open_memstream(text, len);
    if (!f) return false;
    bool ok = print(f, ctx);
    ok = !ferror(f) && ok;
    if (fclose(f) != 0) ok = false;
    if (!ok) {
        free(*text);
        *text = NULL;
    }
    return ok;
}

attn_status attn_io_print_string(attn_io_print_fn print, const void *ctx, const char *what,
                                 char **out, size_t *len, attn_error *err) {
    char *text;
    size_t n;
    if (!print_buffer(print, ctx, &text, &n))
        return attn_errorf(err, ATTN_ERR_NOMEM, "%s: out of memory", what);
    *out = text;
    if (len) *len = n;
    return ATTN_OK;
}

attn_status attn_io_print_file(attn_io_print_fn print, const void *ctx, const char *path,
                               attn_error *err) {
    char *text;
    size_t n;
    if (!print_buffer(print, ctx, &text, &n))
        return attn_errorf(err, ATTN_ERR_NOMEM, "%s: not written: out of memory formatting it",
                           path);
    const attn_status st = attn_write_file_atomic(path, text, n, err);
    free(text);
    return st;
}

void attn_io_write_tensor(FILE *f, const char *name, const int *shape, int ndim, const float *x,
                          size_t n, bool b64, bool last) {
    fprintf(f, "\"%s\": {\"shape\": [", name);
    for (int d = 0; d < ndim; d++) fprintf(f, d ? ", %d" : "%d", shape[d]);
    if (b64) {
        fprintf(f, "], \"data_b64\": \"");
        attn_io_b64_write_floats(f, x, n);
        fprintf(f, "\"}%s\n", last ? "" : ",");
    } else {
        fprintf(f, "], \"data\": [");
        attn_io_write_floats(f, x, n, ",");
        fprintf(f, "]}%s\n", last ? "" : ",");
    }
}

/* weights_save.c -- the attn-weights-v1 exporter (format documented in include/attn.h): floats
 * with %.9g (enough for float -> text -> double -> float to be exact) or as "data_b64", written
 * through attn_write_file_atomic, so an existing file is never half-overwritten. */
#include "io_internal.h"

#include <cjson/cJSON.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- saving ------------------------------------------------------------------------------- */

/* {"arch": "rnn", "vocab_size": 5, ...} -- the keys that apply to c's arch, in the spaced
 * layout of the rest of the file (the values are names and integers). */
bool attn_io_model_config_write(FILE *f, const attn_model_config *c) {
    cJSON *o = attn_io_model_config_to_json(c, false);
    if (!o) return false;
    fprintf(f, "{");
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

static void write_tensors(FILE *f, const attn_model *m, const float *base,
                          attn_weights_encoding enc) {
    fprintf(f, "\"tensors\": {\n");
    size_t count = attn_model_tensor_count(m);
    for (size_t i = 0; i < count; i++) {
        int shape[4];
        const int nd = attn_model_tensor_shape(m, i, shape);
        attn_io_write_tensor(f, attn_model_tensor_name(m, i), shape, nd,
                             base + attn_model_tensor_offset(m, i), attn_model_tensor_numel(m, i),
                             enc == ATTN_WEIGHTS_B64, i + 1 == count);
    }
    fprintf(f, "}");
}

typedef struct weights_doc {
    const attn_model *m;
    const attn_vocab *vocab;
    const float *base;
    attn_weights_encoding enc;
} weights_doc;

static bool print_weights(FILE *f, const void *ctx) {
    const weights_doc *d = ctx;
    fprintf(f, "{\"format\": \"%s\",\n", ATTN_IO_WEIGHTS_FORMAT);
    fprintf(f, "\"config\": ");
    const bool ok = attn_io_model_config_write(f, attn_model_config_of(d->m));
    attn_io_vocab_write(f, d->vocab);
    attn_io_kernels_field(f, attn_model_kernels(d->m));
    fprintf(f, ",\n");
    write_tensors(f, d->m, d->base, d->enc);
    fprintf(f, "}\n");
    return ok;
}

static attn_status save(const attn_model *m, const attn_vocab *vocab, bool grads,
                        attn_weights_encoding enc, const char *path, attn_error *err);

attn_status attn_weights_save_json(const attn_model *m, bool grads, const char *path,
                                   attn_error *err) {
    return attn_weights_save_json_as(m, grads, ATTN_WEIGHTS_TEXT, path, err);
}

attn_status attn_weights_save_json_as(const attn_model *m, bool grads, attn_weights_encoding enc,
                                      const char *path, attn_error *err) {
    return save(m, NULL, grads, enc, path, err);
}

attn_status attn_weights_save_json_vocab(const attn_model *m, const attn_vocab *vocab, bool grads,
                                         attn_weights_encoding enc, const char *path,
                                         attn_error *err) {
    if (!m || !path) return attn_errorf(err, ATTN_ERR_ARG, "weights: NULL model or path");
    attn_error verr;
    if (vocab && attn_vocab_check_config(vocab, attn_model_config_of(m), &verr) != ATTN_OK)
        return attn_errorf(err, verr.status, "%s: not written: %s", path, verr.msg);
    return save(m, vocab, grads, enc, path, err);
}

static attn_status save(const attn_model *m, const attn_vocab *vocab, bool grads,
                        attn_weights_encoding enc, const char *path, attn_error *err) {
    if (!m || !path || (enc != ATTN_WEIGHTS_TEXT && enc != ATTN_WEIGHTS_B64))
        return attn_errorf(err, ATTN_ERR_ARG, "weights: NULL model or path, or unknown encoding");
    const float *base = grads ? attn_model_grads_const(m) : attn_model_params_const(m);
    if (!base)
        return attn_errorf(err, ATTN_ERR_ARG,
                           "%s: the model has no gradients yet (run "
                           "attn_model_backward first)",
                           path);
    if (!grads && attn_io_wants_safetensors(path))
        return attn_weights_save_safetensors(m, vocab, path, err);
    attn_error ferr;
    if (attn_model_check_finite(m, grads, &ferr) != ATTN_OK)
        return attn_errorf(err, ATTN_ERR_VALUE, "%s: not written: %s", path, ferr.msg);
    const weights_doc doc = {m, vocab, base, enc};
    return attn_io_print_file(print_weights, &doc, path, err);
}

/* positions.c -- write-up section 4 on the page: GET /api/positions (the Transformer's trained
 * position vectors) and the ablation POST /api/predict?positions=zero uses (the same trained
 * Transformer with those vectors set to zero, so that nothing tells it where a word is).
 *
 *   GET /api/positions?model=transformer
 *   -> {"model", "seed", "scheme": "learned", "positions": P, "dim": D, "table": [P][D]}
 * Only a learned table is a tensor of the weights file; the RNNs have none (they read
 * positions from the order they are fed), and another scheme answers 404 no_position_table. */
#include "serve_internal.h"

#include <stdlib.h>
#include <string.h>

/* The transformer's loaded entry for query's model= (absent: transformer); -1 after an answer. */
static int positions_entry(const serve_app *app, const char *query, serve_response *rs) {
    char model[32] = "transformer";
    attn_arch arch;
    const int given = serve_query_value(query, "model", model, sizeof model);
    if (given < 0 || attn_arch_from_name(model, &arch, NULL) != ATTN_OK ||
        app->explain_entry[arch] < 0) {
        serve_error_response(rs, 404, "unknown_model",
                             "model=M must name a loaded model (see /api/models)");
        return -1;
    }
    if (arch != ATTN_ARCH_TRANSFORMER) {
        serve_error_response(rs, 404, "no_position_table",
                             "only the Transformer has position vectors; the RNNs read a word's "
                             "position from the order they are fed the words");
        return -1;
    }
    return app->explain_entry[arch];
}

/* The index of m's learned position table, or -1 after a 404 naming m's scheme. */
static long learned_table(const attn_model *m, serve_response *rs) {
    const attn_model_config *c = attn_model_config_of(m);
    const long t = c->pos == ATTN_POS_LEARNED ? attn_model_tensor_find(m, "pos_embedding") : -1;
    if (t < 0) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "this Transformer's positions are '%s', not a learned table of the weights file",
                 attn_pos_name(c->pos));
        serve_error_response(rs, 404, "no_position_table", msg);
    }
    return t;
}

void serve_api_positions(serve_app *app, int ctx, const char *query, serve_response *rs) {
    const int entry = positions_entry(app, query, rs);
    if (entry < 0) return;
    const attn_model *m = serve_model(app, ctx, entry);
    const long t = learned_table(m, rs);
    if (t < 0) return;
    int shape[4];
    attn_model_tensor_shape(m, (size_t)t, shape);
    const float *v = attn_model_params_const(m) + attn_model_tensor_offset(m, (size_t)t);
    attn_json_writer w;
    attn_json_writer_init(&w, NULL);
    attn_json_begin_object(&w);
    serve_json_model_fields(&w, attn_arch_name(app->entries[entry].arch), app->entries[entry].seed);
    attn_json_field_string(&w, "scheme", "learned");
    attn_json_field_int(&w, "positions", shape[0]);
    attn_json_field_int(&w, "dim", shape[1]);
    attn_json_begin_array_field(&w, "table");
    for (int p = 0; p < shape[0]; p++) {
        attn_json_begin_array(&w);
        for (int j = 0; j < shape[1]; j++) attn_json_float(&w, v[(size_t)p * shape[1] + j]);
        attn_json_end_array(&w);
    }
    attn_json_end_array(&w);
    attn_json_end_object(&w);
    serve_json_answer(rs, 200, &w);
}

attn_model *serve_model_without_positions(const attn_model *m, serve_response *rs) {
    const long t = learned_table(m, rs);
    if (t < 0) return NULL;
    const size_t n = attn_model_n_params(m);
    float *copy = malloc(n * sizeof *copy);
    attn_model *z = NULL;
    attn_error err = {0};
    if (copy) {
        memcpy(copy, attn_model_params_const(m), n * sizeof *copy);
        memset(copy + attn_model_tensor_offset(m, (size_t)t), 0,
               attn_model_tensor_numel(m, (size_t)t) * sizeof *copy);
        const attn_param_source src = {copy, free, copy};
        if (attn_model_create_from(attn_model_config_of(m), &src, &z, &err) != ATTN_OK) {
            free(copy);
            z = NULL;
        }
    }
    if (!z) serve_error_response(rs, 503, "out_of_memory", "the server is out of memory");
    return z;
}

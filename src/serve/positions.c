/* positions.c -- write-up section 4 on the page: GET /api/positions (the Transformer's trained
 * position vectors) and the ablation POST /api/predict?positions=zero uses (the same trained
 * Transformer with those vectors set to zero, so that nothing tells it where a word is).
 *
 *   GET /api/positions?model=transformer
 *   -> {"model", "seed", "scheme": "learned"|"sinusoidal", "trained", "positions": P, "dim": D,
 *       "table": [P][D]}
 * The table is what the forward adds at each position: the learned pos_embedding of the weights
 * file, or the fixed sinusoidal table (attn_model_position_row). The RNNs have none (they read
 * positions from the order they are fed), nor have none, rope and alibi (404 no_position_table).
 * Without positions (positions=zero) is the learned table zeroed, or any other scheme read as
 * none. */
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

/* Whether m adds a vector per position to its embeddings (a learned or the sinusoidal table);
 * false after a 404 naming m's scheme. */
static bool has_position_table(const attn_model *m, serve_response *rs) {
    const attn_model_config *c = attn_model_config_of(m);
    if ((c->pos == ATTN_POS_LEARNED && attn_model_tensor_find(m, "pos_embedding") >= 0) ||
        c->pos == ATTN_POS_SINUSOIDAL)
        return true;
    char msg[200];
    snprintf(msg, sizeof msg,
             "this Transformer's positions are '%s': it adds no position vector to the "
             "embeddings%s",
             attn_pos_name(c->pos),
             c->pos == ATTN_POS_NONE
                 ? ""
                 : " (they act inside the attention, on q and k or the scores)");
    serve_error_response(rs, 404, "no_position_table", msg);
    return false;
}

void serve_api_positions(serve_app *app, int ctx, const char *query, serve_response *rs) {
    const int entry = positions_entry(app, query, rs);
    if (entry < 0) return;
    const attn_model *m = serve_model(app, ctx, entry);
    if (!has_position_table(m, rs)) return;
    const attn_model_config *c = attn_model_config_of(m);
    const int P = c->max_len, D = c->embed_dim;
    float *row = malloc((size_t)D * sizeof *row);
    if (!row) {
        serve_error_response(rs, 503, "out_of_memory", "the server is out of memory");
        return;
    }
    attn_json_writer w;
    attn_json_writer_init(&w, NULL);
    attn_json_begin_object(&w);
    serve_json_model_fields(&w, attn_arch_name(app->entries[entry].arch), app->entries[entry].seed);
    attn_json_field_string(&w, "scheme", attn_pos_name(c->pos));
    attn_json_field_bool(&w, "trained", c->pos == ATTN_POS_LEARNED);
    attn_json_field_int(&w, "positions", P);
    attn_json_field_int(&w, "dim", D);
    attn_json_begin_array_field(&w, "table");
    for (int p = 0; p < P && attn_model_position_row(m, p, row); p++) {
        attn_json_begin_array(&w);
        for (int j = 0; j < D; j++) attn_json_float(&w, row[j]);
        attn_json_end_array(&w);
    }
    attn_json_end_array(&w);
    attn_json_end_object(&w);
    free(row);
    serve_json_answer(rs, 200, &w);
}

attn_model *serve_model_without_positions(const attn_model *m, serve_response *rs) {
    const attn_model_config *c = attn_model_config_of(m);
    const long t = c->pos == ATTN_POS_LEARNED ? attn_model_tensor_find(m, "pos_embedding") : -1;
    /* learned: the table zeroed; any other scheme: the same parameters read with none (none,
     * sinusoidal, rope and alibi have no tensor, so the layout is the same) */
    attn_model_config cfg = *c;
    if (t < 0) cfg.pos = ATTN_POS_NONE;
    const size_t n = attn_model_n_params(m);
    float *copy = malloc(n * sizeof *copy);
    attn_model *z = NULL;
    attn_error err = {0};
    if (copy) {
        memcpy(copy, attn_model_params_const(m), n * sizeof *copy);
        if (t >= 0)
            memset(copy + attn_model_tensor_offset(m, (size_t)t), 0,
                   attn_model_tensor_numel(m, (size_t)t) * sizeof *copy);
        const attn_param_source src = {copy, free, copy};
        if (attn_model_create_from(&cfg, &src, &z, &err) != ATTN_OK) {
            free(copy);
            z = NULL;
        }
    }
    if (z && attn_model_n_params(z) != n) { /* cannot happen: no scheme but learned has a tensor */
        attn_model_free(z);
        z = NULL;
    }
    if (!z) serve_error_response(rs, 503, "out_of_memory", "the server is out of memory");
    return z;
}
